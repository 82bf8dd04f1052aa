"""Schema-guided decomposition and typed, parallel retrieval (acceptance tests of issue 5)."""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
import warnings

import numpy as np
import pytest

from kgpath import HashingEmbedder, KnowledgeGraph, ScriptedLLM
from kgpath.errors import ConfigError, QueryError
from kgpath.ingest.schema import AttributeType, EntityType, RelationType, Schema, SchemaWarning
from kgpath.methods.schema import (
    DecompositionPlan,
    EvidenceItem,
    InvolvedTypes,
    SchemaDecomposer,
    SchemaGuidedRetriever,
    SchemaRetrieverConfig,
    SubQuestionResult,
    aparallel_map,
    format_evidence,
    heuristic_decomposition,
    merge_evidence,
    parallel_map,
    parse_decomposition,
    split_question,
    validate_plan,
)

S19 = math.sqrt(0.19)


def schema() -> Schema:
    return Schema(
        name="t",
        entities=[EntityType(name="Person", aliases=("who", "scientist")),
                  EntityType(name="Award", aliases=("prize",)), EntityType(name="Place"),
                  EntityType(name="Theory")],
        relations=[RelationType(name="received", head=("Person",), tail=("Award",)),
                   RelationType(name="born in", head=("Person",), tail=("Place",),
                                aliases=("birthplace",))],
        attributes=[AttributeType(name="year", entities=("Award",))],
    )


@pytest.fixture
def graph_and_embedder(table_embedder):
    """Four nodes with chosen vectors; the query "q award" is (1, 0, 0).

    cos(q, .): City 0.9, Prize 0.8, Medal 0.6, Curie 0.0.
    """
    g = KnowledgeGraph()
    g.add_passage("p1", "Curie was born in the City.")
    g.add_passage("p2", "Curie received the Prize and the Medal.")
    g.add_node("prize", name="Prize", type="Award", provenance=("p2",))
    g.add_node("city", name="City", type="Place", provenance=("p1",))
    g.add_node("medal", name="Medal", type="Award", provenance=("p2",),
               metadata={"attributes": {"year": 1911}})
    g.add_node("curie", name="Curie", type="Person", provenance=("p1", "p2"))
    g.add_edge("curie", "prize", relation="received", provenance=("p2",))
    g.add_edge("curie", "medal", relation="received", provenance=("p2",))
    g.add_edge("curie", "city", relation="born in", provenance=("p1",))
    emb = table_embedder({
        "Prize": [0.8, 0.6, 0.0], "City": [0.9, S19, 0.0], "Medal": [0.6, 0.8, 0.0],
        "Curie": [0.0, 1.0, 0.0], "q award": [1.0, 0.0, 0.0], "q award again": [1.0, 0.0, 0.0],
        "q curie": [0.0, 1.0, 0.0],
    })
    return g, emb


def plan_for(question, subs, types):
    return DecompositionPlan.from_questions(question, subs, types, schema=schema())


def scored(res):
    return [(it.key, round(it.score, 6)) for it in res.nodes]


# ---------------------------------------------------------------- typed retrieval
def test_filter_removes_off_type_candidates(graph_and_embedder):
    g, emb = graph_and_embedder
    r = SchemaGuidedRetriever(g, schema=schema(), embedder=emb)
    plan = plan_for("q award", ["q award"], {"nodes": ["Award"]})
    off = r.retrieve("q award", plan=plan, type_mode="off", k=4)
    assert scored(off) == [("city", 0.9), ("prize", 0.8), ("medal", 0.6), ("curie", 0.0)]
    flt = r.retrieve("q award", plan=plan, type_mode="filter", k=4)
    assert scored(flt) == [("prize", 0.8), ("medal", 0.6)]
    tr = flt.sub_results[0].trace
    assert tr["filtered_out"] == 2 and tr["type_mode_used"] == "filter"
    assert all(it.schema_type == "Award" for it in flt.nodes)


def test_boost_reorders_with_hand_computed_scores(graph_and_embedder):
    g, emb = graph_and_embedder
    r = SchemaGuidedRetriever(g, schema=schema(), embedder=emb,
                              config=SchemaRetrieverConfig(boost=0.2))
    # nodes only: t(v) = [type in {Award}] -> prize 0.8+0.2, medal 0.6+0.2
    res = r.retrieve("q award", plan=plan_for("q award", ["q award"], {"nodes": ["Award"]}),
                     type_mode="boost", k=4)
    assert scored(res) == [("prize", 1.0), ("city", 0.9), ("medal", 0.8), ("curie", 0.0)]
    # nodes + relations: t(v) = mean([type in N], [has a 'received' edge])
    #   prize 1, medal 1, curie (Person, has received edges) 0.5, city 0
    res = r.retrieve(
        "q award",
        plan=plan_for("q award", ["q award"], {"nodes": ["Award"], "relations": ["received"]}),
        type_mode="boost", k=4,
    )
    assert scored(res) == [("prize", 1.0), ("city", 0.9), ("medal", 0.8), ("curie", 0.1)]
    aff = {it.key: it.type_affinity for it in res.nodes}
    assert aff == {"prize": 1.0, "city": 0.0, "medal": 1.0, "curie": 0.5}
    assert {it.key: round(it.base_score, 6) for it in res.nodes}["curie"] == 0.0


def test_attribute_types_count_in_affinity(graph_and_embedder):
    g, emb = graph_and_embedder
    r = SchemaGuidedRetriever(g, schema=schema(), embedder=emb)
    res = r.retrieve("q award", plan=plan_for("q award", ["q award"], {"attributes": ["year"]}),
                     k=4)
    assert res.ids == ["medal"]  # the only node with a 'year' attribute


def test_triples_and_passages_by_hand(graph_and_embedder):
    g, emb = graph_and_embedder
    r = SchemaGuidedRetriever(g, schema=schema(), embedder=emb)
    res = r.retrieve("q award", plan=plan_for("q award", ["q award"], {"nodes": ["Award"]}), k=2)
    # edge score = mean of its ends' cosines: curie->prize (0+0.8)/2, curie->medal (0+0.6)/2
    assert [(t.key, round(t.score, 6)) for t in res.triples] == [
        ("curie|received|prize", 0.4), ("curie|received|medal", 0.3)]
    assert all(t.schema_type == "received" for t in res.triples)
    # passage p2 is cited by prize (0.8) -> best score 0.8; p1 is not cited by any hit
    assert [(p.key, round(p.score, 6)) for p in res.passages] == [("p2", 0.8)]
    # relation filter on triples: only 'born in' edges survive. The node filter ANDs the
    # categories (issue 12): {Person} and [has a 'born in' edge] -> curie alone; its incident
    # edges are received->prize, received->medal, born in->city; two are filtered out.
    res = r.retrieve("q award", k=4, plan=plan_for(
        "q award", ["q award"], {"nodes": ["Person"], "relations": ["born in"]}))
    assert res.ids == ["curie"]
    assert [(t.key, round(t.score, 6)) for t in res.triples] == [("curie|born in|city", 0.45)]
    assert res.sub_results[0].trace["triples_filtered_out"] == 2
    # {Place, Award} and 'born in' -> city alone (prize/medal lack the edge, curie the type);
    # city's only incident edge is 'born in', so no triple is filtered out
    res = r.retrieve("q award", k=4, plan=plan_for(
        "q award", ["q award"], {"nodes": ["Place", "Award"], "relations": ["born in"]}))
    assert res.ids == ["city"]
    assert [(t.key, round(t.score, 6)) for t in res.triples] == [("curie|born in|city", 0.45)]
    assert res.sub_results[0].trace["triples_filtered_out"] == 0


def test_filter_requires_every_constrained_category(graph_and_embedder):
    """Issue 12: a candidate must satisfy every category the sub-question constrains (AND).

    Types {Award} and [has a 'received' edge]: prize and medal are Awards with a 'received'
    edge (t = 1); curie has 'received' edges but is a Person (t = 1/2); city has neither
    (t = 0). The old OR filter (t > 0) let curie through.
    """
    g, emb = graph_and_embedder
    r = SchemaGuidedRetriever(g, schema=schema(), embedder=emb)
    types = {"nodes": ["Award"], "relations": ["received"]}
    res = r.retrieve("q award", plan=plan_for("q award", ["q award"], types), k=4)
    assert scored(res) == [("prize", 0.8), ("medal", 0.6)]
    assert res.sub_results[0].trace["filtered_out"] == 2
    # node type AND attribute: Awards carrying a 'year' -> medal only (prize has no year)
    types = {"nodes": ["Award"], "attributes": ["year"]}
    res = r.retrieve("q award", plan=plan_for("q award", ["q award"], types), k=4)
    assert res.ids == ["medal"]
    # all three categories with no node satisfying them all -> documented boost fallback
    types = {"nodes": ["Place"], "relations": ["received"], "attributes": ["year"]}
    res = r.retrieve("q award", plan=plan_for("q award", ["q award"], types), k=1)
    assert res.sub_results[0].trace["filter_empty"] is True
    assert res.sub_results[0].trace["type_mode_used"] == "boost"


def test_empty_filter_falls_back_to_boost_or_returns_nothing(graph_and_embedder):
    g, emb = graph_and_embedder
    r = SchemaGuidedRetriever(g, schema=schema(), embedder=emb)
    plan = plan_for("q award", ["q award"], {"nodes": ["Theory"]})  # no Theory node exists
    res = r.retrieve("q award", plan=plan, k=2)
    assert res.ids == ["city", "prize"]
    assert res.sub_results[0].trace["fallback"].startswith("boost")
    assert r.retrieve("q award", plan=plan, k=2, empty_filter="empty").ids == []


def test_no_types_means_no_filtering(graph_and_embedder):
    g, emb = graph_and_embedder
    r = SchemaGuidedRetriever(g, schema=schema(), embedder=emb)
    res = r.retrieve("q award", plan=plan_for("q award", ["q award"], {}), k=1)
    assert res.ids == ["city"] and res.sub_results[0].trace["type_mode_used"] == "off"
    assert res.nodes[0].type_affinity is None


def test_merged_evidence_is_deduplicated_and_tagged(graph_and_embedder):
    g, emb = graph_and_embedder
    r = SchemaGuidedRetriever(g, schema=schema(), embedder=emb)
    plan = plan_for("q award", ["q award", "q award again", "q curie"], {"nodes": ["Award",
                                                                                   "Person"]})
    res = r.retrieve("q award", plan=plan, k=2)
    keys = [it.key for it in res.items]
    assert len(keys) == len(set(keys))
    tags = {it.key: it.sub_questions for it in res.nodes}
    # sub-questions 0 and 1 have the same vector -> prize, medal; 2 ("q curie") -> curie, medal
    assert tags == {"prize": (0, 1), "medal": (0, 1, 2), "curie": (2,)}
    assert {it.key: round(it.score, 6) for it in res.nodes} == {
        "curie": 1.0, "prize": 0.8, "medal": 0.8}  # medal keeps its best score (0.8 for q curie)
    assert res.ids == ["curie", "prize", "medal"]  # score desc, ties by first appearance
    assert res.trace["evidence_before_merge"] > res.trace["evidence_after_merge"]
    text = format_evidence(res)
    assert "{sub-question 1,2,3}" in text and "[passage p2]" in text


def test_merge_evidence_unit():
    a = EvidenceItem(kind="node", key="x", text="x", score=0.2, sub_questions=(0,))
    b = EvidenceItem(kind="node", key="x", text="x", score=0.7, sub_questions=(1,))
    c = EvidenceItem(kind="node", key="y", text="y", score=0.7, sub_questions=(0,))
    r0 = SubQuestionResult(0, "a", InvolvedTypes(), (a, c), (), ())
    r1 = SubQuestionResult(1, "b", InvolvedTypes(), (b,), (), ())
    nodes, triples, passages = merge_evidence([r0, r1])
    assert [(n.key, n.score, n.sub_questions) for n in nodes] == [
        ("x", 0.7, (0, 1)), ("y", 0.7, (0,))]
    assert triples == () and passages == ()


# ---------------------------------------------------------------- concurrency
class SlowQueryEmbedder(HashingEmbedder):
    """Sleeps ``delay`` per query embedding and records when each one ran."""

    def __init__(self, delay: float) -> None:
        super().__init__(64)
        self.delay = delay
        self.log: list[tuple[str, float, float]] = []
        self._lk = threading.Lock()

    def _record(self, text, t0):
        with self._lk:
            self.log.append((text, t0, time.perf_counter()))

    def _embed(self, texts, kind):
        if kind == "query":
            t0 = time.perf_counter()
            time.sleep(self.delay)
            self._record(texts[0], t0)
        return super()._embed(texts, kind)

    async def _aembed(self, texts, kind):
        if kind == "query":
            t0 = time.perf_counter()
            await asyncio.sleep(self.delay)
            self._record(texts[0], t0)
        return super()._embed(texts, kind)


def overlap(log):
    """All intervals share a common instant: latest start < earliest end."""
    return max(s for _, s, _ in log) < min(e for _, _, e in log)


SUBS = ["Who received the prize?", "Where was Curie born?", "Which prize is oldest?"]


def slow_setup(delay=0.25):
    g = KnowledgeGraph()
    g.add_node("curie", name="Curie", type="Person")
    g.add_node("prize", name="Prize", type="Award")
    g.add_node("city", name="City", type="Place")
    g.add_edge("curie", "prize", relation="received")
    emb = SlowQueryEmbedder(delay)
    return SchemaGuidedRetriever(g, schema=schema(), embedder=emb), emb


def test_sync_sub_questions_really_overlap_on_threads():
    r, emb = slow_setup()
    plan = DecompositionPlan.from_questions("q", SUBS)
    res = r.retrieve("q", plan=plan)
    assert len(emb.log) == 3 and overlap(emb.log)
    assert res.trace["concurrency"] == "threads"
    tr = [s.trace for s in res.sub_results]
    assert max(t["started_s"] for t in tr) < min(t["ended_s"] for t in tr)
    # the same test fails when concurrency is 1: intervals are disjoint
    emb.log.clear()
    r.retrieve("q", plan=plan, max_concurrency=1)
    ordered = sorted(emb.log, key=lambda x: x[1])
    assert not overlap(emb.log)
    assert all(a[2] <= b[1] for a, b in zip(ordered, ordered[1:]))


async def test_async_sub_questions_really_overlap_with_gather():
    r, emb = slow_setup()
    plan = DecompositionPlan.from_questions("q", SUBS)
    res = await r.aretrieve("q", plan=plan)
    assert len(emb.log) == 3 and overlap(emb.log)
    assert res.trace["concurrency"] == "asyncio"
    emb.log.clear()
    await r.aretrieve("q", plan=plan, max_concurrency=2)  # bounded: 2 overlap, the third waits
    starts = sorted(s for _, s, _ in emb.log)
    ends = sorted(e for _, _, e in emb.log)
    assert starts[1] < ends[0] and starts[2] >= ends[0]


async def test_async_equals_sync(graph_and_embedder):
    g, emb = graph_and_embedder
    r = SchemaGuidedRetriever(g, schema=schema(), embedder=emb)
    plan = plan_for("q award", ["q award", "q curie"], {"nodes": ["Award", "Person"]})
    a = r.retrieve("q award", plan=plan, k=3)
    b = await r.aretrieve("q award", plan=plan, k=3)
    assert [(i.key, i.score, i.sub_questions) for i in a.items] == [
        (i.key, i.score, i.sub_questions) for i in b.items]
    assert a.evidence() == b.evidence()


def test_parallel_map_helpers():
    out = parallel_map(lambda x: x * 2, [1, 2, 3], max_workers=3)
    assert [r for r, _, _ in out] == [2, 4, 6]
    with pytest.raises(ConfigError):
        parallel_map(str, [1], max_workers=0)

    async def dbl(x):
        return x * 2

    assert [r for r, _, _ in asyncio.run(aparallel_map(dbl, [1, 2], limit=1))] == [2, 4]


# ---------------------------------------------------------------- decomposition
PLAN_OK = {
    "sub_questions": ["Who received the prize?", "Where was she born?"],
    "involved_types": {"nodes": ["Person", "prize", "Spaceship"],
                       "relations": ["received", "flew"], "attributes": ["year", "colour"]},
}


def test_unknown_types_dropped_with_warning_and_aliases_resolved():
    with pytest.warns(SchemaWarning) as rec:
        plan = validate_plan(PLAN_OK, schema(), "q")
    msgs = [str(w.message) for w in rec]
    assert sum("not in schema" in m for m in msgs) == 3
    assert plan.involved_types == InvolvedTypes(("Person", "Award"), ("received",), ("year",))
    assert plan.dropped == ("entity:Spaceship", "relation:flew", "attribute:colour")
    assert [s.text for s in plan.sub_questions] == PLAN_OK["sub_questions"]
    assert all(s.types == plan.involved_types for s in plan.sub_questions)


def test_extra_keys_are_ignored_with_a_warning():
    data = {**PLAN_OK, "reasoning": "...", "involved_types": {"nodes": ["Award"], "edges": []}}
    with pytest.warns(SchemaWarning, match="extra"):
        plan = validate_plan(data, schema(), "q")
    assert plan.involved_types.nodes == ("Award",)
    assert any("reasoning" in n for n in plan.notes) and any("edges" in n for n in plan.notes)


def test_missing_keys_default_with_a_warning():
    with pytest.warns(SchemaWarning, match="lacks 'involved_types'"):
        plan = validate_plan({"sub_questions": ["a?"]}, schema(), "q")
    assert plan.involved_types.is_empty and [s.text for s in plan.sub_questions] == ["a?"]
    with pytest.warns(SchemaWarning, match="lacks 'sub_questions'"):
        plan = validate_plan({"involved_types": {"nodes": ["Award"]}}, schema(), "whole?")
    assert [s.text for s in plan.sub_questions] == ["whole?"]
    assert plan.sub_questions[0].types.nodes == ("Award",)


def test_zero_sub_questions_use_the_whole_question():
    with pytest.warns(SchemaWarning, match="zero sub-questions"):
        plan = validate_plan({"sub_questions": [], "involved_types": {}}, schema(), "whole?")
    assert [s.text for s in plan.sub_questions] == ["whole?"]
    with pytest.warns(SchemaWarning):
        plan = validate_plan({"sub_questions": ["", "  ", 3], "involved_types": {}}, schema(),
                             "whole?")
    assert [s.text for s in plan.sub_questions] == ["whole?"]


def test_shapes_duplicates_and_cap():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plan = validate_plan({"sub_questions": "only one?", "involved_types": {"nodes": "Award"}},
                             schema(), "q")
        assert [s.text for s in plan.sub_questions] == ["only one?"]
        assert plan.involved_types.nodes == ("Award",)
        plan = validate_plan({"sub_questions": ["A?", "a? ", "B?", "C?"],
                              "involved_types": {}}, schema(), "q", max_sub_questions=2)
    assert [s.text for s in plan.sub_questions] == ["A?", "B?"]
    assert any("beyond max_sub_questions" in n for n in plan.notes)
    plan = validate_plan({"sub_questions": [
        {"question": "Who?", "involved_types": {"nodes": ["Person"]}},
        {"question": "Where?", "involved_types": {"nodes": ["Place"]}}],
        "involved_types": {}}, schema(), "q")
    assert [s.types.nodes for s in plan.sub_questions] == [("Person",), ("Place",)]
    assert plan.involved_types.nodes == ("Person", "Place")
    plan = validate_plan(["x?", "y?"], schema(), "q")  # bare list
    assert [s.text for s in plan.sub_questions] == ["x?", "y?"]
    with pytest.raises(ConfigError):
        validate_plan({}, schema(), "q", max_sub_questions=0)


def test_malformed_reply_repaired_or_falls_back():
    fenced = "```json\n" + json.dumps(PLAN_OK)[:-1] + ",}\n```"  # trailing comma, fenced
    with pytest.warns(SchemaWarning):
        plan = parse_decomposition(fenced, schema(), "q")
    assert plan.source == "llm" and len(plan.sub_questions) == 2
    with pytest.warns(SchemaWarning, match="unparsable"):
        plan = parse_decomposition("Sorry, I can't.", schema(), "Who received the prize?")
    assert plan.source == "fallback"
    assert [s.text for s in plan.sub_questions] == ["Who received the prize?"]
    assert plan.involved_types.nodes == ("Person", "Award")  # heuristic types kept
    with pytest.warns(SchemaWarning, match="unparsable"):  # a JSON string is not a plan
        plan = parse_decomposition('"just a string"', schema(), "q?")
    assert plan.source == "fallback"


def test_llm_decomposer_prompt_and_retrieval(graph_and_embedder):
    g, emb = graph_and_embedder
    reply = json.dumps({"sub_questions": ["q award", "q curie"],
                        "involved_types": {"nodes": ["Award", "Person"], "relations": [],
                                           "attributes": []}})
    llm = ScriptedLLM([reply])
    r = SchemaGuidedRetriever(g, schema=schema(), llm=llm, embedder=emb)
    res = r.retrieve("Which awards and which person?", k=1)
    [prompt] = llm.prompts
    assert "received: Person -> Award" in prompt and "Which awards and which person?" in prompt
    assert "at most 4" in prompt
    assert res.plan.source == "llm" and res.ids == ["curie", "prize"]
    assert res.trace["sub_questions"] == ["q award", "q curie"]


async def test_async_llm_decomposition_uses_acomplete(graph_and_embedder):
    g, emb = graph_and_embedder
    llm = ScriptedLLM([json.dumps({"sub_questions": ["q award"],
                                   "involved_types": {"nodes": ["Award"]}})], delay=0.01)
    r = SchemaGuidedRetriever(g, schema=schema(), llm=llm, embedder=emb)
    res = await r.aretrieve("anything?", k=1)
    assert res.ids == ["prize"] and len(llm.prompts) == 1 and res.plan.source == "llm"


def test_split_question():
    assert split_question("Who discovered radium and where was its ore mined?") == [
        "Who discovered radium?", "where was its ore mined?"]
    assert split_question("Who is A? Who is B?") == ["Who is A?", "Who is B?"]
    assert split_question("What did Marie and Pierre Curie discover?") == [
        "What did Marie and Pierre Curie discover?"]  # 'and' not followed by a question word
    assert split_question("Name the prize; then where was it given") == [
        "Name the prize", "where was it given"]


def test_heuristic_decomposition_types_from_aliases_stems_and_node_names():
    g = KnowledgeGraph()
    g.add_node("mc", name="Marie Curie", type="Person")
    g.add_node("w", name="Warsaw", type="Place")
    plan = heuristic_decomposition(
        "Which prize did the scientist receive, and what is Marie Curie's birthplace?",
        schema(), graph=g)
    assert plan.source == "heuristic"
    s1, s2 = plan.sub_questions
    assert s1.types == InvolvedTypes(("Award", "Person"), ("received",), ())
    assert s2.types == InvolvedTypes(("Person",), ("born in",), ())
    assert "node names matched: ['Marie Curie']" in plan.notes
    # a clause without any detected type inherits the union of the others
    plan = heuristic_decomposition("Who won? And how did it go?", schema())
    assert plan.sub_questions[1].types == plan.involved_types


def test_heuristic_caps_clauses():
    plan = heuristic_decomposition("A? B? C? D?", schema(), max_sub_questions=2)
    assert [s.text for s in plan.sub_questions] == ["A?", "B? C? D?"]


def test_decomposer_without_llm_is_heuristic_and_sync_equals_async():
    d = SchemaDecomposer(schema())
    p1 = d.decompose("Who received the prize?")
    p2 = asyncio.run(d.adecompose("Who received the prize?"))
    assert p1 == p2 and p1.source == "heuristic"


# ---------------------------------------------------------------- config / bad input
@pytest.mark.parametrize("kwargs", [
    {"k": 0}, {"k": True}, {"type_mode": "strict"}, {"boost": -1.0}, {"boost": float("nan")},
    {"empty_filter": "raise"}, {"mode": "dense"}, {"alpha": 2.0}, {"max_concurrency": 0},
    {"k_triples": -1}, {"route_top_communities": 0},
])
def test_bad_config(kwargs):
    with pytest.raises(ConfigError):
        SchemaRetrieverConfig(**kwargs)


def test_bad_calls(graph_and_embedder):
    g, emb = graph_and_embedder
    r = SchemaGuidedRetriever(g, schema=schema(), embedder=emb)
    with pytest.raises(ConfigError, match="unknown schema-retriever option"):
        r.retrieve("q award", kk=3)
    with pytest.raises(QueryError):
        r.retrieve("   ")
    with pytest.raises(ConfigError, match="Schema"):
        SchemaGuidedRetriever(g, schema={"entities": ["A"]}, embedder=emb)  # type: ignore[arg-type]


def test_hybrid_and_bm25_modes_run(graph_and_embedder):
    g, emb = graph_and_embedder
    r = SchemaGuidedRetriever(g, schema=schema(), embedder=emb)
    plan = plan_for("q award", ["q award"], {"nodes": ["Award"]})
    for mode in ("hybrid", "bm25"):
        res = r.retrieve("q award", plan=plan, mode=mode, k=2)
        assert set(res.ids) == {"prize", "medal"}
    assert np.isclose(r.retrieve("q award", plan=plan, mode="hybrid", k=1).nodes[0].score,
                      0.7 * 0.8 + 0.0)  # BM25 of "q award" vs "Prize"/"Medal" is 0
