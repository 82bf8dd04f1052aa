"""FalkorDB under load and faults: pool, 100 concurrent queries, kill/restart, timeouts, injection.

Every fault test runs its own server (kgpath.backends.cypher.falkordb_server.FalkorDBServer)
and is bounded in time: timeouts of a second or less, at most a few retries.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from kgpath import (
    BackendError,
    GraphIndex,
    HashingEmbedder,
    KnowledgeGraph,
    PathConstrainedRetriever,
)
from kgpath.backends.cypher import FalkorDBDriver, load_graph
from kgpath.backends.cypher.falkordb_server import FalkorDBServer
from kgpath.methods.pcr import CypherPCR, PCRConfig

PAPER = PCRConfig.paper()  # the paper's reachability: out-edges, unlimited depth

pytestmark = pytest.mark.falkordb

HOSTILE = "x'}) MATCH (n) DETACH DELETE n //"
HOSTILE2 = 'y"}) DETACH DELETE n;\n CREATE (:Evil {a: 1}) RETURN 1 //`'
HOSTILE3 = 'z\\"}) CREATE (:Evil) //\\'  # backslashes next to quotes: the header escaping


def chain_graph(n=60):
    g = KnowledgeGraph()
    for i in range(n):
        g.add_node(f"c{i}", name=f"chain {i}", text=f"chain node {i % 5}")
    for i in range(n - 1):
        g.add_edge(f"c{i}", f"c{i + 1}", relation="next")
        if i % 3 == 0:
            g.add_edge(f"c{i}", f"c{(i * 7) % n}", relation="jump")
    return g


@pytest.fixture
def own_server(tmp_path):
    server = FalkorDBServer(tmp_path / "srv").start()
    yield server
    server.stop()


def loaded(server, g, **kw):
    drv = FalkorDBDriver.connect(server.host, server.port, "faults", **kw)
    emb = HashingEmbedder(dim=16)
    schema = load_graph(drv, GraphIndex(g, emb))
    return drv, CypherPCR(drv, embedder=emb, config=PAPER, schema=schema), emb


class Recording:
    def __init__(self, inner):
        self.inner, self.dialect, self.queries = inner, inner.dialect, []

    def run(self, query, parameters=None):
        self.queries.append((query, dict(parameters or {})))
        return self.inner.run(query, parameters)


def test_hostile_names_cannot_inject_cypher(falkordb_driver):
    g = KnowledgeGraph()
    g.add_node("a", name="start", text="start")
    for h in (HOSTILE, HOSTILE2, HOSTILE3):
        g.add_node(h, name=h, text=h + " tail")
    g.add_edge("a", HOSTILE, relation=HOSTILE)
    g.add_edge(HOSTILE, HOSTILE2, relation=HOSTILE2, text=HOSTILE)
    g.add_edge(HOSTILE2, HOSTILE3, relation=HOSTILE3, text=HOSTILE3)
    emb = HashingEmbedder(dim=16)
    idx = GraphIndex(g, emb)
    rec = Recording(falkordb_driver)
    schema = load_graph(rec, idx)
    db = CypherPCR(rec, embedder=emb, config=PAPER, schema=schema)
    mem = PathConstrainedRetriever(idx, config=PAPER)
    for kw in (dict(anchor=HOSTILE), dict(anchor_name=HOSTILE2, direction="in"),
               dict(anchor="a", k=4), dict(anchor=HOSTILE3, direction="both"),
               dict(anchor=HOSTILE2 + "'", unknown_anchor="similar")):
        a, b = mem.retrieve(HOSTILE, **kw), db.retrieve(HOSTILE, **kw)
        assert [(h.id, h.path, h.edges) for h in a.hits] == [(h.id, h.path, h.edges)
                                                              for h in b.hits]
    for query, _ in rec.queries:
        assert "DETACH DELETE n" not in query and "Evil" not in query
    # ...they travelled as parameters
    assert any(repr(HOSTILE3)[1:-1] in str(p) for _, p in rec.queries)
    assert falkordb_driver.run("MATCH (n) RETURN count(n) AS c")[0]["c"] == 4
    assert falkordb_driver.run("MATCH (n:Evil) RETURN count(n) AS c")[0]["c"] == 0
    hits = {h.id: h for h in db.retrieve("q", anchor="a", k=4).hits}
    assert hits[HOSTILE3].node.text == HOSTILE3 + " tail"
    assert hits[HOSTILE3].edges[2].relation == HOSTILE3


def test_ids_the_index_cannot_find_are_refused(falkordb_driver):
    from kgpath import ConfigError
    from kgpath.backends.cypher import CypherSchema

    g = KnowledgeGraph()
    g.add_node("has \x01 inside", name="n")
    with pytest.raises(ConfigError, match=r"range index cannot look up node ids .*has \\x01"):
        load_graph(falkordb_driver, g)
    # without a key property the id itself is indexed: long ids and trailing blanks refused
    plain = CypherSchema(key_property=None)
    for bad in ("ends in newline\n", "ends in space ", "x" * 4097):
        g = KnowledgeGraph()
        g.add_node(bad, name="n")
        with pytest.raises(ConfigError, match="range index cannot look up node ids") as ei:
            load_graph(falkordb_driver, g, schema=plain)
        assert repr(bad[:60])[1:-1] in str(ei.value)  # the message names the id
    assert falkordb_driver.run("MATCH (n) RETURN count(n) AS c")[0]["c"] == 0  # nothing written
    g = KnowledgeGraph()
    g.add_node("a", name="n")
    g.add_passage("p \x01", "text")
    with pytest.raises(ConfigError, match="passage ids"):
        load_graph(falkordb_driver, g)
    with pytest.raises(ConfigError, match="NUL"):
        falkordb_driver.run("RETURN $x AS x", {"x": ["ok", {"k": "a\x00b"}]})


@pytest.mark.parametrize("n_bytes", [4096, 4097, 9000, 40_000])
def test_long_and_blank_ended_ids_are_found_as_in_memory(falkordb_driver, n_bytes):
    """Ids over the range index's 4,096-byte key limit, or ending in whitespace, are found.

    Hand truth: the chain long -> b -> c -> blank; PCR from each end reaches the others with
    the in-memory hits and paths, and passages with such ids resolve.
    """
    long_id = ("é" * (n_bytes // 2))[: n_bytes // 2] + "x" * (n_bytes % 2)  # n_bytes bytes
    assert len(long_id.encode()) == n_bytes
    twin = long_id[:-1] + "y"  # same first 1000 characters: same lookup key
    blank = " padded id \n"
    long_pid = "p" * 5000
    g = KnowledgeGraph()
    g.add_passage(long_pid, "the long passage")
    g.add_passage(" p2 ", "the blank passage")
    g.add_node(long_id, name="start", text="the start", provenance=[long_pid])
    g.add_node(twin, name="twin", text="a twin of the start")
    g.add_node("b", name="b", text="middle node")
    g.add_node(blank, name="end", text="the end", provenance=[" p2 "])
    g.add_edge(long_id, "b", relation="to")
    g.add_edge(twin, "b", relation="to")
    g.add_edge("b", blank, relation="to")
    emb = HashingEmbedder(dim=16)
    idx = GraphIndex(g, emb)
    schema = load_graph(falkordb_driver, idx)
    db = CypherPCR(falkordb_driver, embedder=emb, config=PAPER, schema=schema)
    mem = PathConstrainedRetriever(idx, config=PAPER)
    for kw in (dict(anchor=long_id), dict(anchor=twin), dict(anchor=blank, direction="in"),
               dict(anchor="b", direction="both"), dict(anchor_name="start")):
        a, b = mem.retrieve("the end", **kw), db.retrieve("the end", **kw)
        assert [(h.id, h.hops, h.path) for h in b.hits] == [(h.id, h.hops, h.path)
                                                             for h in a.hits]
        # the database ranks passages by hit order (README), memory by similarity: same set
        assert sorted(e.text for e in b.evidence("passages")) == sorted(
            e.text for e in a.evidence("passages"))
    assert {h.id for h in db.retrieve("the end", anchor=long_id).hits} == {long_id, "b", blank}
    assert db.backend.node_by_id(twin).id == twin and db.backend.node_by_id(long_id).id == long_id
    assert [p.text for p in db.backend.passages([long_pid, " p2 "])] == [
        "the long passage", "the blank passage"]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0, 0, "5", True])
def test_bad_timeouts_are_config_errors_naming_the_value(bad):
    from kgpath import ConfigError

    with pytest.raises(ConfigError, match=rf"timeout must be None or a finite .*{bad!r}"):
        FalkorDBDriver(object(), timeout=bad)
    with pytest.raises(ConfigError, match=rf"got {bad!r}"):  # before any connection is tried
        FalkorDBDriver.connect("127.0.0.1", 1, timeout=bad)
    with pytest.raises(ConfigError, match="backoff"):
        FalkorDBDriver.connect("127.0.0.1", 1, backoff=float("nan"))


def test_hundred_concurrent_queries_equal_sequential(own_server):
    g = chain_graph(200)
    drv, db, _ = loaded(own_server, g, pool_size=8, timeout=30)
    jobs = [(f"chain node {i % 5}", f"c{(i * 13) % 200}", (None, 2, 5)[i % 3])
            for i in range(100)]

    def one(job):
        q, anchor, depth = job
        r = db.retrieve(q, anchor=anchor, max_depth=depth, k=5)
        return [(h.id, h.hops, h.path, round(h.score, 6)) for h in r.hits]

    sequential = [one(j) for j in jobs]
    with ThreadPoolExecutor(max_workers=32) as ex:  # more threads than pooled connections
        concurrent = list(ex.map(one, jobs))
    assert concurrent == sequential
    pool = drv.graph.client.connection.connection_pool
    assert pool.max_connections == 8
    drv.close()


def test_server_killed_mid_query_then_restart(own_server):
    g = chain_graph()
    drv, db, _ = loaded(own_server, g, timeout=20, retries=2, backoff=0.05)
    before = db.retrieve("chain node 3", anchor="c0", k=5)
    own_server.save()  # the restarted server loads this snapshot
    box = {}

    def slow():
        try:
            box["rows"] = drv.run("UNWIND range(1, 400000000) AS i RETURN sum(i) AS s")
        except BackendError as exc:
            box["error"] = exc

    t = threading.Thread(target=slow)
    t.start()
    time.sleep(0.5)
    own_server.kill()
    t.join(timeout=20)
    assert not t.is_alive()
    err = str(box["error"])
    assert own_server.address in err and "unreachable after 3 attempt(s)" in err
    with pytest.raises(BackendError, match=own_server.address):
        db.retrieve("chain node 3", anchor="c0", k=5)  # still down: retries run out
    own_server.start()
    after = db.retrieve("chain node 3", anchor="c0", k=5)  # the pool reconnects
    assert [(h.id, h.path) for h in after.hits] == [(h.id, h.path) for h in before.hits]
    drv.close()


def test_retry_with_backoff_rides_out_a_restart(own_server):
    g = chain_graph()
    drv, db, _ = loaded(own_server, g, timeout=20, retries=6, backoff=0.1)
    own_server.save()
    before = db.retrieve("chain node 1", anchor="c3", k=5)
    own_server.kill()
    timer = threading.Timer(0.4, own_server.start)  # back up while the query is retrying
    timer.start()
    t0 = time.perf_counter()
    after = db.retrieve("chain node 1", anchor="c3", k=5)
    waited = time.perf_counter() - t0
    timer.join(timeout=20)
    assert [(h.id, h.path) for h in after.hits] == [(h.id, h.path) for h in before.hits]
    assert 0.3 < waited < 15
    drv.close()


def test_slow_server_hits_the_configured_timeout(own_server):
    g = chain_graph()
    drv, db, _ = loaded(own_server, g, timeout=0.5, retries=3)
    own_server.pause()  # the server stops answering
    try:
        t0 = time.perf_counter()
        msg = r"did not answer within the timeout of 0\.5 s"
        with pytest.raises(BackendError, match=msg) as ei:
            db.retrieve("chain node 2", anchor="c0")
        assert time.perf_counter() - t0 < 3  # timeouts are not retried
        assert own_server.address in str(ei.value)
    finally:
        own_server.resume()
    assert db.retrieve("chain node 2", anchor="c0").hits  # answers again
    drv.close()


def test_unreachable_server_names_it(own_server):
    from kgpath.backends.cypher.falkordb_server import free_port

    port = free_port()
    with pytest.raises(BackendError, match=rf"127\.0\.0\.1:{port} graph 'g' unreachable"):
        FalkorDBDriver.connect("127.0.0.1", port, "g", timeout=1)
    drv = FalkorDBDriver.connect(own_server.host, own_server.port, "g", retries=1,
                                 backoff=0.01, timeout=1)
    own_server.stop()
    with pytest.raises(BackendError, match=rf"{own_server.port} graph 'g' unreachable after 2"):
        drv.run("RETURN 1 AS x")
