"""Schema evolution (pattern solution step 2 and guidance item 6: "strict thresholds").

Proposed new types are grouped by ``(kind, key)``; a group's *support* is the number of
distinct sources (passages) that proposed it and its *confidence* the mean of the proposers'
confidences. A group is adopted only when ``support >= min_support`` **and** ``confidence >=
min_confidence``; every decision, adopted or rejected, is appended to :attr:`Schema.history`
with its reason. Evolution is off unless a policy is passed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from kgpath.errors import ConfigError
from kgpath.ingest.schema.model import Schema
from kgpath.ingest.schema.types import (
    _KINDS,
    AnyType,
    AttributeType,
    EntityType,
    RelationType,
    SchemaChange,
    SchemaError,
    TypeKind,
    _name,
    _names,
    type_key,
)

__all__ = [
    "AggregatedProposal",
    "EvolutionPolicy",
    "EvolutionResult",
    "TypeProposal",
    "aggregate_proposals",
    "evolve_schema",
]

logger = logging.getLogger("kgpath.schema")


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
    types: dict[str, list[AnyType]] = {
        "entity": list(schema.entities), "relation": list(schema.relations),
        "attribute": list(schema.attributes),
    }
    decisions: list[tuple[str, AggregatedProposal, str]] = []
    adopted_n = 0
    for a in aggregate_proposals(proposals):
        reason = _rejection(a, policy, types, adopted_n)
        if reason:
            decisions.append(("rejected", a, reason))
            continue
        types[a.kind].append(_new_type(a))
        adopted_n += 1
        decisions.append((
            "adopted", a,
            f"support {a.support} >= {policy.min_support} and confidence "
            f"{a.confidence:.3f} >= {policy.min_confidence}",
        ))
    new_version = schema.version + (1 if adopted_n else 0)
    changes = _record(schema.name, decisions, new_version)
    new = Schema(
        entities=tuple(types["entity"]), relations=tuple(types["relation"]),  # type: ignore[arg-type]
        attributes=tuple(types["attribute"]), name=schema.name,  # type: ignore[arg-type]
        version=new_version, history=schema.history + tuple(changes),
    )
    return EvolutionResult(
        schema=new,
        adopted=tuple(c for c in changes if c.action == "adopted"),
        rejected=tuple(c for c in changes if c.action == "rejected"),
    )


def _known(items: Sequence[AnyType], name: str) -> bool:
    """Whether ``name`` is the name or an alias of one of ``items``."""
    key = type_key(name)
    return any(key in {type_key(x) for x in (t.name, *t.aliases)} for t in items)


def _rejection(
    a: AggregatedProposal,
    policy: EvolutionPolicy,
    types: dict[str, list[AnyType]],
    adopted_n: int,
) -> str:
    """Why ``a`` is rejected (rules 1-5 of :func:`evolve_schema`), or ``""`` to adopt it."""
    if a.kind not in policy.kinds:
        return f"kind {a.kind!r} may not evolve (policy.kinds={list(policy.kinds)})"
    if _known(types[a.kind], a.name):
        return f"{a.kind} type {a.name!r} is already in the schema"
    if a.support < policy.min_support:
        return f"support {a.support} < min_support {policy.min_support}"
    if a.confidence < policy.min_confidence:
        return f"confidence {a.confidence:.3f} < min_confidence {policy.min_confidence}"
    ends = a.head + a.tail if a.kind == "relation" else a.entities
    missing = [n for n in ends if not _known(types["entity"], n)]
    if a.kind != "entity" and missing:
        return f"names entity type(s) not in the schema: {missing}"
    if policy.max_new_types is not None and adopted_n >= policy.max_new_types:
        return f"max_new_types={policy.max_new_types} reached this round"
    return ""


def _new_type(a: AggregatedProposal) -> AnyType:
    """The type record an adopted proposal becomes."""
    if a.kind == "entity":
        return EntityType(name=a.name, description=a.description)
    if a.kind == "relation":
        return RelationType(name=a.name, head=a.head, tail=a.tail, description=a.description)
    return AttributeType(name=a.name, entities=a.entities, description=a.description)


def _record(
    schema_name: str, decisions: Sequence[tuple[str, AggregatedProposal, str]], version: int
) -> list[SchemaChange]:
    """One :class:`SchemaChange` per decision (logged), stamped with ``version`` and now."""
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
        changes.append(SchemaChange(
            action=action,  # type: ignore[arg-type]
            kind=a.kind, name=a.name, support=a.support, confidence=round(a.confidence, 6),
            reason=reason, schema_version=version, details=details, timestamp=now,
        ))
        logger.info("schema %s: %s %s type %r (%s)", schema_name, action, a.kind, a.name, reason)
    return changes
