"""LlamaIndex C2RAG adapters: retriever contract, prompts, SufficiencyPostprocessor."""

from __future__ import annotations

import json
from typing import Any

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata, MockLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.prompts import PromptTemplate
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.retrievers.kgpath._convert import KgpathQueryBundle
from llama_index.retrievers.kgpath.c2rag import (
    C2RAG_EVIDENCE_PROMPT,
    C2RAGRetriever,
    SufficiencyPostprocessor,
)

from kgpath import ConfigError, HashingEmbedder, ScriptedLLM
from kgpath.demo.c2rag import demo_questions, load_demo_kg
from kgpath.methods.c2rag import ConstraintCheckedRetriever

Q = demo_questions()[0]


def make(llm: Any = None, **kw: Any) -> C2RAGRetriever:
    llm = llm if llm is not None else ScriptedLLM(lambda prompt: json.dumps(Q["plan"]))
    return C2RAGRetriever.from_graph(load_demo_kg(), embedder=HashingEmbedder(), llm=llm, **kw)


def test_retrieve_returns_scored_nodes_with_trace() -> None:
    nodes = make().retrieve(Q["query"])
    assert nodes and all(isinstance(n, NodeWithScore) for n in nodes)
    assert all(isinstance(n.score, float) for n in nodes)
    meta = nodes[0].node.metadata
    for key in ("kgpath_method", "constraint", "constraint_index", "block", "state", "n_eff",
                "gamma", "bindings", "recovery_used", "plan_source", "hop_trace", "rank",
                "evidence_kind", "evidence_source"):
        assert key in meta, key
    assert meta["kgpath_method"] == "c2rag" and meta["plan_source"] == "llm"
    assert meta["hop_trace"]["after_rerank"] and "n_eff" in meta["hop_trace"]
    # interleaved across blocks: rank 1 comes from block 1, rank 2 from block 2
    assert [n.node.metadata["block"] for n in nodes[:2]] == [1, 2]
    # the LLM sees the constraint and state, not the trace; the embedder sees none of it
    llm_text = nodes[0].node.get_content(metadata_mode="llm")
    assert "constraint:" in llm_text and "hop_trace" not in llm_text
    assert nodes[0].node.get_content(metadata_mode="embed") == nodes[0].node.text
    json.dumps([n.node.metadata for n in nodes])  # JSON-friendly


def test_top_k_is_honoured_and_per_call_bundle() -> None:
    r = make(similarity_top_k=2)
    assert len(r.retrieve(Q["query"])) == 2
    one = r.retrieve(KgpathQueryBundle(query_str=Q["query"], k=1, options={"gamma": 9.0}))
    assert len(one) == 1 and one[0].node.metadata["gamma"] == 9.0
    with pytest.raises(ConfigError, match="similarity_top_k"):
        make(similarity_top_k=0)
    with pytest.raises(ConfigError, match="unknown C2RAG option"):
        make(k_q=3)


async def test_sync_equals_async() -> None:
    s = make().retrieve(Q["query"])
    a = await make().aretrieve(Q["query"])
    assert [(n.node.node_id, n.score) for n in s] == [(n.node.node_id, n.score) for n in a]
    assert [n.node.metadata for n in s] == [n.node.metadata for n in a]


def test_block_granularity_one_node_per_constraint() -> None:
    nodes, result = make(granularity="block").retrieve_with_result(Q["query"])
    assert len(nodes) == len(result.blocks) == 2
    for n, b in zip(nodes, result.blocks, strict=True):
        assert n.node.text.startswith(b.header)
        assert f"state: {b.state.upper()}" in n.node.text
        assert n.score == pytest.approx(0.0 if b.n_eff is None else 1 / b.n_eff)


class PlanLLM(CustomLLM):
    """A LlamaIndex LLM that always answers with the stored plan."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata()

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=json.dumps(Q["plan"]))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):  # type: ignore[override]
        yield self.complete(prompt)


def test_llamaindex_llm_is_accepted_as_planner() -> None:
    nodes = make(llm=PlanLLM()).retrieve(Q["query"])
    assert nodes[0].node.metadata["plan_source"] == "llm"
    # a LlamaIndex LLM whose reply is not a plan: the fallback plan is used and reported
    fb = make(llm=MockLLM(max_tokens=5)).retrieve(Q["query"])
    assert fb[0].node.metadata["plan_source"] == "fallback"


def test_prompts_are_exposed_and_updatable() -> None:
    llm = ScriptedLLM(lambda prompt: json.dumps(Q["plan"]))
    r = make(llm=llm)
    prompts = r.get_prompts()
    assert set(prompts) == {"planner_prompt", "evidence_prompt"}
    assert prompts["evidence_prompt"].get_template() == C2RAG_EVIDENCE_PROMPT.get_template()
    assert set(C2RAG_EVIDENCE_PROMPT.template_vars) == {"context_str", "query_str"}
    r.update_prompts({"planner_prompt": PromptTemplate("PLAN IT (m={m}) {query} {schema}")})
    r.retrieve(Q["query"])
    assert llm.prompts[-1].startswith("PLAN IT (m=3) What year")
    r.update_prompts({"evidence_prompt": PromptTemplate("E {context_str} Q {query_str}")})
    assert r.get_prompts()["evidence_prompt"].get_template() == "E {context_str} Q {query_str}"
    with pytest.raises(ConfigError, match="planner_prompt"):
        r.update_prompts({"planner_prompt": PromptTemplate("plan {question}")})


def test_inside_retriever_query_engine_with_mock_llm() -> None:
    r = make(similarity_top_k=4)
    engine = RetrieverQueryEngine.from_args(
        r, llm=MockLLM(), text_qa_template=r.get_prompts()["evidence_prompt"]
    )
    resp = engine.query(Q["query"])
    assert len(resp.source_nodes) == 4
    assert all(n.node.metadata["kgpath_method"] == "c2rag" for n in resp.source_nodes)


def test_rejects_wrong_core_type() -> None:
    with pytest.raises(ConfigError, match="ConstraintCheckedRetriever"):
        C2RAGRetriever("nope")  # type: ignore[arg-type]
    core = ConstraintCheckedRetriever(load_demo_kg(), embedder=HashingEmbedder())
    wrapped = C2RAGRetriever(core, gamma=2.0)
    assert wrapped.config.gamma == 2.0 and core.config.gamma == 1.5  # caller's core untouched


# ====================================================================== postprocessor


class FixedRetriever(BaseRetriever):
    def __init__(self, nodes: list[NodeWithScore]) -> None:
        super().__init__()
        self.nodes = nodes
        self.calls: list[str] = []

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.calls.append("sync:" + query_bundle.query_str)
        return list(self.nodes)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.calls.append("async:" + query_bundle.query_str)
        return list(self.nodes)


def scored(*pairs: tuple[str, float | None]) -> list[NodeWithScore]:
    return [NodeWithScore(node=TextNode(id_=i, text=f"text {i}", metadata={"own": i}), score=s)
            for i, s in pairs]


def test_sufficient_list_passes_through_without_fallback() -> None:
    fb = FixedRetriever(scored(("f1", 1.0)))
    pp = SufficiencyPostprocessor(fallback_retriever=fb)
    nodes = scored(("a", 0.9), ("b", 0.3), ("c", 0.29), ("d", 0.1))
    out = pp.postprocess_nodes(nodes, query_str="q")
    assert fb.calls == [] and [n.node.node_id for n in out] == ["a", "b", "c", "d"]
    m = out[0].node.metadata
    assert m["c2rag_state"] == "resolved" and m["c2rag_action"] == "kept"
    assert m["c2rag_n_eff"] == pytest.approx(4225 / 3849)  # p = [62, 2, 1] / 65
    assert [n.node.metadata["c2rag_p"] for n in out] == pytest.approx(
        [62 / 65, 2 / 65, 1 / 65, None]
    )
    assert m["own"] == "a" and "c2rag_n_eff" not in nodes[0].node.metadata  # copies only
    assert "c2rag_state" in out[0].node.excluded_llm_metadata_keys


def test_insufficient_list_calls_fallback_and_marks_it() -> None:
    fb = FixedRetriever(scored(("f1", 0.8), ("a", 0.7), ("f2", 0.6)))
    pp = SufficiencyPostprocessor(fallback_retriever=fb)
    out = pp.postprocess_nodes(scored(("a", 0.5), ("b", 0.5), ("c", 0.5)), query_str="q?")
    assert fb.calls == ["sync:q?"]
    assert [n.node.node_id for n in out] == ["a", "b", "c", "f1", "f2"]  # "a" deduplicated
    assert {n.node.metadata["c2rag_source"] for n in out[:3]} == {"primary"}
    assert {n.node.metadata["c2rag_source"] for n in out[3:]} == {"fallback"}
    assert all(n.node.metadata["c2rag_action"] == "fallback_appended" for n in out)
    assert out[0].node.metadata["c2rag_n_eff"] == pytest.approx(3.0)
    assert out[0].node.metadata["c2rag_state"] == "unresolved"


def test_replace_mode_and_fallback_top_k() -> None:
    fb = FixedRetriever(scored(("f1", 0.8), ("f2", 0.6), ("f3", 0.5)))
    pp = SufficiencyPostprocessor(fallback_retriever=fb, mode="replace", fallback_top_k=2)
    out = pp.postprocess_nodes(scored(("a", 0.5), ("b", 0.5)), query_str="q")
    assert [n.node.node_id for n in out] == ["f1", "f2"]
    assert out[0].node.metadata["c2rag_action"] == "fallback_replaced"


def test_no_fallback_no_query_and_unscored_nodes() -> None:
    nodes = scored(("a", 0.5), ("b", 0.5))
    out = SufficiencyPostprocessor().postprocess_nodes(nodes, query_str="q")
    assert out[0].node.metadata["c2rag_action"] == "no_fallback_configured"
    fb = FixedRetriever(scored(("f", 1.0)))
    out = SufficiencyPostprocessor(fallback_retriever=fb).postprocess_nodes(nodes)
    assert out[0].node.metadata["c2rag_action"] == "no_query" and fb.calls == []
    # no scored node at all: insufficient, N_eff undefined
    out = SufficiencyPostprocessor(fallback_retriever=fb).postprocess_nodes(
        scored(("a", None)), query_str="q"
    )
    assert out[0].node.metadata["c2rag_n_eff"] is None
    assert [n.node.node_id for n in out] == ["a", "f"]
    # a single scored node is a point mass: N_eff = 1
    out = SufficiencyPostprocessor().postprocess_nodes(scored(("a", 0.2), ("b", None)))
    assert out[0].node.metadata["c2rag_n_eff"] == 1.0


def test_postprocessor_validation() -> None:
    with pytest.raises(ConfigError, match="gamma must be a finite number > 0, got 0"):
        SufficiencyPostprocessor(gamma=0)
    with pytest.raises(ConfigError, match="epsilon"):
        SufficiencyPostprocessor(epsilon=-1)
    with pytest.raises(ConfigError, match="top_k must be a positive int, got 0"):
        SufficiencyPostprocessor(top_k=0)
    with pytest.raises(ConfigError, match="mode"):
        SufficiencyPostprocessor(mode="merge")
    with pytest.raises(ConfigError, match="BaseRetriever"):
        SufficiencyPostprocessor(fallback_retriever="nope")
    with pytest.warns(UserWarning, match="N_eff >= 1"):
        pp = SufficiencyPostprocessor(gamma=0.5)
    out = pp.postprocess_nodes(scored(("a", 1.0)))
    assert out[0].node.metadata["c2rag_state"] == "unresolved"


async def test_async_postprocess_uses_async_fallback() -> None:
    fb = FixedRetriever(scored(("f1", 0.8)))
    pp = SufficiencyPostprocessor(fallback_retriever=fb)
    out = await pp.apostprocess_nodes(scored(("a", 0.5), ("b", 0.5)), query_str="q")
    assert fb.calls == ["async:q"] and [n.node.node_id for n in out] == ["a", "b", "f1"]


def test_postprocessor_in_an_existing_query_engine() -> None:
    # A plain vector index whose mock embedding gives every node the same score: the
    # check finds no dominant node and pulls in C2RAG's evidence as the fallback.
    docs = [TextNode(id_=f"d{i}", text=f"Unrelated note number {i}.") for i in range(5)]
    index = VectorStoreIndex(docs, embed_model=MockEmbedding(embed_dim=8))
    pp = SufficiencyPostprocessor(fallback_retriever=make(similarity_top_k=3))
    engine = RetrieverQueryEngine.from_args(
        index.as_retriever(similarity_top_k=3), llm=MockLLM(), node_postprocessors=[pp]
    )
    resp = engine.query(Q["query"])
    sources = [n.node.metadata["c2rag_source"] for n in resp.source_nodes]
    assert sources == ["primary"] * 3 + ["fallback"] * 3
    assert resp.source_nodes[0].node.metadata["c2rag_n_eff"] == pytest.approx(3.0)
    assert resp.source_nodes[-1].node.metadata["kgpath_method"] == "c2rag"
