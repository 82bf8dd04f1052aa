"""Tolerant parsing of an LLM extraction reply into typed records (types checked later)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kgpath.errors import ConfigError
from kgpath.ingest.extract.records import PassageExtraction, TypedEntity, TypedTriple, _node_key
from kgpath.ingest.schema import TypeProposal
from kgpath.llm import parse_json_response

__all__ = ["parse_extraction"]

# ---------------------------------------------------------------------- LLM reply parsing
_HEAD = ("head", "subject", "source", "h")
_HEAD_T = ("head_type", "subject_type", "source_type", "head_label")
_REL = ("relation", "predicate", "label", "r", "type")
_TAIL = ("tail", "object", "target", "t")
_TAIL_T = ("tail_type", "object_type", "target_type", "tail_label")


def _first(d: Mapping[str, Any], keys: Sequence[str]) -> str:
    for k in keys:
        v = d.get(k)
        if isinstance(v, (str, int, float)) and not isinstance(v, bool) and str(v).strip():
            return str(v).strip()
    return ""


def _confidence(v: Any, notes: list[str]) -> float:
    if v is None:
        return 1.0
    try:
        c = float(v)
    except (TypeError, ValueError):
        notes.append(f"confidence {v!r} is not a number; 1.0 used")
        return 1.0
    if not 0.0 <= c <= 1.0:
        notes.append(f"confidence {c} clipped to [0, 1]")
        c = min(1.0, max(0.0, c))
    return c



def parse_extraction(
    text: str, passage_id: str, *, max_triples: int | None = None
) -> PassageExtraction:
    """Parse an extraction reply into typed records (types are checked later, not here).

    Accepts the prompt's shape ``{entities, triples, proposals}``; a bare list is read as the
    triples. Triples may be objects (``head``/``subject``, ``relation``/``predicate``, ...)
    or lists ``[head, head_type, relation, tail, tail_type]`` / ``[head, relation, tail]``;
    a missing end type is taken from the entity list when the name appears there. Malformed
    items are skipped and noted. Raises :class:`~kgpath.errors.ParseError` when no JSON at
    all can be recovered.
    """
    data = parse_json_response(text)
    if isinstance(data, list):
        data = {"triples": data}
    notes: list[str] = []
    extra = set(data) - {"entities", "triples", "proposals"}
    if extra:
        notes.append(f"ignored extra key(s) {sorted(extra)}")
    ents = _parse_entities(data.get("entities"), passage_id, notes)
    types_by_name = {_node_key(e.name): e.type for e in ents if e.type}
    trips = _parse_triples(data.get("triples"), passage_id, types_by_name, notes)
    if max_triples is not None and len(trips) > max_triples:
        notes.append(f"{len(trips) - max_triples} triple(s) beyond max_triples dropped")
        trips = trips[:max_triples]
    props = _parse_proposals(data.get("proposals"), passage_id, notes)
    return PassageExtraction(passage_id=passage_id, entities=tuple(ents), triples=tuple(trips),
                             proposals=tuple(props), raw=text, notes=tuple(notes))


def _parse_entities(raw: Any, passage_id: str, notes: list[str]) -> list[TypedEntity]:
    """Entity objects with a name (``name``/``id``), a type and optional attributes."""
    ents: list[TypedEntity] = []
    for i, e in enumerate(_as_list(raw, "entities", notes)):
        if not isinstance(e, Mapping):
            notes.append(f"entity #{i} is not an object: {e!r}")
            continue
        name, typ = _first(e, ("name", "id")), _first(e, ("type", "label", "entity_type"))
        if not name:
            notes.append(f"entity #{i} has no name")
            continue
        attrs = e.get("attributes") or e.get("properties") or {}
        if not isinstance(attrs, Mapping):
            notes.append(f"attributes of entity {name!r} are not an object; ignored")
            attrs = {}
        ents.append(TypedEntity(name=name, type=typ, description=_first(e, ("description",)),
                                attributes=dict(attrs), source=passage_id))
    return ents


def _parse_triples(
    raw: Any, passage_id: str, types_by_name: Mapping[str, str], notes: list[str]
) -> list[TypedTriple]:
    """Triples as objects or 3-/5-item lists; missing end types from the entity list."""
    trips: list[TypedTriple] = []
    for i, t in enumerate(_as_list(raw, "triples", notes)):
        if isinstance(t, Mapping):
            h, r, tl = _first(t, _HEAD), _first(t, _REL), _first(t, _TAIL)
            ht, tt = _first(t, _HEAD_T), _first(t, _TAIL_T)
            conf = _confidence(t.get("confidence"), notes)
        elif isinstance(t, Sequence) and not isinstance(t, str) and len(t) in (3, 5):
            vals = [str(x).strip() for x in t]
            if len(vals) == 5:
                h, ht, r, tl, tt = vals
            else:
                (h, r, tl), ht, tt = vals, "", ""
            conf = 1.0
        else:
            notes.append(f"triple #{i} has an unknown shape: {t!r}")
            continue
        if not (h and r and tl):
            notes.append(f"triple #{i} lacks a head, relation or tail: {t!r}")
            continue
        ht = ht or types_by_name.get(_node_key(h), "")
        tt = tt or types_by_name.get(_node_key(tl), "")
        trips.append(TypedTriple(head=h, head_type=ht, relation=r, tail=tl, tail_type=tt,
                                 source=passage_id, confidence=conf))
    return trips


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

