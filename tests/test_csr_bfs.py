"""The CSR BFS: its small-frontier Python levels give exactly the vectorised result."""

from __future__ import annotations

import numpy as np
import pytest

from kgpath import KnowledgeGraph
from kgpath.graph import csr as csr_mod


def _graph(n: int, m: int, seed: int) -> KnowledgeGraph:
    rng = np.random.default_rng(seed)
    return KnowledgeGraph.from_arrays([f"n{i}" for i in range(n)], rng.integers(0, n, m),
                                      rng.integers(0, n, m))


def _fields(r: csr_mod.BFSResult) -> list[tuple[str, list[int]]]:
    arrays = (r.nodes, r.dist, r.parent, r.parent_edge, r.parent_pos)
    return [(str(a.dtype), a.tolist()) for a in arrays]


def test_hand_computed_small_graph() -> None:
    # edges: 0:a->b 1:a->c 2:b->d 3:c->d 4:d->a
    g = KnowledgeGraph.from_triples([("a", "r", "b"), ("a", "r", "c"), ("b", "r", "d"),
                                     ("c", "r", "d"), ("d", "r", "a")])
    ia, ib, ic, idd = (g.index_of(x) for x in "abcd")
    r = g.bfs("a", direction="out")
    assert [dt for dt, _ in _fields(r)] == ["int32"] * 5
    assert r.nodes.tolist() == [ia, ib, ic, idd]
    assert r.dist.tolist() == [0, 1, 1, 2]
    assert r.parent.tolist() == [-1, ia, ia, ib]
    assert r.parent_pos.tolist() == [-1, 0, 0, 1]
    assert [g.edge_at(int(e)).source for e in r.parent_edge[1:]] == ["a", "a", "b"]
    back = g.bfs("d", direction="in", max_depth=1)
    assert back.nodes.tolist() == [idd, ib, ic]
    assert back.parent_pos.tolist() == [-1, 0, 0]


@pytest.mark.parametrize("direction", ["out", "in", "both"])
@pytest.mark.parametrize("depth", [0, 1, 2, 3, None])
def test_python_levels_equal_vectorised(monkeypatch: pytest.MonkeyPatch, direction: str,
                                        depth: int | None) -> None:
    for seed, (n, m) in enumerate([(50, 60), (400, 2000), (3000, 9000)]):
        g = _graph(n, m, seed)
        sources = np.random.default_rng(seed + 10).integers(0, n, 8).tolist()
        mixed = [_fields(g.bfs(s, max_depth=depth, direction=direction)) for s in sources]
        monkeypatch.setattr(csr_mod, "SMALL_FRONTIER", 0)
        vec = [_fields(g.bfs(s, max_depth=depth, direction=direction)) for s in sources]
        monkeypatch.setattr(csr_mod, "SMALL_FRONTIER", 10**9)
        py = [_fields(g.bfs(s, max_depth=depth, direction=direction)) for s in sources]
        monkeypatch.undo()
        assert mixed == vec == py


def test_scratch_is_restored() -> None:
    g = _graph(2000, 10000, 3)
    first = [_fields(g.bfs(s, direction="both")) for s in (5, 6)]
    for s in range(0, 2000, 97):
        g.bfs(s, max_depth=3, direction="both")
    assert [_fields(g.bfs(s, direction="both")) for s in (5, 6)] == first
