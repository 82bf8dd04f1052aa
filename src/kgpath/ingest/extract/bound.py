"""Pattern step 1, *bounded by the schema*: typed extractions become graph nodes and edges.

:func:`assemble_graph` checks every entity and triple against the (possibly evolved) schema -
known types, relation allowed between these head/tail types, attributes allowed on the
entity type. Accepted items become nodes/edges that store their canonical ``schema_type``
(``Node.type``/``Edge.type`` and ``metadata["schema_type"]``) and their provenance passage
ids; rejected ones are returned with the reason. :func:`implicit_proposals` turns uses of
unknown type names into evolution votes (step 2).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kgpath.graph import KnowledgeGraph
from kgpath.ingest.extract.records import (
    ExtractionResult,
    Rejection,
    TypedEntity,
    TypedTriple,
    _node_key,
)
from kgpath.ingest.schema import Schema, TypeProposal

__all__ = ["assemble_graph", "implicit_proposals"]


def assemble_graph(
    schema: Schema,
    entities: Iterable[TypedEntity],
    triples: Iterable[TypedTriple],
    *,
    passages: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    graph: KnowledgeGraph | None = None,
    strict: bool = True,
) -> ExtractionResult:
    """Bound extracted items by ``schema`` and build (or extend) a graph.

    Rules:

    * an entity is admitted when its type resolves to a schema entity type; attributes are
      kept only if the schema allows them on that type (others are rejected one by one);
    * a triple is admitted when :meth:`Schema.check_triple` accepts
      ``(head_type, relation, tail_type)``; its end nodes are created if needed;
    * nodes are identified by name, case- and space-insensitively; the first admitted type of
      a name wins and later conflicting types are listed in ``trace["type_conflicts"]``
      (their triples are still admitted: each triple was checked with its own types);
    * provenance: a node cites every passage that mentions it, an edge every passage that
      states it; duplicates merge (see :meth:`KnowledgeGraph.add_edge`).

    With ``strict=False`` off-schema items are kept with ``schema_type=None`` and the reason
    in ``metadata["off_schema"]`` instead of being rejected.
    """
    asm = _Assembly(schema, graph if graph is not None else KnowledgeGraph(), strict)
    asm.add_passages(passages)
    for e in entities:
        asm.add_entity(e)
    for tr in triples:
        asm.add_triple(tr)
    return asm.finish()


class _Assembly:
    """State of one :func:`assemble_graph` call: node records by name key, then the graph."""

    def __init__(self, schema: Schema, graph: KnowledgeGraph, strict: bool) -> None:
        self.schema, self.g, self.strict = schema, graph, strict
        self.by_key: dict[str, str] = {_node_key(n.name): n.id for n in graph.nodes}
        self.info: dict[str, dict[str, Any]] = {
            n.id: {
                "name": n.name, "text": n.text, "type": n.type,
                "schema_type": n.metadata.get("schema_type", n.type),
                "attributes": dict(n.metadata.get("attributes") or {}),
                "metadata": dict(n.metadata), "provenance": list(n.provenance),
                "cited": set(n.provenance), "existing": True,
            }
            for n in graph.nodes
        }
        self.rejected: list[Rejection] = []
        self.conflicts: list[dict[str, Any]] = []
        self.accepted: dict[str, TypedEntity] = {}
        self.edges: list[tuple[TypedTriple, str | None]] = []

    def add_passages(
        self, passages: Mapping[str, str] | Iterable[tuple[str, str]] | None
    ) -> None:
        """Add the passages the graph does not hold yet."""
        if passages is None:
            return
        items = passages.items() if isinstance(passages, Mapping) else passages
        for pid, text in items:
            if pid not in self.g.passages:
                self.g.add_passage(pid, text)

    def touch(self, name: str, typ: str | None, off: str | None, source: str,
              desc: str = "") -> str:
        """The node id for ``name`` (created if new); records type, text and provenance."""
        key = _node_key(name)
        nid = self.by_key.get(key)
        if nid is None:
            nid = name.strip()
            self.by_key[key] = nid
            meta: dict[str, Any] = {"schema_type": typ}
            if off:
                meta["off_schema"] = off
            self.info[nid] = {
                "name": nid, "text": desc, "type": typ, "schema_type": typ, "attributes": {},
                "metadata": meta, "provenance": [], "cited": set(), "existing": False,
            }
        rec = self.info[nid]
        if rec["schema_type"] is None and typ is not None and not off:
            rec["schema_type"] = rec["type"] = typ
            rec["metadata"]["schema_type"] = typ
            rec["metadata"].pop("off_schema", None)
        elif typ is not None and rec["schema_type"] not in (None, typ):
            self.conflicts.append({"node": nid, "kept": rec["schema_type"], "ignored": typ,
                                   "source": source})
        if desc and not rec["text"]:
            rec["text"] = desc
        if source and source not in rec["cited"]:  # a set: linear in the mentions
            rec["provenance"].append(source)
            rec["cited"].add(source)
        return nid

    def add_entity(self, e: TypedEntity) -> None:
        """Admit an entity whose type is in the schema (or keep it off-schema if not strict)."""
        if not e.name.strip():
            self.rejected.append(Rejection(e, "entity has an empty name"))
            return
        t = self.schema.resolve("entity", e.type)
        if t is None:
            reason = f"entity type {e.type!r} is not in the schema"
            if self.strict:
                self.rejected.append(Rejection(e, reason))
                return
            nid = self.touch(e.name, e.type or None, reason, e.source, e.description)
        else:
            nid = self.touch(e.name, t, None, e.source, e.description)
        self._add_attributes(nid, e)
        rec = self.info[nid]
        self.accepted.setdefault(nid, TypedEntity(
            name=nid, type=rec["schema_type"] or e.type, description=rec["text"],
            attributes=rec["attributes"], source=e.source,
        ))

    def _add_attributes(self, nid: str, e: TypedEntity) -> None:
        """Keep the attributes the schema allows on the node's type (others rejected)."""
        node_type = self.info[nid]["schema_type"]
        for attr, value in dict(e.attributes).items():
            canon = self.schema.attribute_allowed(node_type, attr) if node_type else None
            if canon is None:
                reason = f"attribute {attr!r} is not allowed on type {node_type!r}"
                if self.strict:
                    self.rejected.append(Rejection((nid, str(attr), value), reason))
                    continue
                canon = str(attr)
            self.info[nid]["attributes"][canon] = value

    def add_triple(self, tr: TypedTriple) -> None:
        """Admit a triple :meth:`Schema.check_triple` accepts (off-schema if not strict)."""
        if not tr.head.strip() or not tr.tail.strip():
            self.rejected.append(Rejection(tr, "triple has an empty head or tail"))
            return
        if _node_key(tr.head) == _node_key(tr.tail):
            self.rejected.append(Rejection(tr, "self-referencing triple"))
            return
        checked, reason = self.schema.check_triple(tr.head_type, tr.relation, tr.tail_type)
        if checked is None:
            if self.strict:
                self.rejected.append(Rejection(tr, reason))
                return
            h = self.touch(tr.head, self.schema.resolve("entity", tr.head_type), None, tr.source)
            t = self.touch(tr.tail, self.schema.resolve("entity", tr.tail_type), None, tr.source)
            self.edges.append((TypedTriple(
                head=h, head_type=tr.head_type, relation=tr.relation.strip(), tail=t,
                tail_type=tr.tail_type, source=tr.source, confidence=tr.confidence,
                properties=tr.properties,
            ), reason))
            return
        ht, rel, tt = checked
        h = self.touch(tr.head, ht, None, tr.source)
        t = self.touch(tr.tail, tt, None, tr.source)
        self.edges.append((TypedTriple(
            head=h, head_type=ht, relation=rel, tail=t, tail_type=tt, source=tr.source,
            confidence=tr.confidence, properties=tr.properties,
        ), None))

    def _write_nodes(self) -> None:
        for nid, rec in self.info.items():
            meta = dict(rec["metadata"])
            if rec["attributes"]:
                meta["attributes"] = dict(rec["attributes"])
            self.g.add_node(
                nid, name=rec["name"], text=rec["text"], type=rec["type"], metadata=meta,
                provenance=tuple(rec["provenance"]),
            )

    def _write_edges(self) -> list[TypedTriple]:
        """Write each distinct edge once, its duplicates merged as ``add_edge`` merges them.

        One ``add_edge`` per triple re-wrote the growing provenance: quadratic.
        """
        g = self.g
        merged: dict[tuple[str, str, str], list[Any]] = {}
        for tr, off in self.edges:
            meta = {"schema_type": None if off else tr.relation, "confidence": tr.confidence,
                    **dict(tr.properties)}
            if off:
                meta["off_schema"] = off
            kind = None if off else tr.relation
            prov = {tr.source: None} if tr.source else {}
            got = merged.get((tr.head, tr.tail, tr.relation))
            if got is None:
                merged[(tr.head, tr.tail, tr.relation)] = [kind, prov, meta]
            else:
                got[0] = got[0] or kind
                got[1].update(prov)
                got[2].update(meta)
        for (h, t, rel), (kind, prov, meta) in merged.items():
            g.add_edge(h, t, relation=rel, text=f"{g.node(h).name} {rel} {g.node(t).name}",
                       type=kind, provenance=tuple(prov), metadata=meta)
        return [tr for tr, _ in self.edges]

    def finish(self) -> ExtractionResult:
        """Write nodes then edges into the graph and report what was kept and rejected."""
        self._write_nodes()
        kept = self._write_edges()
        for nid, rec in self.info.items():
            if nid not in self.accepted and not rec["existing"]:
                self.accepted[nid] = TypedEntity(
                    name=nid, type=rec["schema_type"] or "", description=rec["text"],
                    attributes=rec["attributes"],
                    source=rec["provenance"][0] if rec["provenance"] else "",
                )
        return ExtractionResult(
            graph=self.g, schema=self.schema, triples=tuple(kept),
            entities=tuple(self.accepted.values()), rejected=tuple(self.rejected),
            trace={
                "accepted_triples": len(kept),
                "rejected": len(self.rejected),
                "type_conflicts": self.conflicts,
                "strict": self.strict,
                "schema_version": self.schema.version,
            },
        )


def implicit_proposals(
    schema: Schema, entities: Iterable[TypedEntity], triples: Iterable[TypedTriple]
) -> list[TypeProposal]:
    """One vote per use of an unknown type name (entity type or relation) in extractor output.

    A relation vote carries the triple's head/tail types so that, if adopted, the relation is
    bounded by the types it was actually seen with. Confidence is the triple's confidence
    (1.0 for entities, which carry none).
    """
    out: list[TypeProposal] = []
    for e in entities:
        if e.type.strip() and schema.resolve("entity", e.type) is None:
            out.append(TypeProposal(kind="entity", name=e.type, source=e.source))
    for t in triples:
        for typ in (t.head_type, t.tail_type):
            if typ.strip() and schema.resolve("entity", typ) is None:
                out.append(TypeProposal(kind="entity", name=typ, confidence=t.confidence,
                                        source=t.source))
        if t.relation.strip() and schema.resolve("relation", t.relation) is None:
            if t.head_type.strip() and t.tail_type.strip():
                out.append(TypeProposal(
                    kind="relation", name=t.relation, confidence=t.confidence, source=t.source,
                    head=(t.head_type,), tail=(t.tail_type,),
                ))
    return out

