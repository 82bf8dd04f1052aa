"""PCR's search steps (section 3.3): Eq. (1) reachability, Eq. (2) constrained search.

Written over a :class:`~kgpath.backends.base.GraphBackend`. Several anchors (kgpath: the
entities a question names) give the union of their reachable sets; each node keeps the
path from its nearest anchor (ties: the anchor named first, then BFS order), see
:func:`merge_regions`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from kgpath.backends.base import BFSTree, GraphBackend, VectorSearch
from kgpath.graph import BFSResult, Direction, KnowledgeGraph
from kgpath.index.graph_index import GraphIndex
from kgpath.index.hybrid import hybrid_scores
from kgpath.methods.pcr.config import PCRConfig, SearchMode
from kgpath.methods.pcr.result import PCRHit
from kgpath.search.vector import top_k

__all__ = [
    "Region",
    "constrained_search",
    "make_hits",
    "merge_regions",
    "node_scores",
    "reachable_candidates",
    "take",
]


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


def take(keys: Sequence[Any] | np.ndarray, idx: np.ndarray) -> Sequence[Any] | np.ndarray:
    """``keys[idx]`` for an array of node indices or a list of backend keys."""
    if isinstance(keys, np.ndarray):
        return keys[idx]
    return [keys[int(i)] for i in idx]


@dataclass(frozen=True)
class Region:
    """``C_reachable`` of one or several anchors, in search order.

    ``keys[i]`` was reached from ``trees[tree_of[i]]`` at position ``pos[i]``, ``dist[i]``
    hops from that anchor. Order: distance, then anchor order, then BFS order (one anchor:
    the tree's own BFS order, the anchor first).
    """

    trees: tuple[BFSTree[Any], ...]
    keys: Sequence[Any] | np.ndarray
    tree_of: np.ndarray
    pos: np.ndarray
    dist: np.ndarray

    def __len__(self) -> int:
        return len(self.keys)


def merge_regions(trees: Sequence[BFSTree[Any]]) -> Region:
    """The union of the anchors' reachable sets, each node from its nearest anchor."""
    if len(trees) == 1:
        t = trees[0]
        n = len(t.nodes)
        return Region((t,), t.nodes, np.zeros(n, np.int64), np.arange(n, dtype=np.int64),
                      np.asarray(t.dist))
    ti = np.concatenate([np.full(len(t.nodes), i, np.int64) for i, t in enumerate(trees)])
    pos = np.concatenate([np.arange(len(t.nodes), dtype=np.int64) for t in trees])
    dist = np.concatenate([np.asarray(t.dist, np.int64) for t in trees])
    order = np.lexsort((pos, ti, dist))
    if all(isinstance(t.nodes, np.ndarray) for t in trees):
        keys = np.concatenate([np.asarray(t.nodes) for t in trees])[order]
        _, first = np.unique(keys, return_index=True)
        keep = order[np.sort(first)]
    else:
        seen: set[Any] = set()
        kept: list[int] = []
        for j in order:
            key = trees[int(ti[j])].nodes[int(pos[j])]
            if key not in seen:
                seen.add(key)
                kept.append(int(j))
        keep = np.asarray(kept, np.int64)
    keys_out: Sequence[Any] | np.ndarray
    if all(isinstance(t.nodes, np.ndarray) for t in trees):
        keys_out = np.concatenate([np.asarray(t.nodes) for t in trees])[keep]
    else:
        keys_out = [trees[int(ti[j])].nodes[int(pos[j])] for j in keep]
    return Region(tuple(trees), keys_out, ti[keep], pos[keep], dist[keep])


def node_scores(
    b: GraphBackend[Any, Any], query: str, qv: np.ndarray, keys: Sequence[Any] | np.ndarray,
    cfg: PCRConfig,
) -> np.ndarray:
    """Eq. (2)'s ``sim(q, v)``, or section 3.4's hybrid scaled by ``cfg.hybrid_norm``.

    Through the backend's :class:`~kgpath.backends.base.VectorSearch` capability.
    """
    vs: VectorSearch[Any] = b.capability(VectorSearch)
    if cfg.mode == "hybrid" and cfg.hybrid_norm != "max":
        cos = vs.score(query, qv, keys, mode="vector", alpha=1.0)
        bm = vs.score(query, qv, keys, mode="bm25", alpha=0.0)
        return hybrid_scores(cos, bm, cfg.alpha, norm=cfg.hybrid_norm)
    return vs.score(query, qv, keys, mode=cfg.mode, alpha=cfg.alpha)


def global_fallback(
    b: GraphBackend[Any, Any], anchor: Any, query: str, qv: np.ndarray, cfg: PCRConfig,
) -> tuple[Sequence[Any] | np.ndarray, np.ndarray, int]:
    """Section 3.5: top-k of all nodes (recorded in the result as a fallback).

    With ``hybrid_norm`` other than ``"max"`` every node is re-scored (ties by vector rank).
    """
    exclude = None if cfg.include_anchor else anchor
    vs: VectorSearch[Any] = b.capability(VectorSearch)
    if cfg.mode == "hybrid" and cfg.hybrid_norm != "max":
        keys, _, scored = vs.global_top(query, qv, b.node_count(), mode="vector",
                                        alpha=1.0, exclude=exclude)
        sc = node_scores(b, query, qv, keys, cfg)
        pos = top_k(sc, min(cfg.k, len(keys)))
        return take(keys, pos), sc[pos], scored
    return vs.global_top(query, qv, cfg.k, mode=cfg.mode, alpha=cfg.alpha, exclude=exclude)


def make_hit(
    b: GraphBackend[Any, Any], tree: BFSTree[Any] | None, key: Any, pos: int, score: float,
    node_score: float | None = None, path_score: float | None = None,
) -> PCRHit:
    """A hit with its shortest path (BFS parent pointers back to its anchor).

    The path and its edges are resolved on first read (``b.path(tree, pos)``), see
    :class:`PCRHit`.
    """
    if tree is None or pos < 0:
        return PCRHit(node=b.node(key), score=score, hops=None, path=(),
                      node_score=node_score, path_score=path_score)
    return PCRHit.lazy(b.node(key), score, int(tree.dist[pos]), partial(b.path, tree, pos),
                       node_score, path_score)


def make_hits(
    b: GraphBackend[Any, Any], region: Region, sel: np.ndarray, scores: np.ndarray,
    node_score: np.ndarray | None = None, path_score: np.ndarray | None = None,
) -> list[PCRHit]:
    """:func:`make_hit` for the region entries ``sel`` (the top-k), best first.

    Converts each array once (``tolist``) instead of reading numpy scalars per hit; the
    values are the same (``float32.tolist()`` gives the floats ``float()`` gives).
    """
    keys = take(region.keys, sel)
    keys = keys.tolist() if isinstance(keys, np.ndarray) else keys
    trees = [region.trees[t] for t in region.tree_of[sel].tolist()]
    extra = [None if a is None else a.tolist() for a in (node_score, path_score)]
    return [
        PCRHit.lazy(b.node(key), sc, hops, partial(b.path, tree, p),
                    None if extra[0] is None else extra[0][i],
                    None if extra[1] is None else extra[1][i])
        for i, (key, tree, p, hops, sc) in enumerate(zip(
            keys, trees, region.pos[sel].tolist(), region.dist[sel].tolist(),
            scores.tolist()))
    ]
