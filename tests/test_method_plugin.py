"""A seventh method plugs in with one registry line and passes the same contract suite.

The toy method (:mod:`kgpath.testing.toy`: config, retriever, result, spec) is registered
with one line; the facade, the contract suite, the evidence check and ``kgpath eval kg``
then serve it like a built-in. The adapters' twins of this test are
``integrations/*/tests/test_*_method_plugin.py`` (one one-line class each).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from kgpath.errors import ConfigError
from kgpath.evidence import GENERIC_TRACE_KEYS, Evidence, trace_vocabulary
from kgpath.facade import METHODS, EvidenceRetriever, method_spec
from kgpath.methods.registry import (
    SPEC_MODULES,
    MethodSpec,
    method_names,
    register,
    unregister,
)
from kgpath.testing import RetrieverContractSuite, Row
from kgpath.testing.toy import SPEC as TOY


@pytest.fixture
def toy() -> Iterator[str]:
    register(TOY)  # the one line a plugin needs
    yield "toy"
    unregister("toy")


def _rows(items: list[Any]) -> list[Row]:
    return [Row(e.text, e.score, e.metadata()) for e in items]


class TestToyInTheCore(RetrieverContractSuite):
    """The shipped contract suite, unchanged, on the toy method through the facade."""

    @pytest.fixture
    def method(self, toy: str) -> str:
        return toy

    def make(self, method: str, graph: Any, embedder: Any, *, k: int | None = None,
             **options: Any) -> EvidenceRetriever:
        return EvidenceRetriever(method, graph, embedder=embedder, k=k, **options)

    def invoke(self, retriever: EvidenceRetriever, query: str, **kwargs: Any) -> list[Row]:
        return _rows(retriever.retrieve(query, **kwargs))

    async def ainvoke(self, retriever: EvidenceRetriever, query: str,
                      **kwargs: Any) -> list[Row]:
        return _rows(await retriever.aretrieve(query, **kwargs))


def test_the_registry_lists_the_six_methods_one_line_each() -> None:
    assert tuple(SPEC_MODULES) == ("pcr", "pathrag", "c2rag", "schema", "traversal",
                                   "augmented")
    assert METHODS == method_names() == tuple(SPEC_MODULES)
    for name in METHODS:
        spec = method_spec(name)
        assert spec.name == name and spec.example[0]
        assert spec.native_kinds and not set(spec.trace_keys) & set(GENERIC_TRACE_KEYS)


def test_registering_adds_and_unregistering_removes(toy: str) -> None:
    assert "toy" in METHODS and METHODS[-1] == "toy" and len(METHODS) == 7
    assert method_spec("toy") is TOY
    register(TOY)  # the same spec again: a no-op
    with pytest.raises(ConfigError, match="'toy' is already registered"):
        register(dataclasses.replace(TOY))
    with pytest.raises(ConfigError, match="'pcr' is already registered"):
        register(dataclasses.replace(TOY, name="pcr"))
    unregister("toy")
    try:
        assert "toy" not in METHODS and len(METHODS) == 6
        with pytest.raises(ConfigError, match=r"method must be one of \(.*'augmented'\), "
                                              r"got 'toy'"):
            EvidenceRetriever("toy", None)
        with pytest.raises(ConfigError, match="got 'toy'"):
            unregister("toy")
    finally:
        register(TOY)  # the fixture unregisters it


def test_trace_keys_come_from_the_registered_specs(toy: str) -> None:
    assert trace_vocabulary()["shared_words"] == TOY.trace_keys["shared_words"]
    assert trace_vocabulary()["reliability"].startswith("Eq. 4")  # PathRAG's spec
    Evidence("p", "t", 1.0, "passage", "pcr", trace={"shared_words": ["a"]})  # the union
    unregister("toy")
    try:
        with pytest.raises(ConfigError, match=r"\['shared_words'\] in evidence of method "
                                              r"'toy'"):
            Evidence("p", "t", 1.0, "passage", "toy", trace={"shared_words": ["a"]})
    finally:
        register(TOY)


def test_a_spec_is_checked_when_declared() -> None:
    def spec(**kw: Any) -> MethodSpec:
        return MethodSpec(**{"name": "x", "config_cls": TOY.config_cls, "build": TOY.build,
                             **kw})

    with pytest.raises(ConfigError, match="identifier"):
        spec(name="not a name")
    with pytest.raises(ConfigError, match="must be a dataclass"):
        spec(config_cls=dict)
    with pytest.raises(ConfigError, match="k_field 'top'"):
        spec(k_field="top")
    with pytest.raises(ConfigError, match=r"native kinds \['row'\]"):
        spec(native_kinds=frozenset({"row"}))
    with pytest.raises(ConfigError, match=r"call_groups name \['a'\]"):
        spec(call_groups=(frozenset({"a"}),))
    with pytest.raises(ConfigError, match="'hops' is generic"):
        register(spec(trace_keys={"hops": "mine"}))
    with pytest.raises(ConfigError, match="'reliability' already means"):
        register(spec(trace_keys={"reliability": "something else"}))
    assert "x" not in METHODS


def test_kgpath_eval_kg_runs_a_registered_method(toy: str) -> None:
    from kgpath.eval.kg_hotpot import passage_methods
    from kgpath.eval.kg_metaqa import kg_methods

    assert passage_methods() == ("dense", "bm25", "pcr", "pathrag", "c2rag", "traversal",
                                 "augmented")
    assert kg_methods() == ("pcr", "pcr_template", "pathrag", "c2rag", "walk")
    unregister("toy")
    register(dataclasses.replace(TOY, benchmarks=frozenset({"hotpotqa"})))
    assert passage_methods()[-1] == "toy" and "toy" not in kg_methods()
