"""Store-backed PCR (kgpath.backends.cypher) against an embedded Cypher database.

Truth comes from hand-traced breadth-first searches on small graphs, and from the in-memory
PathConstrainedRetriever on random graphs (hits, hops, paths equal; scores equal to float32
rounding, see ``assert_same``).
"""

from __future__ import annotations

import asyncio
import random
import socket

import numpy as np
import pytest

from kgpath import (
    BackendError,
    ConfigError,
    GraphIndex,
    HashingEmbedder,
    KnowledgeGraph,
    NodeNotFoundError,
    PathConstrainedRetriever,
)
from kgpath.backends.cypher import (
    CypherDialect,
    CypherSchema,
    EmbeddedCypherDriver,
    Neo4jDialect,
    Neo4jDriver,
    as_cypher_driver,
    expand_one_hop,
    load_graph,
    quote_identifier,
    reachable_hops,
)
from kgpath.methods.pcr import CypherPCR, PCRConfig

PAPER = PCRConfig.paper()  # the paper's reachability: out-edges, unlimited depth

pytest.importorskip("ladybug" if __import__("importlib").util.find_spec("ladybug") else "kuzu")


@pytest.fixture
def drv(tmp_path):
    d = EmbeddedCypherDriver.open(tmp_path / "db")
    yield d
    d.close()


def assert_same(mem, db):
    """Equal PCR results; scores may differ in the last float32 bit.

    numpy's mat-vec sums a row differently depending on where the row sits in the matrix
    (the in-memory index may score the whole embedding matrix at once), so identical inputs
    can differ by one ulp; every test graph with such ties uses exactly representable dot
    products (one-hot vectors), where the comparison below is bitwise.
    """
    assert db.anchor == mem.anchor
    assert db.anchor_resolution == mem.anchor_resolution
    assert db.reachable_count == mem.reachable_count
    assert db.fallback_used == mem.fallback_used
    assert [h.id for h in db.hits] == [h.id for h in mem.hits]
    for a, b in zip(mem.hits, db.hits):
        assert b.node == a.node
        assert b.hops == a.hops
        assert b.path == a.path
        assert b.edges == a.edges
        assert b.score == pytest.approx(a.score, abs=1e-6)
    for key in ("anchor_id", "reachable_count", "max_reached_depth", "candidates_scored",
                "mode", "direction", "max_depth", "fallback"):
        assert db.trace[key] == mem.trace[key], key


# ---------------------------------------------------------------------- hand-traced graph
ONE_HOT = {
    "q": [1.0, 0.0, 0.0, 0.0],
    "node A name": [0.0, 1.0, 0.0, 0.0],
    "node B name": [1.0, 0.0, 0.0, 0.0],
    "node C name": [0.0, 0.0, 1.0, 0.0],
    "node D name": [1.0, 0.0, 0.0, 0.0],
    "node E name": [1.0, 0.0, 0.0, 0.0],
    "node F name": [0.0, 0.0, 0.0, 1.0],
    "node X name": [1.0, 0.0, 0.0, 0.0],
}


@pytest.fixture
def hand(table_embedder):
    """Edges in index order: 0 A>C, 1 A>B, 2 B>D, 3 C>D, 4 C>E, 5 D>F, 6 E>F, 7 F>A, 8 X>A."""
    g = KnowledgeGraph()
    for n in "ABCDEFX":
        g.add_node(n, name=f"{n} name", text=f"node {n} name", type="t", metadata={"k": n},
                   provenance=[f"p{n}"])
    for s, t, r in [("A", "C", "r"), ("A", "B", "r"), ("B", "D", "s"), ("C", "D", "t"),
                    ("C", "E", "t"), ("D", "F", "u"), ("E", "F", "u"), ("F", "A", "back"),
                    ("X", "A", "x")]:
        g.add_edge(s, t, relation=r, text=f"{s} {r} {t}", weight=0.5, provenance=["p0"])
    emb = table_embedder(ONE_HOT)
    return g, GraphIndex(g, emb), emb


def test_reachability_and_bfs_order_match_hand_trace(hand, drv):
    g, idx, emb = hand
    schema = load_graph(drv, idx)
    # out from A: level 1 in edge order [C, B]; C is scanned before B, so D's parent is C
    assert reachable_hops(drv, schema, "A") == {"A": 0, "C": 1, "B": 1, "D": 2, "E": 2, "F": 3}
    assert reachable_hops(drv, schema, "A", max_depth=1) == {"A": 0, "C": 1, "B": 1}
    assert reachable_hops(drv, schema, "F", direction="in") == {
        "F": 0, "D": 1, "E": 1, "B": 2, "C": 2, "A": 3, "X": 4,
    }
    assert reachable_hops(drv, schema, "B", direction="both") == {
        "B": 0, "D": 1, "A": 1, "F": 2, "C": 2, "X": 2, "E": 3,
    }
    pcr = CypherPCR(drv, embedder=emb, config=PAPER, schema=schema)
    res = pcr.retrieve("q", anchor="A", k=6)
    # scores: B = D = E = 1 (tie, BFS order B, D, E), then A, C, F = 0 in BFS order A, C, F
    assert res.ids == ["B", "D", "E", "A", "C", "F"]
    assert [h.score for h in res.hits] == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    by = {h.id: h for h in res.hits}
    assert by["F"].path == ("A", "C", "D", "F")
    assert [e.relation for e in by["F"].edges] == ["r", "t", "u"]
    assert by["D"].path == ("A", "C", "D")
    assert by["A"].path == ("A",) and by["A"].hops == 0
    assert by["F"].node == g.node("F")  # type, metadata, provenance survive the database
    assert by["F"].edges[0] == g.edges[0]
    assert_same(PathConstrainedRetriever(idx, config=PAPER).retrieve("q", anchor="A", k=6), res)


@pytest.mark.parametrize(
    ("anchor", "direction", "target", "path"),
    [
        ("F", "in", "A", ("F", "D", "B", "A")),
        ("F", "in", "X", ("F", "D", "B", "A", "X")),
        ("B", "both", "C", ("B", "A", "C")),  # forward edge A>C beats reversed C>D
        ("B", "both", "X", ("B", "A", "X")),
        ("B", "both", "E", ("B", "A", "C", "E")),
    ],
)
def test_paths_follow_the_in_memory_tie_rule(hand, drv, anchor, direction, target, path):
    g, idx, emb = hand
    schema = load_graph(drv, idx)
    pcr = CypherPCR(drv, embedder=emb, config=PAPER, schema=schema)
    res = pcr.retrieve("q", anchor=anchor, direction=direction, k=7)
    hit = {h.id: h for h in res.hits}[target]
    assert hit.path == path
    for a, b, e in zip(hit.path, hit.path[1:], hit.edges):
        assert {a, b} == {e.source, e.target}
    mem = PathConstrainedRetriever(idx, config=PAPER).retrieve(
        "q", anchor=anchor, direction=direction, k=7)
    assert mem.hits == res.hits  # one-hot scores are exact: bitwise equal results


def test_expand_one_hop_is_the_neighbourhood(hand, drv):
    g, idx, _ = hand
    schema = load_graph(drv, idx)
    out = {(s.node, s.neighbour, s.edge.relation) for s in expand_one_hop(drv, schema, ["C"])}
    assert out == {("C", "D", "t"), ("C", "E", "t")}
    inc = expand_one_hop(drv, schema, ["A"], direction="in")
    assert {(s.neighbour, s.forward) for s in inc} == {("F", False), ("X", False)}
    both = expand_one_hop(drv, schema, ["A"], direction="both", within=["B", "X"])
    assert {s.neighbour for s in both} == {"B", "X"}


# ---------------------------------------------------------------------- random graphs
def random_graph(seed: int, n: int, dim: int = 16, out_deg: float = 1.5) -> KnowledgeGraph:
    rnd = random.Random(seed)
    g = KnowledgeGraph()
    for i in range(n):
        g.add_node(f"n{i}", name=f"N{i % 7}", text=f"t{i}")
    for _ in range(int(out_deg * n)):
        g.add_edge(f"n{rnd.randrange(n)}", f"n{rnd.randrange(n)}",
                   relation=rnd.choice(["r", "s", ""]))
    emb = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    g.vectors.set(emb / np.linalg.norm(emb, axis=1, keepdims=True))
    return g


def test_random_graphs_equal_in_memory(drv):
    emb = HashingEmbedder(dim=16)
    for seed in range(8):
        rnd = random.Random(100 + seed)
        g = random_graph(seed, rnd.randint(2, 40))
        idx = GraphIndex(g, emb)
        schema = load_graph(drv, idx, replace=True)
        mem = PathConstrainedRetriever(idx, config=PAPER)
        db = CypherPCR(drv, embedder=emb, config=PAPER, schema=schema)
        for direction in ("out", "in", "both"):
            for max_depth in (None, 0, 1, 3):
                kw = dict(anchor=f"n{rnd.randrange(len(g))}", direction=direction,
                          max_depth=max_depth, include_anchor=rnd.random() < 0.5,
                          k=rnd.randint(1, 8))
                assert_same(mem.retrieve("some query", **kw), db.retrieve("some query", **kw))


def test_depth_beyond_one_query_window(drv):
    # Kùzu/Ladybug cap a variable-length bound at 30 hops; the search continues in windows
    g = KnowledgeGraph()
    for i in range(75):
        g.add_node(f"c{i}", text=f"chain node {i % 3}")
    for i in range(74):
        g.add_edge(f"c{i}", f"c{i + 1}")
    g.add_edge("c0", "c40", relation="shortcut")
    emb = HashingEmbedder(dim=16)
    schema = load_graph(drv, GraphIndex(g, emb))
    hops = reachable_hops(drv, schema, "c0")
    assert hops["c39"] == 39 and hops["c40"] == 1 and hops["c74"] == 35
    within_33 = reachable_hops(drv, schema, "c0", max_depth=33)
    assert within_33["c72"] == 33 and within_33["c33"] == 33
    assert "c73" not in within_33 and "c34" not in within_33 and len(within_33) == 67
    db = CypherPCR(drv, embedder=emb, config=PAPER, schema=schema)
    res = db.retrieve("q", anchor="c0", k=75)
    assert res.reachable_count == 75
    assert {h.id: h.hops for h in res.hits}["c39"] == 39
    mem = PathConstrainedRetriever(GraphIndex(g, emb), config=PAPER)
    assert_same(mem.retrieve("q", anchor="c0", k=75), res)


@pytest.mark.slow
def test_ten_thousand_nodes_push_down_equals_in_memory(drv):
    g = random_graph(7, 10_000, out_deg=2.0)
    emb = HashingEmbedder(dim=16)
    idx = GraphIndex(g, emb)
    schema = load_graph(drv, idx)
    assert drv.run(f"MATCH (n:{schema.n}) RETURN count(n) AS c")[0]["c"] == 10_000
    mem = PathConstrainedRetriever(idx, config=PAPER)
    db = CypherPCR(drv, embedder=emb, config=PAPER, schema=schema)
    rnd = random.Random(3)
    busy = np.flatnonzero((g.degree("out") > 0) & (g.degree("in") > 0))
    for direction, max_depth in [("out", 2), ("out", 4), ("in", 3), ("both", 2), ("out", None)]:
        anchor = g.node_at(int(busy[rnd.randrange(busy.size)])).id
        kw = dict(anchor=anchor, direction=direction, max_depth=max_depth, k=10)
        a, b = mem.retrieve("query text", **kw), db.retrieve("query text", **kw)
        assert a.reachable_count > 1
        assert_same(a, b)


# ---------------------------------------------------------------------- anchors & options
def test_anchor_resolution_and_options(hand, drv):
    g, idx, emb = hand
    schema = load_graph(drv, idx)
    mem = PathConstrainedRetriever(idx, config=PAPER)
    db = CypherPCR(drv, embedder=emb, config=PAPER, schema=schema,
                                                       page_size=2)
    cases = [
        dict(anchor_name="  c NAME "),  # case- and space-insensitive, like find_by_name
        # no anchor: most similar node over a paged global scan (ties: node order)
        dict(anchor_fallback="similar"),
        dict(anchor="nope", unknown_anchor="similar"),
        dict(anchor="X", k=3),
        dict(anchor="A", include_anchor=False, k=2),
        dict(anchor="X", max_depth=0, fallback="global", k=3),  # nothing reachable
        dict(anchor="X", max_depth=0, fallback="global", include_anchor=False, k=3),
    ]
    for kw in cases:
        a, b = mem.retrieve("q", **kw), db.retrieve("q", **kw)
        assert a.hits == b.hits, kw
        assert_same(a, b)
    res = db.retrieve("q", anchor="X", max_depth=0, fallback="global", k=3)
    assert res.fallback_used and res.ids == ["B", "D", "E"]
    assert [h.hops for h in res.hits] == [None, None, None]
    with pytest.raises(NodeNotFoundError, match="nope"):
        db.retrieve("q", anchor="nope")
    with pytest.raises(NodeNotFoundError, match="no node named 'zzz'"):
        db.retrieve("q", anchor_name="zzz")
    with pytest.raises(ConfigError, match="hybrid"):
        db.retrieve("q", anchor="A", mode="hybrid")
    with pytest.raises(ConfigError, match="unknown PCR option"):
        db.retrieve("q", anchor="A", kk=3)


def test_equal_names_broken_by_similarity(drv, table_embedder):
    g = KnowledgeGraph()
    g.add_node("a1", name="Same", text="far")
    g.add_node("a2", name="same", text="near")
    emb = table_embedder({"Same. far": [0.0, 1.0], "same. near": [1.0, 0.0], "q": [1.0, 0.0]})
    db = CypherPCR(drv, embedder=emb, config=PAPER, schema=load_graph(drv, GraphIndex(g, emb)))
    res = db.retrieve("q", anchor_name="SAME")
    assert res.anchor.id == "a2" and res.anchor_resolution.startswith("name (2 matches")


async def test_async_equals_sync(hand, drv):
    _, idx, emb = hand
    db = CypherPCR(drv, embedder=emb, config=PAPER, schema=load_graph(drv, idx))
    sync = db.retrieve("q", anchor="B", direction="both")
    results = await asyncio.gather(*[db.aretrieve("q", anchor="B", direction="both")
                                     for _ in range(3)])
    for r in results:
        assert r.hits == sync.hits
        assert r.trace["queries"] == sync.trace["queries"]


def test_load_refuses_non_empty_target(hand, drv):
    _, idx, _ = hand
    load_graph(drv, idx)
    with pytest.raises(ConfigError, match="already holds 7"):
        load_graph(drv, idx)
    load_graph(drv, idx, replace=True)
    assert drv.run("MATCH (n:KgNode) RETURN count(n) AS c")[0]["c"] == 7


# ---------------------------------------------------------------------- injection
HOSTILE = "x'}) MATCH (n) DETACH DELETE n //"
HOSTILE2 = 'y"}) DETACH DELETE n; CREATE (:Evil {a: 1}) RETURN 1 //`\n'


class Recording:
    """A CypherDriver that records every query (and forces the UNWIND loading path)."""

    def __init__(self, inner):
        self.inner, self.dialect, self.queries = inner, inner.dialect, []

    def run(self, query, parameters=None):
        self.queries.append((query, dict(parameters or {})))
        return self.inner.run(query, parameters)


@pytest.mark.parametrize("record_load", [False, True])
def test_hostile_names_cannot_inject_cypher(drv, record_load):
    g = KnowledgeGraph()
    g.add_node("a", name="start", text="start")
    g.add_node(HOSTILE, name=HOSTILE, text=HOSTILE)
    g.add_node(HOSTILE2, name=HOSTILE2, text=HOSTILE2 + " tail")
    g.add_edge("a", HOSTILE, relation=HOSTILE)
    g.add_edge(HOSTILE, HOSTILE2, relation=HOSTILE2, text=HOSTILE)
    emb = HashingEmbedder(dim=16)
    idx = GraphIndex(g, emb)
    rec = Recording(drv)
    schema = load_graph(rec if record_load else drv, idx)  # COPY path or UNWIND path
    db = CypherPCR(rec, embedder=emb, config=PAPER, schema=schema)
    mem = PathConstrainedRetriever(idx, config=PAPER)
    for kw in (dict(anchor=HOSTILE), dict(anchor_name=HOSTILE2, direction="in"),
               dict(anchor="a"), dict(anchor=HOSTILE2 + "'", unknown_anchor="similar")):
        assert_same(mem.retrieve(HOSTILE, **kw), db.retrieve(HOSTILE, **kw))
    for query, _ in rec.queries:
        assert "DETACH DELETE n //" not in query and "Evil" not in query
    assert any(HOSTILE in str(p) for _, p in rec.queries)  # ...they travelled as parameters
    assert drv.run("MATCH (n) RETURN count(n) AS c")[0]["c"] == 3
    hit = {h.id: h for h in db.retrieve("q", anchor="a", k=3).hits}[HOSTILE2]
    assert hit.node.text == HOSTILE2 + " tail" and hit.edges[1].relation == HOSTILE2


def test_identifiers_are_validated():
    with pytest.raises(ConfigError, match="node_label"):
        CypherSchema(node_label="KgNode`) DETACH DELETE n //")
    with pytest.raises(ConfigError, match="relationship type"):
        CypherSchema(rel_types=("A", "B C"))
    with pytest.raises(ConfigError, match="text_property"):
        CypherSchema(text_property="text}) RETURN 1")
    assert quote_identifier("ok_1") == "`ok_1`"
    with pytest.raises(ConfigError, match="depth bound"):
        Neo4jDialect().shortest_hops_query(CypherSchema(), "out", 0)


# ---------------------------------------------------------------------- failures
def test_closed_database_gives_clear_error(hand, tmp_path):
    _, idx, emb = hand
    d = EmbeddedCypherDriver.open(tmp_path / "db2")
    db = CypherPCR(d, embedder=emb, schema=load_graph(d, idx))
    d.close()
    with pytest.raises(BackendError, match="closed"):
        db.retrieve("q", anchor="A")
    # closing the engine's own connection behind the driver's back is reported too
    d2 = EmbeddedCypherDriver.open(tmp_path / "db3")
    d2.connection.close()
    with pytest.raises(BackendError, match="(?i)closed"):
        d2.run("RETURN 1 AS x")


def test_unopenable_database_gives_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(BackendError, match="cannot open embedded graph database"):
        EmbeddedCypherDriver.open(blocker / "db")
    with pytest.raises(ConfigError, match="engine"):
        EmbeddedCypherDriver.open(tmp_path / "x", engine="sqlite")


def test_unreachable_neo4j_server_gives_clear_error():
    neo4j = pytest.importorskip("neo4j")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = neo4j.GraphDatabase.driver(f"bolt://127.0.0.1:{port}", auth=("u", "p"),
                                        connection_timeout=2)
    try:
        db = CypherPCR(client, embedder=HashingEmbedder(dim=16))
        with pytest.raises(BackendError, match="Neo4j query failed .*ServiceUnavailable"):
            db.retrieve("q", anchor="a")
    finally:
        client.close()


class FakeRecord:
    def __init__(self, row):
        self.row = row

    def data(self):
        return self.row


class FakeSession:
    """Stands in for a neo4j Session: answers the reachability query of a 3-node chain."""

    __module__ = "neo4j._sync.work.session"

    def __init__(self):
        self.calls = []

    def run(self, query, params):
        self.calls.append((query, params))
        if "ANY SHORTEST" in query:
            hops = {"a": [("b", 1), ("c", 2)], "b": [("c", 1)]}
            return [FakeRecord({"id": i, "hops": h}) for s in params["sources"]
                    for i, h in hops.get(s, [])]
        raise RuntimeError("unexpected query")


def test_neo4j_dialect_queries_are_parameterised():
    sess = FakeSession()
    drv = as_cypher_driver(sess)
    assert isinstance(drv, Neo4jDriver) and isinstance(drv.dialect, Neo4jDialect)
    assert reachable_hops(drv, CypherSchema(), HOSTILE, max_depth=3) == {HOSTILE: 0}
    query, params = sess.calls[-1]
    assert "ANY SHORTEST (a:`KgNode` WHERE a.`id` IN $sources)-[:`KG_EDGE`]->{1,3}" in query
    assert HOSTILE not in query and params == {"sources": [HOSTILE]}
    assert reachable_hops(drv, CypherSchema(), "a") == {"a": 0, "b": 1, "c": 2}
    assert "{1,}" in sess.calls[-1][0]  # unbounded: one query, no window
    with pytest.raises(BackendError, match="Neo4j query failed .*unexpected query"):
        drv.run("RETURN 1", {})


def test_as_cypher_driver_accepts_engine_objects(drv):
    assert as_cypher_driver(drv) is drv
    wrapped = as_cypher_driver(drv.connection)
    assert isinstance(wrapped, EmbeddedCypherDriver)
    assert wrapped.run("RETURN $x AS x", {"x": HOSTILE}) == [{"x": HOSTILE}]
    assert isinstance(as_cypher_driver(drv.database).dialect, CypherDialect)
    with pytest.raises(ConfigError, match="cannot use 'dict'"):
        as_cypher_driver({})


ENGINE_SCRIPT = """
import sys
from kgpath import GraphIndex, KnowledgeGraph, PathConstrainedRetriever, HashingEmbedder
from kgpath.backends.cypher import EmbeddedCypherDriver, load_graph
from kgpath.methods.pcr import CypherPCR
g = KnowledgeGraph()
for n in "ABCDEFX":
    g.add_node(n, text="node " + n + " " + "xyz"[ord(n) % 3])
for s, t in ["AC", "AB", "BD", "CD", "CE", "DF", "EF", "FA", "XA"]:
    g.add_edge(s, t, relation=s + t)
idx = GraphIndex(g, HashingEmbedder(dim=16))
with EmbeddedCypherDriver.open(sys.argv[2], engine=sys.argv[1]) as d:
    db, mem = CypherPCR(d, embedder=idx.embedder, schema=load_graph(d, idx)), \
        PathConstrainedRetriever(idx)
    for kw in (dict(anchor="A"), dict(anchor="F", direction="in"),
               dict(anchor="B", direction="both", max_depth=2)):
        a, b = db.retrieve("node x", k=7, **kw), mem.retrieve("node x", k=7, **kw)
        assert [(h.id, h.path) for h in a.hits] == [(h.id, h.path) for h in b.hits], kw
    print("engine", d.engine, "ok")
"""


@pytest.mark.parametrize("engine", ["ladybug", "kuzu"])
def test_each_embedded_engine(engine, tmp_path):
    # one engine per process: ladybug and kuzu register the same native class names
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec(engine) is None:
        pytest.skip(f"{engine} is not installed")
    out = subprocess.run([sys.executable, "-c", ENGINE_SCRIPT, engine, str(tmp_path / "db")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == f"engine {engine} ok"


def test_second_engine_in_one_process_is_a_clear_error(tmp_path):
    import importlib.util

    loaded = [e for e in ("ladybug", "kuzu") if e in __import__("sys").modules]
    other = [e for e in ("ladybug", "kuzu") if e not in loaded and importlib.util.find_spec(e)]
    if not loaded or not other:
        pytest.skip("needs one engine loaded and the other installed")
    with pytest.raises(BackendError, match="cannot share a process"):
        EmbeddedCypherDriver.open(tmp_path / "db", engine=other[0])
    # refused before importing: a half-loaded second engine would crash the first one later
    assert other[0] not in __import__("sys").modules
