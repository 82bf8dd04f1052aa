"""Schema-guided retrieval's entry in the method registry (:mod:`kgpath.methods.registry`)."""

from __future__ import annotations

from typing import Any

from kgpath.graph import KnowledgeGraph
from kgpath.methods.registry import MethodSpec
from kgpath.methods.schema.config import SchemaRetrieverConfig

__all__ = ["SPEC", "build", "schema_from_graph"]


def schema_from_graph(graph: KnowledgeGraph) -> Any:
    """A schema derived from a graph's node types and relation labels.

    Used when a schema-guided retriever is built without a schema; weaker than a designed
    schema (no descriptions or aliases), documented as such.
    """
    from kgpath.ingest.schema import Schema

    types = sorted({n.type for n in graph.nodes if n.type}) or ["Entity"]
    rels = sorted({e.relation for e in graph.edges if e.relation})
    return Schema.from_dict({"entities": types, "relations": [{"name": r} for r in rels]})


def build(graph: Any, *, embedder: Any = None, llm: Any = None, config: Any = None,
          **init: Any) -> Any:
    """``SchemaGuidedRetriever(graph, schema=, ...)``; without ``schema``, the graph's own."""
    from kgpath.methods.schema.retriever import SchemaGuidedRetriever

    schema = init.pop("schema", None)
    if schema is None:
        schema = schema_from_graph(graph if isinstance(graph, KnowledgeGraph) else graph.graph)
    return SchemaGuidedRetriever(graph, schema=schema, embedder=embedder, llm=llm,
                                 config=config, **init)


SPEC = MethodSpec(
    name="schema",
    config_cls=SchemaRetrieverConfig,
    build=build,
    trace_keys={
        "sub_questions": "indices of the sub-questions an item was retrieved for",
        "schema_type": "schema type of the node or relation",
        "type_affinity": "t(v) for nodes or [type(e) in R] for triples",
    },
    init_args=frozenset({"schema", "decomposer", "hierarchy"}),
    call_args=frozenset({"plan"}),
    k_field="k",
    native_kinds=frozenset({"node", "triple", "passage"}),
    example=("Which element did Marie Curie isolate?", {}),
)
