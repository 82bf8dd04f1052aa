"""LangChain's standard retriever suite (langchain-tests, pinned ==1.1.9), run offline.

The graph is small and hand-written; the anchor reaches 6 nodes, so every ``k`` the suite
asks for (1 and 3) can be honoured exactly without any fallback. The embedder is
``kgpath.HashingEmbedder`` (deterministic, no model, no network).
"""

from __future__ import annotations

from typing import Any

from langchain_core.retrievers import BaseRetriever
from langchain_kgpath import PathConstrainedRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

from kgpath import HashingEmbedder, KnowledgeGraph
from kgpath.methods.pcr import PathConstrainedRetriever as CorePCR


def _graph() -> KnowledgeGraph:
    g = KnowledgeGraph()
    g.add_node("curie", "Marie Curie", "physicist who studied radioactivity")
    g.add_node("radium", "radium", "element discovered in pitchblende in 1898")
    g.add_node("polonium", "polonium", "element named after Poland")
    g.add_node("pitchblende", "pitchblende", "uranium ore mined at Joachimsthal")
    g.add_node("nobel", "Nobel Prize in Chemistry 1911", "awarded for discovering radium")
    g.add_node("joachimsthal", "Joachimsthal", "mining town in Bohemia")
    g.add_node("bohr", "Niels Bohr", "proposed a model of the atom")  # not reachable
    g.add_edge("curie", "radium", "discovered")
    g.add_edge("curie", "polonium", "discovered")
    g.add_edge("radium", "pitchblende", "found_in")
    g.add_edge("curie", "nobel", "received")
    g.add_edge("pitchblende", "joachimsthal", "mined_at")
    return g


_CORE = CorePCR(_graph(), embedder=HashingEmbedder(dim=128))


class TestPathConstrainedRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return PathConstrainedRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"graph": _CORE, "anchor": "curie"}

    @property
    def retriever_query_example(self) -> str:
        return "Where was the ore for radium mined?"
