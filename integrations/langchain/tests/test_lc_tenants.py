"""Tenants through LangChain: ``namespace=`` on every method's retriever over a live store.

A retriever built with ``namespace="x"`` over a :class:`KgpathGraphStore` returns the
documents a retriever over ``GraphIndex.from_documents`` of namespace ``x``'s documents
alone returns, sees later ``add_documents`` / ``delete`` on its next ``invoke``, and never
a document of another namespace; ``invoke(query, namespace=...)`` chooses per call.
"""

from __future__ import annotations

import pickle
import re

import pytest
from langchain_core.documents import Document
from langchain_kgpath import KgpathGraphStore, PathConstrainedRetriever
from langchain_kgpath.store import RETRIEVERS

from kgpath import GraphIndex, HashingEmbedder
from kgpath.errors import ConfigError
from kgpath.ingest.extraction import ExtractedEntity, ExtractedRelation, Extraction, OpenExtractor

pytestmark = pytest.mark.filterwarnings("ignore:PathRAG num_nodes:UserWarning")
QUESTION = "Who met Einstein in Paris?"
DOCS = {"a": ("Marie Curie met Einstein in Paris.", "x"),
        "b": ("Niels Bohr met Einstein in Copenhagen.", "y"),
        "c": ("Pierre Curie lived in Paris near Sorbonne.", "x")}


class Capitals(OpenExtractor):
    """Runs of capitalised words are entities; consecutive ones are related ("then")."""

    name = "capitals"

    def extract_passage(self, passage_id: str, text: str) -> Extraction:
        names = re.findall(r"[A-Z][a-z]+(?: [A-Z][a-z]+)*", text)
        ents = tuple(ExtractedEntity(n, "Thing", text) for n in names)
        rels = tuple(ExtractedRelation(a, "then", b, "svo", text)
                     for a, b in zip(names, names[1:]))
        return Extraction(passage_id, ents, rels)


def docs(*ids: str) -> list[Document]:
    return [Document(page_content=DOCS[i][0], id=i, metadata={"namespace": DOCS[i][1]})
            for i in ids]


def rows(found: list[Document]) -> list[tuple[str | None, str, dict]]:
    return [(d.id, d.page_content, d.metadata) for d in found]


def test_a_namespaced_retriever_stays_in_its_namespace_and_follows_the_store() -> None:
    emb = HashingEmbedder(32)
    store = KgpathGraphStore(emb, extractor=Capitals())
    store.add_documents(docs("a", "b"))
    pinned = {m: store.as_retriever(m, namespace="x", k=None) for m in RETRIEVERS}
    for method, r in pinned.items():
        ref = GraphIndex.from_documents(docs("a"), embedder=emb, extractor=Capitals())
        want = RETRIEVERS[method](graph=ref, k=None).invoke(QUESTION)
        got = r.invoke(QUESTION)
        assert rows(got) == rows(want), method
        assert got and {d.id for d in got} <= {"a", "c"}  # namespace x's passages only
    store.add_documents(docs("c"))
    for method, r in pinned.items():
        assert "c" in {d.id for d in r.invoke("Where did Pierre Curie live?")}, method
    store.delete(["c"])
    for method, r in pinned.items():
        assert "c" not in {d.id for d in r.invoke("Where did Pierre Curie live?")}, method


def test_per_call_namespaces_unknown_ones_and_errors() -> None:
    emb = HashingEmbedder(32)
    store = KgpathGraphStore(emb, extractor=Capitals())
    store.add_documents(docs("a", "b"))
    r = store.as_retriever("pcr", k=None)
    assert {d.id for d in r.invoke(QUESTION, namespace="y")} == {"b"}
    assert r.invoke(QUESTION, namespace="nobody") == []
    assert store.as_retriever("pathrag", namespace="nobody").invoke(QUESTION) == []
    pinned = store.as_retriever("pcr", namespace="x", k=None)
    assert pinned.namespace == "x"
    with pytest.raises(ConfigError, match="confined to namespace 'x'"):
        pinned.invoke(QUESTION, namespace="y")
    with pytest.raises(ConfigError, match="namespace 'x'.*no document ledger"):
        PathConstrainedRetriever.from_graph(store.index.graph, embedding=emb, namespace="x")
    copy = pickle.loads(pickle.dumps(pinned))  # by value: the namespace's documents only
    assert rows(copy.invoke(QUESTION)) == rows(pinned.invoke(QUESTION))
    assert set(copy.graph.passages) == {"a"}
