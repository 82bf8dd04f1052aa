"""PathRAG's bounded path enumeration (``edgeflow.bounded_simple_paths``) against a brute force.

The DFS visits only the neighbours within reach of a target (``_PathWalker.near``); the
paths it records, and their order, must equal the plain definition: every simple path of at
most ``max_hops`` hops between two distinct retrieved nodes, found by a DFS over every
neighbour in node-index order.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kgpath.methods.pathrag.edgeflow import FlowAdjacency, bounded_simple_paths


def brute(indptr, indices, starts, max_hops):
    targets, out = set(starts), {}

    def dfs(path):
        if len(path) - 1 == max_hops:
            return
        v = path[-1]
        for w in sorted(indices[indptr[v]:indptr[v + 1]].tolist()):
            if w in path:
                continue
            path.append(w)
            if w in targets:
                out.setdefault((path[0], w), []).append(tuple(path))
            dfs(path)
            path.pop()

    for s in starts:
        dfs([s])
    return out


@st.composite
def graphs(draw):
    n = draw(st.integers(2, 9))
    pairs = draw(st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=24))
    nbrs = {v: set() for v in range(n)}
    for a, b in pairs:
        if a != b:
            nbrs[a].add(b)
            nbrs[b].add(a)
    indptr = np.zeros(n + 1, np.int64)
    indptr[1:] = np.cumsum([len(nbrs[v]) for v in range(n)])
    indices = np.array([w for v in range(n) for w in sorted(nbrs[v])], np.int64)
    starts = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
    return indptr, indices, starts, draw(st.integers(1, 4))


@settings(max_examples=300, deadline=None)
@given(graphs())
def test_bounded_paths_equal_the_brute_force(case):
    indptr, indices, starts, hops = case
    adj = FlowAdjacency(indptr=indptr, indices=indices, degree=np.diff(indptr),
                        direction="undirected")
    assert bounded_simple_paths(adj, starts, hops) == brute(indptr, indices, starts, hops)
