"""Tolerant parsing of an LLM extraction reply into typed records (types checked later).

Models answer an extraction prompt in the shapes they like; :func:`read_reply` finds the
entities and triples of every common one and both LLM extractors read replies through it
(:func:`parse_extraction` for the schema family, ``LLMExtractor`` for the open one):

- containers: ``{"entities", "triples"}`` (also ``nodes`` / ``relations`` /
  ``relationships`` / ``edges`` / ``facts``), a top-level list (each item read as a
  triple or an entity), in a fenced code block or surrounded by prose;
- triples: objects with ``head``/``relation``/``tail``, ``subject``/``predicate``/``object``,
  ``source``/``target`` + ``relation``/``type``/``label``, ``from``/``to`` (an end may be a
  nested ``{"name", "type"}`` object), 3-item lists ``[head, relation, tail]`` and 5-item
  lists ``[head, head_type, relation, tail, tail_type]``;
- entities: objects with ``name``/``id``/``entity``/``text`` (+ ``type``/``label``), or
  plain strings.

Anything else is skipped with the reason in the notes (``{"entities": 5}`` -> "entities is
not a list (int 5)"), never raised as an untyped exception; a reply with neither list is
unusable (:class:`~kgpath.errors.ParseError`). Work is linear in the reply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kgpath.errors import ConfigError, ParseError, short
from kgpath.ingest.extract.records import PassageExtraction, TypedEntity, TypedTriple, _node_key
from kgpath.ingest.schema import TypeProposal
from kgpath.llm import parse_json_response

__all__ = ["ReplyEntity", "ReplyItems", "ReplyTriple", "parse_extraction", "read_reply"]

# ---------------------------------------------------------------------- reply shapes
_HEAD = ("head", "subject", "source", "h", "from", "head_entity", "subject_entity")
_HEAD_T = ("head_type", "subject_type", "source_type", "head_label", "from_type")
_REL = ("relation", "predicate", "relationship", "rel", "label", "r", "type", "edge")
_TAIL = ("tail", "object", "target", "t", "to", "tail_entity", "object_entity")
_TAIL_T = ("tail_type", "object_type", "target_type", "tail_label", "to_type")
_NAME = ("name", "id", "entity", "text", "title")
_TYPE = ("type", "label", "entity_type", "category", "kind")
_TRIPLE_KEYS = ("triples", "relations", "relationships", "edges", "facts")
_ENTITY_KEYS = ("entities", "nodes")


_NO_ATTRIBUTES: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ReplyEntity:
    """An entity as the reply gave it (name, type, description, attributes)."""

    name: str
    type: str = ""
    description: str = ""
    attributes: Mapping[str, Any] = field(default_factory=lambda: _NO_ATTRIBUTES)


@dataclass(frozen=True, slots=True)
class ReplyTriple:
    """A triple as the reply gave it; end types may be empty."""

    head: str
    relation: str
    tail: str
    head_type: str = ""
    tail_type: str = ""
    confidence: Any = None


@dataclass
class ReplyItems:
    """What :func:`read_reply` found: entities, triples, raw proposals, notes."""

    entities: list[ReplyEntity] = field(default_factory=list)
    triples: list[ReplyTriple] = field(default_factory=list)
    proposals: Any = None
    notes: list[str] = field(default_factory=list)


def _scalar(v: Any) -> str:
    if isinstance(v, (str, int, float)) and not isinstance(v, bool):
        return " ".join(str(v).split())
    return ""


def _first(d: Mapping[str, Any], keys: Sequence[str]) -> str:
    for k in keys:
        v = _scalar(d.get(k))
        if v:
            return v
    return ""


def _end(d: Mapping[str, Any], keys: Sequence[str]) -> tuple[str, str]:
    """An end of a triple object: a scalar, or a nested ``{"name", "type"}`` object."""
    for k in keys:
        v = d.get(k)
        if isinstance(v, Mapping):
            name = _first(v, _NAME)
            if name:
                return name, _first(v, _TYPE)
        elif _scalar(v):
            return _scalar(v), ""
    return "", ""


def _is_triple_object(d: Mapping[str, Any]) -> bool:
    return any(k in d for k in _HEAD) and any(k in d for k in _TAIL)


def read_triple(t: Any) -> ReplyTriple | str:
    """One triple in any accepted shape, or the reason it is not one."""
    if isinstance(t, Mapping):
        (h, ht), (tl, tt) = _end(t, _HEAD), _end(t, _TAIL)
        r = _first(t, _REL)
        ht, tt = _first(t, _HEAD_T) or ht, _first(t, _TAIL_T) or tt
        conf = t.get("confidence")
    elif isinstance(t, (list, tuple)) and len(t) in (3, 5):
        vals = [_scalar(x) for x in t]
        if len(vals) == 5:
            h, ht, r, tl, tt = vals
        else:
            (h, r, tl), ht, tt = vals, "", ""
        conf = None
    else:
        what = f"a list of {len(t)} items" if isinstance(t, (list, tuple)) else \
            type(t).__name__
        return f"has an unknown shape ({what}, not a triple object or a 3-/5-item list): " \
               f"{short(t)}"
    if not (h and r and tl):
        return f"lacks a head, relation or tail: {short(t)}"
    return ReplyTriple(h, r, tl, ht, tt, conf)


def read_entity(e: Any) -> ReplyEntity | str:
    """One entity (an object with a name, or a string), or the reason it is not one."""
    if isinstance(e, str):
        name = " ".join(e.split())
        return ReplyEntity(name) if name else "is an empty string"
    if not isinstance(e, Mapping):
        return f"is {type(e).__name__}, not an object or a name: {short(e)}"
    name = _first(e, _NAME)
    if not name:
        return f"has no name: {short(e)}"
    attrs = e.get("attributes") or e.get("properties")
    attrs = dict(attrs) if isinstance(attrs, Mapping) and attrs else _NO_ATTRIBUTES
    return ReplyEntity(name, _first(e, _TYPE), _first(e, ("description",)), attrs)


def _container(data: Mapping[str, Any], keys: Sequence[str], what: str,
               notes: list[str]) -> list[Any] | None:
    """The first list under one of ``keys`` (``None``: none); wrong kinds are noted."""
    found: list[Any] | None = None
    for k in keys:
        if k not in data:
            continue
        v = data[k]
        if isinstance(v, list) and found is None:
            found = v
        elif isinstance(v, Mapping) and found is None and what == "triples" \
                and _is_triple_object(v):
            found = [v]  # one triple given as an object
        elif v is not None and not isinstance(v, list):
            notes.append(f"{k} is not a list ({type(v).__name__} {short(v, 40)}); ignored")
    return found


def read_reply(data: Any) -> ReplyItems:
    """Entities, triples and proposals of a parsed reply (see the module docstring).

    Raises :class:`~kgpath.errors.ParseError` when the reply holds neither an entity list
    nor a triple list (``{"entities": 5}``, ``{"answer": "..."}``, a bare number).
    """
    out = ReplyItems()
    if isinstance(data, list):
        ents_raw: list[Any] | None = [x for x in data if _entity_like(x)]
        trips_raw: list[Any] | None = [x for x in data if not _entity_like(x)]
    elif isinstance(data, Mapping):
        ents_raw = _container(data, _ENTITY_KEYS, "entities", out.notes)
        trips_raw = _container(data, _TRIPLE_KEYS, "triples", out.notes)
        if ents_raw is None and trips_raw is None and _is_triple_object(data):
            trips_raw = [data]
        extra = set(data) - {*_ENTITY_KEYS, *_TRIPLE_KEYS, "proposals"}
        if extra and (ents_raw is not None or trips_raw is not None):
            out.notes.append(f"ignored extra key(s) {sorted(map(str, extra))[:10]}")
        out.proposals = data.get("proposals")
    else:
        raise ParseError(f"extraction reply is {type(data).__name__}, not an object or a list")
    if ents_raw is None and trips_raw is None:
        raise ParseError(
            f"extraction reply has no entity or triple list (keys {sorted(map(str, data))[:10]}"
            f"{'; ' + '; '.join(out.notes) if out.notes else ''})")
    for i, e in enumerate(ents_raw or []):
        got = read_entity(e)
        if isinstance(got, ReplyEntity):
            out.entities.append(got)
        else:
            out.notes.append(f"entity #{i} skipped: {got}")
    for i, t in enumerate(trips_raw or []):
        got_t = read_triple(t)
        if isinstance(got_t, ReplyTriple):
            out.triples.append(got_t)
        else:
            out.notes.append(f"triple #{i} skipped: {got_t}")
    return out


def _entity_like(x: Any) -> bool:
    """In a top-level list: an object with a name and no triple ends, or a plain string."""
    return isinstance(x, str) or (isinstance(x, Mapping) and not _is_triple_object(x)
                                  and bool(_first(x, _NAME)))


def _confidence(v: Any, notes: list[str]) -> float:
    if v is None:
        return 1.0
    try:
        c = float(v)
    except (TypeError, ValueError):
        notes.append(f"confidence {short(v, 40)} is not a number; 1.0 used")
        return 1.0
    if not 0.0 <= c <= 1.0:  # NaN fails too
        notes.append(f"confidence {c} clipped to [0, 1]")
        c = min(1.0, max(0.0, c)) if c == c else 1.0
    return c


def parse_extraction(
    text: str, passage_id: str, *, max_triples: int | None = None
) -> PassageExtraction:
    """Parse an extraction reply into typed records (types are checked later, not here).

    Reads every shape :func:`read_reply` accepts; a missing end type is taken from the
    entity list when the name appears there. Malformed items are skipped and noted. Raises
    :class:`~kgpath.errors.ParseError` when no JSON can be recovered or the reply holds
    neither an entity nor a triple list.
    """
    items = read_reply(parse_json_response(text))
    notes = items.notes
    ents = [TypedEntity(name=e.name, type=e.type, description=e.description,
                        attributes=dict(e.attributes), source=passage_id)
            for e in items.entities]
    types_by_name = {_node_key(e.name): e.type for e in ents if e.type}
    trips = [TypedTriple(head=t.head, head_type=t.head_type or
                         types_by_name.get(_node_key(t.head), ""),
                         relation=t.relation, tail=t.tail,
                         tail_type=t.tail_type or types_by_name.get(_node_key(t.tail), ""),
                         source=passage_id, confidence=_confidence(t.confidence, notes))
             for t in items.triples]
    if max_triples is not None and len(trips) > max_triples:
        notes.append(f"{len(trips) - max_triples} triple(s) beyond max_triples dropped")
        trips = trips[:max_triples]
    props = _parse_proposals(items.proposals, passage_id, notes)
    return PassageExtraction(passage_id=passage_id, entities=tuple(ents), triples=tuple(trips),
                             proposals=tuple(props), raw=text, notes=tuple(notes))


def _parse_proposals(raw: Any, passage_id: str, notes: list[str]) -> list[TypeProposal]:
    """Type proposals (schema evolution); invalid ones are noted and skipped."""
    props: list[TypeProposal] = []
    for i, p in enumerate(_as_list(raw, "proposals", notes)):
        if not isinstance(p, Mapping):
            notes.append(f"proposal #{i} is not an object: {p!r}")
            continue
        try:
            props.append(TypeProposal(
                kind=str(p.get("kind", "")).strip().lower(),  # type: ignore[arg-type]
                name=_first(p, ("name",)),
                confidence=_confidence(p.get("confidence"), notes),
                description=_first(p, ("description",)),
                head=_str_list(p.get("head")), tail=_str_list(p.get("tail")),
                entities=_str_list(p.get("entities")),
                source=passage_id,
            ))
        except ConfigError as exc:  # SchemaError subclasses ConfigError
            notes.append(f"proposal #{i} ignored: {exc}")
    return props


def _as_list(v: Any, what: str, notes: list[str]) -> list[Any]:
    if v is None:
        return []
    if isinstance(v, list):
        return v
    notes.append(f"{what} is not a list; ignored")
    return []


def _str_list(v: Any) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,) if v.strip() else ()
    if isinstance(v, list):
        return tuple(str(x) for x in v if isinstance(x, str) and x.strip())
    return ()

