"""Raw documents -> graph -> retriever in one call, offline, for every LlamaIndex retriever."""

from __future__ import annotations

import pytest
from llama_index.core.schema import Document, TextNode
from llama_index.retrievers.kgpath import (
    C2RAGRetriever,
    KGTraversalRetriever,
    PathConstrainedRetriever,
    PathRAGRetriever,
    SchemaGuidedRetriever,
)

from kgpath import HashingEmbedder

pytest.importorskip("spacy", reason="offline extraction needs kgpath[nlp]")

DOCS = [
    Document(text="Marie Curie was born in Warsaw. She discovered polonium in Paris.",
             metadata={"source": "a.txt"}, id_="a"),
    TextNode(text="Warsaw is the capital of Poland. Polonium is named after Poland.",
             metadata={"source": "b.txt"}, id_="b"),
]
TEXTS = {d.node_id: d.get_content() for d in DOCS}
ALL = [PathConstrainedRetriever, PathRAGRetriever, C2RAGRetriever, SchemaGuidedRetriever,
       KGTraversalRetriever]


@pytest.mark.parametrize("cls", ALL)
def test_from_documents_returns_source_passages(cls: type) -> None:
    r = cls.from_documents(DOCS, embed_model=HashingEmbedder(), similarity_top_k=2)
    nodes = r.retrieve("Where was the discoverer of polonium born?")
    assert nodes and len(nodes) <= 2
    for n in nodes:
        meta = n.node.metadata
        doc_id = meta["kgpath_doc_id"] if cls is KGTraversalRetriever else n.node.node_id
        assert n.node.get_content() == TEXTS[doc_id]
        assert meta["source"] in ("a.txt", "b.txt")  # the document's own metadata
        assert isinstance(n.score, float)


@pytest.mark.parametrize("cls", ALL)
def test_from_texts(cls: type) -> None:
    r = cls.from_texts([d.get_content() for d in DOCS], embed_model=HashingEmbedder())
    assert r.retrieve("Where was Marie Curie born?")


def test_from_documents_extraction_shape_and_options() -> None:
    r = PathConstrainedRetriever.from_documents(DOCS, embed_model=HashingEmbedder(),
                                                max_depth=1)
    names = {n.name for n in r.graph.nodes}
    assert {"Marie Curie", "Warsaw"} <= names
    # passages keep their document's id and metadata; entity nodes get none of it
    assert set(r.graph.passages) == {"a", "b"}
    assert r.graph.passages["a"].metadata["source"] == "a.txt"
    assert all("source" not in n.metadata for n in r.graph.nodes)
    assert r.config.max_depth == 1
