"""Raw documents -> graph -> retriever in one call, offline, for every retriever."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_kgpath import (
    C2RAGRetriever,
    KGTraversalRetriever,
    PathConstrainedRetriever,
    PathRAGRetriever,
    SchemaGuidedRetriever,
)

from kgpath import HashingEmbedder

pytest.importorskip("spacy", reason="offline extraction needs kgpath[nlp]")

DOCS = [
    Document(page_content="Marie Curie was born in Warsaw. She discovered polonium in Paris.",
             metadata={"source": "a.txt"}, id="a"),
    Document(page_content="Warsaw is the capital of Poland. Polonium is named after Poland.",
             metadata={"source": "b.txt"}, id="b"),
]
TEXTS = {d.id: d.page_content for d in DOCS}


@pytest.mark.parametrize("cls", [PathConstrainedRetriever, PathRAGRetriever, C2RAGRetriever,
                                 SchemaGuidedRetriever, KGTraversalRetriever])
def test_from_documents_returns_source_passages(cls: type) -> None:
    r = cls.from_documents(DOCS, embedding=HashingEmbedder(), k=2)
    docs = r.invoke("Where was the discoverer of polonium born?")
    assert docs and len(docs) <= 2
    for d in docs:
        assert d.page_content == TEXTS[d.metadata["kgpath_doc_id"] if cls is
                                       KGTraversalRetriever else d.id]
        assert d.metadata["source"] in ("a.txt", "b.txt")  # the document's own metadata


def test_from_texts_and_extraction_shape() -> None:
    r = PathConstrainedRetriever.from_texts([d.page_content for d in DOCS],
                                            embedding=HashingEmbedder())
    names = {n.name for n in r.core.graph.nodes}
    assert {"Marie Curie", "Warsaw"} <= names
    assert all("source" not in n.metadata for n in r.core.graph.nodes)
