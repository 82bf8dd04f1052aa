"""A LlamaIndex ``FalkorDBPropertyGraphStore`` <-> :class:`kgpath.KnowledgeGraph`, losslessly.

:func:`knowledge_graph_to_falkordb_store` is the generic
:func:`~llama_index.retrievers.kgpath.pg_store.knowledge_graph_to_property_graph_store` plus
one parameterised query that records each entity's and relation's position
(``kgpath_order``). :func:`knowledge_graph_from_falkordb_store` reads through the store's
public API (``get``, ``get_triplets``, ``structured_query``) with two FalkorDB specifics the
generic reader cannot know:

* the store keeps each entity's ``name`` as a property (its ``id`` has ``"`` replaced by a
  space): the property is the name, not metadata;
* the store has no insertion order (its ``UNWIND ... MERGE`` batches even create nodes in
  reverse): entities and relations are read in ``kgpath_order`` order, then creation
  (``id()``) order for those written by others, so node and edge order, and with them every
  tie-break of the retrievers, survive the round trip.
"""

from __future__ import annotations

import math
from typing import Any

from llama_index.core.graph_stores.types import ChunkNode, EntityNode, LabelledNode
from llama_index.retrievers.kgpath.pg_conventions import PropertyGraphReader, entity_names
from llama_index.retrievers.kgpath.pg_store import (
    _read_nodes,
    _relation,
    knowledge_graph_to_property_graph_store,
)

from kgpath._progress import progress_if
from kgpath.graph import KnowledgeGraph

__all__ = ["knowledge_graph_from_falkordb_store", "knowledge_graph_to_falkordb_store"]

ORDER_KEY = "kgpath_order"


def knowledge_graph_to_falkordb_store(
    graph: KnowledgeGraph, store: Any, *, embeddings: bool = False, show_progress: bool = False
) -> Any:
    """Write ``graph`` into a ``FalkorDBPropertyGraphStore`` and record node and edge order."""
    knowledge_graph_to_property_graph_store(graph, store, embeddings=embeddings,
                                            show_progress=show_progress)
    names = entity_names(graph)
    ents = [{"id": names[n.id].replace('"', " "), "k": i} for i, n in enumerate(graph.nodes)]
    rels = [{"s": names[e.source].replace('"', " "), "t": names[e.target].replace('"', " "),
             "r": e.relation, "k": j} for j, e in enumerate(graph.edges)]
    store.structured_query(
        f"UNWIND $rows AS row MATCH (e:__Entity__ {{id: row.id}}) SET e.{ORDER_KEY} = row.k",
        {"rows": ents})
    store.structured_query(
        "UNWIND $rows AS row MATCH (a:__Entity__ {id: row.s})-[r]->(b:__Entity__ {id: row.t}) "
        f"WHERE type(r) = row.r SET r.{ORDER_KEY} = row.k", {"rows": rels})
    return store


def knowledge_graph_from_falkordb_store(
    store: Any, *, include_chunks: bool = True, embeddings: bool = False,
    batch_size: int = 256, show_progress: bool = False,
) -> KnowledgeGraph:
    """Build a :class:`KnowledgeGraph` from a ``FalkorDBPropertyGraphStore`` (module docstring).

    Options as :func:`~llama_index.retrievers.kgpath.pg_store.\
    knowledge_graph_from_property_graph_store`.
    """
    order = {
        r["id"]: i
        for i, r in enumerate(store.structured_query(
            f"MATCH (n) RETURN n.id AS id ORDER BY n.{ORDER_KEY}, id(n)"))
    }
    nodes = sorted(store.get(), key=lambda n: order.get(n.id, math.inf))
    reader = PropertyGraphReader()
    named = [_named(n) for n in nodes]
    _read_nodes(reader, named, show_progress)
    for raw, n in zip(nodes, named):  # triplets name their ends by the entity name
        if n.id in reader.alias:
            for key in (raw.id, getattr(n, "name", n.id)):
                reader.alias.setdefault(key, reader.alias[n.id])
    rank = {
        (r["s"], r["t"], r["o"]): i
        for i, r in enumerate(store.structured_query(
            "MATCH (a)-[r]->(b) RETURN a.id AS s, type(r) AS t, b.id AS o "
            f"ORDER BY r.{ORDER_KEY}, id(r)"))
    }
    ids = [n.id for n in nodes if not isinstance(n, ChunkNode)]
    rels: dict[tuple[str, str, str], Any] = {}
    for start in progress_if(range(0, len(ids), batch_size), show_progress, "triplets"):
        for _s, rel, _t in store.get_triplets(ids=ids[start : start + batch_size]):
            rel.properties.pop(ORDER_KEY, None)
            rels.setdefault((rel.source_id, rel.label, rel.target_id), rel)
    def position(k: tuple[str, str, str]) -> float:
        return rank.get((k[0].replace('"', " "), k[1], k[2].replace('"', " ")), math.inf)

    for key in sorted(rels, key=position):
        _relation(reader, rels[key])
    return reader.build(include_chunks=include_chunks, embeddings=embeddings)


def _named(node: LabelledNode) -> LabelledNode:
    """An entity whose ``name`` property becomes its name (not metadata)."""
    if isinstance(node, ChunkNode):
        return node
    props = dict(node.properties)
    props.pop(ORDER_KEY, None)
    name = str(props.pop("name", None) or getattr(node, "name", node.id))
    return EntityNode(name=name, label=node.label, properties=props, embedding=node.embedding)
