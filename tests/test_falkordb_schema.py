"""Schema-guided retrieval on FalkorDB equals the in-memory retriever (issue 22).

Truth: :class:`SchemaGuidedRetriever` on the graph the database was loaded from - the
plan, every sub-question's typed hits (ids, order, scores within 1e-6, schema types,
affinities), triples, passages and traces, and the merged evidence (both outputs) - on the
demo graph (LLM-free and scripted-LLM decomposition, with and without community routing,
sync and async) and on seeded random typed graphs whose labels exercise the push-down's
superset (case variants, ``metadata["schema_type"]`` overriding the type, non-ASCII
values, attributes, layer nodes and edges). Plus what is fetched: a type-filtered
sub-question reads its typed candidates and the hits' neighbours, not the graph.
"""

from __future__ import annotations

import asyncio
import json
import random
import warnings

import pytest

from kgpath import GraphIndex, HashingEmbedder, KnowledgeGraph, ScriptedLLM
from kgpath.backends.cypher import CypherBackend, load_graph
from kgpath.data import load_demo_graph
from kgpath.errors import ConfigError
from kgpath.ingest.hierarchy import HierarchyConfig, build_hierarchy
from kgpath.ingest.schema import Schema
from kgpath.methods.schema import (
    CypherSchemaRetriever,
    DecompositionPlan,
    SchemaGuidedRetriever,
    SchemaRetrieverConfig,
)
from kgpath.methods.schema.spec import schema_from_graph
from kgpath.methods.schema.typed import retrieve_typed

pytestmark = [pytest.mark.falkordb, pytest.mark.filterwarnings("ignore::UserWarning")]

TIMING = {"started_s", "ended_s", "decompose_s", "total_s", "backend", "queries", "seconds"}
QUESTIONS = [
    "Which place was Marie Curie born in?",
    "Who discovered radium and where was its ore mined?",
    "What award did Pierre Curie receive?",
    "Which element did Marie Curie isolate?",
    "Which theory did Niels Bohr propose; who married Pierre Curie?",
]
CONFIGS = [
    {},
    {"type_mode": "boost"},
    {"type_mode": "off"},
    {"empty_filter": "empty", "k": 2, "k_triples": 1, "k_passages": 1},
    {"include_layer_nodes": True, "k": 8, "k_triples": 0},
]


def _items(items):
    return [(it.kind, it.key, it.text, it.schema_type, it.sub_questions, it.type_affinity,
             it.node, it.edge, it.passage) for it in items]


def assert_same(mem, db):
    """Equal plans, sub-question results, merged items and evidence (scores within 1e-6)."""
    assert db.plan == mem.plan
    assert len(db.sub_results) == len(mem.sub_results)
    for a, b in zip(mem.sub_results, db.sub_results, strict=True):
        assert (b.index, b.question, b.types) == (a.index, a.question, a.types)
        for kind in ("nodes", "triples", "passages"):
            x, y = getattr(a, kind), getattr(b, kind)
            assert _items(y) == _items(x), kind
            assert [i.score for i in y] == pytest.approx([i.score for i in x], abs=1e-6)
            assert [i.base_score for i in y] == pytest.approx([i.base_score for i in x],
                                                              abs=1e-6)
        strip = lambda t: {k: v for k, v in t.items() if k not in TIMING}  # noqa: E731
        assert strip(b.trace) == strip(a.trace)
    for kind in ("nodes", "triples", "passages"):
        assert _items(getattr(db, kind)) == _items(getattr(mem, kind))
    assert db.ids == mem.ids
    for output in ("passages", "native"):
        x, y = mem.evidence(output), db.evidence(output)
        assert [(e.id, e.kind, e.text, e.trace, e.rank) for e in y] == [
            (e.id, e.kind, e.text, e.trace, e.rank) for e in x]
        assert [e.score for e in y] == pytest.approx([e.score for e in x], abs=1e-6)


@pytest.fixture
def demo(falkordb_driver):
    index = GraphIndex(load_demo_graph(), HashingEmbedder())
    load_graph(falkordb_driver, index)
    return index, schema_from_graph(index.graph), falkordb_driver


def test_demo_graph_equals_in_memory_sync_and_async(demo):
    index, schema, drv = demo
    mem = SchemaGuidedRetriever(index, schema=schema)
    db = CypherSchemaRetriever(CypherBackend(drv, embedder=index.embedder, page_size=8),
                               schema=schema)
    for q in QUESTIONS:
        for ov in CONFIGS:
            ref = mem.retrieve(q, **ov)
            assert_same(ref, db.retrieve(q, **ov))
            assert_same(ref, asyncio.run(db.aretrieve(q, **ov)))
    res = db.retrieve(QUESTIONS[1])
    assert res.trace["backend"] == "cypher/falkordb" and res.trace["queries"] > 0


def test_scripted_llm_decomposition(demo):
    index, schema, drv = demo
    reply = json.dumps({
        "sub_questions": ["Who discovered polonium?", "Where was Marie Curie born?"],
        "involved_types": {"nodes": ["Person", "Place", "Spaceship"], "relations": []},
    })
    mem = SchemaGuidedRetriever(index, schema=schema, llm=ScriptedLLM([reply]))
    db = CypherSchemaRetriever(drv, schema=schema, embedder=index.embedder,
                               llm=ScriptedLLM([reply]))
    ref = mem.retrieve("Polonium and Marie Curie's birthplace?")
    got = db.retrieve("Polonium and Marie Curie's birthplace?")
    assert got.plan.source == "llm" and got.plan.dropped == ("entity:Spaceship",)
    assert_same(ref, got)
    a_mem = SchemaGuidedRetriever(index, schema=schema, llm=ScriptedLLM(["not json"]))
    a_db = CypherSchemaRetriever(drv, schema=schema, embedder=index.embedder,
                                 llm=ScriptedLLM(["not json"]))
    q = "Which element did Marie Curie isolate?"
    ref = asyncio.run(a_mem.aretrieve(q))
    got = asyncio.run(a_db.aretrieve(q))
    assert got.plan.source == "fallback"  # the heuristic over the store's node names
    assert_same(ref, got)


def test_community_routing(falkordb_driver):
    g = load_demo_graph()
    h = build_hierarchy(g, config=HierarchyConfig(resolution=1.5))
    h.attach(g)  # keyword and community layer nodes and edges live in the graph
    index = GraphIndex(g, HashingEmbedder())
    load_graph(falkordb_driver, index)
    schema = schema_from_graph(g)
    cfg = SchemaRetrieverConfig(route_min_nodes=1, route_top_communities=2)
    mem = SchemaGuidedRetriever(index, schema=schema, hierarchy=h, config=cfg)
    db = CypherSchemaRetriever(falkordb_driver, schema=schema, embedder=index.embedder,
                               hierarchy=h, config=cfg)
    for q in QUESTIONS:
        for ov in CONFIGS:
            ref = mem.retrieve(q, **ov)
            assert "routed_communities" in ref.sub_results[0].trace
            assert_same(ref, db.retrieve(q, **ov))
    no_route = {"route_min_nodes": 10_000}  # the demo graph is too small to route
    assert_same(mem.retrieve(QUESTIONS[0], **no_route), db.retrieve(QUESTIONS[0], **no_route))


SCHEMA = Schema.from_dict({
    "entities": [{"name": "Person", "aliases": ["human"]}, {"name": "Place"},
                 {"name": "Thing Type", "aliases": ["Café"]}],
    "relations": [{"name": "born in", "aliases": ["birthplace"]}, {"name": "made"},
                  {"name": "likes"}],
    "attributes": [{"name": "age"}, {"name": "colour", "aliases": ["color"]}],
})
TYPE_SPELLINGS = ["Person", "person", "HUMAN", "Place", "place ", "thing_type", "Thing-Type",
                  "Café", "Other", None, ""]
REL_SPELLINGS = ["born in", "Born_In", "birthplace", "made", "MADE", "likes", "knows"]


def random_graph(seed: int) -> KnowledgeGraph:
    """Typed nodes and edges whose labels exercise every rule of the exact check."""
    rnd = random.Random(seed)
    g = KnowledgeGraph()
    n = rnd.randint(8, 45)
    words = ["alpha", "beta", "gamma", "delta", "born", "made", "place", "person", "river"]
    for i in range(n):
        meta: dict = {}
        x = rnd.random()
        if x < 0.15:
            meta["schema_type"] = rnd.choice(TYPE_SPELLINGS)  # may override the type
        elif x < 0.2:
            meta["attributes"] = {"schema_type": rnd.choice(TYPE_SPELLINGS[:3])}  # nested
        if rnd.random() < 0.25:
            meta.setdefault("attributes", {})[rnd.choice(["age", "Color", "size"])] = 3
        if rnd.random() < 0.1:
            meta[rnd.choice(["colour", "weight"])] = "red"
        if rnd.random() < 0.08:
            meta["layer"] = rnd.choice(["keyword", "community", "other"])
        g.add_node(f"n{i}", name=f"{rnd.choice(words)} {i}",
                   text=" ".join(rnd.choice(words) for _ in range(4)),
                   type=rnd.choice(TYPE_SPELLINGS), metadata=meta,
                   provenance=[f"p{rnd.randrange(6)}" for _ in range(rnd.randint(0, 2))])
    for _ in range(rnd.randint(0, 3 * n)):
        emeta: dict = {}
        if rnd.random() < 0.15:
            emeta["schema_type"] = rnd.choice(REL_SPELLINGS + [None])
        if rnd.random() < 0.05:
            emeta["layer"] = "community"
        g.add_edge(f"n{rnd.randrange(n)}", f"n{rnd.randrange(n)}",
                   relation=rnd.choice(REL_SPELLINGS), type=rnd.choice([None, "", "made"]),
                   metadata=emeta, provenance=[f"p{rnd.randrange(6)}"])
    for p in range(5):  # p5 is cited but not held
        g.add_passage(f"p{p}", f"passage {p} " + " ".join(rnd.choice(words) for _ in range(3)))
    return g


def random_plan(rnd: random.Random, question: str) -> DecompositionPlan:
    subs = [question, f"{question} {rnd.choice(['again', 'born', 'made'])}"][:rnd.randint(1, 2)]
    types = {"nodes": rnd.sample(["Person", "Place", "Thing Type"], rnd.randint(0, 2)),
             "relations": rnd.sample(["born in", "made", "likes"], rnd.randint(0, 1)),
             "attributes": rnd.sample(["age", "colour"], rnd.randint(0, 1))}
    return DecompositionPlan.from_questions(question, subs, types, schema=SCHEMA)


def random_config(rnd: random.Random) -> dict:
    return {"k": rnd.randint(1, 6), "k_triples": rnd.randint(0, 4),
            "k_passages": rnd.randint(0, 3), "type_mode": rnd.choice(["filter", "boost", "off"]),
            "empty_filter": rnd.choice(["boost", "empty"]), "boost": rnd.choice([0.1, 0.5]),
            "include_layer_nodes": rnd.random() < 0.2}


@pytest.mark.parametrize("seed", range(8))
def test_random_typed_graphs_equal_in_memory(falkordb_driver, seed):
    g = random_graph(seed)
    index = GraphIndex(g, HashingEmbedder(dim=16))
    load_graph(falkordb_driver, index)
    mem = SchemaGuidedRetriever(index, schema=SCHEMA)
    backend = CypherBackend(falkordb_driver, embedder=index.embedder, page_size=7)
    db = CypherSchemaRetriever(backend, schema=SCHEMA)
    rnd = random.Random(seed)
    for _ in range(20):
        q = rnd.choice(["alpha born", "person made river", "gamma place", "delta"])
        plan, ov = random_plan(rnd, q), random_config(rnd)
        ref = mem.retrieve(q, plan=plan, **ov)
        assert_same(ref, db.retrieve(q, plan=plan, **ov))
    q = "Who was born in a place and what did a person make?"
    assert_same(mem.retrieve(q), db.retrieve(q))  # heuristic plan over the store's names
    assert_same(mem.retrieve(q), asyncio.run(db.aretrieve(q)))


def test_type_filter_is_pushed_down(falkordb_driver):
    g = KnowledgeGraph()
    for i in range(200):
        g.add_node(f"t{i}", name=f"thing {i}", text="a thing", type="Thing Type")
    g.add_node("ann", name="Ann", text="a person", type="Person")
    g.add_node("bob", name="Bob", text="a person", type="Thing Type",
               metadata={"schema_type": "human"})  # the metadata overrides the type
    g.add_node("cid", name="Cid", text="a person", type="Person",
               metadata={"schema_type": "Place"})
    g.add_node("dee", name="Dee", text="a place", type="place")
    g.add_edge("ann", "t0", relation="made")
    g.add_edge("bob", "dee", relation="born in")
    g.add_edge("cid", "t1", relation="knows", metadata={"schema_type": "birthplace"})
    g.add_edge("ann", "t2", relation="born in", metadata={"schema_type": "made"})
    index = GraphIndex(g, HashingEmbedder(dim=16))
    load_graph(falkordb_driver, index)
    db = CypherSchemaRetriever(falkordb_driver, schema=SCHEMA, embedder=index.embedder)
    mem = SchemaGuidedRetriever(index, schema=SCHEMA)
    plan = DecompositionPlan.from_questions("who?", ["who?"], {"nodes": ["Person"]})
    cfg = db.config
    access = db._access(cfg)
    sq = plan.sub_questions[0]
    res = retrieve_typed(access, 0, sq, db.backend.embed_query(sq.text), cfg)
    assert [it.key for it in res.nodes] == ["ann", "bob"] or [it.key for it in res.nodes] == [
        "bob", "ann"]
    # fetched: the typed candidates ann, bob and cid (a superset: cid's metadata may
    # override), then the hits' neighbours t0, t2 and dee - not the 200 things
    assert set(access.rows) == {"ann", "bob", "cid", "t0", "t2", "dee"}
    assert_same(mem.retrieve("who?", plan=plan), db.retrieve("who?", plan=plan))
    rel = DecompositionPlan.from_questions("born?", ["born?"], {"relations": ["born in"]})
    access = db._access(cfg)
    retrieve_typed(access, 0, rel.sub_questions[0], db.backend.embed_query("born?"), cfg)
    # the ends of the edges whose relation type is "born in" (the metadata overrides)
    assert set(access.rows) == {"bob", "dee", "cid", "t1"}
    assert_same(mem.retrieve("born?", plan=rel), db.retrieve("born?", plan=rel))


def test_bm25_is_refused_and_a_non_cypher_store_too(demo):
    index, schema, drv = demo
    db = CypherSchemaRetriever(drv, schema=schema, embedder=index.embedder)
    with pytest.raises(ConfigError, match="mode='vector' only"):
        db.retrieve("Who discovered radium?", mode="hybrid")
    from kgpath.backends.memory import InMemoryBackend

    with pytest.raises(ConfigError, match="needs a CypherBackend"):
        CypherSchemaRetriever(InMemoryBackend(index), schema=schema)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        db.refresh()
        assert db.retrieve("Who discovered radium?").ids


def test_ties_across_pages_go_to_node_order(falkordb_driver):
    """30 identical nodes on pages of 4: the top 6 are the first 6 in node order."""
    g = KnowledgeGraph()
    for i in range(30):
        g.add_node(f"x{29 - i:02d}", name="same", text="same text",
                   type=["Person", "Place"][i % 2])
    index = GraphIndex(g, HashingEmbedder(dim=16))
    load_graph(falkordb_driver, index)
    backend = CypherBackend(falkordb_driver, embedder=index.embedder, page_size=4)
    db = CypherSchemaRetriever(backend, schema=SCHEMA)
    mem = SchemaGuidedRetriever(index, schema=SCHEMA)
    plan = DecompositionPlan.from_questions("same?", ["same?"], {"nodes": ["Place"]})
    first = [f"x{29 - i:02d}" for i in range(30)]
    for ov, want in (({"type_mode": "off"}, first[:6]),
                     ({"type_mode": "boost", "boost": 0.0}, first[:6]),
                     ({"type_mode": "boost"}, first[1::2][:6]),  # Places get the bonus
                     ({"type_mode": "filter"}, first[1::2][:6])):
        got = db.retrieve("same?", plan=plan, k=6, **ov)
        assert got.ids == want
        assert_same(mem.retrieve("same?", plan=plan, k=6, **ov), got)


@pytest.mark.parametrize("seed", range(8))
def test_random_typed_graphs_with_vector_files_equal_in_memory(falkordb_driver, tmp_path, seed):
    # candidates scored from the node vector file; boost / off / fallback scans read the
    # file's top k + |C+| instead of paging every node
    g = random_graph(seed)
    index = GraphIndex(g, HashingEmbedder(dim=16))
    load_graph(falkordb_driver, index, vector_dir=tmp_path, embeddings=False)
    mem = SchemaGuidedRetriever(index, schema=SCHEMA)
    db = CypherSchemaRetriever(falkordb_driver, schema=SCHEMA, embedder=index.embedder,
                               vectors=tmp_path)
    assert db.backend.vectors is not None
    rnd = random.Random(seed)  # the plans of the test above (stored vectors)
    for _ in range(20):
        q = rnd.choice(["alpha born", "person made river", "gamma place", "delta"])
        plan, ov = random_plan(rnd, q), random_config(rnd)
        assert_same(mem.retrieve(q, plan=plan, **ov), db.retrieve(q, plan=plan, **ov))
    q = "Who was born in a place and what did a person make?"
    assert_same(mem.retrieve(q), db.retrieve(q))


def test_vector_file_scan_reads_only_the_top(falkordb_driver, tmp_path):
    g = KnowledgeGraph()
    for i in range(300):
        g.add_node(f"t{i:03d}", name=f"thing {i}", text=f"a thing number {i % 7}",
                   type=["Thing Type", None][i % 2])
    g.add_node("ann", name="Ann", text="a person", type="Person")
    g.add_node("bob", name="Bob", text="a thing number 3", type="Thing Type",
               metadata={"schema_type": "human"})
    for j in range(8):  # layer nodes naming the question: the file's top rows
        g.add_node(f"kw{j}", name="thing 3", text="thing 3", metadata={"layer": "keyword"})
    g.add_edge("ann", "t001", relation="made")
    index = GraphIndex(g, HashingEmbedder(dim=16))
    load_graph(falkordb_driver, index, vector_dir=tmp_path)
    mem = SchemaGuidedRetriever(index, schema=SCHEMA)
    db = CypherSchemaRetriever(CypherBackend(falkordb_driver, embedder=index.embedder,
                                             vectors=tmp_path), schema=SCHEMA)
    plans = [DecompositionPlan.from_questions("thing 3?", ["thing 3?"], t, schema=SCHEMA)
             for t in ({"nodes": ["Person"]}, {"relations": ["made"]}, {}, {"nodes": ["Place"]})]
    for plan in plans:
        for ov in ({"type_mode": "boost", "boost": 0.5}, {"type_mode": "off"}, {},
                   {"include_layer_nodes": True, "k": 3}):
            cfg = db._config(ov)
            access = db._access(cfg)
            sq = plan.sub_questions[0]
            retrieve_typed(access, 0, sq, db.backend.embed_query(sq.text), cfg)
            assert len(access.rows) < 40  # not the 310 nodes
            assert_same(mem.retrieve("thing 3?", plan=plan, **ov),
                        db.retrieve("thing 3?", plan=plan, **ov))


def test_ties_in_the_vector_file_go_to_node_order(falkordb_driver, tmp_path):
    g = KnowledgeGraph()
    for i in range(30):
        g.add_node(f"x{29 - i:02d}", name="same", text="same text",
                   type=["Person", "Place"][i % 2])
    index = GraphIndex(g, HashingEmbedder(dim=16))
    load_graph(falkordb_driver, index, vector_dir=tmp_path, embeddings=False)
    db = CypherSchemaRetriever(falkordb_driver, schema=SCHEMA, embedder=index.embedder,
                               vectors=tmp_path)
    plan = DecompositionPlan.from_questions("same?", ["same?"], {"nodes": ["Place"]})
    first = [f"x{29 - i:02d}" for i in range(30)]
    for ov, want in (({"type_mode": "off"}, first[:6]),
                     ({"type_mode": "boost", "boost": 0.0}, first[:6]),
                     ({"type_mode": "boost"}, first[1::2][:6])):
        assert db.retrieve("same?", plan=plan, k=6, **ov).ids == want


def test_graph_wide_facts_are_kept_until_refresh(falkordb_driver):
    # type spellings, base count and metadata overrides: read once, read again by refresh()
    g1, g2 = random_graph(1), random_graph(2)
    i1, i2 = (GraphIndex(g, HashingEmbedder(dim=16)) for g in (g1, g2))
    load_graph(falkordb_driver, i1)
    db = CypherSchemaRetriever(falkordb_driver, schema=SCHEMA, embedder=i1.embedder)
    plan = DecompositionPlan.from_questions("who?", ["who?"], {"nodes": ["Person", "Place"]},
                                            schema=SCHEMA)
    assert_same(SchemaGuidedRetriever(i1, schema=SCHEMA).retrieve("who?", plan=plan),
                db.retrieve("who?", plan=plan))
    queries = []
    run = falkordb_driver.run
    falkordb_driver.run = lambda q, p=None: queries.append(q) or run(q, p)
    try:
        db.retrieve("who?", plan=plan)
    finally:
        del falkordb_driver.run
    assert queries and not any("DISTINCT" in q or "CONTAINS $layer" in q for q in queries)
    load_graph(falkordb_driver, i2, replace=True)
    db.refresh()
    assert_same(SchemaGuidedRetriever(i2, schema=SCHEMA).retrieve("who?", plan=plan),
                db.retrieve("who?", plan=plan))
