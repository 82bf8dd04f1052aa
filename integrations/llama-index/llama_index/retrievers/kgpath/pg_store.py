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
Passages are ``ChunkNode``s. Foreign stores are read with the same rules (``text`` also
counts as node text; an entity's provenance is its source, its ``MENTIONS`` chunks and its
relations' sources).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
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

from kgpath.errors import GraphError
from kgpath.graph import KnowledgeGraph

__all__ = ["knowledge_graph_from_property_graph_store", "knowledge_graph_to_property_graph_store"]

logger = logging.getLogger(__name__)

_RESERVED = frozenset(
    {"kgpath_id", "kgpath_name", "kgpath_provenance", "kgpath_type", "description",
     TRIPLET_SOURCE_KEY}
)
_NO_TYPE = ("entity", "Entity")


def _progress(it: Iterable[Any], show: bool, desc: str) -> Iterable[Any]:
    if not show:
        return it
    from tqdm.auto import tqdm

    return tqdm(it, desc=desc, leave=False)


# ====================================================================== store -> kgpath
def _props(p: Mapping[str, Any], drop: Iterable[str] = ()) -> dict[str, Any]:
    skip = _RESERVED | set(drop)
    return {k: v for k, v in p.items() if k not in skip and v is not None}


def _prov_from(p: Mapping[str, Any]) -> list[str]:
    prov = p.get("kgpath_provenance")
    if isinstance(prov, (list, tuple)):
        return [str(x) for x in prov]
    src = p.get(TRIPLET_SOURCE_KEY)
    return [str(src)] if src else []


class _Reader:
    """Accumulates entities, relations and chunks, then builds the graph in order."""

    def __init__(self) -> None:
        self.entities: list[tuple[str, str, str, str | None, dict[str, Any], list[str]]] = []
        self.exact_prov: set[str] = set()  # written by kgpath: provenance is complete
        self.embeddings: dict[str, Sequence[float]] = {}
        self.alias: dict[str, str] = {}  # LlamaIndex entity id -> kgpath id
        self.chunks: dict[str, tuple[str, dict[str, Any]]] = {}
        self.edges: list[tuple[str, str, str, str, str | None, float, list[str],
                               dict[str, Any]]] = []
        self.mentions: list[tuple[str, str]] = []  # (chunk id, entity alias)

    def entity(self, node: EntityNode | LabelledNode) -> None:
        p = dict(node.properties)
        alias = str(node.id)
        kid = str(p.get("kgpath_id") or alias)
        name = str(p.get("kgpath_name") or getattr(node, "name", None) or kid)
        text = p.get("description") or p.get("text") or ""
        label = node.label
        typ = None if label in _NO_TYPE or not label else str(label)
        self.alias[alias] = kid
        self.alias.setdefault(kid, kid)
        if isinstance(p.get("kgpath_provenance"), (list, tuple)):
            self.exact_prov.add(kid)
        self.entities.append((kid, name, str(text), typ, _props(p), _prov_from(p)))
        if node.embedding is not None:
            self.embeddings[kid] = node.embedding

    def relation(self, rel: Relation) -> None:
        s, t = str(rel.source_id), str(rel.target_id)
        if s in self.chunks and t not in self.chunks:
            self.mentions.append((s, t))
            return
        if t in self.chunks:
            self.mentions.append((t, s))
            return
        p = dict(rel.properties)
        w = p.get("weight", 1.0)
        self.edges.append((
            s, t, str(rel.label), str(p.get("description") or ""), p.get("kgpath_type"),
            1.0 if w is None else float(w), _prov_from(p), _props(p, ("weight",)),
        ))

    def build(self, *, include_chunks: bool, embeddings: bool) -> KnowledgeGraph:
        g = KnowledgeGraph()
        if include_chunks:
            for cid, (text, meta) in self.chunks.items():
                g.add_passage(cid, text, meta)
        extra: dict[str, list[str]] = {}
        for cid, alias in self.mentions:
            extra.setdefault(self.alias.get(alias, alias), []).append(cid)
        # LlamaIndex keeps one source chunk per entity (the last one seen); the chunks of its
        # relations are sources too, as in KnowledgeGraph.from_triples
        for s, t, *_rest, prov, _meta in self.edges:
            for end in (s, t):
                kid = self.alias.get(end)
                if kid is not None and kid not in self.exact_prov:
                    extra.setdefault(kid, []).extend(prov)
        for kid, name, text, typ, meta, prov in self.entities:
            merged = list(dict.fromkeys(prov + extra.get(kid, []))) if include_chunks else []
            g.add_node(kid, name=name, text=text, type=typ, metadata=meta, provenance=merged)
        dangling = 0
        for s, t, rel, text, typ, w, prov, meta in self.edges:
            src, dst = self.alias.get(s), self.alias.get(t)
            if src is None or dst is None:
                dangling += 1
                continue
            g.add_edge(src, dst, relation=rel, text=text, type=typ, weight=w,
                       provenance=prov if include_chunks else (), metadata=meta)
        if dangling:
            logger.warning("skipped %d relation(s) whose end is not an entity of the store",
                           dangling)
        if embeddings and self.embeddings:
            if len(self.embeddings) != len(g):
                raise GraphError(
                    f"only {len(self.embeddings)} of {len(g)} entities carry an embedding; "
                    "pass embeddings=False to let kgpath embed the nodes"
                )
            g.set_embeddings(self.embeddings)
        return g


def knowledge_graph_from_property_graph_store(
    store: PropertyGraphStore,
    *,
    include_chunks: bool = True,
    embeddings: bool = False,
    batch_size: int = 256,
    show_progress: bool = False,
) -> KnowledgeGraph:
    """Build a :class:`kgpath.KnowledgeGraph` from a LlamaIndex ``PropertyGraphStore``.

    Parameters
    ----------
    store
        ``SimplePropertyGraphStore`` (read directly, in insertion order), a Ladybug/Kùzu
        store (read with Cypher through its connection, entities by id and relations in the
        tie order of :mod:`kgpath.stores.cypher`), or any other store (``get()`` for nodes,
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
    reader = _Reader()
    graph_obj = getattr(store, "graph", None)
    conn = getattr(store, "connection", None)
    if isinstance(graph_obj, LabelledPropertyGraph):
        nodes = list(graph_obj.nodes.values())
        _read_nodes(reader, nodes, show_progress)
        for rel in _progress(list(graph_obj.relations.values()), show_progress, "relations"):
            reader.relation(rel)
    elif conn is not None and type(conn).__module__.split(".")[0] in ("ladybug", "kuzu"):
        _read_embedded(reader, conn, show_progress)
    else:
        nodes = list(store.get())
        _read_nodes(reader, nodes, show_progress)
        ids = [n.id for n in nodes if not isinstance(n, ChunkNode)]
        seen: set[tuple[str, str, str]] = set()
        for start in _progress(range(0, len(ids), batch_size), show_progress, "triplets"):
            for _s, rel, _t in store.get_triplets(ids=ids[start : start + batch_size]):
                key = (rel.source_id, rel.label, rel.target_id)
                if key not in seen:
                    seen.add(key)
                    reader.relation(rel)
    return reader.build(include_chunks=include_chunks, embeddings=embeddings)


def _read_nodes(reader: _Reader, nodes: Sequence[LabelledNode], show: bool) -> None:
    for n in nodes:
        if isinstance(n, ChunkNode):
            meta = {k: v for k, v in n.properties.items()
                    if not str(k).startswith("_") and v is not None}
            reader.chunks[str(n.id)] = (n.text, meta)
    for n in _progress(nodes, show, "entities"):
        if not isinstance(n, ChunkNode):
            reader.entity(n)


def _read_embedded(reader: _Reader, connection: Any, show: bool) -> None:
    """Ladybug/Kùzu property-graph tables, read with three Cypher queries."""
    from kgpath.stores import EmbeddedCypherDriver

    drv = EmbeddedCypherDriver(connection)
    for r in drv.run("MATCH (c:Chunk) RETURN c.id AS id, c.text AS text, "
                     "c.ref_doc_id AS ref_doc_id ORDER BY c.id"):
        reader.chunks[str(r["id"])] = (r["text"] or "", _props({"ref_doc_id": r["ref_doc_id"]}))
    rows = drv.run("MATCH (e) WHERE label(e) <> 'Chunk' RETURN e.id AS id, e.name AS name, "
                   f"e.label AS label, e.{TRIPLET_SOURCE_KEY} AS src ORDER BY e.id")
    for r in _progress(rows, show, "entities"):
        props: dict[str, Any] = {"kgpath_id": r["id"]}
        if r["src"]:
            props[TRIPLET_SOURCE_KEY] = r["src"]
        reader.entity(EntityNode(name=r["name"] or r["id"], label=r["label"] or "entity",
                                 properties=props))
        reader.alias[str(r["id"])] = str(r["id"])
    rels = drv.run(
        "MATCH (a)-[r]->(b) RETURN a.id AS s, b.id AS t, label(r) AS rt, r.label AS label, "
        f"r.{TRIPLET_SOURCE_KEY} AS src, label(a) AS at, label(b) AS bt"
    )
    # the fallback tie order of kgpath.stores.cypher: (type, relation, text, source, target)
    rels.sort(key=lambda r: (r["rt"], r["label"] or "", "", r["s"], r["t"]))
    for r in _progress(rels, show, "relations"):
        if r["at"] == "Chunk" or r["bt"] == "Chunk":
            chunk, ent = (r["s"], r["t"]) if r["at"] == "Chunk" else (r["t"], r["s"])
            reader.mentions.append((str(chunk), str(ent)))
            continue
        props = {TRIPLET_SOURCE_KEY: r["src"]} if r["src"] else {}
        reader.relation(Relation(label=r["label"] or r["rt"], source_id=str(r["s"]),
                                 target_id=str(r["t"]), properties=props))


# ====================================================================== kgpath -> store
def _entity_names(graph: KnowledgeGraph) -> dict[str, str]:
    """Map kgpath id -> LlamaIndex entity name: the node name when unique, else the id."""
    counts: dict[str, int] = {}
    for n in graph.nodes:
        key = n.name.replace('"', " ")
        counts[key] = counts.get(key, 0) + 1
    names: dict[str, str] = {}
    used: dict[str, str] = {}
    for n in graph.nodes:
        cand = n.name if counts[n.name.replace('"', " ")] == 1 else n.id
        if cand.replace('"', " ") in used:
            cand = f"{n.name} [{n.id}]"
        key = cand.replace('"', " ")
        if key in used:
            raise GraphError(
                f"cannot give node {n.id!r} a unique LlamaIndex entity name ({cand!r} is taken "
                f"by {used[key]!r})"
            )
        used[key] = n.id
        names[n.id] = cand
    return names


def knowledge_graph_to_property_graph_store(
    graph: KnowledgeGraph,
    store: PropertyGraphStore | None = None,
    *,
    embeddings: bool = False,
    show_progress: bool = False,
) -> PropertyGraphStore:
    """Write a kgpath graph into a ``PropertyGraphStore`` (a new ``SimplePropertyGraphStore``).

    ``embeddings=True`` stores the graph's node embeddings on the entities (they must exist).
    Property conventions are listed in the module docstring.
    """
    if store is None:
        from llama_index.core.graph_stores import SimplePropertyGraphStore

        store = SimplePropertyGraphStore()
    emb = graph.embeddings if embeddings else None
    names = _entity_names(graph)
    chunks = [ChunkNode(text=p.text, id_=p.id, properties=dict(p.metadata))
              for p in graph.passages.values()]
    entities = []
    for i, n in enumerate(_progress(graph.nodes, show_progress, "entities")):
        props: dict[str, Any] = dict(n.metadata)
        props["kgpath_id"] = n.id
        if names[n.id] != n.name:
            props["kgpath_name"] = n.name
        if n.text:
            props["description"] = n.text
        if n.provenance:
            props["kgpath_provenance"] = list(n.provenance)
            props[TRIPLET_SOURCE_KEY] = n.provenance[0]
        entities.append(EntityNode(
            name=names[n.id], label=n.type or "entity", properties=props,
            embedding=None if emb is None else emb[i].tolist(),
        ))
    relations = []
    for e in _progress(graph.edges, show_progress, "relations"):
        props = dict(e.metadata)
        props["weight"] = e.weight
        if e.text:
            props["description"] = e.text
        if e.type is not None:
            props["kgpath_type"] = e.type
        if e.provenance:
            props["kgpath_provenance"] = list(e.provenance)
            props[TRIPLET_SOURCE_KEY] = e.provenance[0]
        relations.append(Relation(
            label=e.relation, source_id=names[e.source].replace('"', " "),
            target_id=names[e.target].replace('"', " "), properties=props,
        ))
    if chunks:
        store.upsert_nodes(chunks)
    store.upsert_nodes(entities)
    store.upsert_relations(relations)
    logger.info("wrote %d entities, %d relations, %d chunks", len(entities), len(relations),
                len(chunks))
    return store
