"""The whole PathRAG method over FalkorDB equals the in-memory retriever.

Truth: :class:`~kgpath.methods.pathrag.PathRAGRetriever` on the ``GraphIndex`` the
database was loaded from: retrieved nodes (ids, node indices, keywords), relations of the
high-level keywords, paths (node ids, order, reliabilities, Eq. 5 text), prompt paths,
context and prompt, text units, passage and native evidence, and the trace, for the
default configuration, ``PathRAGConfig.paper()`` and ``PathRAGConfig.literal_eq4()``,
sync and async, on the demo graph and on seeded random graphs built to stress ties
(duplicate names and texts, parallel edges, self-loops, co-occurrence edges the default
excludes, provenance naming passages the graph does not hold). The same comparison on
embedded Ladybug (Kùzu) runs without a server (``test_embedded_equals_in_memory``): its
tables have a fixed schema, so the name and relation-text vectors are not stored there and
``CypherPathRAG`` embeds them itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import json
import math
import random
import warnings

import pytest

from kgpath import GraphIndex, HashingEmbedder, KnowledgeGraph
from kgpath.backends.cypher import EmbeddedCypherDriver, load_graph
from kgpath.data import demo_corpus, load_demo_graph
from kgpath.errors import BackendError, CapabilityError, NodeNotFoundError
from kgpath.llm import ScriptedLLM
from kgpath.methods.pathrag import (
    CypherPathRAG,
    PathRAGConfig,
    PathRAGRetriever,
    offline_keywords,
    store_pathrag_vectors,
)

falkordb = pytest.mark.falkordb

PRESETS = {
    "default": PathRAGConfig(num_nodes=12),
    "paper": PathRAGConfig.paper(num_nodes=12),
    "paper_no_floor": PathRAGConfig.paper(num_nodes=12, min_similarity_z=None),
    "literal_eq4": PathRAGConfig.literal_eq4(num_nodes=8, max_hops=4),
}


def _question_of(prompt: str) -> str:
    """The question line of PathRAG's keyword prompt (``Question: {query}``)."""
    assert "Question:" in prompt, prompt
    return prompt.rsplit("Question:", 1)[-1].strip().splitlines()[0]


def keyword_llm(prompt: str) -> str:
    """Deterministic LLM keywords from the question's line: its longer words joined as one
    high-level keyword (a relation-like text: several separate words rarely clear the
    relations' z floor on the hashed demo graph), the offline ones low."""
    query = _question_of(prompt)
    words = [w.strip("?.,") for w in query.split() if len(w) > 3]
    return json.dumps({"high_level_keywords": [" and ".join(words) or "relation"],
                       "low_level_keywords": offline_keywords(query)})


def pair(index, drv, schema, cfg, llm=True):
    kw = {"llm": ScriptedLLM(keyword_llm)} if llm else {}
    mem = PathRAGRetriever(index, config=cfg, **kw)
    db = CypherPathRAG(drv, embedder=index.embedder, schema=schema, config=cfg, **kw)
    return mem, db


def assert_same(a, b):
    assert b.empty_reason == a.empty_reason
    assert [(n.id, n.index, n.keyword) for n in b.nodes] == [
        (n.id, n.index, n.keyword) for n in a.nodes]
    for x, y in zip(a.nodes, b.nodes, strict=True):
        assert (math.isnan(x.similarity) and math.isnan(y.similarity)) or \
            y.similarity == pytest.approx(x.similarity, abs=1e-6)
    assert [(r.index, r.edge, r.text) for r in b.relations] == [
        (r.index, r.edge, r.text) for r in a.relations]
    assert [p.ids for p in b.paths] == [p.ids for p in a.paths]
    for x, y in zip(a.paths, b.paths, strict=True):
        assert y.reliability == pytest.approx(x.reliability, abs=1e-6)
        assert y.resources == pytest.approx(x.resources, abs=1e-6)
        assert (y.text, y.edges, y.hop_edges, y.reversed_hops, y.rank) == (
            x.text, x.edges, x.hop_edges, x.reversed_hops, x.rank)
    assert [p.ids for p in b.prompt_paths] == [p.ids for p in a.prompt_paths]
    assert (b.context, b.prompt) == (a.context, a.prompt)
    assert b.text_units == a.text_units
    for out in ("passages", "native"):
        ea, eb = a.evidence(out), b.evidence(out)
        assert [(e.id, e.kind, e.text, e.trace) for e in eb] == [
            (e.id, e.kind, e.text, e.trace) for e in ea]
        assert [e.score for e in eb] == pytest.approx([e.score for e in ea], abs=1e-6)
    assert [c.ids for c in b.candidates()] == [c.ids for c in a.candidates()]
    extra = {"backend", "fetched_part_nodes", "pool_queries", "pool_fetched_nodes"}
    ta = {k: v for k, v in a.trace.items() if k != "timings_ms" and k not in extra}
    tb = {k: v for k, v in b.trace.items() if k != "timings_ms" and k not in extra}
    assert tb == ta


def both(mem, db, q, sync=True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # N >= |V| on the small graphs
        if sync:
            return mem.retrieve(q), db.retrieve(q)
        return asyncio.run(mem.aretrieve(q)), asyncio.run(db.aretrieve(q))


@pytest.fixture
def demo(falkordb_driver):
    index = GraphIndex(load_demo_graph(), HashingEmbedder(64))
    schema = load_graph(falkordb_driver, index)
    store_pathrag_vectors(falkordb_driver, index, schema=schema)
    return index, falkordb_driver, schema


DEMO_QUERIES = [q["query"] for q in demo_corpus()["queries"]] + [
    "Where did Marie Curie and Pierre Curie work?", "What did Niels Bohr propose?",
    "How is Warsaw linked to Ernest Rutherford?"]


@falkordb
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_demo_graph_equals_in_memory(demo, preset):
    index, drv, schema = demo
    mem, db = pair(index, drv, schema, PRESETS[preset])
    with_paths = with_relations = seeded = 0
    for q in DEMO_QUERIES:
        a, b = both(mem, db, q)
        assert_same(a, b)
        with_paths += bool(a.paths)
        with_relations += bool(a.relations)
        seeded += any(u.seeded for u in a.text_units)
    # equal results, not empty ones (hashed names rarely stand 1.5 std out: "paper" finds few)
    assert preset == "paper" or with_paths >= len(DEMO_QUERIES) // 2
    assert with_relations or preset == "literal_eq4"  # the keyword split is exercised
    # the defaults' passage seeds (sources.seed_text_units) are exercised; presets have none
    assert (seeded > 0) == (PRESETS[preset].seed_passages > 0)


@falkordb
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_demo_graph_async_and_offline_keywords(demo, preset):
    index, drv, schema = demo
    mem, db = pair(index, drv, schema, PRESETS[preset])
    for q in DEMO_QUERIES[:4]:
        a, b = both(mem, db, q, sync=False)
        assert_same(a, b)
        assert_same(b, db.retrieve(q))  # sync == async
    mem, db = pair(index, drv, schema, PRESETS[preset], llm=False)
    for q in DEMO_QUERIES[:4]:
        assert_same(*both(mem, db, q))


@falkordb
def test_vectors_embedded_when_not_stored(falkordb_driver):
    """Without store_pathrag_vectors the names and relation texts are embedded in process."""
    index = GraphIndex(load_demo_graph(), HashingEmbedder(64))
    schema = load_graph(falkordb_driver, index)
    for cfg in (PRESETS["paper"], PRESETS["default"]):
        mem, db = pair(index, falkordb_driver, schema, cfg)
        for q in DEMO_QUERIES[:3]:
            assert_same(*both(mem, db, q))


@falkordb
def test_retrieve_from_nodes_and_errors(demo):
    index, drv, schema = demo
    mem, db = pair(index, drv, schema, PathRAGConfig())
    ids = ["marie_curie", "pierre_curie", "radium", "sorbonne"]
    ids = [i for i in ids if i in index.graph] or [n.id for n in index.graph.nodes][:4]
    assert_same(mem.retrieve_from_nodes("q?", ids), db.retrieve_from_nodes("q?", ids))
    with pytest.raises(NodeNotFoundError):
        db.retrieve_from_nodes("q?", [ids[0], "no such node"])
    with pytest.raises(CapabilityError):
        _ = db.graph


def random_questions(rnd: random.Random, n: int = 4) -> list[str]:
    """``n`` questions of four words drawn from the demo's vocabulary."""
    words = ["radium", "Paris", "prize", "Curie", "Bohr", "atom", "Warsaw", "lab", "ore", "who",
             "linked"]
    return [" ".join(rnd.choices(words, k=4)) + "?" for _ in range(n)]


def random_index(seed: int) -> GraphIndex:
    rnd = random.Random(seed)
    words = ["radium", "Paris", "prize", "Curie", "Bohr", "atom", "Warsaw", "lab", "ore"]
    g = KnowledgeGraph()
    n_pass = rnd.randint(3, 12)
    for p in range(n_pass):
        g.add_passage(f"p{p}", " ".join(rnd.choices(words, k=6)))
    n = rnd.randint(8, 40)
    for i in range(n):
        name = " ".join(rnd.choices(words, k=rnd.randint(1, 2)))  # duplicate names: ties
        g.add_node(f"v{i}", name, rnd.choice(["", name, f"{name} text"]),
                   provenance=rnd.sample([f"p{p}" for p in range(n_pass + 2)], rnd.randint(0, 3)))
    for _ in range(int(n * rnd.uniform(1.0, 2.5))):
        a, b = f"v{rnd.randrange(n)}", f"v{rnd.randrange(n)}"  # self-loops too
        g.add_edge(a, b, rnd.choice(["r", "s", "co-occurs with"]), rnd.choice(["", "an edge"]),
                   type=rnd.choice([None, "relation", "cooccurrence"]),
                   provenance=rnd.sample([f"p{p}" for p in range(n_pass)], rnd.randint(0, 2)))
    return GraphIndex(g, HashingEmbedder(16))


@falkordb
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_random_graphs_equal_in_memory(falkordb_driver, preset):
    found = 0
    for seed in range(6):
        index = random_index(seed)
        schema = load_graph(falkordb_driver, index, replace=True)
        if seed % 2 == 0:
            store_pathrag_vectors(falkordb_driver, index, schema=schema)
        mem, db = pair(index, falkordb_driver, schema, PRESETS[preset])
        for q in random_questions(random.Random(seed)):
            a, b = both(mem, db, q)
            assert_same(a, b)
            found += len(a.paths)
        a, b = both(mem, db, "Curie prize?", sync=False)
        assert_same(a, b)
    assert found  # paths were found and compared


@falkordb
def test_cached_vectors_equal_until_refresh(falkordb_driver):
    """cache_vectors keeps the scanned matrices; refresh() reads a changed store again."""
    index = random_index(1)
    schema = load_graph(falkordb_driver, index)
    cfg = PathRAGConfig(num_nodes=6)
    mem = PathRAGRetriever(index, config=cfg, llm=ScriptedLLM(keyword_llm))
    db = CypherPathRAG(falkordb_driver, embedder=index.embedder, schema=schema, config=cfg,
                       llm=ScriptedLLM(keyword_llm), cache_vectors=True)
    for q in ("Curie prize?", "Paris atom lab?"):
        assert_same(*both(mem, db, q))
    other = random_index(4)
    load_graph(falkordb_driver, other, replace=True)
    mem = PathRAGRetriever(other, config=cfg, llm=ScriptedLLM(keyword_llm))
    db.refresh()
    assert_same(*both(mem, db, "Curie prize?"))


@pytest.mark.skipif(not (importlib.util.find_spec("ladybug") or importlib.util.find_spec("kuzu")),
                    reason="needs ladybug or kuzu")
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_embedded_equals_in_memory(tmp_path, preset):
    for k, index in enumerate((GraphIndex(load_demo_graph(), HashingEmbedder(64)),
                               random_index(2))):
        drv = EmbeddedCypherDriver.open(tmp_path / f"db{k}")
        try:
            schema = load_graph(drv, index)
            mem, db = pair(index, drv, schema, PRESETS[preset])
            for q in DEMO_QUERIES[:4]:
                assert_same(*both(mem, db, q))
            assert_same(*both(mem, db, DEMO_QUERIES[0], sync=False))
        finally:
            drv.close()


# ----------------------------------------------------------------------------- vector file
def file_pair(index, drv, schema, cfg, vdir, llm=True):
    """In-memory vs CypherPathRAG reading node and passage vectors from ``vdir`` only."""
    mem, db = pair(index, drv, schema, cfg, llm)
    db = CypherPathRAG(drv, embedder=index.embedder, schema=schema, config=cfg,
                       vectors=vdir, **({"llm": ScriptedLLM(keyword_llm)} if llm else {}))

    def no_scan(*_a, **_k):
        raise AssertionError("the store's vectors were scanned despite the vector file")
    db._node_matrix_db = no_scan  # node_match="text" and unit_order read the file only
    db._scan_passages = no_scan
    return mem, db


FILE_PRESETS = {  # node_match="text": the vectors the file holds (names have no file)
    "default": PRESETS["default"],
    "paper_text": PathRAGConfig.paper(num_nodes=12, node_match="text"),
    "literal_eq4_text": PathRAGConfig.literal_eq4(num_nodes=8, max_hops=4, node_match="text"),
    "similarity_per_keyword": PathRAGConfig(num_nodes=12, unit_order="similarity",
                                            node_query="per_keyword"),
}


@falkordb
@pytest.mark.parametrize("preset", sorted(FILE_PRESETS))
def test_vector_file_equals_in_memory_demo(falkordb_driver, tmp_path, preset):
    index = GraphIndex(load_demo_graph(), HashingEmbedder(64))
    schema = load_graph(falkordb_driver, index, vector_dir=tmp_path / "v")
    store_pathrag_vectors(falkordb_driver, index, schema=schema)
    mem, db = file_pair(index, falkordb_driver, schema, FILE_PRESETS[preset], tmp_path / "v")
    seeded = 0
    for q in DEMO_QUERIES:
        a, b = both(mem, db, q)
        assert_same(a, b)
        seeded += any(u.seeded for u in a.text_units)
    cfg = FILE_PRESETS[preset]
    assert (seeded > 0) == (cfg.seed_passages > 0 and cfg.unit_order == "question")
    assert_same(*both(mem, db, DEMO_QUERIES[0], sync=False))
    mem, db = file_pair(index, falkordb_driver, schema, FILE_PRESETS[preset], tmp_path / "v",
                        llm=False)
    for q in DEMO_QUERIES[:4]:
        assert_same(*both(mem, db, q))


@falkordb
@pytest.mark.parametrize("preset", sorted(FILE_PRESETS))
def test_vector_file_equals_in_memory_random(falkordb_driver, tmp_path, preset):
    found = 0
    for seed in range(6):
        index = random_index(seed)
        vdir = tmp_path / f"v{seed}"
        schema = load_graph(falkordb_driver, index, replace=True, vector_dir=vdir,
                            embeddings=seed % 2 == 0)  # odd seeds: the database holds none
        cfg = dataclasses.replace(FILE_PRESETS[preset], node_query="per_keyword") \
            if seed % 3 == 0 else FILE_PRESETS[preset]  # several keyword rows, one file pass
        mem, db = file_pair(index, falkordb_driver, schema, cfg, vdir)
        for q in random_questions(random.Random(seed)):
            a, b = both(mem, db, q)
            assert_same(a, b)
            found += len(a.paths)
    assert found


@falkordb
def test_vector_file_of_another_graph_is_refused(falkordb_driver, tmp_path):
    index = random_index(1)
    load_graph(falkordb_driver, random_index(4), vector_dir=tmp_path / "old")
    schema = load_graph(falkordb_driver, index, replace=True)
    db = CypherPathRAG(falkordb_driver, embedder=index.embedder, schema=schema,
                       vectors=tmp_path / "old", config=PathRAGConfig(num_nodes=6))
    with pytest.raises(BackendError, match="vector file"):
        db.retrieve("Curie prize?")


@falkordb
@pytest.mark.parametrize("preset", ["default", "literal_eq4"])
def test_heavy_nodes_looked_up_by_pair(falkordb_driver, tmp_path, preset, monkeypatch):
    """heavy_degree=1: most ball nodes are heavy; their edges come from pair lookups."""
    import kgpath.methods.pathrag.cypher as cy

    calls = []
    real = cy.edges_among
    monkeypatch.setattr(cy, "edges_among", lambda *a: calls.append(a[1]) or real(*a))
    for seed in range(4):
        index = random_index(seed)
        schema = load_graph(falkordb_driver, index, replace=True)
        cfg = PRESETS[preset]
        mem = PathRAGRetriever(index, config=cfg, llm=ScriptedLLM(keyword_llm))
        db = CypherPathRAG(falkordb_driver, embedder=index.embedder, schema=schema,
                           config=cfg, llm=ScriptedLLM(keyword_llm), heavy_degree=1)
        for q in ("Curie prize?", "Paris atom lab Warsaw?", "who linked Bohr ore?"):
            assert_same(*both(mem, db, q))
    assert calls or preset == "literal_eq4"  # edge flow used the pair lookups


# ----------------------------------------------------------------------------- edge file
def edge_file_pair(index, drv, schema, cfg, vdir):
    """In-memory vs CypherPathRAG reading every vector from the files in ``vdir`` only.

    The stored node, passage and edge vectors must not be scanned (the test fails if the
    edge file is ignored).
    """
    mem = PathRAGRetriever(index, config=cfg, llm=ScriptedLLM(keyword_llm))
    db = CypherPathRAG(drv, embedder=index.embedder, schema=schema, config=cfg,
                       vectors=vdir, llm=ScriptedLLM(keyword_llm))

    def no_scan(*_a, **_k):
        raise AssertionError("the store's vectors were scanned despite the vector files")
    db._node_matrix_db = no_scan
    db._scan_passages = no_scan
    db._edge_matrix_db = no_scan
    return mem, db


@falkordb
@pytest.mark.parametrize("preset", sorted(FILE_PRESETS))
def test_edge_file_equals_in_memory_demo(falkordb_driver, tmp_path, preset):
    index = GraphIndex(load_demo_graph(), HashingEmbedder(64))
    vdir = tmp_path / "v"
    schema = load_graph(falkordb_driver, index, vector_dir=vdir)
    store_pathrag_vectors(falkordb_driver, index, schema=schema, vector_dir=vdir)
    mem, db = edge_file_pair(index, falkordb_driver, schema, FILE_PRESETS[preset], vdir)
    assert db.files.edges.count == index.graph.num_edges
    relations = 0
    for q in DEMO_QUERIES:
        a, b = both(mem, db, q)
        assert_same(a, b)
        relations += len(a.relations)
    assert relations or preset == "literal_eq4_text"  # (no keyword split there)
    assert_same(*both(mem, db, DEMO_QUERIES[0], sync=False))


def tied_index(seed: int) -> GraphIndex:
    """Few names, two relations, no edge text: many edges share their relation text."""
    rnd = random.Random(seed)
    g = KnowledgeGraph()
    g.add_passage("p0", "Curie Paris prize")
    n = rnd.randint(10, 30)
    for i in range(n):
        g.add_node(f"v{i}", rnd.choice(["Curie", "Paris", "prize"]), provenance=["p0"])
    for _ in range(n * 3):
        g.add_edge(f"v{rnd.randrange(n)}", f"v{rnd.randrange(n)}", rnd.choice(["r", "s"]))
    return GraphIndex(g, HashingEmbedder(16))


@falkordb
@pytest.mark.parametrize("preset", ["default", "paper_text"])
def test_edge_file_equals_in_memory_random(falkordb_driver, tmp_path, preset):
    """Random graphs, and graphs of tied relation texts: ties break by edge order."""
    relations = ties = 0
    for seed in range(8):
        index = random_index(seed) if seed % 2 else tied_index(seed)
        vdir = tmp_path / f"v{seed}"
        schema = load_graph(falkordb_driver, index, replace=True, vector_dir=vdir)
        store_pathrag_vectors(falkordb_driver, index, schema=schema, vector_dir=vdir)
        cfg = dataclasses.replace(FILE_PRESETS[preset], num_relations=7)
        if seed % 4 < 2:  # no floor: the top num_relations are kept, tied ones among them
            cfg = dataclasses.replace(cfg, min_similarity_z=None)
        mem, db = edge_file_pair(index, falkordb_driver, schema, cfg, vdir)
        for q in random_questions(random.Random(seed)):
            a, b = both(mem, db, q)
            assert_same(a, b)
            relations += len(a.relations)
            texts = [r.text for r in a.relations]
            ties += len(texts) - len(set(texts))
    assert relations and ties  # relations were compared, some of them tied


@falkordb
def test_stale_edge_file_is_refused(falkordb_driver, tmp_path):
    """Another edge count, another edge at a row's rank, a renamed end: BackendError."""
    index = GraphIndex(load_demo_graph(), HashingEmbedder(64))
    vdir = tmp_path / "v"
    schema = load_graph(falkordb_driver, index, vector_dir=vdir)
    store_pathrag_vectors(falkordb_driver, index, schema=schema, vector_dir=vdir)
    cfg = PathRAGConfig(num_nodes=12, min_similarity_z=None)
    q = "Where did Marie Curie and Pierre Curie work?"
    mem, db = edge_file_pair(index, falkordb_driver, schema, cfg, vdir)
    a, b = both(mem, db, q)
    assert_same(a, b)
    assert a.relations
    m = index.graph.num_edges
    run = falkordb_driver.run
    run("MATCH ()-[r]->() SET r.rank = $m - 1 - r.rank", {"m": m})  # rows name other edges
    with pytest.raises(BackendError, match="edge vector file .* is stale: its row"):
        db.retrieve(q)
    run("MATCH ()-[r]->() SET r.rank = $m - 1 - r.rank", {"m": m})
    assert_same(a, db.retrieve(q))  # the store is back as the file says
    top = a.relations[0].edge
    run("MATCH (n {id: $id}) SET n.name = n.name + ' (renamed)'", {"id": top.source})
    with pytest.raises(BackendError, match="relation text"):  # the row's text changed
        db.retrieve(q)
    run("MATCH (n {id: $id}) SET n.name = $name", {"id": top.source,
                                                    "name": index.graph.node(top.source).name})
    run("MATCH (a {id: $s})-[r]->(b {id: $t}) WHERE r.rank = $k DELETE r",
        {"s": top.source, "t": top.target, "k": a.relations[0].index})
    with pytest.raises(BackendError, match=f"has {m} rows but the database holds {m - 1}"):
        db.retrieve(q)


@pytest.mark.skipif(not (importlib.util.find_spec("ladybug") or importlib.util.find_spec("kuzu")),
                    reason="needs ladybug or kuzu")
def test_edge_file_embedded_equals_in_memory(tmp_path):
    """Embedded Ladybug (fixed tables: no stored relation vectors): the edge file instead."""
    from kgpath.backends.cypher.vectors import stage_vector_file
    from kgpath.methods.pathrag.dbstore import pathrag_edge_vectors

    for k, index in enumerate((GraphIndex(load_demo_graph(), HashingEmbedder(64)),
                               tied_index(3))):
        drv = EmbeddedCypherDriver.open(tmp_path / f"db{k}")
        try:
            vdir = tmp_path / f"v{k}"
            schema = load_graph(drv, index, vector_dir=vdir)
            stage_vector_file(vdir, "edges", *pathrag_edge_vectors(index)).publish()
            mem, db = edge_file_pair(index, drv, schema, FILE_PRESETS["default"], vdir)
            relations = 0
            for q in DEMO_QUERIES[:6] + ["Curie prize Paris?"]:
                a, b = both(mem, db, q)
                assert_same(a, b)
                relations += len(a.relations)
            assert relations
        finally:
            drv.close()
