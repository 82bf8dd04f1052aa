"""The :class:`Schema`: validated entity, relation and attribute types, with persistence.

Persistence is JSON with a format version (YAML when the file name ends in ``.yaml``/``.yml``
and PyYAML is installed: ``pip install 'kgpath[yaml]'``), written atomically.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kgpath._files import atomic_write, user_path
from kgpath.errors import PersistenceError, require
from kgpath.ingest.schema.types import (
    _KINDS,
    AnyType,
    AttributeType,
    EntityType,
    RelationType,
    SchemaChange,
    SchemaError,
    TypeKind,
    _coerce_attribute,
    _coerce_entity,
    _coerce_relation,
    type_key,
)

if TYPE_CHECKING:  # pragma: no cover
    from kgpath.ingest.schema.evolution import EvolutionPolicy, TypeProposal

__all__ = ["SCHEMA_FORMAT_VERSION", "Schema"]

#: Version of the schema file format written by :meth:`Schema.save`.
SCHEMA_FORMAT_VERSION = 1


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
        self._coerce_types()
        object.__setattr__(self, "history", tuple(self.history or ()))
        if not isinstance(self.version, int) or isinstance(self.version, bool) or self.version < 1:
            raise SchemaError(f"schema version must be an int >= 1, got {self.version!r}")
        if not self.entities:
            raise SchemaError(
                f"schema {self.name!r} is empty: it needs at least one entity type "
                "(relations and attributes refer to entity types)"
            )
        lookup = {kind: _label_table(kind, self._items(kind)) for kind in _KINDS}
        self._check_references(lookup["entity"])
        self._canonicalise_ends(lookup["entity"])
        object.__setattr__(self, "_lookup", lookup)

    def _coerce_types(self) -> None:
        """Read every type record from a record, a name, a mapping or ``(head, name, tail)``."""
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

    def _check_references(self, entities: Mapping[str, str]) -> None:
        """Relation heads/tails and attribute entities must name known entity types."""
        known = sorted(t.name for t in self.entities)
        for r in self.relations:
            for end, names in (("head", r.head), ("tail", r.tail)):
                for n in names:
                    if type_key(n) not in entities:
                        raise SchemaError(
                            f"relation type {r.name!r} names unknown {end} type {n!r}; "
                            f"known entity types: {known}"
                        )
        for a in self.attributes:
            for n in a.entities:
                if type_key(n) not in entities:
                    raise SchemaError(
                        f"attribute type {a.name!r} names unknown entity type {n!r}; "
                        f"known entity types: {known}"
                    )

    def _canonicalise_ends(self, ent: Mapping[str, str]) -> None:
        """Rewrite head/tail/entities names written with another case or an alias."""
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
        from kgpath.ingest.schema.evolution import EvolutionPolicy, evolve_schema

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
        p = user_path(path, "schema path")
        data = self.to_dict()
        if p.suffix.lower() in (".yaml", ".yml"):
            yaml: Any = require("yaml", "kgpath[yaml]")
            text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        else:
            text = json.dumps(data, ensure_ascii=False, indent=2)
        atomic_write(p, text, what="a schema")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Schema:
        """Read a schema written by :meth:`save` or by hand (JSON, or YAML if installed)."""
        p = user_path(path, "schema path")
        if not p.is_file():
            raise PersistenceError(f"schema file {str(p)!r} does not exist")
        try:
            text = p.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PersistenceError(f"schema file {str(p)!r} is not UTF-8 text: {exc}") from exc
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


def _label_table(kind: str, items: Sequence[AnyType]) -> dict[str, str]:
    """``type_key(label) -> canonical name`` for every name and alias; duplicates raise."""
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
    return table
