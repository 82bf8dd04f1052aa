"""The walk's state and the one policy hook every algorithm implements.

Article section "Knowledge Graph Traversal Algorithms": "All algorithms start with the same
step: identifying an anchor chunk ... From here, each algorithm follows distinct rules to
select the next chunk to explore." :class:`Walk` is the shared state (visited chunks,
extracted sentences ``E``); :class:`TraversalPolicy` is the per-algorithm rule (how
candidates are scored and chosen, and when the walk stops).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from kgpath.errors import GraphError
from kgpath.methods.traversal.config import TraversalConfig
from kgpath.methods.traversal.view import ChunkGraphView

__all__ = ["Choice", "TraversalPolicy", "Walk", "argmax"]


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
        """``mean_{s in E} cos(q, s)`` (the article rules' "relevance of what is extracted")."""
        return float(np.mean(self.extracted_sims)) if self.extracted_sims else -np.inf

    @property
    def max_extracted(self) -> float:
        """``max_{s in E} cos(q, s)`` (the reference code's ``best_sentence_similarity``)."""
        return float(max(self.extracted_sims)) if self.extracted_sims else -np.inf

    def gated(self, config: TraversalConfig, reference_gate: int) -> bool:
        """True while too few sentences are extracted for an early stop to fire.

        ``reference_gate`` is the rule's own gate in the reference code (used when
        ``config.min_sentences`` is ``None``; see :meth:`TraversalConfig.gate`).
        """
        return len(self.extracted) < config.gate(reference_gate)

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

    #: Sentences the reference code extracts before this policy's relevance rule may fire
    #: (``min_sentences=None`` under ``stopping="reference"``).
    reference_gate: ClassVar[int] = 8

    def stop_reason(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> str | None:
        """Early stop before the next hop, or ``None``: the rule set of ``config.stopping``.

        Called once the candidates are scored; the budget, hop cap and dead end are the
        walk's own (:func:`~kgpath.methods.traversal.walks.traverse`).
        """
        if config.stopping == "article":
            if walk.gated(config, self.reference_gate):
                return None
            return self.article_stop(walk, cands, scores, config)
        return self.reference_stop(walk, cands, scores, config)

    def article_stop(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> str | None:
        """Alg. 1 step 3, Alg. 2 step 4, article reading: ``max cos(q,c) < mean cos(q,s)``.

        "... or when all unvisited chunks are less relevant than the sentences already
        extracted", with the sentences' relevance read as their mean.
        """
        best = float(walk.q_chunk[cands].max())
        if best < walk.mean_extracted:
            return (
                f"relevance: best candidate cos(q,c)={best:.4f} < mean extracted "
                f"cos(q,s)={walk.mean_extracted:.4f}"
            )
        return None

    def competitors(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> tuple[np.ndarray, np.ndarray, str]:
        """The chunks a reference early stop compares with, their scores and a label.

        The reference code compares with every neighbour of the current chunk, visited
        ones included (``BaseRetrievalAlgorithm.get_hybrid_connections``): a stop fires
        only when what is extracted beats the whole neighbourhood. With
        ``frontier="visited"`` (kgpath's branching walk, whose position is the visited
        set) and for Alg. 1's global candidates, the candidates themselves.
        """
        if self.global_candidates or config.frontier == "visited":
            return cands, scores, "candidate"
        nb = np.unique(walk.view.neighbours(walk.current))
        origins = np.full(nb.size, walk.current, dtype=np.int64)
        nb_scores = np.asarray(self.score(walk, nb, origins, config), dtype=np.float64)
        return nb, nb_scores, "neighbour"

    def reference_stop(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> str | None:
        """Alg. 1-2 as the reference code: ``max_{s in E} cos(q,s) > max_c cos(q,c)``.

        Reference ``utils/algos/query_traversal.py`` (``QueryTraversalAlgorithm.retrieve``,
        "content-quality-anchored early stopping", once 8 sentences are extracted) and
        ``utils/algos/basic_retrieval.py`` (``BasicRetrievalAlgorithm.retrieve``, once 5):
        the walk stops when the *best* extracted sentence is more query-similar than the
        best chunk ``c`` of :meth:`competitors`. Deviation: the best extracted similarity
        starts at ``-inf`` (the reference starts it at ``0.0``).
        """
        if walk.gated(config, self.reference_gate):
            return None
        comp, _, label = self.competitors(walk, cands, scores, config)
        best = float(walk.q_chunk[comp].max())
        if walk.max_extracted > best:
            return (
                f"relevance: best extracted cos(q,s)={walk.max_extracted:.4f} > best "
                f"{label} cos(q,c)={best:.4f}"
            )
        return None

    def choose(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> Choice:
        """Pick the best-scored candidate (ties: lowest chunk position)."""
        return Choice(argmax(cands, scores), "policy")

    async def achoose(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> Choice:
        """Async :meth:`choose` (default: the sync choice)."""
        return self.choose(walk, cands, scores, config)


def argmax(cands: np.ndarray, scores: np.ndarray) -> int:
    """Position of the best score (ties: the lowest chunk position)."""
    order = np.lexsort((cands, -scores))
    return int(order[0])

