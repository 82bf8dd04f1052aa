"""Where kgpath's node, edge and passage fields live in a Cypher database, and back.

:class:`CypherSchema` names the label, relationship types and properties (all validated
identifiers, :mod:`~kgpath.backends.cypher.identifiers`); the functions below turn database
rows into kgpath records (:class:`~kgpath.graph.Node`, :class:`~kgpath.graph.Edge`,
:class:`~kgpath.graph.Passage`) and list the row keys :func:`load_graph` writes.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kgpath.backends.cypher.identifiers import quote_identifier
from kgpath.errors import ConfigError
from kgpath.graph import Edge, Node, Passage

if TYPE_CHECKING:
    from kgpath.backends.cypher.dialects import CypherDialect

__all__ = [
    "CypherSchema",
    "node_props",
    "edge_props",
    "node_from_row",
    "edge_from_row",
    "passage_from_row",
]


@dataclass(frozen=True, kw_only=True)
class CypherSchema:
    """Where kgpath's node and edge fields live in the database.

    Every ``*_property`` may be ``None`` when the database has no such property (the field
    then takes its default: empty text, no type, no metadata, ...). The defaults are what
    :func:`load_graph` writes. :meth:`llama_index_ladybug` describes the tables of
    ``llama-index-graph-stores-ladybug`` (unstructured mode).

    Attributes
    ----------
    node_label, rel_types
        Node label (Kùzu/Ladybug: node table) and relationship types followed by PCR.
    order_property, edge_order_property
        Integer node / edge order used for tie-breaking (module docstring); ``None`` falls
        back to node id / ``(relation type, relation, text, source id, target id)``.
    name_key_property
        Pre-normalised name (lower case, single spaces) for anchor lookup by name; ``None``
        compares ``lower(trim(name))`` instead (runs of inner spaces then must match).
    metadata_property, provenance_property, edge_*_property
        JSON text (metadata as an object, provenance as a list); a plain string provenance
        value is read as one passage id.
    passage_order_property, passage_entities_property, passage_embedding_property
        A passage's position in the graph, the ids of the nodes citing it (JSON list, node
        order) and its vector: what passage-level methods (graph-augmented retrieval) read
        in the database.
    entity_key_property
        :func:`~kgpath.ingest.extraction.entity_key` of the node's name: the key the
        entity linker matches question spans with.
    key_property
        A lookup key derived from the id, for engines whose index cannot hold every id
        (FalkorDB: keys over 4,096 bytes, keys ending in whitespace). Written and indexed by
        :func:`load_graph` on such engines, ignored by the others; set it to ``None`` to
        read a FalkorDB graph kgpath did not write (lookups then compare the id itself).
    """

    node_label: str = "KgNode"
    rel_types: tuple[str, ...] = ("KG_EDGE",)
    id_property: str = "id"
    key_property: str | None = "id_key"
    name_property: str | None = "name"
    name_key_property: str | None = "name_key"
    text_property: str | None = "text"
    type_property: str | None = "type"
    metadata_property: str | None = "metadata"
    provenance_property: str | None = "provenance"
    embedding_property: str | None = "embedding"
    order_property: str | None = "idx"
    relation_property: str | None = "relation"
    edge_text_property: str | None = "text"
    edge_type_property: str | None = "type"
    edge_weight_property: str | None = "weight"
    edge_provenance_property: str | None = "provenance"
    edge_metadata_property: str | None = "metadata"
    edge_order_property: str | None = "rank"
    passage_label: str | None = "KgPassage"
    passage_id_property: str = "id"
    passage_text_property: str = "text"
    passage_metadata_property: str | None = "metadata"
    passage_order_property: str | None = "idx"
    passage_entities_property: str | None = "entities"
    passage_embedding_property: str | None = "embedding"
    entity_key_property: str | None = "entity_key"

    def __post_init__(self) -> None:
        if isinstance(self.rel_types, str):
            object.__setattr__(self, "rel_types", (self.rel_types,))
        if not self.rel_types:
            raise ConfigError("rel_types must name at least one relationship type, got ()")
        quote_identifier(self.node_label, "node_label")
        if self.passage_label is not None:
            quote_identifier(self.passage_label, "passage_label")
        for r in self.rel_types:
            quote_identifier(r, "relationship type")
        for f in dataclasses.fields(self):
            if f.name.endswith("_property"):
                value = getattr(self, f.name)
                if f.name == "id_property" or value is not None:
                    quote_identifier(value, f.name)

    @classmethod
    def llama_index_ladybug(cls) -> CypherSchema:
        """Tables of ``LadybugPropertyGraphStore`` / ``KuzuPropertyGraphStore`` (unstructured).

        Entities live in ``Entity(id, name, label, triplet_source_id, ...)`` and relations in
        ``LINKS(label, triplet_source_id)``. There is no text, embedding or order column, so
        nodes are embedded from their names and ties break by id.
        """
        return cls(
            node_label="Entity",
            rel_types=("LINKS",),
            name_key_property=None,
            text_property=None,
            type_property="label",
            metadata_property=None,
            provenance_property="triplet_source_id",
            embedding_property=None,
            order_property=None,
            relation_property="label",
            edge_text_property=None,
            edge_type_property=None,
            edge_weight_property=None,
            edge_provenance_property="triplet_source_id",
            edge_metadata_property=None,
            edge_order_property=None,
            passage_label=None,
            key_property=None,
            entity_key_property=None,
        )

    def for_tenant(self, tenant: str) -> CypherSchema:
        """Labels of ``tenant``'s own: ``KgNode_<tenant>``, ``KgPassage_<tenant>``.

        Every query kgpath sends matches nodes and passages by label, so tenants sharing
        one database (one FalkorDB graph) never see, traverse or score each other's nodes,
        edges or passages: the separation is in the query text, not in a filter a caller
        could forget. An entity two tenants mention is a node in each (as
        ``GraphIndex.for_namespace``). Load and update each tenant with its schema
        (``DatabaseIndex(index, driver, schema=CypherSchema().for_tenant("acme"))``).

        Raises
        ------
        ConfigError
            For a tenant name that is not ``[A-Za-z0-9_]+``.

        Examples
        --------
        >>> CypherSchema().for_tenant("acme").node_label
        'KgNode_acme'
        """
        if not isinstance(tenant, str) or not tenant or not all(
                c.isascii() and (c.isalnum() or c == "_") for c in tenant):
            raise ConfigError(f"a tenant name must match [A-Za-z0-9_]+, got {tenant!r}")
        passage = None if self.passage_label is None else f"{self.passage_label}_{tenant}"
        return dataclasses.replace(self, node_label=f"{self.node_label}_{tenant}",
                                   passage_label=passage)

    # -- query fragments (all identifiers validated in __post_init__)
    @property
    def n(self) -> str:
        """Quoted node label."""
        return quote_identifier(self.node_label)

    @property
    def rels(self) -> str:
        """Quoted relationship type disjunction, e.g. ``KG_EDGE`` or ``A`|`B``."""
        return "|".join(quote_identifier(r) for r in self.rel_types)

    def prop(self, var: str, name: str | None) -> str:
        """``var.`name```."""
        return f"{var}.{quote_identifier(name)}"

    def node_return(self, var: str, *, embedding: bool = True) -> str:
        """RETURN items for a node variable, aliased to kgpath field names."""
        items = [f"{self.prop(var, self.id_property)} AS id"]
        for alias, p in (
            ("name", self.name_property),
            ("text", self.text_property),
            ("type", self.type_property),
            ("metadata", self.metadata_property),
            ("provenance", self.provenance_property),
            ("ord", self.order_property),
        ):
            if p is not None:
                items.append(f"{self.prop(var, p)} AS {alias}")
        if embedding and self.embedding_property is not None:
            items.append(f"{self.prop(var, self.embedding_property)} AS embedding")
        return ", ".join(items)

    def edge_return(self, var: str, dialect: CypherDialect) -> str:
        """RETURN items for a relationship variable."""
        items = [f"{dialect.rel_type_function}({var}) AS rel_type"]
        for alias, p in (
            ("relation", self.relation_property),
            ("etext", self.edge_text_property),
            ("etype", self.edge_type_property),
            ("weight", self.edge_weight_property),
            ("eprov", self.edge_provenance_property),
            ("emeta", self.edge_metadata_property),
            ("rank", self.edge_order_property),
        ):
            if p is not None:
                items.append(f"{self.prop(var, p)} AS {alias}")
        return ", ".join(items)

    def passage_return(self, var: str) -> str:
        """RETURN items for a passage node variable (``id``, ``text``, ``metadata``)."""
        items = [f"{self.prop(var, self.passage_id_property)} AS id",
                 f"{self.prop(var, self.passage_text_property)} AS text"]
        if self.passage_metadata_property is not None:
            items.append(f"{self.prop(var, self.passage_metadata_property)} AS metadata")
        return ", ".join(items)

    def passage_full_return(self, var: str) -> str:
        """:meth:`passage_return` plus ``ord``, ``entities`` and ``embedding`` (when set)."""
        items = [self.passage_return(var)]
        for alias, p in (("ord", self.passage_order_property),
                         ("entities", self.passage_entities_property),
                         ("embedding", self.passage_embedding_property)):
            if p is not None:
                items.append(f"{self.prop(var, p)} AS {alias}")
        return ", ".join(items)


def node_props(s: CypherSchema) -> list[tuple[str, str]]:
    """(row key, property) pairs written by :func:`load_graph`, id first."""
    pairs = [("id", s.id_property)]
    for key, p in (
        ("name", s.name_property),
        ("name_key", s.name_key_property),
        ("text", s.text_property),
        ("type", s.type_property),
        ("metadata", s.metadata_property),
        ("provenance", s.provenance_property),
        ("embedding", s.embedding_property),
        ("ord", s.order_property),
        ("entity_key", s.entity_key_property),
    ):
        if p is not None:
            pairs.append((key, p))
    return pairs


def edge_props(s: CypherSchema) -> list[tuple[str, str]]:
    """(row key, property) pairs of edges; the first two are the endpoints."""
    pairs = [("source", "source"), ("target", "target")]
    for key, p in (
        ("relation", s.relation_property),
        ("etext", s.edge_text_property),
        ("etype", s.edge_type_property),
        ("weight", s.edge_weight_property),
        ("eprov", s.edge_provenance_property),
        ("emeta", s.edge_metadata_property),
        ("rank", s.edge_order_property),
    ):
        if p is not None:
            pairs.append((key, p))
    return pairs


def passage_props(s: CypherSchema) -> list[tuple[str, str]]:
    """(row key, property) pairs of passages, id first (empty without ``passage_label``)."""
    if s.passage_label is None:
        return []
    pairs = [("id", s.passage_id_property), ("text", s.passage_text_property)]
    for key, p in (("metadata", s.passage_metadata_property),
                   ("ord", s.passage_order_property),
                   ("entities", s.passage_entities_property),
                   ("embedding", s.passage_embedding_property)):
        if p is not None:
            pairs.append((key, p))
    return pairs


def _json_or(value: Any, default: Any) -> Any:
    if value is None or value == "":
        return default
    if isinstance(value, (list, dict)):
        return value
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return [value] if isinstance(default, list) else default
    return default


def _provenance(value: Any) -> tuple[str, ...]:
    v = _json_or(value, [])
    if isinstance(v, str):
        return (v,)
    if isinstance(v, list):
        return tuple(str(x) for x in v)
    return (str(v),)


def _mapping(value: Any) -> dict[str, Any]:
    meta = _json_or(value, {})
    return meta if isinstance(meta, dict) else {"metadata": meta}


def node_from_row(r: Mapping[str, Any]) -> Node:
    """A :class:`Node` from a row of :meth:`CypherSchema.node_return`."""
    return Node(
        id=r["id"],
        name=str(r["name"]) if r.get("name") is not None else str(r["id"]),
        text=r.get("text") or "",
        type=r.get("type"),
        metadata=_mapping(r.get("metadata")),
        provenance=_provenance(r.get("provenance")),
    )


def edge_from_row(source: str, target: str, r: Mapping[str, Any]) -> Edge:
    """An :class:`Edge` from a row of :meth:`CypherSchema.edge_return`."""
    relation = r.get("relation") if "relation" in r else r.get("rel_type")
    w = r.get("weight")
    return Edge(
        source=source,
        target=target,
        relation=relation or "",
        text=r.get("etext") or "",
        type=r.get("etype"),
        weight=1.0 if w is None else float(w),
        provenance=_provenance(r.get("eprov")),
        metadata=_mapping(r.get("emeta")),
    )


def passage_from_row(r: Mapping[str, Any]) -> Passage:
    """A :class:`Passage` from a row of :meth:`CypherSchema.passage_return`."""
    return Passage(str(r["id"]), r.get("text") or "", _mapping(r.get("metadata")))
