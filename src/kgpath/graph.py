"""KnowledgeGraph: nodes, directed edges, passages, and a compact CSR adjacency.

The Python objects (:class:`Node`, :class:`Edge`, :class:`Passage`) are the user-facing
record; traversal never touches them. Every traversal works on int32 CSR arrays built
once (and rebuilt lazily after a mutation):

``out_indptr[i]:out_indptr[i+1]`` slices ``out_indices`` (neighbour node indices) and
``out_edges`` (edge indices) for node ``i``; the same for the ``in_`` arrays.

Duplicate edges: adding an edge with the same ``(source, target, relation)`` as an existing
one merges it into the existing edge (weight becomes the maximum, provenance the union). The
PathRAG-6 data contains such duplicates; counting them twice would bias out-degrees.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from kgpath.errors import (
    EmbeddingError,
    EmptyGraphError,
    GraphError,
    NodeNotFoundError,
    PersistenceError,
)

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "Node",
    "Edge",
    "Passage",
    "KnowledgeGraph",
    "BFSResult",
    "Direction",
    "FORMAT_VERSION",
]

logger = logging.getLogger(__name__)

Direction = Literal["out", "in", "both"]
FORMAT_VERSION = 1
_DIRECTIONS = ("out", "in", "both")


@dataclass(frozen=True)
class Node:
    """A graph node.

    ``text`` is what is embedded and searched; ``name`` is the surface form used for
    anchor lookup by name and for path rendering.
    """

    id: str
    name: str
    text: str = ""
    type: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    provenance: tuple[str, ...] = ()

    @property
    def search_text(self) -> str:
        """Text used for embedding and BM25: the name prefixed when the text lacks it."""
        if not self.text:
            return self.name
        if self.name and self.name.lower() not in self.text.lower():
            return f"{self.name}. {self.text}"
        return self.text


@dataclass(frozen=True)
class Edge:
    """A directed, typed, weighted edge ``source --relation--> target``."""

    source: str
    target: str
    relation: str = ""
    text: str = ""
    type: str | None = None
    weight: float = 1.0
    provenance: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def description(self) -> str:
        """The edge's own text, else its relation label."""
        return self.text or self.relation


@dataclass(frozen=True)
class Passage:
    """A source passage that nodes and edges cite through ``provenance``."""

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BFSResult:
    """Nodes reached by a breadth-first search, in BFS order.

    ``nodes[i]`` was reached at ``dist[i]`` hops; ``parent[i]`` is the node index it was
    first reached from (``-1`` for the source) and ``parent_edge[i]`` the edge used.
    """

    source: int
    nodes: np.ndarray
    dist: np.ndarray
    parent: np.ndarray
    parent_edge: np.ndarray
    parent_pos: np.ndarray
    """Position in :attr:`nodes` of each node's BFS parent (``-1`` for the source)."""

    def position_of(self, node: int) -> int:
        """Position of node index ``node`` in :attr:`nodes` (``-1`` if not reached)."""
        hit = np.flatnonzero(self.nodes == node)
        return int(hit[0]) if hit.size else -1

    def path_to(self, node: int) -> list[int]:
        """Node indices of the BFS shortest path from the source to ``node``."""
        pos = self.position_of(node)
        if pos < 0:
            raise NodeNotFoundError(f"node index {node} was not reached", key=str(node))
        return [int(self.nodes[i]) for i in self.path_positions(pos)]

    def path_positions(self, pos: int) -> list[int]:
        """Positions (into :attr:`nodes`) along the shortest path to ``nodes[pos]``."""
        out = [pos]
        while self.parent_pos[pos] >= 0:
            pos = int(self.parent_pos[pos])
            out.append(pos)
        out.reverse()
        return out


class KnowledgeGraph:
    """Directed multi-relational graph with passages and optional node embeddings.

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
        self._nodes: list[Node] = []
        self._edges: list[Edge] = []
        self._passages: dict[str, Passage] = {}
        self._node_index: dict[str, int] = {}
        self._edge_key: dict[tuple[str, str, str], int] = {}
        self._name_index: dict[str, list[int]] | None = None
        self._emb: np.ndarray | None = None
        self._emb_mask: np.ndarray | None = None
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
        """Add a node (or update the one with this id) and return its index."""
        if not isinstance(id, str) or not id:
            raise GraphError(f"node id must be a non-empty string, got {id!r}")
        node = Node(
            id=id,
            name=name if name is not None else id,
            text=text or "",
            type=type,
            metadata=dict(metadata or {}),
            provenance=tuple(provenance),
        )
        idx = self._node_index.get(id)
        if idx is None:
            idx = len(self._nodes)
            self._nodes.append(node)
            self._node_index[id] = idx
            self._csr = None
        else:
            self._nodes[idx] = node
        self._name_index = None
        self._version += 1
        if embedding is not None:
            self.set_embeddings({id: embedding})
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
            if end not in self._node_index:
                raise NodeNotFoundError(
                    f"edge {source!r} -> {target!r} names unknown node {end!r}", key=end
                )
        w = float(weight)
        if not np.isfinite(w) or w < 0:
            raise GraphError(f"edge {source!r} -> {target!r} has invalid weight {weight!r}")
        key = (source, target, relation)
        prov = tuple(provenance)
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
        if not isinstance(id, str) or not id:
            raise GraphError(f"passage id must be a non-empty string, got {id!r}")
        self._passages[id] = Passage(id, text, dict(metadata or {}))
        self._version += 1

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._node_index

    def __iter__(self) -> Iterator[Node]:
        return iter(self._nodes)

    def __repr__(self) -> str:
        return (
            f"KnowledgeGraph(nodes={len(self._nodes)}, edges={len(self._edges)}, "
            f"passages={len(self._passages)})"
        )

    @property
    def nodes(self) -> Sequence[Node]:
        """All nodes in index order."""
        return tuple(self._nodes)

    @property
    def edges(self) -> Sequence[Edge]:
        """All edges in index order."""
        return tuple(self._edges)

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
            raise NodeNotFoundError(f"unknown node id {node_id!r}", key=str(node_id)) from None

    def ids_to_indices(self, node_ids: Iterable[str]) -> np.ndarray:
        """Vector of node indices for ids (raises on the first unknown id)."""
        return np.fromiter((self.index_of(n) for n in node_ids), dtype=np.int32)

    def find_by_name(self, name: str) -> list[int]:
        """Indices of nodes whose name equals ``name`` (case- and space-insensitive)."""
        if self._name_index is None:
            idx: dict[str, list[int]] = {}
            for i, n in enumerate(self._nodes):
                idx.setdefault(_norm_name(n.name), []).append(i)
            self._name_index = idx
        return list(self._name_index.get(_norm_name(name), []))

    def edges_between(self, source: str, target: str) -> list[Edge]:
        """All edges ``source -> target`` (any relation)."""
        s, t = self.index_of(source), self.index_of(target)
        csr = self.csr()
        lo, hi = csr["out_indptr"][s], csr["out_indptr"][s + 1]
        sel = csr["out_indices"][lo:hi] == t
        return [self._edges[int(e)] for e in csr["out_edges"][lo:hi][sel]]

    # ------------------------------------------------------------------ CSR
    def csr(self) -> dict[str, np.ndarray]:
        """CSR arrays (built lazily): ``{out,in}_{indptr,indices,edges}``, int32/int64."""
        if self._csr is None:
            self._csr = self._build_csr()
            logger.debug("built CSR adjacency: %d nodes, %d edges", len(self._nodes),
                         len(self._edges))
        return self._csr

    def _build_csr(self) -> dict[str, np.ndarray]:
        n, m = len(self._nodes), len(self._edges)
        src = np.empty(m, dtype=np.int32)
        dst = np.empty(m, dtype=np.int32)
        for i, e in enumerate(self._edges):
            src[i] = self._node_index[e.source]
            dst[i] = self._node_index[e.target]
        eid = np.arange(m, dtype=np.int32)
        out: dict[str, np.ndarray] = {}
        for name, a, b in (("out", src, dst), ("in", dst, src)):
            order = np.argsort(a, kind="stable")
            counts = np.bincount(a, minlength=n) if m else np.zeros(n, dtype=np.int64)
            indptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(counts, out=indptr[1:])
            out[f"{name}_indptr"] = indptr
            out[f"{name}_indices"] = b[order].astype(np.int32, copy=False)
            out[f"{name}_edges"] = eid[order]
        out["weights"] = np.fromiter((e.weight for e in self._edges), dtype=np.float32, count=m)
        return out

    def out_degree(self) -> np.ndarray:
        """Out-degree of every node (after duplicate merging)."""
        return np.diff(self.csr()["out_indptr"])

    def in_degree(self) -> np.ndarray:
        """In-degree of every node (after duplicate merging)."""
        return np.diff(self.csr()["in_indptr"])

    def neighbors(self, index: int, direction: Direction = "out") -> np.ndarray:
        """Neighbour indices of one node (may repeat for parallel edges)."""
        _check_direction(direction)
        csr = self.csr()
        parts = []
        for d in ("out", "in") if direction == "both" else (direction,):
            ip = csr[f"{d}_indptr"]
            parts.append(csr[f"{d}_indices"][ip[index] : ip[index + 1]])
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

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
        O(reached nodes + their edges) with no per-edge Python work.
        """
        if not self._nodes:
            raise EmptyGraphError("the graph has no nodes")
        _check_direction(direction)
        if max_depth is not None and (not isinstance(max_depth, int) or max_depth < 0):
            from kgpath.errors import ConfigError

            raise ConfigError(f"max_depth must be None or an int >= 0, got {max_depth!r}")
        s = self.index_of(source) if isinstance(source, str) else int(source)
        if not 0 <= s < len(self._nodes):
            raise NodeNotFoundError(f"node index {source!r} out of range", key=str(source))
        csr = self.csr()
        dirs = ("out", "in") if direction == "both" else (direction,)
        position, owner = self._bfs_scratch()
        position[s] = 0
        nodes = [np.array([s], dtype=np.int32)]
        dist = [np.zeros(1, dtype=np.int32)]
        parent = [np.full(1, -1, dtype=np.int32)]
        pedge = [np.full(1, -1, dtype=np.int32)]
        ppos = [np.full(1, -1, dtype=np.int32)]
        try:
            self._bfs_levels(
                csr, dirs, max_depth, position, owner, nodes, dist, parent, pedge, ppos
            )
        finally:
            for arr in nodes:  # restore the scratch invariant (all -1) in O(reached)
                position[arr] = -1
        return BFSResult(
            source=s,
            nodes=np.concatenate(nodes),
            dist=np.concatenate(dist),
            parent=np.concatenate(parent),
            parent_edge=np.concatenate(pedge),
            parent_pos=np.concatenate(ppos),
        )

    def _bfs_scratch(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-thread reusable arrays: avoids page-faulting O(n) memory on every query."""
        n = len(self._nodes)
        tls = self._tls
        pos = getattr(tls, "position", None)
        if pos is None or pos.shape[0] != n:
            tls.position = pos = np.full(n, -1, dtype=np.int32)
            tls.owner = np.empty(n, dtype=np.int64)
        return pos, tls.owner

    @staticmethod
    def _bfs_levels(
        csr: dict[str, np.ndarray],
        dirs: tuple[str, ...],
        max_depth: int | None,
        position: np.ndarray,
        owner: np.ndarray,
        nodes: list[np.ndarray],
        dist: list[np.ndarray],
        parent: list[np.ndarray],
        pedge: list[np.ndarray],
        ppos: list[np.ndarray],
    ) -> None:
        """Expand level by level, appending each level's arrays to the output lists."""
        frontier = nodes[0]
        depth, count = 0, 1
        while frontier.size and (max_depth is None or depth < max_depth):
            depth += 1
            nb_parts, par_parts, e_parts = [], [], []
            for d in dirs:
                ip = csr[f"{d}_indptr"]
                starts = ip[frontier]
                counts = ip[frontier + 1] - starts
                total = int(counts.sum())
                if total == 0:
                    continue
                # positions = concat(arange(starts[i], starts[i] + counts[i]))
                offs = np.repeat(starts - np.cumsum(counts) + counts, counts)
                pos = offs + np.arange(total)
                nb_parts.append(csr[f"{d}_indices"][pos])
                e_parts.append(csr[f"{d}_edges"][pos])
                par_parts.append(np.repeat(frontier, counts))
            if not nb_parts:
                break
            nb = np.concatenate(nb_parts) if len(nb_parts) > 1 else nb_parts[0]
            fresh = position[nb] < 0
            if not fresh.any():
                break
            nb = nb[fresh]
            par = (np.concatenate(par_parts) if len(par_parts) > 1 else par_parts[0])[fresh]
            eds = (np.concatenate(e_parts) if len(e_parts) > 1 else e_parts[0])[fresh]
            # keep the first occurrence of each new node, in linear time (no sort):
            # writing positions in reverse leaves the smallest index per node in `owner`
            idx = np.arange(nb.size)
            owner[nb[::-1]] = idx[::-1]
            first = idx[owner[nb] == idx]
            frontier = nb[first].astype(np.int32, copy=False)
            position[frontier] = np.arange(count, count + frontier.size, dtype=np.int32)
            count += frontier.size
            nodes.append(frontier)
            dist.append(np.full(frontier.size, depth, dtype=np.int32))
            parents = par[first].astype(np.int32, copy=False)
            parent.append(parents)
            pedge.append(eds[first].astype(np.int32, copy=False))
            ppos.append(position[parents])

    # ------------------------------------------------------------------ embeddings
    @property
    def embedding_dim(self) -> int | None:
        """Dimension of stored node embeddings, if any."""
        return None if self._emb is None else int(self._emb.shape[1])

    def set_embeddings(
        self, embeddings: Mapping[str, Sequence[float] | np.ndarray] | np.ndarray
    ) -> None:
        """Store node embeddings, either a full ``(n, d)`` matrix or ``{id: vector}``.

        Raises :class:`EmbeddingError` on a dimension mismatch or NaN/inf values.
        """
        n = len(self._nodes)
        if isinstance(embeddings, np.ndarray):
            mat = np.asarray(embeddings, dtype=np.float32)
            if mat.ndim != 2 or mat.shape[0] != n:
                raise EmbeddingError(
                    f"embedding matrix must have shape ({n}, d), got {mat.shape}"
                )
            _check_finite(mat, [x.id for x in self._nodes])
            if self._emb is not None and mat.shape[1] != self._emb.shape[1]:
                raise EmbeddingError(
                    f"embedding dimension {mat.shape[1]} does not match the graph's "
                    f"{self._emb.shape[1]}"
                )
            self._emb = np.ascontiguousarray(mat)
            self._emb_mask = np.ones(n, dtype=bool)
            self._version += 1
            return
        for node_id, vec in embeddings.items():
            i = self.index_of(node_id)
            v = np.asarray(vec, dtype=np.float32).reshape(-1)
            _check_finite(v[None, :], [node_id])
            if self._emb is None:
                self._emb = np.zeros((n, v.size), dtype=np.float32)
                self._emb_mask = np.zeros(n, dtype=bool)
            elif v.size != self._emb.shape[1]:
                raise EmbeddingError(
                    f"embedding for node {node_id!r} has dimension {v.size}, "
                    f"expected {self._emb.shape[1]}"
                )
            self._grow_embeddings()
            assert self._emb_mask is not None
            self._emb[i] = v
            self._emb_mask[i] = True
        self._version += 1

    def _grow_embeddings(self) -> None:
        if self._emb is None or self._emb_mask is None:
            return
        n = len(self._nodes)
        if self._emb.shape[0] < n:
            extra = n - self._emb.shape[0]
            self._emb = np.vstack([self._emb, np.zeros((extra, self._emb.shape[1]), np.float32)])
            self._emb_mask = np.concatenate([self._emb_mask, np.zeros(extra, dtype=bool)])

    def missing_embeddings(self) -> list[int]:
        """Indices of nodes without an embedding."""
        if self._emb is None or self._emb_mask is None:
            return list(range(len(self._nodes)))
        self._grow_embeddings()
        return np.flatnonzero(~self._emb_mask).tolist()

    @property
    def embeddings(self) -> np.ndarray:
        """The ``(n, d)`` float32 embedding matrix; raises if any node lacks one."""
        missing = self.missing_embeddings()
        if missing:
            ids = [self._nodes[i].id for i in missing[:5]]
            raise EmbeddingError(
                f"{len(missing)} node(s) have no embedding (e.g. {ids}); "
                "embed them with GraphIndex or set_embeddings()"
            )
        assert self._emb is not None
        return self._emb

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_triples(
        cls,
        triples: Iterable[Sequence[str]],
        passages: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
        *,
        provenance: Sequence[Sequence[str]] | None = None,
    ) -> KnowledgeGraph:
        """Build a graph from ``(head, relation, tail)`` triples.

        Node ids and names are the entity strings. ``passages`` maps passage id to text;
        ``provenance[i]`` lists the passage ids that support ``triples[i]`` (they are also
        attached to both end nodes).
        """
        g = cls()
        if passages is not None:
            items = passages.items() if isinstance(passages, Mapping) else passages
            for pid, text in items:
                g.add_passage(pid, text)
        trip = list(triples)
        if provenance is not None and len(provenance) != len(trip):
            raise GraphError(
                f"provenance has {len(provenance)} entries for {len(trip)} triples"
            )
        node_prov: dict[str, list[str]] = {}
        for i, t in enumerate(trip):
            if len(t) != 3:
                raise GraphError(f"triple #{i} must be (head, relation, tail), got {t!r}")
            h, r, tl = (str(x).strip() for x in t)
            if not h or not tl:
                raise GraphError(f"triple #{i} has an empty head or tail: {t!r}")
            prov = tuple(provenance[i]) if provenance is not None else ()
            for p in prov:
                if p not in g._passages:
                    raise GraphError(f"triple #{i} cites unknown passage {p!r}")
            for ent in (h, tl):
                if ent not in g:
                    g.add_node(ent, name=ent, text=ent)
                node_prov.setdefault(ent, []).extend(prov)
            g.add_edge(h, tl, relation=r, text=f"{h} {r} {tl}", provenance=prov)
        for ent, cites in node_prov.items():
            if cites:
                n = g.node(ent)
                g._nodes[g.index_of(ent)] = Node(
                    n.id, n.name, n.text, n.type, n.metadata, tuple(dict.fromkeys(cites))
                )
        return g

    @classmethod
    def from_arrays(
        cls,
        node_ids: Sequence[str],
        sources: Sequence[int] | np.ndarray,
        targets: Sequence[int] | np.ndarray,
        *,
        relations: Sequence[str] | None = None,
        texts: Sequence[str] | None = None,
        embeddings: np.ndarray | None = None,
    ) -> KnowledgeGraph:
        """Bulk-build from node ids and integer edge endpoint arrays (fast path).

        ``sources[i] -> targets[i]`` index into ``node_ids``. Duplicate
        ``(source, target, relation)`` edges are merged as in :meth:`add_edge`. Intended
        for large generated or exported graphs (10^5-10^6 nodes).
        """
        from types import MappingProxyType

        g = cls()
        empty: Mapping[str, Any] = MappingProxyType({})
        ids = [str(x) for x in node_ids]
        if len(set(ids)) != len(ids):
            raise GraphError("node_ids contain duplicates")
        src = np.asarray(sources, dtype=np.int64)
        dst = np.asarray(targets, dtype=np.int64)
        n = len(ids)
        if src.shape != dst.shape:
            raise GraphError(f"sources and targets differ in length: {src.shape} vs {dst.shape}")
        if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
            raise GraphError(f"edge endpoint out of range [0, {n})")
        txt = list(texts) if texts is not None else [""] * n
        g._nodes = [Node(i, i, t, None, empty) for i, t in zip(ids, txt)]
        g._node_index = {i: k for k, i in enumerate(ids)}
        rel = list(relations) if relations is not None else None
        for k in range(src.size):
            a, b = ids[src[k]], ids[dst[k]]
            r = rel[k] if rel is not None else ""
            key = (a, b, r)
            if key in g._edge_key:
                continue
            g._edge_key[key] = len(g._edges)
            g._edges.append(Edge(a, b, r, "", None, 1.0, (), empty))
        g._version += 1
        if embeddings is not None:
            g.set_embeddings(embeddings)
        return g

    @classmethod
    def from_pathrag6(cls, directory: str | os.PathLike[str]) -> KnowledgeGraph:
        """Load one PathRAG-6 domain folder (``nodes.json`` + ``edges.json``)."""
        d = Path(directory)
        try:
            nodes = json.loads((d / "nodes.json").read_text(encoding="utf-8"))
            edges = json.loads((d / "edges.json").read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise GraphError(
                f"{d} is not a PathRAG-6 domain folder: {exc.filename} missing"
            ) from exc
        except json.JSONDecodeError as exc:
            raise GraphError(f"{d}: invalid JSON ({exc})") from exc
        g = cls()
        for rec in nodes:
            meta = dict(rec.get("metadata") or {})
            g.add_node(
                str(rec["id"]),
                name=str(meta.get("topic") or rec["id"]),
                text=str(rec.get("text", "")),
                type=meta.get("domain"),
                metadata=meta,
                embedding=rec.get("embedding"),
            )
        for rec in edges:
            g.add_edge(
                str(rec["source"]),
                str(rec["target"]),
                relation=str(rec.get("relation", "")),
                weight=float(rec.get("weight", 1.0)),
            )
        return g

    @classmethod
    def from_networkx(cls, graph: nx.Graph) -> KnowledgeGraph:
        """Build from a networkx (Multi)(Di)Graph.

        Node attributes ``name``, ``text``, ``type``, ``provenance``, ``embedding`` and
        edge attributes ``relation``, ``text``, ``type``, ``weight``, ``provenance`` are
        used when present; other attributes go to ``metadata``. An undirected graph gets
        both directions of every edge.
        """
        g = cls()
        known_n = {"name", "text", "type", "provenance", "embedding"}
        for nid, attrs in graph.nodes(data=True):
            g.add_node(
                str(nid),
                name=str(attrs.get("name", nid)),
                text=str(attrs.get("text", "")),
                type=attrs.get("type"),
                metadata={k: v for k, v in attrs.items() if k not in known_n},
                provenance=tuple(attrs.get("provenance", ())),
                embedding=attrs.get("embedding"),
            )
        known_e = {"relation", "text", "type", "weight", "provenance"}
        directed = graph.is_directed()
        for u, v, attrs in graph.edges(data=True):
            pairs = [(u, v)] if directed else [(u, v), (v, u)]
            for a, b in pairs:
                g.add_edge(
                    str(a),
                    str(b),
                    relation=str(attrs.get("relation", "")),
                    text=str(attrs.get("text", "")),
                    type=attrs.get("type"),
                    weight=float(attrs.get("weight", 1.0)),
                    provenance=tuple(attrs.get("provenance", ())),
                    metadata={k: val for k, val in attrs.items() if k not in known_e},
                )
        for pid, p in (graph.graph.get("passages") or {}).items():
            g.add_passage(str(pid), str(p))
        return g

    def to_networkx(self) -> nx.MultiDiGraph:
        """Export to a ``networkx.MultiDiGraph`` with the same attributes."""
        import networkx as nx

        out = nx.MultiDiGraph()
        for i, n in enumerate(self._nodes):
            attrs: dict[str, Any] = dict(n.metadata)
            attrs.update(name=n.name, text=n.text, type=n.type, provenance=list(n.provenance))
            if self._emb is not None and self._emb_mask is not None and i < len(self._emb_mask):
                if self._emb_mask[i]:
                    attrs["embedding"] = self._emb[i].tolist()
            out.add_node(n.id, **attrs)
        for e in self._edges:
            attrs = dict(e.metadata)
            attrs.update(
                relation=e.relation, text=e.text, type=e.type, weight=e.weight,
                provenance=list(e.provenance),
            )
            out.add_edge(e.source, e.target, key=e.relation, **attrs)
        out.graph["passages"] = {pid: p.text for pid, p in self._passages.items()}
        return out

    # ------------------------------------------------------------------ persistence
    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write the graph to ``directory`` as JSON + ``.npy``, atomically.

        Files are written into a temporary sibling directory, fsynced, then renamed into
        place; an existing directory is replaced only after the new one is complete.
        A ``manifest.json`` records the format version and a SHA-256 of every file.
        """
        dest = Path(directory)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=dest.parent))
        try:
            files: dict[str, bytes] = {
                "nodes.json": _dumps([_node_record(n) for n in self._nodes]),
                "edges.json": _dumps([_edge_record(e) for e in self._edges]),
                "passages.json": _dumps(
                    [{"id": p.id, "text": p.text, "metadata": dict(p.metadata)}
                     for p in self._passages.values()]
                ),
            }
            for name, data in files.items():
                _write_synced(tmp / name, data)
            if self._emb is not None and self._emb_mask is not None:
                self._grow_embeddings()
                arrays = (("embeddings.npy", self._emb), ("embedding_mask.npy", self._emb_mask))
                for name, arr in arrays:
                    with open(tmp / name, "wb") as fh:
                        np.save(fh, arr, allow_pickle=False)
                        fh.flush()
                        os.fsync(fh.fileno())
            manifest = {
                "format": "kgpath.KnowledgeGraph",
                "format_version": FORMAT_VERSION,
                "num_nodes": len(self._nodes),
                "num_edges": len(self._edges),
                "num_passages": len(self._passages),
                "files": {p.name: _sha256(p) for p in sorted(tmp.iterdir())},
            }
            _write_synced(tmp / "manifest.json", _dumps(manifest))
            backup = None
            if dest.exists():
                backup = dest.with_name(f".{dest.name}.old-{os.getpid()}")
                os.replace(dest, backup)
            os.replace(tmp, dest)
            if backup is not None:
                shutil.rmtree(backup, ignore_errors=True)
            logger.info("saved %r to %s", self, dest)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> KnowledgeGraph:
        """Load a graph written by :meth:`save`.

        Raises :class:`PersistenceError` if the directory is missing, truncated, corrupt
        (checksum mismatch, bad JSON) or written by a newer format version.
        """
        d = Path(directory)
        mpath = d / "manifest.json"
        if not mpath.is_file():
            raise PersistenceError(f"{d} is not a saved kgpath graph (no manifest.json)")
        try:
            manifest = json.loads(mpath.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise PersistenceError(f"{mpath} is corrupt: {exc}") from exc
        version = manifest.get("format_version")
        if not isinstance(version, int):
            raise PersistenceError(f"{mpath} has no integer format_version")
        if version > FORMAT_VERSION:
            raise PersistenceError(
                f"{d} has format_version {version}, newer than this kgpath supports "
                f"({FORMAT_VERSION}); upgrade kgpath"
            )
        for name, digest in (manifest.get("files") or {}).items():
            p = d / name
            if not p.is_file():
                raise PersistenceError(f"{d} is truncated: {name} is missing")
            if _sha256(p) != digest:
                raise PersistenceError(f"{d} is corrupt: checksum of {name} does not match")
        try:
            nodes = json.loads((d / "nodes.json").read_text(encoding="utf-8"))
            edges = json.loads((d / "edges.json").read_text(encoding="utf-8"))
            passages = json.loads((d / "passages.json").read_text(encoding="utf-8"))
            g = cls()
            for p in passages:
                g.add_passage(p["id"], p["text"], p.get("metadata"))
            for r in nodes:
                g.add_node(
                    r["id"], name=r["name"], text=r["text"], type=r.get("type"),
                    metadata=r.get("metadata"), provenance=r.get("provenance", ()),
                )
            for r in edges:
                g.add_edge(
                    r["source"], r["target"], relation=r["relation"], text=r["text"],
                    type=r.get("type"), weight=r["weight"], provenance=r.get("provenance", ()),
                    metadata=r.get("metadata"),
                )
            if (d / "embeddings.npy").is_file():
                emb = np.load(d / "embeddings.npy", allow_pickle=False)
                mask = np.load(d / "embedding_mask.npy", allow_pickle=False)
                if emb.shape[0] != len(g) or mask.shape[0] != len(g):
                    raise PersistenceError(f"{d}: embeddings do not match the node count")
                g._emb = np.ascontiguousarray(emb.astype(np.float32, copy=False))
                g._emb_mask = mask.astype(bool, copy=False)
        except PersistenceError:
            raise
        except (KeyError, TypeError, ValueError, json.JSONDecodeError) as exc:
            raise PersistenceError(f"{d} is corrupt: {exc!r}") from exc
        if len(g) != manifest.get("num_nodes") or g.num_edges != manifest.get("num_edges"):
            raise PersistenceError(f"{d} is corrupt: node/edge counts differ from the manifest")
        logger.info("loaded %r from %s (format version %d)", g, d, version)
        return g


# ---------------------------------------------------------------------- helpers
def _norm_name(s: str) -> str:
    return " ".join(str(s).lower().split())


def _check_direction(direction: str) -> None:
    if direction not in _DIRECTIONS:
        from kgpath.errors import ConfigError

        raise ConfigError(f"direction must be one of {_DIRECTIONS}, got {direction!r}")


def _check_finite(mat: np.ndarray, ids: Sequence[str]) -> None:
    bad = ~np.isfinite(mat).all(axis=1)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        name = ids[first] if first < len(ids) else first
        raise EmbeddingError(f"embedding for node {name!r} contains NaN or inf")


def _node_record(n: Node) -> dict[str, Any]:
    return {
        "id": n.id, "name": n.name, "text": n.text, "type": n.type,
        "metadata": dict(n.metadata), "provenance": list(n.provenance),
    }


def _edge_record(e: Edge) -> dict[str, Any]:
    return {
        "source": e.source, "target": e.target, "relation": e.relation, "text": e.text,
        "type": e.type, "weight": e.weight, "provenance": list(e.provenance),
        "metadata": dict(e.metadata),
    }


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, indent=None, default=str).encode("utf-8")


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
