"""The shipped contract suite run against the core facade itself (the adapters' reference)."""

from __future__ import annotations

from typing import Any

from kgpath.facade import EvidenceRetriever
from kgpath.testing import RetrieverContractSuite, Row


def _rows(items: list[Any]) -> list[Row]:
    return [Row(e.text, e.score, e.metadata()) for e in items]


class TestCoreContract(RetrieverContractSuite):
    def make(self, method: str, graph: Any, embedder: Any, *, k: int | None = None,
             **options: Any) -> EvidenceRetriever:
        return EvidenceRetriever(method, graph, embedder=embedder, k=k, **options)

    def invoke(self, retriever: EvidenceRetriever, query: str, **kwargs: Any) -> list[Row]:
        return _rows(retriever.retrieve(query, **kwargs))

    async def ainvoke(self, retriever: EvidenceRetriever, query: str,
                      **kwargs: Any) -> list[Row]:
        return _rows(await retriever.aretrieve(query, **kwargs))
