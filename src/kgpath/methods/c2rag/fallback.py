"""C2RAG's LLM-free fallback plan (section 3.2 without a planner LLM).

Without an LLM, :func:`fallback_plan` builds an honest but weaker plan than Eq. 1's: one
constraint per graph entity named in the query, ``(entity, <rest of the query>, ?answer)``,
all sharing ``?answer`` (so Eq. 14 intersects them). It cannot decompose multi-hop
questions, so the second hop of a bridge question is only reachable through textual
recovery (Eq. 11-12).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import TypeVar

from kgpath.errors import ConfigError, short
from kgpath.graph import KnowledgeGraph
from kgpath.methods.c2rag.plan import Constraint, Plan, tokens

__all__ = ["anchored_plan", "fallback_plan", "find_entity_mentions", "mention_spans",
           "name_key", "plan_from_mentions"]

T = TypeVar("T")


def _name_key(text: str) -> str:
    return " ".join(tokens(text))


def name_key(text: str) -> str:
    """A name's token key: its lower-cased word tokens joined by spaces (Eq. 3's ``Tok``)."""
    return _name_key(text)


_NAME_INDEX: weakref.WeakKeyDictionary[KnowledgeGraph, tuple[int, dict[str, int]]] = (
    weakref.WeakKeyDictionary()
)
_NAME_INDEX_LOCK = threading.Lock()


def _name_index(graph: KnowledgeGraph) -> dict[str, int]:
    """Token key of every node name -> its first node index, cached per graph version.

    A scan of every name per question cost ~40 ms on a 10k-node graph.
    """
    with _NAME_INDEX_LOCK:
        hit = _NAME_INDEX.get(graph)
    if hit is not None and hit[0] == graph.version:
        return hit[1]
    version = graph.version
    index: dict[str, int] = {}
    for i, n in enumerate(graph.nodes):
        key = _name_key(n.name)
        if key and key not in index:
            index[key] = i
    with _NAME_INDEX_LOCK:
        _NAME_INDEX[graph] = (version, index)
    return index


def _mention_spans(
    query: str, graph: KnowledgeGraph, max_ngram: int
) -> tuple[list[str], list[tuple[int, int, int]]]:
    toks = tokens(query)
    return toks, mention_spans(toks, _name_index(graph), max_ngram)


def mention_spans(
    toks: Sequence[str], index: Mapping[str, T], max_ngram: int = 8
) -> list[tuple[int, int, T]]:
    """``(start, end, index value)`` of the names in ``toks``: longest first, non-overlapping.

    ``index`` maps a name's token key (:func:`name_key`) to its node; spans come back in
    query order.
    """
    taken = [False] * len(toks)
    chosen: list[tuple[int, int, T]] = []
    for length in range(min(max_ngram, len(toks)), 0, -1):  # longest names first
        for start in range(0, len(toks) - length + 1):
            idx = index.get(" ".join(toks[start : start + length]))
            if idx is not None and not any(taken[start : start + length]):
                chosen.append((start, start + length, idx))
                for k in range(start, start + length):
                    taken[k] = True
    chosen.sort(key=lambda c: (c[0], c[1]))
    return chosen


def find_entity_mentions(
    query: str, graph: KnowledgeGraph, *, max_ngram: int = 8
) -> list[tuple[str, int]]:
    """Graph entities whose full name occurs in the query, longest first, non-overlapping.

    Names and query are compared as lower-cased token sequences (punctuation ignored), so
    ``"No Cross, No Crown"`` matches ``"no cross no crown"``. Returns ``(surface, node
    index)`` pairs in query order; the surface form is the node's name.
    """
    _, spans = _mention_spans(query, graph, max_ngram)
    return [(graph.node_at(idx).name, idx) for _, _, idx in spans]


def fallback_plan(
    query: str,
    graph: KnowledgeGraph,
    *,
    max_entities: int = 3,
    note: str = "no LLM planner configured",
) -> Plan:
    """LLM-free plan: ``(entity, <query minus the entity>, ?answer)`` per named entity.

    This is weaker than an LLM plan: it has no relation variants, cannot introduce bridge
    placeholders, and so cannot chain hops; a multi-hop question is answered from the first
    hop's structural evidence plus textual recovery. When no graph entity is named in the
    query the plan is empty and retrieval falls back to textual recovery over the query.
    """
    toks, spans = _mention_spans(query, graph, 8)
    return plan_from_mentions(
        toks, [(s, e, graph.node_at(idx).name) for s, e, idx in spans[:max_entities]], note
    )


def plan_from_mentions(
    toks: Sequence[str], spans: Sequence[tuple[int, int, str]], note: str
) -> Plan:
    """The fallback plan of a query's tokens and its mentions ``(start, end, node name)``."""
    if not spans:
        return Plan(
            constraints=(),
            placeholders={},
            source="fallback",
            repairs=("no graph entity is named in the query",),
            note=note,
        )
    inside = {k for s, e, _ in spans for k in range(s, e)}
    relation = " ".join(t for k, t in enumerate(toks) if k not in inside) or "related to"
    cons = tuple(Constraint(name, relation, "?answer", ()) for _, _, name in spans)
    return Plan(
        constraints=cons,
        placeholders={"?answer": "answer"},
        source="fallback",
        note=note,
    )


def anchored_plan(query: str, anchor: str, hops: int = 1) -> Plan:
    """LLM-free plan for a question whose anchor entity is given (a kgpath extension).

    KGQA benchmarks such as MetaQA give the topic entity and the hop count; the paper's
    planner (Eq. 1) would decompose the question into one constraint per hop. Without an
    LLM this builds the chain ``(anchor, r, ?x1), (?x1, r, ?x2), ..., (?x_{h-1}, r,
    ?answer)`` where every ``r`` is the question with the anchor's tokens removed (no
    decomposition of the relation words, as in :func:`fallback_plan`). Hop ``i + 1`` is
    grounded through the bindings of hop ``i`` (Eq. 15), so an unresolved hop stops the
    chain, as the paper's pipeline does.

    Examples
    --------
    >>> [c.head for c in anchored_plan("who directed [Heat]", "Heat", 2).constraints]
    ['Heat', '?x1']
    """
    if isinstance(hops, bool) or not isinstance(hops, int) or hops < 1:
        raise ConfigError(f"hops must be a positive int, got {short(hops)}")
    if not tokens(anchor):
        raise ConfigError(f"anchor must name an entity, got {short(anchor)}")
    inside = set(tokens(anchor))
    relation = " ".join(t for t in tokens(query) if t not in inside) or "related to"
    names = [anchor, *(f"?x{i}" for i in range(1, hops)), "?answer"]
    cons = tuple(Constraint(names[i], relation, names[i + 1], ()) for i in range(hops))
    holders = {v: "entity" for v in names[1:-1]} | {"?answer": "answer"}
    return Plan(constraints=cons, placeholders=holders, source="fallback",
                note=f"anchored chain plan: anchor {anchor!r}, {hops} hop(s)")
