"""The retriever contract suite: every adapter, every method, the same behaviour.

An adapter's test module subclasses :class:`RetrieverContractSuite` and implements three
hooks; pytest then runs every ``test_*`` method below for each registered method
(:mod:`kgpath.methods.registry`) on the demo graph, asking the question of the method's
spec (``MethodSpec.example``) and comparing the framework's output with the core's evidence
(:class:`kgpath.facade.EvidenceRetriever` with the same options). Because both adapters
are compared with the same reference, their metadata keys and values are identical. The
suite names no method: a method registered later (a plugin) runs it by overriding the
``method`` fixture.

Examples
--------
In ``integrations/langchain/tests/test_lc_contract_suite.py``::

    from kgpath.testing import RetrieverContractSuite, Row, adapter_class

    class TestLangChainContract(RetrieverContractSuite):
        def make(self, method, graph, embedder, *, k=None, **options):
            cls = adapter_class(KgpathRetriever, method)
            return cls.from_graph(graph, embedding=embedder, k=k, **options)

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
from kgpath.facade import METHODS, EvidenceRetriever, method_spec
from kgpath.graph import KnowledgeGraph

__all__ = ["RetrieverContractSuite", "Row", "adapter_class", "example"]


def example(method: str) -> tuple[str, dict[str, Any]]:
    """The spec's question about the demo graph and its per-call arguments."""
    query, call = method_spec(method).example
    if not query:
        raise ConfigError(f"method {method!r} declares no example (MethodSpec.example); "
                          "the contract suite needs a question about the demo graph")
    return query, dict(call)


def adapter_class(base: type, method: str) -> type:
    """The subclass of ``base`` (an adapter's ``KgpathRetriever``) declaring ``method``.

    Raises
    ------
    ConfigError
        If no subclass, or several, set ``method = "<method>"`` in their own body.
    """
    found: list[type] = []
    todo: list[type] = list(base.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__dict__.get("method") == method and cls not in found:
            found.append(cls)
    if len(found) != 1:
        raise ConfigError(f"expected one {base.__name__} subclass with method = {method!r}, "
                          f"found {sorted(c.__qualname__ for c in found)}")
    return found[0]


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
    @pytest.fixture(params=tuple(METHODS))
    def method(self, request: Any) -> str:
        """Each method registered when the suite was imported (the six built-ins)."""
        return str(request.param)

    @pytest.fixture
    def graph(self) -> KnowledgeGraph:
        """The bundled demo graph (passages with provenance)."""
        return _demo_graph()

    def _reference(self, method: str, graph: KnowledgeGraph, *, k: int | None = None,
                   output: str = "passages", **options: Any) -> list[Evidence]:
        query, call = example(method)
        ref = EvidenceRetriever(method, graph, embedder=_embedder(), k=k, output=output,
                                **options)
        return ref.retrieve(query, **call)

    def _run(self, method: str, graph: KnowledgeGraph, *, k: int | None = None,
             **options: Any) -> list[Row]:
        query, call = example(method)
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
        query, call = example(method)
        retriever = self.make(method, graph, _embedder())
        assert len(self.invoke(retriever, query, k=1, **call)) == 1

    def test_sync_equals_async(self, method: str, graph: KnowledgeGraph) -> None:
        """``ainvoke`` returns what ``invoke`` returns."""
        query, call = example(method)
        retriever = self.make(method, graph, _embedder())
        sync = self.invoke(retriever, query, **call)
        assert asyncio.run(self.ainvoke(retriever, query, **call)) == sync

    def test_native_output(self, method: str, graph: KnowledgeGraph) -> None:
        """``output="native"`` gives the method's own unit."""
        rows = self._run(method, graph, output="native")
        assert rows
        assert {r.metadata["kgpath_kind"] for r in rows} <= method_spec(method).native_kinds
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
        query, _ = example(method)
        retriever = self.make(method, graph, _embedder())
        with pytest.raises(ConfigError, match="no_such_argument"):
            self.invoke(retriever, query, no_such_argument=1)
