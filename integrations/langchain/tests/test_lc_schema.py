"""LangChain adapter of schema-guided retrieval: retriever contract, standard suite, LCEL parts."""

from __future__ import annotations

import json
import math
import threading
import time
from typing import Any

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_kgpath import (
    SchemaGuidedRetriever,
    answer_prompt,
    decompose_runnable,
    format_documents,
    merge_sub_question_documents,
)
from langchain_tests.integration_tests import RetrieversIntegrationTests

from kgpath import HashingEmbedder, KnowledgeGraph
from kgpath.data import load_demo_graph
from kgpath.demo.schema import demo_schema
from kgpath.embeddings import BaseEmbedder
from kgpath.errors import ConfigError
from kgpath.ingest.schema import EntityType, RelationType, Schema, SchemaWarning
from kgpath.methods.schema import DecompositionPlan

S19 = math.sqrt(0.19)
VECS = {
    "Prize": [0.8, 0.6, 0.0], "City": [0.9, S19, 0.0], "Medal": [0.6, 0.8, 0.0],
    "Curie": [0.0, 1.0, 0.0], "q award": [1.0, 0.0, 0.0], "q curie": [0.0, 1.0, 0.0],
}


class Table(BaseEmbedder):
    def __init__(self, delay: float = 0.0) -> None:
        self._dim = 3
        self.show_progress = False
        self.delay = delay
        self.log: list[tuple[str, float, float]] = []
        self._lk = threading.Lock()

    def _embed(self, texts, kind):
        if kind == "query" and self.delay:
            t0 = time.perf_counter()
            time.sleep(self.delay)
            with self._lk:
                self.log.append((texts[0], t0, time.perf_counter()))
        return np.asarray([VECS[t] for t in texts], dtype=np.float32)


def schema() -> Schema:
    return Schema(
        entities=[EntityType(name="Person"), EntityType(name="Award"), EntityType(name="Place")],
        relations=[RelationType(name="received", head=("Person",), tail=("Award",)),
                   RelationType(name="born in", head=("Person",), tail=("Place",))],
    )


def graph() -> KnowledgeGraph:
    g = KnowledgeGraph()
    g.add_passage("p1", "Curie was born in the City.")
    g.add_passage("p2", "Curie received the Prize and the Medal.")
    for nid, name, typ, prov in [("prize", "Prize", "Award", ("p2",)),
                                 ("city", "City", "Place", ("p1",)),
                                 ("medal", "Medal", "Award", ("p2",)),
                                 ("curie", "Curie", "Person", ("p1", "p2"))]:
        g.add_node(nid, name=name, type=typ, provenance=prov)
    g.add_edge("curie", "prize", relation="received", provenance=("p2",))
    g.add_edge("curie", "medal", relation="received", provenance=("p2",))
    g.add_edge("curie", "city", relation="born in", provenance=("p1",))
    return g


PLAN = json.dumps({"sub_questions": ["q award", "q curie"],
                   "involved_types": {"nodes": ["Award", "Person"], "relations": [],
                                      "attributes": []}})




def retriever(**kw: Any) -> SchemaGuidedRetriever:
    llm = kw.pop("llm", None) or FakeListChatModel(responses=[PLAN])
    kw.setdefault("k", None)  # every merged item
    return SchemaGuidedRetriever.from_graph(graph(), schema=schema(), llm=llm,
                                            embedding=kw.pop("embedding", Table()), **kw)


def given(question: str, types: dict[str, Any]) -> DecompositionPlan:
    return DecompositionPlan.from_questions(question, [question], types, schema=schema())


# ---------------------------------------------------------------- retriever contract
def test_result_carries_merged_typed_evidence():
    res = retriever(k=2, k_triples=1, k_passages=1).result("Which awards, and who?")
    by_key = {it.key: it for it in res.items}
    assert "city" not in by_key
    assert by_key["curie"].score == pytest.approx(1.0)
    assert list(by_key["medal"].sub_questions) == [0, 1]
    assert by_key["curie|received|prize"].edge.relation == "received"
    assert by_key["p2"].kind == "passage" and res.plan.source == "llm"


def test_documents_carry_merged_typed_evidence():
    r = retriever(k_triples=1, k_passages=1)
    docs = r.invoke("Which awards, and who?", output="native")
    by_id = {d.id: d.metadata for d in docs}
    assert by_id["curie"]["kgpath_score"] == pytest.approx(1.0)
    assert by_id["medal"]["kgpath_sub_questions"] == [0, 1]
    assert by_id["medal"]["kgpath_kind"] == "node"
    assert by_id["medal"]["kgpath_schema_type"] == "Award"
    items = r.result("Which awards, and who?").items  # nodes, then triples, then passages
    assert [d.id for d in docs] == [it.key for it in items]
    assert [by_id[it.key]["kgpath_kind"] for it in items] == [it.kind for it in items]
    assert {it.kind for it in items} == {"node", "triple", "passage"}
    assert by_id["p2"]["kgpath_kind"] == "passage"
    assert all(isinstance(m["kgpath_score"], float) for m in by_id.values())
    json.dumps([d.metadata for d in docs])  # JSON-safe
    texts = {p.text for p in graph().passages.values()}
    passages = r.invoke("Which awards, and who?")  # default: the source passages
    assert passages and all(d.page_content in texts for d in passages)


async def test_sync_equals_async_and_k():
    a = [(d.id, d.metadata) for d in retriever().invoke("q", k=3, output="native")]
    b = [(d.id, d.metadata) for d in await retriever().ainvoke("q", k=3, output="native")]
    assert a == b and len(a) == 3


def test_plan_kwarg_skips_decomposition():
    r = retriever(llm=FakeListChatModel(responses=["never used"]))
    res = r.result("q award", plan=given("q award", {"nodes": ["Award"]}))
    assert [n.key for n in res.nodes] == ["prize", "medal"] and res.plan.source == "given"
    assert [n.key for n in r.result("x", plan=given("q curie", {"nodes": ["Place"]})).nodes
            ] == ["city"]
    with pytest.warns(SchemaWarning):
        given("q award", {"nodes": ["Spaceship"]})
    with pytest.raises(ConfigError, match=r"\['involved_types'\].*accepted:.*'plan'"):
        r.invoke("q award", involved_types={"nodes": ["Award"]})


def test_bad_options():
    with pytest.raises(ConfigError):
        retriever(k=0)
    with pytest.raises(ConfigError, match=r"\['include'\]"):
        retriever(include=("edge",))
    with pytest.raises(ConfigError, match=r"\['kk'\]"):
        retriever(kk=1)
    with pytest.raises(ConfigError):
        SchemaGuidedRetriever(graph="x")
    r = retriever()
    with pytest.raises(ConfigError, match=r"\['depth'\].*accepted:"):
        r.invoke("q award", depth=3)
    with pytest.raises(ConfigError):
        r.invoke("q award", k=-1)
    with pytest.raises(ConfigError):
        SchemaGuidedRetriever.from_graph(graph(), schema=schema(), llm=42, embedding=Table())


def test_garbage_llm_reply_falls_back_to_whole_question():
    r = retriever(llm=FakeListChatModel(responses=["I refuse."]))
    with pytest.warns(SchemaWarning, match="unparsable"):
        res = r.result("q award")
    assert res.plan.source == "fallback"
    assert res.trace["sub_questions"] == ["q award"]


# ---------------------------------------------------------------- LCEL building blocks
def test_decompose_runnable_sync_async_and_heuristic():
    run = decompose_runnable(schema(), FakeListChatModel(responses=[PLAN]))
    plan = run.invoke("Which awards, and who?")
    assert [s.text for s in plan.sub_questions] == ["q award", "q curie"]
    heur = decompose_runnable(schema())
    import asyncio

    p2 = asyncio.run(heur.ainvoke("Who received the award and where was he born?"))
    assert p2.source == "heuristic" and len(p2.sub_questions) == 2


def test_merge_sub_question_documents():
    plan = DecompositionPlan.from_questions("q", ["a", "b"])
    d1 = Document(page_content="x", id="x", metadata={"score": 0.2})
    d1b = Document(page_content="x", id="x", metadata={"score": 0.9})
    d2 = Document(page_content="y", id="y", metadata={"score": 0.5})
    d3 = Document(page_content="no id, no score")
    out = merge_sub_question_documents(plan, [[d1, d2, d3], [d1b, d3]])
    assert [(d.id, d.metadata.get("score"), d.metadata["kgpath_sub_questions"]) for d in out
            ] == [("x", 0.9, [0, 1]), ("y", 0.5, [0]), (None, None, [0, 1])]
    assert [plan.sub_questions[i].text for i in out[0].metadata["kgpath_sub_questions"]] == [
        "a", "b"]
    assert "kgpath_sub_questions" not in d1b.metadata  # inputs are not mutated
    # kgpath documents are merged by kgpath_score
    k1 = Document(page_content="z", id="z", metadata={"kgpath_score": 0.1})
    k2 = Document(page_content="z", id="z", metadata={"kgpath_score": 0.7})
    (z,) = merge_sub_question_documents(plan, [[k1], [k2]])
    assert z.metadata["kgpath_score"] == 0.7 and z.metadata["kgpath_sub_questions"] == [0, 1]
    with pytest.raises(ConfigError):
        merge_sub_question_documents(plan, [[d1]])


def test_lcel_parallel_retrieve_really_overlaps_and_answers():
    emb = Table(delay=0.25)
    r = SchemaGuidedRetriever.from_graph(graph(), schema=schema(), embedding=emb,
                                         output="native")
    plan = DecompositionPlan.from_questions("q", ["q award", "q curie"],
                                            {"nodes": ["Award", "Person"]}, schema=schema())

    def nodes(sq: Any) -> list[Document]:
        docs = r.invoke(sq.text, plan=given(sq.text, sq.types.to_dict()))
        return [d for d in docs if d.metadata["kgpath_kind"] == "node"]

    results = RunnableLambda(nodes).batch(list(plan.sub_questions),
                                          config={"max_concurrency": 2})
    assert max(s for _, s, _ in emb.log) < min(e for _, _, e in emb.log)
    merged = merge_sub_question_documents(plan, results)
    assert {d.id: d.metadata["kgpath_sub_questions"] for d in merged}["medal"] == [0, 1]
    text = format_documents(merged)
    assert "[node (Award)] Medal {sub-question 1,2}" in text
    chain = answer_prompt() | FakeListChatModel(responses=["Curie; Prize, Medal."]) | \
        StrOutputParser()
    out = chain.invoke({"question": "q", "evidence": text,
                        "sub_questions": "1. q award\n2. q curie"})
    assert out == "Curie; Prize, Medal."


# ---------------------------------------------------------------- standard suite
_CORE = SchemaGuidedRetriever.from_graph(load_demo_graph(), schema=demo_schema(),
                                         embedding=HashingEmbedder(dim=128)).core


class TestSchemaGuidedRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return SchemaGuidedRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"graph": _CORE}

    @property
    def retriever_query_example(self) -> str:
        return "Which award did the discoverers of radium receive?"
