"""Section 4.2, resource flow: the distinct-neighbour adjacency, Eq. (2) and Eq. (3).

:func:`propagate_resources` runs the flow of Eq. (2) (``S(v_start) = 1``; a node passes
``α·S(v)/|N(v,·)|`` to each distinct neighbour) with the early stop of Eq. (3), level by
level, setting each node's resource at most once. The edges the resource flowed along form
the layered DAG that :mod:`kgpath.methods.pathrag.paths` searches.
"""

from __future__ import annotations

import dataclasses
import logging
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kgpath.errors import ConfigError, NodeNotFoundError, short
from kgpath.graph import KnowledgeGraph
from kgpath.methods.pathrag.config import _DIRECTIONS, PathDirection

logger = logging.getLogger("kgpath.methods.pathrag")

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
            raise ConfigError(f"direction must be one of {_DIRECTIONS}, got {short(direction)}")
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


_ADJ_CACHE: weakref.WeakKeyDictionary[KnowledgeGraph, dict[tuple, FlowAdjacency]] = (
    weakref.WeakKeyDictionary()
)


def flow_adjacency(
    graph: KnowledgeGraph,
    direction: PathDirection = "directed",
    exclude_types: Sequence[str] = (),
) -> FlowAdjacency:
    """Return the :class:`FlowAdjacency` of ``graph`` (cached until the graph changes).

    ``exclude_types`` drops the edges whose :attr:`~kgpath.graph.Edge.type` is listed
    (e.g. ``("cooccurrence",)``, the offline extractor's sentence co-occurrence edges).
    """
    if direction not in _DIRECTIONS:
        raise ConfigError(f"direction must be one of {_DIRECTIONS}, got {short(direction)}")
    key = (direction, tuple(sorted(set(exclude_types))))
    per = _ADJ_CACHE.setdefault(graph, {})
    adj = per.get(key)
    if adj is not None and adj.graph_version == graph.version:
        return adj
    csr = graph.csr()
    n = graph.num_nodes
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(csr["out_indptr"]))
    dst = np.asarray(csr["out_indices"], dtype=np.int64)
    if key[1]:
        drop = set(key[1])
        etypes = [e.type for e in graph.edges]
        types = np.asarray([t in drop for t in etypes], dtype=bool)
        absent = drop - set(etypes)
        if absent:  # documented: excludes nothing (PathRAGConfig.exclude_edge_types)
            logger.info("PathRAG: no edge has type %s; exclude_edge_types ignores it",
                        sorted(absent))
        keep = ~types[np.asarray(csr["out_edges"], dtype=np.int64)]
        src, dst = src[keep], dst[keep]
    built = FlowAdjacency.from_edges(n, src, dst, direction)
    adj = dataclasses.replace(built, graph_version=graph.version)
    per[key] = adj
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


MAX_FLOW_STATES = 20_000_000
"""Bound on ``starts × |V|``, the (start, node) resource states one propagation may hold
(about 40 bytes each across the level logs). Beyond it the configuration is rejected up
front rather than exhausting memory; lower ``num_nodes`` or use a smaller graph."""


def propagate_resources(
    adj: FlowAdjacency,
    start: int | Sequence[int],
    *,
    alpha: float = 0.8,
    theta: float = 0.05,
    max_hops: int | None = None,
    eq3_at_start: bool = True,
) -> Propagation:
    """Eq. (2) resource flow from ``start`` (or from each of several starts) with Eq. (3).

    ``S(start) = 1``. In step ``l`` every node of level ``l - 1`` that is not stopped
    sends ``α · S(v_j) / |N(v_j,·)|`` to each distinct neighbour; a node reached for the
    first time sums what it receives in that step (Eq. 2) and is never updated again.
    A node with ``S(v)/|N(v,·)| < θ`` (Eq. 3) keeps its resource but sends nothing;
    neither does a node without neighbours or at ``max_hops``. With
    ``eq3_at_start=False`` the start always emits (the authors' code never tests it).

    Several starts are propagated side by side, each with its own resources, so one pass
    of about twenty numpy calls per level serves all ``N`` start nodes of a query.
    Each level is three named steps: :func:`_emission` (Eq. 3), :func:`_spread` (the
    terms of Eq. 2) and :func:`_receive` (their sum, each node set at most once).
    """
    n = adj.num_nodes
    starts = _check_starts(start, n)
    k = len(starts)
    if k * n > MAX_FLOW_STATES:
        raise ConfigError(
            f"PathRAG propagation from {k} start node(s) over {n} nodes needs up to {k * n} "
            f"resource states (> MAX_FLOW_STATES = {MAX_FLOW_STATES}); lower num_nodes"
        )
    front = _Frontier(
        slot=np.arange(k, dtype=np.int64),
        node=np.asarray(starts, dtype=np.int64),
        res=np.ones(k),
        state=np.arange(k, dtype=np.int64),
    )
    log = _FlowLog(front)
    seen = np.sort(front.slot * n + front.node)  # keys slot·n + node of every state so far
    depth = 0
    while True:
        at_cap = max_hops is not None and depth >= max_hops
        share, emit, stopped = _emission(adj, front, theta, at_cap, eq3_at_start or depth > 0)
        log.emits.append(emit)
        log.stops.append(stopped)
        if not emit.any():
            break
        received = _receive(seen, *_spread(adj, front, share, emit, alpha))
        if received is None:
            break
        ukey, inv, par, new_res = received
        depth += 1
        front = log.add_level(ukey // n, ukey % n, new_res, depth, par, inv)
        seen = np.sort(np.concatenate([seen, ukey]))  # ukey holds only fresh keys
    return log.build(starts)


def _check_starts(start: int | Sequence[int], n: int) -> list[int]:
    """The start node indices as a list; out-of-range or repeated starts raise."""
    starts = [start] if isinstance(start, (int, np.integer)) else list(start)
    for s in starts:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or not 0 <= s < n:
            raise NodeNotFoundError(f"start node index {s!r} out of range [0, {n})", key=str(s))
    if len(set(starts)) != len(starts):
        raise ConfigError(f"start nodes must be distinct, got {short(starts)}")
    return starts


@dataclass(frozen=True)
class _Frontier:
    """The states of one level: start slot, node index, resource ``S(v)``, state index."""

    slot: np.ndarray
    node: np.ndarray
    res: np.ndarray
    state: np.ndarray


def _emission(
    adj: FlowAdjacency, front: _Frontier, theta: float, at_cap: bool, test: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Eq. (3) on one level: ``(share, emit, stopped)`` per frontier state.

    ``share`` is ``S(v)/|N(v,·)|``; a node is stopped when it has neighbours and its share
    is below ``θ`` (only if ``test``: level 0 skips it unless Eq. 3 applies to the start).
    Sinks (no neighbours) never emit, and nothing emits at ``max_hops``.
    """
    deg = adj.degree[front.node]
    share = front.res / np.maximum(deg, 1)  # S(v)/|N(v,·)|; sinks (degree 0) never emit
    has_nb = deg > 0
    stopped = has_nb & (share < theta) & test  # Eq. (3)
    emit = has_nb & ~stopped
    if at_cap:
        emit = np.zeros_like(emit)
    return share, emit, stopped


def _spread(
    adj: FlowAdjacency, front: _Frontier, share: np.ndarray, emit: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The terms of Eq. (2): one per (emitting state, distinct neighbour).

    Returns ``(key, parent state, α·S(v_j)/|N(v_j,·)|)`` where ``key = slot·n + neighbour``.
    """
    n = adj.num_nodes
    cnt = adj.degree[front.node][emit]
    total = int(cnt.sum())
    offs = np.repeat(adj.indptr[front.node[emit]] - np.cumsum(cnt) + cnt, cnt)
    nb = adj.indices[offs + np.arange(total)]
    e_slot = np.repeat(front.slot[emit], cnt)
    par = np.repeat(front.state[emit], cnt)
    contrib = np.repeat(alpha * share[emit], cnt)  # Eq. (2) term α·S(v_j)/|N(v_j,·)|
    return e_slot * n + nb, par, contrib


def _receive(
    seen: np.ndarray, key: np.ndarray, par: np.ndarray, contrib: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Sum the Eq. (2) terms per node reached for the first time; ``None`` if none is new.

    Returns ``(unique keys, inverse map of the kept terms, their parent states, S(v))``.
    Terms reaching an already-set state are dropped: each resource is set at most once.
    """
    at = np.minimum(np.searchsorted(seen, key), seen.size - 1)
    fresh = seen[at] != key  # each node's resource is set at most once
    if not fresh.any():
        return None
    key, par, contrib = key[fresh], par[fresh], contrib[fresh]
    ukey, inv = np.unique(key, return_inverse=True)
    new_res = np.bincount(inv, weights=contrib, minlength=ukey.size)  # Eq. (2) sum
    return ukey, inv, par, new_res


class _FlowLog:
    """Per-level arrays of a propagation, concatenated into a :class:`Propagation` at the end."""

    def __init__(self, front: _Frontier) -> None:
        self.count = int(front.slot.size)
        self.slots: list[np.ndarray] = [front.slot]
        self.nodes: list[np.ndarray] = [front.node]
        self.levels: list[np.ndarray] = [np.zeros(self.count, np.int64)]
        self.res: list[np.ndarray] = [front.res]
        self.emits: list[np.ndarray] = []
        self.stops: list[np.ndarray] = []
        self.fsrc: list[np.ndarray] = []
        self.fdst: list[np.ndarray] = []
        self.fptr = [0]

    def add_level(
        self,
        slot: np.ndarray,
        node: np.ndarray,
        res: np.ndarray,
        depth: int,
        par: np.ndarray,
        inv: np.ndarray,
    ) -> _Frontier:
        """Record the states of level ``depth`` and the flow edges into them."""
        new_state = np.arange(self.count, self.count + slot.size, dtype=np.int64)
        self.count += slot.size
        self.fsrc.append(par)
        self.fdst.append(new_state[inv])
        self.fptr.append(self.fptr[-1] + par.size)
        self.slots.append(slot)
        self.nodes.append(node)
        self.levels.append(np.full(slot.size, depth, dtype=np.int64))
        self.res.append(res)
        return _Frontier(slot, node, res, new_state)

    def build(self, starts: Sequence[int]) -> Propagation:
        """The finished :class:`Propagation`."""
        empty = np.zeros(0, dtype=np.int64)
        return Propagation(
            starts=tuple(int(x) for x in starts),
            slot=np.concatenate(self.slots),
            nodes=np.concatenate(self.nodes),
            level=np.concatenate(self.levels),
            resource=np.concatenate(self.res),
            emitted=np.concatenate(self.emits),
            early_stopped=np.concatenate(self.stops),
            flow_src=np.concatenate(self.fsrc) if self.fsrc else empty,
            flow_dst=np.concatenate(self.fdst) if self.fdst else empty,
            flow_level_ptr=np.asarray(self.fptr, dtype=np.int64),
        )
