"""LangChain adapter of the seven chunk-graph traversals: standard suite + hand-computed paths.

Hand graph (3-D unit vectors, query "east" = (1, 0, 0)); each chunk holds one sentence
with the chunk's vector:

    A = (0.6, 0.8, 0)      anchor (cos 0.60), neighbours K, Q, T, F
    K = (0, 1, 0)          cos(q,K) 0.00, cos(A,K) 0.80  -> kg_traversal's next chunk
    Q = (0.5, 0, .866)     cos(q,Q) 0.50, cos(A,Q) 0.30  -> query_traversal's
    T = (0.4, 0.6, .693)   cos(q,T) 0.40, cos(A,T) 0.72  -> triangulation_average's
    F = (0.45, -0.6, .661) cos(q,F) 0.45, cos(A,F) -0.21 -> triangulation_fulldim's

With ``frontier="visited"`` and the relevance rules off, query_traversal reads A, Q, F, T, K.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.retrievers import BaseRetriever
from langchain_kgpath.traversal import KGTraversalRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

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
RULES_OFF = TraversalConfig(max_sentences=20, min_sentences=20, frontier="visited")


class QueryTable:
    dim = 3

    def __init__(self) -> None:
        self.async_calls = 0

    def embed_queries(self, texts):
        return np.tile(np.asarray([1.0, 0.0, 0.0], dtype=np.float32), (len(texts), 1))

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
                   metadata={"doc_id": n}, provenance=(n,))
    for n in VECS:
        g.add_node(f"sent:{n}", name=f"Doc {n}", text=f"Sentence {n}.", type="sentence",
                   metadata={"doc_id": n}, provenance=(n,))
        g.add_edge(f"chunk:{n}", f"sent:{n}", "has_sentence")
    for n in "KQTF":
        g.add_edge("chunk:A", f"chunk:{n}", "similar_inter", type="similarity")
    g.set_embeddings(np.asarray(list(VECS.values()) * 2, dtype=np.float32))
    return g


@pytest.fixture
def emb() -> QueryTable:
    return QueryTable()


@pytest.fixture
def core(emb) -> TraversalRetriever:
    return TraversalRetriever(hand_graph(), embedder=emb, config=RULES_OFF)


# ---------------------------------------------------------------------- standard suite
_TEXTS = [
    "Marie Curie studied radioactivity in Paris. She discovered radium with Pierre Curie. "
    "Radium glows in the dark. The Curies shared a Nobel Prize in 1903.",
    "Pitchblende is a uranium ore. It was mined at Joachimsthal in Bohemia. "
    "The Curies extracted radium from tonnes of pitchblende.",
    "Joachimsthal is a mining town. Its silver mines are old. The town gave its name to "
    "the thaler coin.",
]
_STANDARD = KGTraversalRetriever.from_texts(_TEXTS, embedding=HashingEmbedder(128)).traversal


class TestKGTraversalRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return KGTraversalRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"traversal": _STANDARD, "algorithm": "triangulation_average"}

    @property
    def retriever_query_example(self) -> str:
        return "Where was the ore for radium mined?"


# ---------------------------------------------------------------------- hand-computed
@pytest.mark.parametrize(
    ("algorithm", "second"),
    [("query_traversal", "Q"), ("kg_traversal", "K"), ("triangulation_average", "T"),
     ("triangulation_fulldim", "F"), ("triangulation_geometric_3d", "F")],
)
def test_algorithms_by_name(core, algorithm, second):
    r = KGTraversalRetriever(traversal=core, algorithm=algorithm)
    docs = r.invoke("east")
    assert [d.id for d in docs][:2] == ["sent:A", f"sent:{second}"]
    assert docs[1].metadata["path_to_sentence"] == ["chunk:A", f"chunk:{second}"]
    # per-call algorithm override
    assert r.invoke("east", algorithm="kg_traversal")[1].id == "sent:K"


def test_documents_carry_the_trace(core):
    docs = KGTraversalRetriever(traversal=core).invoke("east")
    assert [d.page_content for d in docs] == [f"Sentence {c}." for c in "AQFTK"]
    assert [d.metadata["score"] for d in docs] == pytest.approx([0.6, 0.5, 0.45, 0.4, 0.0],
                                                                abs=1e-6)
    m = docs[3].metadata
    assert m["rank"] == 4 and m["hop"] == 3 and m["doc_id"] == "T" and m["title"] == "Doc T"
    assert m["traversal_path"] == [f"chunk:{c}" for c in "AQFTK"]
    assert m["path_to_sentence"] == [f"chunk:{c}" for c in "AQFT"]
    assert m["stop_reason"].startswith("dead end") and m["anchor_id"] == "chunk:A"
    json.dumps([d.metadata for d in docs])  # plain JSON types only
    assert all(type(d.metadata["score"]) is float for d in docs)


async def test_sync_equals_async(core, emb):
    r = KGTraversalRetriever(traversal=core, k=3)
    for algorithm in ALGORITHMS:
        s = r.invoke("east", algorithm=algorithm)
        a = await r.ainvoke("east", algorithm=algorithm)
        assert [(d.id, d.metadata) for d in s] == [(d.id, d.metadata) for d in a]
    assert emb.async_calls == len(ALGORITHMS)


def test_k_and_options(core):
    r = KGTraversalRetriever(traversal=core, k=2)
    assert [d.id for d in r.invoke("east")] == ["sent:A", "sent:Q"]
    assert len(r.invoke("east", k=4)) == 4
    small = TraversalRetriever(hand_graph(), embedder=QueryTable(), config=TraversalConfig(
        max_sentences=2, min_sentences=2, frontier="visited"))
    # k above the budget raises it; min_sentences=5 keeps the relevance rules off
    r2 = KGTraversalRetriever(traversal=small, k=5, search_kwargs={"min_sentences": 5})
    assert len(r2.invoke("east")) == 5
    assert len(r2.invoke("east", min_sentences=0)) == 1  # rules on: .5 < mean .6 -> stop
    with pytest.raises(ConfigError, match="warp"):
        r.invoke("east", warp=1)
    with pytest.raises(ConfigError, match="dijkstra"):
        r.invoke("east", algorithm="dijkstra")
    with pytest.raises(ConfigError):
        KGTraversalRetriever(traversal=core, k=0)
    with pytest.raises(ConfigError):
        KGTraversalRetriever(traversal=core, k=True)
    with pytest.raises(ConfigError, match="astar"):
        KGTraversalRetriever(traversal=core, algorithm="astar")
    with pytest.raises(ConfigError, match="search_kwargs"):
        KGTraversalRetriever(traversal=core, search_kwargs={"k": 3})


def test_llm_guided_with_kgpath_and_langchain_llms(emb):
    g = hand_graph()
    r = KGTraversalRetriever.from_graph(g, embedding=emb, llm=ScriptedLLM(["2", "stop"]),
                                        config=RULES_OFF, algorithm="llm_guided_traversal")
    # candidates Q .50, F .45, T .40, K .00 -> 2 = F
    assert [d.id for d in r.invoke("east")] == ["sent:A", "sent:F"]
    lc = KGTraversalRetriever.from_graph(g, embedding=emb, config=RULES_OFF,
                                         llm=FakeListLLM(responses=['{"choice": 4}', "stop"]),
                                         algorithm="llm_guided_traversal")
    docs = lc.invoke("east")
    assert [d.id for d in docs] == ["sent:A", "sent:K"]
    assert docs[0].metadata["stop_reason"] == "llm: stop"


def test_from_documents_uses_ids_and_titles():
    docs = [
        Document(id="bees", page_content="Bees make honey. Honey is sweet.",
                 metadata={"title": "Bees"}),
        Document(page_content="Hives are boxes. Bees live in hives."),
    ]
    r = KGTraversalRetriever.from_documents(docs, embedding=HashingEmbedder(64), k=3)
    assert set(r.graph.passages) == {"bees", "doc-1"}
    assert r.graph.passage("bees").metadata["title"] == "Bees"
    out = r.invoke("Where do bees live?")
    assert 1 <= len(out) <= 3 and {d.metadata["doc_id"] for d in out} <= {"bees", "doc-1"}
    assert r.algorithms == ALGORITHMS + EXTENSIONS
    # the kgpath extension links "Bees live in hives." to the document titled "Bees"
    assert [(e.source, e.target) for e in r.graph.edges if e.type == "mentions"] == [
        ("sent:doc-1:1", "doc:bees")]
    linked = r.invoke("Where do bees live?", algorithm="mention_expansion")
    assert {d.metadata["doc_id"] for d in linked} == {"bees", "doc-1"}
    assert all(d.metadata["algorithm"] == "mention_expansion" for d in linked)
