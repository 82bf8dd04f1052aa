"""C2RAG's entry in the method registry (:mod:`kgpath.methods.registry`)."""

from __future__ import annotations

from typing import Any

from kgpath.methods.c2rag.config import C2RAGConfig
from kgpath.methods.registry import MethodSpec

__all__ = ["SPEC", "build"]


def build(graph: Any, *, embedder: Any = None, llm: Any = None, config: Any = None,
          **init: Any) -> Any:
    """``ConstraintCheckedRetriever(graph, embedder=, llm=, config=, reranker=, ...)``."""
    from kgpath.methods.c2rag.retriever import ConstraintCheckedRetriever

    return ConstraintCheckedRetriever(graph, embedder=embedder, llm=llm, config=config, **init)


SPEC = MethodSpec(
    name="c2rag",
    config_cls=C2RAGConfig,
    build=build,
    trace_keys={
        "constraint": "the linearised constraint Lin(tau) of the block the item answers",
        "state": "sufficiency state (Eq. 9): resolved or unresolved",
        "n_eff": "Eq. 10 effective candidate count of that constraint (float)",
        "bindings": "placeholder bindings of that block, as 'var=name' strings",
        "source": "structural (graph) or textual (recovery) evidence",
        "rerank": "the passage re-rank applied (propagation), kgpath.methods.augmented.rerank",
        "method_score": "the item's score before that re-rank (None: reached by it alone)",
    },
    init_args=frozenset({"reranker", "planner_prompt"}),
    call_args=frozenset({"plan"}),
    native_kinds=frozenset({"passage", "triple"}),
    example=("Where was the discoverer of polonium born?", {}),
    benchmarks=frozenset({"hotpotqa", "metaqa"}),
)
