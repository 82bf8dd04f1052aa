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
from langchain_kgpath import KGTraversalRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

from kgpath import ConfigError, HashingEmbedder, KnowledgeGraph, ScriptedLLM
from kgpath.ingest.documents import content_digest, content_id
from kgpath.methods.traversal import (
    ALGORITHMS,
    TraversalConfig,
    TraversalResult,
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
    g.vectors.set(np.asarray(list(VECS.values()) * 2, dtype=np.float32))
    return g


@pytest.fixture
def emb() -> QueryTable:
    return QueryTable()


@pytest.fixture
def core(emb) -> TraversalRetriever:
    return TraversalRetriever(hand_graph(), embedder=emb, config=RULES_OFF)


needs_evidence = pytest.mark.skipif(
    not hasattr(TraversalResult, "evidence"), reason="TraversalResult.evidence is not on main yet"
)
RULES_OFF_KW = {"max_sentences": 20, "min_sentences": 20, "frontier": "visited"}


# ---------------------------------------------------------------------- standard suite
_TEXTS = [
    "Marie Curie studied radioactivity in Paris. She discovered radium with Pierre Curie. "
    "Radium glows in the dark. The Curies shared a Nobel Prize in 1903.",
    "Pitchblende is a uranium ore. It was mined at Joachimsthal in Bohemia. "
    "The Curies extracted radium from tonnes of pitchblende.",
    "Joachimsthal is a mining town. Its silver mines are old. The town gave its name to "
    "the thaler coin.",
]
_STANDARD = KGTraversalRetriever.from_texts(_TEXTS, embedding=HashingEmbedder(128)).core


@needs_evidence
class TestKGTraversalRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return KGTraversalRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"graph": _STANDARD, "algorithm": "triangulation_average"}

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
    r = KGTraversalRetriever(graph=core, algorithm=algorithm)
    res = r.result("east")
    assert [s.id for s in res.sentences][:2] == ["sent:A", f"sent:{second}"]
    assert list(res.path_ids[:2]) == ["chunk:A", f"chunk:{second}"]
    # per-call algorithm override
    assert r.result("east", algorithm="kg_traversal").sentences[1].id == "sent:K"


@needs_evidence
def test_documents_carry_the_trace(core):
    r = KGTraversalRetriever(graph=core)
    # no passage text in this graph: each document is its extracted sentences, joined
    docs = r.invoke("east")
    assert [d.page_content for d in docs] == [f"Sentence {c}." for c in "AQFTK"]
    assert [d.metadata["kgpath_score"] for d in docs] == pytest.approx(
        [0.6, 0.5, 0.45, 0.4, 0.0], abs=1e-6)
    m = docs[3].metadata
    assert (m["kgpath_rank"], m["kgpath_hops"], m["kgpath_doc_id"], m["kgpath_sentence_ids"]) == (
        4, 3, "T", ["sent:T"])
    assert m["kgpath_kind"] == "passage" and m["kgpath_anchor_id"] == "chunk:A"
    native = KGTraversalRetriever(graph=core, output="native").invoke("east")
    n = native[3].metadata
    assert (n["kgpath_kind"], n["kgpath_chunk_id"], n["kgpath_id"]) == (
        "sentence", "chunk:T", "sent:T")
    json.dumps([d.metadata for d in docs])  # plain JSON types only
    assert all(type(d.metadata["kgpath_score"]) is float for d in docs)


def test_native_result_carries_the_walk(core):
    res = KGTraversalRetriever(graph=core).result("east")
    assert list(res.path_ids) == [f"chunk:{c}" for c in "AQFTK"]
    assert [s.hop for s in res.sentences] == [0, 1, 2, 3, 4]
    assert res.stop_reason.startswith("dead end") and res.anchor_id == "chunk:A"


async def test_sync_equals_async_result(core, emb):
    r = KGTraversalRetriever(graph=core, k=3)
    for algorithm in ALGORITHMS:
        s = r.result("east", algorithm=algorithm)
        a = await r.aresult("east", algorithm=algorithm)
        assert [x.id for x in s.sentences] == [x.id for x in a.sentences]
    assert emb.async_calls == len(ALGORITHMS)


@needs_evidence
async def test_sync_equals_async(core):
    r = KGTraversalRetriever(graph=core, k=3)
    for algorithm in ALGORITHMS:
        s = r.invoke("east", algorithm=algorithm)
        a = await r.ainvoke("east", algorithm=algorithm)
        assert [(d.id, d.metadata) for d in s] == [(d.id, d.metadata) for d in a]


@needs_evidence
def test_k_cuts_the_documents(core):
    r = KGTraversalRetriever(graph=core, k=2)
    assert [d.id for d in r.invoke("east")] == ["A", "Q"]
    assert len(r.invoke("east", k=4)) == 4


def test_options(core):
    r = KGTraversalRetriever(graph=core, k=2)
    small = TraversalRetriever(hand_graph(), embedder=QueryTable(), config=TraversalConfig(
        max_sentences=2, min_sentences=2, frontier="visited"))
    r2 = KGTraversalRetriever(graph=small)
    # a larger budget with min_sentences=5 keeps the relevance rules off
    assert len(r2.result("east", max_sentences=5, min_sentences=5).sentences) == 5
    assert len(r2.result("east", max_sentences=5, min_sentences=0).sentences) == 1  # .5 < .6
    with pytest.raises(ConfigError, match=r"\['warp'\].*accepted:.*'algorithm'"):
        r.invoke("east", warp=1)
    with pytest.raises(ConfigError, match="dijkstra"):
        r.invoke("east", algorithm="dijkstra")
    with pytest.raises(ConfigError):
        KGTraversalRetriever(graph=core, k=0)
    with pytest.raises(ConfigError):
        KGTraversalRetriever(graph=core, k=True)
    with pytest.raises(ConfigError, match="astar"):
        KGTraversalRetriever(graph=core, algorithm="astar")
    with pytest.raises(ConfigError, match=r"\['max_hops'\]"):
        KGTraversalRetriever(graph=core, max_hops=3)  # a built retriever has its config
    with pytest.raises(ConfigError, match="astar"):
        KGTraversalRetriever(graph=hand_graph(), embedding=QueryTable(), algorithm="astar")


def test_llm_guided_with_kgpath_and_langchain_llms(emb):
    g = hand_graph()
    r = KGTraversalRetriever.from_graph(g, embedding=emb, llm=ScriptedLLM(["2", "stop"]),
                                        algorithm="llm_guided_traversal", **RULES_OFF_KW)
    # candidates Q .50, F .45, T .40, K .00 -> 2 = F
    assert [s.id for s in r.result("east").sentences] == ["sent:A", "sent:F"]
    lc = KGTraversalRetriever.from_graph(g, embedding=emb, **RULES_OFF_KW,
                                         llm=FakeListLLM(responses=['{"choice": 4}', "stop"]),
                                         algorithm="llm_guided_traversal")
    res = lc.result("east")
    assert [s.id for s in res.sentences] == ["sent:A", "sent:K"]
    assert res.stop_reason == "llm: stop"


HIVES = content_id(content_digest("", ["Hives are boxes.", "Bees live in hives."], {}))


def test_from_documents_uses_ids_and_titles():
    docs = [
        Document(id="bees", page_content="Bees make honey. Honey is sweet.",
                 metadata={"title": "Bees"}),
        Document(page_content="Hives are boxes. Bees live in hives."),
    ]
    r = KGTraversalRetriever.from_documents(docs, embedding=HashingEmbedder(64), k=3)
    g = r.core.graph
    assert set(g.passages) == {"bees", HIVES}  # the given id, else the content's hash
    assert g.passage("bees").metadata["title"] == "Bees"
    out = r.result("Where do bees live?").sentences
    assert 1 <= len(out) and {s.doc_id for s in out} <= {"bees", HIVES}
    # the kgpath extension links "Bees live in hives." to the document titled "Bees"
    assert [(e.source, e.target) for e in g.edges if e.type == "mentions"] == [
        (f"sent:{HIVES}:1", "doc:bees")]
    linked = r.result("Where do bees live?", algorithm="mention_expansion")
    assert {s.doc_id for s in linked.sentences} == {"bees", HIVES}
    assert linked.algorithm == "mention_expansion"


@needs_evidence
def test_from_documents_returns_the_documents():
    docs = [Document(id="bees", page_content="Bees make honey. Honey is sweet.",
                     metadata={"title": "Bees"}),
            Document(page_content="Hives are boxes. Bees live in hives.")]
    r = KGTraversalRetriever.from_documents(docs, embedding=HashingEmbedder(64))
    out = r.invoke("Where do bees live?")
    assert out and {d.id for d in out} <= {"bees", HIVES}
    assert all(d.page_content == r.core.graph.passage(d.id).text for d in out)
    assert {d.metadata["kgpath_kind"] for d in out} == {"passage"}
