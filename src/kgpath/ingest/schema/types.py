"""Schema type records: entity, relation and attribute types, and evolution decisions.

Type resolution rule (used everywhere a type is named): a type is referred to by its name or
one of its aliases, compared case-insensitively with runs of white space, ``_`` and ``-``
collapsed (:func:`type_key`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kgpath.errors import ConfigError

__all__ = [
    "AnyType",
    "AttributeType",
    "EntityType",
    "RelationType",
    "SchemaChange",
    "SchemaError",
    "SchemaWarning",
    "TypeKind",
    "type_key",
]

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

