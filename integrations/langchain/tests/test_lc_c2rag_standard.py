"""LangChain's standard retriever suite (langchain-tests ==1.1.9) for the C2RAG adapters, offline.

The C2RAG demo KG with the hashing embedder gives 6 evidence passages for the Figure 5
question under its hand-written plan, so both ``k`` values the suite asks for (1, 3) are
honoured exactly. The fallback retriever's primary returns three equal scores (N_eff = 3),
so its fallback always runs and the combined list has more than 3 documents.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_kgpath import C2RAGRetriever, SufficiencyFallbackRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

from kgpath import HashingEmbedder, ScriptedLLM
from kgpath.demo.c2rag import demo_questions, load_demo_kg
from kgpath.methods.c2rag import ConstraintCheckedRetriever

_Q = demo_questions()[0]

_CORE = ConstraintCheckedRetriever(
    load_demo_kg(), embedder=HashingEmbedder(),
    llm=ScriptedLLM(lambda prompt: json.dumps(_Q["plan"])),
)


class _Flat(BaseRetriever):
    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [Document(page_content=f"flat {i}", id=f"flat{i}", metadata={"score": 0.5})
                for i in range(3)]


class TestC2RAGRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return C2RAGRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"graph": _CORE}

    @property
    def retriever_query_example(self) -> str:
        return _Q["query"]


class TestSufficiencyFallbackRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return SufficiencyFallbackRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"primary": _Flat(), "fallback": C2RAGRetriever(graph=_CORE)}

    @property
    def retriever_query_example(self) -> str:
        return _Q["query"]
