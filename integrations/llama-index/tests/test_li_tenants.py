"""Tenants through LlamaIndex: ``namespace=`` on every method's retriever over a live index.

A retriever from ``KgpathIndex.as_retriever(method, namespace="x")`` returns the nodes a
retriever over ``GraphIndex.from_documents`` of namespace ``x``'s documents alone returns,
sees later ``insert`` / ``delete_ref_doc`` on its next query, and never a node of another
namespace; ``retrieve_with(query, namespace=...)`` chooses per call.
"""

from __future__ import annotations

import pickle
import re

import pytest
from llama_index.core import Document
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.retrievers.kgpath import KgpathIndex, PathConstrainedRetriever, PathRAGRetriever
from llama_index.retrievers.kgpath.index import _retriever_classes

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
    return [Document(text=DOCS[i][0], id_=i, metadata={"namespace": DOCS[i][1]}) for i in ids]


def rows(found: list) -> list[tuple[str, str, float, dict]]:
    return [(n.node.id_, n.node.get_content(), round(n.score, 5), n.node.metadata)
            for n in found]


def test_a_namespaced_retriever_stays_in_its_namespace_and_follows_the_index() -> None:
    emb = HashingEmbedder(32)
    index = KgpathIndex.from_documents(docs("a", "b"), embed_model=emb, extractor=Capitals())
    classes = _retriever_classes()
    pinned = {m: index.as_retriever(m, namespace="x", similarity_top_k=None) for m in classes}
    for method, r in pinned.items():
        ref = GraphIndex.from_documents(docs("a"), embedder=emb, extractor=Capitals())
        want = classes[method](ref, similarity_top_k=None).retrieve(QUESTION)
        got = r.retrieve(QUESTION)
        assert rows(got) == rows(want), method
        assert got and {n.node.id_ for n in got} <= {"a", "c"}  # namespace x's passages
    index.insert(docs("c")[0])
    for method, r in pinned.items():
        assert "c" in {n.node.id_ for n in r.retrieve("Where did Pierre Curie live?")}, method
    index.delete_ref_doc("c")
    for method, r in pinned.items():
        gone = {n.node.id_ for n in r.retrieve("Where did Pierre Curie live?")}
        assert "c" not in gone, method
    engine = RetrieverQueryEngine.from_args(pinned["pcr"], llm=MockLLM())
    assert {n.node.id_ for n in engine.query(QUESTION).source_nodes} == {"a"}


def test_per_call_namespaces_prompts_pickling_and_errors() -> None:
    emb = HashingEmbedder(32)
    index = KgpathIndex.from_documents(docs("a", "b"), embed_model=emb, extractor=Capitals())
    r = index.as_retriever("pcr", similarity_top_k=None)
    assert {n.node.id_ for n in r.retrieve_with(QUESTION, namespace="y")} == {"b"}
    assert r.retrieve_with(QUESTION, namespace="nobody") == []
    pinned = index.as_retriever("pcr", namespace="x", similarity_top_k=None)
    assert pinned.namespace == "x" and r.namespace is None
    with pytest.raises(ConfigError, match="confined to namespace 'x'"):
        pinned.retrieve_with(QUESTION, namespace="y")
    with pytest.raises(ConfigError, match="namespace 'x'.*no document ledger"):
        PathConstrainedRetriever.from_graph(index.graph_index.graph, embed_model=emb,
                                            namespace="x")
    copy = pickle.loads(pickle.dumps(pinned))  # by value: the namespace's documents only
    assert rows(copy.retrieve(QUESTION)) == rows(pinned.retrieve(QUESTION))
    assert set(copy.graph.passages) == {"a"}
    pathrag = PathRAGRetriever(index.graph_index, namespace="x")
    pathrag.update_prompts({"keyword_prompt": "Keywords of {query_str}, as JSON."})
    pathrag.retrieve(QUESTION)  # builds the namespace's core: the prompt reaches it
    index.insert(docs("c")[0])
    pathrag.retrieve(QUESTION)  # rebuilt for the new document: still the new prompt
    assert [core.keyword_prompt for _, core in pathrag.kgpath_retriever.cores()] == \
        ["Keywords of {query}, as JSON."]  # the core's variable name
