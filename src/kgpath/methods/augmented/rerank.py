"""Graph propagation as a passage re-ranker of another method's evidence (kgpath extension).

:func:`propagation_rerank` re-ranks the passages a method returned (PCR, C2RAG: their
``rerank="propagation"`` option) by personalised PageRank over the graph's passages and
entities (:mod:`kgpath.methods.augmented.propagation`, the HippoRAG 2 idea), seeded by those
passages alone: their scores, z-scored among themselves (so the method's score units do not
matter), plus the entities the question names. No dense search is added; it is
``GraphAugmentedRetriever(base=evidence_base(method), embedder=None,
config=AugmentedConfig(scorer="propagation", k=20))`` applied inside the method.

Output
    The passages with positive mass, best first, at most ``max(20, n)`` (``n``: the method's
    passages); score: the mass. A passage the method returned keeps its trace, plus
    ``rerank="propagation"`` and ``method_score`` (its score before); a passage only the
    propagation reached (through an entity it shares with the method's passages or the
    question) has ``passage_ids``, ``rerank`` and ``method_score=None`` only. Non-passage
    items (C2RAG triples the graph cites no passage for) follow, score 0.0. With nothing to
    seed the walk the items are returned unchanged.

Why (R@5, offline graph, bundled embedder, ``kgpath eval kg --halves``)
    The propagation constants are :class:`AugmentedConfig`'s, chosen on HotpotQA-100 q0-49.
    Whether to re-rank was decided on HotpotQA-100 and confirmed on 2Wiki-100 (q0-49 /
    q50-99): C2RAG 85.5 → 91.0 (90 / 92), 2Wiki 66.5 → 76.0 (74.5 / 77.5); PCR (both
    directions, depth 1) 89.5 → 92.5 (93 / 92), 2Wiki 69.0 → 84.2 (87.5 / 81); dense 87.0
    and 66.8. Adding the dense scores as further seeds hurt C2RAG on HotpotQA (63.5). It
    hurts PathRAG (88 → 78 on HotpotQA), which therefore does not offer it.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from kgpath.evidence import Evidence
from kgpath.graph import KnowledgeGraph
from kgpath.index.linking import EntityLinker
from kgpath.methods.augmented.config import AugmentedConfig
from kgpath.methods.augmented.propagation import cached_propagation, propagate

__all__ = ["RERANKS", "RERANK_K", "propagation_rerank"]

RERANKS: tuple[str, ...] = ("propagation",)
"""Accepted ``rerank`` values of the methods that offer one (besides ``None``)."""

RERANK_K = 20
"""At least this many re-ranked passages are returned (the measured runs used 20)."""

_CONFIG = AugmentedConfig(scorer="propagation", k=RERANK_K)
_STATE: weakref.WeakKeyDictionary[KnowledgeGraph, tuple[int, EntityLinker, dict[str, object]]]
_STATE = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _state(graph: KnowledgeGraph) -> tuple[EntityLinker, dict[str, object]]:
    """The graph's entity linker and propagation cache, rebuilt when the graph changes."""
    with _LOCK:
        got = _STATE.get(graph)
        if got is None or got[0] != graph.version:
            got = _STATE[graph] = (graph.version, EntityLinker(graph), {})
        return got[1], got[2]


def _noted(item: Evidence, score: float, before: float | None) -> Evidence:
    trace = {**item.trace, "rerank": "propagation", "method_score": before}
    return Evidence(item.id, item.text, score, item.kind, item.method, trace=trace,
                    source_metadata=item.source_metadata)


def propagation_rerank(graph: KnowledgeGraph, query: str, items: Sequence[Evidence],
                       method: str) -> list[Evidence]:
    """``items`` (a method's passage evidence) re-ranked by graph propagation.

    See the module docstring for the rule and the trace. ``method`` names the items' method
    (the passages only the propagation reached carry it too).
    """
    ids = tuple(graph.passages)
    pos = {p: i for i, p in enumerate(ids)}
    mine: dict[str, Evidence] = {}
    base = np.full(len(ids), -np.inf)
    for e in items:
        if e.kind == "passage" and e.id in pos and e.id not in mine:
            mine[e.id] = e
            base[pos[e.id]] = float(e.score)
    if not mine:
        return list(items)
    cfg = _CONFIG
    linker, cache = _state(graph)
    index, walk = cached_propagation(cache, graph, ids, lead_weight=cfg.lead_weight,
                                     relation_weight=cfg.relation_weight)
    ents = {graph.index_of(x.node_id) for x in linker.link(query)}
    if cfg.link_rule == "lead":
        ents &= {index.lead(p) for p in range(len(ids))}
    mass, seed = propagate(index, walk, base, ents, damping=cfg.damping,
                           sharpness=cfg.seed_sharpness, entity_weight=cfg.entity_seed_weight)
    out: list[Evidence] = []
    for d in np.lexsort((np.arange(mass.size), -seed, -mass))[: max(RERANK_K, len(mine))]:
        if mass[d] <= 0:
            break
        out.append(_ranked(graph, ids[int(d)], float(mass[d]), mine.get(ids[int(d)]), method))
    out += [_noted(e, 0.0, float(e.score)) for e in items if e.kind != "passage"]
    return out


def _ranked(graph: KnowledgeGraph, pid: str, score: float, item: Evidence | None,
            method: str) -> Evidence:
    if item is not None:
        return _noted(item, score, float(item.score))
    passage = graph.passages[pid]
    trace: dict[str, Any] = {"passage_ids": [pid], "rerank": "propagation",
                             "method_score": None}
    return Evidence(pid, passage.text, score, "passage", method, trace=trace,
                    source_metadata=passage.metadata)
