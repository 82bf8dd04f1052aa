"""LlamaIndex C2RAG adapters: retriever contract, prompts, SufficiencyPostprocessor."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata, MockLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.prompts import PromptTemplate
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.retrievers.kgpath import (
    C2RAG_EVIDENCE_PROMPT,
    C2RAGRetriever,
    KgpathQueryBundle,
    SufficiencyPostprocessor,
)

from kgpath import ConfigError, HashingEmbedder, ScriptedLLM
from kgpath.demo.c2rag import demo_questions, load_demo_kg
from kgpath.embeddings import BaseEmbedder
from kgpath.methods.c2rag import ConstraintCheckedRetriever

Q = demo_questions()[0]


def make(llm: Any = None, **kw: Any) -> C2RAGRetriever:
    llm = llm if llm is not None else ScriptedLLM(lambda prompt: json.dumps(Q["plan"]))
    return C2RAGRetriever.from_graph(load_demo_kg(), embed_model=HashingEmbedder(), llm=llm,
                                     **kw)


def test_retrieve_returns_scored_nodes_with_trace() -> None:
    r = make(llm_metadata_keys=("kgpath_constraint",))
    nodes = r.retrieve(Q["query"])
    kg = load_demo_kg()
    assert nodes and all(isinstance(n, NodeWithScore) for n in nodes)
    assert all(isinstance(n.score, float) for n in nodes)
    for n in nodes:
        meta = n.node.metadata
        for key in ("kgpath_method", "kgpath_kind", "kgpath_constraint", "kgpath_state",
                    "kgpath_n_eff", "kgpath_bindings", "kgpath_source", "kgpath_rank"):
            assert key in meta, key
        assert meta["kgpath_method"] == "c2rag"
        assert meta["kgpath_kind"] in ("passage", "triple")
        if meta["kgpath_kind"] == "passage":
            assert n.node.text == kg.passages[n.node.node_id].text
    # Appendix B: evidence pooled across constraints, ranked by global score
    assert [n.score for n in nodes] == sorted((n.score for n in nodes), reverse=True)
    assert len({n.node.metadata["kgpath_constraint"] for n in nodes}) == 2
    result = r.result(Q["query"])
    assert result.plan.source == "llm" and len(result.blocks) == 2
    # the LLM sees the constraint (asked for), not the trace; the embedder sees none of it
    llm_text = nodes[0].node.get_content(metadata_mode="llm")
    assert "kgpath_constraint:" in llm_text and "kgpath_n_eff" not in llm_text
    assert nodes[0].node.get_content(metadata_mode="embed") == nodes[0].node.text
    json.dumps([n.node.metadata for n in nodes])  # JSON-friendly


def test_top_k_is_honoured_and_per_call_bundle() -> None:
    r = make(similarity_top_k=2)
    assert len(r.retrieve(Q["query"])) == 2
    one = r.retrieve(KgpathQueryBundle(query_str=Q["query"], k=1, options={"gamma": 9.0}))
    assert len(one) == 1
    assert r.result(KgpathQueryBundle(Q["query"], options={"gamma": 9.0})).config.gamma == 9.0
    with pytest.raises(ConfigError, match="k must be"):
        make(similarity_top_k=0)
    with pytest.raises(ConfigError, match=r"\['k_q'\].*accepted"):
        make(k_q=3)


async def test_sync_equals_async() -> None:
    s = make().retrieve(Q["query"])
    a = await make().aretrieve(Q["query"])
    assert [(n.node.node_id, n.score) for n in s] == [(n.node.node_id, n.score) for n in a]
    assert [n.node.metadata for n in s] == [n.node.metadata for n in a]


def test_native_output_keeps_passages_and_triples() -> None:
    nodes = make(output="native").retrieve(Q["query"])
    assert {n.node.metadata["kgpath_kind"] for n in nodes} <= {"passage", "triple"}


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
    assert make(llm=PlanLLM()).result(Q["query"]).plan.source == "llm"
    # a LlamaIndex LLM whose reply is not a plan: the fallback plan is used and reported
    assert make(llm=MockLLM(max_tokens=5)).result(Q["query"]).plan.source == "fallback"


def test_prompts_are_exposed_and_updatable() -> None:
    llm = ScriptedLLM(lambda prompt: json.dumps(Q["plan"]))
    r = make(llm=llm)
    prompts = r.get_prompts()
    assert set(prompts) == {"planner_prompt"}
    assert set(C2RAG_EVIDENCE_PROMPT.template_vars) == {"context_str", "query_str"}
    r.update_prompts({"planner_prompt": PromptTemplate("PLAN IT (m={m}) {query} {schema}")})
    r.retrieve(Q["query"])
    assert llm.prompts[-1].startswith("PLAN IT (m=3) What year")
    assert r.get_prompts()["planner_prompt"].get_template().startswith("PLAN IT")
    with pytest.raises(ConfigError, match="planner_prompt"):
        r.update_prompts({"planner_prompt": PromptTemplate("plan {question}")})


def test_inside_retriever_query_engine_with_mock_llm() -> None:
    r = make(similarity_top_k=4)
    engine = RetrieverQueryEngine.from_args(
        r, llm=MockLLM(), text_qa_template=C2RAG_EVIDENCE_PROMPT
    )
    resp = engine.query(Q["query"])
    assert len(resp.source_nodes) == 4
    assert all(n.node.metadata["kgpath_method"] == "c2rag" for n in resp.source_nodes)


def test_rejects_wrong_core_type() -> None:
    with pytest.raises(ConfigError, match="c2rag retriever"):
        C2RAGRetriever("nope")
    core = ConstraintCheckedRetriever(load_demo_kg(), embedder=HashingEmbedder())
    before = core.config.gamma
    wrapped = C2RAGRetriever(core, gamma=2.5)
    assert wrapped.config.gamma == 2.5 and core.config.gamma == before  # caller's core untouched


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
    assert m["kgpath_gate_state"] == "resolved" and m["kgpath_gate_action"] == "kept"
    assert m["kgpath_gate_n_eff"] == pytest.approx(4225 / 3849)  # p = [62, 2, 1] / 65
    assert [n.node.metadata["kgpath_gate_p"] for n in out] == pytest.approx(
        [62 / 65, 2 / 65, 1 / 65, None]
    )
    assert m["own"] == "a" and "kgpath_gate_n_eff" not in nodes[0].node.metadata  # copies only
    assert "kgpath_gate_state" in out[0].node.excluded_llm_metadata_keys


def test_insufficient_list_calls_fallback_and_marks_it() -> None:
    fb = FixedRetriever(scored(("f1", 0.8), ("a", 0.7), ("f2", 0.6)))
    pp = SufficiencyPostprocessor(fallback_retriever=fb)
    out = pp.postprocess_nodes(scored(("a", 0.5), ("b", 0.5), ("c", 0.5)), query_str="q?")
    assert fb.calls == ["sync:q?"]
    assert [n.node.node_id for n in out] == ["a", "b", "c", "f1", "f2"]  # "a" deduplicated
    assert {n.node.metadata["kgpath_gate_source"] for n in out[:3]} == {"primary"}
    assert {n.node.metadata["kgpath_gate_source"] for n in out[3:]} == {"fallback"}
    assert all(n.node.metadata["kgpath_gate_action"] == "fallback_appended" for n in out)
    assert out[0].node.metadata["kgpath_gate_n_eff"] == pytest.approx(3.0)
    assert out[0].node.metadata["kgpath_gate_state"] == "unresolved"


def test_replace_mode_and_fallback_top_k() -> None:
    fb = FixedRetriever(scored(("f1", 0.8), ("f2", 0.6), ("f3", 0.5)))
    pp = SufficiencyPostprocessor(fallback_retriever=fb, mode="replace", fallback_top_k=2)
    out = pp.postprocess_nodes(scored(("a", 0.5), ("b", 0.5)), query_str="q")
    assert [n.node.node_id for n in out] == ["f1", "f2"]
    assert out[0].node.metadata["kgpath_gate_action"] == "fallback_replaced"


def test_no_fallback_no_query_and_unscored_nodes() -> None:
    nodes = scored(("a", 0.5), ("b", 0.5))
    out = SufficiencyPostprocessor().postprocess_nodes(nodes, query_str="q")
    assert out[0].node.metadata["kgpath_gate_action"] == "no_fallback_configured"
    fb = FixedRetriever(scored(("f", 1.0)))
    out = SufficiencyPostprocessor(fallback_retriever=fb).postprocess_nodes(nodes)
    assert fb.calls == []  # no query: the fallback cannot run
    assert out[0].node.metadata["kgpath_gate_action"] == "no_fallback_configured"
    # no scored node and the paper's literal rule: insufficient, N_eff undefined
    out = SufficiencyPostprocessor(fallback_retriever=fb, score_missing="insufficient"
                                   ).postprocess_nodes(scored(("a", None)), query_str="q")
    assert out[0].node.metadata["kgpath_gate_n_eff"] is None
    assert out[0].node.metadata["kgpath_score_source"] == "none"
    assert [n.node.node_id for n in out] == ["a", "f"]
    # a single scored node is a point mass: N_eff = 1
    out = SufficiencyPostprocessor().postprocess_nodes(scored(("a", 0.2), ("b", None)))
    assert out[0].node.metadata["kgpath_gate_n_eff"] == 1.0
    assert out[0].node.metadata["kgpath_score_source"] == "given"


class TableEmbedder(BaseEmbedder):
    """Hand-chosen 2-d vectors: the query points at "text a"."""

    VECTORS = {"q": (1.0, 0.0), "text a": (1.0, 0.0), "text b": (0.0, 1.0),
               "text c": (0.0, 1.0)}

    def __init__(self) -> None:
        self._dim, self.batch_size, self.show_progress = 2, 8, False

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        return np.array([self.VECTORS[t] for t in texts], dtype=np.float32)


async def test_unscored_nodes_are_scored_by_the_embedder() -> None:
    # cosines 1, 0, 0 -> Eq. 7 p = (1.01, 0.01, 0.01) / 1.03 -> N_eff = 1.03^2 / 1.0203
    fb = FixedRetriever(scored(("f", 1.0)))
    pp = SufficiencyPostprocessor(fallback_retriever=fb, embed_model=TableEmbedder())
    nodes = scored(("a", None), ("b", None), ("c", None))
    for out in (pp.postprocess_nodes(nodes, query_str="q"),
                await pp.apostprocess_nodes(nodes, query_str="q")):
        m = out[0].node.metadata
        assert m["kgpath_score_source"] == "embedder"
        assert m["kgpath_gate_n_eff"] == pytest.approx(1.03**2 / 1.0203)
        assert m["kgpath_gate_state"] == "resolved" and m["kgpath_gate_action"] == "kept"
        assert [n.node.node_id for n in out] == ["a", "b", "c"] and fb.calls == []
        assert [n.score for n in out] == [None, None, None]  # the nodes are not rescored


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
    assert out[0].node.metadata["kgpath_gate_state"] == "unresolved"


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
    sources = [n.node.metadata["kgpath_gate_source"] for n in resp.source_nodes]
    assert sources == ["primary"] * 3 + ["fallback"] * 3
    assert resp.source_nodes[0].node.metadata["kgpath_gate_n_eff"] == pytest.approx(3.0)
    assert resp.source_nodes[-1].node.metadata["kgpath_method"] == "c2rag"
