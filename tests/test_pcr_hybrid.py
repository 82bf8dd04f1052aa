"""Hybrid normalisation modes (``hybrid_norm``), hand-computed."""

from __future__ import annotations

import numpy as np
import pytest

from kgpath import ConfigError, GraphIndex, KnowledgeGraph, PathConstrainedRetriever
from kgpath.index.hybrid import hybrid_scores, minmax


def test_three_normalisations_hand_computed():
    cos, bm = np.array([0.5, 0.2, 0.3]), np.array([2.0, 0.0, 1.0])
    # max: bm/2 = [1, 0, .5]
    assert hybrid_scores(cos, bm, 0.7).tolist() == pytest.approx([0.65, 0.14, 0.36])
    # raw (paper section 3.4 as printed)
    assert hybrid_scores(cos, bm, 0.7, norm="raw").tolist() == pytest.approx([0.95, 0.14, 0.51])
    # minmax: cos -> [1, 0, 1/3], bm -> [1, 0, .5]
    assert hybrid_scores(cos, bm, 0.7, norm="minmax").tolist() == pytest.approx(
        [1.0, 0.0, 0.7 / 3 + 0.15])
    assert minmax(np.array([2.0, 2.0])).tolist() == [0.0, 0.0]
    with pytest.raises(ConfigError, match="norm"):
        hybrid_scores(cos, bm, norm="zscore")


def test_pcr_hybrid_norm_uses_the_reachable_set(table_embedder):
    g = KnowledgeGraph()
    texts = {"a": "anchor", "b": "radium radium polonium", "c": "polonium"}
    for nid, text in texts.items():
        g.add_node(nid, name=nid, text=text)
    g.add_edge("a", "b", relation="r")
    g.add_edge("a", "c", relation="r")
    g.add_node("z", name="z", text="radium")  # unreachable: BM25 statistics only
    emb = table_embedder({"anchor": [1.0, 0.0], "b. radium radium polonium": [0.0, 1.0],
                          "c. polonium": [0.6, 0.8], "z. radium": [0.0, 1.0],
                          "radium": [1.0, 0.0]})
    idx = GraphIndex(g, emb)
    pcr = PathConstrainedRetriever(idx)
    cand = np.array([0, 1, 2])
    cos = idx.vector_index.scores(emb.embed_queries(["radium"])[0], cand)
    bm = idx.bm25.scores("radium", cand)
    for norm in ("max", "raw", "minmax"):
        res = pcr.retrieve("radium", anchor="a", mode="hybrid", hybrid_norm=norm)
        want = hybrid_scores(cos, bm, 0.7, norm=norm)
        got = dict(zip(res.ids, (h.score for h in res.hits)))
        assert [got[n] for n in "abc"] == pytest.approx(want.tolist()), norm
        assert res.trace["hybrid_norm"] == norm
    # the default is unchanged: same scores as GraphIndex.score_candidates
    dflt = pcr.retrieve("radium", anchor="a", mode="hybrid")
    assert [h.score for h in dflt.hits] == pytest.approx(
        sorted(idx.score_candidates("radium", emb.embed_queries(["radium"])[0], cand,
                                    mode="hybrid").tolist(), reverse=True))
    with pytest.raises(ConfigError, match="hybrid_norm"):
        pcr.retrieve("radium", anchor="a", mode="hybrid", hybrid_norm="sum")
