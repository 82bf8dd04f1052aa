"""The shared contract suite (:mod:`kgpath.testing`) run by the LlamaIndex adapter.

Every method's retriever, built with ``from_graph``, must return the core's evidence with
``Evidence.metadata()`` as node metadata (the same keys as the LangChain adapter).
"""

from __future__ import annotations

from typing import Any

from llama_index.core.schema import NodeWithScore
from llama_index.retrievers.kgpath import (
    C2RAGRetriever,
    GraphAugmentedRetriever,
    KgpathQueryBundle,
    KGTraversalRetriever,
    PathConstrainedRetriever,
    PathRAGRetriever,
    SchemaGuidedRetriever,
)

from kgpath.testing import RetrieverContractSuite, Row

CLASSES = {
    "pcr": PathConstrainedRetriever,
    "pathrag": PathRAGRetriever,
    "c2rag": C2RAGRetriever,
    "schema": SchemaGuidedRetriever,
    "traversal": KGTraversalRetriever,
    "augmented": GraphAugmentedRetriever,
}


def _rows(nodes: list[NodeWithScore]) -> list[Row]:
    return [Row(n.node.get_content(), n.score, dict(n.node.metadata)) for n in nodes]


class TestLlamaIndexContract(RetrieverContractSuite):
    def make(self, method: str, graph: Any, embedder: Any, *, k: int | None = None,
             **options: Any) -> Any:
        return CLASSES[method].from_graph(graph, embed_model=embedder, similarity_top_k=k,
                                          **options)

    def invoke(self, retriever: Any, query: str, **kwargs: Any) -> list[Row]:
        return _rows(retriever.retrieve(KgpathQueryBundle(query, options=kwargs)))

    async def ainvoke(self, retriever: Any, query: str, **kwargs: Any) -> list[Row]:
        return _rows(await retriever.aretrieve(KgpathQueryBundle(query, options=kwargs)))
