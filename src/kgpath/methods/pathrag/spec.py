"""PathRAG's entry in the method registry (:mod:`kgpath.methods.registry`)."""

from __future__ import annotations

from typing import Any

from kgpath.methods.pathrag.config import PathRAGConfig
from kgpath.methods.registry import MethodSpec

__all__ = ["SPEC", "build"]


def build(graph: Any, *, embedder: Any = None, llm: Any = None, config: Any = None,
          **init: Any) -> Any:
    """``PathRAGRetriever(graph, embedder=, llm=, config=, keyword_prompt=, qa_prompt=)``."""
    from kgpath.methods.pathrag.retriever import PathRAGRetriever

    return PathRAGRetriever(graph, embedder=embedder, llm=llm, config=config, **init)


SPEC = MethodSpec(
    name="pathrag",
    config_cls=PathRAGConfig,
    build=build,
    trace_keys={
        "reliability": "Eq. 4 path reliability of the path that produced the item",
        "seed": "True for a passage of the question's nearest ones that no retrieved entity "
                "cites (PathRAGConfig.seed_passages, a kgpath extension)",
    },
    init_args=frozenset({"keyword_prompt", "qa_prompt"}),
    native_kinds=frozenset({"path", "node"}),
    example=("How is Marie Curie connected to radioactivity?", {}),
    benchmarks=frozenset({"hotpotqa", "metaqa"}),
)
