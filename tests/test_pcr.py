from __future__ import annotations

import math

import numpy as np
import pytest

from kgpath import (
    ConfigError,
    EmbeddingError,
    EmptyGraphError,
    GraphIndex,
    HashingEmbedder,
    KnowledgeGraph,
    NodeNotFoundError,
    PathConstrainedRetriever,
    PCRConfig,
    QueryError,
)
from kgpath.index import BM25Index, hybrid_scores

S = 1 / math.sqrt(2)
VECS = {
    "q": [1.0, 0.0],
    "A": [0.0, 1.0],   # cos 0.0
    "B": [0.6, 0.8],   # cos 0.6
    "C": [0.8, 0.6],   # cos 0.8
    "D": [S, S],       # cos 0.7071
    "E": [1.0, 0.0],   # cos 1.0, but unreachable from A
}


@pytest.fixture
def pcr(table_embedder):
    g = KnowledgeGraph()
    for n in "ABCDE":
        g.add_node(n, name=n, text=n)
    g.add_edge("A", "B", relation="r1")
    g.add_edge("B", "C", relation="r2")
    g.add_edge("A", "D", relation="r3")
    g.add_edge("E", "A", relation="r4")  # E reaches A, not the other way round
    return PathConstrainedRetriever(g, embedder=table_embedder(VECS), config=PCRConfig.paper())


def test_hand_computed_ranking_paths_and_hops(pcr):
    res = pcr.retrieve("q", anchor="A", k=3)
    assert res.ids == ["C", "D", "B"]
    assert [round(h.score, 4) for h in res.hits] == [0.8, 0.7071, 0.6]
    assert [h.hops for h in res.hits] == [2, 1, 1]
    assert res.hits[0].path == ("A", "B", "C")
    assert [e.relation for e in res.hits[0].edges] == ["r1", "r2"]
    assert res.hits[0].path_text(pcr.graph) == "A -[r1]-> B -[r2]-> C"
    assert res.reachable_count == 4 and not res.fallback_used
    assert res.trace["anchor_id"] == "A" and res.anchor_resolution == "id"


def test_unconstrained_search_would_pick_the_unreachable_node(pcr):
    idx, scores = pcr.index.search("q", 1)
    assert pcr.graph.node_at(int(idx[0])).id == "E"
    assert "E" not in pcr.retrieve("q", anchor="A").ids


def test_depth_direction_and_anchor_inclusion(pcr):
    assert pcr.retrieve("q", anchor="A", max_depth=1).ids == ["D", "B", "A"]
    assert pcr.retrieve("q", anchor="A", include_anchor=False).ids == ["C", "D", "B"]
    # following edges backwards from A reaches only E
    res = pcr.retrieve("q", anchor="A", direction="in")
    assert res.ids == ["E", "A"] and res.hits[0].path_text(pcr.graph) == "A <-[r4]- E"
    assert set(pcr.retrieve("q", anchor="C", direction="both").ids) == set("ABCDE")


def test_anchor_by_name_and_by_similarity(pcr):
    assert pcr.retrieve("q", anchor_name="a").anchor.id == "A"
    # no anchor and none named in the query: raise when configured so (the paper's way)
    with pytest.raises(NodeNotFoundError, match="anchor_fallback='similar'"):
        pcr.retrieve("q", anchor_fallback="none")
    res = pcr.retrieve("q")  # the default, recorded: the most similar node to q is E
    assert res.anchor.id == "E" and res.anchor_resolution == "similarity"
    assert res.trace["anchor_fallback"] == "similar"


def test_unknown_anchor_error_or_similarity_fallback(pcr):
    with pytest.raises(NodeNotFoundError, match="'ZZ'"):
        pcr.retrieve("q", anchor="ZZ")
    with pytest.raises(NodeNotFoundError, match="'Nobody'"):
        pcr.retrieve("q", anchor_name="Nobody")
    res = pcr.retrieve("q", anchor="ZZ", unknown_anchor="similar")
    assert res.anchor.id == "E" and "unknown id 'ZZ'" in res.anchor_resolution


def test_anchor_without_out_edges_fallback_policies(pcr):
    res = pcr.retrieve("q", anchor="C")  # C has no out-edges
    assert res.ids == ["C"] and not res.fallback_used and res.reachable_count == 1
    res = pcr.retrieve("q", anchor="C", fallback="global", k=2)
    assert res.fallback_used and res.trace["fallback"] == "global"
    assert res.ids == ["E", "C"]
    assert res.hits[0].hops is None and res.hits[0].path == ()
    assert res.hits[1].hops == 0


async def test_async_equals_sync(pcr):
    a = await pcr.aretrieve("q", anchor="A", k=3)
    s = pcr.retrieve("q", anchor="A", k=3)
    assert a.ids == s.ids and [h.score for h in a] == [h.score for h in s]


def test_hybrid_equals_formula_over_reachable_set(table_embedder):
    texts = {"A": "apple banana", "B": "apple", "C": "cherry pie", "D": "cherry"}
    g = KnowledgeGraph()
    for n, t in texts.items():
        g.add_node(n, name=t, text=t)
    g.add_edge("A", "B")
    g.add_edge("A", "C")
    vecs = {"cherry": [1.0, 0.0], "apple banana": [0.0, 1.0], "apple": [0.6, 0.8],
            "cherry pie": [0.8, 0.6]}
    pcr = PathConstrainedRetriever(g, embedder=table_embedder(vecs),
                                   config=PCRConfig.paper(mode="hybrid", alpha=0.7))
    res = pcr.retrieve("cherry", anchor="A")
    cand = [0, 1, 2]  # A, B, C (D is unreachable)
    bm = BM25Index(list(texts.values())).scores("cherry", cand)
    want = hybrid_scores(np.array([0.0, 0.6, 0.8]), bm, 0.7)
    got = {h.id: h.score for h in res}
    assert got == pytest.approx(dict(zip("ABC", want.tolist())), abs=1e-6)
    assert res.ids[0] == "C"


@pytest.mark.parametrize(
    "kwargs, exc, needle",
    [
        ({"k": 0}, ConfigError, "k must"),
        ({"k": -3}, ConfigError, "-3"),
        ({"max_depth": -1}, ConfigError, "-1"),
        ({"alpha": 1.5}, ConfigError, "1.5"),
        ({"direction": "up"}, ConfigError, "'up'"),
        ({"fallback": "maybe"}, ConfigError, "'maybe'"),
        ({"mode": "fuzzy"}, ConfigError, "'fuzzy'"),
        ({"bogus": 1}, ConfigError, "bogus"),
    ],
)
def test_bad_config(pcr, kwargs, exc, needle):
    with pytest.raises(exc, match=needle):
        pcr.retrieve("q", anchor="A", **kwargs)


@pytest.mark.parametrize("query", ["", "   ", None, 42])
def test_bad_query(pcr, query):
    with pytest.raises(QueryError):
        pcr.retrieve(query, anchor="A")


def test_empty_graph():
    pcr = PathConstrainedRetriever(KnowledgeGraph(), embedder=HashingEmbedder())
    with pytest.raises(EmptyGraphError):
        pcr.retrieve("anything")


def test_embedding_dimension_mismatch():
    g = KnowledgeGraph()
    g.add_node("a", embedding=[1.0, 0.0, 0.0, 0.0])
    g.add_node("b", text="b")  # missing embedding -> the 16-d embedder is asked
    pcr = PathConstrainedRetriever(g, embedder=HashingEmbedder(dim=16), config=PCRConfig.paper())
    with pytest.raises(EmbeddingError, match="dimension"):
        pcr.retrieve("a", anchor="a")
    with pytest.raises(EmbeddingError, match="dimension 3"):
        g.vectors.set({"b": [1.0, 2.0, 3.0]})


def test_nan_embeddings_are_rejected(table_embedder):
    g = KnowledgeGraph()
    with pytest.raises(EmbeddingError, match="'a'"):
        g.add_node("a", embedding=[float("nan"), 1.0])
    g2 = KnowledgeGraph()
    g2.add_node("x", text="x")
    bad = table_embedder({"x": [float("nan"), 0.0], "q": [1.0, 0.0]})
    with pytest.raises(EmbeddingError, match="NaN"):
        GraphIndex(g2, bad).build()


def test_self_loops_cycles_and_duplicates_do_not_break_pcr():
    g = KnowledgeGraph()
    for n in ["a", "b", "c"]:
        g.add_node(n, text=f"text {n}")
    for s, t in [("a", "a"), ("a", "b"), ("a", "b"), ("b", "c"), ("c", "a")]:
        g.add_edge(s, t)
    res = PathConstrainedRetriever(g, embedder=HashingEmbedder(),
                                   config=PCRConfig.paper()).retrieve("text c", anchor="a")
    assert sorted(res.ids) == ["a", "b", "c"]
    assert {h.id: h.hops for h in res} == {"a": 0, "b": 1, "c": 2}


def test_config_is_frozen_and_keyword_only():
    cfg = PCRConfig.paper()
    assert (cfg.k, cfg.max_depth, cfg.direction, cfg.mode, cfg.alpha, cfg.fallback) == (
        10, None, "out", "vector", 0.7, "none")
    assert PCRConfig.for_passages() == PCRConfig()  # the defaults are the passage preset
    assert (PCRConfig().direction, PCRConfig().max_depth) == ("both", 1)
    assert PCRConfig.paper() == PCRConfig(direction="out", max_depth=None, rerank=None)
    assert PCRConfig().rerank == "propagation"
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.k = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        PCRConfig(5)  # type: ignore[misc]


def test_retrieve_by_vector_equals_text_query(pcr):
    by_text = pcr.retrieve("q", anchor="A", k=3)
    by_vec = pcr.retrieve_by_vector(np.array([1.0, 0.0]), anchor="A", k=3)
    assert by_vec.ids == by_text.ids
    with pytest.raises(EmbeddingError, match="dimension 3"):
        pcr.retrieve_by_vector(np.ones(3), anchor="A")
    with pytest.raises(QueryError):
        pcr.retrieve_by_vector(np.array([1.0, 0.0]), anchor="A", mode="hybrid")


async def test_first_async_call_embeds_nodes_asynchronously(table_embedder):
    class AsyncOnly(table_embedder):
        def _embed(self, texts, kind):
            raise AssertionError("sync embedding used in async path")

        async def _aembed(self, texts, kind):
            return table_embedder._embed(self, texts, kind)

    g = KnowledgeGraph()
    for n in "AB":
        g.add_node(n, name=n, text=n)
    g.add_edge("A", "B")
    pcr = PathConstrainedRetriever(g, embedder=AsyncOnly({"A": [1, 0], "B": [0, 1], "q": [0, 1]}),
                                   config=PCRConfig.paper())
    res = await pcr.aretrieve("q", anchor="A")
    assert res.ids == ["B", "A"]


def test_with_overrides_rules():
    from kgpath._config import with_overrides

    base = PCRConfig(max_depth=2, k=4)
    assert with_overrides(base, {}, label="PCR") is base
    assert with_overrides(base, {"k": None}, label="PCR").k == 4  # None = not given
    assert with_overrides(base, {"max_depth": None}, label="PCR",
                          none_is_value={"max_depth"}).max_depth is None
    with pytest.raises(ConfigError, match=r"unknown PCR option\(s\): \['kk'\]"):
        with_overrides(base, {"kk": 1}, label="PCR")
    with pytest.raises(ConfigError, match="k must"):
        with_overrides(base, {"k": 0}, label="PCR")  # re-validated by the dataclass
