"""PCR over the graph backend protocol: the in-memory CSR backend and the Cypher (Ladybug /
Kùzu) backend give the same results and the same evidence.

Truth is the in-memory run (itself pinned against hand-traced graphs in test_pcr.py and
test_stores.py): hits, hops, paths and edges must be equal, scores equal up to float32
rounding (see test_stores.assert_same), and ``evidence()`` (passages and native) equal
item by item. A database backend has no shared passage vectors, so its passages are in hit
order (``passage_order="question"`` needs the in-memory index, tests/test_pcr_passages.py):
the in-memory truth is taken with ``passage_order="hits"``.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from kgpath import GraphIndex, HashingEmbedder, KnowledgeGraph, PathConstrainedRetriever, PCRConfig
from kgpath.backends import (
    CypherBackend,
    CypherDialect,
    CypherSchema,
    GraphBackend,
    InMemoryBackend,
    as_cypher_driver,
    register_driver,
)
from kgpath.backends.cypher import EmbeddedCypherDriver, load_graph
from kgpath.data import load_demo_graph
from kgpath.errors import ConfigError
from kgpath.methods.pcr import CypherPCR

pytest.importorskip("ladybug" if __import__("importlib").util.find_spec("ladybug") else "kuzu")

DEPTHS = (1, 2, 3)
DIRECTIONS = ("out", "in", "both")


@pytest.fixture
def drv(tmp_path):
    d = EmbeddedCypherDriver.open(tmp_path / "db")
    yield d
    d.close()


def assert_same_evidence(mem, db):
    for output in ("passages", "native"):
        a, b = mem.evidence(output), db.evidence(output)
        assert [(e.id, e.kind, e.rank) for e in b] == [(e.id, e.kind, e.rank) for e in a]
        for x, y in zip(a, b):
            assert (y.text, y.method, y.trace, y.source_metadata) == (
                x.text, x.method, x.trace, x.source_metadata), x.id
            assert y.score == pytest.approx(x.score, abs=1e-6)
            assert y.metadata().keys() == x.metadata().keys()


def assert_same(mem, db):
    assert (db.anchor, db.anchor_resolution, db.reachable_count, db.fallback_used) == (
        mem.anchor, mem.anchor_resolution, mem.reachable_count, mem.fallback_used)
    assert [h.id for h in db.hits] == [h.id for h in mem.hits]
    for a, b in zip(mem.hits, db.hits):
        assert (b.node, b.hops, b.path, b.edges) == (a.node, a.hops, a.path, a.edges)
        assert b.score == pytest.approx(a.score, abs=1e-6)
    assert {k: db.trace[k] for k in mem.trace} == mem.trace
    assert db.trace["backend"].startswith("cypher/") and db.trace["queries"] >= 3
    # passage_order="question" on a store: the stored vectors of the cited passages only,
    # so no propagation re-rank (it walks the whole graph); the in-memory side has rerank=None
    assert db.config.passage_order == "question" and not db.passages.whole_graph
    assert {p for p in db.passages.vectors.ids} <= {
        p for h in (*db.hits, *db.passages.pool, *db.anchors)
        for p in getattr(h, "node", h).provenance}
    assert_same_evidence(mem, db)


def both(graph: KnowledgeGraph, drv, dim: int = 32):
    emb = HashingEmbedder(dim=dim)
    idx = GraphIndex(graph, emb)
    schema = load_graph(drv, idx, replace=True)
    return (PathConstrainedRetriever(idx, config=PCRConfig(rerank=None)),
            CypherPCR(drv, embedder=emb, schema=schema))


def test_backends_satisfy_the_protocol(drv):
    g = load_demo_graph()
    assert isinstance(InMemoryBackend(g, embedder=HashingEmbedder(dim=8)), GraphBackend)
    backend = CypherBackend(drv, embedder=HashingEmbedder(dim=8))
    assert isinstance(backend, GraphBackend)
    load_graph(drv, g)
    assert backend.node_count() == len(g) == 37
    pcr = PathConstrainedRetriever(backend)  # PCR takes any backend
    assert pcr.retrieve("radium", anchor="Marie Curie", max_depth=1).hits
    with pytest.raises(ConfigError, match="GraphBackend"):
        PathConstrainedRetriever(object())


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_cypher_neighbours_and_the_default_bfs_equal_in_memory(drv, direction):
    g = random_graph(3, 25)
    emb = HashingEmbedder(dim=16)
    mem = InMemoryBackend(g, embedder=emb)
    db = CypherBackend(drv, embedder=emb, schema=load_graph(drv, GraphIndex(g, emb)))
    for i, n in enumerate(g.nodes):
        key = db.node_by_id(n.id)
        assert [(k.id, e) for k, e in db.neighbours(key, direction=direction)] == [
            (g.node_at(v).id, e) for v, e in mem.neighbours(i, direction=direction)]
        # the protocol's default BFS over the database's neighbours = the CSR BFS
        tree = GraphBackend.reachable(db, key, max_depth=2, direction=direction)
        ref = mem.reachable(i, max_depth=2, direction=direction)
        assert [k.id for k in tree.nodes] == [g.node_at(int(v)).id for v in ref.nodes]
        assert tree.dist.tolist() == ref.dist.tolist()
        assert tree.parent_pos.tolist() == ref.parent_pos.tolist()
        for pos in range(len(ref.nodes)):
            assert GraphBackend.path(db, tree, pos) == mem.path(ref, pos)


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_demo_graph_same_results_and_evidence(drv, direction):
    g = load_demo_graph()
    mem, db = both(g, drv)
    busy = [n.id for i, n in enumerate(g.nodes) if g.neighbors(i, direction=direction).size][:6]
    queries = ["Who discovered radium?", "Nobel Prize in Physics", "uranium rays"]
    for depth in DEPTHS:
        for i, anchor in enumerate(busy):
            kw = dict(anchor=anchor, direction=direction, max_depth=depth, k=5)
            a, b = mem.retrieve(queries[i % 3], **kw), db.retrieve(queries[i % 3], **kw)
            assert a.reachable_count > 1
            assert_same(a, b)
    # hit order (passage_order="hits") is the same on both sides too
    kw = dict(anchor=busy[0], direction=direction, passage_order="hits")
    assert_same_evidence(mem.retrieve(queries[0], **kw), db.retrieve(queries[0], **kw))
    # the passages really come from the database: text of the graph's passages
    ev = db.retrieve(queries[0], anchor=busy[0], direction=direction).evidence()
    assert any(e.kind == "passage" for e in ev)
    assert {e.id for e in ev if e.kind == "passage"} <= set(g.passages)
    assert all(e.text == g.passages[e.id].text for e in ev if e.kind == "passage")


def random_graph(seed: int, n: int, n_passages: int = 6) -> KnowledgeGraph:
    rnd = random.Random(seed)
    g = KnowledgeGraph()
    for j in range(n_passages):
        g.add_passage(f"p{j}", f"passage {j} of graph {seed}", metadata={"doc": f"d{j % 2}"})
    for i in range(n):
        cites = rnd.sample([f"p{j}" for j in range(n_passages)] + ["gone"], rnd.randint(0, 2))
        g.add_node(f"n{i}", name=f"N{i % 5}", text=f"t{i} {rnd.choice('abc')}",
                   metadata={"i": i}, provenance=cites)
    for _ in range(2 * n):
        g.add_edge(f"n{rnd.randrange(n)}", f"n{rnd.randrange(n)}",
                   relation=rnd.choice(["r", "s", ""]), text="e")
    emb = np.random.default_rng(seed).normal(size=(n, 16)).astype(np.float32)
    g.vectors.set(emb / np.linalg.norm(emb, axis=1, keepdims=True))
    return g


def test_random_graphs_same_results_and_evidence(drv):
    for seed in range(4):
        g = random_graph(seed, 30)
        mem, db = both(g, drv, dim=16)
        rnd = random.Random(seed)
        for direction in DIRECTIONS:
            for depth in DEPTHS:
                kw = dict(anchor=f"n{rnd.randrange(len(g))}", direction=direction,
                          max_depth=depth, k=rnd.randint(1, 8),
                          include_anchor=rnd.random() < 0.5)
                assert_same(mem.retrieve("query", **kw), db.retrieve("query", **kw))


def test_fallback_and_name_anchor_evidence(drv):
    g = random_graph(9, 20)
    g.add_node("island", name="Island", text="alone", provenance=["p1"])
    mem, db = both(g, drv, dim=16)
    for kw in (dict(anchor="island", fallback="global", k=4),
               dict(anchor_name="n3", k=3), dict(anchor_name="N2", k=3),
               dict(k=3, anchor_fallback="similar")):
        a, b = mem.retrieve("query", **kw), db.retrieve("query", **kw)
        assert_same(a, b)
    assert db.retrieve("query", anchor="island", fallback="global").fallback_used


def test_question_names_link_by_entity_key_as_in_memory(drv):
    # the key drops a possessive, a leading article, accents and punctuation: a store that
    # keeps the key links "Grace Krilanovich's" and "the Exies" as the in-memory index does
    g = KnowledgeGraph()
    for nid, name in [("gk", "Grace Krilanovich"), ("gr", "Grace"), ("ex", "The Exies"),
                      ("cd", "Circus Diablo"), ("ez", "Émile Zola"), ("n1", "novel")]:
        g.add_node(nid, name=name, text=f"about {name}")
    g.add_edge("gk", "n1", "wrote")
    g.add_edge("ex", "cd", "toured with")
    g.add_edge("ez", "n1", "wrote")
    mem, db = both(g, drv, dim=16)
    for q, want in [("Grace Krilanovich's first book?", {"gk"}),
                    ("Which band was formed first, the Exies or Circus Diablo?", {"ex", "cd"}),
                    ("What did Emile Zola write?", {"ez"})]:
        a, b = mem.retrieve(q, k=3), db.retrieve(q, k=3)
        assert {x.id for x in a.anchors} == want  # hand-checked: the key matches
        assert [x.id for x in b.anchors] == [x.id for x in a.anchors]
        assert_same(a, b)


def test_without_passages_in_the_database_evidence_keeps_nodes(drv):
    g = load_demo_graph()
    emb = HashingEmbedder(dim=16)
    schema = load_graph(drv, GraphIndex(g, emb), schema=CypherSchema(passage_label=None))
    res = CypherPCR(drv, embedder=emb, schema=schema).retrieve("radium", anchor="Marie Curie")
    assert res.graph is not None and not res.graph.passages
    ev = res.evidence()
    assert [e.kind for e in ev] == ["node"] * len(res.hits)
    assert [e.id for e in ev] == res.ids and ev[0].text == res.hits[0].node.text


def test_a_third_engine_plugs_in_through_the_dialect_seam(drv):
    class EchoDialect(CypherDialect):
        name = "echo"

        def shortest_hops_query(self, schema, direction, max_hops):
            return "RETURN 1"

    class EchoClient:  # what another engine's client library would hand us
        def __init__(self, inner):
            self.inner = inner

    class EchoDriver:
        dialect = EchoDialect()

        def __init__(self, client):
            self.client = client

        def run(self, query, parameters=None):
            return self.client.inner.run(query, parameters)

    register_driver(lambda obj: EchoDriver(obj) if isinstance(obj, EchoClient) else None)
    wrapped = as_cypher_driver(EchoClient(drv))
    assert isinstance(wrapped, EchoDriver) and wrapped.dialect.name == "echo"
    assert CypherBackend(wrapped).name == "cypher/echo"
