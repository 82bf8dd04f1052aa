"""LlamaIndex property graph stores <-> :class:`kgpath.KnowledgeGraph` (a lossless round trip).

:func:`knowledge_graph_from_property_graph_store` reads any ``PropertyGraphStore``
(``SimplePropertyGraphStore``, Ladybug/Kùzu stores, or any store with ``get`` and
``get_triplets``): entity names, relation labels, properties and source chunks (as passages
and provenance). :func:`knowledge_graph_to_property_graph_store` writes a kgpath graph into a
store; on a ``SimplePropertyGraphStore`` the two are inverse (ids, names, texts, types,
metadata, provenance, weights, passages and order survive).

Property conventions: an entity's ``name`` is the kgpath name when unique (else the id),
``label`` the node type (``"entity"`` for none); properties ``kgpath_id``, ``kgpath_name``,
``description`` (node text), ``kgpath_provenance`` and LlamaIndex's ``triplet_source_id``
(first passage), plus the node metadata. Relations: ``label`` = relation, properties
``description``, ``weight``, ``kgpath_type``, ``kgpath_provenance``, ``triplet_source_id``.
Passages are ``ChunkNode``s, under their own id unless an entity has it (HotpotQA passages
are named after their page's entity): then ``passage:<id>`` with a ``kgpath_id`` property,
so the store keeps both and reading gives the passage its id back. Foreign stores are read
with the same rules (``text`` also
counts as node text; an entity's provenance is its source, its ``MENTIONS`` chunks and its
relations' sources).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from llama_index.core.graph_stores.types import (
    TRIPLET_SOURCE_KEY,
    ChunkNode,
    EntityNode,
    LabelledNode,
    LabelledPropertyGraph,
    PropertyGraphStore,
    Relation,
)
from llama_index.retrievers.kgpath.pg_conventions import (
    PropertyGraphReader,
    chunk_ids,
    entity_names,
    entity_properties,
    relation_properties,
)

from kgpath._progress import progress_if
from kgpath.graph import KnowledgeGraph

__all__ = ["knowledge_graph_from_property_graph_store", "knowledge_graph_to_property_graph_store"]

logger = logging.getLogger(__name__)


def _entity(reader: PropertyGraphReader, node: LabelledNode) -> None:
    reader.entity(str(node.id), getattr(node, "name", None), node.label, node.properties,
                  node.embedding)


def _relation(reader: PropertyGraphReader, rel: Relation) -> None:
    reader.relation(rel.source_id, rel.target_id, rel.label, rel.properties)


# ====================================================================== store -> kgpath
def knowledge_graph_from_property_graph_store(
        store: PropertyGraphStore, *, include_chunks: bool = True, embeddings: bool = False,
        batch_size: int = 256, show_progress: bool = False) -> KnowledgeGraph:
    """Build a :class:`kgpath.KnowledgeGraph` from a LlamaIndex ``PropertyGraphStore``.

    Parameters
    ----------
    store
        ``SimplePropertyGraphStore`` (read directly, in insertion order), a Ladybug/Kùzu
        store (read with Cypher through its connection, entities by id and relations in the
        tie order of the Cypher backend), or any other store (``get()`` for nodes,
        ``get_triplets(ids=...)`` in batches for relations; a store that caps triplets per
        call loses the rest).
    include_chunks
        Keep ``ChunkNode``s as passages and chunk references as provenance (``False``: no
        passages and no provenance).
    embeddings
        Use the entities' stored embeddings (they must come from the embedder you will query
        with); by default kgpath embeds the nodes itself.
    show_progress
        Progress bars while reading.

    Notes
    -----
    Property conventions are listed in the module docstring. The entity ``id`` LlamaIndex uses
    (its name, with ``"`` replaced by a space) becomes the kgpath id unless a ``kgpath_id``
    property says otherwise.
    """
    reader = PropertyGraphReader()
    graph_obj = getattr(store, "graph", None)
    conn = getattr(store, "connection", None)
    if isinstance(graph_obj, LabelledPropertyGraph):
        nodes = list(graph_obj.nodes.values())
        _read_nodes(reader, nodes, show_progress)
        for rel in progress_if(list(graph_obj.relations.values()), show_progress, "relations"):
            _relation(reader, rel)
    elif conn is not None and type(conn).__module__.split(".")[0] in ("ladybug", "kuzu"):
        _read_embedded(reader, conn, show_progress)
    else:
        nodes = list(store.get())
        _read_nodes(reader, nodes, show_progress)
        ids = [n.id for n in nodes if not isinstance(n, ChunkNode)]
        seen: set[tuple[str, str, str]] = set()
        for start in progress_if(range(0, len(ids), batch_size), show_progress, "triplets"):
            for _s, rel, _t in store.get_triplets(ids=ids[start : start + batch_size]):
                key = (rel.source_id, rel.label, rel.target_id)
                if key not in seen:
                    seen.add(key)
                    _relation(reader, rel)
    return reader.build(include_chunks=include_chunks, embeddings=embeddings)


def _read_nodes(reader: PropertyGraphReader, nodes: Sequence[LabelledNode], show: bool) -> None:
    for n in nodes:
        if isinstance(n, ChunkNode):
            reader.chunk(str(n.id), n.text, n.properties)
    for n in progress_if(nodes, show, "entities"):
        if not isinstance(n, ChunkNode):
            _entity(reader, n)


def _read_embedded(reader: PropertyGraphReader, connection: Any, show: bool) -> None:
    """Ladybug/Kùzu property-graph tables, read with three Cypher queries."""
    from kgpath.backends.cypher import EmbeddedCypherDriver

    drv = EmbeddedCypherDriver(connection)
    for r in drv.run("MATCH (c:Chunk) RETURN c.id AS id, c.text AS text, "
                     "c.ref_doc_id AS ref_doc_id ORDER BY c.id"):
        meta = {"ref_doc_id": r["ref_doc_id"]} if r["ref_doc_id"] is not None else {}
        reader.chunks[str(r["id"])] = (r["text"] or "", meta)
    rows = drv.run("MATCH (e) WHERE label(e) <> 'Chunk' RETURN e.id AS id, e.name AS name, "
                   f"e.label AS label, e.{TRIPLET_SOURCE_KEY} AS src ORDER BY e.id")
    for r in progress_if(rows, show, "entities"):
        props: dict[str, Any] = {"kgpath_id": r["id"]}
        if r["src"]:
            props[TRIPLET_SOURCE_KEY] = r["src"]
        reader.entity(str(r["id"]), r["name"] or r["id"], r["label"] or "entity", props)
    rels = drv.run(
        "MATCH (a)-[r]->(b) RETURN a.id AS s, b.id AS t, label(r) AS rt, r.label AS label, "
        f"r.{TRIPLET_SOURCE_KEY} AS src, label(a) AS at, label(b) AS bt"
    )
    # the fallback tie order of kgpath.backends.cypher: (type, relation, text, source, target)
    rels.sort(key=lambda r: (r["rt"], r["label"] or "", "", r["s"], r["t"]))
    for r in progress_if(rels, show, "relations"):
        if r["at"] == "Chunk" or r["bt"] == "Chunk":
            chunk, ent = (r["s"], r["t"]) if r["at"] == "Chunk" else (r["t"], r["s"])
            reader.mentions.append((str(chunk), str(ent)))
            continue
        props = {TRIPLET_SOURCE_KEY: r["src"]} if r["src"] else {}
        reader.relation(str(r["s"]), str(r["t"]), r["label"] or r["rt"], props)


# ====================================================================== kgpath -> store
def knowledge_graph_to_property_graph_store(
        graph: KnowledgeGraph, store: PropertyGraphStore | None = None, *,
        embeddings: bool = False, show_progress: bool = False) -> PropertyGraphStore:
    """Write a kgpath graph into a ``PropertyGraphStore`` (a new ``SimplePropertyGraphStore``).

    ``embeddings=True`` stores the graph's node embeddings on the entities (they must exist).
    Property conventions are listed in the module docstring.
    """
    if store is None:
        from llama_index.core.graph_stores import SimplePropertyGraphStore

        store = SimplePropertyGraphStore()
    emb = graph.vectors.matrix if embeddings else None
    names = entity_names(graph)
    sids = chunk_ids(graph, names)
    chunks = [ChunkNode(text=p.text, id_=sids[p.id], properties=dict(p.metadata) if
                        sids[p.id] == p.id else {**p.metadata, "kgpath_id": p.id})
              for p in graph.passages.values()]
    entities = [EntityNode(name=names[n.id], label=n.type or "entity",
                           properties=entity_properties(n, names[n.id], sids),
                           embedding=None if emb is None else emb[i].tolist())
                for i, n in enumerate(progress_if(graph.nodes, show_progress, "entities"))]
    relations = [Relation(label=e.relation, source_id=names[e.source].replace('"', " "),
                          target_id=names[e.target].replace('"', " "),
                          properties=relation_properties(e, sids))
                 for e in progress_if(graph.edges, show_progress, "relations")]
    if chunks:
        store.upsert_nodes(chunks)
    store.upsert_nodes(entities)
    store.upsert_relations(relations)
    logger.info("wrote %d entities, %d relations, %d chunks", len(entities), len(relations),
                len(chunks))
    return store
