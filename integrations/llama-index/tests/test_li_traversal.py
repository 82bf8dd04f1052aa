"""LlamaIndex adapter of the seven chunk-graph traversals: contract and hand-computed paths.

Hand graph (3-D unit vectors, query "east" = (1, 0, 0)); each chunk holds one sentence with
the chunk's vector, so a sentence's score is its chunk's cosine to the query:

    A = (0.6, 0.8, 0)   anchor (cos 0.60)         neighbours K, Q, T, F
    K = (0, 1, 0)       cos(q,K) 0.00, cos(A,K) 0.80   (kg_traversal's choice)
    Q = (0.5, 0, .866)  cos(q,Q) 0.50, cos(A,Q) 0.30   (query_traversal's choice)
    T = (0.4, 0.6, .693) cos(q,T) 0.40, cos(A,T) 0.72  (triangulation_average's choice)
    F = (0.45, -0.6, .661) cos(q,F) 0.45, cos(A,F) -0.21 (triangulation_fulldim's choice)

With ``frontier="visited"`` and the relevance rules off, query_traversal reads
A, Q, F, T, K (decreasing cos(q, c) among the neighbours of what it has visited).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from llama_index.core import Document
from llama_index.core.llms import MockLLM
from llama_index.core.prompts import PromptTemplate
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import QueryBundle
from llama_index.retrievers.kgpath import KGTraversalRetriever

from kgpath import ConfigError, HashingEmbedder, KnowledgeGraph, ScriptedLLM
from kgpath.methods.traversal import (
    ALGORITHMS,
    EXTENSIONS,
    TraversalConfig,
    TraversalRetriever,
)

VECS = {
    "A": [0.6, 0.8, 0.0],
    "K": [0.0, 1.0, 0.0],
    "Q": [0.5, 0.0, math.sqrt(0.75)],
    "T": [0.4, 0.6, math.sqrt(0.48)],
    "F": [0.45, -0.6, math.sqrt(0.4375)],
}
RULES_OFF = {"max_sentences": 20, "min_sentences": 20, "frontier": "visited"}


class QueryTable:
    """Query embedder with one fixed vector per query text (passages are never embedded)."""

    dim = 3
    TABLE = {"east": [1.0, 0.0, 0.0], "north": [0.0, 1.0, 0.0]}

    def __init__(self) -> None:
        self.async_calls = 0

    def embed_queries(self, texts):
        return np.asarray([self.TABLE[t] for t in texts], dtype=np.float32)

    def embed_passages(self, texts):
        raise AssertionError("the hand graph holds every embedding")

    async def aembed_queries(self, texts):
        self.async_calls += 1
        return self.embed_queries(texts)

    async def aembed_passages(self, texts):
        return self.embed_passages(texts)


def hand_graph() -> KnowledgeGraph:
    g = KnowledgeGraph()
    for n in VECS:
        g.add_node(f"chunk:{n}", name=f"Doc {n}", text=f"Chunk {n}.", type="chunk",
                   metadata={"doc_id": n, "position": 0}, provenance=(n,))
    for n in VECS:
        g.add_node(f"sent:{n}", name=f"Doc {n}", text=f"Sentence {n}.", type="sentence",
                   metadata={"doc_id": n}, provenance=(n,))
        g.add_edge(f"chunk:{n}", f"sent:{n}", "has_sentence")
    for n in "KQTF":
        g.add_edge("chunk:A", f"chunk:{n}", "similar_inter", type="similarity")
    g.vectors.set(np.asarray(list(VECS.values()) * 2, dtype=np.float32))
    return g


@pytest.fixture
def embedder() -> QueryTable:
    return QueryTable()


@pytest.fixture
def core(embedder) -> TraversalRetriever:
    return TraversalRetriever(hand_graph(), embedder=embedder,
                              config=TraversalConfig(**RULES_OFF))


def native(core: Any, **options: Any) -> KGTraversalRetriever:
    """One node per extracted sentence (``output="native"``)."""
    return KGTraversalRetriever(core, output="native", **options)


@pytest.mark.parametrize(
    ("algorithm", "second"),
    [("query_traversal", "Q"), ("kg_traversal", "K"), ("triangulation_average", "T"),
     ("triangulation_fulldim", "F"), ("basic_retrieval", "Q")],
)
def test_every_algorithm_by_name_matches_hand_computation(core, algorithm, second):
    r = native(core, algorithm=algorithm)
    nodes = r.retrieve("east")
    assert [n.node.node_id for n in nodes][:2] == ["sent:A", f"sent:{second}"]
    meta = nodes[1].node.metadata
    assert meta["kgpath_hops"] == 1 and meta["kgpath_chunk_id"] == f"chunk:{second}"
    result = r.result("east")
    assert result.algorithm == algorithm
    assert result.path_ids[:2] == ["chunk:A", f"chunk:{second}"]


def test_scores_metadata_and_order(core):
    nodes = native(core).retrieve("east")
    assert [n.node.node_id for n in nodes] == ["sent:A", "sent:Q", "sent:F", "sent:T", "sent:K"]
    assert [n.score for n in nodes] == pytest.approx([0.6, 0.5, 0.45, 0.4, 0.0], abs=1e-6)
    assert all(type(n.score) is float for n in nodes)
    m = nodes[2].node.metadata
    assert m == {
        "kgpath_method": "traversal", "kgpath_kind": "sentence", "kgpath_id": "sent:F",
        "kgpath_rank": 3, "kgpath_score": pytest.approx(0.45, abs=1e-6),
        "kgpath_doc_id": "F", "kgpath_chunk_id": "chunk:F", "kgpath_hops": 2,
        "kgpath_query_similarity": pytest.approx(0.45, abs=1e-6),
        "kgpath_anchor_id": "chunk:A",
    }
    result = native(core).result("east")
    assert result.path_ids == ["chunk:A", "chunk:Q", "chunk:F", "chunk:T", "chunk:K"]
    assert result.stop_reason == "dead end: no unvisited candidate adds a sentence"
    node = nodes[2].node
    assert node.get_content(metadata_mode="embed") == "Sentence F."
    assert node.get_content(metadata_mode="llm") == "Sentence F."


def test_passages_in_first_extraction_order(core):
    # the hand graph has no passages: a document's text is its extracted sentences
    nodes = KGTraversalRetriever(core).retrieve("east")
    assert [n.node.node_id for n in nodes] == ["A", "Q", "F", "T", "K"]
    assert [n.node.text for n in nodes] == [f"Sentence {d}." for d in "AQFTK"]
    assert nodes[2].node.metadata["kgpath_sentence_ids"] == ["sent:F"]
    assert nodes[2].node.metadata["kgpath_kind"] == "passage"


@pytest.mark.parametrize("k", [1, 3, 5])
def test_similarity_top_k_honoured(core, k):
    nodes = native(core, similarity_top_k=k).retrieve("east")
    assert len(nodes) == k and nodes[-1].node.metadata["kgpath_rank"] == k


def test_top_k_caps_and_the_budget_is_a_config_field(embedder):
    core = TraversalRetriever(hand_graph(), embedder=embedder, config=TraversalConfig(
        max_sentences=2, min_sentences=2, frontier="visited"))
    assert len(native(core).retrieve("east")) == 2
    # similarity_top_k only cuts; the walk's budget is max_sentences (and the relevance
    # rules still apply from min_sentences on: 2 sentences, mean .55 > .45)
    assert len(native(core, similarity_top_k=4).retrieve("east")) == 2
    r = native(core, similarity_top_k=4, max_sentences=4, min_sentences=4)
    assert len(r.retrieve("east")) == 4


@pytest.mark.parametrize("algorithm", ALGORITHMS)
async def test_sync_equals_async(core, embedder, algorithm):
    r = native(core, algorithm=algorithm)
    sync = r.retrieve("east")
    asyn = await r.aretrieve("east")
    assert [(n.node.node_id, n.score, n.node.metadata) for n in sync] == [
        (n.node.node_id, n.score, n.node.metadata) for n in asyn]
    assert embedder.async_calls == 1  # the async path awaits the embedder's async API


def test_per_call_algorithm_shares_the_core(core):
    r = native(core)
    kg = r.retrieve_with("east", algorithm="kg_traversal")
    assert kg[1].node.node_id == "sent:K"
    assert r.retrieve("east")[1].node.node_id == "sent:Q"  # the default is back
    assert set(ALGORITHMS + EXTENSIONS) >= {"kg_traversal", "mention_expansion"}
    with pytest.raises(ConfigError, match="bfs"):
        r.retrieve_with("east", algorithm="bfs")


def test_options_pass_through_and_validate(core):
    r = native(core, max_sentences=2, min_sentences=2)
    assert len(r.retrieve("east")) == 2
    # rules from the start: after A (mean cos .6) the best candidate Q (.5) is less relevant
    r = native(core, min_sentences=0)
    (only,) = r.retrieve("east")
    assert r.result("east").stop_reason.startswith("relevance")
    with pytest.raises(ConfigError, match=r"speed.*accepted"):
        native(core, speed=2)
    with pytest.raises(ConfigError):
        native(core, similarity_top_k=0)
    with pytest.raises(ConfigError, match="astar"):  # built from a graph: at construction
        KGTraversalRetriever.from_graph(hand_graph(), embed_model=QueryTable(),
                                        algorithm="astar")
    with pytest.raises(ConfigError, match="astar"):  # a per-call default on a built core
        native(core, algorithm="astar").retrieve("east")
    with pytest.raises(ConfigError, match="KnowledgeGraph"):
        KGTraversalRetriever(object())


def test_llm_guided_with_scripted_llm_and_prompt_update(embedder):
    llm = ScriptedLLM(['{"choice": 3}', "stop"] * 2)
    r = KGTraversalRetriever.from_graph(hand_graph(), embed_model=embedder, llm=llm,
                                        algorithm="llm_guided_traversal",
                                        output="native", **RULES_OFF)
    nodes = r.retrieve("east")
    # candidates by cos(q,c): Q .50, F .45, T .40, K .00 -> choice 3 = T, then stop
    assert [n.node.node_id for n in nodes] == ["sent:A", "sent:T"]
    assert r.result("east").stop_reason == "llm: stop"
    assert "llm_traversal_prompt" in r.get_prompts()
    r.update_prompts({"llm_traversal_prompt": PromptTemplate(
        "Q={query} n={num_sentences} E={extracted} C={candidates} N={num_candidates}")})
    llm2 = ScriptedLLM(["1", "stop"])
    r.kgpath_retriever.llm = llm2
    assert [n.node.node_id for n in r.retrieve("east")] == ["sent:A", "sent:Q"]
    assert llm2.prompts[0].startswith("Q=east n=1 E=- Sentence A. C=1. [0.500] Doc Q")


def test_llamaindex_llm_is_wrapped(embedder):
    class Picker(MockLLM):
        def complete(self, prompt: str, formatted: bool = False, **kw: Any):  # noqa: ARG002
            from llama_index.core.base.llms.types import CompletionResponse

            return CompletionResponse(text='{"choice": 2}' if "1 sentences" in prompt
                                      else '{"choice": "stop"}')

    r = KGTraversalRetriever.from_graph(hand_graph(), embed_model=embedder, llm=Picker(),
                                        algorithm="llm_guided_traversal",
                                        output="native", **RULES_OFF)
    assert [n.node.node_id for n in r.retrieve("east")] == ["sent:A", "sent:F"]


async def test_inside_retriever_query_engine_with_mock_llm(core):
    engine = RetrieverQueryEngine.from_args(native(core, similarity_top_k=3), llm=MockLLM())
    resp = engine.query("east")
    assert [n.node.node_id for n in resp.source_nodes] == ["sent:A", "sent:Q", "sent:F"]
    aresp = await engine.aquery(QueryBundle("east"))
    assert [n.node.node_id for n in aresp.source_nodes] == ["sent:A", "sent:Q", "sent:F"]


def test_from_documents_builds_the_chunk_graph():
    docs = [
        Document(text="Bees make honey. Honey is sweet. Bees live in hives.", id_="bees",
                 metadata={"title": "Bees"}),
        Document(text="Hives are wooden boxes. Beekeepers open hives in spring.", id_="hives",
                 metadata={"title": "Hives"}),
    ]
    r = KGTraversalRetriever.from_documents(docs, embed_model=HashingEmbedder(64),
                                            similarity_top_k=4)
    nodes = r.retrieve("Where do bees live?")
    assert 1 <= len(nodes) <= 4
    assert {n.node.node_id for n in nodes} <= {"bees", "hives"}  # passages by default
    texts = {"bees": docs[0].text, "hives": docs[1].text}
    assert all(n.node.text == texts[n.node.node_id] for n in nodes)
    assert r.graph.passage("bees").metadata["title"] == "Bees"
    assert nodes[0].node.metadata["title"] in {"Bees", "Hives"}  # the passage's own metadata


def test_mention_expansion_through_the_adapter():
    from llama_index.core.schema import Document as LIDocument

    docs = [
        LIDocument(id_="bees", text="Bees make honey. Honey is sweet.",
                   metadata={"title": "Bees"}),
        LIDocument(id_="hives", text="Hives are boxes. Bees live in hives."),
    ]
    r = KGTraversalRetriever.from_documents(
        docs, embed_model=HashingEmbedder(64), algorithm="mention_expansion", output="native")
    mentions = [(e.source, e.target) for e in r.graph.edges if e.type == "mentions"]
    assert mentions == [("sent:hives:1", "doc:bees")]
    out = r.retrieve("Where do bees live?")
    assert out and r.result("Where do bees live?").algorithm == "mention_expansion"
    assert {n.node.metadata["kgpath_doc_id"] for n in out} == {"bees", "hives"}
