"""Section 4.2, path pruning, literal reading: Eq. (4) over node resources, the top-K pool.

This is ``reliability="literal_eq4"``; see :mod:`kgpath.methods.pathrag.edgeflow` for the
default, the authors' edge-flow computation, and why the literal reading ranks by hop count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kgpath.errors import ConfigError
from kgpath.methods.pathrag.flow import FlowAdjacency, Propagation, propagate_resources

__all__ = [
    "CandidatePool",
    "PathCandidate",
    "best_paths_from",
    "path_reliability",
    "prune_paths",
]


def path_reliability(resources: Sequence[float]) -> float:
    """Eq. (4): ``S(P) = (1/|E_P|) · Σ_{v ∈ V_P} S(v)`` for the node resources along ``P``.

    ``resources`` lists ``S(v_0), ..., S(v_h)`` (``h + 1`` values for ``h`` edges), summed
    left to right. A path needs at least one edge.
    """
    if len(resources) < 2:
        raise ConfigError(f"a path needs at least one edge, got {len(resources)} node(s)")
    total = 0.0
    for r in resources:
        total += float(r)
    return total / (len(resources) - 1)


@dataclass(frozen=True)
class PathCandidate:
    """A compact candidate path: node indices, their resources, Eq. (4) reliability."""

    nodes: tuple[int, ...]
    resources: tuple[float, ...]
    reliability: float

    @property
    def hops(self) -> int:
        """``|E_P|``."""
        return len(self.nodes) - 1

    @property
    def key(self) -> tuple[float, tuple[int, ...]]:
        """Sort key: most reliable first, ties by node-index sequence."""
        return (-self.reliability, self.nodes)


def best_paths_from(
    prop: Propagation, targets: Sequence[int] | np.ndarray, m: int = 1
) -> list[PathCandidate]:
    """Find the ``m`` most reliable flow paths from each start of ``prop`` to each target.

    ``targets`` are node indices or a boolean mask over all node indices; a start is never
    its own target. All flow-DAG paths from a start to a target have ``level(target)``
    edges, so Eq. (4) ranks them by their resource sum; dynamic programming over the
    levels finds the best ``m`` exactly, breaking ties by the lexicographic order of the
    node sequence. Output: per (start, reached target) state in state order, best first.
    """
    nodes, res = prop.nodes, prop.resource
    if isinstance(targets, np.ndarray) and targets.dtype == bool:
        hit = targets[nodes]
    else:
        hit = np.isin(nodes, np.asarray(list(targets), dtype=np.int64))
    hit &= prop.level > 0
    tstates = np.flatnonzero(hit).tolist()
    if not tstates:
        return []
    out: list[PathCandidate] = []
    if m == 1:
        pred = _best_predecessors(prop).tolist()
        for p in tstates:
            seq = [p]
            while pred[seq[-1]] >= 0:
                seq.append(pred[seq[-1]])
            seq.reverse()
            out.append(_candidate(nodes, res, seq))
        return out
    tops = _m_best(prop, m)
    for p in tstates:
        for states in tops[p]:
            out.append(_candidate(nodes, res, list(states)))
    return out


def _candidate(nodes: np.ndarray, res: np.ndarray, states: list[int]) -> PathCandidate:
    r = tuple(res[states].tolist())
    return PathCandidate(tuple(nodes[states].tolist()), r, path_reliability(r))


def _best_predecessors(prop: Propagation) -> np.ndarray:
    """Vectorised single-best DP: for each state, the predecessor state on its best path.

    ``best[v] = S(v) + max_u best[u]`` over flow edges ``u -> v``; among equal sums the
    predecessor whose best prefix is lexicographically smallest wins. ``lexrank`` ranks
    the best prefixes of one level by (start slot, predecessor's rank, node index).
    """
    size = prop.nodes.size
    best = prop.resource.copy()
    pred = np.full(size, -1, dtype=np.int64)
    lexrank = np.zeros(size, dtype=np.int64)
    ptr = prop.flow_level_ptr
    for lo, hi in zip(ptr[:-1].tolist(), ptr[1:].tolist(), strict=False):
        src, dst = prop.flow_src[lo:hi], prop.flow_dst[lo:hi]
        val = best[src] + prop.resource[dst]
        order = np.lexsort((lexrank[src], -val, dst))
        ds = dst[order]
        first = np.ones(ds.size, dtype=bool)
        first[1:] = ds[1:] != ds[:-1]
        chosen = order[first]
        dn = dst[chosen]
        best[dn] = val[chosen]
        pred[dn] = src[chosen]
        o2 = np.lexsort((prop.nodes[dn], lexrank[src[chosen]], prop.slot[dn]))
        lexrank[dn[o2]] = np.arange(dn.size)
    return pred


def _m_best(prop: Propagation, m: int) -> list[list[tuple[int, ...]]]:
    """``m``-best DP (Python): top-``m`` state sequences per state, best first."""
    size = prop.nodes.size
    nodes, res = prop.nodes.tolist(), prop.resource.tolist()
    tops: list[list[tuple[float, tuple[int, ...], tuple[int, ...]]]] = [
        [(res[i], (nodes[i],), (i,))] if lvl == 0 else []
        for i, lvl in enumerate(prop.level.tolist())
    ]
    ptr = prop.flow_level_ptr.tolist()
    src_all, dst_all = prop.flow_src.tolist(), prop.flow_dst.tolist()
    for lo, hi in zip(ptr[:-1], ptr[1:], strict=False):
        cand: dict[int, list[tuple[float, tuple[int, ...], tuple[int, ...]]]] = {}
        for s, d in zip(src_all[lo:hi], dst_all[lo:hi], strict=False):
            lst = cand.setdefault(d, [])
            for total, seq, sseq in tops[s]:
                lst.append((total + res[d], seq + (nodes[d],), sseq + (d,)))
        for d, lst in cand.items():
            lst.sort(key=lambda t: (-t[0], t[1]))
            tops[d] = lst[:m]
    assert len(tops) == size
    return [[p for _, _, p in t] for t in tops]


class CandidatePool(Sequence[PathCandidate]):
    """All candidate paths after per-pair pruning, most reliable first (ties by sequence)."""

    def __init__(self, candidates: list[PathCandidate], stats: dict[str, Any]) -> None:
        self._c = candidates
        self.stats = stats

    def __len__(self) -> int:
        return len(self._c)

    def __getitem__(self, i: Any) -> Any:
        return self._c[i]

    def top(self, k: int) -> list[PathCandidate]:
        """Return the ``k`` most reliable candidates (all of them if fewer)."""
        return self._c[:k]


def prune_paths(
    adj: FlowAdjacency,
    nodes: Sequence[int] | np.ndarray,
    *,
    alpha: float = 0.8,
    theta: float = 0.05,
    paths_per_pair: int = 1,
    max_hops: int | None = None,
    eq3_at_start: bool = True,
) -> CandidatePool:
    """Section 4.2 for all ordered pairs of ``nodes``: the ranked candidate pool.

    One propagation per start node (Eqs. 2-3; all starts in one batched pass) serves all
    its end nodes; each ordered pair contributes its ``paths_per_pair`` most reliable flow
    paths (Eq. 4). In undirected mode a path whose exact reverse is also a candidate is
    kept once, in its more reliable orientation. The pool is sorted by reliability
    (descending), ties by the node-index sequence. ``eq3_at_start`` is passed to
    :func:`propagate_resources`. This is ``reliability="literal_eq4"``; the default
    ``"edge_flow"`` is :func:`kgpath.methods.pathrag.edgeflow.edge_flow_pool`.
    """
    starts = list(dict.fromkeys(int(x) for x in nodes))
    if not starts:
        return CandidatePool([], _pool_stats(0, 0, 0, 0, []))
    prop = propagate_resources(
        adj, starts, alpha=alpha, theta=theta, max_hops=max_hops, eq3_at_start=eq3_at_start
    )
    is_target = np.zeros(adj.num_nodes, dtype=bool)
    is_target[starts] = True
    cands = best_paths_from(prop, is_target, paths_per_pair)
    pairs_with_path = len({(c.nodes[0], c.nodes[-1]) for c in cands})
    deduped = 0
    if adj.direction == "undirected" and cands:
        cands, deduped = _drop_reverse_duplicates(cands)
    cands.sort(key=lambda c: c.key)
    stats = _pool_stats(
        len(starts), pairs_with_path, len(cands), deduped, _propagation_stats(prop, starts)
    )
    return CandidatePool(cands, stats)


def _pool_stats(
    k: int, pairs_with_path: int, pool_size: int, deduped: int, per_start: list[dict[str, int]]
) -> dict[str, Any]:
    """The pool's ``stats`` (copied into the result's trace)."""
    return {
        "retrieved_nodes": k,
        "ordered_pairs": k * (k - 1),
        "pairs_with_path": pairs_with_path,
        "pool_size": pool_size,
        "reverse_duplicates_removed": deduped,
        "propagations": per_start,
    }


def _propagation_stats(prop: Propagation, starts: Sequence[int]) -> list[dict[str, int]]:
    """Per start node: states reached, emitting, stopped by Eq. (3), and the deepest level."""
    k = len(starts)
    reached = np.bincount(prop.slot, minlength=k)
    emitted = np.bincount(prop.slot, weights=prop.emitted, minlength=k)
    stopped = np.bincount(prop.slot, weights=prop.early_stopped, minlength=k)
    depth = np.zeros(k, dtype=np.int64)
    np.maximum.at(depth, prop.slot, prop.level)
    return [
        {
            "start": s,
            "reached": int(r),
            "emitted": int(e),
            "early_stopped": int(x),
            "max_level": int(d),
        }
        for s, r, e, x, d in zip(starts, reached, emitted, stopped, depth, strict=False)
    ]


def _drop_reverse_duplicates(
    cands: list[PathCandidate],
) -> tuple[list[PathCandidate], int]:
    """Undirected mode: keep one orientation of a path and its exact reverse (the better key).

    Returns the kept candidates (first-seen order of their canonical form) and how many
    were removed.
    """
    best: dict[tuple[int, ...], PathCandidate] = {}
    for c in cands:
        canon = min(c.nodes, c.nodes[::-1])
        old = best.get(canon)
        if old is None or c.key < old.key:
            best[canon] = c
    return list(best.values()), len(cands) - len(best)
