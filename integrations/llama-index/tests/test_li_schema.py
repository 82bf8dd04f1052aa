"""LlamaIndex adapters of schema-guided retrieval: retriever, query transform, sub-question
wrapper around any retriever, and the SchemaLLMPathExtractor bridge."""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from typing import Any

import numpy as np
import pytest
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.graph_stores.types import (
    KG_NODES_KEY,
    KG_RELATIONS_KEY,
    EntityNode,
    Relation,
)
from llama_index.core.indices.property_graph import SchemaLLMPathExtractor
from llama_index.core.llms import MockLLM
from llama_index.core.prompts import PromptTemplate
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import TransformRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.retrievers.kgpath import (
    SchemaDecomposeQueryTransform,
    SchemaGuidedRetriever,
    SchemaSubQuestionRetriever,
    graph_from_schema_llm_output,
    schema_to_llamaindex_kwargs,
)
from llama_index.retrievers.kgpath.schema import llm_label, permissive_schema, schema_triples
from pydantic import PrivateAttr

from kgpath import KnowledgeGraph, ScriptedLLM
from kgpath.embeddings import BaseEmbedder
from kgpath.errors import ConfigError
from kgpath.ingest.schema import EntityType, RelationType, Schema

S19 = math.sqrt(0.19)
VECS = {
    "Prize": [0.8, 0.6, 0.0], "City": [0.9, S19, 0.0], "Medal": [0.6, 0.8, 0.0],
    "Curie": [0.0, 1.0, 0.0], "q award": [1.0, 0.0, 0.0], "q curie": [0.0, 1.0, 0.0],
}


class Table(BaseEmbedder):
    def __init__(self) -> None:
        self._dim = 3
        self.show_progress = False

    def _embed(self, texts, kind):
        return np.asarray([VECS[t] for t in texts], dtype=np.float32)


def schema() -> Schema:
    return Schema(
        entities=[EntityType(name="Person"), EntityType(name="Award", aliases=("prize",)),
                  EntityType(name="Place"), EntityType(name="Element")],
        relations=[RelationType(name="received", head=("Person",), tail=("Award",)),
                   RelationType(name="born in", head=("Person",), tail=("Place",)),
                   RelationType(name="discovered", head=("Person",), tail=("Element",))],
    )


def graph() -> KnowledgeGraph:
    g = KnowledgeGraph()
    g.add_passage("p1", "Curie was born in the City.")
    g.add_passage("p2", "Curie received the Prize and the Medal.")
    g.add_node("prize", name="Prize", type="Award", provenance=("p2",))
    g.add_node("city", name="City", type="Place", provenance=("p1",))
    g.add_node("medal", name="Medal", type="Award", provenance=("p2",))
    g.add_node("curie", name="Curie", type="Person", provenance=("p1", "p2"))
    g.add_edge("curie", "prize", relation="received", provenance=("p2",))
    g.add_edge("curie", "medal", relation="received", provenance=("p2",))
    g.add_edge("curie", "city", relation="born in", provenance=("p1",))
    return g


PLAN = json.dumps({"sub_questions": ["q award", "q curie"],
                   "involved_types": {"nodes": ["Award", "Person"], "relations": [],
                                      "attributes": []}})


def retriever(**kw: Any) -> SchemaGuidedRetriever:
    llm = kw.pop("llm", None) or ScriptedLLM(lambda p: PLAN)
    kw.setdefault("similarity_top_k", None)  # every merged item
    return SchemaGuidedRetriever.from_graph(graph(), schema=schema(), llm=llm,
                                            embed_model=Table(), **kw)


def snap(nodes: list[NodeWithScore]) -> list[tuple[str, float, dict]]:
    return [(n.node.node_id, n.score, dict(n.node.metadata)) for n in nodes]


# ---------------------------------------------------------------- SchemaGuidedRetriever
def test_retrieve_returns_typed_merged_evidence_with_trace():
    r = retriever(k=2, k_triples=1, k_passages=1, output="native")
    out = r.retrieve("Which awards, and who?")
    ids = [n.node.node_id for n in out]
    assert "city" not in ids  # Place is not an involved type: filtered before scoring
    assert all(isinstance(n.score, float) for n in out)
    kinds = [n.node.metadata["kgpath_kind"] for n in out]
    assert kinds == sorted(kinds, key=["node", "triple", "passage"].index)  # nodes first
    by_id = {n.node.node_id: n for n in out}
    # q award -> prize 0.8, medal 0.6 ; q curie -> curie 1.0, medal 0.8 (merged: best 0.8)
    assert by_id["curie"].score == pytest.approx(1.0)
    assert by_id["medal"].score == pytest.approx(0.8)
    assert by_id["medal"].node.metadata["kgpath_sub_questions"] == [0, 1]
    assert by_id["prize"].node.metadata["kgpath_schema_type"] == "Award"
    assert by_id["prize"].node.metadata["kgpath_method"] == "schema"
    assert set(kinds) == {"node", "triple", "passage"}
    assert "curie|received|prize" in ids and "p2" in ids
    result = r.result("Which awards, and who?")
    assert result.plan.source == "llm"
    assert [q.text for q in result.plan.sub_questions] == ["q award", "q curie"]
    # trace keys hidden from the embedder and the LLM
    node = by_id["medal"].node
    assert "kgpath_sub_questions" in node.excluded_embed_metadata_keys
    assert "kgpath_sub_questions" in node.excluded_llm_metadata_keys


def test_passages_by_default_follow_the_best_items():
    out = retriever(k=2, k_triples=1, k_passages=1).retrieve("Which awards, and who?")
    assert [(n.node.node_id, n.node.text) for n in out] == [
        ("p1", "Curie was born in the City."), ("p2", "Curie received the Prize and the Medal.")]
    assert [n.score for n in out] == pytest.approx([1.0, 0.8])
    assert out[0].node.metadata["kgpath_supporting"] == ["curie"]


async def test_sync_equals_async():
    for output in ("passages", "native"):
        r = retriever(output=output)
        assert snap(r.retrieve("q")) == snap(await r.aretrieve("q"))


def test_top_k_and_options():
    r = retriever(similarity_top_k=2, output="native")
    out = r.retrieve("q")
    assert [n.node.node_id for n in out] == ["curie", "prize"]  # 1.0, then 0.8 (first seen)
    r = retriever(type_mode="off", k=1, output="native")
    nodes = [n.node.node_id for n in r.retrieve("q") if n.node.metadata["kgpath_kind"] == "node"]
    assert nodes == ["curie", "city"]
    with pytest.raises(ConfigError):
        retriever(output="edges")
    with pytest.raises(ConfigError):
        retriever(similarity_top_k=0)
    with pytest.raises(ConfigError, match=r"kk.*accepted"):
        retriever(kk=1)
    with pytest.raises(ConfigError):
        SchemaGuidedRetriever(object())


def test_prompts_exposed_and_updatable():
    llm = ScriptedLLM(lambda p: PLAN)
    r = retriever(llm=llm)
    prompts = r.get_prompts()
    assert set(prompts) == {"decompose_prompt"}
    assert set(prompts["decompose_prompt"].template_vars) == {
        "schema", "max_sub_questions", "question"}
    r.update_prompts({"decompose_prompt": PromptTemplate(
        "TYPES:\n{schema}\nQ: {question} (max {max_sub_questions}) JSON:")})
    r.retrieve("q")
    assert llm.prompts[-1].startswith("TYPES:\nEntity types:")
    assert "Q: q (max 4) JSON:" in llm.prompts[-1]
    with pytest.raises(ConfigError, match="question"):
        r.update_prompts({"decompose_prompt": PromptTemplate("no variables")})


def test_llamaindex_llm_is_wrapped_and_bad_reply_falls_back():
    # MockLLM echoes text that is not a plan: the core falls back to the whole question
    r = SchemaGuidedRetriever.from_graph(graph(), schema=schema(), llm=MockLLM(max_tokens=5),
                                         embed_model=Table())
    with pytest.warns(UserWarning):
        assert r.result("q award").plan.source == "fallback"
    with pytest.raises(ConfigError):
        SchemaGuidedRetriever.from_graph(graph(), schema=schema(), llm="gpt")


def test_works_inside_retriever_query_engine_with_mock_llm():
    engine = RetrieverQueryEngine.from_args(retriever(), llm=MockLLM())
    resp = engine.query("Which awards, and who?")
    assert {n.node.node_id for n in resp.source_nodes} == {"p1", "p2"}
    assert "Curie received the Prize and the Medal." in str(resp)


# ---------------------------------------------------------------- transform + wrapper
class SlowRecordingRetriever(BaseRetriever):
    """Any retriever: sleeps, records (query, start, end), returns fixed typed nodes."""

    def __init__(self, results: dict[str, list[tuple[str, float, str]]], delay: float = 0.2):
        self.results, self.delay = results, delay
        self.log: list[tuple[str, float, float]] = []
        self._lk = threading.Lock()
        super().__init__()

    def _nodes(self, q: str) -> list[NodeWithScore]:
        return [NodeWithScore(node=TextNode(id_=i, text=i, metadata={"kind": t}), score=s)
                for i, s, t in self.results[q]]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        t0 = time.perf_counter()
        time.sleep(self.delay)
        with self._lk:
            self.log.append((query_bundle.query_str, t0, time.perf_counter()))
        return self._nodes(query_bundle.query_str)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        t0 = time.perf_counter()
        await asyncio.sleep(self.delay)
        self.log.append((query_bundle.query_str, t0, time.perf_counter()))
        return self._nodes(query_bundle.query_str)


RESULTS = {
    "Who won the prize?": [("n1", 0.9, "Person"), ("n2", 0.5, "Award"), ("n9", 0.4, "Place")],
    "Which prize is oldest?": [("n2", 0.7, "Award"), ("n3", 0.6, "Award")],
}
SUB_PLAN = json.dumps({"sub_questions": list(RESULTS),
                       "involved_types": {"nodes": ["Person", "Award"], "relations": [],
                                          "attributes": []}})


def overlap(log):
    return max(s for _, s, _ in log) < min(e for _, _, e in log)


def test_query_transform_form():
    t = SchemaDecomposeQueryTransform(schema(), ScriptedLLM(lambda p: SUB_PLAN))
    meta: dict[str, Any] = {"caller": 1}  # LlamaIndex replaces an *empty* dict by a new one
    bundle = t.run("Who won, and which prize is oldest?", meta)
    assert bundle.query_str == "Who won, and which prize is oldest?"
    assert bundle.custom_embedding_strs == list(RESULTS)
    assert meta["kgpath_plan"] is t.last_plan
    assert t.last_plan.involved_types.nodes == ("Person", "Award")
    assert set(t.get_prompts()) == {"decompose_prompt"}
    # usable with LlamaIndex's own TransformRetriever around any retriever
    inner = SlowRecordingRetriever({"Who won, and which prize is oldest?": [("x", 1.0, "A")]},
                                   delay=0)
    out = TransformRetriever(inner, t).retrieve("Who won, and which prize is oldest?")
    assert [n.node.node_id for n in out] == ["x"]
    # LLM-free transform
    h = SchemaDecomposeQueryTransform(schema())
    assert h.decompose("Who won the prize?").source == "heuristic"


def test_sub_question_retriever_runs_any_retriever_concurrently_and_merges():
    inner = SlowRecordingRetriever(RESULTS)
    t = SchemaDecomposeQueryTransform(schema(), ScriptedLLM(lambda p: SUB_PLAN))
    w = SchemaSubQuestionRetriever(inner, t)
    out = w.retrieve("Who won, and which prize is oldest?")
    assert len(inner.log) == 2 and overlap(inner.log)
    assert [(n.node.node_id, n.score) for n in out] == [
        ("n1", 0.9), ("n2", 0.7), ("n3", 0.6), ("n9", 0.4)]
    n2 = next(n for n in out if n.node.node_id == "n2")
    assert n2.node.metadata["kgpath_sub_questions"] == [0, 1]
    assert "kgpath_sub_questions" not in inner._nodes("Which prize is oldest?")[0].node.metadata
    assert set(w.get_prompts()) == {"query_transform:decompose_prompt"}
    # post-retrieval type filter on a metadata key: the Place node is dropped
    w = SchemaSubQuestionRetriever(SlowRecordingRetriever(RESULTS, delay=0), t,
                                   type_metadata_key="kind", similarity_top_k=2)
    assert [n.node.node_id for n in w.retrieve("q")] == ["n1", "n2"]
    # sequential control: no overlap
    seq = SlowRecordingRetriever(RESULTS)
    SchemaSubQuestionRetriever(seq, t, max_concurrency=1).retrieve("q")
    assert not overlap(seq.log)


async def test_sub_question_retriever_async_overlap():
    inner = SlowRecordingRetriever(RESULTS)
    t = SchemaDecomposeQueryTransform(schema(), ScriptedLLM(lambda p: SUB_PLAN))
    out = await SchemaSubQuestionRetriever(inner, t).aretrieve("q")
    assert overlap(inner.log) and len(out) == 4


# ---------------------------------------------------------------- extractor bridge
class StructuredFakeLLM(MockLLM):
    """A scripted LLM for SchemaLLMPathExtractor: returns given triplets per passage text."""

    _replies: dict = PrivateAttr(default_factory=dict)

    async def astructured_predict(self, output_cls, prompt, llm_kwargs=None, **prompt_args):
        for key, triplets in self._replies.items():
            if key in prompt_args["text"]:
                return output_cls(triplets=triplets)
        return output_cls(triplets=[])


def trip(s, st, r, o, ot):
    return {"subject": {"name": s, "type": st}, "relation": {"type": r},
            "object": {"name": o, "type": ot}}


def test_schema_drives_llamaindex_extractor_and_converts_back():
    s = schema()
    kwargs = schema_to_llamaindex_kwargs(s)
    assert ("PERSON", "BORN_IN", "PLACE") in kwargs["kg_validation_schema"]
    llm = StructuredFakeLLM()
    llm._replies = {
        "radium": [trip("Marie Curie", "PERSON", "DISCOVERED", "radium", "ELEMENT"),
                   trip("radium", "ELEMENT", "DISCOVERED", "Marie Curie", "PERSON")],  # pruned
        "Warsaw": [trip("Marie Curie", "Person", "born in", "Warsaw", "Place")],
    }
    ext = SchemaLLMPathExtractor(llm=llm, **kwargs)
    nodes = ext([TextNode(id_="c1", text="Marie Curie discovered radium.",
                          metadata={"file_name": "a.txt"}),
                 TextNode(id_="c2", text="She was born in Warsaw.")])
    assert nodes[0].metadata[KG_RELATIONS_KEY]  # LlamaIndex produced its own output
    res = graph_from_schema_llm_output(nodes, s)
    g = res.graph
    assert sorted((e.source, e.relation, e.target, e.type, e.provenance) for e in g.edges) == [
        ("Marie Curie", "born in", "Warsaw", "born in", ("c2",)),
        ("Marie Curie", "discovered", "radium", "discovered", ("c1",)),
    ]
    assert g.node("Marie Curie").metadata["schema_type"] == "Person"
    assert g.node("Marie Curie").provenance == ("c1", "c2")
    assert "attributes" not in g.node("radium").metadata  # copied chunk metadata is no attribute
    assert g.passage("c1").text == "Marie Curie discovered radium."
    assert res.rejected == ()


def test_bridge_bounds_non_strict_llamaindex_output_by_the_kgpath_schema():
    a, b = EntityNode(name="Marie Curie", label="PERSON"), EntityNode(name="Paris", label="CITY")
    c = EntityNode(name="radium", label="ELEMENT")
    tn = TextNode(id_="c9", text="...", metadata={
        KG_NODES_KEY: [a, b, c],
        KG_RELATIONS_KEY: [Relation(label="LIVED_IN", source_id=a.id, target_id=b.id),
                           Relation(label="DISCOVERED", source_id=a.id, target_id=c.id)],
    })
    res = graph_from_schema_llm_output([tn], schema())
    assert [(e.source, e.relation, e.target) for e in res.graph.edges] == [
        ("Marie Curie", "discovered", "radium")]
    assert sorted(r.reason for r in res.rejected) == [
        "entity type 'CITY' is not in the schema", "tail type 'CITY' is not in the schema"]
    # without a schema: everything is converted, labels become the types
    loose = graph_from_schema_llm_output([tn])
    assert loose.schema.name == "from-llamaindex" and loose.graph.num_edges == 2
    with pytest.raises(ConfigError):
        graph_from_schema_llm_output([TextNode(text="no kg metadata")])
    with pytest.raises(ConfigError):
        graph_from_schema_llm_output(["text"])  # type: ignore[list-item]


def test_bridged_graph_feeds_the_schema_retriever():
    a, c = EntityNode(name="Marie Curie", label="PERSON"), EntityNode(name="radium",
                                                                       label="ELEMENT")
    tn = TextNode(id_="c1", text="Marie Curie discovered radium.", metadata={
        KG_NODES_KEY: [a, c],
        KG_RELATIONS_KEY: [Relation(label="DISCOVERED", source_id=a.id, target_id=c.id)]})
    g = graph_from_schema_llm_output([tn], schema()).graph
    from kgpath import HashingEmbedder

    r = SchemaGuidedRetriever.from_graph(g, schema=schema(), embed_model=HashingEmbedder(),
                                         output="native")
    q = "Which element did Marie Curie discover?"
    out = [n for n in r.retrieve(q) if n.node.metadata["kgpath_kind"] == "node"]
    assert {n.node.node_id for n in out} == {"Marie Curie", "radium"}
    assert r.result(q).plan.source == "heuristic"
    passages = SchemaGuidedRetriever.from_graph(g, schema=schema(),
                                                embed_model=HashingEmbedder()).retrieve(q)
    assert [(n.node.node_id, n.node.text) for n in passages] == [
        ("c1", "Marie Curie discovered radium.")]


def test_llm_labels_and_schema_triples() -> None:
    schema = Schema(name="s", entities=(EntityType(name="person"), EntityType(name="city")),
                    relations=(RelationType(name="born in", head=("person",), tail=("city",)),
                               RelationType(name="knows")))
    assert llm_label("born in") == "BORN_IN"
    assert schema_triples(schema) == [
        ("PERSON", "BORN_IN", "CITY"),
        ("PERSON", "KNOWS", "PERSON"), ("PERSON", "KNOWS", "CITY"),
        ("CITY", "KNOWS", "PERSON"), ("CITY", "KNOWS", "CITY"),
    ]


def test_permissive_schema() -> None:
    s = permissive_schema(["PERSON", "Person", "", "CITY"], ["BORN_IN", "born in"],
                          name="seen", where="x")
    assert s.name == "seen"
    assert [e.name for e in s.entities] == ["PERSON", "CITY"]  # first spelling of each key
    assert [r.name for r in s.relations] == ["BORN_IN"] and s.relations[0].head == ()
    with pytest.raises(ConfigError, match="no typed entities found in the nodes"):
        permissive_schema([""], [], name="n", where="the nodes")
