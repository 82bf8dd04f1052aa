"""C2RAG over FalkorDB equals the in-memory retriever.

Truth: :class:`~kgpath.methods.c2rag.ConstraintCheckedRetriever` on the ``GraphIndex`` the
database was loaded from: plan, every hop (anchors, pool, ``C_init`` with ``S_rel`` and
``z``, ``C_top`` with ``p``, ``N_eff``, state, induced entities, recovery pool and kept
passages), bindings and their Eq. 14 cases, blocks, and the ranked evidence (in memory
without the propagation re-rank, which the database does not apply). On the C2RAG demo
KG with its scripted plans, the LLM-free fallback plan and a scripted LLM; on random
graphs with name collisions (``Paris`` / ``paris`` / ``PARIS``), shared relation strings
(tied ``S_rel``), duplicate passage texts (tied ``S_txt``), multi-edges, self-loops, edges
without a relation and provenance naming passages the graph does not hold.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
from typing import Any

import pytest

from kgpath import GraphIndex, HashingEmbedder, KnowledgeGraph
from kgpath.backends.cypher import CypherBackend, CypherSchema, load_graph
from kgpath.demo.c2rag import demo_questions, load_demo_kg
from kgpath.errors import ConfigError
from kgpath.llm import ScriptedLLM
from kgpath.methods.c2rag import C2RAGConfig, C2RAGResult, ConstraintCheckedRetriever
from kgpath.methods.c2rag.cypher import CypherC2RAG, needle

pytestmark = pytest.mark.falkordb

CONFIGS = [
    C2RAGConfig(),
    C2RAGConfig.paper(),
    C2RAGConfig.paper(scorer="reranker", propagation="pooled", binding="dominant"),
    C2RAGConfig(relation_vectors="lazy", rerank_input="constraint", k_t_pool=3, k_t=2,
                top_e=2, top_r=4, k_s=2),
]


def close(x: Any, y: Any, path: str = "") -> None:
    """Equal, floats within 1e-6 (float32 dot products over another matrix layout)."""
    if isinstance(x, float) or isinstance(y, float):
        assert y == pytest.approx(x, abs=1e-6), path
    elif isinstance(x, dict):
        assert isinstance(y, dict) and list(y) == list(x), path
        for k in x:
            close(x[k], y[k], f"{path}.{k}")
    elif isinstance(x, (list, tuple)):
        assert isinstance(y, (list, tuple)) and len(y) == len(x), path
        for i, (a, b) in enumerate(zip(x, y)):
            close(a, b, f"{path}[{i}]")
    else:
        assert y == x, path


def evidence_rows(res: C2RAGResult, output: str) -> list[Any]:
    return [(e.id, e.kind, e.text, e.score, dict(e.source_metadata), e.trace)
            for e in res.evidence(output)]


def assert_same(a: C2RAGResult, b: C2RAGResult) -> None:
    assert b.plan == a.plan
    trace = dict(b.trace)
    assert trace.pop("backend").startswith("cypher/") and trace.pop("seconds") >= 0
    assert trace.pop("queries") >= 1  # at least the passage probe or a name lookup
    close(a.trace, trace, "trace")  # plan, hops (candidates, scores, recovery), bindings
    assert b.bindings == a.bindings and b.binding_cases == a.binding_cases
    assert b.binding_names == a.binding_names
    close([dataclasses.asdict(x) for x in a.blocks], [dataclasses.asdict(x) for x in b.blocks],
          "blocks")
    assert b.context == a.context
    assert not b.whole_graph
    plain = dataclasses.replace(a, config=dataclasses.replace(a.config, rerank=None))
    for output in ("passages", "native"):
        close(evidence_rows(plain, output), evidence_rows(b, output), output)


def pair(driver: Any, g: KnowledgeGraph, vector_dir: Any = None, **kw: Any) -> tuple[Any, Any]:
    """In-memory and database retrievers; ``vector_dir``: with vector files and name index."""
    index = GraphIndex(g, HashingEmbedder(64))
    schema = load_graph(driver, index, replace=True, vector_dir=vector_dir)
    mem = ConstraintCheckedRetriever(index, **kw)
    db = CypherC2RAG(CypherBackend(driver, embedder=index.embedder, schema=schema,
                                   vectors=vector_dir), **kw)
    assert (db._access.shared.names is not None) == (vector_dir is not None)
    return mem, db


class Recorder:
    """Wraps a driver's ``run`` to keep the query texts."""

    def __init__(self, driver: Any) -> None:
        self.driver, self.queries = driver, []
        self._run = driver.run

    def __enter__(self) -> Recorder:
        def run(query: str, params: Any = None) -> Any:
            self.queries.append(query)
            return self._run(query, params)
        self.driver.run = run
        return self

    def __exit__(self, *exc: object) -> None:
        del self.driver.run


def test_c2rag_demo_kg_equals_in_memory(falkordb_driver):
    mem, db = pair(falkordb_driver, load_demo_kg())
    resolved = recovered = 0
    for q in demo_questions():
        for cfg in CONFIGS:
            for plan in (q["plan"], None):  # the scripted plan, then the fallback plan
                a = mem.retrieve(q["query"], plan=plan, **dataclasses.asdict(cfg))
                b = db.retrieve(q["query"], plan=plan, **dataclasses.asdict(cfg))
                assert_same(a, b)
                resolved += sum(h.state == "resolved" for h in a.hops)
                recovered += sum(h.recovery is not None for h in a.hops)
    assert resolved and recovered  # both structural and textual evidence were compared


def test_c2rag_demo_kg_async_and_scripted_llm(falkordb_driver):
    qs = demo_questions()[:6]
    replies = [json.dumps(q["plan"]) for q in qs]
    g = load_demo_kg()
    mem, _ = pair(falkordb_driver, g, llm=ScriptedLLM([*replies, replies[0]]))
    _, db = pair(falkordb_driver, g, llm=ScriptedLLM([*replies, replies[0]]))
    _, db_async = pair(falkordb_driver, g, llm=ScriptedLLM(replies))
    for q in qs:
        a = mem.retrieve(q["query"])
        assert a.plan.source == "llm"
        assert_same(a, db.retrieve(q["query"]))
        assert_same(a, asyncio.run(db_async.aretrieve(q["query"])))
    bad, _ = pair(falkordb_driver, g, llm=ScriptedLLM(["not a plan"]))
    _, db_bad = pair(falkordb_driver, g, llm=ScriptedLLM(["not a plan"]))
    a, b = bad.retrieve(qs[0]["query"]), db_bad.retrieve(qs[0]["query"])
    assert a.plan.source == "fallback" and a.plan.raw == "not a plan"
    assert_same(a, b)
    assert db.plan(qs[0]["query"]) == mem.plan(qs[0]["query"])  # the next scripted reply


def test_c2rag_concurrent_async_retrievals_equal_in_memory(falkordb_driver):
    mem, db = pair(falkordb_driver, load_demo_kg())
    qs = demo_questions()

    async def all_at_once() -> list[C2RAGResult]:
        return await asyncio.gather(*(db.aretrieve(q["query"], plan=p)
                                      for q in qs for p in (q["plan"], None)))
    got = asyncio.run(all_at_once())
    want = [mem.retrieve(q["query"], plan=p) for q in qs for p in (q["plan"], None)]
    for a, b in zip(want, got, strict=True):
        assert_same(a, b)


NAMES = ["Paris", "paris", "PARIS", "Paris France", "Marie Curie", "Curie", "Curie's lab",
         "Warsaw", "Bohr", "Niels Bohr", "radium", "the Sorbonne", "Sorbonne", "Lyon",
         "Ernest Rutherford", "Manchester", "Σοφία", "ΟΔΟΣ Paris"]
RELATIONS = ["born in", "worked at", "discovered", "married", "located in", "near", ""]


def random_graph(seed: int, dup: float = 0.2) -> KnowledgeGraph:
    """``dup``: the chance that a passage repeats an earlier text (tied Eq. 11 scores)."""
    rnd = random.Random(seed)
    g = KnowledgeGraph()
    n_pass = rnd.randint(3, 25)
    texts: list[str] = []
    for i in range(n_pass):
        if texts and rnd.random() < dup:
            text = rnd.choice(texts)  # a duplicate text: tied Eq. 11 scores
        else:
            text = " ".join(rnd.sample(NAMES, 2) + rnd.sample(RELATIONS[:-1], 1)) + "."
        texts.append(text)
        g.add_passage(f"p{i}", text, {"i": i})
    ents = rnd.sample(NAMES, rnd.randint(5, len(NAMES)))
    for j, name in enumerate(ents):
        g.add_node(f"e{j}", name, f"about {name}",
                   provenance=[f"p{rnd.randrange(n_pass)}"])
    for _ in range(rnd.randint(len(ents), 3 * len(ents))):
        a = rnd.randrange(len(ents))
        b = a if rnd.random() < 0.05 else rnd.randrange(len(ents))  # self-loops
        rel = rnd.choice(RELATIONS)
        prov = [f"p{rnd.randrange(n_pass)}" for _ in range(rnd.randint(0, 2))]
        if rnd.random() < 0.1:
            prov.append("gone")  # cited, not held
        g.add_edge(f"e{a}", f"e{b}", rel, text="" if rel else "linked with",
                   provenance=prov)
    return g


def random_plan(rnd: random.Random) -> dict[str, Any]:
    a, b = rnd.sample(NAMES, 2)
    r1, r2 = rnd.sample(RELATIONS[:-1], 2)
    cons = [{"head": a, "relation": r1, "tail": "?x", "variants": [r2]},
            {"head": "?x", "relation": r2, "tail": "?y", "variants": []}]
    if rnd.random() < 0.5:
        cons.append({"head": b, "relation": r1, "tail": "?x", "variants": []})
    if rnd.random() < 0.3:
        cons.append({"head": "?z", "relation": r2, "tail": "?w", "variants": []})
    return {"constraints": cons}


@pytest.mark.parametrize("seed", range(12))
def test_c2rag_random_graphs_equal_in_memory(falkordb_driver, seed):
    rnd = random.Random(1000 + seed)
    mem, db = pair(falkordb_driver, random_graph(seed))
    for _ in range(3):
        words = rnd.sample(NAMES, 2) + rnd.sample(RELATIONS[:-1], 1) + ["what", "the"]
        rnd.shuffle(words)
        query = " ".join(words) + "?"
        cfg = dataclasses.asdict(rnd.choice(CONFIGS)) | {"gamma": rnd.choice([None, 2.9])}
        for plan in (None, random_plan(rnd)):
            a = mem.retrieve(query, plan=plan, **cfg)
            assert_same(a, db.retrieve(query, plan=plan, **cfg))
            if seed % 4 == 0:
                assert_same(a, asyncio.run(db.aretrieve(query, plan=plan, **cfg)))


def test_needle_is_a_substring_of_the_lower_cased_name():
    from kgpath.methods.c2rag.plan import tokens

    for name in ["ΟΔΟΣ'Α", "Α'Σ", "ΣΟΦΙΑ ΣΑΣ", "Curie's lab", "İstanbul"]:
        low = " ".join(name.lower().split())
        for t in tokens(name):
            assert needle(t) in low, (name, t)
    assert needle("σας") == "α" and needle("ς") == ""


def test_c2rag_names_whose_sigma_python_lowercases_by_context(falkordb_driver):
    # "ΟΔΟΣ'Α".lower() keeps a medial σ, the token "ΟΔΟΣ" lower-cases to a final ς
    g = KnowledgeGraph.from_triples([("ΟΔΟΣ'Α", "located in", "Lyon"),
                                     ("Lyon", "near", "ΑΣ")],
                                    passages={"p": "ΟΔΟΣ'Α is in Lyon."},
                                    provenance=[["p"], ["p"]])
    mem, db = pair(falkordb_driver, g)
    plan = {"constraints": [{"head": "ΟΔΟΣ", "relation": "located in", "tail": "?c"}]}
    for q, p in [("Where is ΟΔΟΣ'Α located?", None), ("Where is it located?", plan),
                 ("What is near ΑΣ?", None)]:
        a = mem.retrieve(q, plan=p)
        assert a.hops[0].anchors
        assert_same(a, db.retrieve(q, plan=p))


def test_c2rag_store_refuses_what_it_cannot_push_down(falkordb_driver):
    with pytest.raises(ConfigError, match="order_property"):
        CypherC2RAG(falkordb_driver, schema=CypherSchema(order_property=None))
    mem, db = pair(falkordb_driver, load_demo_kg())
    with pytest.raises(ConfigError, match="recovery_scope"):
        db.retrieve("Who wrote Fahrenheit 451?", recovery_scope="anchor")


def random_queries(rnd: random.Random, n: int = 3) -> list[tuple[str, Any, dict[str, Any]]]:
    out = []
    for _ in range(n):
        words = rnd.sample(NAMES, 2) + rnd.sample(RELATIONS[:-1], 1) + ["what", "the"]
        rnd.shuffle(words)
        cfg = dataclasses.asdict(rnd.choice(CONFIGS))
        out += [(" ".join(words) + "?", plan, cfg) for plan in (None, random_plan(rnd))]
    return out


@pytest.mark.parametrize("seed", range(8))
def test_c2rag_name_index_and_vector_files_equal_in_memory(falkordb_driver, tmp_path, seed):
    # the name token index instead of the CONTAINS scan, recovery from the passage file.
    # Distinct passage texts: in memory a BLAS matmul may score equal vectors 1 ulp apart
    # (kgpath.backends.cypher.vectors), so duplicate texts are compared database to
    # database below.
    mem, db = pair(falkordb_driver, random_graph(seed, dup=0.0), vector_dir=tmp_path / "v")
    with Recorder(falkordb_driver) as rec:
        for query, plan, cfg in random_queries(random.Random(2000 + seed)):
            assert_same(mem.retrieve(query, plan=plan, **cfg),
                        db.retrieve(query, plan=plan, **cfg))
    assert rec.queries and not any("CONTAINS" in q for q in rec.queries)


def strip(res: C2RAGResult) -> dict[str, Any]:
    trace = {k: v for k, v in res.trace.items() if k not in ("backend", "seconds", "queries")}
    return {"trace": trace, "bindings": res.bindings, "blocks": res.blocks,
            "evidence": evidence_rows(res, "native")}


@pytest.mark.parametrize("seed", range(12))
def test_c2rag_name_index_equals_the_scan(falkordb_driver, tmp_path, seed):
    # with duplicate passage texts (ties): index + vector files == scan + stored vectors
    g = random_graph(seed)
    index = GraphIndex(g, HashingEmbedder(64))
    schema = load_graph(falkordb_driver, index, replace=True, vector_dir=tmp_path / "v")
    scan = CypherC2RAG(CypherBackend(falkordb_driver, embedder=index.embedder, schema=schema))
    fast = CypherC2RAG(falkordb_driver, embedder=index.embedder, schema=schema,
                       vectors=tmp_path / "v")
    for query, plan, cfg in random_queries(random.Random(3000 + seed)):
        a, b = scan.retrieve(query, plan=plan, **cfg), fast.retrieve(query, plan=plan, **cfg)
        assert b.plan == a.plan
        close(strip(a), strip(b))


def test_c2rag_name_index_demo_and_sigma_names(falkordb_driver, tmp_path):
    mem, db = pair(falkordb_driver, load_demo_kg(), vector_dir=tmp_path / "demo")
    for q in demo_questions():
        for plan in (q["plan"], None):
            assert_same(mem.retrieve(q["query"], plan=plan), db.retrieve(q["query"], plan=plan))
    g = KnowledgeGraph.from_triples([("ΟΔΟΣ'Α", "located in", "Lyon"), ("Lyon", "near", "ΑΣ")],
                                    passages={"p": "ΟΔΟΣ'Α is in Lyon."},
                                    provenance=[["p"], ["p"]])
    mem, db = pair(falkordb_driver, g, vector_dir=tmp_path / "sigma")
    plan = {"constraints": [{"head": "ΟΔΟΣ", "relation": "located in", "tail": "?c"}]}
    anchored = 0
    for q, p in [("Where is ΟΔΟΣ'Α located?", None), ("What is near ΑΣ?", None),
                 ("Where is it located?", plan)]:
        a = mem.retrieve(q, plan=p)
        assert_same(a, db.retrieve(q, plan=p))
        anchored += bool(a.hops[0].anchors)
    assert anchored == 3


def test_c2rag_stale_name_index_raises(falkordb_driver, tmp_path):
    from kgpath.errors import BackendError

    _, db = pair(falkordb_driver, load_demo_kg(), vector_dir=tmp_path / "v")
    q = demo_questions()[0]["query"]
    db.retrieve(q)
    falkordb_driver.run("MATCH (n:KgNode) WHERE n.idx = 0 SET n.name = 'zzz renamed'", {})
    first = load_demo_kg().node_at(0).name
    with pytest.raises(BackendError, match="stale"):
        db.retrieve(f"Who is {first}?")
    falkordb_driver.run("CREATE (:KgNode {id: 'new', name: 'new', idx: 999})", {})
    with pytest.raises(BackendError, match="rewrite it"):
        db.retrieve("Who is new?")
