"""A domain schema: entity, relation and attribute types, with validation and evolution.

Reference: N. Balic, "Schema-Guided Graph Retrieval for Multi-Hop Reasoning", Awesome
Agentic Patterns, 2026 (shared/papers/schema-guided-graph-retrieval-pattern.txt).

The pattern's central move is that *one* schema steers every stage: it bounds extraction
(:mod:`kgpath.build.extract`), it is shown to the question decomposer, and its type names are
what typed retrieval filters or boosts on (:mod:`kgpath.methods.schema`). The pattern gives no
equations; this module fixes the data model and two rules it leaves open:

* **Type resolution.** A type is referred to by its name or one of its aliases, compared
  case-insensitively with runs of white space, ``_`` and ``-`` collapsed (``"Nobel prize"``,
  ``"nobel_prize"`` and ``"NOBEL-PRIZE"`` are the same key). Aliases double as the cue words
  the LLM-free decomposer looks for in a question.
* **Evolution** (solution step 2 and guidance item 6: "strict thresholds"). Proposed new types
  are grouped by ``(kind, key)``; a group's *support* is the number of distinct sources
  (passages) that proposed it and its *confidence* the mean of the proposers' confidences. A
  group is adopted only when ``support >= min_support`` **and** ``confidence >=
  min_confidence``; every decision, adopted or rejected, is appended to :attr:`Schema.history`
  with its reason. Evolution is off unless a policy is passed.

Persistence is JSON with a format version (YAML when the file name ends in ``.yaml``/``.yml``
and PyYAML is installed: ``pip install 'kgpath[yaml]'``), written atomically.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from kgpath.errors import ConfigError, PersistenceError, require

__all__ = [
    "SCHEMA_FORMAT_VERSION",
    "AggregatedProposal",
    "AttributeType",
    "EntityType",
    "EvolutionPolicy",
    "EvolutionResult",
    "RelationType",
    "Schema",
    "SchemaChange",
    "SchemaError",
    "SchemaWarning",
    "TypeKind",
    "TypeProposal",
    "aggregate_proposals",
    "evolve_schema",
    "type_key",
]

logger = logging.getLogger("kgpath.schema")

#: Version of the schema file format written by :meth:`Schema.save`.
SCHEMA_FORMAT_VERSION = 1

TypeKind = Literal["entity", "relation", "attribute"]
_KINDS: tuple[TypeKind, ...] = ("entity", "relation", "attribute")
_SEP = re.compile(r"[\s_\-]+")


class SchemaError(ConfigError):
    """A schema is malformed: empty, a duplicate type, or a reference to an unknown type."""


class SchemaWarning(UserWarning):
    """Something was dropped because it is not in the schema (e.g. an LLM-invented type)."""


def type_key(name: str) -> str:
    """Normalised lookup key of a type name or alias (case, spaces, ``_``/``-`` folded)."""
    return _SEP.sub(" ", str(name).strip().lower()).strip()


def _name(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SchemaError(f"{what} must be a non-empty string, got {value!r}")
    return value.strip()


def _names(values: object, what: str) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, Iterable):
        raise SchemaError(f"{what} must be a string or a list of strings, got {values!r}")
    return tuple(dict.fromkeys(_name(v, what) for v in values))


# ---------------------------------------------------------------------- type records
@dataclass(frozen=True, kw_only=True)
class EntityType:
    """A node type, e.g. ``Person``.

    Attributes
    ----------
    name
        Canonical type name stored as a node's ``schema_type``.
    description
        One line shown to the LLM (extraction and decomposition prompts).
    aliases
        Other names for the type; also the cue words of the LLM-free decomposer.
    """

    name: str
    description: str = ""
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", _name(self.name, "entity type name"))
        object.__setattr__(self, "aliases", _names(self.aliases, f"alias of {self.name!r}"))
        object.__setattr__(self, "description", str(self.description or ""))


@dataclass(frozen=True, kw_only=True)
class RelationType:
    """An edge type with the entity types allowed at its head and tail.

    An empty ``head`` (or ``tail``) means *any* entity type is allowed there.
    """

    name: str
    head: tuple[str, ...] = ()
    tail: tuple[str, ...] = ()
    description: str = ""
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", _name(self.name, "relation type name"))
        object.__setattr__(self, "head", _names(self.head, f"head type of {self.name!r}"))
        object.__setattr__(self, "tail", _names(self.tail, f"tail type of {self.name!r}"))
        object.__setattr__(self, "aliases", _names(self.aliases, f"alias of {self.name!r}"))
        object.__setattr__(self, "description", str(self.description or ""))


@dataclass(frozen=True, kw_only=True)
class AttributeType:
    """A node attribute, e.g. ``year``, allowed on ``entities`` (empty = any entity type)."""

    name: str
    entities: tuple[str, ...] = ()
    description: str = ""
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", _name(self.name, "attribute type name"))
        object.__setattr__(
            self, "entities", _names(self.entities, f"entity type of attribute {self.name!r}")
        )
        object.__setattr__(self, "aliases", _names(self.aliases, f"alias of {self.name!r}"))
        object.__setattr__(self, "description", str(self.description or ""))


AnyType = EntityType | RelationType | AttributeType


@dataclass(frozen=True, kw_only=True)
class SchemaChange:
    """One evolution decision, kept forever in :attr:`Schema.history`."""

    action: Literal["adopted", "rejected"]
    kind: TypeKind
    name: str
    support: int
    confidence: float
    reason: str
    schema_version: int
    """Schema version after the evolution round that made this decision."""
    details: Mapping[str, Any] = field(default_factory=dict)
    timestamp: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record."""
        return {
            "action": self.action, "kind": self.kind, "name": self.name,
            "support": self.support, "confidence": self.confidence, "reason": self.reason,
            "schema_version": self.schema_version, "details": dict(self.details),
            "timestamp": self.timestamp,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SchemaChange:
        """Inverse of :meth:`to_dict`."""
        try:
            action = d["action"]
            kind = d["kind"]
            if action not in ("adopted", "rejected") or kind not in _KINDS:
                raise SchemaError(f"bad history record {dict(d)!r}")
            return cls(
                action=action, kind=kind, name=str(d["name"]), support=int(d["support"]),
                confidence=float(d["confidence"]), reason=str(d.get("reason", "")),
                schema_version=int(d["schema_version"]), details=dict(d.get("details") or {}),
                timestamp=str(d.get("timestamp", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SchemaError(f"bad history record {d!r}: {exc!r}") from exc


# ---------------------------------------------------------------------- schema
def _coerce_entity(v: object) -> EntityType:
    if isinstance(v, EntityType):
        return v
    if isinstance(v, str):
        return EntityType(name=v)
    if isinstance(v, Mapping):
        return EntityType(
            name=v.get("name"),  # type: ignore[arg-type]
            description=v.get("description", ""),
            aliases=v.get("aliases", ()),
        )
    raise SchemaError(f"cannot read an entity type from {v!r}")


def _coerce_relation(v: object) -> RelationType:
    if isinstance(v, RelationType):
        return v
    if isinstance(v, str):
        return RelationType(name=v)
    if isinstance(v, Mapping):
        return RelationType(
            name=v.get("name"),  # type: ignore[arg-type]
            head=v.get("head", ()),
            tail=v.get("tail", ()),
            description=v.get("description", ""),
            aliases=v.get("aliases", ()),
        )
    if isinstance(v, Sequence) and len(v) == 3:  # (head, relation, tail)
        return RelationType(name=v[1], head=v[0], tail=v[2])
    raise SchemaError(
        f"cannot read a relation type from {v!r}; use a name, a mapping or (head, name, tail)"
    )


def _coerce_attribute(v: object) -> AttributeType:
    if isinstance(v, AttributeType):
        return v
    if isinstance(v, str):
        return AttributeType(name=v)
    if isinstance(v, Mapping):
        return AttributeType(
            name=v.get("name"),  # type: ignore[arg-type]
            entities=v.get("entities", ()),
            description=v.get("description", ""),
            aliases=v.get("aliases", ()),
        )
    raise SchemaError(f"cannot read an attribute type from {v!r}")


@dataclass(frozen=True, kw_only=True)
class Schema:
    """Entity, relation and attribute types plus the history of evolution decisions.

    Immutable: :meth:`evolve` returns a new schema. Construction validates everything and
    raises :class:`SchemaError` naming the offending value: no entity types, duplicate names or
    aliases within a kind, or a relation/attribute naming an unknown entity type.

    Examples
    --------
    >>> s = Schema(entities=["Person", "Element"],
    ...            relations=[("Person", "discovered", "Element")])
    >>> s.allows("person", "Discovered", "element")
    True
    >>> s.resolve("entity", "Place") is None
    True
    """

    entities: tuple[EntityType, ...]
    relations: tuple[RelationType, ...] = ()
    attributes: tuple[AttributeType, ...] = ()
    name: str = "schema"
    version: int = 1
    history: tuple[SchemaChange, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.entities, (str, Mapping)) or not isinstance(self.entities, Iterable):
            raise SchemaError(f"entities must be a list of entity types, got {self.entities!r}")
        for attr, fn in (
            ("entities", _coerce_entity),
            ("relations", _coerce_relation),
            ("attributes", _coerce_attribute),
        ):
            raw = getattr(self, attr)
            if raw is None:
                raw = ()
            if isinstance(raw, (str, Mapping)) or not isinstance(raw, Iterable):
                raise SchemaError(f"{attr} must be a list, got {raw!r}")
            object.__setattr__(self, attr, tuple(fn(v) for v in raw))
        object.__setattr__(self, "history", tuple(self.history or ()))
        if not isinstance(self.version, int) or isinstance(self.version, bool) or self.version < 1:
            raise SchemaError(f"schema version must be an int >= 1, got {self.version!r}")
        if not self.entities:
            raise SchemaError(
                f"schema {self.name!r} is empty: it needs at least one entity type "
                "(relations and attributes refer to entity types)"
            )
        lookup: dict[str, dict[str, str]] = {}
        for kind, items in (
            ("entity", self.entities), ("relation", self.relations), ("attribute", self.attributes)
        ):
            table: dict[str, str] = {}
            for t in items:
                for label in (t.name, *t.aliases):
                    key = type_key(label)
                    if key in table and label == t.name:
                        raise SchemaError(
                            f"duplicate {kind} type {t.name!r} (same key as {table[key]!r})"
                        )
                    if key in table and table[key] != t.name:
                        raise SchemaError(
                            f"{kind} type {t.name!r}: alias {label!r} is already used "
                            f"by {kind} type {table[key]!r}"
                        )
                    table[key] = t.name
            lookup[kind] = table
        known = {t.name for t in self.entities}
        for r in self.relations:
            for end, names in (("head", r.head), ("tail", r.tail)):
                for n in names:
                    canon = lookup["entity"].get(type_key(n))
                    if canon is None:
                        raise SchemaError(
                            f"relation type {r.name!r} names unknown {end} type {n!r}; "
                            f"known entity types: {sorted(known)}"
                        )
        for a in self.attributes:
            for n in a.entities:
                if type_key(n) not in lookup["entity"]:
                    raise SchemaError(
                        f"attribute type {a.name!r} names unknown entity type {n!r}; "
                        f"known entity types: {sorted(known)}"
                    )
        # canonicalise head/tail/entities names written with another case or an alias
        ent = lookup["entity"]
        object.__setattr__(self, "relations", tuple(
            dataclasses.replace(
                r,
                head=tuple(dict.fromkeys(ent[type_key(h)] for h in r.head)),
                tail=tuple(dict.fromkeys(ent[type_key(t)] for t in r.tail)),
            )
            for r in self.relations
        ))
        object.__setattr__(self, "attributes", tuple(
            dataclasses.replace(
                a, entities=tuple(dict.fromkeys(ent[type_key(e)] for e in a.entities))
            )
            for a in self.attributes
        ))
        object.__setattr__(self, "_lookup", lookup)

    # ------------------------------------------------------------------ lookup
    def _table(self, kind: str) -> dict[str, str]:
        if kind not in _KINDS:
            raise SchemaError(f"kind must be one of {_KINDS}, got {kind!r}")
        return self._lookup[kind]  # type: ignore[attr-defined, no-any-return]

    def resolve(self, kind: TypeKind, name: object) -> str | None:
        """Canonical name of the ``kind`` type called ``name`` (or an alias), else ``None``."""
        if not isinstance(name, str) or not name.strip():
            return None
        return self._table(kind).get(type_key(name))

    def get(self, kind: TypeKind, name: str) -> AnyType:
        """Return the type record for ``name``; raise :class:`SchemaError` if undefined."""
        canon = self.resolve(kind, name)
        if canon is None:
            raise SchemaError(
                f"{name!r} is not a {kind} type of schema {self.name!r}; "
                f"known: {self.names(kind)}"
            )
        return next(t for t in self._items(kind) if t.name == canon)

    def _items(self, kind: str) -> tuple[AnyType, ...]:
        items: dict[str, tuple[AnyType, ...]] = {
            "entity": self.entities, "relation": self.relations, "attribute": self.attributes
        }
        if kind not in items:
            raise SchemaError(f"kind must be one of {_KINDS}, got {kind!r}")
        return items[kind]

    def names(self, kind: TypeKind) -> list[str]:
        """Canonical type names of one kind, in schema order."""
        return [t.name for t in self._items(kind)]

    def labels(self, kind: TypeKind) -> dict[str, str]:
        """Every accepted label (name or alias, as written) mapped to its canonical name."""
        out: dict[str, str] = {}
        for t in self._items(kind):
            for label in (t.name, *t.aliases):
                out[label] = t.name
        return out

    def allows(self, head_type: str, relation: str, tail_type: str) -> bool:
        """Whether ``head_type --relation--> tail_type`` is permitted by the schema."""
        return self.check_triple(head_type, relation, tail_type)[0] is not None

    def check_triple(
        self, head_type: str, relation: str, tail_type: str
    ) -> tuple[tuple[str, str, str] | None, str]:
        """Canonical ``(head_type, relation, tail_type)`` or ``(None, reason)``."""
        h = self.resolve("entity", head_type)
        if h is None:
            return None, f"head type {head_type!r} is not in the schema"
        t = self.resolve("entity", tail_type)
        if t is None:
            return None, f"tail type {tail_type!r} is not in the schema"
        r = self.resolve("relation", relation)
        if r is None:
            return None, f"relation {relation!r} is not in the schema"
        rt = self.get("relation", r)
        assert isinstance(rt, RelationType)
        if rt.head and h not in rt.head:
            return None, f"relation {r!r} does not allow head type {h!r} (allowed: {list(rt.head)})"
        if rt.tail and t not in rt.tail:
            return None, f"relation {r!r} does not allow tail type {t!r} (allowed: {list(rt.tail)})"
        return (h, r, t), ""

    def attribute_allowed(self, entity_type: str, attribute: str) -> str | None:
        """Canonical attribute name if ``attribute`` may be set on ``entity_type``."""
        a = self.resolve("attribute", attribute)
        e = self.resolve("entity", entity_type)
        if a is None or e is None:
            return None
        at = self.get("attribute", a)
        assert isinstance(at, AttributeType)
        return a if not at.entities or e in at.entities else None

    # ------------------------------------------------------------------ text
    def describe(self) -> str:
        """Compact text of the schema for prompts (types, allowed ends, aliases)."""
        lines = ["Entity types:"]
        for e in self.entities:
            lines.append(f"- {e.name}{_extra(e.description, e.aliases)}")
        if self.relations:
            lines.append("Relation types (head -> tail):")
            for r in self.relations:
                ends = f"{' | '.join(r.head) or 'any'} -> {' | '.join(r.tail) or 'any'}"
                lines.append(f"- {r.name}: {ends}{_extra(r.description, r.aliases)}")
        if self.attributes:
            lines.append("Attribute types:")
            for a in self.attributes:
                on = f" (on {', '.join(a.entities)})" if a.entities else ""
                lines.append(f"- {a.name}{on}{_extra(a.description, a.aliases)}")
        return "\n".join(lines)

    # ------------------------------------------------------------------ evolution
    def evolve(
        self, proposals: Iterable[TypeProposal], policy: EvolutionPolicy | None = None
    ) -> Schema:
        """Adopt or reject proposed types; see :func:`evolve_schema`. Returns the new schema."""
        return evolve_schema(self, proposals, policy or EvolutionPolicy()).schema

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (with ``format_version``)."""
        return {
            "format": "kgpath.Schema",
            "format_version": SCHEMA_FORMAT_VERSION,
            "name": self.name,
            "version": self.version,
            "entities": [
                {"name": e.name, "description": e.description, "aliases": list(e.aliases)}
                for e in self.entities
            ],
            "relations": [
                {"name": r.name, "head": list(r.head), "tail": list(r.tail),
                 "description": r.description, "aliases": list(r.aliases)}
                for r in self.relations
            ],
            "attributes": [
                {"name": a.name, "entities": list(a.entities), "description": a.description,
                 "aliases": list(a.aliases)}
                for a in self.attributes
            ],
            "history": [c.to_dict() for c in self.history],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Schema:
        """Build from :meth:`to_dict` output or a hand-written dict.

        ``entities`` may be a list of names or of ``{name, description, aliases}`` mappings,
        or a mapping ``name -> description``; ``relations`` a list of mappings or of
        ``[head, name, tail]`` triples.
        """
        if not isinstance(data, Mapping):
            raise SchemaError(f"a schema must be a mapping, got {type(data).__name__}")
        fv = data.get("format_version", SCHEMA_FORMAT_VERSION)
        if not isinstance(fv, int) or fv > SCHEMA_FORMAT_VERSION:
            raise SchemaError(
                f"schema format_version {fv!r} is not supported (this kgpath reads <= "
                f"{SCHEMA_FORMAT_VERSION})"
            )
        unknown = set(data) - {
            "format", "format_version", "name", "version", "entities", "relations",
            "attributes", "history",
        }
        if unknown:
            raise SchemaError(f"unknown schema key(s) {sorted(unknown)}")
        ents = data.get("entities")
        if isinstance(ents, Mapping):
            ents = [{"name": k, "description": v or ""} for k, v in ents.items()]
        hist = data.get("history") or []
        if not isinstance(hist, list):
            raise SchemaError(f"schema history must be a list, got {hist!r}")
        return cls(
            entities=ents if ents is not None else (),  # type: ignore[arg-type]
            relations=data.get("relations") or (),
            attributes=data.get("attributes") or (),
            name=str(data.get("name", "schema")),
            version=data.get("version", 1),
            history=tuple(SchemaChange.from_dict(h) for h in hist),
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write JSON (or YAML for ``.yaml``/``.yml``) atomically (temp file + rename)."""
        p = Path(path)
        data = self.to_dict()
        if p.suffix.lower() in (".yaml", ".yml"):
            yaml: Any = require("yaml", "kgpath[yaml]")
            text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        else:
            text = json.dumps(data, ensure_ascii=False, indent=2)
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, p)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Schema:
        """Read a schema written by :meth:`save` or by hand (JSON, or YAML if installed)."""
        p = Path(path)
        if not p.is_file():
            raise PersistenceError(f"schema file {str(p)!r} does not exist")
        text = p.read_text(encoding="utf-8")
        try:
            if p.suffix.lower() in (".yaml", ".yml"):
                yaml: Any = require("yaml", "kgpath[yaml]")
                data = yaml.safe_load(text)
            else:
                data = json.loads(text)
        except ValueError as exc:  # json.JSONDecodeError
            raise PersistenceError(f"schema file {str(p)!r} is not valid JSON: {exc}") from exc
        except Exception as exc:
            if type(exc).__module__.startswith("yaml"):  # yaml.YAMLError
                raise PersistenceError(f"schema file {str(p)!r} is not valid YAML: {exc}") from exc
            raise
        if not isinstance(data, Mapping):
            raise PersistenceError(f"schema file {str(p)!r} does not hold a mapping")
        return cls.from_dict(data)


def _extra(description: str, aliases: Sequence[str]) -> str:
    out = f" - {description}" if description else ""
    if aliases:
        out += f" (also: {', '.join(aliases)})"
    return out


# ---------------------------------------------------------------------- evolution
@dataclass(frozen=True, kw_only=True)
class TypeProposal:
    """A new type suggested by the extractor for one source (passage).

    ``head``/``tail`` apply to relation proposals, ``entities`` to attribute proposals.
    """

    kind: TypeKind
    name: str
    confidence: float = 1.0
    description: str = ""
    head: tuple[str, ...] = ()
    tail: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    source: str = ""

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise SchemaError(f"proposal kind must be one of {_KINDS}, got {self.kind!r}")
        object.__setattr__(self, "name", _name(self.name, "proposed type name"))
        c = self.confidence
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0.0 <= c <= 1.0:
            raise SchemaError(f"proposal confidence must be in [0, 1], got {c!r}")
        object.__setattr__(self, "confidence", float(c))
        for attr in ("head", "tail", "entities"):
            object.__setattr__(self, attr, _names(getattr(self, attr), f"proposal {attr}"))


@dataclass(frozen=True, kw_only=True)
class AggregatedProposal:
    """Proposals for the same ``(kind, key)`` pooled across sources."""

    kind: TypeKind
    name: str
    support: int
    confidence: float
    description: str = ""
    head: tuple[str, ...] = ()
    tail: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()


def aggregate_proposals(proposals: Iterable[TypeProposal]) -> list[AggregatedProposal]:
    """Pool proposals by ``(kind, type_key(name))``.

    ``support`` = number of distinct non-empty sources (a proposal without a source counts
    once on its own); ``confidence`` = mean confidence over the pooled proposals. The first
    spelling of the name and the first non-empty description are kept; head/tail/entity
    types are unioned in first-seen order. Output order: kind (entity, attribute, relation),
    then support and confidence descending, then name.
    """
    groups: dict[tuple[str, str], list[TypeProposal]] = {}
    for p in proposals:
        if not isinstance(p, TypeProposal):
            raise SchemaError(f"expected TypeProposal, got {p!r}")
        groups.setdefault((p.kind, type_key(p.name)), []).append(p)
    out = []
    for (kind, _key), ps in groups.items():
        sources = tuple(dict.fromkeys(p.source for p in ps if p.source))
        anonymous = sum(1 for p in ps if not p.source)
        out.append(AggregatedProposal(
            kind=kind,  # type: ignore[arg-type]
            name=ps[0].name,
            support=len(sources) + anonymous,
            confidence=sum(p.confidence for p in ps) / len(ps),
            description=next((p.description for p in ps if p.description), ""),
            head=tuple(dict.fromkeys(h for p in ps for h in p.head)),
            tail=tuple(dict.fromkeys(t for p in ps for t in p.tail)),
            entities=tuple(dict.fromkeys(e for p in ps for e in p.entities)),
            sources=sources,
        ))
    order = {"entity": 0, "attribute": 1, "relation": 2}
    out.sort(key=lambda a: (order[a.kind], -a.support, -a.confidence, a.name))
    return out


@dataclass(frozen=True, kw_only=True)
class EvolutionPolicy:
    """Thresholds for adopting proposed types (pattern guidance item 6: keep them strict).

    The pattern names no values; the defaults are deliberately conservative.

    Attributes
    ----------
    min_support
        Minimum number of distinct passages proposing the type (default 3).
    min_confidence
        Minimum mean confidence of those proposals, in [0, 1] (default 0.8).
    kinds
        Which kinds may be added (default all three).
    max_new_types
        Cap on adoptions per evolution round (``None`` = no cap); the best-supported win.
    """

    min_support: int = 3
    min_confidence: float = 0.8
    kinds: tuple[TypeKind, ...] = _KINDS
    max_new_types: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.min_support, bool) or not isinstance(self.min_support, int) or (
            self.min_support < 1
        ):
            raise ConfigError(f"min_support must be an int >= 1, got {self.min_support!r}")
        if not isinstance(self.min_confidence, (int, float)) or not (
            0.0 <= self.min_confidence <= 1.0
        ):
            raise ConfigError(f"min_confidence must be in [0, 1], got {self.min_confidence!r}")
        kinds = tuple(self.kinds)
        bad = [k for k in kinds if k not in _KINDS]
        if bad:
            raise ConfigError(f"kinds must be among {_KINDS}, got {bad!r}")
        object.__setattr__(self, "kinds", kinds)
        if self.max_new_types is not None and (
            isinstance(self.max_new_types, bool)
            or not isinstance(self.max_new_types, int)
            or self.max_new_types < 0
        ):
            raise ConfigError(
                f"max_new_types must be None or an int >= 0, got {self.max_new_types!r}"
            )


@dataclass(frozen=True)
class EvolutionResult:
    """The evolved schema and this round's decisions."""

    schema: Schema
    adopted: tuple[SchemaChange, ...]
    rejected: tuple[SchemaChange, ...]


def evolve_schema(
    schema: Schema, proposals: Iterable[TypeProposal], policy: EvolutionPolicy
) -> EvolutionResult:
    """One evolution round: pool proposals, apply the thresholds, log every decision.

    Decisions, in the order of :func:`aggregate_proposals` (entity types first, so a relation
    may use an entity type adopted in the same round):

    1. rejected if the kind is not in ``policy.kinds``;
    2. rejected if the name (or an alias) already exists for that kind;
    3. rejected if ``support < min_support`` or ``confidence < min_confidence``;
    4. relations/attributes: rejected if they name an entity type that is still unknown;
    5. rejected once ``max_new_types`` adoptions were made this round;
    6. otherwise adopted.

    The new schema has ``version + 1`` if anything was adopted; every decision is appended
    to its :attr:`Schema.history` and logged on the ``kgpath.schema`` logger.
    """
    agg = aggregate_proposals(proposals)
    ents = list(schema.entities)
    rels = list(schema.relations)
    attrs = list(schema.attributes)
    decisions: list[tuple[str, AggregatedProposal, str]] = []
    adopted_n = 0
    known_ent = {type_key(label): e.name for e in ents for label in (e.name, *e.aliases)}

    def exists(kind: str, name: str) -> bool:
        tables: dict[str, Sequence[AnyType]] = {"entity": ents, "relation": rels,
                                                "attribute": attrs}
        items = tables[kind]
        key = type_key(name)
        return any(key in {type_key(x) for x in (t.name, *t.aliases)} for t in items)

    for a in agg:
        reason = ""
        if a.kind not in policy.kinds:
            reason = f"kind {a.kind!r} may not evolve (policy.kinds={list(policy.kinds)})"
        elif exists(a.kind, a.name):
            reason = f"{a.kind} type {a.name!r} is already in the schema"
        elif a.support < policy.min_support:
            reason = f"support {a.support} < min_support {policy.min_support}"
        elif a.confidence < policy.min_confidence:
            reason = f"confidence {a.confidence:.3f} < min_confidence {policy.min_confidence}"
        else:
            ends = a.head + a.tail if a.kind == "relation" else a.entities
            missing = [n for n in ends if type_key(n) not in known_ent]
            if a.kind != "entity" and missing:
                reason = f"names entity type(s) not in the schema: {missing}"
            elif policy.max_new_types is not None and adopted_n >= policy.max_new_types:
                reason = f"max_new_types={policy.max_new_types} reached this round"
        if reason:
            decisions.append(("rejected", a, reason))
            continue
        if a.kind == "entity":
            ents.append(EntityType(name=a.name, description=a.description))
            known_ent[type_key(a.name)] = a.name
        elif a.kind == "relation":
            rels.append(
                RelationType(name=a.name, head=a.head, tail=a.tail, description=a.description)
            )
        else:
            attrs.append(AttributeType(name=a.name, entities=a.entities, description=a.description))
        adopted_n += 1
        decisions.append((
            "adopted", a,
            f"support {a.support} >= {policy.min_support} and confidence "
            f"{a.confidence:.3f} >= {policy.min_confidence}",
        ))
    new_version = schema.version + (1 if adopted_n else 0)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    changes = []
    for action, a, reason in decisions:
        details: dict[str, Any] = {"sources": list(a.sources)}
        if a.description:
            details["description"] = a.description
        if a.kind == "relation":
            details.update(head=list(a.head), tail=list(a.tail))
        if a.kind == "attribute":
            details["entities"] = list(a.entities)
        ch = SchemaChange(
            action=action,  # type: ignore[arg-type]
            kind=a.kind, name=a.name, support=a.support, confidence=round(a.confidence, 6),
            reason=reason, schema_version=new_version, details=details, timestamp=now,
        )
        changes.append(ch)
        logger.info("schema %s: %s %s type %r (%s)", schema.name, action, a.kind, a.name, reason)
    new = Schema(
        entities=tuple(ents), relations=tuple(rels), attributes=tuple(attrs), name=schema.name,
        version=new_version, history=schema.history + tuple(changes),
    )
    return EvolutionResult(
        schema=new,
        adopted=tuple(c for c in changes if c.action == "adopted"),
        rejected=tuple(c for c in changes if c.action == "rejected"),
    )
