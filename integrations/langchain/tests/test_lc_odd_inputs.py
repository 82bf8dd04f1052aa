"""Issue 23 through the LangChain adapter: plain option values, a user's ``doc_id`` kept."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_kgpath import KgpathGraphStore, PathConstrainedRetriever

from kgpath import ConfigError, HashingEmbedder

pytest.importorskip("spacy", reason="offline extraction needs kgpath[nlp]")

TEXT = ("Marie Curie was born in Warsaw. She discovered polonium in Paris. "
        "Warsaw is the capital of Poland. Polonium is named after Poland.")
DOCS = [Document(page_content=TEXT, metadata={"doc_id": "parent-1", "source": "a.txt"},
                 id="a")]


@pytest.mark.spacy
def test_from_documents_takes_plain_values_and_keeps_the_users_doc_id() -> None:
    r = PathConstrainedRetriever.from_documents(
        DOCS, embedding=HashingEmbedder(), extractor="spacy", chunking={"max_chars": 70}, k=3)
    passages = r.core.graph.passages
    assert len(passages) > 1  # the dict was read as max_chars=70
    assert {p.metadata["doc_id"] for p in passages.values()} == {"parent-1"}
    assert {p.metadata["kgpath_doc_id"] for p in passages.values()} == {"a"}
    docs = r.invoke("Where was the discoverer of polonium born?")
    assert docs and all(d.metadata["doc_id"] == "parent-1" for d in docs)


def test_from_documents_names_a_bad_plain_value() -> None:
    with pytest.raises(ConfigError, match="got 'nltk'"):
        PathConstrainedRetriever.from_documents(DOCS, embedding=HashingEmbedder(),
                                                extractor="nltk")
    with pytest.raises(ConfigError, match=r"unknown field\(s\) \['size'\]"):
        KgpathGraphStore(HashingEmbedder(), chunking={"size": 100})


@pytest.mark.spacy
def test_store_takes_a_chunking_dict_and_returns_the_users_metadata() -> None:
    store = KgpathGraphStore(HashingEmbedder(), extractor="spacy", chunking={"max_chars": 70})
    store.add_documents(DOCS)
    assert len(store.index.graph.passages) > 1
    (doc,) = store.get_by_ids(["a"])
    assert doc.metadata == {"doc_id": "parent-1", "source": "a.txt"}
