"""The core's retriever contract suite (kgpath.testing) run against the LangChain adapter.

Every registered method runs it through the adapter class declaring that method (found by
:func:`kgpath.testing.adapter_class`, so this module names no method).
"""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from langchain_kgpath import KgpathRetriever

from kgpath.testing import RetrieverContractSuite, Row, adapter_class


def rows(docs: list[Document]) -> list[Row]:
    return [Row(d.page_content, d.metadata["kgpath_score"], d.metadata) for d in docs]


class TestLangChainContract(RetrieverContractSuite):
    def make(self, method: str, graph: Any, embedder: Any, *, k: int | None = None,
             **options: Any) -> KgpathRetriever:
        cls = adapter_class(KgpathRetriever, method)
        return cls.from_graph(graph, embedding=embedder, k=k, **options)

    def invoke(self, retriever: Any, query: str, **kwargs: Any) -> list[Row]:
        return rows(retriever.invoke(query, **kwargs))

    async def ainvoke(self, retriever: Any, query: str, **kwargs: Any) -> list[Row]:
        return rows(await retriever.ainvoke(query, **kwargs))
