"""LangChain C2RAG adapters: retriever, sufficiency fallback retriever and compressor, prompt."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_kgpath.c2rag import (
    C2RAG_CHAT_PROMPT,
    C2RAGRetriever,
    SufficiencyCompressor,
    SufficiencyFallbackRetriever,
    format_evidence_blocks,
)

from kgpath import ConfigError, HashingEmbedder, ScriptedLLM
from kgpath.demo.c2rag import demo_questions, load_demo_kg

Q = demo_questions()[0]


def make(**kw: Any) -> C2RAGRetriever:
    llm = kw.pop("llm", None) or ScriptedLLM(lambda prompt: json.dumps(Q["plan"]))
    return C2RAGRetriever.from_graph(load_demo_kg(), HashingEmbedder(), llm=llm, **kw)


def test_documents_carry_the_trace() -> None:
    docs = make().invoke(Q["query"])
    assert docs and all(isinstance(d.metadata["score"], float) for d in docs)
    m = docs[0].metadata
    assert m["kgpath_method"] == "c2rag" and m["plan_source"] == "llm"
    assert m["constraint"] == "No Cross, No Crown written during imprisonment in ?prison"
    assert m["state"] in ("resolved", "unresolved") and "n_eff" in m
    assert m["hop_trace"]["after_rerank"] and m["gamma"] == 1.5
    assert [d.metadata["rank"] for d in docs] == list(range(1, len(docs) + 1))
    json.dumps([d.metadata for d in docs])


def test_k_and_per_call_config() -> None:
    r = make(k=2)
    assert len(r.invoke(Q["query"])) == 2
    docs = r.invoke(Q["query"], k=1, gamma=9.0)
    assert len(docs) == 1 and docs[0].metadata["gamma"] == 9.0
    with pytest.raises(ConfigError, match="unknown C2RAG option"):
        r.invoke(Q["query"], max_depth=2)
    with pytest.raises(ConfigError, match="k must be a positive int"):
        r.invoke(Q["query"], k=0)
    with pytest.raises(ConfigError, match="gamma must be > 0"):
        make(gamma=-1.0)
    with pytest.raises(ConfigError, match="ConstraintCheckedRetriever"):
        C2RAGRetriever(c2rag="nope")


async def test_sync_equals_async_and_block_granularity() -> None:
    r = make()
    s, a = r.invoke(Q["query"]), await r.ainvoke(Q["query"])
    assert [(d.id, d.metadata) for d in s] == [(d.id, d.metadata) for d in a]
    blocks = make(granularity="block").invoke(Q["query"])
    assert [d.metadata["block"] for d in blocks] == [1, 2]
    assert blocks[0].page_content.startswith(blocks[0].metadata["constraint"])


def test_langchain_chat_model_as_planner_and_full_result() -> None:
    chat = FakeListChatModel(responses=[json.dumps(Q["plan"])])
    result = make(llm=chat).retrieve_result(Q["query"])
    assert result.plan.source == "llm" and len(result.plan.constraints) == 2
    # no LLM at all: the honest fallback plan, reported in metadata
    r = C2RAGRetriever.from_graph(load_demo_kg(), HashingEmbedder())
    assert r.invoke(Q["query"])[0].metadata["plan_source"] == "fallback"


def test_prompt_and_block_rendering() -> None:
    assert set(C2RAG_CHAT_PROMPT.input_variables) == {"context", "query"}
    docs = make().invoke(Q["query"])
    ctx = format_evidence_blocks(docs)
    assert ctx.startswith("[Block 1] No Cross, No Crown written during imprisonment in ?prison")
    assert "[Block 2] ?prison used as a prison until ?year" in ctx
    msgs = C2RAG_CHAT_PROMPT.invoke({"context": ctx, "query": Q["query"]}).to_messages()
    assert msgs[0].type == "system" and "Evidence blocks" in msgs[1].content
    # documents from another retriever go to a plain evidence block
    assert format_evidence_blocks([Document(page_content="x", id="d1")]) == "[Evidence]\n- [d1] x"


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
    assert out[0].metadata["c2rag_n_eff"] == pytest.approx(4225 / 3849)
    assert [d.metadata["c2rag_p"] for d in out] == pytest.approx([62 / 65, 2 / 65, 1 / 65])
    assert {d.metadata["c2rag_action"] for d in out} == {"kept"}


def test_insufficient_primary_appends_marked_fallback() -> None:
    fb = Fixed(docs=docs(("f1", 0.9), ("a", 0.1), ("f2", 0.8)), calls=[])
    primary = Fixed(docs=docs(("a", 0.5), ("b", 0.5), ("c", 0.5)), calls=[])
    out = SufficiencyFallbackRetriever(primary, fb, gamma=1.5).invoke("q")
    assert fb.calls == ["sync"]
    assert [d.id for d in out] == ["a", "b", "c", "f1", "f2"]
    assert [d.metadata["c2rag_source"] for d in out] == ["primary"] * 3 + ["fallback"] * 2
    assert out[0].metadata["c2rag_n_eff"] == pytest.approx(3.0)
    assert out[-1].metadata["c2rag_action"] == "fallback_appended"
    assert out[-1].metadata["c2rag_p"] is None
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
    assert len(out) == 3 and out[0].metadata["c2rag_n_eff"] == pytest.approx(2.0)
    # unscored primary documents: N_eff undefined, insufficient
    unscored = Fixed(docs=docs(("a", None)), calls=[])
    out = SufficiencyFallbackRetriever(unscored, fb, 1.5).invoke("q")
    assert out[0].metadata["c2rag_n_eff"] is None and len(out) == 4


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
    assert [d.id for d in out] == ["a", "b"] and out[0].metadata["c2rag_state"] == "resolved"
    only_mark = SufficiencyCompressor().compress_documents(flat, "q")
    assert only_mark[0].metadata["c2rag_action"] == "no_fallback_configured"
    assert "c2rag_state" not in flat[0].metadata  # inputs are not mutated


async def test_compressor_async() -> None:
    fb = Fixed(docs=docs(("f1", 0.9)), calls=[])
    out = await SufficiencyCompressor(fallback=fb).acompress_documents(
        docs(("a", 0.5), ("b", 0.5)), "q"
    )
    assert fb.calls == ["async"] and [d.id for d in out] == ["a", "b", "f1"]
