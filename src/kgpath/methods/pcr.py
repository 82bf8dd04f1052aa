"""Path-Constrained Retrieval (PCR).

Reference: J. Oladokun, "Path-Constrained Retrieval: A Structural Approach to Reliable LLM
Agent Reasoning Through Graph-Spaced Semantic Search", 2025 (shared/papers/pcr-*.txt).

Steps, named after the paper's section 3.3, written once over a graph backend
(:class:`~kgpath.backends.base.GraphBackend`: the in-memory CSR graph, or a Cypher database
for :class:`CypherPCR`):

1. anchor resolution (by id, by name, or the most similar node);
2. Eq. (1): ``C_reachable = {v : path(a, v) exists}``, optionally with ``length <= d_max``,
   by the backend's BFS (:func:`reachable_candidates` on the CSR graph);
3. Eq. (2): ``argmax_{v in C_reachable, |R|=k} sim(q, v)`` (:func:`constrained_search`),
   or the hybrid score of section 3.4 (``α·sim + (1−α)·BM25``, α = 0.7; in memory only);
4. hits with their BFS-tree paths, and the fallback of section 3.5 (global search when
   nothing but the anchor is reachable), recorded in the result.

Complexity in memory: BFS is O(|reached| + |their edges|) with no per-edge Python work;
scoring is one gather-and-dot over the reachable set (O(|C|·d)); top-k by ``argpartition``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from kgpath._config import with_overrides
from kgpath.backends.base import BFSTree, GraphBackend
from kgpath.backends.cypher import CypherBackend, CypherDriver, CypherSchema
from kgpath.backends.memory import InMemoryBackend
from kgpath.embeddings import Embedder
from kgpath.errors import ConfigError, NodeNotFoundError
from kgpath.evidence import Evidence, check_output, passages_from_sources, rank_items
from kgpath.graph import BFSResult, Direction, Edge, KnowledgeGraph, Node
from kgpath.index.graph_index import GraphIndex, check_query
from kgpath.index.vector import top_k

__all__ = [
    "PCRConfig",
    "PCRHit",
    "PCRResult",
    "PathConstrainedRetriever",
    "CypherPCR",
    "reachable_candidates",
    "constrained_search",
    "format_path",
]

logger = logging.getLogger(__name__)

SearchMode = Literal["vector", "hybrid", "bm25"]
Fallback = Literal["none", "global"]
AnchorPolicy = Literal["error", "similar"]


@dataclass(frozen=True, kw_only=True)
class PCRConfig:
    """PCR hyperparameters; defaults follow the paper (Appendix A.2).

    Attributes
    ----------
    k
        Number of results (paper: 10).
    max_depth
        ``d_max`` in section 3.2; ``None`` = unlimited (the paper's default).
    direction
        Edge direction for reachability: ``"out"`` (paper), ``"in"`` or ``"both"``.
    mode
        ``"vector"`` (Eq. 2), ``"hybrid"`` (section 3.4) or ``"bm25"`` (ablation).
    alpha
        Hybrid weight of the vector score (paper: 0.7).
    fallback
        ``"none"`` or ``"global"``: what to do when nothing but the anchor is reachable
        (section 3.5). Global search defeats the structural constraint, so it is off by
        default and always recorded in :attr:`PCRResult.fallback_used`.
    include_anchor
        Whether the anchor itself is a candidate (path of length 0). The PathRAG-6 ground
        truth lists anchors as relevant, so the default is ``True``.
    unknown_anchor
        ``"error"`` raises :class:`NodeNotFoundError` for an unknown id/name;
        ``"similar"`` falls back to the node most similar to the query (recorded).
    """

    k: int = 10
    max_depth: int | None = None
    direction: Direction = "out"
    mode: SearchMode = "vector"
    alpha: float = 0.7
    fallback: Fallback = "none"
    include_anchor: bool = True
    unknown_anchor: AnchorPolicy = "error"

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k <= 0:
            raise ConfigError(f"k must be a positive int, got {self.k!r}")
        if self.max_depth is not None and (
            isinstance(self.max_depth, bool)
            or not isinstance(self.max_depth, int)
            or self.max_depth < 0
        ):
            raise ConfigError(f"max_depth must be None or an int >= 0, got {self.max_depth!r}")
        if self.direction not in ("out", "in", "both"):
            raise ConfigError(f"direction must be 'out', 'in' or 'both', got {self.direction!r}")
        if self.mode not in ("vector", "hybrid", "bm25"):
            raise ConfigError(f"mode must be 'vector', 'hybrid' or 'bm25', got {self.mode!r}")
        if not isinstance(self.alpha, (int, float)) or not 0.0 <= self.alpha <= 1.0:
            raise ConfigError(f"alpha must be in [0, 1], got {self.alpha!r}")
        if self.fallback not in ("none", "global"):
            raise ConfigError(f"fallback must be 'none' or 'global', got {self.fallback!r}")
        if self.unknown_anchor not in ("error", "similar"):
            raise ConfigError(
                f"unknown_anchor must be 'error' or 'similar', got {self.unknown_anchor!r}"
            )


@dataclass(frozen=True)
class PCRHit:
    """One retrieved node with its score and structural trace."""

    node: Node
    score: float
    hops: int | None
    """Shortest-path length from the anchor (``None`` if reached only by global fallback)."""
    path: tuple[str, ...]
    """Node ids of a shortest path anchor -> node (empty if unreachable)."""
    edges: tuple[Edge, ...] = ()
    """The edges along :attr:`path`."""

    @property
    def id(self) -> str:
        """Node id."""
        return self.node.id

    def path_text(self, graph: KnowledgeGraph) -> str:
        """Readable path with relation labels, e.g. ``A -[uses]-> B -[runs_on]-> C``."""
        if not self.path:
            return "(not reachable from the anchor)"
        return format_path(graph, self.path, self.edges)


@dataclass(frozen=True)
class PCRResult:
    """PCR output: the hits plus everything needed to explain them."""

    query: str
    anchor: Node
    anchor_resolution: str
    """How the anchor was found: ``"id"``, ``"name"``, ``"similarity"`` or a fallback note."""
    hits: tuple[PCRHit, ...]
    reachable_count: int
    """``|C_reachable|`` including the anchor."""
    fallback_used: bool
    config: PCRConfig
    trace: dict[str, Any] = field(default_factory=dict)
    graph: KnowledgeGraph | None = field(default=None, repr=False, compare=False)
    """Resolves names and passages: the graph itself in memory; from a database backend, a
    small graph of the result's nodes, path edges and cited passages."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.hits)

    def evidence(self, output: str = "passages", k: int | None = None) -> list[Evidence]:
        """The evidence contract (:mod:`kgpath.evidence`).

        ``"native"``: one ``node`` item per hit, in hit order (text: the node's text, else
        its name). ``"passages"``: hit order, then each hit's provenance in its stored
        order; a passage takes the score and trace of the best hit citing it.
        """
        mode = check_output(output)
        nodes = [self._node_evidence(h) for h in self.hits]
        if mode == "native" or self.graph is None:
            return rank_items(nodes, k)
        pairs = [(h.node.provenance, e) for h, e in zip(self.hits, nodes)]
        return rank_items(passages_from_sources(self.graph, pairs), k)

    def _node_evidence(self, hit: PCRHit) -> Evidence:
        trace: dict[str, Any] = {
            "anchor_id": self.anchor.id,
            "anchor_name": self.anchor.name,
            "anchor_resolution": self.anchor_resolution,
            "node_id": hit.node.id,
            "hops": hit.hops,
            "node_ids": list(hit.path),
            "relations": [e.relation for e in hit.edges],
            "passage_ids": list(hit.node.provenance),
            "fallback": bool(self.fallback_used),
        }
        if self.graph is not None and hit.path:
            trace["path"] = format_path(self.graph, hit.path, hit.edges)
        return Evidence(hit.node.id, hit.node.text or hit.node.name, hit.score, "node",
                        "pcr", trace=trace, source_metadata=hit.node.metadata)

    def __len__(self) -> int:
        return len(self.hits)

    @property
    def ids(self) -> list[str]:
        """Hit node ids in rank order."""
        return [h.id for h in self.hits]


def reachable_candidates(
    graph: KnowledgeGraph,
    anchor: int,
    *,
    max_depth: int | None = None,
    direction: Direction = "out",
) -> BFSResult:
    """Eq. (1): nodes with a (directed) path from the anchor, length ``<= d_max``.

    The anchor is included at distance 0 (``path(a, a)`` of length 0).
    """
    return graph.bfs(anchor, max_depth=max_depth, direction=direction)


def constrained_search(
    index: GraphIndex,
    query: str,
    query_vec: np.ndarray,
    candidates: np.ndarray,
    k: int,
    *,
    mode: SearchMode = "vector",
    alpha: float = 0.7,
) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (2) (and section 3.4 for ``mode="hybrid"``): top-``k`` of ``candidates``.

    Returns ``(positions into candidates, scores)``, best first; ties by position.
    """
    if candidates.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    scores = index.score_candidates(query, query_vec, candidates, mode=mode, alpha=alpha)
    pos = top_k(scores, min(k, candidates.size))
    return pos, scores[pos]


class PathConstrainedRetriever:
    """Retrieve the top-k nodes reachable from an anchor (PCR), on any graph backend.

    Parameters
    ----------
    index
        A :class:`GraphIndex`, a :class:`KnowledgeGraph` (wrapped with ``embedder``), or a
        :class:`~kgpath.backends.base.GraphBackend` (e.g. a
        :class:`~kgpath.backends.cypher.CypherBackend`; :class:`~kgpath.stores.CypherPCR`
        builds one for you).
    embedder
        Used only when ``index`` is a bare graph.
    config
        :class:`PCRConfig`; per-call overrides go through keyword arguments of
        :meth:`retrieve` (applied with ``dataclasses.replace``).

    Examples
    --------
    >>> from kgpath import KnowledgeGraph, HashingEmbedder
    >>> g = KnowledgeGraph.from_triples([("a", "to", "b"), ("b", "to", "c"), ("x", "to", "y")])
    >>> pcr = PathConstrainedRetriever(g, embedder=HashingEmbedder())
    >>> sorted(pcr.retrieve("c", anchor="a").ids)
    ['a', 'b', 'c']
    """

    def __init__(
        self,
        index: GraphIndex | KnowledgeGraph | GraphBackend[Any, Any],
        *,
        embedder: Any = None,
        config: PCRConfig | None = None,
    ) -> None:
        if isinstance(index, (GraphIndex, KnowledgeGraph)):
            self.backend: GraphBackend[Any, Any] = InMemoryBackend(index, embedder=embedder)
        elif isinstance(index, GraphBackend):
            self.backend = index
        else:
            raise ConfigError(
                "PCR needs a GraphIndex, a KnowledgeGraph or a kgpath.backends.GraphBackend, "
                f"got {type(index).__name__!r}"
            )
        self.config = config or PCRConfig()
        self._check_mode(self.config)

    @property
    def index(self) -> GraphIndex:
        """The :class:`GraphIndex` of the in-memory backend."""
        if not isinstance(self.backend, InMemoryBackend):
            raise AttributeError(f"the {self.backend.name} backend has no in-memory GraphIndex")
        return self.backend.index

    @property
    def graph(self) -> KnowledgeGraph:
        """The underlying graph (in-memory backend)."""
        return self.index.graph

    def _config(self, overrides: dict[str, Any]) -> PCRConfig:
        # None means "not given", except max_depth where None explicitly means unlimited
        cfg = with_overrides(self.config, overrides, label="PCR", none_is_value={"max_depth"})
        self._check_mode(cfg)
        return cfg

    def _check_mode(self, cfg: PCRConfig) -> None:
        if cfg.mode not in self.backend.modes:
            raise ConfigError(
                f"{type(self).__name__} on the {self.backend.name} backend supports mode in "
                f"{self.backend.modes} only, got mode={cfg.mode!r}: BM25 and hybrid scores "
                "need corpus-wide term statistics; use the in-memory PathConstrainedRetriever"
            )

    # ------------------------------------------------------------------ anchor
    def resolve_anchor(
        self,
        query_vec: np.ndarray,
        *,
        anchor: str | None,
        anchor_name: str | None,
        config: PCRConfig,
        backend: GraphBackend[Any, Any] | None = None,
    ) -> tuple[Any, str]:
        """Return ``(anchor key, how it was resolved)`` (in memory the key is the node index).

        By id, by name (ties between equal names broken by similarity to the query, then
        node order), or, when neither is given, the node most similar to the query.
        """
        b = backend or self.backend
        if anchor is not None:
            key = b.node_by_id(anchor)
            if key is not None:
                return key, "id"
            if config.unknown_anchor == "error":
                raise NodeNotFoundError(f"unknown anchor id {anchor!r}", key=anchor)
            return b.most_similar(query_vec), f"similarity (unknown id {anchor!r})"
        if anchor_name is not None:
            matches = b.nodes_by_name(anchor_name)
            if len(matches) == 1:
                return matches[0], "name"
            if len(matches):
                sc = b.score("", query_vec, matches, mode="vector", alpha=1.0)
                best = matches[int(np.argmax(sc))]
                return best, f"name ({len(matches)} matches, most similar chosen)"
            if config.unknown_anchor == "error":
                raise NodeNotFoundError(f"no node named {anchor_name!r}", key=anchor_name)
            return b.most_similar(query_vec), f"similarity (unknown name {anchor_name!r})"
        return b.most_similar(query_vec), "similarity"

    # ------------------------------------------------------------------ retrieval
    def retrieve(
        self,
        query: str,
        *,
        anchor: str | None = None,
        anchor_name: str | None = None,
        **overrides: Any,
    ) -> PCRResult:
        """Run PCR for ``query`` from an anchor (id, name, or most similar node).

        ``overrides`` are :class:`PCRConfig` fields for this call only (e.g. ``k=5``).
        """
        q = check_query(query)
        cfg = self._config(overrides)
        qv = self.backend.embed_query(q)
        return self._retrieve(q, qv, anchor, anchor_name, cfg)

    def retrieve_by_vector(
        self,
        query_vec: np.ndarray | Sequence[float],
        *,
        query: str = "",
        anchor: str | None = None,
        anchor_name: str | None = None,
        **overrides: Any,
    ) -> PCRResult:
        """PCR with a precomputed query embedding (``query`` text is needed for hybrid/BM25).

        Useful when the query was embedded elsewhere, and for benchmarks that measure the
        retrieval itself without the embedding model.
        """
        cfg = self._config(overrides)
        if cfg.mode != "vector":
            query = check_query(query)
        qv = self.backend.check_query_vector(query_vec)
        return self._retrieve(query, qv, anchor, anchor_name, cfg)

    async def aretrieve(
        self,
        query: str,
        *,
        anchor: str | None = None,
        anchor_name: str | None = None,
        **overrides: Any,
    ) -> PCRResult:
        """Async :meth:`retrieve`.

        The query embedding is awaited on the embedder's async API; a blocking backend (a
        database) runs in a worker thread.
        """
        q = check_query(query)
        cfg = self._config(overrides)
        qv = await self.backend.aembed_query(q)
        if self.backend.blocking:
            return await asyncio.to_thread(self._retrieve, q, qv, anchor, anchor_name, cfg)
        return self._retrieve(q, qv, anchor, anchor_name, cfg)

    def _retrieve(
        self,
        query: str,
        qv: np.ndarray,
        anchor: str | None,
        anchor_name: str | None,
        cfg: PCRConfig,
    ) -> PCRResult:
        """Section 3.3: anchor, Eq. (1) reachable set, Eq. (2) search, hits with paths."""
        b = self.backend.bind()
        a, how = self.resolve_anchor(
            qv, anchor=anchor, anchor_name=anchor_name, config=cfg, backend=b
        )
        tree = b.reachable(a, max_depth=cfg.max_depth, direction=cfg.direction)
        fallback = len(tree.nodes) <= 1 and cfg.fallback == "global"
        anchor_node = b.node(a)
        if fallback:
            logger.warning(
                "PCR: nothing reachable from anchor %r; global fallback search (section 3.5)",
                anchor_node.id,
            )
            picked, scored = _global_fallback(b, tree, a, query, qv, cfg)
        else:
            picked, scored = _search_reachable(b, tree, query, qv, cfg)
        logger.debug("PCR anchor=%r (%s) reachable=%d scored=%d", anchor_node.id, how,
                     len(tree.nodes), scored)
        hits = [_hit(b, tree, key, pos, score) for key, pos, score in picked]
        graph = b.evidence_graph(tree, anchor_node, hits)
        return PCRResult(
            query=query,
            anchor=anchor_node,
            anchor_resolution=how,
            hits=tuple(hits),
            reachable_count=len(tree.nodes),
            fallback_used=bool(fallback),
            config=cfg,
            graph=graph,
            trace={
                "anchor_id": anchor_node.id,
                "anchor_resolution": how,
                "reachable_count": len(tree.nodes),
                "max_reached_depth": int(tree.dist.max()) if tree.dist.size else 0,
                "candidates_scored": scored,
                "mode": cfg.mode,
                "direction": cfg.direction,
                "max_depth": cfg.max_depth,
                "fallback": "global" if fallback else None,
                **b.call_trace(),
            },
        )


def _search_reachable(
    b: GraphBackend[Any, Any], tree: BFSTree[Any], query: str, qv: np.ndarray, cfg: PCRConfig
) -> tuple[list[tuple[Any, int, float]], int]:
    """Eq. (2) over ``C_reachable``: ``([(key, tree position, score)], number scored)``.

    Candidates are in BFS order (the anchor first, when included), so ties go to the node
    reached first.
    """
    offset = 0 if cfg.include_anchor else 1
    cand = tree.nodes[1:] if offset else tree.nodes
    if not len(cand):
        return [], 0
    scores = b.score(query, qv, cand, mode=cfg.mode, alpha=cfg.alpha)
    pos = top_k(scores, min(cfg.k, len(cand)))
    return [(cand[p], int(p) + offset, float(scores[p])) for p in pos], len(cand)


def _global_fallback(
    b: GraphBackend[Any, Any], tree: BFSTree[Any], anchor: Any, query: str, qv: np.ndarray,
    cfg: PCRConfig,
) -> tuple[list[tuple[Any, int, float]], int]:
    """Section 3.5: top-k of all nodes (recorded in the result as a fallback)."""
    keys, scores, scored = b.global_top(
        query, qv, cfg.k, mode=cfg.mode, alpha=cfg.alpha,
        exclude=None if cfg.include_anchor else anchor,
    )
    return [(key, tree.position_of(key), float(s)) for key, s in zip(keys, scores)], scored


def _hit(b: GraphBackend[Any, Any], tree: BFSTree[Any], key: Any, pos: int, score: float) -> PCRHit:
    """A hit with its shortest path (BFS parent pointers back to the anchor)."""
    if pos < 0:
        return PCRHit(node=b.node(key), score=score, hops=None, path=())
    ids, edges = b.path(tree, pos)
    return PCRHit(node=b.node(key), score=score, hops=int(tree.dist[pos]), path=ids,
                  edges=edges)


class CypherPCR(PathConstrainedRetriever):
    """Path-Constrained Retrieval inside a Cypher database.

    PCR over a :class:`~kgpath.backends.cypher.CypherBackend`: same configuration, pipeline
    and result types as :class:`PathConstrainedRetriever`. On a database written by
    :func:`~kgpath.backends.cypher.load_graph` from graph ``G`` the result equals the
    in-memory result on ``G`` (same hits, scores, hops, paths and evidence; see
    :mod:`kgpath.backends.cypher.queries` for the tie rule). The trace adds
    ``backend``, ``queries`` (round trips) and ``seconds``.

    Parameters
    ----------
    driver
        Anything :func:`~kgpath.backends.cypher.as_cypher_driver` accepts.
    embedder
        Embeds queries, and nodes that have no stored embedding (cached by id).
    schema
        Where fields live (:class:`~kgpath.backends.cypher.CypherSchema`).
    config
        :class:`PCRConfig`. ``mode`` must be ``"vector"``: BM25 and hybrid scores need
        corpus-wide statistics the database does not keep.
    page_size, max_cached_embeddings
        See :class:`~kgpath.backends.cypher.CypherBackend`.

    Examples
    --------
    >>> from kgpath import KnowledgeGraph, HashingEmbedder
    >>> from kgpath.stores import EmbeddedCypherDriver, load_graph
    >>> g = KnowledgeGraph.from_triples([("a", "to", "b"), ("b", "to", "c"), ("x", "to", "y")])
    >>> import tempfile, os
    >>> drv = EmbeddedCypherDriver.open(os.path.join(tempfile.mkdtemp(), "db"))
    >>> schema = load_graph(drv, g)
    >>> pcr = CypherPCR(drv, embedder=HashingEmbedder(), schema=schema)
    >>> sorted(pcr.retrieve("c", anchor="a").ids)
    ['a', 'b', 'c']
    >>> drv.close()
    """

    backend: CypherBackend

    def __init__(
        self,
        driver: Any,
        *,
        embedder: Embedder | None = None,
        schema: CypherSchema | None = None,
        config: PCRConfig | None = None,
        page_size: int = 20_000,
        max_cached_embeddings: int = 200_000,
    ) -> None:
        backend = CypherBackend(
            driver, embedder=embedder, schema=schema, page_size=page_size,
            max_cached_embeddings=max_cached_embeddings,
        )
        super().__init__(backend, config=config)

    @property
    def driver(self) -> CypherDriver:
        """The database driver."""
        return self.backend.driver

    @property
    def schema(self) -> CypherSchema:
        """Where fields live in the database."""
        return self.backend.schema

    @property
    def embedder(self) -> Embedder:
        """The query (and fallback node) embedder."""
        return self.backend.embedder

    def __repr__(self) -> str:
        return (
            f"CypherPCR(driver={self.driver!r}, node_label={self.schema.node_label!r}, "
            f"k={self.config.k}, max_depth={self.config.max_depth})"
        )


def format_path(graph: KnowledgeGraph, path: Sequence[str], edges: Sequence[Edge]) -> str:
    """Render a node path with its edge labels, showing direction for reversed edges."""
    if not path:
        return ""
    out = graph.node(path[0]).name
    for prev, nxt, e in zip(path, path[1:], edges):
        label = e.relation or ""
        if e.source == prev and e.target == nxt:
            out += f" -[{label}]-> " if label else " -> "
        else:
            out += f" <-[{label}]- " if label else " <- "
        out += graph.node(nxt).name
    return out
