"""Tenants: a retriever given a namespace stays in it, live, for every method.

The property test drives random multi-namespace corpora through random add / upsert /
delete sequences (an upsert may move a document to another namespace) with retrievers
built once, before the updates. After every step, for every registered built-in method
and every namespace, the namespaced retriever (and a whole-index retriever asked per call)
returns exactly what a retriever over ``GraphIndex.from_documents`` of that namespace's
documents alone returns (ids, kinds, texts, scores, traces; passages and native output),
and no passage id of another namespace appears in any result or trace.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgpath import GraphIndex, HashingEmbedder
from kgpath.errors import ConfigError, EmptyGraphError
from kgpath.facade import EvidenceRetriever
from kgpath.index.tenants import EmptyResult, NamespacedRetriever, namespace_view
from kgpath.ingest import ChunkingConfig
from kgpath.ingest.extraction import ExtractedEntity, ExtractedRelation, Extraction, OpenExtractor

pytestmark = pytest.mark.filterwarnings("ignore:PathRAG num_nodes:UserWarning")
METHODS = ("pcr", "pathrag", "c2rag", "schema", "traversal", "augmented")
SPACES = ("x", "y")
QUERY = "Who met Einstein in Paris?"

Doc = tuple[str, str, str]  # (id, text, namespace)
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
CHUNKING = ChunkingConfig(max_chars=50)  # two sentences or more: several passages


class Scripted(OpenExtractor):
    """Runs of capitalised words are entities (typed by length), consecutive ones related.

    The same shape as ``tests/test_document_lifecycle.py``'s: entities shared across
    namespaces (Paris, Einstein), short forms, type votes.
    """

    name = "scripted"

    def extract_passage(self, passage_id: str, text: str) -> Extraction:
        ents, rels = [], []
        for sentence in re.split(r"(?<=\.) ", text):
            names = re.findall(r"[A-Z][A-Za-z]*(?: [A-Z][A-Za-z]*)*", sentence)
            ents += [ExtractedEntity(n, ("Person", "Place", "Concept")[len(n) % 3], sentence)
                     for n in names]
            rels += [ExtractedRelation(a, "then", b, "svo", sentence)
                     for a, b in zip(names, names[1:])]
        return Extraction(passage_id, tuple(ents), tuple(rels))


def as_docs(docs: list[Doc]) -> list[dict[str, Any]]:
    return [{"id": d, "text": t, "metadata": {"namespace": ns}} for d, t, ns in docs]


def build(docs: list[Doc], emb: Any) -> GraphIndex:
    return GraphIndex.from_documents(as_docs(docs), embedder=emb, extractor=Scripted(),
                                     chunking=CHUNKING)


def plain(value: Any) -> Any:
    """A trace value comparable with ``==`` (floats rounded, arrays as lists)."""
    if isinstance(value, (float, np.floating)):
        return round(float(value), 5)
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def strings(value: Any) -> set[str]:
    """Every string inside a trace value."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*(strings(v) for v in value.values()), set(map(str, value)))
    if isinstance(value, (list, tuple)):
        return set().union(set(), *(strings(v) for v in value))
    return set()


def seen(found: list[Any]) -> list[tuple[Any, ...]]:
    return [(e.id, e.kind, e.text, round(e.score, 5), plain(dict(e.trace))) for e in found]


def reference(method: str, docs: list[Doc], ns: str, emb: Any, output: str) -> list[Any]:
    mine = [d for d in docs if d[2] == ns]
    if not mine:
        return []
    try:
        return seen(EvidenceRetriever(method, build(mine, emb), k=5,
                                      output=output).retrieve(QUERY))
    except EmptyGraphError:
        return []


def check_tenancy(found: list[Any], docs: list[Doc], ns: str, index: GraphIndex) -> None:
    """No evidence id or trace string is a passage of another namespace's documents."""
    assert index.ledger is not None
    theirs = {p.id for d, _, n in docs if n != ns for p in index.ledger.documents[d].passages}
    for e in found:
        assert e.id not in theirs
        assert not strings(dict(e.trace)) & theirs, (e.method, e.trace)
        if e.kind == "passage":
            assert e.source_metadata.get("namespace", ns) == ns


def check_all(index: GraphIndex, docs: list[Doc], emb: Any,
              pinned: dict[tuple[str, str], EvidenceRetriever],
              routers: dict[str, EvidenceRetriever]) -> None:
    for method in METHODS:
        for ns in SPACES:
            for output in ("passages", "native"):
                want = reference(method, docs, ns, emb, output)
                got = pinned[method, ns].retrieve(QUERY, output=output)
                assert seen(got) == want, (method, ns, output)
                check_tenancy(got, docs, ns, index)
                routed = routers[method].retrieve(QUERY, output=output, namespace=ns)
                assert seen(routed) == want, (method, ns, output, "per call")


def apply(docs: list[Doc], index: GraphIndex, op: tuple[Any, ...]) -> None:
    """Apply ``op`` to the model (documents in index order) and to the index."""
    kind, doc_id = op[0], op[1]
    known = {d: (t, n) for d, t, n in docs}
    if kind == "delete":
        if doc_id in known:
            index.delete_documents([doc_id])
            docs[:] = [d for d in docs if d[0] != doc_id]
        return
    doc = (doc_id, op[2], op[3])
    if kind == "add" and doc_id in known:
        return  # a no-op or a DocumentError: the lifecycle tests cover both
    getattr(index, f"{kind}_documents")(as_docs([doc]))
    if doc_id in known:
        docs[:] = [doc if d[0] == doc_id else d for d in docs]
    else:
        docs.append(doc)


TEXTS = st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=2).map(" ".join)
IDS = st.sampled_from(["a", "b", "c", "d"])
NS = st.sampled_from(SPACES)
OPS = st.one_of(
    st.tuples(st.just("add"), IDS, TEXTS, NS),
    st.tuples(st.just("upsert"), IDS, TEXTS, NS),
    st.tuples(st.just("delete"), IDS),
)


@settings(max_examples=50, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(start=st.lists(st.tuples(IDS, TEXTS, NS), min_size=1, max_size=3,
                      unique_by=lambda d: d[0]),
       ops=st.lists(OPS, min_size=1, max_size=3))
def test_a_namespaced_retriever_equals_one_over_its_documents_alone(
        start: list[Doc], ops: list[tuple[Any, ...]]) -> None:
    emb = HashingEmbedder(32)
    index = build(start, emb)
    pinned = {(m, ns): EvidenceRetriever(m, index, namespace=ns, k=5)
              for m in METHODS for ns in SPACES}
    routers = {m: EvidenceRetriever(m, index, k=5) for m in METHODS}
    docs = list(start)
    check_all(index, docs, emb, pinned, routers)
    for op in ops:
        apply(docs, index, op)
        check_all(index, docs, emb, pinned, routers)


# ---------------------------------------------------------------------- liveness
def test_an_added_document_can_come_back_and_a_deleted_one_cannot() -> None:
    emb = HashingEmbedder(32)
    index = build([("a", SENTENCES[0], "x"), ("b", SENTENCES[6], "y")], emb)
    for method in METHODS:
        r = EvidenceRetriever(method, index, namespace="x", k=None)
        assert "c" not in {e.id for e in r.retrieve("Where did Bohr live?")}
    retrievers = {m: EvidenceRetriever(m, index, namespace="x", k=None) for m in METHODS}
    index.add_documents(as_docs([("c", "Niels Bohr lived in Paris.", "x")]))
    for method, r in retrievers.items():
        assert "c" in {e.id for e in r.retrieve("Where did Bohr live?")}, method
    index.delete_documents(["c"])
    for method, r in retrievers.items():
        assert "c" not in {e.id for e in r.retrieve("Where did Bohr live?")}, method


def test_an_upsert_moving_a_document_moves_its_passages() -> None:
    index = build([("a", SENTENCES[0], "x"), ("b", SENTENCES[6], "y")], HashingEmbedder(32))
    x = EvidenceRetriever("augmented", index, namespace="x", k=None)
    y = EvidenceRetriever("augmented", index, namespace="y", k=None)
    assert [e.id for e in y.retrieve("Bohr")] == ["b"]
    index.upsert_documents(as_docs([("b", SENTENCES[6], "x")]))
    assert y.retrieve("Bohr") == [] and "b" in {e.id for e in x.retrieve("Bohr")}


def test_an_update_of_one_namespace_rebuilds_nothing_for_the_others() -> None:
    index = build([("a", SENTENCES[0], "x"), ("b", SENTENCES[6], "y")], HashingEmbedder(32))
    vx, vy = namespace_view(index, "x"), namespace_view(index, "y")
    index.add_documents(as_docs([("c", SENTENCES[5], "y")]))
    assert namespace_view(index, "x") is vx
    assert namespace_view(index, "y") is not vy
    assert sorted(namespace_view(index, "y").graph.passages) == ["b", "c"]


class Counting(HashingEmbedder):
    """A hashing embedder that records every passage text it embeds."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.texts: list[str] = []

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        self.texts += list(texts)
        return super().embed_passages(texts)


@pytest.mark.parametrize("methods", [tuple(m for m in METHODS if m != "traversal"),
                                     ("traversal",)])
def test_views_rebuilt_after_updates_embed_only_new_texts(methods: tuple[str, ...]) -> None:
    """Passage vectors, node names, edge texts, relations, chunk sentences: embedded once.

    Traversal's chunk graph embeds its documents' texts itself (the index's passage
    vectors are not reused there), once per text for every namespace view together.
    """
    emb = Counting(32)
    two = [" ".join(SENTENCES[i:i + 2]) for i in range(0, 8, 2)]  # passage != sentence
    index = GraphIndex.from_documents(as_docs([("a", two[0], "x"), ("b", two[1], "y")]),
                                      embedder=emb, extractor=Scripted())
    rs = [EvidenceRetriever(m, index, namespace=ns, k=5) for m in methods for ns in SPACES]
    built = len(emb.texts)
    for r in rs:
        r.retrieve(QUERY)
    first = emb.texts[built:]
    index.add_documents(as_docs([("c", two[2], "x"), ("d", two[3], "y")]))
    index.upsert_documents(as_docs([("a", two[3], "x")]))
    index.delete_documents(["b"])
    n = len(emb.texts)  # the index embedded the new passages (its own lifecycle)
    for r in rs:
        r.retrieve(QUERY)
    again = set(emb.texts[n:]) & set(first if methods == ("traversal",) else emb.texts[:n])
    assert again == set()
    assert len(first) == len(set(first))  # two namespaces: a shared name embedded once


# ---------------------------------------------------------------------- threads, errors
def test_two_threads_with_different_namespaces_never_mix_views() -> None:
    emb = HashingEmbedder(32)
    docs = [("a", SENTENCES[0], "x"), ("b", SENTENCES[6], "y"), ("c", SENTENCES[5], "y")]
    want = {ns: reference("pathrag", docs, ns, emb, "passages") for ns in SPACES}
    index = build(docs, emb)
    router = EvidenceRetriever("pathrag", index, k=5)  # cold: views built by the threads
    bad: list[Any] = []
    start = threading.Barrier(4)

    def run(ns: str) -> None:
        start.wait()
        for _ in range(20):
            got = seen(router.retrieve(QUERY, namespace=ns))
            if got != want[ns]:
                bad.append((ns, got))

    threads = [threading.Thread(target=run, args=(ns,)) for ns in SPACES * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []


def test_an_unknown_namespace_gives_no_evidence() -> None:
    index = build([("a", SENTENCES[0], "x")], HashingEmbedder(32))
    for method in METHODS:
        assert EvidenceRetriever(method, index, namespace="nobody").retrieve(QUERY) == []
        assert EvidenceRetriever(method, index).retrieve(QUERY, namespace="nobody") == []
    core = EvidenceRetriever("pcr", index, namespace="nobody").core
    assert isinstance(core, NamespacedRetriever)
    assert isinstance(core.retrieve(QUERY), EmptyResult)
    assert index.namespaces() == ["x"]


def test_a_namespace_needs_an_index_with_a_ledger() -> None:
    emb = HashingEmbedder(32)
    index = build([("a", SENTENCES[0], "x")], emb)
    with pytest.raises(ConfigError, match="namespace 'x'.*no document ledger"):
        EvidenceRetriever("pcr", GraphIndex(index.graph, emb), namespace="x")
    with pytest.raises(ConfigError, match="namespace 'x'.*KnowledgeGraph"):
        EvidenceRetriever("pcr", index.graph, embedder=emb, namespace="x")
    r = EvidenceRetriever("pcr", index.graph, embedder=emb)
    with pytest.raises(ConfigError, match="namespace 'x'"):
        r.retrieve(QUERY, namespace="x")
    with pytest.raises(ConfigError, match="non-empty string"):
        EvidenceRetriever("pcr", index, namespace="")


def test_a_tenants_retriever_refuses_another_namespace_per_call() -> None:
    index = build([("a", SENTENCES[0], "x"), ("b", SENTENCES[6], "y")], HashingEmbedder(32))
    r = EvidenceRetriever("pcr", index, namespace="x")
    assert r.retrieve(QUERY, namespace="x") == r.retrieve(QUERY)
    with pytest.raises(ConfigError, match="confined to namespace 'x'"):
        r.retrieve(QUERY, namespace="y")


def test_async_equals_sync_and_a_namespace_key_is_honoured() -> None:
    import asyncio

    emb = HashingEmbedder(32)
    docs = [{"id": "a", "text": SENTENCES[0], "metadata": {"team": "x"}},
            {"id": "b", "text": SENTENCES[4], "metadata": {"team": "y"}}]
    index = GraphIndex.from_documents(docs, embedder=emb, extractor=Scripted())
    for method in METHODS:
        r = EvidenceRetriever(method, index, namespace="y", namespace_key="team")
        got = asyncio.run(r.aretrieve(QUERY))
        assert seen(got) == seen(r.retrieve(QUERY)) and {e.id for e in got} == {"b"}


def test_a_prebuilt_core_refuses_a_namespace() -> None:
    emb = HashingEmbedder(32)
    index = build([("a", SENTENCES[0], "x")], emb)
    core = EvidenceRetriever("pcr", index).core
    with pytest.raises(ConfigError, match="namespace 'x'"):
        EvidenceRetriever("pcr", core, namespace="x")
    with pytest.raises(ConfigError, match="namespace 'x'"):
        EvidenceRetriever("pcr", core).retrieve(QUERY, namespace="x")
