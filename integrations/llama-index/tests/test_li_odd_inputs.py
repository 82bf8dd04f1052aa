"""Issue 23 through the LlamaIndex adapter: plain option values, a user's ``doc_id`` kept."""

from __future__ import annotations

import pytest
from llama_index.core.schema import Document
from llama_index.retrievers.kgpath import KgpathIndex, PathConstrainedRetriever

from kgpath import ConfigError, HashingEmbedder

pytest.importorskip("spacy", reason="offline extraction needs kgpath[nlp]")

TEXT = ("Marie Curie was born in Warsaw. She discovered polonium in Paris. "
        "Warsaw is the capital of Poland. Polonium is named after Poland.")
DOCS = [Document(text=TEXT, metadata={"doc_id": "parent-1", "source": "a.txt"}, id_="a")]


@pytest.mark.spacy
def test_from_documents_takes_plain_values_and_keeps_the_users_doc_id() -> None:
    r = PathConstrainedRetriever.from_documents(
        DOCS, embed_model=HashingEmbedder(), extractor="spacy", chunking={"max_chars": 70},
        similarity_top_k=3)
    passages = r.graph.passages
    assert len(passages) > 1
    assert {p.metadata["doc_id"] for p in passages.values()} == {"parent-1"}
    nodes = r.retrieve("Where was the discoverer of polonium born?")
    assert nodes and all(n.node.metadata["doc_id"] == "parent-1" for n in nodes)
    # the user's doc_id is the user's: visible to the LLM, as LlamaIndex shows metadata
    assert "doc_id" not in nodes[0].node.excluded_llm_metadata_keys


@pytest.mark.spacy
def test_index_takes_plain_values_and_lists_its_own_document_ids() -> None:
    index = KgpathIndex.from_documents(DOCS, embed_model=HashingEmbedder(), extractor="spacy",
                                       chunking={"max_chars": 70})
    assert len(index.graph.passages) > 1
    assert index.ref_doc_ids == ["a"]


def test_from_documents_names_a_bad_plain_value() -> None:
    with pytest.raises(ConfigError, match="got 'nltk'"):
        PathConstrainedRetriever.from_documents(DOCS, embed_model=HashingEmbedder(),
                                                extractor="nltk")
