"""Compressed sparse row (CSR) adjacency and breadth-first search over it.

Every traversal in kgpath works on int32 CSR arrays built once per graph version:

``out_indptr[i]:out_indptr[i+1]`` slices ``out_indices`` (neighbour node indices) and
``out_edges`` (edge indices) for node ``i``; the same for the ``in_`` arrays. ``weights``
holds the edge weights in edge-index order.

The functions here take the arrays, not the graph; :class:`~kgpath.graph.KnowledgeGraph`
builds, caches and validates, then calls them.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kgpath.errors import ConfigError, NodeNotFoundError
from kgpath.graph.model import DIRECTIONS, Edge

__all__ = [
    "BFSResult",
    "bfs",
    "bfs_scratch",
    "build_csr",
    "check_direction",
    "check_max_depth",
    "neighbors",
]

CSR = dict[str, np.ndarray]


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


def check_direction(direction: str) -> None:
    """Raise :class:`ConfigError` unless ``direction`` is ``"out"``, ``"in"`` or ``"both"``."""
    if direction not in DIRECTIONS:
        raise ConfigError(f"direction must be one of {DIRECTIONS}, got {direction!r}")


def check_max_depth(max_depth: object) -> None:
    """Raise :class:`ConfigError` unless ``max_depth`` is ``None`` or an int >= 0."""
    if max_depth is not None and (not isinstance(max_depth, int) or max_depth < 0):
        raise ConfigError(f"max_depth must be None or an int >= 0, got {max_depth!r}")


def build_csr(edges: Sequence[Edge], node_index: Mapping[str, int], n: int) -> CSR:
    """CSR arrays ``{out,in}_{indptr,indices,edges}`` and ``weights`` for ``n`` nodes.

    Edges are grouped by endpoint with a stable sort, so each node's slice lists its edges
    in edge-index order.
    """
    m = len(edges)
    src = np.empty(m, dtype=np.int32)
    dst = np.empty(m, dtype=np.int32)
    for i, e in enumerate(edges):
        src[i] = node_index[e.source]
        dst[i] = node_index[e.target]
    eid = np.arange(m, dtype=np.int32)
    out: CSR = {}
    for name, a, b in (("out", src, dst), ("in", dst, src)):
        order = np.argsort(a, kind="stable")
        counts = np.bincount(a, minlength=n) if m else np.zeros(n, dtype=np.int64)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        out[f"{name}_indptr"] = indptr
        out[f"{name}_indices"] = b[order].astype(np.int32, copy=False)
        out[f"{name}_edges"] = eid[order]
    out["weights"] = np.fromiter((e.weight for e in edges), dtype=np.float32, count=m)
    return out


def neighbors(csr: CSR, index: int, direction: str = "out") -> np.ndarray:
    """Neighbour indices of one node (may repeat for parallel edges)."""
    check_direction(direction)
    parts = []
    for d in ("out", "in") if direction == "both" else (direction,):
        ip = csr[f"{d}_indptr"]
        parts.append(csr[f"{d}_indices"][ip[index] : ip[index + 1]])
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def bfs_scratch(tls: threading.local, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-thread reusable arrays: avoids page-faulting O(n) memory on every query.

    ``position`` is all ``-1`` between searches (each search restores it in O(reached));
    ``owner`` is scratch space whose content does not matter.
    """
    pos = getattr(tls, "position", None)
    if pos is None or pos.shape[0] != n:
        tls.position = pos = np.full(n, -1, dtype=np.int32)
        tls.owner = np.empty(n, dtype=np.int64)
    return pos, tls.owner


@dataclass
class _Levels:
    """Per-level output arrays of a BFS, concatenated at the end."""

    nodes: list[np.ndarray] = field(default_factory=list)
    dist: list[np.ndarray] = field(default_factory=list)
    parent: list[np.ndarray] = field(default_factory=list)
    pedge: list[np.ndarray] = field(default_factory=list)
    ppos: list[np.ndarray] = field(default_factory=list)

    def result(self, source: int) -> BFSResult:
        return BFSResult(
            source=source,
            nodes=np.concatenate(self.nodes),
            dist=np.concatenate(self.dist),
            parent=np.concatenate(self.parent),
            parent_edge=np.concatenate(self.pedge),
            parent_pos=np.concatenate(self.ppos),
        )


SMALL_FRONTIER = 16
"""Levels whose frontier has at most this many nodes are expanded in Python (see :func:`bfs`)."""


def bfs(
    csr: CSR,
    source: int,
    *,
    max_depth: int | None,
    direction: str,
    position: np.ndarray,
    owner: np.ndarray,
) -> BFSResult:
    """Breadth-first search from node index ``source``, one numpy pass per level.

    ``position``/``owner`` come from :func:`bfs_scratch`; arguments are validated by the
    caller (:meth:`kgpath.graph.KnowledgeGraph.bfs`).

    Notes
    -----
    Each level gathers the CSR slices of the whole frontier with one vectorised
    ``repeat``/``arange`` and keeps first occurrences, so the cost is
    O(reached nodes + their edges) with no per-edge Python work.

    The first levels, while the frontier has at most :data:`SMALL_FRONTIER` nodes, are
    expanded by a plain Python loop over the CSR slices instead (:func:`_small_levels`):
    a vectorised level costs ~30 numpy calls (~25 us) whatever its size, which dominated
    PCR at depth 1-2 (a handful of nodes). Both produce the same order, so the result is
    identical; ``tests/test_csr_bfs.py`` checks it on random graphs.
    """
    dirs = ("out", "in") if direction == "both" else (direction,)
    small = _small_levels(csr, dirs, source, max_depth)
    if small.done:
        return small.result(source)
    count = len(small.nodes)
    lv = small.levels()
    position[lv.nodes[0]] = np.arange(count, dtype=np.int32)
    try:
        _expand_levels(csr, dirs, max_depth, position, owner, lv,
                       frontier=np.asarray(small.frontier, np.int32), depth=small.depth)
    finally:
        for arr in lv.nodes:  # restore the scratch invariant (all -1) in O(reached)
            position[arr] = -1
    return lv.result(source)


@dataclass
class _Small:
    """The first BFS levels as Python lists (positions in a dict, not the scratch array)."""

    nodes: list[int]
    dist: list[int]
    parent: list[int]
    pedge: list[int]
    ppos: list[int]
    frontier: list[int]
    depth: int = 0
    done: bool = False

    def arrays(self) -> tuple[np.ndarray, ...]:
        return tuple(np.array(x, dtype=np.int32)
                     for x in (self.nodes, self.dist, self.parent, self.pedge, self.ppos))

    def result(self, source: int) -> BFSResult:
        nodes, dist, parent, pedge, ppos = self.arrays()
        return BFSResult(source, nodes, dist, parent, pedge, ppos)

    def levels(self) -> _Levels:
        nodes, dist, parent, pedge, ppos = self.arrays()
        return _Levels([nodes], [dist], [parent], [pedge], [ppos])


def _small_levels(
    csr: CSR, dirs: tuple[str, ...], source: int, max_depth: int | None
) -> _Small:
    """Expand levels in Python while the frontier is small; same order as :func:`_gather`.

    The gather lists the whole frontier's out-slices, then its in-slices (``"both"``),
    each node's slice in CSR order; the first occurrence of a new node wins.
    """
    st = _Small([source], [0], [-1], [-1], [-1], [source])
    seen = {source: 0}
    slices = [(csr[f"{d}_indptr"], csr[f"{d}_indices"], csr[f"{d}_edges"]) for d in dirs]
    while len(st.frontier) <= SMALL_FRONTIER:
        if not st.frontier or (max_depth is not None and st.depth >= max_depth):
            st.done = True
            return st
        st.depth += 1
        nxt: list[int] = []
        for ip, ind, eds in slices:
            for u in st.frontier:
                s, e = ip[u : u + 2].tolist()
                if s == e:
                    continue
                for v, eid in zip(ind[s:e].tolist(), eds[s:e].tolist()):
                    if v not in seen:
                        seen[v] = len(st.nodes)
                        st.nodes.append(v)
                        st.dist.append(st.depth)
                        st.parent.append(u)
                        st.pedge.append(eid)
                        st.ppos.append(seen[u])
                        nxt.append(v)
        st.frontier = nxt
    return st


def _gather(
    csr: CSR, dirs: tuple[str, ...], frontier: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Neighbours, their parents and the edges used, for the whole frontier at once."""
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
        return None
    if len(nb_parts) == 1:
        return nb_parts[0], par_parts[0], e_parts[0]
    return np.concatenate(nb_parts), np.concatenate(par_parts), np.concatenate(e_parts)


def _expand_levels(
    csr: CSR,
    dirs: tuple[str, ...],
    max_depth: int | None,
    position: np.ndarray,
    owner: np.ndarray,
    lv: _Levels,
    *,
    frontier: np.ndarray,
    depth: int,
) -> None:
    """Expand level by level from ``frontier`` (at ``depth``), appending to ``lv``.

    ``position`` already holds the positions of every node in ``lv``.
    """
    count = sum(a.size for a in lv.nodes)
    while frontier.size and (max_depth is None or depth < max_depth):
        depth += 1
        gathered = _gather(csr, dirs, frontier)
        if gathered is None:
            break
        nb, par, eds = gathered
        fresh = position[nb] < 0
        if not fresh.any():
            break
        nb, par, eds = nb[fresh], par[fresh], eds[fresh]
        # keep the first occurrence of each new node, in linear time (no sort):
        # writing positions in reverse leaves the smallest index per node in `owner`
        idx = np.arange(nb.size)
        owner[nb[::-1]] = idx[::-1]
        first = idx[owner[nb] == idx]
        frontier = nb[first].astype(np.int32, copy=False)
        position[frontier] = np.arange(count, count + frontier.size, dtype=np.int32)
        count += frontier.size
        lv.nodes.append(frontier)
        lv.dist.append(np.full(frontier.size, depth, dtype=np.int32))
        parents = par[first].astype(np.int32, copy=False)
        lv.parent.append(parents)
        lv.pedge.append(eds[first].astype(np.int32, copy=False))
        lv.ppos.append(position[parents])
