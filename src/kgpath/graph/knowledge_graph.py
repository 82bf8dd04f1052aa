"""KnowledgeGraph: nodes, directed edges, passages, node vectors, and its CSR adjacency.

The Python objects (:class:`~kgpath.graph.model.Node`, :class:`~kgpath.graph.model.Edge`,
:class:`~kgpath.graph.model.Passage`) are the user-facing record; traversal never touches
them. Every traversal works on the int32 CSR arrays of :mod:`kgpath.graph.csr`, built once
(and rebuilt lazily after a mutation).

Duplicate edges: adding an edge with the same ``(source, target, relation)`` as an existing
one merges it into the existing edge (weight becomes the maximum, provenance the union). The
PathRAG-6 data contains such duplicates; counting them twice would bias out-degrees.

Building from triples and arrays lives in :mod:`kgpath.graph.builders` (its
:class:`~kgpath.graph.builders.GraphBuilders` mixin gives the ``from_*`` classmethods),
networkx and PathRAG-6 conversion in :mod:`kgpath.graph.convert` (module functions), the
stored node vectors in :mod:`kgpath.graph.vectors` (:attr:`KnowledgeGraph.vectors`), saving
and loading in :mod:`kgpath.graph.persistence` (:meth:`KnowledgeGraph.save`/``load`` delegate).
Building from documents is the construction package's
(:func:`kgpath.ingest.graph_from_documents`) and the index's
(:meth:`kgpath.index.GraphIndex.from_documents`); looking nodes up by name is the index's
(:func:`kgpath.index.linking.find_by_name`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from kgpath.errors import EmptyGraphError, GraphError, NodeNotFoundError
from kgpath.graph.builders import GraphBuilders
from kgpath.graph.columns import EdgeColumns, NodeColumns
from kgpath.graph.csr import (
    BFSResult,
    bfs,
    bfs_scratch,
    build_csr,
    check_direction,
    check_max_depth,
    neighbors,
)
from kgpath.graph.model import (
    Direction,
    Edge,
    Node,
    Passage,
    as_provenance,
    check_id,
    check_text,
    short,
)
from kgpath.graph.vectors import NodeVectors

__all__ = ["KnowledgeGraph"]

logger = logging.getLogger(__name__)


class KnowledgeGraph(GraphBuilders):
    """Directed multi-relational graph with passages and optional node vectors.

    Examples
    --------
    >>> g = KnowledgeGraph()
    >>> g.add_node("a", name="Alpha")
    0
    >>> g.add_node("b", name="Beta")
    1
    >>> g.add_edge("a", "b", relation="precedes")
    0
    >>> g.bfs("a").nodes.tolist()
    [0, 1]
    """

    def __init__(self) -> None:
        # lists and dicts, or read-only column views in the compact mode (graph/columns.py)
        self._nodes: list[Node] | NodeColumns = []
        self._edges: list[Edge] | EdgeColumns = []
        self._passages: dict[str, Passage] = {}
        self._node_index: Mapping[str, int] = {}
        self._edge_key: dict[tuple[str, str, str], int] = {}
        # node vectors: the storage behind the NodeVectors view (graph/vectors.py)
        self._emb: np.ndarray | None = None
        self._emb_mask: np.ndarray | None = None
        self._emb_owner: dict[str, Any] | None = None
        self._csr: dict[str, np.ndarray] | None = None
        self._version = 0
        self._tls = threading.local()

    # ------------------------------------------------------------------ building
    def add_node(
        self,
        id: str,  # noqa: A002 - "id" is the natural field name
        name: str | None = None,
        text: str = "",
        *,
        type: str | None = None,  # noqa: A002
        metadata: Mapping[str, Any] | None = None,
        provenance: Iterable[str] = (),
        embedding: Sequence[float] | np.ndarray | None = None,
    ) -> int:
        """Add a node (or update the one with this id) and return its index.

        Updating a node whose :attr:`Node.search_text` changes drops its stored vector
        (it described the old text); the next index build embeds the new text.
        ``embedding`` stores this node's vector (:meth:`NodeVectors.set
        <kgpath.graph.vectors.NodeVectors.set>`).
        A single string ``provenance`` is one passage id.
        """
        check_id(id, "node id")
        self._thaw()
        node = Node(
            id=id,
            name=check_text(name, f"name of node {id!r}") if name is not None else id,
            text=check_text(text, f"text of node {id!r}") if text else "",
            type=type,
            metadata=dict(metadata or {}),
            provenance=as_provenance(provenance, f"node {id!r}"),
        )
        assert isinstance(self._nodes, list) and isinstance(self._node_index, dict)
        idx = self._node_index.get(id)
        if idx is None:
            idx = len(self._nodes)
            self._nodes.append(node)
            self._node_index[id] = idx
            self._csr = None
        else:
            old, self._nodes[idx] = self._nodes[idx], node
            if old.search_text != node.search_text:
                NodeVectors(self)._forget(idx)
        self._version += 1
        if embedding is not None:
            NodeVectors(self).set({id: embedding})
        return idx

    def add_edge(
        self,
        source: str,
        target: str,
        relation: str = "",
        text: str = "",
        *,
        type: str | None = None,  # noqa: A002
        weight: float = 1.0,
        provenance: Iterable[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> int:
        """Add a directed edge and return its index (merging exact duplicates)."""
        for end in (source, target):
            if not isinstance(end, str) or end not in self._node_index:
                raise NodeNotFoundError(
                    f"edge {source!r} -> {target!r} names unknown node {end!r}", key=end
                )
        try:
            w = float(weight)
        except (TypeError, ValueError):
            w = float("nan")
        if isinstance(weight, bool) or not np.isfinite(w) or w < 0:
            raise GraphError(
                f"edge {source!r} -> {target!r} has invalid weight {short(weight)}; "
                "pass a finite number >= 0"
            )
        check_text(relation, f"relation of edge {source!r} -> {target!r}")
        check_text(text, f"text of edge {source!r} -> {target!r}")
        self._thaw()
        assert isinstance(self._edges, list)
        key = (source, target, relation)
        prov = as_provenance(provenance, f"edge {source!r} -> {target!r}")
        if key in self._edge_key:
            i = self._edge_key[key]
            old = self._edges[i]
            merged = tuple(dict.fromkeys(old.provenance + prov))
            self._edges[i] = Edge(
                source, target, relation, old.text or text, old.type or type,
                max(old.weight, w), merged, {**dict(old.metadata), **dict(metadata or {})},
            )
            return i
        self._edges.append(
            Edge(source, target, relation, text, type, w, prov, dict(metadata or {}))
        )
        self._edge_key[key] = len(self._edges) - 1
        self._csr = None
        self._version += 1
        return len(self._edges) - 1

    def add_passage(
        self, id: str, text: str, metadata: Mapping[str, Any] | None = None  # noqa: A002
    ) -> None:
        """Add (or replace) a source passage."""
        check_id(id, "passage id")
        check_text(text, f"text of passage {id!r}")
        self._passages[id] = Passage(id, text, dict(metadata or {}))
        self._version += 1

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, node_id: object) -> bool:
        return isinstance(node_id, str) and node_id in self._node_index

    def __iter__(self) -> Iterator[Node]:
        return iter(self._nodes)

    def __repr__(self) -> str:
        return (
            f"KnowledgeGraph(nodes={len(self._nodes)}, edges={len(self._edges)}, "
            f"passages={len(self._passages)})"
        )

    @property
    def nodes(self) -> Sequence[Node]:
        """All nodes in index order (a read-only view in the compact mode)."""
        return self._nodes if isinstance(self._nodes, NodeColumns) else tuple(self._nodes)

    @property
    def edges(self) -> Sequence[Edge]:
        """All edges in index order (a read-only view in the compact mode)."""
        return self._edges if isinstance(self._edges, EdgeColumns) else tuple(self._edges)

    @property
    def compact(self) -> bool:
        """True while nodes and edges live in arrays (``from_arrays(..., compact=True)``).

        See :mod:`kgpath.graph.columns`; the first ``add_node``/``add_edge`` converts the
        graph to Python objects (same content, the object mode's memory).
        """
        return isinstance(self._nodes, NodeColumns)

    def _thaw(self) -> None:
        """Convert a compact graph to the object mode before a mutation."""
        if not isinstance(self._nodes, NodeColumns):
            return
        logger.info("converting compact %r to Python objects for a mutation", self)
        self._nodes = list(self._nodes)
        self._edges = list(self._edges)
        self._node_index = {n.id: i for i, n in enumerate(self._nodes)}
        self._edge_key = {(e.source, e.target, e.relation): i for i, e in enumerate(self._edges)}

    @property
    def passages(self) -> Mapping[str, Passage]:
        """Passages by id."""
        return dict(self._passages)

    @property
    def num_nodes(self) -> int:
        """Number of nodes."""
        return len(self._nodes)

    @property
    def num_edges(self) -> int:
        """Number of (merged) edges."""
        return len(self._edges)

    @property
    def version(self) -> int:
        """Increases on every mutation; indexes use it to detect staleness."""
        return self._version

    def node(self, node_id: str) -> Node:
        """Return the node with this id or raise :class:`NodeNotFoundError`."""
        return self._nodes[self.index_of(node_id)]

    def node_at(self, index: int) -> Node:
        """Return the node at an integer index."""
        return self._nodes[index]

    def edge_at(self, index: int) -> Edge:
        """Return the edge at an integer index."""
        return self._edges[index]

    def passage(self, passage_id: str) -> Passage:
        """Return a passage by id or raise :class:`NodeNotFoundError`."""
        try:
            return self._passages[passage_id]
        except KeyError:
            raise NodeNotFoundError(f"unknown passage id {passage_id!r}", key=passage_id) from None

    def index_of(self, node_id: str) -> int:
        """Integer index of a node id."""
        try:
            return self._node_index[node_id]
        except (KeyError, TypeError):
            raise NodeNotFoundError(
                f"unknown node id {short(node_id)}", key=short(node_id)
            ) from None

    def edges_between(self, source: str, target: str) -> list[Edge]:
        """All edges ``source -> target`` (any relation)."""
        s, t = self.index_of(source), self.index_of(target)
        csr = self.csr()
        lo, hi = csr["out_indptr"][s], csr["out_indptr"][s + 1]
        sel = csr["out_indices"][lo:hi] == t
        return [self._edges[int(e)] for e in csr["out_edges"][lo:hi][sel]]

    # ------------------------------------------------------------------ CSR
    def csr(self) -> dict[str, np.ndarray]:
        """CSR arrays (built lazily): ``{out,in}_{indptr,indices,edges}``, int32/int64.

        See :func:`kgpath.graph.csr.build_csr`.
        """
        if self._csr is None and isinstance(self._edges, EdgeColumns):
            self._csr = self._edges.csr(len(self._nodes))
        if self._csr is None:
            self._csr = build_csr(self._edges, self._node_index, len(self._nodes))
            logger.debug("built CSR adjacency: %d nodes, %d edges", len(self._nodes),
                         len(self._edges))
        return self._csr

    def degree(self, direction: Direction = "out") -> np.ndarray:
        """Degree of every node (after duplicate merging), in index order.

        ``"out"`` counts outgoing edges, ``"in"`` incoming ones, ``"both"`` their sum (as
        many as :meth:`neighbors` returns with ``direction="both"``).
        """
        check_direction(direction)
        csr = self.csr()
        if direction == "both":
            return np.diff(csr["out_indptr"]) + np.diff(csr["in_indptr"])
        return np.diff(csr[f"{direction}_indptr"])

    def neighbors(self, index: int, direction: Direction = "out") -> np.ndarray:
        """Neighbour indices of one node (may repeat for parallel edges)."""
        check_direction(direction)
        return neighbors(self.csr(), index, direction)

    # ------------------------------------------------------------------ traversal
    def bfs(
        self,
        source: str | int,
        *,
        max_depth: int | None = None,
        direction: Direction = "out",
    ) -> BFSResult:
        """Breadth-first search on the CSR arrays, one numpy pass per level.

        Parameters
        ----------
        source
            Node id (str) or index (int).
        max_depth
            Stop after this many hops (``None`` = unlimited, ``0`` = source only).
        direction
            ``"out"`` follows edges forward (the PCR paper), ``"in"`` backward,
            ``"both"`` ignores direction.

        Notes
        -----
        Each level gathers the CSR slices of the whole frontier with one vectorised
        ``repeat``/``arange`` and keeps first occurrences, so the cost is
        O(reached nodes + their edges) with no per-edge Python work
        (:func:`kgpath.graph.csr.bfs`). Scratch arrays are reused per thread.
        """
        if not self._nodes:
            raise EmptyGraphError("the graph has no nodes")
        check_direction(direction)
        check_max_depth(max_depth)
        s = self.index_of(source) if isinstance(source, str) else int(source)
        if not 0 <= s < len(self._nodes):
            raise NodeNotFoundError(f"node index {source!r} out of range", key=str(source))
        csr = self.csr()
        position, owner = bfs_scratch(self._tls, len(self._nodes))
        return bfs(
            csr, s, max_depth=max_depth, direction=direction, position=position, owner=owner
        )

    # ------------------------------------------------------------------ vectors
    @property
    def vectors(self) -> NodeVectors:
        """The stored node vectors: ``.dim``, ``.owner``, ``.matrix``, ``.missing()``, ``.set()``.

        A view over this graph's arrays (:class:`~kgpath.graph.vectors.NodeVectors`);
        :class:`~kgpath.index.GraphIndex` computes and stores them, :meth:`save` keeps them.
        """
        return NodeVectors(self)

    # ------------------------------------------------------------------ copies between processes
    def __getstate__(self) -> dict[str, Any]:
        """Pickle support for multiprocessing (not storage: use :meth:`save`).

        Everything but the per-thread BFS scratch, which each process makes anew.
        """
        state = self.__dict__.copy()
        state.pop("_tls", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._tls = threading.local()

    # ------------------------------------------------------------------ persistence
    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write the graph to ``directory`` as JSON + ``.npy``, crash-safe.

        A compact graph is written as its arrays (:mod:`kgpath.graph.column_io`).
        Refuses (:class:`PersistenceError`) a path holding anything but a saved graph; a
        complete graph, old or new, is loadable at the path at every instant; concurrent
        saves serialise. See :mod:`kgpath.graph.persistence`.
        """
        from kgpath.graph import persistence

        persistence.save(self, directory)

    @classmethod
    def load(cls, directory: str | os.PathLike[str], *,
             compact: bool | None = None) -> KnowledgeGraph:
        """Load a graph written by :meth:`save`.

        A graph saved compact loads compact (its arrays, no Python object per node or
        edge); ``compact=True``/``False`` asks for one mode (``True`` raises
        :class:`GraphError` for an object graph holding what the compact mode cannot).
        Raises :class:`PersistenceError` if the directory is missing, truncated, corrupt
        (checksum mismatch, bad JSON, bad arrays) or written by a newer format version.
        See :func:`kgpath.graph.persistence.load`.
        """
        from kgpath.graph import persistence

        return persistence.load(directory, cls=cls, compact=compact)
