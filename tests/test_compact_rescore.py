"""The "int8+float16" store: int8 in memory, exact float16 re-scoring of a short list."""

from __future__ import annotations

import numpy as np
import pytest

from kgpath import ConfigError, HashingEmbedder, KnowledgeGraph
from kgpath.index import GraphIndex
from kgpath.methods.pcr import PathConstrainedRetriever
from kgpath.search.rescore import Float16File, rescore
from kgpath.search.vector import CompactVectorIndex


def unit_rows(n: int, d: int, seed: int = 0) -> np.ndarray:
    m = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_rescore_short_list_by_hand():
    # q = (1, 0): sum|q| = 1; scale 0.01 -> bound = 0.01 * (0.5 + 127/2048) + 1e-4
    #   = 0.0057201; top 1: tau = 0.5 - bound = 0.49428; upper bounds 0.50572, 0.50072,
    #   0.10572 -> rows 0 and 1 are re-scored, row 2 keeps its int8 score.
    asked = []

    def exact(rows):
        asked.append(rows.tolist())
        return np.array([0.49, 0.497], dtype=np.float32)[: rows.size]

    out = rescore(np.array([10, 11, 12]), np.array([0.5, 0.495, 0.1], np.float32),
                  np.full(3, 0.01, np.float32), np.array([1.0, 0.0], np.float32), exact, 1)
    assert asked == [[10, 11]]
    np.testing.assert_allclose(out, [0.49, 0.497, 0.1])


def test_float16_file_round_trip_runs_and_grow():
    f = Float16File(4, 3)
    f.put([3, 0, 1], np.array([[1, 2, 3], [0.5, 0, -1], [7, 8, 9]], np.float32))
    np.testing.assert_array_equal(f.read(np.arange(4)),
                                  [[0.5, 0, -1], [7, 8, 9], [0, 0, 0], [1, 2, 3]])
    f.grow(6)
    f.put([5], np.array([[0.1, 0.2, 0.3]], np.float32))
    np.testing.assert_array_equal(f.read(np.array([5, 4])),
                                  np.array([[0.1, 0.2, 0.3], [0, 0, 0]], np.float16))
    assert f.file_bytes == 6 * 3 * 2
    with pytest.raises(ConfigError, match="out of range"):
        f.read(np.array([6]))
    f.close()


def test_int8_float16_ranks_as_float16_with_int8_memory():
    m = unit_rows(3000, 384)
    q = unit_rows(1, 384, seed=5)[0]
    half = CompactVectorIndex(m, kind="float16")
    mixed = CompactVectorIndex(m, kind="int8+float16", rescore_top=20)
    assert mixed.nbytes == 3000 * 384 + 3000 * 4 and mixed.file_bytes == 3000 * 384 * 2
    np.testing.assert_array_equal(mixed.vectors, half.vectors)  # decoded from the file
    cand = np.random.default_rng(6).choice(3000, 900, replace=False)
    want, got = half.scores(q, cand), mixed.scores(q, cand)
    top_w, top_g = np.argsort(-want, kind="stable")[:20], np.argsort(-got, kind="stable")[:20]
    assert top_g.tolist() == top_w.tolist()
    np.testing.assert_allclose(got[top_g], want[top_w], atol=1e-6)
    for c in (cand, None):
        rows_h, s_h = half.search(q, 30, c)  # k above rescore_top: k rows guaranteed
        rows_m, s_m = mixed.search(q, 30, c)
        assert rows_m.tolist() == rows_h.tolist()
        np.testing.assert_allclose(s_m, s_h, atol=1e-6)


def test_graph_index_int8_float16_pcr_equals_float16():
    g = KnowledgeGraph()
    for i in range(40):
        g.add_node(f"n{i}", text=f"node {i} about topic {i % 5} and {i % 7}")
    for i in range(39):
        g.add_edge(f"n{i}", f"n{i + 1}", relation="next")
        g.add_edge(f"n{i}", f"n{(i * 7) % 40}", relation="jump")
    out = {}
    for kind in ("float16", "int8+float16"):
        pcr = PathConstrainedRetriever(GraphIndex(g, HashingEmbedder(64), vectors=kind))
        out[kind] = pcr.retrieve("topic 3 and 2", anchor="n0", k=5, max_depth=3).ids
    assert out["int8+float16"] == out["float16"]


def test_unknown_kind_names_the_kinds():
    with pytest.raises(ConfigError, match="int8\\+float16"):
        GraphIndex(KnowledgeGraph(), HashingEmbedder(8), vectors="int4")


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "8"])
def test_rescore_top_must_be_a_positive_int(bad):
    # 0 or a negative count used to fail on the first query, inside np.partition
    with pytest.raises(ConfigError, match=r"rescore_top must be a positive int, got"):
        CompactVectorIndex(np.eye(4, dtype=np.float32), kind="int8+float16", rescore_top=bad)
    store = CompactVectorIndex(np.eye(4, dtype=np.float32), kind="int8+float16", rescore_top=1)
    assert store.scores(np.eye(4, dtype=np.float32)[2]).tolist() == [0.0, 0.0, 1.0, 0.0]
