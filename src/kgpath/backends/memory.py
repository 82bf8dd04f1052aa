"""The in-memory backend: the CSR arrays of a :class:`~kgpath.graph.KnowledgeGraph`.

A thin view over a :class:`~kgpath.index.graph_index.GraphIndex`: node keys are node
indices, :meth:`InMemoryBackend.reachable` is :meth:`KnowledgeGraph.bfs` itself (its
:class:`~kgpath.graph.BFSResult` is the BFS tree), and scoring is
:meth:`GraphIndex.score_candidates`. Nothing is copied or converted, so a method over this
backend costs what it cost before the backend protocol existed.

Capabilities: :class:`~kgpath.backends.base.VectorSearch`,
:class:`~kgpath.backends.base.PassageSearch`, :class:`~kgpath.backends.base.InProcessGraph`
and :class:`~kgpath.backends.base.NeighbourhoodPushDown` (answered from the CSR arrays).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kgpath.backends.base import (
    GraphBackend,
    InProcessGraph,
    NeighbourhoodPushDown,
    PassageSearch,
    PathRecord,
    VectorSearch,
)
from kgpath.errors import EmbeddingError
from kgpath.graph import BFSResult, Direction, Edge, KnowledgeGraph, Node
from kgpath.index.graph_index import GraphIndex
from kgpath.index.linking import GraphNames, NameLookup, find_by_name

if TYPE_CHECKING:
    from kgpath.embeddings import Embedder
    from kgpath.index.passage_vectors import PassageVectors

__all__ = ["InMemoryBackend"]


class InMemoryBackend(
    GraphBackend[int, BFSResult], VectorSearch[int], PassageSearch[int], InProcessGraph,
    NeighbourhoodPushDown,
):
    """:class:`~kgpath.backends.base.GraphBackend` over a :class:`GraphIndex` (keys: ``int``).

    Parameters
    ----------
    index
        A :class:`GraphIndex`, or a :class:`KnowledgeGraph` (wrapped with ``embedder``).
    embedder
        Used only when ``index`` is a bare graph.
    """

    name: str = "memory"
    modes: tuple[str, ...] = ("vector", "hybrid", "bm25")
    blocking: bool = False

    def __init__(self, index: GraphIndex | KnowledgeGraph, *, embedder: Any = None) -> None:
        self._index = index if isinstance(index, GraphIndex) else GraphIndex(index, embedder)

    @property
    def index(self) -> GraphIndex:
        """The :class:`GraphIndex` (vectors, BM25, passage vectors)."""
        return self._index

    @property
    def graph(self) -> KnowledgeGraph:
        """The underlying graph."""
        return self._index.graph

    @property
    def embedder(self) -> Embedder:
        """The index's embedder."""
        return self._index.embedder  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"InMemoryBackend({self.graph!r})"

    # -- structure
    def node_count(self) -> int:
        """Number of nodes."""
        return len(self.index.graph)

    def node_by_id(self, node_id: str) -> int | None:
        """Node index of ``node_id``, or ``None``."""
        g = self.index.graph
        return g.index_of(node_id) if node_id in g else None

    def nodes_by_name(self, name: str) -> np.ndarray:
        """Node indices with this (normalised) name, in node order."""
        return np.asarray(find_by_name(self.index.graph, name), dtype=np.int64)

    def node(self, key: int) -> Node:
        """Node record at index ``key``."""
        return self.index.graph.node_at(int(key))

    def neighbours(self, key: int, *, direction: Direction) -> list[tuple[int, Edge]]:
        """``(neighbour index, edge)`` from the CSR slices, in CSR order."""
        g = self.index.graph
        csr = g.csr()
        out = []
        for d in ("out", "in") if direction == "both" else (direction,):
            lo, hi = csr[f"{d}_indptr"][int(key): int(key) + 2].tolist()
            out += [(v, g.edge_at(e)) for v, e in zip(csr[f"{d}_indices"][lo:hi].tolist(),
                                                        csr[f"{d}_edges"][lo:hi].tolist())]
        return out

    def names(self) -> NameLookup:
        """The linker's key index over every node name (built once per graph version)."""
        return GraphNames(self.index.graph)

    def reachable(
        self, anchor: int, *, max_depth: int | None, direction: Direction
    ) -> BFSResult:
        """Eq. (1): :meth:`KnowledgeGraph.bfs` on the CSR arrays."""
        return self.index.graph.bfs(int(anchor), max_depth=max_depth, direction=direction)

    def path(self, tree: BFSResult, pos: int) -> tuple[tuple[str, ...], tuple[Edge, ...]]:
        """Node ids and edges along the BFS parent pointers to ``tree.nodes[pos]``."""
        g = self.index.graph
        steps = tree.path_positions(pos)
        return (
            tuple(g.node_at(int(tree.nodes[i])).id for i in steps),
            tuple(g.edge_at(int(tree.parent_edge[i])) for i in steps[1:]),
        )

    def evidence_graph(
        self, tree: BFSResult, anchor: Node, hits: Sequence[PathRecord]
    ) -> KnowledgeGraph:
        """The graph itself (it holds every name and passage)."""
        return self.index.graph

    # -- similarity
    def embed_query(self, query: str) -> np.ndarray:
        """:meth:`GraphIndex.embed_query`."""
        return self.index.embed_query(query)

    async def aembed_query(self, query: str) -> np.ndarray:
        """:meth:`GraphIndex.aembed_query`."""
        return await self.index.aembed_query(query)

    def check_query_vector(self, query_vec: Any) -> np.ndarray:
        """1-D float32 of the index's dimension."""
        qv = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        dim = self.index.vector_index.dim
        if qv.shape[0] != dim:
            raise EmbeddingError(f"query vector has dimension {qv.shape[0]}, index has {dim}")
        return qv

    def score(
        self, query: str, query_vec: np.ndarray, candidates: Sequence[int] | np.ndarray, *,
        mode: str, alpha: float,
    ) -> np.ndarray:
        """:meth:`GraphIndex.score_candidates` (vector, BM25 or hybrid)."""
        return self.index.score_candidates(
            query, query_vec, candidates, mode=mode, alpha=alpha  # type: ignore[arg-type]
        )

    def most_similar(self, query_vec: np.ndarray) -> int:
        """Top-1 of the vector index."""
        idx, _ = self.index.vector_index.search(query_vec, 1)
        return int(idx[0])

    def global_top(
        self, query: str, query_vec: np.ndarray, k: int, *, mode: str, alpha: float,
        exclude: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """Top-``k`` of every node (ties by node index)."""
        from kgpath.search.vector import top_k

        cand = np.arange(len(self.index.graph), dtype=np.int32)
        if exclude is not None:
            cand = cand[cand != exclude]
        if cand.size == 0:
            return cand, np.zeros(0, np.float32), 0
        scores = self.score(query, query_vec, cand, mode=mode, alpha=alpha)
        pos = top_k(scores, min(k, cand.size))
        return cand[pos], scores[pos], int(cand.size)

    # -- passages
    def passage_vectors(self) -> PassageVectors | None:
        """:meth:`GraphIndex.passage_vectors` (``None`` when the graph has no passages)."""
        return self.index.passage_vectors() if self.index.graph.passages else None

    async def apassage_vectors(self) -> PassageVectors | None:
        """:meth:`GraphIndex.apassage_vectors` (``None`` when the graph has no passages)."""
        return await self.index.apassage_vectors() if self.index.graph.passages else None

    def nodes_citing(self, passage_id: str, vectors: PassageVectors) -> list[int]:
        """Node indices citing ``passage_id``, in node order (one map per vectors version)."""
        got = vectors.derived.get("cited_by")
        if got is None:
            got = {}
            for i, n in enumerate(self.index.graph.nodes):
                for p in dict.fromkeys(n.provenance):
                    got.setdefault(p, []).append(i)
            vectors.derived["cited_by"] = got
        return got.get(passage_id, [])  # type: ignore[no-any-return]

    # -- neighbourhood push-down (answered from the CSR arrays)
    def adjacent_pairs(
        self, ids: Sequence[str], *, batch_size: int = 0
    ) -> list[tuple[str, str, bool]]:
        """``(node, neighbour, forward)``, once per distinct pair and direction."""
        g = self.index.graph
        out: dict[tuple[str, str, bool], None] = {}
        sides: tuple[tuple[bool, Direction], ...] = ((True, "out"), (False, "in"))
        for nid in ids:
            if nid not in g:  # as a database: an unknown id has no edges
                continue
            i = g.index_of(nid)
            for fwd, d in sides:
                for v in g.neighbors(i, direction=d).tolist():
                    out[(nid, g.node_at(v).id, fwd)] = None
        return list(out)

    def order_and_degree(
        self, ids: Sequence[str], *, directed: bool, batch_size: int = 0
    ) -> dict[str, tuple[Hashable, int]]:
        """``{id: (node index, distinct neighbours)}`` of the ids in the graph."""
        g = self.index.graph
        out: dict[str, tuple[Hashable, int]] = {}
        for nid in ids:
            if nid not in g:
                continue
            i = g.index_of(nid)
            nb = g.neighbors(i, direction="out" if directed else "both")
            out[nid] = (i, int(np.unique(nb).size))
        return out
