"""TraversalResult.evidence: the evidence contract of the semantic-graph traversals.

Hand-computed truth. The end-to-end graph uses a keyword embedder whose vectors are word
counts over ("cat", "dog", "fish"), so every cosine to the query "cat" = (1, 0, 0) is
``count(cat) / ||counts||``:

=======================  =========  =============
text                     counts     cos(q, text)
=======================  =========  =============
The cat sleeps.          (1, 0, 0)  1
The cat eats fish.       (1, 0, 1)  1/sqrt(2)
A dog barks.             (0, 1, 0)  0
A dog likes the cat.     (1, 1, 0)  1/sqrt(2)
chunk Felines:0 (both)   (2, 0, 1)  2/sqrt(5)
chunk Pets:0 (both)      (1, 2, 0)  1/sqrt(5)
=======================  =========  =============

Each document is one chunk (window 2 >= 2 sentences). The anchor is Felines' chunk
(2/sqrt(5) > 1/sqrt(5)); query_traversal then hops to its only neighbour, Pets' chunk
(the relevance stop waits for min_sentences = 10), and the walk ends there (dead end).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from kgpath import ConfigError
from kgpath.embeddings import BaseEmbedder
from kgpath.graph import KnowledgeGraph
from kgpath.ingest.chunk_graph import ChunkGraphConfig, build_chunk_graph
from kgpath.methods.traversal import (
    TraversalConfig,
    TraversalResult,
    TraversalRetriever,
    TraversedSentence,
    query_traversal,
)

R2 = 1 / math.sqrt(2)


class _Keywords(BaseEmbedder):
    """Counts of the words cat, dog, fish (unit-normalised by the base class)."""

    show_progress = False
    _dim = 3
    VOCAB = ("cat", "dog", "fish")

    def _embed(self, texts, kind):
        out = np.zeros((len(texts), 3), np.float32)
        for i, t in enumerate(texts):
            words = re.findall(r"[a-z]+", t.lower())
            out[i] = [words.count(w) for w in self.VOCAB]
            if not out[i].any():
                raise AssertionError(f"test text without a keyword: {t!r}")
        return out


DOCS = {
    "Felines": ["The cat sleeps.", "The cat eats fish."],
    "Pets": ["A dog barks.", "A dog likes the cat."],
}
CFG = ChunkGraphConfig(window=2, title_prefix=False, theme_nodes=False, mention_edges=False)


@pytest.fixture
def graph() -> KnowledgeGraph:
    return build_chunk_graph(DOCS, embedder=_Keywords(), config=CFG)


def test_keyword_embedder_gives_the_table(graph):
    q = np.array([1.0, 0.0, 0.0], np.float32)
    emb = graph.vectors.matrix
    cos = {n.id: float(emb[i] @ q) for i, n in enumerate(graph.nodes)}
    assert cos["chunk:Felines:0"] == pytest.approx(2 / math.sqrt(5), rel=1e-6)
    assert cos["chunk:Pets:0"] == pytest.approx(1 / math.sqrt(5), rel=1e-6)
    assert cos["sent:Pets:1"] == pytest.approx(R2, rel=1e-6)


def test_retriever_sets_graph_and_passages_follow_first_extraction(graph):
    r = TraversalRetriever(graph, embedder=_Keywords()).retrieve("cat")
    assert r.graph is graph
    assert [s.id for s in r.sentences] == [
        "sent:Felines:0", "sent:Felines:1", "sent:Pets:0", "sent:Pets:1"]
    ev = r.evidence()
    assert [(e.id, e.kind, e.method, e.rank) for e in ev] == [
        ("Felines", "passage", "traversal", 1), ("Pets", "passage", "traversal", 2)]
    felines, pets = ev
    assert felines.text == "The cat sleeps. The cat eats fish."
    assert pets.text == "A dog barks. A dog likes the cat."
    assert felines.score == pytest.approx(1.0, rel=1e-6)  # max(1, 1/sqrt 2)
    assert pets.score == pytest.approx(R2, rel=1e-6)  # max(0, 1/sqrt 2)
    assert dict(felines.trace) == {
        "sentence_ids": ["sent:Felines:0", "sent:Felines:1"],
        "anchor_id": "chunk:Felines:0", "hops": 0, "doc_id": "Felines"}
    assert dict(pets.trace) == {
        "sentence_ids": ["sent:Pets:0", "sent:Pets:1"],
        "anchor_id": "chunk:Felines:0", "hops": 1, "doc_id": "Pets"}
    assert dict(pets.source_metadata) == {"title": "Pets"}


def test_passage_text_is_the_source_not_the_extracted_sentences(graph):
    # budget 3: the hop to Pets extracts only "A dog barks." (cos 0)
    retr = TraversalRetriever(graph, embedder=_Keywords())
    r = retr.retrieve("cat", max_sentences=3, min_sentences=3)
    assert [s.id for s in r.sentences] == ["sent:Felines:0", "sent:Felines:1", "sent:Pets:0"]
    pets = r.evidence()[1]
    assert pets.text == "A dog barks. A dog likes the cat."
    assert pets.score == pytest.approx(0.0, abs=1e-6)
    assert pets.trace["sentence_ids"] == ["sent:Pets:0"]


def test_native_is_one_sentence_per_extraction(graph):
    r = TraversalRetriever(graph, embedder=_Keywords()).retrieve("cat")
    ev = r.evidence(output="native")
    assert [(e.id, e.kind, e.rank) for e in ev] == [
        ("sent:Felines:0", "sentence", 1), ("sent:Felines:1", "sentence", 2),
        ("sent:Pets:0", "sentence", 3), ("sent:Pets:1", "sentence", 4)]
    assert [e.text for e in ev] == [t for d in DOCS.values() for t in d]
    assert [e.score for e in ev] == pytest.approx([1.0, R2, 0.0, R2], abs=1e-6)
    assert [e.trace["hops"] for e in ev] == [0, 0, 1, 1]
    assert dict(ev[3].trace) == {
        "doc_id": "Pets", "chunk_id": "chunk:Pets:0", "hops": 1,
        "query_similarity": pytest.approx(R2, abs=1e-6), "anchor_id": "chunk:Felines:0"}
    assert ev[3].trace["query_similarity"] == ev[3].score
    assert dict(ev[0].source_metadata) == {"title": "Felines"}


def test_k_cuts_both_outputs(graph):
    r = TraversalRetriever(graph, embedder=_Keywords()).retrieve("cat")
    assert [e.id for e in r.evidence(k=1)] == ["Felines"]
    assert [e.id for e in r.evidence("native", k=2)] == ["sent:Felines:0", "sent:Felines:1"]
    assert len(r.evidence(k=10)) == 2
    with pytest.raises(ConfigError, match="k must be"):
        r.evidence(k=0)
    with pytest.raises(ConfigError, match="output must be"):
        r.evidence(output="nodes")


async def test_async_and_direct_walk_carry_the_graph(graph):
    retr = TraversalRetriever(graph, embedder=_Keywords())
    a = await retr.aretrieve("cat")
    assert a.graph is graph and a.evidence() == retr.retrieve("cat").evidence()
    direct = query_traversal(graph, np.array([1.0, 0.0, 0.0], np.float32), query="cat")
    assert direct.graph is graph
    assert [e.id for e in direct.evidence()] == ["Felines", "Pets"]


def test_mention_expansion_result_has_evidence():
    # no sentence names the other title, so no mention link: documents by cos(q, doc),
    # Felines 2/sqrt(5) then Pets 1/sqrt(5), each with all (<= 3) of its sentences
    g = build_chunk_graph(
        DOCS, embedder=_Keywords(),
        config=ChunkGraphConfig(window=2, title_prefix=False, theme_nodes=False))
    r = TraversalRetriever(g, embedder=_Keywords(), algorithm="mention_expansion").retrieve("cat")
    assert r.graph is g
    ev = r.evidence()
    assert [(e.id, e.text) for e in ev] == [
        ("Felines", "The cat sleeps. The cat eats fish."),
        ("Pets", "A dog barks. A dog likes the cat.")]
    assert [e.score for e in ev] == pytest.approx([1.0, R2], abs=1e-6)
    assert [e.trace["hops"] for e in ev] == [0, 1]  # hop = the document's rank


def _hand_result(graph: KnowledgeGraph | None) -> TraversalResult:
    sents = (
        TraversedSentence("s1", "Alpha one.", "A", "cA", 0, 0.5),
        TraversedSentence("s2", "Gamma one.", "C", "cC", 1, 0.9),
        TraversedSentence("s3", "Alpha two.", "A", "cA2", 2, 0.7),
        TraversedSentence("s4", "Gamma two.", "C", "cC", 2, 0.2),
    )
    return TraversalResult("q", "query_traversal", "cA", sents, (), "max_hops",
                           TraversalConfig(), graph=graph)


def test_document_missing_from_passages_falls_back_to_its_sentences():
    g = KnowledgeGraph()
    g.add_passage("A", "Alpha one. Alpha middle. Alpha two.", {"src": "wiki"})
    ev = _hand_result(g).evidence()
    assert [(e.id, e.kind, e.text) for e in ev] == [
        ("A", "passage", "Alpha one. Alpha middle. Alpha two."),
        ("C", "passage", "Gamma one. Gamma two."),  # not a passage: joined sentences
    ]
    assert [e.score for e in ev] == [0.7, 0.9]  # best cos(q, s) per document
    assert [e.trace["hops"] for e in ev] == [0, 1]  # hop of the first sentence
    assert [e.trace["sentence_ids"] for e in ev] == [["s1", "s3"], ["s2", "s4"]]
    assert dict(ev[0].source_metadata) == {"src": "wiki"} and dict(ev[1].source_metadata) == {}
    meta = ev[0].metadata()
    assert meta == {
        "src": "wiki", "kgpath_method": "traversal", "kgpath_kind": "passage",
        "kgpath_id": "A", "kgpath_rank": 1, "kgpath_score": 0.7,
        "kgpath_sentence_ids": ["s1", "s3"], "kgpath_anchor_id": "cA", "kgpath_hops": 0,
        "kgpath_doc_id": "A"}


def test_without_graph_every_document_uses_its_sentences():
    r = _hand_result(None)
    assert [(e.id, e.text) for e in r.evidence()] == [
        ("A", "Alpha one. Alpha two."), ("C", "Gamma one. Gamma two.")]
    assert [e.id for e in r.evidence("native")] == ["s1", "s2", "s3", "s4"]


def test_empty_result_has_no_evidence():
    r = TraversalResult("q", "query_traversal", "cA", (), (), "max_hops", TraversalConfig())
    assert r.evidence() == [] and r.evidence("native") == []


def test_graph_field_is_not_compared_or_printed(graph):
    a, b = _hand_result(graph), _hand_result(None)
    assert a == b and "graph=" not in repr(a)
