"""Chunk-graph traversal's entry in the method registry (:mod:`kgpath.methods.registry`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.methods.registry import MethodSpec
from kgpath.methods.traversal.config import TraversalConfig

__all__ = ["SPEC", "build", "check_defaults", "chunk_graph_of"]


def chunk_graph_of(graph: KnowledgeGraph, embedder: Any) -> KnowledgeGraph:
    """The article's chunk graph over a knowledge graph's passages (traversal needs one).

    Raises
    ------
    ConfigError
        If the graph has no passages.
    """
    from kgpath.ingest.chunk_graph import build_chunk_graph

    if not graph.passages:
        raise ConfigError(
            "traversal needs a chunk graph or a graph with passages; this graph has neither"
        )
    docs = [(p.id, p.text) for p in graph.passages.values()]
    return build_chunk_graph(docs, embedder=embedder)


def build(graph: Any, *, embedder: Any = None, llm: Any = None, config: Any = None,
          **init: Any) -> Any:
    """``TraversalRetriever(graph, ...)``; a graph without chunk nodes gets a chunk graph."""
    from kgpath.methods.traversal.retriever import TraversalRetriever

    if isinstance(graph, KnowledgeGraph) and not any(n.type == "chunk" for n in graph.nodes):
        graph = chunk_graph_of(graph, embedder)
    elif hasattr(graph, "embedder") and not any(n.type == "chunk" for n in graph.graph.nodes):
        embedder = graph.embedder  # a GraphIndex of documents: the chunk graph of its passages
        graph = chunk_graph_of(graph.graph, embedder)
    return TraversalRetriever(graph, embedder=embedder, llm=llm, config=config, **init)


def check_defaults(core: Any, defaults: Mapping[str, Any], check_graph: bool) -> None:
    """A default ``algorithm`` must be one of the seven walks (or an extension)."""
    if defaults.get("algorithm") is not None:
        from kgpath.methods.traversal.walks import check_algorithm

        check_algorithm(defaults["algorithm"])


SPEC = MethodSpec(
    name="traversal",
    config_cls=TraversalConfig,
    build=build,
    trace_keys={
        "doc_id": "document (passage) id of a sentence or chunk",
        "chunk_id": "chunk the sentence was extracted from",
        "sentence_ids": "sentence ids extracted from a document, extraction order",
    },
    init_args=frozenset({"algorithm", "llm_prompt", "mention_config"}),
    call_args=frozenset({"algorithm"}),
    check_defaults=check_defaults,
    native_kinds=frozenset({"sentence"}),
    example=("What did Marie Curie isolate from pitchblende?", {}),
    benchmarks=frozenset({"hotpotqa"}),
)
