"""Graph-augmented retrieval's entry in the method registry (:mod:`kgpath.methods.registry`)."""

from __future__ import annotations

from kgpath.methods.augmented.config import AugmentedConfig
from kgpath.methods.augmented.retriever import GraphAugmentedRetriever
from kgpath.methods.registry import MethodSpec

__all__ = ["SPEC"]

SPEC = MethodSpec(
    name="augmented",
    config_cls=AugmentedConfig,
    build=GraphAugmentedRetriever,
    init_args=frozenset({"base", "vectors", "linker"}),
    k_field="k",
    native_kinds=frozenset({"passage"}),
    example=("Where was the ore for radium mined?", {}),
    benchmarks=frozenset({"hotpotqa"}),
)
