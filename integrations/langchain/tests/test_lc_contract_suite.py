"""The core's retriever contract suite (kgpath.testing) run against the LangChain adapter."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_kgpath import (
    C2RAGRetriever,
    GraphAugmentedRetriever,
    KgpathRetriever,
    KGTraversalRetriever,
    PathConstrainedRetriever,
    PathRAGRetriever,
    SchemaGuidedRetriever,
)

from kgpath.facade import METHODS
from kgpath.methods.traversal import TraversalResult
from kgpath.testing import RetrieverContractSuite, Row

CLASSES: dict[str, type[KgpathRetriever]] = {
    "pcr": PathConstrainedRetriever,
    "pathrag": PathRAGRetriever,
    "c2rag": C2RAGRetriever,
    "schema": SchemaGuidedRetriever,
    "traversal": KGTraversalRetriever,
    "augmented": GraphAugmentedRetriever,
}


def rows(docs: list[Document]) -> list[Row]:
    return [Row(d.page_content, d.metadata["kgpath_score"], d.metadata) for d in docs]


def _param(method: str) -> object:
    missing = method == "traversal" and not hasattr(TraversalResult, "evidence")
    return pytest.param(method, marks=pytest.mark.skipif(
        missing, reason="TraversalResult.evidence is not on main yet"))


class TestLangChainContract(RetrieverContractSuite):
    @pytest.fixture(params=[_param(m) for m in METHODS])
    def method(self, request: Any) -> str:
        """Each of the five methods (traversal once its evidence() is on main)."""
        return str(request.param)

    def make(self, method: str, graph: Any, embedder: Any, *, k: int | None = None,
             **options: Any) -> KgpathRetriever:
        return CLASSES[method].from_graph(graph, embedding=embedder, k=k, **options)

    def invoke(self, retriever: Any, query: str, **kwargs: Any) -> list[Row]:
        return rows(retriever.invoke(query, **kwargs))

    async def ainvoke(self, retriever: Any, query: str, **kwargs: Any) -> list[Row]:
        return rows(await retriever.ainvoke(query, **kwargs))
