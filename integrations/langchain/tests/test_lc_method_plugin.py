"""A seventh method in LangChain: one registry line, one one-line class, the same suite.

The toy method (:mod:`kgpath.testing.toy`) is registered for the duration of each test;
``ToyRetriever`` is all the adapter needs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from langchain_core.documents import Document
from langchain_kgpath import KgpathRetriever

from kgpath.methods.registry import register, unregister
from kgpath.testing import RetrieverContractSuite, Row, adapter_class
from kgpath.testing.toy import SPEC as TOY


class ToyRetriever(KgpathRetriever):
    method: ClassVar[str] = "toy"


def rows(docs: list[Document]) -> list[Row]:
    return [Row(d.page_content, d.metadata["kgpath_score"], d.metadata) for d in docs]


class TestToyInLangChain(RetrieverContractSuite):
    @pytest.fixture
    def method(self) -> Iterator[str]:
        register(TOY)
        yield "toy"
        unregister("toy")

    def make(self, method: str, graph: Any, embedder: Any, *, k: int | None = None,
             **options: Any) -> KgpathRetriever:
        cls = adapter_class(KgpathRetriever, method)
        assert cls is ToyRetriever
        return cls.from_graph(graph, embedding=embedder, k=k, **options)

    def invoke(self, retriever: Any, query: str, **kwargs: Any) -> list[Row]:
        return rows(retriever.invoke(query, **kwargs))

    async def ainvoke(self, retriever: Any, query: str, **kwargs: Any) -> list[Row]:
        return rows(await retriever.ainvoke(query, **kwargs))
