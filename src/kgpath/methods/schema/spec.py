"""Schema-guided retrieval's entry in the method registry (:mod:`kgpath.methods.registry`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from kgpath.graph import KnowledgeGraph
from kgpath.methods.registry import MethodSpec
from kgpath.methods.schema.config import SchemaRetrieverConfig

__all__ = ["SPEC", "build", "merged_types", "schema_from_graph"]


def schema_from_graph(graph: KnowledgeGraph) -> Any:
    """A schema derived from a graph's node types and relation labels.

    Used when a schema-guided retriever is built without a schema; weaker than a designed
    schema (no descriptions), documented as such. Labels that differ only in case,
    spacing, ``_`` or ``-`` (one :func:`~kgpath.ingest.schema.types.type_key`: an OpenIE
    graph has both ``"country of origin"`` and ``"Country of origin"``) become one type
    (:func:`merged_types`), which matches every spelling: a schema cannot hold two types
    with one key.

    Examples
    --------
    >>> g = KnowledgeGraph.from_triples([("a", "Born in", "b"), ("c", "born_in", "d")])
    >>> [(r.name, r.aliases) for r in schema_from_graph(g).relations]
    [('Born in', ('born_in',))]
    """
    from kgpath.ingest.schema import Schema

    types = merged_types(n.type for n in graph.nodes if n.type) or [{"name": "Entity"}]
    rels = merged_types(e.relation for e in graph.edges if e.relation)
    return Schema.from_dict({"entities": types, "relations": rels})


def merged_types(labels: Iterable[str]) -> list[dict[str, Any]]:
    """One ``{"name", "aliases"}`` record per type key, in name order.

    The name is the key's most frequent spelling (ties: the first in sorted order); the
    other spellings are its aliases (sorted).

    Examples
    --------
    >>> merged_types(["Person", "person", "person", "Place"])
    [{'name': 'Place', 'aliases': []}, {'name': 'person', 'aliases': ['Person']}]
    """
    from kgpath.ingest.schema.types import type_key

    counts = Counter(labels)
    groups: dict[str, list[str]] = {}
    for label in sorted(counts):
        groups.setdefault(type_key(label), []).append(label)
    out = []
    for spellings in groups.values():
        name = min(spellings, key=lambda x: (-counts[x], x))
        out.append({"name": name, "aliases": [x for x in spellings if x != name]})
    return sorted(out, key=lambda r: r["name"])


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
