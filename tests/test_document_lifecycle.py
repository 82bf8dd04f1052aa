"""The document lifecycle of GraphIndex: identity, add / upsert / delete, rebuild equality.

The property test drives random add / upsert / delete sequences against a plain list of
documents (the model) and checks after every step that the index equals
``GraphIndex.from_documents(model)``: nodes (ids, names, texts, types, provenance, order),
edges, passages, node and passage vectors and retrieval results. The scripted extractor is
deterministic and exercises every merge rule the spaCy and LLM extractors go through: name
keys across documents (``PARIS`` / ``Paris``), short forms within one document (``Curie``
for ``Marie Curie``), type votes across documents, and first-mention node texts.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgpath import GraphIndex, HashingEmbedder
from kgpath.errors import ConfigError, DocumentError, GraphError
from kgpath.facade import EvidenceRetriever
from kgpath.ingest import ChunkingConfig
from kgpath.ingest.extraction import ExtractedEntity, ExtractedRelation, Extraction, OpenExtractor

SENTENCES = [
    "Marie Curie met Pierre Curie in Paris.",
    "Curie worked in Warsaw.",
    "PARIS is large.",
    "Pierre Curie taught Einstein.",
    "Einstein visited Warsaw and Paris.",
    "Bohr met Einstein.",
    "Niels Bohr lived in Copenhagen.",
    "The Bohr family liked Paris.",
]
# tiny corpora: PathRAG warns that its num_nodes covers the graph (true, and harmless here)
pytestmark = pytest.mark.filterwarnings("ignore:PathRAG num_nodes:UserWarning")
METHODS = ("pcr", "pathrag", "augmented", "c2rag")  # nodes, paths, chains, recovery
CHUNKING = ChunkingConfig(max_chars=50)  # two sentences or more: several passages


class Scripted(OpenExtractor):
    """Runs of capitalised words are entities; consecutive ones are related.

    A type depends on the name and the passage, so types are decided by votes across
    passages; every passage read is counted in :attr:`calls`.
    """

    name = "scripted"

    def __init__(self, fail: tuple[str, ...] = ()) -> None:
        self.calls: list[str] = []
        self.fail = set(fail)

    def extract_passage(self, passage_id: str, text: str) -> Extraction:
        self.calls.append(text)
        if any(word in text for word in self.fail):
            return Extraction(passage_id, notes=("scripted failure",), failed=True)
        ents, rels = [], []
        for sentence in re.split(r"(?<=\.) ", text):
            names = re.findall(r"[A-Z][A-Za-z]*(?: [A-Z][A-Za-z]*)*", sentence)
            for n in names:
                kind = ("Person", "Place", "Concept")[(len(n) + len(sentence)) % 3]
                ents.append(ExtractedEntity(n, kind, sentence))
            for a, b in zip(names, names[1:]):
                rels.append(ExtractedRelation(a, "then", b, "svo", sentence))
        return Extraction(passage_id, tuple(ents), tuple(rels))


def build(docs: list[tuple[str, str]], emb: Any, **kw: Any) -> GraphIndex:
    return GraphIndex.from_documents(docs, embedder=emb, extractor=Scripted(),
                                     chunking=CHUNKING, **kw)


def assert_same_index(index: GraphIndex, docs: list[tuple[str, str]], emb: Any) -> None:
    """``index`` equals a build from scratch on ``docs``: records, vectors, retrieval."""
    ref = build(docs, emb, node_vectors=index.node_vectors)
    g, r = index.graph, ref.graph
    assert list(g.nodes) == list(r.nodes)
    assert list(g.edges) == list(r.edges)
    assert list(g.passages.items()) == list(r.passages.items())
    if not len(r):
        assert len(g) == 0
        return
    np.testing.assert_allclose(index.vector_index.vectors, ref.vector_index.vectors,
                               rtol=0, atol=1e-6)
    pv, rv = index.passage_vectors(), ref.passage_vectors()
    assert pv is not None and rv is not None and pv.ids == rv.ids
    np.testing.assert_allclose(pv.matrix, rv.matrix, rtol=0, atol=1e-6)
    for method in METHODS:
        for query in ("Where did Curie work?", "Who met Einstein in Paris?"):
            got = [(e.id, round(e.score, 5)) for e in
                   EvidenceRetriever(method, index, k=5).retrieve(query)]
            want = [(e.id, round(e.score, 5)) for e in
                    EvidenceRetriever(method, ref, k=5).retrieve(query)]
            assert got == want, method


def apply(model: list[tuple[str, str]], index: GraphIndex, op: tuple[Any, ...]) -> None:
    """Apply ``op`` to the model (a list of documents in index order) and to the index."""
    kind, doc_id = op[0], op[1]
    known = dict(model)
    if kind == "delete":
        if doc_id not in known:
            with pytest.raises(DocumentError, match=repr(doc_id)):
                index.delete_documents([doc_id])
            return
        index.delete_documents([doc_id])
        model[:] = [d for d in model if d[0] != doc_id]
        return
    text = op[2]
    if kind == "add" and doc_id in known and known[doc_id] != text:
        with pytest.raises(DocumentError, match=repr(doc_id)):
            index.add_documents([(doc_id, text)])
        return
    getattr(index, f"{kind}_documents")([(doc_id, text)])
    if doc_id in known:
        model[:] = [(d, text if d == doc_id else t) for d, t in model]
    else:
        model.append((doc_id, text))


TEXTS = st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=3).map(" ".join)
IDS = st.sampled_from(["a", "b", "c", "d"])
OPS = st.one_of(
    st.tuples(st.just("add"), IDS, TEXTS),
    st.tuples(st.just("upsert"), IDS, TEXTS),
    st.tuples(st.just("delete"), IDS),
)


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(start=st.lists(st.tuples(IDS, TEXTS), min_size=1, max_size=3,
                      unique_by=lambda d: d[0]),
       ops=st.lists(OPS, min_size=1, max_size=6))
def test_any_sequence_of_updates_equals_a_rebuild(start: list[tuple[str, str]],
                                                  ops: list[tuple[Any, ...]]) -> None:
    emb = HashingEmbedder(32)
    index = build(start, emb)
    model = list(start)
    for op in ops:
        apply(model, index, op)
        assert_same_index(index, model, emb)


def test_text_node_vectors_follow_the_same_rule() -> None:
    emb = HashingEmbedder(32)
    docs = [("a", SENTENCES[0] + " " + SENTENCES[1]), ("b", SENTENCES[3])]
    index = build(docs, emb, node_vectors="text")
    index.upsert_documents([("a", SENTENCES[4])])
    index.delete_documents(["b"])
    assert_same_index(index, [("a", SENTENCES[4])], emb)


# ---------------------------------------------------------------------- identity
def test_documents_without_ids_are_named_by_content_not_position() -> None:
    emb = HashingEmbedder(16)
    index = GraphIndex.from_documents(["Marie Curie was born in Warsaw."], embedder=emb,
                                      extractor=Scripted())
    index.add_documents(["Albert Einstein was born in Ulm."])
    texts = sorted(p.text for p in index.graph.passages.values())
    assert texts == ["Albert Einstein was born in Ulm.", "Marie Curie was born in Warsaw."]
    assert index.graph.node("Marie Curie").provenance != index.graph.node("Albert Einstein") \
        .provenance
    again = index.add_documents(["Albert Einstein was born in Ulm."])  # same content: no-op
    assert (again.documents_unchanged, again.passages_extracted) == (1, 0)


def test_framework_ids_and_an_id_key_are_kept() -> None:
    from types import SimpleNamespace

    lc = SimpleNamespace(page_content="Bohr met Einstein.", id=None,
                         metadata={"source": "bohr.txt"})
    li = SimpleNamespace(get_content=lambda: "Niels Bohr lived in Copenhagen.",
                         node_id="li-7", metadata={})
    index = GraphIndex.from_documents([lc, li], embedder=HashingEmbedder(16),
                                      extractor=Scripted(), id_key="source")
    assert list(index.ledger.documents) == ["bohr.txt", "li-7"]
    index.delete_documents(["bohr.txt"])
    assert list(index.graph.passages) == ["li-7"]


def test_a_known_id_with_other_content_is_refused_and_nothing_changes() -> None:
    index = build([("a", SENTENCES[0])], HashingEmbedder(16))
    before = list(index.graph.nodes)
    with pytest.raises(DocumentError, match="'a' is already in the index") as info:
        index.add_documents([("b", SENTENCES[1]), ("a", SENTENCES[2])])
    assert info.value.document_id == "a"
    assert list(index.graph.nodes) == before and list(index.ledger.documents) == ["a"]


def test_a_document_id_equal_to_another_documents_chunk_id_is_refused() -> None:
    index = build([("d", SENTENCES[0] + " " + SENTENCES[1])], HashingEmbedder(16))
    assert list(index.graph.passages) == ["d#0", "d#1"]
    with pytest.raises(DocumentError, match="'d#0'") as info:
        index.add_documents([("d#0", "Bohr met Einstein.")])
    assert info.value.document_id == "d#0"
    assert index.graph.passage("d#0").text == SENTENCES[0]


def test_delete_refuses_unknown_ids_unless_missing_ok() -> None:
    index = build([("a", SENTENCES[0])], HashingEmbedder(16))
    with pytest.raises(DocumentError, match="'zz'"):
        index.delete_documents(["a", "zz"])
    assert list(index.ledger.documents) == ["a"]
    report = index.delete_documents(["a", "zz"], missing_ok=True)
    assert (report.documents_deleted, len(index.graph)) == (1, 0)
    with pytest.raises(GraphError, match="string"):
        index.delete_documents("a")


# ---------------------------------------------------------------------- extraction work
def test_updates_extract_only_new_or_changed_passages() -> None:
    ex = Scripted()
    index = GraphIndex.from_documents([("a", SENTENCES[0]), ("b", SENTENCES[1])],
                                      embedder=HashingEmbedder(16), extractor=ex)
    assert len(ex.calls) == 2
    index.upsert_documents([("a", SENTENCES[0]), ("c", SENTENCES[2])])
    assert ex.calls[2:] == [SENTENCES[2]]  # a unchanged, c new
    index.delete_documents(["b"])
    assert len(ex.calls) == 3  # deletion reads nothing
    report = index.upsert_documents([("a", SENTENCES[5])])
    assert (report.documents_replaced, ex.calls[3:]) == (1, [SENTENCES[5]])


def test_failed_extractions_are_recorded_and_retried_by_the_next_update() -> None:
    emb = HashingEmbedder(16)
    ex = Scripted(fail=("Warsaw",))
    index = GraphIndex.from_documents([("a", SENTENCES[0]), ("b", SENTENCES[1])],
                                      embedder=emb, extractor=ex)
    assert index.last_build is not None and index.last_build.failed == ["b"]
    assert index.ledger.failed == {"b"} and "Warsaw" not in index.graph
    ex.fail.clear()  # the LLM is back
    report = index.add_documents([("c", SENTENCES[5])])
    assert set(report.failed) == set() and ex.calls[-2:] == [SENTENCES[1], SENTENCES[5]]
    assert "Warsaw" in index.graph and index.ledger.failed == set()
    assert_same_index_plain(index, [("a", SENTENCES[0]), ("b", SENTENCES[1]),
                                    ("c", SENTENCES[5])], emb)


def assert_same_index_plain(index: GraphIndex, docs: list[tuple[str, str]], emb: Any) -> None:
    ref = GraphIndex.from_documents(docs, embedder=emb, extractor=Scripted())
    assert list(index.graph.nodes) == list(ref.graph.nodes)
    assert list(index.graph.edges) == list(ref.graph.edges)


def test_async_updates_equal_sync_ones() -> None:
    emb = HashingEmbedder(32)
    docs = [("a", SENTENCES[0]), ("b", SENTENCES[3] + " " + SENTENCES[4])]

    async def run() -> GraphIndex:
        index = await GraphIndex.afrom_documents(docs, embedder=emb, extractor=Scripted(),
                                                 chunking=CHUNKING)
        await index.aupsert_documents([("a", SENTENCES[6])])
        await index.aadd_documents([("c", SENTENCES[1])])
        await index.adelete_documents(["b"])
        return index

    index = asyncio.run(run())
    assert_same_index(index, [("a", SENTENCES[6]), ("c", SENTENCES[1])], emb)


def test_retrievers_built_before_an_update_see_it() -> None:
    emb = HashingEmbedder(32)
    index = build([("a", SENTENCES[0]), ("b", SENTENCES[6])], emb)
    retriever = EvidenceRetriever("pcr", index, k=5)
    assert any("Copenhagen" in e.text for e in retriever.retrieve("Where did Bohr live?"))
    index.delete_documents(["b"])
    assert not any("Copenhagen" in e.text for e in retriever.retrieve("Where did Bohr live?"))


def test_an_index_over_a_given_graph_deletes_by_provenance() -> None:
    """No ledger (a graph built elsewhere): provenance-counted removal, texts kept."""
    from kgpath.ingest import graph_from_documents

    g = graph_from_documents([("a", SENTENCES[0]), ("b", SENTENCES[4])], extractor=Scripted())
    index = GraphIndex(g, HashingEmbedder(16))
    assert index.ledger is None
    paris = g.node("Paris")
    assert paris.provenance == ("a", "b")
    report = index.delete_documents(["a"])
    assert (report.documents_deleted, report.passages_removed) == (1, 1)
    assert "Marie Curie" not in g and g.node("Paris").provenance == ("b",)
    assert g.node("Paris").text == paris.text  # kept: not a rebuild (which would say "b"'s)
    with pytest.raises(DocumentError, match="'a'"):
        index.delete_documents(["a"])
    index.upsert_documents([("b", SENTENCES[5])], extractor=Scripted())
    assert list(g.passages) == ["b"] and "Bohr" in g and "Warsaw" not in g


@pytest.mark.spacy
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(start=st.lists(st.tuples(IDS, TEXTS), min_size=1, max_size=3,
                      unique_by=lambda d: d[0]),
       ops=st.lists(OPS, min_size=1, max_size=4))
def test_updates_equal_a_rebuild_with_spacy(start: list[tuple[str, str]],
                                            ops: list[tuple[Any, ...]]) -> None:
    """The same property with the offline spaCy extractor (a rebuild reads every passage)."""
    from kgpath.ingest.spacy_extractor import SpacyExtractor

    emb = HashingEmbedder(32)
    ex = SpacyExtractor()
    index = GraphIndex.from_documents(start, embedder=emb, extractor=ex, chunking=CHUNKING)
    model = list(start)
    for op in ops:
        apply(model, index, op)
    ref = GraphIndex.from_documents(model, embedder=emb, extractor=ex, chunking=CHUNKING)
    assert list(index.graph.nodes) == list(ref.graph.nodes)
    assert list(index.graph.edges) == list(ref.graph.edges)
    assert list(index.graph.passages.items()) == list(ref.graph.passages.items())
    if len(ref.graph):
        np.testing.assert_allclose(index.vector_index.vectors, ref.vector_index.vectors,
                                   rtol=0, atol=1e-6)


def test_a_ledger_round_trips_through_json_and_keeps_updating_exactly(tmp_path) -> None:
    import json

    from kgpath.errors import PersistenceError
    from kgpath.ingest.ledger import ledger_from_json, ledger_to_json

    emb = HashingEmbedder(32)
    docs = [("a", SENTENCES[0] + " " + SENTENCES[1]), ("b", SENTENCES[3])]
    index = build(docs, emb)
    (tmp_path / "ledger.json").write_text(json.dumps(ledger_to_json(index.ledger)))
    # a reopened index: the same graph and vectors, the ledger read back from JSON
    ex = Scripted()
    reopened = GraphIndex(index.graph, emb)
    reopened.ledger = ledger_from_json(json.loads((tmp_path / "ledger.json").read_text()), ex)
    reopened.upsert_documents([("b", SENTENCES[5])])
    reopened.delete_documents(["a"])
    assert ex.calls == [SENTENCES[5]]  # nothing read again but the edit
    assert_same_index(reopened, [("b", SENTENCES[5])], emb)
    with pytest.raises(PersistenceError, match="version"):
        ledger_from_json({"format": "kgpath-document-ledger", "version": 99})


NAMESPACES = st.lists(st.tuples(IDS, TEXTS, st.sampled_from(["x", "y"])), min_size=1,
                      max_size=4, unique_by=lambda d: d[0])


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(docs=NAMESPACES)
def test_a_namespace_index_holds_only_its_documents(docs) -> None:
    emb = HashingEmbedder(32)
    index = GraphIndex.from_documents(
        [{"id": d, "text": t, "metadata": {"namespace": ns}} for d, t, ns in docs],
        embedder=emb, extractor=Scripted(), chunking=CHUNKING)
    for ns in ("x", "y"):
        mine = [{"id": d, "text": t, "metadata": {"namespace": n}} for d, t, n in docs if n == ns]
        view = index.for_namespace(ns)
        ref = GraphIndex.from_documents(mine, embedder=emb, extractor=Scripted(),
                                        chunking=CHUNKING)
        assert list(view.graph.nodes) == list(ref.graph.nodes)
        assert list(view.graph.edges) == list(ref.graph.edges)
        assert {p.metadata["namespace"] for p in view.graph.passages.values()} <= {ns}
        if len(ref.graph):
            np.testing.assert_allclose(view.graph.vectors.matrix, ref.graph.vectors.matrix,
                                       rtol=0, atol=1e-6)
            for method in METHODS:
                found = EvidenceRetriever(method, view, k=5).retrieve("Who met Einstein?")
                assert all(view.graph.passage(e.id).metadata["namespace"] == ns
                           for e in found if e.kind == "passage")
    with pytest.raises(ConfigError, match="no document ledger"):
        GraphIndex(index.graph, emb).for_namespace("x")

