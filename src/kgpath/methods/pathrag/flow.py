"""Section 4.2, resource flow: the distinct-neighbour adjacency, Eq. (2) and Eq. (3).

:func:`propagate_resources` runs the flow of Eq. (2) (``S(v_start) = 1``; a node passes
``α·S(v)/|N(v,·)|`` to each distinct neighbour) with the early stop of Eq. (3), level by
level, setting each node's resource at most once. The edges the resource flowed along form
the layered DAG that :mod:`kgpath.methods.pathrag.paths` searches.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kgpath.errors import ConfigError, NodeNotFoundError
from kgpath.graph import KnowledgeGraph
from kgpath.methods.pathrag.config import _DIRECTIONS, PathDirection

__all__ = ["FlowAdjacency", "Propagation", "flow_adjacency", "propagate_resources"]


@dataclass(frozen=True)
class FlowAdjacency:
    """Distinct-neighbour CSR for Eq. (2): ``indices[indptr[v]:indptr[v+1]]`` is ``N(v,·)``.

    Parallel edges with different relations are one neighbour (``|N(v,·)|`` is a set
    size); in undirected mode ``N(v,·)`` is the union of out- and in-neighbours.
    Neighbours are sorted by node index.
    """

    indptr: np.ndarray
    indices: np.ndarray
    degree: np.ndarray
    direction: PathDirection
    graph_version: int = -1

    @property
    def num_nodes(self) -> int:
        """Number of nodes."""
        return int(self.degree.shape[0])

    @classmethod
    def from_edges(
        cls, num_nodes: int, src: np.ndarray, dst: np.ndarray, direction: PathDirection
    ) -> FlowAdjacency:
        """Build from parallel arrays of edge endpoints (node indices)."""
        if direction not in _DIRECTIONS:
            raise ConfigError(f"direction must be one of {_DIRECTIONS}, got {direction!r}")
        s = np.asarray(src, dtype=np.int64)
        d = np.asarray(dst, dtype=np.int64)
        if direction == "undirected":
            s, d = np.concatenate([s, d]), np.concatenate([d, s])
        n = int(num_nodes)
        keys = np.unique(s * max(n, 1) + d)
        us, ud = keys // max(n, 1), keys % max(n, 1)
        counts = np.bincount(us, minlength=n).astype(np.int64) if n else np.zeros(0, np.int64)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return cls(indptr, ud.astype(np.int64), counts, direction)


_ADJ_CACHE: weakref.WeakKeyDictionary[KnowledgeGraph, dict[str, FlowAdjacency]] = (
    weakref.WeakKeyDictionary()
)


def flow_adjacency(graph: KnowledgeGraph, direction: PathDirection = "directed") -> FlowAdjacency:
    """Return the :class:`FlowAdjacency` of ``graph`` (cached until the graph changes)."""
    if direction not in _DIRECTIONS:
        raise ConfigError(f"direction must be one of {_DIRECTIONS}, got {direction!r}")
    per = _ADJ_CACHE.setdefault(graph, {})
    adj = per.get(direction)
    if adj is not None and adj.graph_version == graph.version:
        return adj
    csr = graph.csr()
    n = graph.num_nodes
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(csr["out_indptr"]))
    built = FlowAdjacency.from_edges(n, src, csr["out_indices"], direction)
    adj = dataclasses.replace(built, graph_version=graph.version)
    per[direction] = adj
    return adj


@dataclass(frozen=True)
class Propagation:
    """Resource flow (Eqs. 2-3) from one or several start nodes, computed together.

    Every array is indexed by *state*: a (start, node) pair the flow reached. States are
    ordered level by level (level 0 holds the starts, in ``starts`` order), within a level
    by start slot and node index. ``slot[i]`` is the position of the state's start in
    ``starts``. ``flow_src``/``flow_dst`` are the DAG edges the resource flowed along (state
    indices); ``flow_level_ptr[l]:flow_level_ptr[l+1]`` are the edges into level ``l + 1``.
    Flows from different starts never mix.
    """

    starts: tuple[int, ...]
    slot: np.ndarray
    nodes: np.ndarray
    level: np.ndarray
    resource: np.ndarray
    emitted: np.ndarray
    """True if the node passed its resource on (not stopped by Eq. 3, not a sink, below
    ``max_hops``)."""
    early_stopped: np.ndarray
    """True if Eq. (3) stopped the node: ``S(v)/|N(v,·)| < θ``."""
    flow_src: np.ndarray
    flow_dst: np.ndarray
    flow_level_ptr: np.ndarray

    @property
    def start(self) -> int:
        """The start node (single-start propagations)."""
        return self.starts[0]

    def resources(self, slot: int = 0) -> dict[int, float]:
        """``{node index: S(v)}`` for every node reached from ``starts[slot]``."""
        sel = self.slot == slot
        return dict(zip(self.nodes[sel].tolist(), self.resource[sel].tolist(), strict=False))

    def levels(self, slot: int = 0) -> dict[int, int]:
        """``{node index: hop level}`` for every node reached from ``starts[slot]``."""
        sel = self.slot == slot
        return dict(zip(self.nodes[sel].tolist(), self.level[sel].tolist(), strict=False))

    def stopped_nodes(self, slot: int = 0) -> set[int]:
        """Node indices stopped by Eq. (3) in the flow from ``starts[slot]``."""
        return set(self.nodes[(self.slot == slot) & self.early_stopped].tolist())

    def emitting_nodes(self, slot: int = 0) -> set[int]:
        """Node indices that passed resource on in the flow from ``starts[slot]``."""
        return set(self.nodes[(self.slot == slot) & self.emitted].tolist())


def propagate_resources(
    adj: FlowAdjacency,
    start: int | Sequence[int],
    *,
    alpha: float = 0.8,
    theta: float = 0.05,
    max_hops: int | None = None,
) -> Propagation:
    """Eq. (2) resource flow from ``start`` (or from each of several starts) with Eq. (3).

    ``S(start) = 1``. In step ``l`` every node of level ``l - 1`` that is not stopped
    sends ``α · S(v_j) / |N(v_j,·)|`` to each distinct neighbour; a node reached for the
    first time sums what it receives in that step (Eq. 2) and is never updated again.
    A node with ``S(v)/|N(v,·)| < θ`` (Eq. 3) keeps its resource but sends nothing;
    neither does a node without neighbours or at ``max_hops``.

    Several starts are propagated side by side, each with its own resources, so one pass
    of about twenty numpy calls per level serves all ``N`` start nodes of a query.
    """
    n = adj.num_nodes
    starts = [start] if isinstance(start, (int, np.integer)) else list(start)
    for s in starts:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or not 0 <= s < n:
            raise NodeNotFoundError(f"start node index {s!r} out of range [0, {n})", key=str(s))
    if len(set(starts)) != len(starts):
        raise ConfigError(f"start nodes must be distinct, got {starts!r}")
    indptr, indices, degree = adj.indptr, adj.indices, adj.degree
    k = len(starts)
    f_slot: np.ndarray = np.arange(k, dtype=np.int64)
    f_node: np.ndarray = np.asarray(starts, dtype=np.int64)
    f_res: np.ndarray = np.ones(k)
    f_state: np.ndarray = np.arange(k, dtype=np.int64)
    seen = np.sort(f_slot * n + f_node)  # keys slot·n + node of every state so far
    slots: list[np.ndarray] = [f_slot]
    nodes: list[np.ndarray] = [f_node]
    levels: list[np.ndarray] = [np.zeros(k, np.int64)]
    res: list[np.ndarray] = [f_res]
    emits: list[np.ndarray] = []
    stops: list[np.ndarray] = []
    fsrc: list[np.ndarray] = []
    fdst: list[np.ndarray] = []
    fptr = [0]
    count = k
    depth = 0
    while True:
        deg = degree[f_node]
        share = f_res / np.maximum(deg, 1)  # S(v)/|N(v,·)|; sinks (degree 0) never emit
        has_nb = deg > 0
        stopped = has_nb & (share < theta)  # Eq. (3)
        emit = has_nb & ~stopped
        if max_hops is not None and depth >= max_hops:
            emit = np.zeros_like(emit)
        emits.append(emit)
        stops.append(stopped)
        if not emit.any():
            break
        cnt = deg[emit]
        total = int(cnt.sum())
        offs = np.repeat(indptr[f_node[emit]] - np.cumsum(cnt) + cnt, cnt)
        nb = indices[offs + np.arange(total)]
        e_slot = np.repeat(f_slot[emit], cnt)
        par = np.repeat(f_state[emit], cnt)
        contrib = np.repeat(alpha * share[emit], cnt)  # Eq. (2) term α·S(v_j)/|N(v_j,·)|
        key = e_slot * n + nb
        at = np.minimum(np.searchsorted(seen, key), seen.size - 1)
        fresh = seen[at] != key  # each node's resource is set at most once
        if not fresh.any():
            break
        key, par, contrib = key[fresh], par[fresh], contrib[fresh]
        ukey, inv = np.unique(key, return_inverse=True)
        new_res = np.bincount(inv, weights=contrib, minlength=ukey.size)  # Eq. (2) sum
        new_state = np.arange(count, count + ukey.size, dtype=np.int64)
        count += ukey.size
        depth += 1
        f_slot, f_node = ukey // n, ukey % n
        f_res, f_state = new_res, new_state
        seen = np.sort(np.concatenate([seen, ukey]))  # ukey holds only fresh keys
        fsrc.append(par)
        fdst.append(new_state[inv])
        fptr.append(fptr[-1] + par.size)
        slots.append(f_slot)
        nodes.append(f_node)
        levels.append(np.full(ukey.size, depth, dtype=np.int64))
        res.append(new_res)
    empty = np.zeros(0, dtype=np.int64)
    return Propagation(
        starts=tuple(int(x) for x in starts),
        slot=np.concatenate(slots),
        nodes=np.concatenate(nodes),
        level=np.concatenate(levels),
        resource=np.concatenate(res),
        emitted=np.concatenate(emits),
        early_stopped=np.concatenate(stops),
        flow_src=np.concatenate(fsrc) if fsrc else empty,
        flow_dst=np.concatenate(fdst) if fdst else empty,
        flow_level_ptr=np.asarray(fptr, dtype=np.int64),
    )
