"""LangChain C2RAG adapters: retriever, sufficiency fallback retriever and compressor, prompt."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_kgpath import (
    C2RAG_CHAT_PROMPT,
    C2RAGRetriever,
    SufficiencyCompressor,
    SufficiencyFallbackRetriever,
    format_evidence_blocks,
)

from kgpath import ConfigError, HashingEmbedder, ScriptedLLM
from kgpath.demo.c2rag import demo_questions, load_demo_kg

Q = demo_questions()[0]
C1 = "No Cross, No Crown written during imprisonment in ?prison"
C2 = "?prison used as a prison until ?year"


def make(**kw: Any) -> C2RAGRetriever:
    llm = kw.pop("llm", None) or ScriptedLLM(lambda prompt: json.dumps(Q["plan"]))
    return C2RAGRetriever.from_graph(load_demo_kg(), embedding=HashingEmbedder(), llm=llm,
                                     **kw)


def test_documents_carry_the_trace() -> None:
    r = make()
    docs = r.invoke(Q["query"])
    assert docs and all(isinstance(d.metadata["kgpath_score"], float) for d in docs)
    m = docs[0].metadata
    assert m["kgpath_method"] == "c2rag" and m["kgpath_constraint"] in (C1, C2)
    assert m["kgpath_state"] in ("resolved", "unresolved", "ambiguous", "insufficient")
    assert "kgpath_n_eff" in m
    assert [d.metadata["kgpath_rank"] for d in docs] == list(range(1, len(docs) + 1))
    json.dumps([d.metadata for d in docs])
    full = r.result(Q["query"])  # the native result: plan, per-hop trace
    # no reranker: the S_rel scorer and its calibrated gamma (C2RAGConfig docstring)
    assert full.plan.source == "llm" and full.hops[0].top and full.config.gamma == 2.5
    assert full.config.scorer == "relation"


def test_k_and_per_call_config() -> None:
    r = make(k=2)
    assert r.result(Q["query"], gamma=9.0).config.gamma == 9.0
    with pytest.raises(ConfigError, match=re.escape("['max_depth']") + ".*accepted:.*'gamma'"):
        r.invoke(Q["query"], max_depth=2)
    with pytest.raises(ConfigError, match="k must be a positive int"):
        r.invoke(Q["query"], k=0)
    with pytest.raises(ConfigError, match="gamma must be > 0"):
        make(gamma=-1.0)
    with pytest.raises(ConfigError, match="graph must be a KnowledgeGraph"):
        C2RAGRetriever(graph="nope")
    with pytest.raises(ConfigError, match=re.escape("['granularity']")):
        make(granularity="block")


def test_k_honoured_per_call() -> None:
    r = make(k=2)
    assert len(r.invoke(Q["query"])) == 2
    assert len(r.invoke(Q["query"], k=1, gamma=9.0)) == 1


async def test_sync_equals_async() -> None:
    r = make()
    for output in ("passages", "native"):
        s, a = r.invoke(Q["query"], output=output), await r.ainvoke(Q["query"], output=output)
        assert [(d.id, d.page_content, d.metadata) for d in s] == [
            (d.id, d.page_content, d.metadata) for d in a]


def test_langchain_chat_model_as_planner_and_full_result() -> None:
    chat = FakeListChatModel(responses=[json.dumps(Q["plan"])])
    result = make(llm=chat).result(Q["query"])
    assert result.plan.source == "llm" and len(result.plan.constraints) == 2
    # no LLM at all: the honest fallback plan
    r = C2RAGRetriever.from_graph(load_demo_kg(), embedding=HashingEmbedder())
    assert r.result(Q["query"]).plan.source == "fallback"


def test_prompt_and_plain_block_rendering() -> None:
    assert set(C2RAG_CHAT_PROMPT.input_variables) == {"context", "query"}
    # documents from another retriever go to a plain evidence block
    assert format_evidence_blocks([Document(page_content="x", id="d1")]) == "[Evidence]\n- [d1] x"
    docs = [Document(page_content="t1", id="p1", metadata={
                "kgpath_constraint": C2, "kgpath_state": "resolved", "kgpath_n_eff": 1.04,
                "kgpath_bindings": ["?prison=Tower"]}),
            Document(page_content="t2", id="p2", metadata={
                "kgpath_constraint": C1, "kgpath_state": "unresolved", "kgpath_n_eff": None,
                "kgpath_source": "textual"}),
            Document(page_content="t3", id="p3", metadata={"kgpath_constraint": C2})]
    assert format_evidence_blocks(docs) == (
        f"[Block 1] {C2}\nstate: RESOLVED (N_eff 1.04); ?prison=Tower\n- [p1] t1\n- [p3] t3\n\n"
        f"[Block 2] {C1}\nstate: UNRESOLVED (N_eff n/a)\n- [p2] t2 (textual recovery)")


def test_prompt_with_retrieved_blocks() -> None:
    docs = make().invoke(Q["query"])
    ctx = format_evidence_blocks(docs)
    assert ctx.startswith("[Block 1] ") and f"] {C1}" in ctx and f"] {C2}" in ctx
    msgs = C2RAG_CHAT_PROMPT.invoke({"context": ctx, "query": Q["query"]}).to_messages()
    assert msgs[0].type == "system" and "Evidence blocks" in msgs[1].content


# ====================================================================== sufficiency


class Fixed(BaseRetriever):
    docs: list[Document]
    calls: list[str] = []

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        self.calls.append("sync")
        return list(self.docs)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        self.calls.append("async")
        return list(self.docs)


def docs(*pairs: tuple[str, Any], key: str = "score") -> list[Document]:
    return [Document(page_content=f"text {i}", id=i, metadata={key: s} if s is not None else {})
            for i, s in pairs]


def test_sufficient_primary_is_kept_without_calling_fallback() -> None:
    fb = Fixed(docs=docs(("f", 1.0)), calls=[])
    r = SufficiencyFallbackRetriever(Fixed(docs=docs(("a", 0.9), ("b", 0.3), ("c", 0.29)),
                                           calls=[]), fb, 1.5)
    out = r.invoke("q")
    assert fb.calls == [] and [d.id for d in out] == ["a", "b", "c"]
    assert out[0].metadata["kgpath_gate_n_eff"] == pytest.approx(4225 / 3849)
    assert [d.metadata["kgpath_gate_p"] for d in out] == pytest.approx([62 / 65, 2 / 65, 1 / 65])
    assert {d.metadata["kgpath_gate_action"] for d in out} == {"kept"}
    assert {d.metadata["kgpath_score_source"] for d in out} == {"given"}


def test_insufficient_primary_appends_marked_fallback() -> None:
    fb = Fixed(docs=docs(("f1", 0.9), ("a", 0.1), ("f2", 0.8)), calls=[])
    primary = Fixed(docs=docs(("a", 0.5), ("b", 0.5), ("c", 0.5)), calls=[])
    out = SufficiencyFallbackRetriever(primary, fb, gamma=1.5).invoke("q")
    assert fb.calls == ["sync"]
    assert [d.id for d in out] == ["a", "b", "c", "f1", "f2"]
    assert [d.metadata["kgpath_gate_source"] for d in out] == ["primary"] * 3 + ["fallback"] * 2
    assert out[0].metadata["kgpath_gate_n_eff"] == pytest.approx(3.0)
    assert out[-1].metadata["kgpath_gate_action"] == "fallback_appended"
    assert out[-1].metadata["kgpath_gate_p"] is None
    # raising gamma to 3 accepts the same flat list
    kept = SufficiencyFallbackRetriever(primary, fb, gamma=3.0).invoke("q")
    assert [d.id for d in kept] == ["a", "b", "c"]


def test_replace_mode_k_and_score_keys() -> None:
    fb = Fixed(docs=docs(("f1", 0.9), ("f2", 0.8), ("f3", 0.7)), calls=[])
    primary = Fixed(docs=docs(("a", 0.5), ("b", 0.5), key="relevance_score"), calls=[])
    r = SufficiencyFallbackRetriever(primary, fb, 1.5, mode="replace", fallback_k=2)
    assert [d.id for d in r.invoke("q")] == ["f1", "f2"]
    r = SufficiencyFallbackRetriever(primary, fb, 1.5, k=3)
    out = r.invoke("q")
    assert len(out) == 3 and out[0].metadata["kgpath_gate_n_eff"] == pytest.approx(2.0)
    # unscored primary documents with the paper's literal rule: N_eff undefined, insufficient
    unscored = Fixed(docs=docs(("a", None)), calls=[])
    out = SufficiencyFallbackRetriever(unscored, fb, 1.5, score_missing="insufficient").invoke("q")
    assert out[0].metadata["kgpath_gate_n_eff"] is None and len(out) == 4
    assert out[0].metadata["kgpath_score_source"] == "none"


async def test_async_fallback_is_awaited() -> None:
    fb = Fixed(docs=docs(("f1", 0.9)), calls=[])
    primary = Fixed(docs=docs(("a", 0.5), ("b", 0.5)), calls=[])
    out = await SufficiencyFallbackRetriever(primary, fb, 1.5).ainvoke("q")
    assert primary.calls == ["async"] and fb.calls == ["async"]
    assert [d.id for d in out] == ["a", "b", "f1"]


def test_fallback_retriever_validation() -> None:
    fb = Fixed(docs=[], calls=[])
    with pytest.raises(ConfigError, match="primary must be a LangChain BaseRetriever"):
        SufficiencyFallbackRetriever("x", fb)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="gamma must be a finite number > 0"):
        SufficiencyFallbackRetriever(fb, fb, 0.0)
    with pytest.raises(ConfigError, match="top_k"):
        SufficiencyFallbackRetriever(fb, fb, 1.5, top_k=0)
    with pytest.warns(UserWarning, match="N_eff >= 1"):
        SufficiencyFallbackRetriever(fb, fb, 0.5)


def test_compressor_marks_and_falls_back() -> None:
    fb = Fixed(docs=docs(("f1", 0.9)), calls=[])
    comp = SufficiencyCompressor(fallback=fb)
    flat = docs(("a", 0.5), ("b", 0.5))
    out = comp.compress_documents(flat, "q")
    assert [d.id for d in out] == ["a", "b", "f1"] and fb.calls == ["sync"]
    peaked = docs(("a", 0.9), ("b", 0.1))
    out = comp.compress_documents(peaked, "q")
    assert [d.id for d in out] == ["a", "b"] and out[0].metadata["kgpath_gate_state"] == "resolved"
    only_mark = SufficiencyCompressor().compress_documents(flat, "q")
    assert only_mark[0].metadata["kgpath_gate_action"] == "no_fallback_configured"
    assert "kgpath_gate_state" not in flat[0].metadata  # inputs are not mutated


async def test_compressor_async() -> None:
    fb = Fixed(docs=docs(("f1", 0.9)), calls=[])
    out = await SufficiencyCompressor(fallback=fb).acompress_documents(
        docs(("a", 0.5), ("b", 0.5)), "q"
    )
    assert fb.calls == ["async"] and [d.id for d in out] == ["a", "b", "f1"]


# ---------------------------------------------------------------- unscored primary lists
class Words(Embeddings):
    """Counts of alpha/beta/gamma: every cosine below is exact."""

    def _vec(self, text: str) -> list[float]:
        words = re.findall(r"\w+", text.lower())
        return [float(words.count(w)) for w in ("alpha", "beta", "gamma")]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text)


def vector_store_retriever() -> BaseRetriever:
    store = InMemoryVectorStore(Words())
    store.add_texts(["alpha", "alpha beta", "gamma"], ids=["a", "ab", "g"])
    return store.as_retriever(search_kwargs={"k": 3})


@pytest.mark.parametrize("use_async", [False, True])
async def test_vector_store_primary_is_scored_by_the_embedder(use_async: bool) -> None:
    # The store puts no score in metadata; the gate scores with cos(q, d) itself.
    fb = Fixed(docs=docs(("f1", 0.9)), calls=[])
    r = SufficiencyFallbackRetriever(vector_store_retriever(), fb, 1.5, embedding=Words())
    run = r.ainvoke if use_async else None
    # "gamma": cosines 1, 0, 0 -> p = (101, 1, 1)/103, N_eff = 103^2/(101^2+2) < 1.5: kept
    out = await run("gamma") if run else r.invoke("gamma")
    assert [d.id for d in out][0] == "g" and len(out) == 3 and fb.calls == []
    m = out[0].metadata
    assert m["kgpath_score_source"] == "embedder" and m["kgpath_gate_action"] == "kept"
    assert m["kgpath_gate_n_eff"] == pytest.approx(103**2 / (101**2 + 2))
    assert [d.metadata["kgpath_gate_p"] for d in out] == pytest.approx(
        [101 / 103, 1 / 103, 1 / 103])
    # "alpha": cosines 1, 1/sqrt2, 0 -> p ~ (1.01, .7171, .01) / 1.7371, N_eff 1.967: fallback
    out = await run("alpha") if run else r.invoke("alpha")
    p = [1.01, 2**-0.5 + 0.01, 0.01]
    assert [d.id for d in out] == ["a", "ab", "g", "f1"] and len(fb.calls) == 1
    assert out[0].metadata["kgpath_gate_n_eff"] == pytest.approx(
        sum(p) ** 2 / sum(x * x for x in p))
    assert out[-1].metadata["kgpath_gate_source"] == "fallback"
    assert {d.metadata["kgpath_score_source"] for d in out} == {"embedder"}


def test_vector_store_compressor_scores_with_the_embedder() -> None:
    found = vector_store_retriever().invoke("gamma")
    out = SufficiencyCompressor(embedding=Words()).compress_documents(found, "gamma")
    assert out[0].metadata["kgpath_gate_state"] == "resolved"
    assert out[0].metadata["kgpath_score_source"] == "embedder"
    literal = SufficiencyCompressor(score_missing="insufficient").compress_documents(found, "q")
    assert literal[0].metadata["kgpath_gate_state"] == "unresolved"
    assert literal[0].metadata["kgpath_score_source"] == "none"
