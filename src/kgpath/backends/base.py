"""The graph backend protocol: what Path-Constrained Retrieval needs from a graph.

PCR (:mod:`kgpath.methods.pcr`) is written once against :class:`GraphBackend`; a backend
says where the graph lives. Two ship:

* :class:`~kgpath.backends.memory.InMemoryBackend` - the CSR arrays of a
  :class:`~kgpath.graph.KnowledgeGraph` (node keys are ``int`` node indices);
* :class:`~kgpath.backends.cypher.CypherBackend` - a Cypher database (node keys are
  :class:`~kgpath.backends.cypher.NodeRow` objects, compared by node id).

A backend answers two kinds of questions. **Structure**: resolve an anchor by id or name,
the nodes reachable within ``d_max`` hops with their hop distance and BFS parent (Eq. 1 of
the PCR paper), the node records and the edges along a parent path. **Similarity**: embed the
query, score candidate nodes (Eq. 2's ``sim(q, v)``), and a global top-k for the paper's
section 3.5 fallback. Both halves live on one object because the vectors live where the
nodes live (a GraphIndex in memory, an ``embedding`` property in a database).

The BFS-tree contract (:class:`BFSTree`) is the one :meth:`KnowledgeGraph.bfs` defines: the
anchor first at distance 0, then level by level; ``parent_pos[i]`` is the position of node
``i``'s parent (``-1`` for the anchor). Ties inside a level follow the in-memory rule (see
:mod:`kgpath.backends.cypher.queries`), so every backend returns the same tree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, Self, TypeAlias, TypeVar, runtime_checkable

import numpy as np

from kgpath.graph import Direction, Edge, KnowledgeGraph, Node

__all__ = ["BFSTree", "GraphBackend", "Keys", "PathRecord", "parent_chain"]

K = TypeVar("K")
T = TypeVar("T")

#: A collection of node keys: a sequence, or a numpy array of node indices in memory.
Keys: TypeAlias = Sequence[K] | np.ndarray


@runtime_checkable
class BFSTree(Protocol[K]):
    """Reachable nodes in BFS order with hop distances and parent pointers.

    :class:`~kgpath.graph.BFSResult` is one (its ``nodes`` are node indices).
    """

    @property
    def nodes(self) -> Sequence[K]:
        """Node keys in BFS order, the anchor first."""
        ...

    @property
    def dist(self) -> np.ndarray:
        """Hop distance of each node (``int``)."""
        ...

    @property
    def parent_pos(self) -> np.ndarray:
        """Position of each node's BFS parent (``-1`` for the anchor)."""
        ...

    def position_of(self, node: K) -> int:
        """Position of ``node`` in :attr:`nodes` (``-1`` if not reached)."""
        ...


class PathRecord(Protocol):
    """A retrieved node with the edges of its path (e.g. a :class:`~kgpath.methods.pcr.PCRHit`)."""

    @property
    def node(self) -> Node:
        """The node record."""
        ...

    @property
    def edges(self) -> tuple[Edge, ...]:
        """Edges along its path from the anchor."""
        ...


@runtime_checkable
class GraphBackend(Protocol[K, T]):
    """Where PCR's graph lives: ``K`` is its node key type, ``T`` its :class:`BFSTree` type.

    Implementations must be safe to call from several threads at once (``aretrieve`` runs
    blocking backends in worker threads); per-retrieval state belongs in :meth:`bind`.
    """

    @property
    def name(self) -> str:
        """Short name recorded in traces, e.g. ``"memory"`` or ``"cypher/kuzu"``."""
        ...

    @property
    def modes(self) -> tuple[str, ...]:
        """Scoring modes :meth:`score` supports (``"vector"``, ``"hybrid"``, ``"bm25"``)."""
        ...

    @property
    def blocking(self) -> bool:
        """True when calls block on I/O (``aretrieve`` then runs them in a thread)."""
        ...

    # -- per retrieval
    def bind(self) -> Self:
        """A view for one retrieval (e.g. counting its queries); may return ``self``."""
        ...

    def call_trace(self) -> dict[str, Any]:
        """Extra trace entries of the bound retrieval (``{}`` when there is nothing)."""
        ...

    # -- structure
    def node_count(self) -> int:
        """Number of nodes in the graph."""
        ...

    def node_by_id(self, node_id: str) -> K | None:
        """The node with this id, or ``None``."""
        ...

    def nodes_by_name(self, name: str) -> Keys[K]:
        """Nodes whose normalised name equals ``name``'s, in node order.

        Names are compared lower-cased with single spaces (as
        :func:`kgpath.index.linking.find_by_name`).
        """
        ...

    def node(self, key: K) -> Node:
        """The node record of ``key``."""
        ...

    def reachable(
        self, anchor: K, *, max_depth: int | None, direction: Direction
    ) -> T:
        """Eq. (1): the BFS tree of nodes reachable from ``anchor`` in ``<= max_depth`` hops."""
        ...

    def path(self, tree: T, pos: int) -> tuple[tuple[str, ...], tuple[Edge, ...]]:
        """Node ids and edges along the tree path anchor -> ``tree.nodes[pos]``."""
        ...

    def evidence_graph(
        self, tree: T, anchor: Node, hits: Sequence[PathRecord]
    ) -> KnowledgeGraph:
        """A graph that resolves the names and cited passages of a result.

        The in-memory backend returns its graph; a database backend builds a small graph
        of the anchor, the hits and their path nodes and edges, plus the passages the hits
        cite (fetched by id).
        """
        ...

    # -- similarity
    def embed_query(self, query: str) -> np.ndarray:
        """The query embedding (same embedder as the nodes)."""
        ...

    async def aembed_query(self, query: str) -> np.ndarray:
        """Async :meth:`embed_query`."""
        ...

    def check_query_vector(self, query_vec: Any) -> np.ndarray:
        """A caller-supplied query vector as 1-D float32 (raises on a wrong dimension)."""
        ...

    def score(
        self, query: str, query_vec: np.ndarray, candidates: Keys[K], *, mode: str,
        alpha: float,
    ) -> np.ndarray:
        """Eq. (2)'s ``sim(q, v)`` (or section 3.4's hybrid) for ``candidates``, in order."""
        ...

    def most_similar(self, query_vec: np.ndarray) -> K:
        """The node most similar to the query (anchor of last resort)."""
        ...

    def global_top(
        self, query: str, query_vec: np.ndarray, k: int, *, mode: str, alpha: float,
        exclude: K | None = None,
    ) -> tuple[Keys[K], np.ndarray, int]:
        """Top-``k`` of all nodes (section 3.5 fallback).

        Returns ``(keys, scores, number scored)``, best first, ties by node order.
        """
        ...


def parent_chain(parent_pos: np.ndarray, pos: int) -> list[int]:
    """Positions along the tree path from the root to ``pos`` (root first)."""
    out = [pos]
    while parent_pos[pos] >= 0:
        pos = int(parent_pos[pos])
        out.append(pos)
    out.reverse()
    return out
