"""LlamaIndex's property-graph conventions, read and written by attribute (no store I/O).

:class:`PropertyGraphReader` accumulates a store's entities, relations and chunks and
builds the :class:`~kgpath.KnowledgeGraph`; :func:`entity_names`,
:func:`entity_properties` and :func:`relation_properties` give a kgpath node or edge its
name and properties in a store. :mod:`.pg_store` (any ``PropertyGraphStore``) and
:mod:`.falkordb_store` do the I/O with them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from llama_index.core.graph_stores.types import TRIPLET_SOURCE_KEY

from kgpath.errors import GraphError
from kgpath.graph import KnowledgeGraph

__all__ = [
    "PASSAGE_PREFIX",
    "PropertyGraphReader",
    "chunk_ids",
    "entity_names",
    "entity_properties",
    "relation_properties",
]

#: Prefix of a chunk's store id when its passage id is also an entity id (HotpotQA passages
#: are named after the page's entity): the store keeps both; ``kgpath_id`` names the passage.
PASSAGE_PREFIX = "passage:"

logger = logging.getLogger(__name__)

_RESERVED = frozenset({"kgpath_id", "kgpath_name", "kgpath_provenance", "kgpath_type",
                       "description", TRIPLET_SOURCE_KEY})
_NO_TYPE = ("entity", "Entity")


def _props(p: Mapping[str, Any], drop: Iterable[str] = ()) -> dict[str, Any]:
    skip = _RESERVED | set(drop)
    return {k: v for k, v in p.items() if k not in skip and v is not None}


def _prov_from(p: Mapping[str, Any]) -> list[str]:
    prov = p.get("kgpath_provenance")
    if isinstance(prov, (list, tuple)):
        return [str(x) for x in prov]
    src = p.get(TRIPLET_SOURCE_KEY)
    return [str(src)] if src else []


class PropertyGraphReader:
    """Accumulates a property graph's entities, relations and chunks, then builds the graph.

    Conventions: an entity's ``kgpath_id``/``kgpath_name`` properties (else its id/name),
    ``description`` or ``text`` as node text, label ``entity`` for no type,
    ``kgpath_provenance`` (else ``triplet_source_id``, its relations' sources and the
    chunks that mention it) as provenance; relations' ``weight``, ``description`` and
    ``kgpath_type``. A relation touching a chunk is a mention.
    """

    def __init__(self) -> None:
        self.entities: list[tuple[str, str, str, str | None, dict[str, Any], list[str]]] = []
        self.exact_prov: set[str] = set()  # written by kgpath: provenance is complete
        self.embeddings: dict[str, Sequence[float]] = {}
        self.alias: dict[str, str] = {}  # store entity id -> kgpath id
        self.chunks: dict[str, tuple[str, dict[str, Any]]] = {}
        self.passage_of: dict[str, str] = {}  # store chunk id -> kgpath passage id
        self.edges: list[tuple[str, str, str, str, str | None, float, list[str],
                               dict[str, Any]]] = []
        self.mentions: list[tuple[str, str]] = []  # (chunk id, entity alias)

    def chunk(self, store_id: str, text: str, properties: Mapping[str, Any]) -> None:
        """Add one chunk (its passage id is its ``kgpath_id`` property, else its id)."""
        meta = {k: v for k, v in properties.items()
                if not str(k).startswith("_") and v is not None}
        pid = str(meta.pop("kgpath_id", None) or store_id)
        self.chunks[store_id] = (text, meta)
        if pid != store_id:
            self.passage_of[store_id] = pid

    def _pid(self, ref: str) -> str:
        return self.passage_of.get(ref, ref)

    def entity(self, alias: str, name: str | None, label: str | None,
               properties: Mapping[str, Any], embedding: Sequence[float] | None = None) -> None:
        """Add one entity (``alias``: the store's id for it)."""
        p = dict(properties)
        kid = str(p.get("kgpath_id") or alias)
        name = str(p.get("kgpath_name") or name or kid)
        text = p.get("description") or p.get("text") or ""
        typ = None if label in _NO_TYPE or not label else str(label)
        self.alias[alias] = kid
        self.alias.setdefault(kid, kid)
        if isinstance(p.get("kgpath_provenance"), (list, tuple)):
            self.exact_prov.add(kid)
        self.entities.append((kid, name, str(text), typ, _props(p), _prov_from(p)))
        if embedding is not None:
            self.embeddings[kid] = embedding

    def relation(self, source: str, target: str, label: str,
                 properties: Mapping[str, Any]) -> None:
        """Add one relation (a mention when one end is a chunk already read)."""
        s, t = str(source), str(target)
        if s in self.chunks and t not in self.chunks:
            self.mentions.append((s, t))
            return
        if t in self.chunks:
            self.mentions.append((t, s))
            return
        p = dict(properties)
        w = p.get("weight", 1.0)
        self.edges.append((s, t, str(label), str(p.get("description") or ""),
                           p.get("kgpath_type"), 1.0 if w is None else float(w),
                           _prov_from(p), _props(p, ("weight",))))

    def _extra_provenance(self) -> dict[str, list[str]]:
        extra: dict[str, list[str]] = {}
        for cid, alias in self.mentions:
            extra.setdefault(self.alias.get(alias, alias), []).append(self._pid(cid))
        # LlamaIndex keeps one source chunk per entity (the last one seen); the chunks of its
        # relations are sources too, as in KnowledgeGraph.from_triples
        for s, t, *_rest, prov, _meta in self.edges:
            for end in (s, t):
                kid = self.alias.get(end)
                if kid is not None and kid not in self.exact_prov:
                    extra.setdefault(kid, []).extend(self._pid(x) for x in prov)
        return extra

    def build(self, *, include_chunks: bool, embeddings: bool) -> KnowledgeGraph:
        """The graph, in read order (``embeddings``: use the stored ones, all required)."""
        g = KnowledgeGraph()
        if include_chunks:
            for cid, (text, meta) in self.chunks.items():
                g.add_passage(self._pid(cid), text, meta)
        extra = self._extra_provenance()
        for kid, name, text, typ, meta, prov in self.entities:
            prov = [self._pid(x) for x in prov]
            merged = list(dict.fromkeys(prov + extra.get(kid, []))) if include_chunks else []
            g.add_node(kid, name=name, text=text, type=typ, metadata=meta, provenance=merged)
        dangling = 0
        for s, t, rel, text, typ, w, prov, meta in self.edges:
            src, dst = self.alias.get(s), self.alias.get(t)
            if src is None or dst is None:
                dangling += 1
                continue
            g.add_edge(src, dst, relation=rel, text=text, type=typ, weight=w,
                       provenance=[self._pid(x) for x in prov] if include_chunks else (),
                       metadata=meta)
        if dangling:
            logger.warning("skipped %d relation(s) whose end is not an entity of the store",
                           dangling)
        if embeddings and self.embeddings:
            if len(self.embeddings) != len(g):
                raise GraphError(
                    f"only {len(self.embeddings)} of {len(g)} entities carry an embedding; "
                    "pass embeddings=False to let kgpath embed the nodes")
            g.vectors.set(self.embeddings)
        return g


def entity_names(graph: KnowledgeGraph) -> dict[str, str]:
    """Map kgpath id -> property-graph entity name: the node name when unique, else the id.

    Names are unique after LlamaIndex's id rule (``"`` read as a space).
    """
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
            raise GraphError(f"cannot give node {n.id!r} a unique LlamaIndex entity name "
                             f"({cand!r} is taken by {used[key]!r})")
        used[key] = n.id
        names[n.id] = cand
    return names


def chunk_ids(graph: KnowledgeGraph, names: Mapping[str, str]) -> dict[str, str]:
    """Map passage id -> store chunk id, so that no entity overwrites a chunk.

    The passage id, or :data:`PASSAGE_PREFIX` + it (repeated until free) when an entity
    has that id in the store (``names``: from :func:`entity_names`).
    """
    taken = {v.replace('"', " ") for v in names.values()}
    out: dict[str, str] = {}
    for pid in graph.passages:
        sid = pid
        while sid in taken:
            sid = PASSAGE_PREFIX + sid
        out[pid] = sid
    return out


def _with_provenance(props: dict[str, Any], text: str, provenance: Sequence[str],
                     chunks: Mapping[str, str] | None = None) -> dict[str, Any]:
    if text:
        props["description"] = text
    if provenance:
        props["kgpath_provenance"] = list(provenance)
        first = provenance[0]
        props[TRIPLET_SOURCE_KEY] = (chunks or {}).get(first, first)  # the store's chunk id
    return props


def entity_properties(node: Any, name: str, chunks: Mapping[str, str] | None = None
                      ) -> dict[str, Any]:
    """A kgpath node's property-graph properties.

    ``name``: its entity name there; ``chunks``: passage id -> store chunk id
    (:func:`chunk_ids`).
    """
    props: dict[str, Any] = {**node.metadata, "kgpath_id": node.id}
    if name != node.name:
        props["kgpath_name"] = node.name
    return _with_provenance(props, node.text, node.provenance, chunks)


def relation_properties(edge: Any, chunks: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A kgpath edge's property-graph properties (``chunks`` as :func:`entity_properties`)."""
    props: dict[str, Any] = {**edge.metadata, "weight": edge.weight}
    props = _with_provenance(props, edge.text, ())
    if edge.type is not None:
        props["kgpath_type"] = edge.type
    return _with_provenance(props, "", edge.provenance, chunks)
