"""Section 4.2 as the authors' code computes it: bounded simple paths and edge-flow reliability.

The paper's Eq. (4) reads ``S(P) = (1/|E_P|) · Σ_{v ∈ V_P} S(v)``, a sum over the path's
*nodes* of one flow from the start over the whole graph. Read literally (kept as
``reliability="literal_eq4"``) every 1-hop path scores ``1 + α/deg ≥ 1`` while no longer path
passes about 1.2, so the ranking is the hop-first ablation the paper's Table 2 beats. The
authors' released code (``BUPT-GAMMA/PathRAG``, ``PathRAG/operate.py``) computes instead:

1. :func:`bounded_simple_paths` — ``find_paths_and_edges_with_stats``: for every ordered pair
   of retrieved nodes, a depth-first search lists every simple path of at most 3 hops
   (``if depth > 3: return``) on an undirected ``nx.Graph`` built in
   ``_find_most_related_edges_from_entities3``.
2. :func:`edge_flow_reliability` — ``bfs_weighted_paths``: within the pair's own path
   subgraph (``follow_dict``: each node's successors on those paths) the start sends
   ``1/|follow(start)|`` along each of its edges (Eq. 2 without α on the first hop, and no
   Eq. (3) test at the start); a node whose incoming edge carries more than ``threshold``
   (0.3 in the code) sends ``flow · α / |follow(node)|`` along each of its edges; flows
   reaching an edge by several routes add up; the target never forwards. A path's
   reliability is the *mean flow over its edges* (edges that received nothing count 0).
3. :func:`edge_flow_pool` — the same function's tail: all pairs' paths sorted by reliability
   (descending, stable), then deduplicated by their *node set* (``tuple(sorted(edge))`` over
   the path's node names), the first ``K = 15`` kept.

Deterministic order where the authors' code has none: the DFS visits neighbours and
``follow_dict`` is iterated in node-index order (the authors iterate ``nx.Graph`` insertion
order and Python sets of node names, whose order changes with ``PYTHONHASHSEED``). The
order only matters when an edge receives flow by two routes before its threshold test, and
for ties. The code's cap ``min(15, Σ_h ⌊n_h/2⌋)`` (``n_h`` = ordered-pair paths of ``h``
hops) never binds in undirected mode, because every node set counted once is a path counted
twice, so it is not reproduced.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kgpath.methods.pathrag.flow import FlowAdjacency
from kgpath.methods.pathrag.paths import CandidatePool, PathCandidate

__all__ = ["bounded_simple_paths", "edge_flow_pool", "edge_flow_reliability"]

Path = tuple[int, ...]


def _distance_to(adj: FlowAdjacency, targets: Sequence[int], limit: int) -> dict[int, int]:
    """Hop distance (``≤ limit``) from every node to the nearest target, by reverse BFS.

    Used only to prune DFS branches that cannot reach a target within ``max_hops``; it
    changes neither which paths are found nor their order. In directed mode the BFS runs
    on the reversed edges.
    """
    if adj.direction == "undirected":
        rev_ptr, rev_idx = adj.indptr, adj.indices
    else:
        rev = FlowAdjacency.from_edges(
            adj.num_nodes,
            adj.indices,
            np.repeat(np.arange(adj.num_nodes), adj.degree),
            "directed",
        )
        rev_ptr, rev_idx = rev.indptr, rev.indices
    dist = {int(t): 0 for t in targets}
    front = list(dist)
    for d in range(1, limit + 1):
        nxt = []
        for v in front:
            for u in rev_idx[rev_ptr[v] : rev_ptr[v + 1]].tolist():
                if u not in dist:
                    dist[u] = d
                    nxt.append(u)
        front = nxt
    return dist


MAX_ENUMERATED_PATHS = 200_000
"""Bound on the simple paths one query enumerates (bounded work on hub-heavy graphs, where
the number of 3-hop paths between 40 nodes grows with the hubs' degrees). The authors'
code has no bound; when it is hit the enumeration stops (DFS order, so the pairs visited
first keep all their paths) and the pool's stats say ``"truncated": True``."""


def bounded_simple_paths(
    adj: FlowAdjacency, nodes: Sequence[int], max_hops: int = 3, *,
    max_paths: int = MAX_ENUMERATED_PATHS,
) -> dict[tuple[int, int], list[Path]]:
    """Every simple path of ``1..max_hops`` hops between each ordered pair of ``nodes``.

    ``find_paths_and_edges_with_stats`` (authors' code) runs one DFS per ordered pair
    ``(s, t)``, stops at ``t`` and never revisits a node of the current path. One DFS per
    start recording every target it meets (and continuing through it, since a path to another
    target may pass there) yields the same paths in the same per-pair order. Neighbours are
    visited in node-index order. Returns ``{(s, t): [paths in DFS order]}`` for the pairs with
    at least one path.
    """
    starts = list(dict.fromkeys(int(x) for x in nodes))
    walker = _PathWalker(adj, starts, max_hops, max_paths)
    for s in starts:
        if walker.count >= max_paths:
            break
        walker.walk(s)
    return walker.out


class _PathWalker:
    """The DFS of :func:`bounded_simple_paths`, one start at a time (state kept explicit)."""

    def __init__(self, adj: FlowAdjacency, starts: list[int], max_hops: int,
                 max_paths: int = MAX_ENUMERATED_PATHS) -> None:
        self.adj, self.max_hops = adj, max_hops
        self.max_paths, self.count = max_paths, 0
        self.dist = _distance_to(adj, starts, max_hops)
        self.targets = set(starts)
        self.near_cache: dict[tuple[int, int], list[int]] = {}
        self.out: dict[tuple[int, int], list[Path]] = {}
        self.path: list[int] = []
        self.on_path: set[int] = set()

    def near(self, v: int, room: int) -> list[int]:
        """Neighbours of ``v`` within ``room`` hops of a target, in node-index order (cached).

        The DFS skips every other neighbour anyway; filtering once per ``(v, room)`` makes
        a hub's visit cost its useful neighbours, not its degree (same paths, same order).
        """
        key = (v, room)
        got = self.near_cache.get(key)
        if got is None:
            dist, ptr = self.dist, self.adj.indptr
            got = self.near_cache[key] = [w for w in self.adj.indices[ptr[v]:ptr[v + 1]].tolist()
                                          if dist.get(w, room + 1) <= room]
        return got

    def walk(self, s: int) -> None:
        """Record every simple path from ``s`` of at most ``max_hops`` hops ending at a target."""
        self.path, self.on_path = [s], {s}
        self._dfs(s, 0)

    def _dfs(self, v: int, depth: int) -> None:
        room = self.max_hops - depth - 1  # hops left after stepping to w
        for w in self.near(v, room):
            if self.count >= self.max_paths:
                return  # bounded work (MAX_ENUMERATED_PATHS)
            if w in self.on_path:
                continue  # revisits
            self.path.append(w)
            if w in self.targets:
                self.out.setdefault((self.path[0], w), []).append(tuple(self.path))
                self.count += 1
            if room > 0:
                self.on_path.add(w)
                self._dfs(w, depth + 1)
                self.on_path.discard(w)
            self.path.pop()


def edge_flow_reliability(
    paths: Sequence[Path], alpha: float = 0.8, threshold: float = 0.3, max_hops: int = 3
) -> list[tuple[float, ...]]:
    """Edge flows of each path of one pair (``bfs_weighted_paths`` in the authors' code).

    ``paths`` all run from the same start to the same target. ``follow[v]`` is the set of
    successors of ``v`` on these paths (the pair's path subgraph). The start sends
    ``1/|follow(start)|`` along each of its edges; a node ``v`` reached along ``(u, v)``,
    not the target, below ``max_hops`` and with ``flow(u, v) > threshold`` (the code's form
    of Eq. 3, applied to the edge's flow and never to the start) sends
    ``flow(u, v) · α / |follow(v)|`` along each edge ``(v, w)`` (Eq. 2's decayed, evenly
    split share); flows add up over routes. Returns, per path, its edge flows
    ``(f_1, ..., f_h)`` (``0.0`` for an edge no flow reached); the reliability is their
    mean, see :func:`_mean`.
    """
    follow: dict[int, list[int]] = {}
    for p in paths:
        for u, v in zip(p, p[1:], strict=False):
            lst = follow.setdefault(u, [])
            if v not in lst:
                lst.append(v)
    for lst in follow.values():
        lst.sort()
    if not paths:
        return []
    source, target = paths[0][0], paths[0][-1]
    flow: dict[tuple[int, int], float] = {}

    def visit(u: int, v: int, depth: int) -> None:
        if v == target or depth >= max_hops or flow[(u, v)] <= threshold:
            return
        succ = follow[v]
        for w in succ:
            flow[(v, w)] = flow.get((v, w), 0.0) + flow[(u, v)] * alpha / len(succ)
            visit(v, w, depth + 1)

    first = follow[source]
    for v in first:
        flow[(source, v)] = flow.get((source, v), 0.0) + 1 / len(first)
        visit(source, v, 1)
    return [tuple(flow.get(e, 0.0) for e in zip(p, p[1:], strict=False)) for p in paths]


def _mean(flows: tuple[float, ...]) -> float:
    """Reliability: the mean flow over the path's edges, summed left to right as the code does."""
    total = 0.0
    for f in flows:
        total += f
    return total / len(flows)


def edge_flow_pool(
    adj: FlowAdjacency,
    nodes: Sequence[int] | np.ndarray,
    *,
    alpha: float = 0.8,
    threshold: float = 0.3,
    max_hops: int = 3,
) -> CandidatePool:
    """Section 4.2 as the authors compute it: the ranked, node-set-deduplicated pool.

    Pairs are visited in the order of ``nodes`` (``for node1 ... for node2``), each pair's
    paths in DFS order; the pool is sorted by reliability, most reliable first, stable (so
    ties keep that order), then a path whose node set was already taken is dropped
    (``_find_most_related_edges_from_entities3``). Each :class:`PathCandidate` carries
    ``resources = (1.0, f_1, ..., f_h)``: the unit at the start, then the flow along each
    edge, i.e. the resource each node received along the path.
    """
    starts = list(dict.fromkeys(int(x) for x in nodes))
    per_pair = bounded_simple_paths(adj, starts, max_hops)
    truncated = sum(len(v) for v in per_pair.values()) >= MAX_ENUMERATED_PATHS
    scored: list[PathCandidate] = []
    by_hops = [0] * (max_hops + 1)
    for s in starts:
        for t in starts:
            paths = per_pair.get((s, t))
            if s == t or not paths:
                continue
            for p, flows in zip(paths, edge_flow_reliability(paths, alpha, threshold, max_hops),
                                strict=True):
                scored.append(PathCandidate(p, (1.0, *flows), _mean(flows)))
                by_hops[len(p) - 1] += 1
    scored.sort(key=lambda c: -c.reliability)  # stable: ties keep pair/DFS order
    seen: set[frozenset[int]] = set()
    kept: list[PathCandidate] = []
    for c in scored:
        key = frozenset(c.nodes)
        if key not in seen:
            seen.add(key)
            kept.append(c)
    stats: dict[str, Any] = {
        "retrieved_nodes": len(starts),
        "ordered_pairs": len(starts) * (len(starts) - 1),
        "pairs_with_path": len(per_pair),
        "candidate_paths": len(scored),
        "paths_by_hops": {h: by_hops[h] for h in range(1, max_hops + 1)},
        "pool_size": len(kept),
        "node_set_duplicates_removed": len(scored) - len(kept),
        "truncated": truncated,
    }
    return CandidatePool(kept, stats)
