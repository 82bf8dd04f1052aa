"""The retriever contract suite: every adapter, every method, the same behaviour.

An adapter's test module subclasses :class:`RetrieverContractSuite` and implements three
hooks; pytest then runs every ``test_*`` method below for each of the five methods on the
demo graph, comparing the framework's output with the core's evidence
(:class:`kgpath.facade.EvidenceRetriever` with the same options). Because both adapters
are compared with the same reference, their metadata keys and values are identical.

Examples
--------
In ``integrations/langchain/tests/test_lc_contract_suite.py``::

    from kgpath.testing import RetrieverContractSuite, Row

    class TestLangChainContract(RetrieverContractSuite):
        def make(self, method, graph, embedder, *, k=None, **options):
            return CLASSES[method].from_graph(graph, embedding=embedder, k=k, **options)

        def invoke(self, retriever, query, **kwargs):
            return [Row(d.page_content, d.metadata["kgpath_score"], d.metadata)
                    for d in retriever.invoke(query, **kwargs)]

        async def ainvoke(self, retriever, query, **kwargs):
            docs = await retriever.ainvoke(query, **kwargs)
            return [Row(d.page_content, d.metadata["kgpath_score"], d.metadata)
                    for d in docs]
"""

from __future__ import annotations

import asyncio
from functools import lru_cache
from typing import Any, NamedTuple

import pytest

from kgpath.errors import ConfigError
from kgpath.evidence import Evidence
from kgpath.facade import METHODS, EvidenceRetriever
from kgpath.graph import KnowledgeGraph

__all__ = ["CONTRACT_QUERIES", "RetrieverContractSuite", "Row"]

CONTRACT_QUERIES: dict[str, tuple[str, dict[str, Any]]] = {
    "pcr": ("Which prize did Marie Curie receive?", {"anchor": "Marie Curie"}),
    "pathrag": ("How is Marie Curie connected to radioactivity?", {}),
    "c2rag": ("Where was the discoverer of polonium born?", {}),
    "schema": ("Which element did Marie Curie isolate?", {}),
    "traversal": ("What did Marie Curie isolate from pitchblende?", {}),
    "augmented": ("Where was the ore for radium mined?", {}),
}
"""Per method: a question about the demo graph and per-call arguments."""

NATIVE_KINDS: dict[str, set[str]] = {
    "pcr": {"node"},
    "pathrag": {"path", "node"},
    "c2rag": {"passage", "triple"},
    "schema": {"node", "triple", "passage"},
    "traversal": {"sentence"},
    "augmented": {"passage"},
}


class Row(NamedTuple):
    """One item as a framework returns it: text, score, metadata."""

    text: str
    score: float | None
    metadata: dict[str, Any]


@lru_cache(maxsize=1)
def _demo_graph() -> KnowledgeGraph:
    from kgpath.data import load_demo_graph

    return load_demo_graph()


def _embedder() -> Any:
    from kgpath.embeddings import HashingEmbedder

    return HashingEmbedder()


class RetrieverContractSuite:
    """Subclass, implement :meth:`make`, :meth:`invoke` and :meth:`ainvoke`; pytest runs it."""

    # ------------------------------------------------------------------ hooks
    def make(self, method: str, graph: KnowledgeGraph, embedder: Any, *,
             k: int | None = None, **options: Any) -> Any:
        """Build the framework retriever of ``method`` with ``from_graph``."""
        raise NotImplementedError

    def invoke(self, retriever: Any, query: str, **kwargs: Any) -> list[Row]:
        """Run it synchronously; ``kwargs`` are per-call arguments (``k``, ``anchor``...)."""
        raise NotImplementedError

    async def ainvoke(self, retriever: Any, query: str, **kwargs: Any) -> list[Row]:
        """Run it asynchronously."""
        raise NotImplementedError

    # ------------------------------------------------------------------ fixtures
    @pytest.fixture(params=METHODS)
    def method(self, request: Any) -> str:
        """Each of the five methods."""
        return str(request.param)

    @pytest.fixture
    def graph(self) -> KnowledgeGraph:
        """The bundled demo graph (passages with provenance)."""
        return _demo_graph()

    def _reference(self, method: str, graph: KnowledgeGraph, *, k: int | None = None,
                   output: str = "passages", **options: Any) -> list[Evidence]:
        query, call = CONTRACT_QUERIES[method]
        ref = EvidenceRetriever(method, graph, embedder=_embedder(), k=k, output=output,
                                **options)
        return ref.retrieve(query, **call)

    def _run(self, method: str, graph: KnowledgeGraph, *, k: int | None = None,
             **options: Any) -> list[Row]:
        query, call = CONTRACT_QUERIES[method]
        return self.invoke(self.make(method, graph, _embedder(), k=k, **options), query, **call)

    # ------------------------------------------------------------------ tests
    def test_text_is_the_evidence_text(self, method: str, graph: KnowledgeGraph) -> None:
        """Items are the core's evidence, in its order; passages are the graph's text."""
        rows = self._run(method, graph)
        ref = self._reference(method, graph)
        assert rows, f"{method}: no evidence on the demo graph"
        assert [r.text for r in rows] == [e.text for e in ref]
        texts = {p.text for p in graph.passages.values()}
        for r in rows:
            if r.metadata["kgpath_kind"] == "passage":
                assert r.text in texts

    def test_metadata_is_the_contract(self, method: str, graph: KnowledgeGraph) -> None:
        """Metadata equals ``Evidence.metadata()``: the same keys in every framework."""
        rows = self._run(method, graph)
        ref = self._reference(method, graph)
        for row, e in zip(rows, ref, strict=True):
            assert row.metadata == e.metadata()
            assert row.metadata["kgpath_method"] == method

    def test_scores_are_floats(self, method: str, graph: KnowledgeGraph) -> None:
        """Scores are Python floats, equal to the contract's, ranks 1..n."""
        rows = self._run(method, graph)
        for i, r in enumerate(rows, 1):
            assert type(r.score) is float
            assert r.score == r.metadata["kgpath_score"]
            assert r.metadata["kgpath_rank"] == i

    def test_k_is_honoured(self, method: str, graph: KnowledgeGraph) -> None:
        """``k`` at construction and per call caps the list."""
        assert len(self._run(method, graph, k=2)) <= 2
        query, call = CONTRACT_QUERIES[method]
        retriever = self.make(method, graph, _embedder())
        assert len(self.invoke(retriever, query, k=1, **call)) == 1

    def test_sync_equals_async(self, method: str, graph: KnowledgeGraph) -> None:
        """``ainvoke`` returns what ``invoke`` returns."""
        query, call = CONTRACT_QUERIES[method]
        retriever = self.make(method, graph, _embedder())
        sync = self.invoke(retriever, query, **call)
        assert asyncio.run(self.ainvoke(retriever, query, **call)) == sync

    def test_native_output(self, method: str, graph: KnowledgeGraph) -> None:
        """``output="native"`` gives the method's own unit."""
        rows = self._run(method, graph, output="native")
        assert rows
        assert {r.metadata["kgpath_kind"] for r in rows} <= NATIVE_KINDS[method]
        ref = self._reference(method, graph, output="native")
        assert [r.metadata for r in rows] == [e.metadata() for e in ref]

    def test_unknown_option_raises_at_construction(self, method: str,
                                                   graph: KnowledgeGraph) -> None:
        """A misspelt option names itself."""
        with pytest.raises(ConfigError, match="no_such_option"):
            self.make(method, graph, _embedder(), no_such_option=1)

    def test_unknown_argument_raises_per_call(self, method: str,
                                              graph: KnowledgeGraph) -> None:
        """A misspelt per-call argument names itself."""
        query, _ = CONTRACT_QUERIES[method]
        retriever = self.make(method, graph, _embedder())
        with pytest.raises(ConfigError, match="no_such_argument"):
            self.invoke(retriever, query, no_such_argument=1)
