"""PCR pushed down into a real FalkorDB server (started by the tests, see kgpath.testing.falkordb).

Truth: hand-traced breadth-first searches on a small graph, and the in-memory
PathConstrainedRetriever on random graphs up to 10^4 nodes (hits, hops, paths, edges equal;
scores to float32 rounding).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from kgpath import GraphIndex, HashingEmbedder, KnowledgeGraph, PathConstrainedRetriever
from kgpath.backends.cypher import (
    CypherSchema,
    FalkorDBDialect,
    FalkorDBDriver,
    as_cypher_driver,
    expand_one_hop,
    load_graph,
    reachable_hops,
)
from kgpath.errors import ConfigError
from kgpath.methods.pcr import CypherPCR, PCRConfig

PAPER = PCRConfig.paper()  # the paper's reachability: out-edges, unlimited depth

pytestmark = pytest.mark.falkordb


def assert_same(mem, db):
    assert db.anchor == mem.anchor
    assert db.reachable_count == mem.reachable_count
    assert db.fallback_used == mem.fallback_used
    assert [h.id for h in db.hits] == [h.id for h in mem.hits]
    for a, b in zip(mem.hits, db.hits):
        assert (b.node, b.hops, b.path, b.edges) == (a.node, a.hops, a.path, a.edges)
        assert b.score == pytest.approx(a.score, abs=1e-6)
    for key in ("anchor_id", "reachable_count", "max_reached_depth", "candidates_scored",
                "direction", "max_depth", "fallback"):
        assert db.trace[key] == mem.trace[key], key


def hand_graph():
    """Edges in index order: 0 A>C, 1 A>B, 2 B>D, 3 C>D, 4 C>E, 5 D>F, 6 E>F, 7 F>A, 8 X>A."""
    g = KnowledgeGraph()
    for n in "ABCDEFX":
        g.add_node(n, name=f"{n} name", text=f"node {n} name", type="t", metadata={"k": n},
                   provenance=[f"p{n}"])
    for s, t, r in [("A", "C", "r"), ("A", "B", "r"), ("B", "D", "s"), ("C", "D", "t"),
                    ("C", "E", "t"), ("D", "F", "u"), ("E", "F", "u"), ("F", "A", "back"),
                    ("X", "A", "x")]:
        g.add_edge(s, t, relation=r, text=f"{s} {r} {t}", weight=0.5, provenance=["p0"])
    g.add_passage("p0", "passage zero")
    g.add_passage("pD", "passage about D")
    return g


def random_graph(seed, n, out_deg=1.5, dim=16):
    rnd = random.Random(seed)
    g = KnowledgeGraph()
    for i in range(n):
        g.add_node(f"n{i}", name=f"name {i % 7}", text=f"text {i}")
    for _ in range(int(out_deg * n)):
        g.add_edge(f"n{rnd.randrange(n)}", f"n{rnd.randrange(n)}",
                   relation=rnd.choice(["r", "s", ""]))
    emb = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    g.vectors.set(emb / np.linalg.norm(emb, axis=1, keepdims=True))
    return g


def test_server_answers_and_driver_is_recognised(falkordb_server, falkordb_driver):
    assert falkordb_server.ping()
    assert falkordb_driver.run("RETURN $x AS x", {"x": 41}) == [{"x": 41}]
    assert isinstance(falkordb_driver.dialect, FalkorDBDialect)
    assert as_cypher_driver(falkordb_driver) is falkordb_driver
    wrapped = as_cypher_driver(falkordb_driver.graph)  # a falkordb.Graph
    assert isinstance(wrapped, FalkorDBDriver) and str(falkordb_server.port) in wrapped.server


def test_reachability_and_one_hop_match_hand_trace(falkordb_driver):
    g = hand_graph()
    schema = load_graph(falkordb_driver, g)
    drv = falkordb_driver
    assert reachable_hops(drv, schema, "A") == {"A": 0, "B": 1, "C": 1, "D": 2, "E": 2, "F": 3}
    assert reachable_hops(drv, schema, "A", max_depth=2) == {
        "A": 0, "B": 1, "C": 1, "D": 2, "E": 2}
    assert reachable_hops(drv, schema, "A", direction="in") == {
        "A": 0, "F": 1, "X": 1, "D": 2, "E": 2, "B": 3, "C": 3}
    assert reachable_hops(drv, schema, "X", max_depth=0) == {"X": 0}
    steps = expand_one_hop(drv, schema, ["C"], direction="both")
    got = sorted((s.neighbour, s.forward, s.edge_order, s.edge.relation) for s in steps)
    assert got == [("A", False, 0, "r"), ("D", True, 3, "t"), ("E", True, 4, "t")]


def test_pcr_equals_in_memory_on_hand_graph(falkordb_driver):
    g = hand_graph()
    emb = HashingEmbedder(dim=16)
    idx = GraphIndex(g, emb)
    schema = load_graph(falkordb_driver, idx)
    mem = PathConstrainedRetriever(idx, config=PAPER)
    db = CypherPCR(falkordb_driver, embedder=emb, config=PAPER,
                                                       schema=schema)
    for kw in (dict(anchor="A"), dict(anchor="A", direction="both", max_depth=2),
               dict(anchor_name=" b NAME "), dict(anchor="F", direction="in", k=3)):
        assert_same(mem.retrieve("node D", **kw), db.retrieve("node D", **kw))
    res, ref = db.retrieve("node D", anchor="A", k=2), mem.retrieve("node D", anchor="A", k=2)
    texts = [e.text for e in res.evidence("passages")]
    assert "passage about D" in texts  # passages resolved from the server
    assert texts == [e.text for e in ref.evidence("passages")]


def test_random_graphs_equal_in_memory(falkordb_driver):
    emb = HashingEmbedder(dim=16)
    for seed in range(6):
        rnd = random.Random(100 + seed)
        g = random_graph(seed, rnd.randint(2, 40))
        idx = GraphIndex(g, emb)
        schema = load_graph(falkordb_driver, idx, replace=True)
        mem = PathConstrainedRetriever(idx, config=PAPER)
        db = CypherPCR(falkordb_driver, embedder=emb, config=PAPER,
                                                           schema=schema)
        for direction in ("out", "in", "both"):
            for max_depth in (None, 0, 1, 3):
                kw = dict(anchor=f"n{rnd.randrange(len(g))}", direction=direction,
                          max_depth=max_depth, include_anchor=rnd.random() < 0.5,
                          k=rnd.randint(1, 8))
                assert_same(mem.retrieve("some query", **kw), db.retrieve("some query", **kw))


def test_ten_thousand_nodes_push_down_equals_in_memory(falkordb_driver):
    g = random_graph(7, 10_000, out_deg=2.0)
    emb = HashingEmbedder(dim=16)
    idx = GraphIndex(g, emb)
    schema = load_graph(falkordb_driver, idx)
    count = falkordb_driver.run(f"MATCH (n:{schema.n}) RETURN count(n) AS c")[0]["c"]
    assert count == 10_000
    mem = PathConstrainedRetriever(idx, config=PAPER)
    db = CypherPCR(falkordb_driver, embedder=emb, config=PAPER, schema=schema)
    rnd = random.Random(3)
    busy = np.flatnonzero((g.degree("out") > 0) & (g.degree("in") > 0))
    for direction, max_depth in [("out", 2), ("out", 4), ("in", 3), ("both", 2), ("out", None)]:
        anchor = g.node_at(int(busy[rnd.randrange(busy.size)])).id
        kw = dict(anchor=anchor, direction=direction, max_depth=max_depth, k=10)
        a, b = mem.retrieve("query text", **kw), db.retrieve("query text", **kw)
        assert a.reachable_count > 1
        assert_same(a, b)
    assert b.trace["max_reached_depth"] > 4  # the unbounded run went deep: one query per level


def test_dialect_queries_are_parameterised_and_validated():
    d = FalkorDBDialect()
    q = d.shortest_hops_query(CypherSchema(), "out", 1)
    assert q == ("UNWIND $sources AS x MATCH (a:`KgNode`)-[:`KG_EDGE`]->(b:`KgNode`) "
                 "WHERE a.`id_key` = '<' + left(x, 1000) + '>' AND a.`id` = x "
                 "RETURN DISTINCT b.`id` AS id, 1 AS hops")
    plain = d.shortest_hops_query(CypherSchema(key_property=None), "out", 1)
    assert "WHERE a.`id` = x RETURN" in plain
    assert "*1..3" in d.shortest_hops_query(CypherSchema(), "in", 3)
    with pytest.raises(ConfigError, match="depth bound"):
        d.shortest_hops_query(CypherSchema(), "out", 0)
    with pytest.raises(ConfigError, match="timeout"):
        FalkorDBDriver(object(), timeout=0)
    with pytest.raises(ConfigError, match="retries"):
        FalkorDBDriver(object(), retries=-1)
