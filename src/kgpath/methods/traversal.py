"""Seven traversal algorithms over the semantic chunk graph.

Reference: "Novel Knowledge Graph Traversal Algorithms: Enhancing Accuracy in Semantic
Retrieval-Augmented Generation Systems" (shared/papers/kg-traversal-algorithms-article.txt),
section "Knowledge Graph Traversal Algorithms". The article numbers its algorithms 1-7 but
has no equations; docstrings cite "Alg. N, step M" after its numbered steps.

Every algorithm starts at the **anchor**, the chunk most similar to the query, and then
repeatedly picks the next chunk among candidates, extracting that chunk's sentences not seen
before. Notation (all cosines of unit vectors): ``q`` query, ``u`` current chunk, ``c``
candidate chunk, ``s`` sentence; ``E`` the extracted sentences.

==============================  ===========================================  =================
algorithm                       next chunk = argmax over candidates of       candidates
==============================  ===========================================  =================
1 ``basic_retrieval``           ``cos(q, c)``                                every chunk
2 ``query_traversal``           ``cos(q, c)``                                neighbours of u
3 ``kg_traversal``              ``cos(u, c)`` (query ignored)                neighbours of u
                                                                             sharing no
                                                                             sentence with E
4 ``triangulation_average``     ``(cos(q,u) + cos(q,c) + cos(u,c)) / 3``     neighbours of u
5 ``triangulation_geometric_3d``  ``-|| (q3 + u3 + c3)/3 - q3 ||`` in a 3-D  neighbours of u
                                PCA of the chunk embeddings
6 ``triangulation_fulldim``     ``-|| (q + u + c)/3 - q ||``                 neighbours of u
7 ``llm_guided_traversal``      the LLM's choice among the top 5 by          neighbours of u
                                ``cos(q, c)`` (fallback: the first)
==============================  ===========================================  =================

Stopping rules (article, each algorithm's last step):

* budget: at most ``max_sentences`` (15) sentences; the relevance rules below may end the
  walk only once ``min_sentences`` (10) are collected -- our reading of the article's
  "10-15 sentences";
* Alg. 1, 2, 5, 6 and 7 without an LLM: stop when every candidate is less relevant than what
  is extracted, ``max_c cos(q, c) < mean_{s in E} cos(q, s)``;
* Alg. 3: stop when the chosen hop's similarity ``cos(u, c)`` is lower than the previous
  hop's;
* Alg. 4: stop when ``mean_{s in E} cos(q, s)`` exceeds every candidate's triangle average;
* Alg. 7: the LLM may answer ``stop`` (honoured at any time);
* always: a safety cap of ``max_hops`` hops, and "dead end" when no candidate is left.

Chunk adjacency is undirected: a similarity edge ``a -> b`` (b in a's top list) lets the
walk go both ways, since cosine similarity is symmetric.

Complexity per query: ``O(m d)`` once for the query-chunk cosines (``m`` chunks), then per
hop ``O(|candidates| d)``; the walk makes at most ``min(max_hops, max_sentences)`` hops
because each hop adds at least one new sentence.

kgpath extension (not in the article): ``mention_expansion`` (:data:`EXTENSIONS`,
:func:`mention_expansion`) ranks *documents* through the mention layer of
:func:`kgpath.build.chunk_graph.add_mention_edges`. With ``s(d) = cos(q, e_d) + γ [the
question names d's title]`` and ``link(a, b) = 1`` when a sentence of one document names
the other's title, every document is scored by its best two-document chain,
``score(d) = s(d) + max_{a != d} (s(a) + β link(a, b))``, and the best ``max_documents``
are returned with their best sentences. Cost per query ``O(N d + |mention edges|)``.
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from kgpath._config import with_overrides
from kgpath.build.chunk_graph import (
    NODE_CHUNK,
    NODE_DOCUMENT,
    NODE_SENTENCE,
    REL_HAS_SENTENCE,
    REL_MENTIONS,
    REL_SIMILAR_INTER,
    REL_SIMILAR_INTRA,
    TitleMatcher,
)
from kgpath.errors import ConfigError, GraphError, ParseError
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex, check_query
from kgpath.llm import LLM, parse_json_response
from kgpath.prompts.traversal import LLM_TRAVERSAL_PROMPT

__all__ = [
    "ALGORITHMS",
    "EXTENSIONS",
    "MentionExpansionConfig",
    "MentionLayer",
    "mention_expansion",
    "question_mentions",
    "seed_scores",
    "chain_scores",
    "TraversalConfig",
    "TraversalStep",
    "TraversedSentence",
    "TraversalResult",
    "ChunkGraphView",
    "TraversalPolicy",
    "BasicRetrievalPolicy",
    "QueryTraversalPolicy",
    "KGTraversalPolicy",
    "TriangulationAveragePolicy",
    "TriangulationGeometric3DPolicy",
    "TriangulationFullDimPolicy",
    "LLMGuidedPolicy",
    "TraversalRetriever",
    "basic_retrieval",
    "query_traversal",
    "kg_traversal",
    "triangulation_average",
    "triangulation_geometric_3d",
    "triangulation_fulldim",
    "llm_guided_traversal",
    "allm_guided_traversal",
    "parse_llm_choice",
    "make_policy",
    "check_algorithm",
    "traverse",
    "atraverse",
    "format_traversal",
]

ALGORITHMS: tuple[str, ...] = (
    "basic_retrieval",
    "query_traversal",
    "kg_traversal",
    "triangulation_average",
    "triangulation_geometric_3d",
    "triangulation_fulldim",
    "llm_guided_traversal",
)

#: kgpath extensions runnable by name next to the article's algorithms (not walk policies).
EXTENSIONS: tuple[str, ...] = ("mention_expansion",)

Frontier = Literal["current", "visited"]


# ============================================================================ config
@dataclass(frozen=True, kw_only=True)
class TraversalConfig:
    """Traversal hyperparameters; defaults follow the article where it gives a number.

    Attributes
    ----------
    max_sentences
        Hard sentence budget (article: "10-15 sentences", upper end).
    min_sentences
        Relevance-based stopping rules apply only once this many sentences are extracted
        (article's lower end). ``0`` applies them from the first hop.
    max_hops
        Safety cap on hops after the anchor (the article suggests "limiting hop count" for
        large graphs).
    frontier
        ``"current"`` (article): candidates are the neighbours of the current chunk and a
        walk with no unvisited neighbour stops ("dead end"). ``"visited"`` (our
        extension): a branching walk -- every visited chunk may be the origin ``u`` of the
        next hop; each (visited chunk, unvisited neighbour) pair is scored by the
        algorithm's own rule and the best pair is taken.
    llm_candidates
        Candidates shown to the LLM in Alg. 7 (article: 5).
    preview_chars
        Characters of each candidate/extracted sentence shown to the LLM.
    pca_components
        Dimensions of the PCA space of Alg. 5 (article: 3).
    record_candidates
        Best-scored candidates kept per step in the trace.
    """

    max_sentences: int = 15
    min_sentences: int = 10
    max_hops: int = 30
    frontier: Frontier = "current"
    llm_candidates: int = 5
    preview_chars: int = 200
    pca_components: int = 3
    record_candidates: int = 5

    def __post_init__(self) -> None:
        for name, lo in (
            ("max_sentences", 1), ("min_sentences", 0), ("max_hops", 0),
            ("llm_candidates", 1), ("preview_chars", 1), ("pca_components", 1),
            ("record_candidates", 0),
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ConfigError(f"{name} must be an int >= {lo}, got {v!r}")
        if self.min_sentences > self.max_sentences:
            raise ConfigError(
                f"min_sentences ({self.min_sentences}) exceeds max_sentences "
                f"({self.max_sentences})"
            )
        if self.frontier not in ("current", "visited"):
            raise ConfigError(f"frontier must be 'current' or 'visited', got {self.frontier!r}")


# ============================================================================ results
@dataclass(frozen=True)
class TraversalStep:
    """One visited chunk of the walk (hop 0 is the anchor)."""

    hop: int
    chunk_id: str
    doc_id: str
    score: float
    """The policy score that selected this chunk (anchor: ``cos(q, anchor)``)."""
    query_similarity: float
    """``cos(q, chunk)``."""
    transition_similarity: float | None
    """``cos(origin, chunk)``; ``None`` for the anchor."""
    new_sentences: tuple[str, ...]
    """Sentence node ids first extracted at this step."""
    reason: str
    """``"anchor"``, ``"policy"``, ``"llm"`` or ``"llm_fallback: ..."``."""
    origin_id: str | None = None
    """The visited chunk this hop started from (the previous chunk unless
    ``frontier="visited"`` branched); ``None`` for the anchor."""
    candidates: tuple[tuple[str, float], ...] = ()
    """Best-scored candidates at this step (chunk id, policy score), best first."""


@dataclass(frozen=True)
class TraversedSentence:
    """One extracted sentence, in extraction order."""

    id: str
    text: str
    doc_id: str
    chunk_id: str
    hop: int
    query_similarity: float


@dataclass(frozen=True)
class TraversalResult:
    """Sentences in extraction order plus the traversal path that produced them."""

    query: str
    algorithm: str
    anchor_id: str
    sentences: tuple[TraversedSentence, ...]
    path: tuple[TraversalStep, ...]
    stop_reason: str
    config: TraversalConfig
    trace: dict[str, Any] = field(default_factory=dict)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.sentences)

    def __len__(self) -> int:
        return len(self.sentences)

    @property
    def path_ids(self) -> list[str]:
        """Visited chunk ids in order (anchor first)."""
        return [s.chunk_id for s in self.path]

    @property
    def documents(self) -> list[str]:
        """Document (passage) ids in the order their first sentence was extracted."""
        return list(dict.fromkeys(s.doc_id for s in self.sentences))

    @property
    def text(self) -> str:
        """The extracted sentences joined with spaces (the context for an LLM)."""
        return " ".join(s.text for s in self.sentences)


# ============================================================================ view
class ChunkGraphView:
    """Array view of a chunk graph built by :mod:`kgpath.build.chunk_graph`.

    Extracts, once, the chunk and sentence embeddings, chunk -> sentence membership
    (CSR ``chunk_sent_ptr``/``chunk_sent``), document ids, and the undirected chunk
    adjacency (CSR ``adj_ptr``/``adj``) from the ``similar_intra``/``similar_inter``
    edges. Traversals never touch Python node objects.
    """

    def __init__(self, graph: KnowledgeGraph) -> None:
        self.graph = graph
        chunk_nodes: list[int] = []
        sent_nodes: list[int] = []
        for i, n in enumerate(graph.nodes):
            if n.type == NODE_CHUNK:
                chunk_nodes.append(i)
            elif n.type == NODE_SENTENCE:
                sent_nodes.append(i)
        if not chunk_nodes:
            raise GraphError("graph has no 'chunk' nodes; build it with ChunkGraphBuilder")
        if not sent_nodes:
            raise GraphError("chunk graph has no 'sentence' nodes (sentence_nodes=False)")
        self.chunk_nodes = np.asarray(chunk_nodes, dtype=np.int64)
        self.sent_nodes = np.asarray(sent_nodes, dtype=np.int64)
        emb = graph.embeddings
        self.chunk_emb = np.ascontiguousarray(emb[self.chunk_nodes])
        self.sent_emb = np.ascontiguousarray(emb[self.sent_nodes])
        cpos = {int(g): p for p, g in enumerate(chunk_nodes)}
        spos = {int(g): p for p, g in enumerate(sent_nodes)}
        self.chunk_ids = [graph.node_at(i).id for i in chunk_nodes]
        self.sent_ids = [graph.node_at(i).id for i in sent_nodes]
        self.sent_text = [graph.node_at(i).text for i in sent_nodes]
        self.chunk_doc = [_doc_of(graph, i) for i in chunk_nodes]
        self.sent_doc = [_doc_of(graph, i) for i in sent_nodes]
        members: list[list[int]] = [[] for _ in chunk_nodes]
        pairs: list[tuple[int, int]] = []
        for e in graph.edges:
            if e.relation == REL_HAS_SENTENCE:
                c, s = cpos.get(graph.index_of(e.source)), spos.get(graph.index_of(e.target))
                if c is not None and s is not None:
                    members[c].append(s)
            elif e.relation in (REL_SIMILAR_INTRA, REL_SIMILAR_INTER):
                a, b = cpos.get(graph.index_of(e.source)), cpos.get(graph.index_of(e.target))
                if a is not None and b is not None and a != b:
                    pairs.append((a, b))
        for c, m in enumerate(members):
            if not m:
                raise GraphError(f"chunk {self.chunk_ids[c]!r} has no sentence children")
            m.sort()
        self.chunk_sent_ptr = np.zeros(len(members) + 1, dtype=np.int64)
        np.cumsum([len(m) for m in members], out=self.chunk_sent_ptr[1:])
        self.chunk_sent = np.asarray([s for m in members for s in m], dtype=np.int64)
        m_chunks = len(chunk_nodes)
        if pairs:
            p = np.asarray(pairs, dtype=np.int64)
            both = np.unique(np.concatenate([p, p[:, ::-1]]), axis=0)
        else:
            both = np.zeros((0, 2), dtype=np.int64)
        counts = np.bincount(both[:, 0], minlength=m_chunks)
        self.adj_ptr = np.zeros(m_chunks + 1, dtype=np.int64)
        np.cumsum(counts, out=self.adj_ptr[1:])
        self.adj = both[:, 1].copy()
        self._chunk_pos = {cid: i for i, cid in enumerate(self.chunk_ids)}
        self._pca: tuple[int, np.ndarray, np.ndarray] | None = None
        self._mentions: dict[int, MentionLayer] = {}

    def mention_layer(self, min_title_chars: int = 3) -> MentionLayer:
        """Document-level mention arrays (:class:`MentionLayer`), built on first use."""
        if min_title_chars not in self._mentions:
            self._mentions[min_title_chars] = MentionLayer(self, min_title_chars=min_title_chars)
        return self._mentions[min_title_chars]

    @property
    def num_chunks(self) -> int:
        """Number of chunks."""
        return int(self.chunk_nodes.size)

    def sentences_of(self, chunk: int) -> np.ndarray:
        """Sentence positions of a chunk, in document order."""
        return self.chunk_sent[self.chunk_sent_ptr[chunk] : self.chunk_sent_ptr[chunk + 1]]

    def neighbours(self, chunk: int) -> np.ndarray:
        """Chunk positions adjacent to ``chunk`` (undirected similarity edges)."""
        return self.adj[self.adj_ptr[chunk] : self.adj_ptr[chunk + 1]]

    def chunk_position(self, chunk_id: str) -> int:
        """Position of a chunk id (raises :class:`GraphError` if unknown)."""
        try:
            return self._chunk_pos[chunk_id]
        except KeyError:
            raise GraphError(f"unknown chunk id {chunk_id!r}") from None

    def pca(self, components: int = 3) -> tuple[np.ndarray, np.ndarray]:
        """``(mean, basis)`` of a PCA of the chunk embeddings (Alg. 5, step 1).

        The basis holds the top ``components`` eigenvectors of the ``d x d`` covariance
        (columns, by decreasing eigenvalue, sign fixed so the largest-magnitude entry is
        positive); memory ``O(d^2)`` whatever the number of chunks.
        """
        if self._pca is None or self._pca[0] != components:
            x = self.chunk_emb.astype(np.float64)
            mean = x.mean(axis=0)
            xc = x - mean
            cov = xc.T @ xc / max(1, x.shape[0])
            vals, vecs = np.linalg.eigh(cov)
            order = np.argsort(-vals, kind="stable")[: min(components, vecs.shape[1])]
            basis = vecs[:, order]
            flip = np.sign(basis[np.argmax(np.abs(basis), axis=0), np.arange(basis.shape[1])])
            basis = basis * np.where(flip == 0, 1.0, flip)
            self._pca = (components, mean, basis)
        return self._pca[1], self._pca[2]


def _doc_of(graph: KnowledgeGraph, index: int) -> str:
    n = graph.node_at(index)
    doc = n.metadata.get("doc_id") if n.metadata else None
    if doc is None and n.provenance:
        doc = n.provenance[0]
    return str(doc) if doc is not None else n.id


# ============================================================================ walk state
class Walk:
    """Mutable state of one traversal, handed to the policies."""

    def __init__(self, view: ChunkGraphView, query_vec: np.ndarray, query: str) -> None:
        q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if q.shape[0] != view.chunk_emb.shape[1]:
            raise GraphError(
                f"query embedding has dimension {q.shape[0]}, chunk embeddings have "
                f"{view.chunk_emb.shape[1]}"
            )
        self.view = view
        self.query = query
        self.q = q
        self.q_chunk = view.chunk_emb @ q
        self.visited = np.zeros(view.num_chunks, dtype=bool)
        self.extracted_mask = np.zeros(len(view.sent_ids), dtype=bool)
        self.extracted: list[int] = []
        self.extracted_sims: list[float] = []
        self.sentence_hop: list[int] = []
        self.sentence_chunk: list[int] = []
        self.path: list[int] = []
        self.parents: list[int] = []
        self.transitions: list[float] = []
        self.llm_calls = 0

    @property
    def current(self) -> int:
        """Position of the chunk visited last."""
        return self.path[-1]

    @property
    def mean_extracted(self) -> float:
        """``mean_{s in E} cos(q, s)`` (the "relevance of what is extracted")."""
        return float(np.mean(self.extracted_sims)) if self.extracted_sims else -np.inf

    def new_sentence_counts(self) -> np.ndarray:
        """Per chunk, how many of its sentences are not extracted yet."""
        v = self.view
        fresh = (~self.extracted_mask[v.chunk_sent]).astype(np.int64)
        return np.add.reduceat(fresh, v.chunk_sent_ptr[:-1]) if fresh.size else fresh

    def visit(self, chunk: int, max_sentences: int, parent: int | None = None) -> list[int]:
        """Mark ``chunk`` visited and extract its unseen sentences (within the budget).

        ``parent`` is the visited chunk the hop starts from (default: the current chunk);
        ``cos(parent, chunk)`` is recorded as the hop's transition similarity.
        """
        hop = len(self.path)
        if self.path:
            origin = self.current if parent is None else parent
            self.parents.append(origin)
            self.transitions.append(float(self.view.chunk_emb[origin] @
                                          self.view.chunk_emb[chunk]))
        else:
            self.parents.append(-1)
        self.visited[chunk] = True
        self.path.append(chunk)
        new: list[int] = []
        for s in self.view.sentences_of(chunk):
            if len(self.extracted) >= max_sentences:
                break
            s = int(s)
            if self.extracted_mask[s]:
                continue
            self.extracted_mask[s] = True
            self.extracted.append(s)
            self.extracted_sims.append(float(self.view.sent_emb[s] @ self.q))
            self.sentence_hop.append(hop)
            self.sentence_chunk.append(chunk)
            new.append(s)
        return new


@dataclass(frozen=True)
class Choice:
    """A policy's decision: a position into the candidate array, or stop."""

    index: int | None
    reason: str


# ============================================================================ policies
class TraversalPolicy(ABC):
    """One hook per algorithm: how candidates are scored, chosen and when to stop.

    Subclasses implement :meth:`score`; the walk itself (:func:`traverse`) is shared.
    Every candidate ``c`` comes with its origin ``u`` (``origins``): the visited chunk the
    hop would start from. With ``frontier="current"`` that is always the current chunk
    (the article); with ``frontier="visited"`` a chunk adjacent to several visited chunks
    is scored once per origin and its best (origin, candidate) pair kept.
    """

    name: ClassVar[str]
    #: Candidates are every unvisited chunk instead of the current chunk's neighbours.
    global_candidates: ClassVar[bool] = False
    #: Skip candidates sharing any sentence with what is extracted (Alg. 3, step 3).
    skip_overlapping: ClassVar[bool] = False

    def limit(self, walk: Walk, cands: np.ndarray, config: TraversalConfig) -> np.ndarray:
        """Positions of the (distinct, scored) candidates to keep (default: all)."""
        return np.arange(cands.size)

    @abstractmethod
    def score(
        self, walk: Walk, cands: np.ndarray, origins: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """Score every (origin, candidate) pair; the highest score is chosen."""

    def stop_reason(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> str | None:
        """Relevance stop (Alg. 1 step 3, Alg. 2 step 4): ``max cos(q,c) < mean cos(q,s)``."""
        best = float(walk.q_chunk[cands].max())
        if best < walk.mean_extracted:
            return (
                f"relevance: best candidate cos(q,c)={best:.4f} < mean extracted "
                f"cos(q,s)={walk.mean_extracted:.4f}"
            )
        return None

    def choose(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> Choice:
        """Pick the best-scored candidate (ties: lowest chunk position)."""
        return Choice(_argmax(cands, scores), "policy")

    async def achoose(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> Choice:
        """Async :meth:`choose` (default: the sync choice)."""
        return self.choose(walk, cands, scores, config)


def _argmax(cands: np.ndarray, scores: np.ndarray) -> int:
    order = np.lexsort((cands, -scores))
    return int(order[0])


class BasicRetrievalPolicy(TraversalPolicy):
    """Alg. 1 (``basic_retrieval``): the next most query-similar chunk anywhere, no edges."""

    name = "basic_retrieval"
    global_candidates = True

    def score(
        self, walk: Walk, cands: np.ndarray, origins: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """``cos(q, c)``."""
        return walk.q_chunk[cands]


class QueryTraversalPolicy(TraversalPolicy):
    """Alg. 2 (``query_traversal``): the neighbour most similar to the query."""

    name = "query_traversal"

    def score(
        self, walk: Walk, cands: np.ndarray, origins: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """``cos(q, c)`` (Alg. 2, step 2)."""
        return walk.q_chunk[cands]


class KGTraversalPolicy(TraversalPolicy):
    """Alg. 3 (``kg_traversal``): the neighbour most similar to the current chunk.

    The query is used only to pick the anchor. Candidates sharing a sentence with the
    extracted set are skipped (step 3); the walk stops when the chosen hop is less similar
    than the previous hop (step 4).
    """

    name = "kg_traversal"
    skip_overlapping = True

    def score(
        self, walk: Walk, cands: np.ndarray, origins: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """``cos(u, c)`` (Alg. 3, step 2)."""
        v = walk.view
        return np.einsum("ij,ij->i", v.chunk_emb[cands], v.chunk_emb[origins])

    def stop_reason(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> str | None:
        """Stop when ``max cos(u, c)`` is below the previous hop's ``cos``."""
        if not walk.transitions:
            return None
        best, prev = float(scores.max()), walk.transitions[-1]
        if best < prev:
            return f"similarity drop: next hop cos={best:.4f} < previous hop cos={prev:.4f}"
        return None


class TriangulationAveragePolicy(TraversalPolicy):
    """Alg. 4 (``triangulation_average``): mean of the three pairwise similarities."""

    name = "triangulation_average"

    def score(
        self, walk: Walk, cands: np.ndarray, origins: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """``(cos(q,u) + cos(q,c) + cos(u,c)) / 3`` (Alg. 4, step 2)."""
        v = walk.view
        uc = np.einsum("ij,ij->i", v.chunk_emb[cands], v.chunk_emb[origins])
        return (walk.q_chunk[origins] + walk.q_chunk[cands] + uc) / 3

    def stop_reason(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> str | None:
        """Stop when ``mean cos(q, s)`` over E exceeds every candidate's average (step 4)."""
        best = float(scores.max())
        if walk.mean_extracted > best:
            return (
                f"relevance: mean extracted cos(q,s)={walk.mean_extracted:.4f} > best "
                f"triangle average {best:.4f}"
            )
        return None


class TriangulationGeometric3DPolicy(TraversalPolicy):
    """Alg. 5 (``triangulation_geometric_3d``): triangle centroid closest to the query in 3-D.

    Query, current and candidate embeddings are projected with a PCA of the chunk
    embeddings (:meth:`ChunkGraphView.pca`); the score is minus the distance between the
    centroid ``(q3 + u3 + c3) / 3`` and ``q3``.
    """

    name = "triangulation_geometric_3d"

    def score(
        self, walk: Walk, cands: np.ndarray, origins: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """``-|| (q3 + u3 + c3)/3 - q3 ||`` (Alg. 5, steps 1-3)."""
        v = walk.view
        mean, basis = v.pca(config.pca_components)
        q3 = (walk.q.astype(np.float64) - mean) @ basis
        u3 = (v.chunk_emb[origins].astype(np.float64) - mean) @ basis
        c3 = (v.chunk_emb[cands].astype(np.float64) - mean) @ basis
        centroid = (q3 + u3 + c3) / 3.0
        return -np.linalg.norm(centroid - q3, axis=1)


class TriangulationFullDimPolicy(TraversalPolicy):
    """Alg. 6 (``triangulation_fulldim``): the same centroid rule in the embedding space.

    For unit vectors ``||(q+u+c)/3 - q||^2 = (6 + 2 cos(u,c) - 4 cos(q,u) - 4 cos(q,c)) / 9``,
    so the rule rewards query similarity and penalises similarity to the current chunk.
    """

    name = "triangulation_fulldim"

    def score(
        self, walk: Walk, cands: np.ndarray, origins: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """``-|| (q + u + c)/3 - q ||`` (Alg. 6, steps 1-2)."""
        v = walk.view
        q = walk.q.astype(np.float64)
        centroid = (q + v.chunk_emb[origins] + v.chunk_emb[cands].astype(np.float64)) / 3
        return -np.linalg.norm(centroid - q, axis=1)


class LLMGuidedPolicy(TraversalPolicy):
    """Alg. 7 (``llm_guided_traversal``): an LLM picks among the top-5 query-similar neighbours.

    The prompt (:data:`~kgpath.prompts.traversal.LLM_TRAVERSAL_PROMPT`) shows the query,
    the extracted sentences, and the candidates' previews with their ``cos(q, c)``. The
    reply ``{"choice": N}`` visits candidate N, ``{"choice": "stop"}`` ends the walk; an
    unusable reply falls back to the most similar candidate (step 4) and is recorded.

    Without an LLM (``llm=None``) every step takes that fallback and the relevance stop
    of Alg. 2 applies: the walk equals ``query_traversal`` restricted to the top 5. This is
    the documented LLM-free path; it adds no judgement of its own.
    """

    name = "llm_guided_traversal"

    def __init__(self, llm: LLM | None = None, *, prompt: str = LLM_TRAVERSAL_PROMPT) -> None:
        self.llm = llm
        self.template = prompt

    def limit(self, walk: Walk, cands: np.ndarray, config: TraversalConfig) -> np.ndarray:
        """Keep the ``llm_candidates`` most query-similar candidates (step 1), best first."""
        order = np.lexsort((cands, -walk.q_chunk[cands]))
        return order[: config.llm_candidates]

    def score(
        self, walk: Walk, cands: np.ndarray, origins: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """``cos(q, c)`` (what the LLM is shown, and the fallback order)."""
        return walk.q_chunk[cands]

    def stop_reason(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> str | None:
        """With an LLM the model decides when to stop; without one, Alg. 2's rule."""
        if self.llm is not None:
            return None
        return super().stop_reason(walk, cands, scores, config)

    def prompt(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> str:
        """Fill the prompt template (:data:`LLM_TRAVERSAL_PROMPT`) for this step (step 2)."""
        v = walk.view
        n = config.preview_chars
        extracted = "\n".join(f"- {_clip(v.sent_text[s], n)}" for s in walk.extracted)
        lines = []
        for i, (c, sc) in enumerate(zip(cands.tolist(), scores.tolist(), strict=True), 1):
            title = v.graph.node_at(int(v.chunk_nodes[c])).name
            body = _clip(v.graph.node_at(int(v.chunk_nodes[c])).text, n)
            lines.append(f"{i}. [{sc:.3f}] {title}: {body}" if title else f"{i}. [{sc:.3f}] {body}")
        return self.template.format(
            query=walk.query,
            num_sentences=len(walk.extracted),
            extracted=extracted or "(nothing yet)",
            candidates="\n".join(lines),
            num_candidates=len(lines),
        )

    def _decide(self, reply: str, cands: np.ndarray, scores: np.ndarray) -> Choice:
        parsed = parse_llm_choice(reply, len(cands))
        if parsed == "stop":
            return Choice(None, "llm: stop")
        if isinstance(parsed, int):
            return Choice(parsed, "llm")
        snippet = reply if len(reply) <= 60 else reply[:60] + "..."
        return Choice(_argmax(cands, scores), f"llm_fallback: unusable reply {snippet!r}")

    def choose(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> Choice:
        """Ask the LLM (sync); fall back to the most similar candidate."""
        if self.llm is None:
            return Choice(_argmax(cands, scores), "llm_fallback: no LLM configured")
        walk.llm_calls += 1
        return self._decide(self.llm.complete(self.prompt(walk, cands, scores, config)),
                            cands, scores)

    async def achoose(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> Choice:
        """Ask the LLM (native async); fall back to the most similar candidate."""
        if self.llm is None:
            return Choice(_argmax(cands, scores), "llm_fallback: no LLM configured")
        walk.llm_calls += 1
        reply = await self.llm.acomplete(self.prompt(walk, cands, scores, config))
        return self._decide(reply, cands, scores)


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3].rstrip() + "..."


def parse_llm_choice(reply: str, num_candidates: int) -> int | Literal["stop"] | None:
    """Read an LLM reply to :data:`LLM_TRAVERSAL_PROMPT`.

    Returns a 0-based candidate position, ``"stop"``, or ``None`` when the reply is
    unusable (no JSON ``choice``, out-of-range number, anything else). A bare number or
    the bare word ``stop`` is accepted too.
    """
    value: Any
    try:
        obj = parse_json_response(reply, expect=dict)
        value = obj.get("choice", obj.get("next"))
    except ParseError:
        value = reply.strip().strip(".").strip()
    if isinstance(value, str):
        v = value.strip().lower()
        if v == "stop":
            return "stop"
        if v.isdigit():
            value = int(v)
        else:
            return None
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value - 1 if 1 <= value <= num_candidates else None


_POLICIES: dict[str, type[TraversalPolicy]] = {
    "basic_retrieval": BasicRetrievalPolicy,
    "query_traversal": QueryTraversalPolicy,
    "kg_traversal": KGTraversalPolicy,
    "triangulation_average": TriangulationAveragePolicy,
    "triangulation_geometric_3d": TriangulationGeometric3DPolicy,
    "triangulation_fulldim": TriangulationFullDimPolicy,
    "llm_guided_traversal": LLMGuidedPolicy,
}


def make_policy(
    algorithm: str, *, llm: LLM | None = None, llm_prompt: str = LLM_TRAVERSAL_PROMPT
) -> TraversalPolicy:
    """Instantiate the policy of an algorithm by name."""
    cls = _POLICIES.get(algorithm)
    if cls is None:
        raise ConfigError(f"unknown traversal algorithm {algorithm!r}; choose from {ALGORITHMS}")
    return LLMGuidedPolicy(llm, prompt=llm_prompt) if cls is LLMGuidedPolicy else cls()


def check_algorithm(algorithm: str) -> str:
    """Return ``algorithm`` if it names an article algorithm or a kgpath extension.

    Adapters validate names with this (not :func:`make_policy`, which knows only the
    walk policies of :data:`ALGORITHMS`).
    """
    if algorithm in ALGORITHMS or algorithm in EXTENSIONS:
        return algorithm
    raise ConfigError(
        f"unknown traversal algorithm {algorithm!r}; choose from {ALGORITHMS + EXTENSIONS}"
    )


# ============================================================================ the walk
_Request = tuple[np.ndarray, np.ndarray]


def _walk(
    walk: Walk, policy: TraversalPolicy, config: TraversalConfig
) -> Generator[_Request, Choice, tuple[str, list[TraversalStep]]]:
    """Run the shared walk, yielding ``(candidates, scores)`` and receiving a choice.

    Written as a generator so the sync and async drivers run the same steps and only
    differ in how :meth:`TraversalPolicy.choose` is awaited.
    """
    v = walk.view
    anchor = int(np.lexsort((np.arange(v.num_chunks), -walk.q_chunk))[0])
    new = walk.visit(anchor, config.max_sentences)
    steps = [_step(walk, 0, anchor, float(walk.q_chunk[anchor]), new, "anchor", (), ())]
    while True:
        if len(walk.extracted) >= config.max_sentences:
            return "max_sentences", steps
        if len(walk.path) - 1 >= config.max_hops:
            return "max_hops", steps
        cands, origins = _candidates(walk, policy, config)
        if cands.size == 0:
            return "dead end: no unvisited candidate adds a sentence", steps
        scores = np.asarray(policy.score(walk, cands, origins, config), dtype=np.float64)
        cands, origins, scores = _best_origin(cands, origins, scores)
        keep = policy.limit(walk, cands, config)
        cands, origins, scores = cands[keep], origins[keep], scores[keep]
        if len(walk.extracted) >= config.min_sentences:
            reason = policy.stop_reason(walk, cands, scores, config)
            if reason is not None:
                return reason, steps
        choice = yield cands, scores
        if choice.index is None:
            return choice.reason, steps
        nxt = int(cands[choice.index])
        new = walk.visit(nxt, config.max_sentences, parent=int(origins[choice.index]))
        steps.append(
            _step(walk, len(steps), nxt, float(scores[choice.index]), new, choice.reason,
                  cands, scores, config.record_candidates)
        )


def _candidates(
    walk: Walk, policy: TraversalPolicy, config: TraversalConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Unvisited candidate chunks that add a sentence, each with its origin chunk."""
    v = walk.view
    if policy.global_candidates:
        cands = np.arange(v.num_chunks, dtype=np.int64)
        origins = np.full(cands.size, walk.current, dtype=np.int64)
    elif config.frontier == "current":
        cands = np.unique(v.neighbours(walk.current))
        origins = np.full(cands.size, walk.current, dtype=np.int64)
    else:
        parts = [v.neighbours(c) for c in walk.path]
        cands = np.concatenate(parts)
        origins = np.repeat(np.asarray(walk.path, dtype=np.int64), [p.size for p in parts])
    ok = ~walk.visited[cands]
    cands, origins = cands[ok], origins[ok]
    if cands.size == 0:
        return cands, origins
    fresh = walk.new_sentence_counts()[cands]
    if policy.skip_overlapping:
        ok = fresh == np.diff(v.chunk_sent_ptr)[cands]
    else:
        ok = fresh > 0
    return cands[ok], origins[ok]


def _best_origin(
    cands: np.ndarray, origins: np.ndarray, scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keep one (origin, candidate) pair per candidate: the best score, ties by origin."""
    order = np.lexsort((origins, -scores, cands))
    c = cands[order]
    first = np.ones(c.size, dtype=bool)
    first[1:] = c[1:] != c[:-1]
    pick = order[first]
    return cands[pick], origins[pick], scores[pick]


def _step(
    walk: Walk,
    hop: int,
    chunk: int,
    score: float,
    new: list[int],
    reason: str,
    cands: Sequence[int] | np.ndarray,
    scores: Sequence[float] | np.ndarray,
    keep: int = 0,
) -> TraversalStep:
    v = walk.view
    recorded: tuple[tuple[str, float], ...] = ()
    if keep and len(cands):
        c = np.asarray(cands)
        sc = np.asarray(scores)
        order = np.lexsort((c, -sc))[:keep]
        recorded = tuple((v.chunk_ids[int(c[i])], float(sc[i])) for i in order)
    return TraversalStep(
        hop=hop,
        chunk_id=v.chunk_ids[chunk],
        doc_id=v.chunk_doc[chunk],
        score=score,
        query_similarity=float(walk.q_chunk[chunk]),
        transition_similarity=walk.transitions[-1] if hop > 0 else None,
        origin_id=v.chunk_ids[walk.parents[-1]] if hop > 0 else None,
        new_sentences=tuple(v.sent_ids[s] for s in new),
        reason=reason,
        candidates=recorded,
    )


def _result(
    walk: Walk,
    policy: TraversalPolicy,
    config: TraversalConfig,
    stop: str,
    steps: list[TraversalStep],
) -> TraversalResult:
    v = walk.view
    sentences = tuple(
        TraversedSentence(
            id=v.sent_ids[s], text=v.sent_text[s], doc_id=v.sent_doc[s],
            chunk_id=v.chunk_ids[c], hop=h, query_similarity=sim,
        )
        for s, c, h, sim in zip(
            walk.extracted, walk.sentence_chunk, walk.sentence_hop, walk.extracted_sims,
            strict=True,
        )
    )
    trace: dict[str, Any] = {
        "algorithm": policy.name,
        "anchor_id": steps[0].chunk_id,
        "hops": len(steps) - 1,
        "path": [s.chunk_id for s in steps],
        "documents_visited": list(dict.fromkeys(s.doc_id for s in steps)),
        "stop_reason": stop,
        "mean_extracted_similarity": walk.mean_extracted if walk.extracted else None,
        "frontier": "global" if policy.global_candidates else config.frontier,
    }
    if isinstance(policy, LLMGuidedPolicy):
        trace["llm"] = policy.llm is not None
        trace["llm_calls"] = walk.llm_calls
        trace["llm_fallbacks"] = sum(1 for s in steps if s.reason.startswith("llm_fallback"))
    return TraversalResult(
        query=walk.query,
        algorithm=policy.name,
        anchor_id=steps[0].chunk_id,
        sentences=sentences,
        path=tuple(steps),
        stop_reason=stop,
        config=config,
        trace=trace,
    )


def _as_view(graph: KnowledgeGraph | ChunkGraphView) -> ChunkGraphView:
    return graph if isinstance(graph, ChunkGraphView) else ChunkGraphView(graph)


def traverse(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    policy: TraversalPolicy | str,
    *,
    config: TraversalConfig | None = None,
    query: str = "",
    llm: LLM | None = None,
) -> TraversalResult:
    """Run one algorithm (a policy or its name) from the anchor chunk; sync."""
    cfg = config or TraversalConfig()
    pol = make_policy(policy, llm=llm) if isinstance(policy, str) else policy
    walk = Walk(_as_view(graph), query_vec, query)
    gen = _walk(walk, pol, cfg)
    try:
        request = next(gen)
        while True:
            request = gen.send(pol.choose(walk, request[0], request[1], cfg))
    except StopIteration as done:
        stop, steps = done.value
    return _result(walk, pol, cfg, stop, steps)


async def atraverse(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    policy: TraversalPolicy | str,
    *,
    config: TraversalConfig | None = None,
    query: str = "",
    llm: LLM | None = None,
) -> TraversalResult:
    """Async :func:`traverse` (the LLM policy awaits ``acomplete``)."""
    cfg = config or TraversalConfig()
    pol = make_policy(policy, llm=llm) if isinstance(policy, str) else policy
    walk = Walk(_as_view(graph), query_vec, query)
    gen = _walk(walk, pol, cfg)
    try:
        request = next(gen)
        while True:
            choice = await pol.achoose(walk, request[0], request[1], cfg)
            request = gen.send(choice)
    except StopIteration as done:
        stop, steps = done.value
    return _result(walk, pol, cfg, stop, steps)


# ---------------------------------------------------------------------- named entry points
def basic_retrieval(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    *,
    config: TraversalConfig | None = None,
    query: str = "",
) -> TraversalResult:
    """Alg. 1: chunks in decreasing ``cos(q, c)`` order, ignoring edges."""
    return traverse(graph, query_vec, BasicRetrievalPolicy(), config=config, query=query)


def query_traversal(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    *,
    config: TraversalConfig | None = None,
    query: str = "",
) -> TraversalResult:
    """Alg. 2: hop to the neighbour most similar to the query."""
    return traverse(graph, query_vec, QueryTraversalPolicy(), config=config, query=query)


def kg_traversal(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    *,
    config: TraversalConfig | None = None,
    query: str = "",
) -> TraversalResult:
    """Alg. 3: hop to the neighbour most similar to the current chunk."""
    return traverse(graph, query_vec, KGTraversalPolicy(), config=config, query=query)


def triangulation_average(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    *,
    config: TraversalConfig | None = None,
    query: str = "",
) -> TraversalResult:
    """Alg. 4: hop to the neighbour with the best mean of the three similarities."""
    return traverse(graph, query_vec, TriangulationAveragePolicy(), config=config, query=query)


def triangulation_geometric_3d(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    *,
    config: TraversalConfig | None = None,
    query: str = "",
) -> TraversalResult:
    """Alg. 5: triangle-centroid rule in a 3-D PCA space."""
    return traverse(
        graph, query_vec, TriangulationGeometric3DPolicy(), config=config, query=query
    )


def triangulation_fulldim(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    *,
    config: TraversalConfig | None = None,
    query: str = "",
) -> TraversalResult:
    """Alg. 6: triangle-centroid rule in the full embedding space."""
    return traverse(graph, query_vec, TriangulationFullDimPolicy(), config=config, query=query)


def llm_guided_traversal(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    *,
    llm: LLM | None = None,
    config: TraversalConfig | None = None,
    query: str = "",
) -> TraversalResult:
    """Alg. 7: the LLM chooses among the top-5 neighbours (``llm=None``: fallback only)."""
    return traverse(graph, query_vec, LLMGuidedPolicy(llm), config=config, query=query)


async def allm_guided_traversal(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    *,
    llm: LLM | None = None,
    config: TraversalConfig | None = None,
    query: str = "",
) -> TraversalResult:
    """Async :func:`llm_guided_traversal` (native ``acomplete``)."""
    return await atraverse(graph, query_vec, LLMGuidedPolicy(llm), config=config, query=query)


# ============================================================================ mention expansion
# kgpath extension (not one of the article's seven algorithms): one hop through the mention
# layer of :func:`kgpath.build.chunk_graph.add_mention_edges`.
@dataclass(frozen=True, kw_only=True)
class MentionExpansionConfig:
    """Parameters of :func:`mention_expansion` (a kgpath extension; no paper defaults).

    The three scoring values were chosen on HotpotQA-100 questions 0-49 only, from the grid
    ``link_bonus in {0.02, 0.05, 0.1, 0.2}``, ``question_bonus in {0, 0.05, 0.1, 0.2}``,
    ``max_title_df in {0.003, 0.005, 0.01, 0.02, 1}`` (best Recall@5, then Recall@2);
    questions 50-99 were held out (see ``kgpath eval traversal --halves``). Recall@5 on the
    first half was flat (97) for every ``max_title_df`` once ``link_bonus = 0.05``.

    Attributes
    ----------
    link_bonus
        β, added to a pair of documents joined by a mention edge (in cosine units).
    question_bonus
        γ, added to the query similarity of a document whose title the question names
        (comparison questions "X or Y?" name both passages).
    max_title_df
        A document is a link target only if at most this fraction of all documents
        mention its title: titles that are common words ("United") link everything.
    max_documents
        Documents returned (ranked).
    sentences_per_document
        Sentences kept per returned document: the sentences that carry the link evidence
        first, then the most query-similar ones, emitted in document order.
    min_title_chars
        Shortest title matched in the question (as in the graph's mention layer).
    """

    link_bonus: float = 0.05
    question_bonus: float = 0.05
    max_title_df: float = 0.003
    max_documents: int = 5
    sentences_per_document: int = 3
    min_title_chars: int = 3

    def __post_init__(self) -> None:
        for name in ("link_bonus", "question_bonus"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                math.isfinite(v) and v >= 0
            ):
                raise ConfigError(f"{name} must be a finite number >= 0, got {v!r}")
        v = self.max_title_df
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
            raise ConfigError(f"max_title_df must be a number in (0, 1], got {v!r}")
        for name in ("max_documents", "sentences_per_document", "min_title_chars"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"{name} must be an int >= 1, got {v!r}")


class MentionLayer:
    """Document-level arrays of a chunk graph's mention layer (built once per view).

    ``doc_ids``/``doc_emb`` come from the ``document`` nodes; ``link_src``/``link_dst``/
    ``link_sent`` hold one row per ``mentions`` edge (source document, mentioned document,
    sentence position or ``-1`` for a chunk source); ``df[d]`` counts the distinct
    documents that mention ``d``.
    """

    def __init__(self, view: ChunkGraphView, *, min_title_chars: int = 3) -> None:
        g = view.graph
        doc_nodes = [i for i, n in enumerate(g.nodes) if n.type == NODE_DOCUMENT]
        if not doc_nodes:
            raise GraphError("chunk graph has no 'document' nodes; mention expansion needs them")
        self.doc_ids = [_doc_of(g, i) for i in doc_nodes]
        self.doc_pos = {d: k for k, d in enumerate(self.doc_ids)}
        self.doc_emb = np.ascontiguousarray(g.embeddings[np.asarray(doc_nodes, np.int64)])
        titles = {d: (g.node_at(i).name or d) for d, i in zip(self.doc_ids, doc_nodes,
                                                                strict=True)}
        self.matcher = TitleMatcher(titles, min_chars=min_title_chars)
        n_docs = len(self.doc_ids)
        self.doc_sents: list[list[int]] = [[] for _ in range(n_docs)]
        for s, d in enumerate(view.sent_doc):
            if d in self.doc_pos:
                self.doc_sents[self.doc_pos[d]].append(s)
        self.doc_chunks: list[list[int]] = [[] for _ in range(n_docs)]
        for c, d in enumerate(view.chunk_doc):
            if d in self.doc_pos:
                self.doc_chunks[self.doc_pos[d]].append(c)
        spos = {int(gi): p for p, gi in enumerate(view.sent_nodes)}
        rows: list[tuple[int, int, int]] = []
        for e in g.edges:
            if e.relation != REL_MENTIONS:
                continue
            si, ti = g.index_of(e.source), g.index_of(e.target)
            a = self.doc_pos.get(_doc_of(g, si))
            b = self.doc_pos.get(_doc_of(g, ti))
            if a is not None and b is not None and a != b:
                rows.append((a, b, spos.get(si, -1)))
        arr = np.asarray(rows, dtype=np.int64).reshape(-1, 3)
        self.link_src, self.link_dst, self.link_sent = arr[:, 0], arr[:, 1], arr[:, 2]
        pairs = np.unique(arr[:, :2], axis=0) if arr.size else np.zeros((0, 2), np.int64)
        self.df = np.bincount(pairs[:, 1], minlength=n_docs) if pairs.size else np.zeros(
            n_docs, np.int64)

    @property
    def num_links(self) -> int:
        """Number of ``mentions`` edges between two different documents."""
        return int(self.link_src.size)


def question_mentions(layer: MentionLayer, query: str) -> np.ndarray:
    """Positions of the documents whose titles the question names (seed set ``M(q)``)."""
    found = layer.matcher.find(query) if query else []
    return np.asarray(sorted(layer.doc_pos[d] for d in found), dtype=np.int64)


def seed_scores(
    layer: MentionLayer, q: np.ndarray, mentioned: np.ndarray, config: MentionExpansionConfig
) -> np.ndarray:
    """``s(d) = cos(q, e_d) + γ [d ∈ M(q)]`` for every document ``d``."""
    s = (layer.doc_emb @ q).astype(np.float64)
    s[mentioned] += config.question_bonus
    return s


def chain_scores(
    layer: MentionLayer, s: np.ndarray, config: MentionExpansionConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Score of the best two-document chain through each document, and the link mask.

    ``pair(a, b) = s(a) + s(b) + β link(a, b)`` where ``link(a, b) = 1`` when a sentence
    of one mentions the other's title and that title is mentioned by at most
    ``max_title_df * N`` documents; ``score(d) = max_{a != d} pair(d, a)``. Exact in
    ``O(N + |links|)``: the best unlinked partner is the top document (the runner-up for
    the top document itself) and the best linked partner a maximum over ``d``'s links.
    """
    n = s.size
    keep = layer.df[layer.link_dst] <= config.max_title_df * n
    u = np.concatenate([layer.link_src[keep], layer.link_dst[keep]])
    v = np.concatenate([layer.link_dst[keep], layer.link_src[keep]])
    order = np.argsort(-s, kind="stable")
    best_other = np.full(n, s[order[0]])
    if n > 1:
        best_other[order[0]] = s[order[1]]
    else:
        best_other[order[0]] = 0.0
    # pair sums are formed as (s(a) + s(b)) + β so both members of a pair get the same
    # float score (addition is commutative), and ties then fall to s(d)
    linked = np.full(n, -np.inf)
    if u.size:
        np.maximum.at(linked, u, (s[u] + s[v]) + config.link_bonus)
    return np.maximum(s + best_other, linked), keep


def mention_expansion(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    *,
    query: str = "",
    config: MentionExpansionConfig | None = None,
    traversal_config: TraversalConfig | None = None,
) -> TraversalResult:
    """Rank documents by their best two-document chain through the mention layer.

    A kgpath extension, not one of the article's algorithms. Seeds are every document by
    query similarity plus the documents the question names (:func:`seed_scores`); each
    document is expanded one hop through ``mentions`` edges in both directions and scored
    by the best chain it belongs to (:func:`chain_scores`), so the passage a strong seed
    links to rises even when it shares little vocabulary with the question (HotpotQA
    bridge questions follow Wikipedia's hyperlinks). The ``max_documents`` best are
    returned with ``sentences_per_document`` sentences each; the path has one step per
    returned document recording its chain partner and the edge type that joined them.

    The graph must carry the mention layer (:func:`kgpath.build.chunk_graph.add_mention_edges`;
    the builder adds it by default). Without any ``mentions`` edge the ranking reduces to
    dense document similarity plus the question bonus.
    """
    cfg = config or MentionExpansionConfig()
    view = _as_view(graph)
    layer = view.mention_layer(cfg.min_title_chars)
    q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
    if q.shape[0] != layer.doc_emb.shape[1]:
        raise GraphError(
            f"query embedding has dimension {q.shape[0]}, document embeddings have "
            f"{layer.doc_emb.shape[1]}"
        )
    mentioned = question_mentions(layer, query)
    s = seed_scores(layer, q, mentioned, cfg)
    score, keep = chain_scores(layer, s, cfg)
    n_docs = s.size
    ranked = np.lexsort((np.arange(n_docs), -s, -score))[: cfg.max_documents]
    q_chunk = view.chunk_emb @ q
    q_sent = view.sent_emb @ q
    in_question = set(mentioned.tolist())
    top2 = np.lexsort((np.arange(n_docs), -s))[:2].tolist()
    src, dst, sent = layer.link_src[keep], layer.link_dst[keep], layer.link_sent[keep]
    steps: list[TraversalStep] = []
    sentences: list[TraversedSentence] = []
    documents: list[dict[str, Any]] = []
    for rank, d in enumerate(ranked.tolist()):
        partner, edge, evidence = _chain_partner(d, s, cfg, src, dst, sent, top2)
        chunks = layer.doc_chunks[d]
        best_chunk = chunks[int(np.argmax(q_chunk[chunks]))] if chunks else -1
        own = [x for x in evidence if view.sent_doc[x] == layer.doc_ids[d]]
        pool = [x for x in layer.doc_sents[d] if x not in own]
        pool.sort(key=lambda x: (-q_sent[x], x))
        chosen = sorted((own + pool)[: cfg.sentences_per_document])
        for x in chosen:
            sentences.append(TraversedSentence(
                id=view.sent_ids[x], text=view.sent_text[x], doc_id=layer.doc_ids[d],
                chunk_id=view.chunk_ids[best_chunk] if best_chunk >= 0 else "",
                hop=rank, query_similarity=float(q_sent[x]),
            ))
        if edge is not None:
            reason = f"{edge}: {layer.doc_ids[partner]}"
        elif d in in_question:
            reason = "seed: question mention"
        else:
            reason = "seed: dense"
        pchunks = layer.doc_chunks[partner] if partner >= 0 else []
        pchunk = pchunks[int(np.argmax(q_chunk[pchunks]))] if pchunks else -1
        origin = view.chunk_ids[pchunk] if rank > 0 and edge is not None and pchunk >= 0 \
            else None
        trans = None  # only a hop through a mention edge has a transition
        if origin is not None and best_chunk >= 0:
            trans = float(view.chunk_emb[best_chunk] @ view.chunk_emb[pchunk])
        steps.append(TraversalStep(
            hop=rank,
            chunk_id=view.chunk_ids[best_chunk] if best_chunk >= 0 else f"doc:{layer.doc_ids[d]}",
            doc_id=layer.doc_ids[d],
            score=float(score[d]),
            query_similarity=float(q_chunk[best_chunk]) if best_chunk >= 0 else float(s[d]),
            transition_similarity=trans,
            new_sentences=tuple(view.sent_ids[x] for x in chosen),
            reason=reason,
            origin_id=origin,
        ))
        documents.append({
            "doc_id": layer.doc_ids[d],
            "score": float(score[d]),
            "seed_score": float(s[d]),
            "question_mention": d in in_question,
            "partner": layer.doc_ids[partner] if partner >= 0 else None,
            "edge": edge,
            "evidence": [view.sent_ids[x] for x in evidence],
        })
    tcfg = traversal_config or TraversalConfig()
    trace: dict[str, Any] = {
        "algorithm": "mention_expansion",
        "anchor_id": steps[0].chunk_id,
        "path": [st.chunk_id for st in steps],
        "documents_visited": [x["doc_id"] for x in documents],
        "documents": documents,
        "question_mentions": [layer.doc_ids[k] for k in mentioned.tolist()],
        "mention_links": int(keep.sum()),
        "mention_links_dropped_df": int((~keep).sum()),
        "stop_reason": "max_documents",
        "mention_config": dataclasses.asdict(cfg),
        "frontier": "documents",
    }
    return TraversalResult(
        query=query, algorithm="mention_expansion", anchor_id=steps[0].chunk_id,
        sentences=tuple(sentences), path=tuple(steps), stop_reason="max_documents",
        config=tcfg, trace=trace,
    )


def _chain_partner(
    d: int, s: np.ndarray, cfg: MentionExpansionConfig,
    src: np.ndarray, dst: np.ndarray, sent: np.ndarray, top2: list[int],
) -> tuple[int, str | None, list[int]]:
    """The partner realising ``score(d)``: ``(doc, edge type or None, evidence sentences)``.

    A linked partner wins ties with the unlinked one (the link is then the evidence).
    """
    out_m = dst[src == d]
    in_m = src[dst == d]
    best = -1
    best_val = -np.inf
    for a in np.unique(np.concatenate([out_m, in_m])).tolist():
        val = s[a] + cfg.link_bonus
        if val > best_val:
            best, best_val = a, val
    alt = top2[0] if top2[0] != d or len(top2) == 1 else top2[1]
    if best < 0 or s[alt] > best_val:
        return (alt if alt != d else -1), None, []
    mentions_fwd = (src == d) & (dst == best)
    mentions_bwd = (src == best) & (dst == d)
    kinds = []
    if mentions_fwd.any():
        kinds.append("mentions")
    if mentions_bwd.any():
        kinds.append("mentioned_by")
    evidence = sorted(set(sent[mentions_fwd | mentions_bwd].tolist()) - {-1})
    return best, "+".join(kinds), evidence


# ============================================================================ retriever
class TraversalRetriever:
    """Query-in, sentences-out retriever exposing all seven algorithms by name.

    Parameters
    ----------
    index
        A :class:`GraphIndex` over a chunk graph, or the chunk graph itself (wrapped with
        ``embedder``). Embeddings stored in the graph by the builder are reused.
    embedder
        Query embedder (must be the one the graph was built with).
    algorithm
        Default algorithm (one of :data:`ALGORITHMS`); per call: ``retrieve(algorithm=...)``.
    config
        :class:`TraversalConfig`; per-call overrides are keyword arguments of
        :meth:`retrieve` (applied with ``dataclasses.replace``).
    llm
        Used by ``llm_guided_traversal`` only.
    llm_prompt
        Template of each LLM step (variables as in :data:`LLM_TRAVERSAL_PROMPT`).
    mention_config
        :class:`MentionExpansionConfig` of the ``mention_expansion`` extension
        (:data:`EXTENSIONS`), which is also accepted as ``algorithm``.

    Examples
    --------
    >>> from kgpath import HashingEmbedder
    >>> from kgpath.build.chunk_graph import build_chunk_graph
    >>> emb = HashingEmbedder()
    >>> g = build_chunk_graph({"Cats": "Cats purr. Cats hunt mice. Mice fear cats.",
    ...                        "Dogs": "Dogs bark. Dogs chase cats."}, embedder=emb)
    >>> r = TraversalRetriever(g, embedder=emb).retrieve("Why do mice fear cats?")
    >>> r.path_ids[0]
    'chunk:Cats:0'
    """

    def __init__(
        self,
        index: GraphIndex | KnowledgeGraph,
        *,
        embedder: Any = None,
        algorithm: str = "query_traversal",
        config: TraversalConfig | None = None,
        llm: LLM | None = None,
        llm_prompt: str = LLM_TRAVERSAL_PROMPT,
        mention_config: MentionExpansionConfig | None = None,
    ) -> None:
        self.index = index if isinstance(index, GraphIndex) else GraphIndex(index, embedder)
        check_algorithm(algorithm)  # validate the name early
        self.mention_config = mention_config or MentionExpansionConfig()
        self.llm_prompt = llm_prompt
        self.algorithm = algorithm
        self.config = config or TraversalConfig()
        self.llm = llm
        self._view: ChunkGraphView | None = None
        self._view_version = -1

    def _policy(self, algorithm: str) -> TraversalPolicy:
        return make_policy(algorithm, llm=self.llm, llm_prompt=self.llm_prompt)

    @property
    def graph(self) -> KnowledgeGraph:
        """The chunk graph."""
        return self.index.graph

    @property
    def view(self) -> ChunkGraphView:
        """The array view (rebuilt if the graph changed)."""
        if self._view is None or self._view_version != self.graph.version:
            self.index.build()
            self._view = ChunkGraphView(self.graph)
            self._view_version = self.graph.version
        return self._view

    def resolve_config(self, **overrides: Any) -> TraversalConfig:
        """The config with per-call ``overrides`` applied (``None`` values are ignored)."""
        return with_overrides(self.config, overrides, label="traversal")

    def retrieve(
        self, query: str, *, algorithm: str | None = None, **overrides: Any
    ) -> TraversalResult:
        """Run one algorithm for ``query``; ``overrides`` are :class:`TraversalConfig` fields."""
        q = check_query(query)
        cfg = self.resolve_config(**overrides)
        name = algorithm or self.algorithm
        if name in EXTENSIONS:
            view = self.view
            return self._extension(view, self.index.embed_query(q), q, cfg)
        policy = self._policy(name)
        view = self.view
        return traverse(view, self.index.embed_query(q), policy, config=cfg, query=q)

    def _extension(
        self, view: ChunkGraphView, qv: np.ndarray, q: str, cfg: TraversalConfig
    ) -> TraversalResult:
        return mention_expansion(view, qv, query=q, config=self.mention_config,
                                 traversal_config=cfg)

    async def aretrieve(
        self, query: str, *, algorithm: str | None = None, **overrides: Any
    ) -> TraversalResult:
        """Async :meth:`retrieve` (query embedding and LLM calls awaited)."""
        q = check_query(query)
        cfg = self.resolve_config(**overrides)
        name = algorithm or self.algorithm
        if name in EXTENSIONS:
            view = self.view
            return self._extension(view, await self.index.aembed_query(q), q, cfg)
        policy = self._policy(name)
        view = self.view
        qv = await self.index.aembed_query(q)
        return await atraverse(view, qv, policy, config=cfg, query=q)

    def retrieve_all(
        self, query: str, algorithms: Sequence[str] = ALGORITHMS, **overrides: Any
    ) -> dict[str, TraversalResult]:
        """Run several algorithms on one query, embedding it once."""
        q = check_query(query)
        cfg = self.resolve_config(**overrides)
        view = self.view
        qv = self.index.embed_query(q)
        return {
            a: self._extension(view, qv, q, cfg) if a in EXTENSIONS
            else traverse(view, qv, self._policy(a), config=cfg, query=q)
            for a in algorithms
        }


def format_traversal(result: TraversalResult, graph: KnowledgeGraph | None = None) -> str:
    """Render the path, e.g. ``Alpha#0 -(0.91)-> Alpha#1 -(0.62)-> Beta#0``.

    A hop that branches from an earlier chunk (``frontier="visited"``) is written
    ``-(0.62 from Alpha#0)-> Beta#0``.
    """

    def label(chunk_id: str) -> str:
        if graph is not None and chunk_id in graph:
            n = graph.node(chunk_id)
            return f"{n.name or n.metadata.get('doc_id', '')}#{n.metadata.get('position', '')}"
        return chunk_id

    parts = []
    prev: str | None = None
    for s in result.path:
        if s.transition_similarity is None:
            parts.append(label(s.chunk_id))
        elif s.origin_id is not None and s.origin_id != prev:
            parts.append(f"-({s.transition_similarity:.2f} from {label(s.origin_id)})-> "
                         f"{label(s.chunk_id)}")
        else:
            parts.append(f"-({s.transition_similarity:.2f})-> {label(s.chunk_id)}")
        prev = s.chunk_id
    return " ".join(parts)
