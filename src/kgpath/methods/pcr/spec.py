"""PCR's entry in the method registry (:mod:`kgpath.methods.registry`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kgpath.errors import NodeNotFoundError
from kgpath.methods.pcr.config import PCRConfig
from kgpath.methods.registry import MethodSpec

__all__ = ["ANCHOR_GROUP", "SPEC", "build", "check_defaults"]

#: PCR's anchor arguments: a call giving either replaces both defaults.
ANCHOR_GROUP = frozenset({"anchor", "anchor_name", "anchors"})


def build(graph: Any, *, embedder: Any = None, llm: Any = None, config: Any = None,
          **init: Any) -> Any:
    """``PathConstrainedRetriever(graph, embedder=, config=)`` (PCR is LLM-free)."""
    from kgpath.methods.pcr.retriever import PathConstrainedRetriever

    return PathConstrainedRetriever(graph, embedder=embedder, config=config, **init)


def check_defaults(core: Any, defaults: Mapping[str, Any], check_graph: bool) -> None:
    """A default anchor the graph lacks fails now (``unknown_anchor="error"``)."""
    from kgpath.index.linking import find_by_name

    aid, name = defaults.get("anchor"), defaults.get("anchor_name")
    if not check_graph or getattr(core.config, "unknown_anchor", "error") != "error":
        return
    if aid is not None and aid not in core.graph:
        raise NodeNotFoundError(f"unknown anchor id {aid!r}", key=aid)
    if aid is None and name is not None and not find_by_name(core.graph, name):
        raise NodeNotFoundError(f"no node named {name!r}", key=name)


SPEC = MethodSpec(
    name="pcr",
    config_cls=PCRConfig,
    build=build,
    trace_keys={
        "anchor_name": "name of the node the search started from",
        "anchor_resolution": "how the anchor was found: id, name, similarity, or a fallback note",
        "rerank": "the passage re-rank applied (propagation), kgpath.methods.augmented.rerank",
        "method_score": "the item's score before that re-rank (None: reached by it alone)",
    },
    call_args=ANCHOR_GROUP,
    k_field="k",
    call_groups=(ANCHOR_GROUP,),
    check_defaults=check_defaults,
    native_kinds=frozenset({"node"}),
    example=("Which prize did Marie Curie receive?", {"anchor": "Marie Curie"}),
    benchmarks=frozenset({"hotpotqa", "metaqa"}),
)
