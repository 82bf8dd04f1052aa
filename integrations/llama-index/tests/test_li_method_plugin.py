"""A seventh method in LlamaIndex: one registry line, one one-line class, the same suite.

The toy method (:mod:`kgpath.testing.toy`) is registered for the duration of each test;
``ToyRetriever`` is all the adapter needs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core.schema import NodeWithScore
from llama_index.retrievers.kgpath import KgpathQueryBundle, KgpathRetriever

from kgpath.methods.registry import register, unregister
from kgpath.testing import RetrieverContractSuite, Row, adapter_class
from kgpath.testing.toy import SPEC as TOY


class ToyRetriever(KgpathRetriever):
    method = "toy"


def _rows(nodes: list[NodeWithScore]) -> list[Row]:
    return [Row(n.node.get_content(), n.score, dict(n.node.metadata)) for n in nodes]


class TestToyInLlamaIndex(RetrieverContractSuite):
    @pytest.fixture
    def method(self) -> Iterator[str]:
        register(TOY)
        yield "toy"
        unregister("toy")

    def make(self, method: str, graph: Any, embedder: Any, *, k: int | None = None,
             **options: Any) -> Any:
        cls = adapter_class(KgpathRetriever, method)
        assert cls is ToyRetriever
        return cls.from_graph(graph, embed_model=embedder, similarity_top_k=k, **options)

    def invoke(self, retriever: Any, query: str, **kwargs: Any) -> list[Row]:
        return _rows(retriever.retrieve(KgpathQueryBundle(query, options=kwargs)))

    async def ainvoke(self, retriever: Any, query: str, **kwargs: Any) -> list[Row]:
        return _rows(await retriever.aretrieve(KgpathQueryBundle(query, options=kwargs)))
