"""Issue 14, per-question latency: what a retrieval embeds once the index is built (no timing
asserts; ``benchmarks/bench_query_latency.py`` measures the milliseconds)."""

from __future__ import annotations

import asyncio

import numpy as np

from kgpath import HashingEmbedder, KnowledgeGraph
from kgpath.index import GraphIndex
from kgpath.methods.c2rag import ConstraintCheckedRetriever
from kgpath.methods.c2rag import fallback as c2rag_fallback
from kgpath.methods.pathrag import PathRAGRetriever
from kgpath.rerank import EmbeddingReranker


class Counting(HashingEmbedder):
    """Records every embedder call as ``(kind, texts)``."""

    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim)
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def _embed(self, texts, kind):
        self.calls.append((kind, tuple(texts)))
        return super()._embed(texts, kind)


PASSAGES = {
    "p1": "Ada Lovelace was born in London. She wrote about the Analytical Engine.",
    "p2": "London is the capital of England, on the river Thames.",
    "p3": "Charles Babbage designed the Analytical Engine in London.",
}
TRIPLES = [
    ("Ada Lovelace", "born in", "London"),
    ("London", "capital of", "England"),
    ("Charles Babbage", "designed", "Analytical Engine"),
    ("Ada Lovelace", "wrote about", "Analytical Engine"),
]
PROV = [["p1"], ["p2"], ["p3"], ["p1"]]
QUESTIONS = ["Where was Ada Lovelace born?", "What did Charles Babbage design?",
             "What is London the capital of?"]


def graph() -> KnowledgeGraph:
    return KnowledgeGraph.from_triples(TRIPLES, PASSAGES, provenance=PROV)


def summary(res):
    return ([(h.state, [(c.text, c.z) for c in h.initial],
              [(p.id, p.score) for p in (h.recovery.kept if h.recovery else ())])
             for h in res.hops], [e.id for e in res.evidence()])


def test_c2rag_default_scores_equal_the_reranker_and_never_re_embed_passages():
    emb = Counting()
    fast = ConstraintCheckedRetriever(GraphIndex(graph(), emb))
    plain = ConstraintCheckedRetriever(graph(), embedder=emb)
    plain._memo_scorer = None  # the EmbeddingReranker itself, as before issue 14
    assert type(plain.reranker) is EmbeddingReranker
    for q in QUESTIONS:
        assert summary(fast.retrieve(q)) == summary(plain.retrieve(q))
    emb.calls.clear()
    for q in QUESTIONS:  # warm: passages and triple texts are all embedded already
        fast.retrieve(q)
    assert [c for c in emb.calls if c[0] == "passage"] == []
    assert not any(t in PASSAGES.values() for _, ts in emb.calls for t in ts)


def test_c2rag_each_text_embedded_at_most_once_per_retrieval():
    emb = Counting()
    r = ConstraintCheckedRetriever(GraphIndex(graph(), emb))
    r.retrieve(QUESTIONS[0])  # builds the shared passage vectors
    emb.calls.clear()
    r2 = ConstraintCheckedRetriever(GraphIndex(r.graph, emb))  # a fresh retriever, same pair
    r2.retrieve(QUESTIONS[1])
    texts = [(k, t) for k, ts in emb.calls for t in ts]
    assert len(texts) == len(set(texts))
    assert not any(t in PASSAGES.values() for _, t in texts)  # passage vectors are shared


def test_c2rag_async_matches_sync_with_the_memo():
    emb = Counting()
    r = ConstraintCheckedRetriever(GraphIndex(graph(), emb))
    want = [summary(r.retrieve(q)) for q in QUESTIONS]
    r2 = ConstraintCheckedRetriever(GraphIndex(graph(), emb))
    got = [summary(asyncio.run(r2.aretrieve(q))) for q in QUESTIONS]
    assert got == want


def test_fallback_name_index_is_built_once_per_graph_version(monkeypatch):
    g = graph()
    seen: list[str] = []
    real = c2rag_fallback._name_key
    monkeypatch.setattr(c2rag_fallback, "_name_key", lambda t: seen.append(t) or real(t))
    assert c2rag_fallback.find_entity_mentions("Was Ada Lovelace in London?", g) == [
        ("Ada Lovelace", g.index_of("Ada Lovelace")), ("London", g.index_of("London"))]
    assert len(seen) == len(g)
    c2rag_fallback.find_entity_mentions("Where is London?", g)
    assert len(seen) == len(g)  # cached
    g.add_node("Thames", text="a river")
    assert c2rag_fallback.find_entity_mentions("the Thames", g) == [
        ("Thames", g.index_of("Thames"))]
    assert len(seen) == 2 * len(g) - 1  # rebuilt once after the edit


def test_pathrag_one_embedding_call_per_question():
    emb = Counting()
    r = PathRAGRetriever(GraphIndex(graph(), emb))
    r.retrieve(QUESTIONS[0])
    emb.calls.clear()
    for q in QUESTIONS:
        r.retrieve(q)
    assert len(emb.calls) == len(QUESTIONS) and {k for k, _ in emb.calls} == {"query"}


def test_pathrag_relation_degrees_by_hand():
    from kgpath.methods.pathrag.retriever import _edge_degree

    g = graph()
    # degrees (in + out): Ada 2, London 2, England 1, Babbage 1, Engine 2
    assert _edge_degree(g).tolist() == [4, 3, 3, 4]
    assert np.asarray(_edge_degree(g)).dtype == np.int64
