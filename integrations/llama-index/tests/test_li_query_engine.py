"""Issue 10 acceptance for LlamaIndex: every retriever hands a query engine passage text.

On the bundled demo graph, ``Retriever.from_graph(graph)`` with default arguments (the
bundled offline embedder, no LLM) inside a ``RetrieverQueryEngine`` with ``MockLLM`` (which
echoes its prompt) must retrieve passages of the graph, and the prompt must contain them.
"""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core import Settings
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.retrievers.kgpath import (
    C2RAGRetriever,
    KgpathQueryBundle,
    KGTraversalRetriever,
    LlamaIndexEmbedder,
    PathConstrainedRetriever,
    PathRAGRetriever,
    SchemaGuidedRetriever,
)

from kgpath import ConfigError
from kgpath.data import load_demo_graph

RETRIEVERS = [PathConstrainedRetriever, PathRAGRetriever, C2RAGRetriever,
              SchemaGuidedRetriever, KGTraversalRetriever]
QUERY = "Where was the ore for radium mined?"


@pytest.fixture(scope="module")
def demo() -> Any:
    return load_demo_graph()


@pytest.mark.parametrize("cls", RETRIEVERS, ids=lambda c: c.__name__)
def test_query_engine_receives_passage_text(cls: Any, demo: Any) -> None:
    retriever = cls.from_graph(demo)
    response = RetrieverQueryEngine.from_args(retriever, llm=MockLLM()).query(QUERY)
    texts = {p.text for p in demo.passages.values()}
    assert response.source_nodes
    for n in response.source_nodes:
        assert n.node.get_content() in texts
        assert n.node.node_id in demo.passages
        assert n.node.metadata["kgpath_kind"] == "passage"
        assert n.node.metadata["kgpath_method"] == cls.method
        assert isinstance(n.score, float)
    assert response.source_nodes[0].node.get_content() in str(response)  # reached the prompt


@pytest.mark.parametrize("cls", RETRIEVERS, ids=lambda c: c.__name__)
async def test_sync_equals_async(cls: Any, demo: Any) -> None:
    retriever = cls.from_graph(demo, similarity_top_k=3)
    sync = retriever.retrieve(QUERY)
    asyn = await retriever.aretrieve(QUERY)
    assert [n.node.node_id for n in sync] == [n.node.node_id for n in asyn]
    assert [n.score for n in sync] == pytest.approx([n.score for n in asyn], abs=1e-6)
    assert [n.node.metadata for n in sync] == [n.node.metadata for n in asyn]
    assert len(sync) <= 3
    assert [n.node.metadata["kgpath_rank"] for n in sync] == list(range(1, len(sync) + 1))


@pytest.mark.parametrize("cls", RETRIEVERS, ids=lambda c: c.__name__)
def test_unknown_kwargs_raise_at_construction_and_per_call(cls: Any, demo: Any) -> None:
    with pytest.raises(ConfigError, match=r"bogus.*accepted"):
        cls.from_graph(demo, bogus=1)
    with pytest.raises(ConfigError, match=r"top_k_typo.*accepted"):
        cls.from_graph(demo).retrieve(KgpathQueryBundle(QUERY, options={"top_k_typo": 2}))


class _Settings:
    """Set ``Settings.embed_model``/``llm`` for one test and restore the private slots."""

    def __init__(self, **values: Any) -> None:
        self.values = values

    def __enter__(self) -> None:
        self.saved = {k: getattr(Settings, f"_{k}") for k in self.values}
        for k, v in self.values.items():
            setattr(Settings, k, v)

    def __exit__(self, *exc: Any) -> None:
        for k, v in self.saved.items():
            setattr(Settings, f"_{k}", v)


def test_settings_embed_model_is_honoured_when_set(demo: Any) -> None:
    mock = MockEmbedding(embed_dim=8)
    with _Settings(embed_model=mock):
        r = PathConstrainedRetriever.from_graph(demo)
        embedder = r.kgpath_retriever.index.embedder
        assert isinstance(embedder, LlamaIndexEmbedder) and embedder.embed_model is mock
    assert Settings._embed_model is None  # restored: unset again
    r = PathConstrainedRetriever.from_graph(demo)
    assert not isinstance(r.kgpath_retriever.index.embedder, LlamaIndexEmbedder)


def test_settings_llm_is_honoured_when_set(demo: Any) -> None:
    llm = MockLLM()
    with _Settings(llm=llm):
        r = PathRAGRetriever.from_graph(demo)
        assert r.kgpath_retriever.llm.llm is llm
    assert Settings._llm is None
    assert PathRAGRetriever.from_graph(demo).kgpath_retriever.llm is None


def test_output_native_and_the_native_result(demo: Any) -> None:
    r = PathConstrainedRetriever.from_graph(demo, anchor_name="Marie Curie",
                                            similarity_top_k=4, output="native")
    nodes = r.retrieve(QUERY)
    assert [n.node.metadata["kgpath_kind"] for n in nodes] == ["node"] * 4
    result = r.result(QUERY)
    assert [n.node.node_id for n in nodes] == result.ids
    passages = r.retrieve(KgpathQueryBundle(QUERY, options={"output": "passages"}))
    assert {n.node.metadata["kgpath_kind"] for n in passages} == {"passage"}
