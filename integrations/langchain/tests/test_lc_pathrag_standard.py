"""LangChain's standard retriever suite (langchain-tests ==1.1.9) for PathRAGRetriever, offline.

The demo graph with the hashing embedder yields 78 candidate paths for the example query,
so every ``k`` the suite asks for (1 and 3) is honoured exactly.
"""

from __future__ import annotations

from typing import Any

from langchain_core.retrievers import BaseRetriever
from langchain_kgpath import PathRAGRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

from kgpath import HashingEmbedder
from kgpath.data import load_demo_graph
from kgpath.methods.pathrag import PathRAGRetriever as CorePathRAG

_CORE = CorePathRAG(load_demo_graph(), embedder=HashingEmbedder(dim=128))


class TestPathRAGRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return PathRAGRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"graph": _CORE}

    @property
    def retriever_query_example(self) -> str:
        return "Where was the ore for radium mined?"
