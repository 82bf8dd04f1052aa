"""C2RAG atomic constraint planning: plan data types, validation/repair, LLM-free fallback.

Reference: Y. Ma et al., "Mitigating KG Quality Issues: A Robust Multi-Hop GraphRAG
Retrieval Framework" (C2RAG), 2026, section 3.2 "Atomic Constraint Planning"
(shared/papers/c2rag-constraint-sufficiency.txt).

A plan ``P = <τ_1, ..., τ_k>`` is an ordered list of triple patterns ``τ_i = (h_i, r_i, t_i)``
whose ends are constants from the query (``E_q``) or placeholders ``?v`` (Eq. 1), each with
a set ``R_i`` of ``m`` relation variants. :func:`parse_plan` turns an LLM reply into a
:class:`Plan`, validating it against :data:`PLAN_SCHEMA` and repairing what can be repaired:

===============================  =============================================================
problem                          what happens
===============================  =============================================================
reply is not JSON                plan rejected (:class:`~kgpath.ParseError` with the reason)
no ``constraints`` list          plan rejected
top-level JSON list              read as the constraint list (repair noted)
constraint given as ``[h,r,t]``  read as head/relation/tail (repair noted)
missing head or tail             that constraint rejected, reason recorded
missing relation                 first variant used as relation, else constraint rejected
missing/odd ``variants``         coerced to a list of strings, cut to ``m`` (repair noted)
unknown placeholder              constraint rejected when ``placeholders`` are declared and
                                 the constraint uses one not declared
no placeholder at all            constraint rejected (nothing to retrieve; Eq. 2 and Eq. 15
                                 cover one- and two-placeholder constraints only)
no constant, no bound variable   constraint rejected: neither end is a constant nor a
                                 placeholder solvable from a constant through other constraints
cycle                            a two-placeholder constraint that closes a directed cycle of
                                 placeholders (incl. ``(?a, r, ?a)``) is rejected
duplicate constraint             dropped (repair noted)
nothing left                     plan rejected
===============================  =============================================================

Without an LLM, :func:`kgpath.methods.c2rag.fallback.fallback_plan` builds an honest but
weaker plan (see that module).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgpath.errors import ParseError
from kgpath.llm import parse_json_response
from kgpath.methods.c2rag.plan_cycles import drop_cycles

__all__ = [
    "PLAN_SCHEMA",
    "Constraint",
    "Plan",
    "tokens",
    "is_placeholder",
    "normalize_placeholder",
    "parse_plan",
]

_TOKEN = re.compile(r"\w+", re.UNICODE)

#: JSON schema of a planner reply (also shown to the LLM in the planner prompt).
PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["constraints"],
    "properties": {
        "placeholders": {
            "type": "object",
            "description": "placeholder (starting with '?') -> its type",
            "additionalProperties": {"type": "string"},
        },
        "constraints": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["head", "relation", "tail", "variants"],
                "properties": {
                    "head": {"type": "string", "minLength": 1},
                    "relation": {"type": "string", "minLength": 1},
                    "tail": {"type": "string", "minLength": 1},
                    "variants": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
}


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` (``Tok(·)`` of Eq. 3, as a list)."""
    return [t.lower() for t in _TOKEN.findall(text or "")]


def is_placeholder(term: str) -> bool:
    """Whether a plan term is a placeholder variable (``?name``) rather than a constant."""
    return isinstance(term, str) and term.strip().startswith("?")


def normalize_placeholder(term: str) -> str:
    """Canonical placeholder spelling: ``"? Prison Name"`` -> ``"?prison_name"``."""
    body = term.strip()[1:].strip().lower()
    return "?" + "_".join(body.split())


@dataclass(frozen=True)
class Constraint:
    """One atomic constraint ``τ = (h, r, t)`` with its relation variants ``R``.

    Ends starting with ``?`` are placeholders (Eq. 1); anything else is a constant surface
    form from the query.
    """

    head: str
    relation: str
    tail: str
    variants: tuple[str, ...] = ()

    @property
    def head_is_var(self) -> bool:
        """Whether the head is a placeholder."""
        return is_placeholder(self.head)

    @property
    def tail_is_var(self) -> bool:
        """Whether the tail is a placeholder."""
        return is_placeholder(self.tail)

    @property
    def placeholders(self) -> tuple[str, ...]:
        """The placeholder ends, head first."""
        return tuple(x for x in (self.head, self.tail) if is_placeholder(x))

    @property
    def arity(self) -> int:
        """``|{h, t} ∩ V|``: 1 for ``P_1`` (Eq. 2), 2 for ``P_2`` (Eq. 15)."""
        return len(self.placeholders)

    def relation_set(self, m: int) -> tuple[str, ...]:
        """``R_i``: the relation followed by up to ``m`` variants, duplicates removed."""
        out = [self.relation]
        out.extend(self.variants[:m])
        return tuple(dict.fromkeys(x for x in out if x))

    def linearize(
        self,
        bindings: Mapping[str, Sequence[str]] | None = None,
        types: Mapping[str, str] | None = None,
    ) -> str:
        """``Lin(τ)``: ``"head relation tail"``.

        A placeholder with a binding is replaced by its bound names (joined by ``" or "``);
        an unbound one stays ``?name``, followed by ``(type)`` when its declared type is not
        already its name, so the type reaches the reranker.
        """
        return " ".join(
            (
                _render(self.head, bindings, types),
                self.relation,
                _render(self.tail, bindings, types),
            )
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (the plan schema's constraint object)."""
        return {
            "head": self.head,
            "relation": self.relation,
            "tail": self.tail,
            "variants": list(self.variants),
        }


def _render(
    term: str,
    bindings: Mapping[str, Sequence[str]] | None,
    types: Mapping[str, str] | None,
) -> str:
    if not is_placeholder(term):
        return term
    if bindings and bindings.get(term):
        return " or ".join(bindings[term])
    typ = (types or {}).get(term)
    if typ and typ.lower() != term[1:].replace("_", " ").lower():
        return f"{term} ({typ})"
    return term


@dataclass(frozen=True)
class Plan:
    """A validated constraint plan.

    Attributes
    ----------
    constraints
        The kept constraints, in plan order.
    placeholders
        ``?name -> type`` (type inferred from the name when the planner gave none).
    source
        ``"llm"``, ``"fallback"`` (LLM-free heuristic, weaker) or ``"user"`` (given).
    repairs
        What was changed to make the plan usable.
    rejected
        ``(raw constraint index, reason)`` for every dropped constraint.
    note
        Why a fallback plan was used (LLM missing, LLM reply rejected, ...), else ``""``.
    raw
        The planner's raw reply, when there was one.
    """

    constraints: tuple[Constraint, ...]
    placeholders: Mapping[str, str] = field(default_factory=dict)
    source: str = "user"
    repairs: tuple[str, ...] = ()
    rejected: tuple[tuple[int, str], ...] = ()
    note: str = ""
    raw: str | None = None

    def __len__(self) -> int:
        return len(self.constraints)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.constraints)

    @property
    def p1(self) -> tuple[int, ...]:
        """Indices of single-placeholder constraints (``P_1``, Eq. 2)."""
        return tuple(i for i, c in enumerate(self.constraints) if c.arity == 1)

    @property
    def p2(self) -> tuple[int, ...]:
        """Indices of two-placeholder constraints (``P_2``, Eq. 15)."""
        return tuple(i for i, c in enumerate(self.constraints) if c.arity == 2)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form, including repairs and rejections."""
        return {
            "source": self.source,
            "placeholders": dict(self.placeholders),
            "constraints": [c.to_dict() for c in self.constraints],
            "repairs": list(self.repairs),
            "rejected": [{"index": i, "reason": r} for i, r in self.rejected],
            "note": self.note,
        }


# ---------------------------------------------------------------------- validation
def parse_plan(
    reply: str | Mapping[str, Any] | Sequence[Any] | Plan,
    *,
    m: int = 3,
    source: str = "llm",
) -> Plan:
    """Validate (and repair) a plan given as LLM text, parsed JSON, or a :class:`Plan`.

    Raises
    ------
    ParseError
        When nothing usable remains; the message names the reason(s). Rejections of single
        constraints do not raise: they are listed in :attr:`Plan.rejected`.
    """
    raw = reply if isinstance(reply, str) else None
    repairs: list[str] = []
    rejected: list[tuple[int, str]] = []
    data, items = _plan_items(reply, repairs)
    declared, decl_given = _declared_placeholders(data.get("placeholders"), repairs)
    parsed: list[tuple[int, Constraint]] = []
    for i, item in enumerate(items):
        c = _parse_constraint(i, item, m, repairs, rejected)
        if c is not None:
            parsed.append((i, c))
    kept = _drop_unknown_or_constant(parsed, declared, decl_given, rejected)
    kept = _drop_duplicates(kept, repairs)
    kept = drop_cycles(kept, rejected)
    kept = _drop_ungroundable(kept, rejected)
    if not kept:
        reasons = "; ".join(f"#{i}: {r}" for i, r in rejected) or "no constraints"
        raise ParseError(f"plan rejected: no usable constraint ({reasons})")
    types = _placeholder_types(kept, declared, decl_given, repairs)
    return Plan(
        constraints=tuple(c for _, c in kept),
        placeholders=types,
        source=source,
        repairs=tuple(repairs),
        rejected=tuple(sorted(rejected)),
        raw=raw,
    )


def _plan_items(
    reply: str | Mapping[str, Any] | Sequence[Any] | Plan, repairs: list[str]
) -> tuple[Mapping[str, Any], list[Any]]:
    """The plan object and its non-empty constraint list (repairs noted), else raise."""
    if isinstance(reply, Plan):
        data: Any = {
            "placeholders": dict(reply.placeholders),
            "constraints": [c.to_dict() for c in reply.constraints],
        }
    elif isinstance(reply, str):
        data = parse_json_response(reply)
    else:
        data = reply
    if isinstance(data, (list, tuple)):
        repairs.append("top-level JSON list read as the constraint list")
        data = {"constraints": list(data)}
    if not isinstance(data, Mapping):
        raise ParseError(f"plan rejected: expected a JSON object, got {type(data).__name__}")
    items = data.get("constraints")
    if items is None:
        for alt in ("plan", "triples", "steps"):
            if isinstance(data.get(alt), list):
                repairs.append(f"constraints read from key {alt!r}")
                items = data[alt]
                break
    if not isinstance(items, list):
        raise ParseError(
            "plan rejected: missing 'constraints' list "
            f"(keys present: {sorted(map(str, data))})"
        )
    if not items:
        raise ParseError("plan rejected: 'constraints' is empty")
    return data, items


def _drop_unknown_or_constant(
    parsed: list[tuple[int, Constraint]],
    declared: Mapping[str, str],
    decl_given: bool,
    rejected: list[tuple[int, str]],
) -> list[tuple[int, Constraint]]:
    """Reject undeclared placeholders (when declared) and placeholder-free constraints."""
    kept: list[tuple[int, Constraint]] = []
    names = sorted(declared)  # once: sorting per rejection was quadratic
    shown = f"{names}" if len(names) <= 10 else f"{names[:10]} and {len(names) - 10} more"
    for i, c in parsed:
        unknown = [v for v in c.placeholders if decl_given and v not in declared]
        if unknown:
            rejected.append((i, f"unknown placeholder {unknown[0]!r} (declared: {shown})"))
            continue
        if c.arity == 0:
            rejected.append((i, f"constraint {c.linearize()!r} has no placeholder"))
            continue
        kept.append((i, c))
    return kept


def _placeholder_types(
    kept: list[tuple[int, Constraint]],
    declared: Mapping[str, str],
    decl_given: bool,
    repairs: list[str],
) -> dict[str, str]:
    """``?name -> type`` for the used placeholders (inferred from the name if undeclared)."""
    types: dict[str, str] = {}
    for _, c in kept:
        for v in c.placeholders:
            types[v] = declared.get(v) or v[1:].replace("_", " ")
    if not decl_given:
        repairs.append("placeholders not declared; inferred from the constraints")
    unused = sorted(set(declared) - set(types))
    if unused:
        repairs.append(f"declared placeholder(s) never used: {unused}")
    return types


def _declared_placeholders(value: Any, repairs: list[str]) -> tuple[dict[str, str], bool]:
    if value is None:
        return {}, False
    out: dict[str, str] = {}
    if isinstance(value, Mapping):
        for k, v in value.items():
            if is_placeholder(str(k)):
                out[normalize_placeholder(str(k))] = str(v) if v else ""
            else:
                repairs.append(f"ignored declared placeholder without '?': {k!r}")
    elif isinstance(value, list):
        for v in value:
            name = v.get("name") if isinstance(v, Mapping) else v
            typ = v.get("type", "") if isinstance(v, Mapping) else ""
            if isinstance(name, str) and is_placeholder(name):
                out[normalize_placeholder(name)] = str(typ or "")
            else:
                repairs.append(f"ignored declared placeholder {v!r}")
    else:
        repairs.append(f"ignored 'placeholders' of type {type(value).__name__}")
        return {}, False
    return out, bool(out)  # an empty declaration declares nothing


def _parse_constraint(
    i: int, item: Any, m: int, repairs: list[str], rejected: list[tuple[int, str]]
) -> Constraint | None:
    if isinstance(item, (list, tuple)) and len(item) in (3, 4):
        repairs.append(f"constraint #{i} given as a list; read as head, relation, tail")
        item = {
            "head": item[0],
            "relation": item[1],
            "tail": item[2],
            "variants": item[3] if len(item) == 4 else [],
        }
    if not isinstance(item, Mapping):
        rejected.append((i, f"constraint is not an object: {item!r}"))
        return None
    ends: dict[str, str] = {}
    for key in ("head", "tail"):
        val = item.get(key)
        if not isinstance(val, str) or not val.strip():
            rejected.append((i, f"missing or empty field {key!r} in {dict(item)!r}"))
            return None
        v = val.strip()
        if is_placeholder(v):
            norm = normalize_placeholder(v)
            if norm == "?":
                rejected.append((i, f"placeholder {val!r} has no name"))
                return None
            if norm != v:
                repairs.append(f"constraint #{i}: placeholder {v!r} normalised to {norm!r}")
            v = norm
        ends[key] = v
    variants = _variants(i, item.get("variants"), repairs)
    rel = item.get("relation")
    if not isinstance(rel, str) or not rel.strip():
        if variants:
            repairs.append(f"constraint #{i}: missing relation, used variant {variants[0]!r}")
            rel, variants = variants[0], variants[1:]
        else:
            rejected.append((i, f"missing or empty field 'relation' in {dict(item)!r}"))
            return None
    rel = " ".join(rel.split())
    variants = [v for v in dict.fromkeys(variants) if v != rel]
    if len(variants) > m:
        repairs.append(f"constraint #{i}: {len(variants)} variants cut to m={m}")
        variants = variants[:m]
    return Constraint(ends["head"], rel, ends["tail"], tuple(variants))


def _variants(i: int, value: Any, repairs: list[str]) -> list[str]:
    if value is None:
        repairs.append(f"constraint #{i}: no 'variants'; only the relation itself is aligned")
        return []
    if isinstance(value, str):
        repairs.append(f"constraint #{i}: 'variants' was a string; used as one variant")
        value = [value]
    if not isinstance(value, list):
        repairs.append(f"constraint #{i}: ignored 'variants' of type {type(value).__name__}")
        return []
    out = [" ".join(v.split()) for v in value if isinstance(v, str) and v.strip()]
    if len(out) != len(value):
        repairs.append(f"constraint #{i}: dropped non-string or empty variants")
    return out


def _drop_duplicates(
    kept: list[tuple[int, Constraint]], repairs: list[str]
) -> list[tuple[int, Constraint]]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for i, c in kept:
        key = (c.head.lower(), c.relation.lower(), c.tail.lower())
        if key in seen:
            repairs.append(f"constraint #{i}: duplicate of an earlier constraint, dropped")
            continue
        seen.add(key)
        out.append((i, c))
    return out


def _drop_ungroundable(
    kept: list[tuple[int, Constraint]], rejected: list[tuple[int, str]]
) -> list[tuple[int, Constraint]]:
    """Reject constraints with no constant end and no placeholder solvable from a constant."""
    solvable: set[str] = set()
    linked: dict[str, list[str]] = {}
    for _, c in kept:
        if c.arity == 1:
            solvable.update(c.placeholders)
        elif c.arity == 2:
            linked.setdefault(c.head, []).append(c.tail)
            linked.setdefault(c.tail, []).append(c.head)
    stack = list(solvable)  # a placeholder linked to a solvable one is solvable
    while stack:
        for nxt in linked.get(stack.pop(), ()):
            if nxt not in solvable:
                solvable.add(nxt)
                stack.append(nxt)
    out = []
    for i, c in kept:
        if c.arity == 2 and not (set(c.placeholders) & solvable):
            rejected.append(
                (
                    i,
                    f"constraint {c.linearize()!r} has no constant and no placeholder bound "
                    "by another constraint",
                )
            )
            continue
        out.append((i, c))
    return out
