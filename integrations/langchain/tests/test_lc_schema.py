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
from langchain_kgpath.schema import (
    SchemaGuidedRetriever,
    answer_prompt,
    decompose_runnable,
    format_documents,
    merge_sub_question_documents,
)
from langchain_tests.integration_tests import RetrieversIntegrationTests

from kgpath import BaseEmbedder, HashingEmbedder, KnowledgeGraph
from kgpath.build.schema import EntityType, RelationType, Schema, SchemaWarning
from kgpath.data import load_demo_graph
from kgpath.demo.schema import demo_schema
from kgpath.errors import ConfigError
from kgpath.methods.schema import DecompositionPlan, SchemaRetrieverConfig

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
    return SchemaGuidedRetriever.from_graph(graph(), schema(), llm=llm,
                                            embeddings=kw.pop("embeddings", Table()), **kw)


# ---------------------------------------------------------------- retriever contract
def test_documents_carry_merged_typed_evidence():
    r = retriever(config=SchemaRetrieverConfig(k=2, k_triples=1, k_passages=1), k=20)
    docs = r.invoke("Which awards, and who?")
    ids = [d.id for d in docs]
    assert "city" not in ids
    by_id = {d.id: d for d in docs}
    assert by_id["curie"].metadata["score"] == pytest.approx(1.0)
    assert by_id["medal"].metadata["sub_questions"] == [0, 1]
    assert by_id["medal"].metadata["sub_question_texts"] == ["q award", "q curie"]
    assert by_id["triple:curie|received|prize"].metadata["relation"] == "received"
    assert by_id["passage:p2"].metadata["evidence_kind"] == "passage"
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)
    assert all(isinstance(s, float) for s in scores)
    assert r.last_result is not None and r.last_result.plan.source == "llm"
    json.dumps([d.metadata for d in docs])  # JSON-safe


async def test_sync_equals_async_and_k():
    r = retriever(include=("node",))
    a = [(d.id, d.metadata) for d in r.invoke("q", k=3)]
    r2 = retriever(include=("node",))
    b = [(d.id, d.metadata) for d in await r2.ainvoke("q", k=3)]
    assert a == b and len(a) == 3


def test_involved_types_and_plan_kwargs_skip_decomposition():
    llm = FakeListChatModel(responses=["never used"])
    r = retriever(llm=llm, include=("node",))
    docs = r.invoke("q award", involved_types={"nodes": ["Award"]})
    assert [d.id for d in docs] == ["prize", "medal"]
    assert r.last_result.plan.source == "given"
    plan = DecompositionPlan.from_questions("x", ["q curie"], {"nodes": ["Place"]},
                                            schema=schema())
    assert [d.id for d in r.invoke("x", plan=plan)] == ["city"]
    with pytest.warns(SchemaWarning):
        r.invoke("q award", involved_types={"nodes": ["Spaceship"]})
    with pytest.raises(ConfigError):
        r.invoke("q award", plan=plan, involved_types={"nodes": []})
    with pytest.raises(ConfigError):
        r.invoke("q award", involved_types=["Award"])


def test_bad_options():
    with pytest.raises(ConfigError):
        retriever(k=0)
    with pytest.raises(ConfigError):
        retriever(include=("edge",))
    with pytest.raises(ConfigError):
        retriever(search_kwargs={"kk": 1})
    with pytest.raises(ConfigError):
        SchemaGuidedRetriever(core="x")
    r = retriever()
    with pytest.raises(ConfigError, match="unknown schema-retriever option"):
        r.invoke("q award", depth=3)
    with pytest.raises(ConfigError):
        r.invoke("q award", k=-1)
    with pytest.raises(ConfigError):
        SchemaGuidedRetriever.from_graph(graph(), schema(), llm=42, embeddings=Table())


def test_garbage_llm_reply_falls_back_to_whole_question():
    r = retriever(llm=FakeListChatModel(responses=["I refuse."]), include=("node",))
    with pytest.warns(SchemaWarning, match="unparsable"):
        r.invoke("q award")
    assert r.last_result.plan.source == "fallback"
    assert r.last_result.trace["sub_questions"] == ["q award"]


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
    assert [(d.id, d.metadata.get("score"), d.metadata["sub_questions"]) for d in out] == [
        ("x", 0.9, [0, 1]), ("y", 0.5, [0]), (None, None, [0, 1])]
    assert out[0].metadata["sub_question_texts"] == ["a", "b"]
    assert "sub_questions" not in d1b.metadata  # inputs are not mutated
    with pytest.raises(ConfigError):
        merge_sub_question_documents(plan, [[d1]])


def test_lcel_parallel_retrieve_really_overlaps_and_answers():
    emb = Table(delay=0.25)
    r = SchemaGuidedRetriever.from_graph(graph(), schema(), embeddings=emb, include=("node",))
    plan = DecompositionPlan.from_questions("q", ["q award", "q curie"],
                                            {"nodes": ["Award", "Person"]}, schema=schema())
    per_sub = RunnableLambda(lambda sq: r.invoke(sq.text, involved_types=sq.types.to_dict()))
    results = per_sub.batch(list(plan.sub_questions), config={"max_concurrency": 2})
    assert max(s for _, s, _ in emb.log) < min(e for _, _, e in emb.log)
    merged = merge_sub_question_documents(plan, results)
    assert {d.id: d.metadata["sub_questions"] for d in merged}["medal"] == [0, 1]
    text = format_documents(merged)
    assert "[node (Award)] Medal {sub-question 1,2}" in text
    chain = answer_prompt() | FakeListChatModel(responses=["Curie; Prize, Medal."]) | \
        StrOutputParser()
    out = chain.invoke({"question": "q", "evidence": text,
                        "sub_questions": "1. q award\n2. q curie"})
    assert out == "Curie; Prize, Medal."


# ---------------------------------------------------------------- standard suite
_CORE = SchemaGuidedRetriever.from_graph(load_demo_graph(), demo_schema(),
                                         embeddings=HashingEmbedder(dim=128)).core


class TestSchemaGuidedRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return SchemaGuidedRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"core": _CORE}

    @property
    def retriever_query_example(self) -> str:
        return "Which award did the discoverers of radium receive?"
