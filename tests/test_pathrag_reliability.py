"""PathRAG's ``reliability=`` variants are strategy objects chosen by name (hand-computed).

The chain ``a - b - c - d`` (edges a->b, c->b, c->d), retrieved nodes ``V_q = {a, c}``,
α = 0.8:

* edge flow (the authors' code, undirected, 3 hops): a sends 1 to b; b (not the target,
  flow 1 > 0.3) forwards ``1 · 0.8 / |{c}| = 0.8`` to c; reliability = mean edge flow =
  (1 + 0.8) / 2 = 0.9. c-b-a has the same node set: one candidate.
* literal Eq. (4), undirected: from a, S(a) = 1; a has one neighbour, so
  S(b) = 0.8 · 1 / 1 = 0.8; b has two, so S(c) = 0.8 · 0.8 / 2 = 0.32;
  S(P) = (1 + 0.8 + 0.32) / |E_P| = 2.12 / 2 = 1.06. From c the reverse scores
  (1 + 0.4 + 0.16) / 2 = 0.78; a path and its reverse are one candidate: 1.06 wins.
* literal Eq. (4), directed: no directed path between a and c: an empty pool.
"""

from __future__ import annotations

import pytest

from kgpath import ConfigError, HashingEmbedder, KnowledgeGraph
from kgpath.methods.pathrag import (
    RELIABILITIES,
    EdgeFlow,
    LiteralEq4,
    PathRAGConfig,
    PathRAGRetriever,
    ReliabilityStrategy,
    flow_adjacency,
    reliability_strategy,
)

HAND = {
    ("edge_flow", "undirected"): [((0, 1, 2), (1.0, 1.0, 0.8), 0.9)],
    ("literal_eq4", "undirected"): [((0, 1, 2), (1.0, 0.8, 0.32), 1.06)],
    ("literal_eq4", "directed"): [],
}


@pytest.fixture
def retriever() -> PathRAGRetriever:
    g = KnowledgeGraph()
    for n in "abcd":
        g.add_node(n)
    g.add_edge("a", "b")
    g.add_edge("c", "b")
    g.add_edge("c", "d")
    return PathRAGRetriever(g, embedder=HashingEmbedder(dim=8))


def config(name: str, direction: str) -> PathRAGConfig:
    return (PathRAGConfig(direction=direction) if name == "edge_flow"
            else PathRAGConfig.literal_eq4(direction=direction))


def test_the_table_names_each_strategy():
    assert {n: type(s) for n, s in RELIABILITIES.items()} == {
        "edge_flow": EdgeFlow, "literal_eq4": LiteralEq4}
    for name, s in RELIABILITIES.items():
        assert s.name == name and reliability_strategy(name) is s
        assert reliability_strategy(s) is s


@pytest.mark.parametrize(("name", "direction"), sorted(HAND))
def test_each_name_gives_the_hand_computed_pool_and_equals_its_object(
    retriever, name, direction
):
    cfg = config(name, direction)
    by_name = retriever.retrieve_from_nodes("q", ["a", "c"], **_fields(cfg))
    by_object = retriever.retrieve_from_nodes(
        "q", ["a", "c"], **{**_fields(cfg), "reliability": type(RELIABILITIES[name])()})
    for res in (by_name, by_object):
        got = [(c.nodes, c.resources, c.reliability) for c in res.pool]
        assert len(got) == len(HAND[name, direction])
        for (nodes, res_, rel), (h_nodes, h_res, h_rel) in zip(got, HAND[name, direction]):
            assert nodes == h_nodes
            assert res_ == pytest.approx(h_res) and rel == pytest.approx(h_rel)
        assert res.trace["reliability"] == name
    assert list(by_object.pool) == list(by_name.pool)
    untimed = [{k: v for k, v in r.trace.items() if k != "timings_ms"}
               for r in (by_object, by_name)]
    assert untimed[0] == untimed[1]


def test_the_hook_is_called_the_same_way_on_any_adjacency(retriever):
    adj = flow_adjacency(retriever.graph, "undirected")
    pool = RELIABILITIES["edge_flow"].pool(adj, [0, 2], PathRAGConfig())
    assert [(c.nodes, c.reliability) for c in pool] == [((0, 1, 2), pytest.approx(0.9))]


def test_config_keeps_the_names_and_checks_them_through_the_table():
    assert PathRAGConfig().reliability == "edge_flow"
    assert PathRAGConfig(reliability=LiteralEq4(), max_hops=None).max_hops is None
    with pytest.raises(ConfigError, match="reliability must be one of .*'eq4'"):
        PathRAGConfig(reliability="eq4")
    with pytest.raises(ConfigError, match="max_hops=None needs reliability='literal_eq4'"):
        PathRAGConfig(max_hops=None)
    with pytest.raises(ConfigError, match="max_hops=None"):
        PathRAGConfig(reliability=EdgeFlow(), max_hops=None)
    assert isinstance(RELIABILITIES["edge_flow"], ReliabilityStrategy)


def _fields(cfg: PathRAGConfig) -> dict:
    return {f: getattr(cfg, f) for f in ("reliability", "direction", "max_hops",
                                         "eq3_at_start", "min_similarity",
                                         "min_similarity_z")}
