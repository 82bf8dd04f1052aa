"""The shared contract suite (:mod:`kgpath.testing`) run by the LlamaIndex adapter.

Every registered method's retriever, built with ``from_graph``, must return the core's
evidence with ``Evidence.metadata()`` as node metadata (the same keys as the LangChain
adapter). The class of a method is the one declaring it (:func:`kgpath.testing.adapter_class`),
so this module names no method.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.schema import NodeWithScore
from llama_index.retrievers.kgpath import KgpathQueryBundle, KgpathRetriever

from kgpath.testing import RetrieverContractSuite, Row, adapter_class


def _rows(nodes: list[NodeWithScore]) -> list[Row]:
    return [Row(n.node.get_content(), n.score, dict(n.node.metadata)) for n in nodes]


class TestLlamaIndexContract(RetrieverContractSuite):
    def make(self, method: str, graph: Any, embedder: Any, *, k: int | None = None,
             **options: Any) -> Any:
        cls = adapter_class(KgpathRetriever, method)
        return cls.from_graph(graph, embed_model=embedder, similarity_top_k=k, **options)

    def invoke(self, retriever: Any, query: str, **kwargs: Any) -> list[Row]:
        return _rows(retriever.retrieve(KgpathQueryBundle(query, options=kwargs)))

    async def ainvoke(self, retriever: Any, query: str, **kwargs: Any) -> list[Row]:
        return _rows(await retriever.aretrieve(KgpathQueryBundle(query, options=kwargs)))
