"""The fusion rule of the graph-augmented retriever: the best two-passage chain.

Notation: ``s(d)`` is the base retriever's score of passage ``d`` (cosine to the question
by default), ``M(q)`` the passages citing an entity the question names (entity linking),
``S`` the seed passages (the base retriever's top ``m``, plus ``M(q)``).

1. Seed score ``s'(d) = s(d) + γ [d ∈ M(q)]`` (:func:`seed_scores`).
2. Links (:meth:`PassageEntityIndex.links`): seed ``a`` and passage ``d != a`` are linked
   when they cite a common entity (``expansion="entities"``) or ``d`` cites a graph
   neighbour of one of ``a``'s entities (``"neighbours"``); only entities cited by at most
   ``max_entity_passages`` passages link anything. With ``link_rule="lead"`` (default) the
   linking entity must also be the *lead entity* of ``a`` or ``d``: the entity a passage
   names first (:meth:`PassageEntityIndex.lead`), which for encyclopedic text is what the
   passage is about, so the link reads "one passage names the other's subject" (a
   hyperlink, as in ``mention_expansion``). ``"shared"`` accepts any common entity.
   Likewise ``M(q)`` holds, under ``"lead"``, the passages whose lead entity the question
   names.
3. Chain score (:func:`chain_scores`):
   ``score(d) = s'(d) + max(max_{a ∈ S, a != d} s'(a), max_{a ∈ S linked to d} s'(a) + β)``.
   A passage no seed links to keeps its base order (its partner is the best other seed), so
   the rule only moves up passages a strong seed links to: the second passage of a bridge
   question, which shares the bridge entity with the first but little vocabulary with the
   question. Ties fall to ``s'(d)``, then the passage order.

This is the rule of ``mention_expansion`` (:mod:`kgpath.methods.traversal.mentions`) over
the entity graph instead of title mentions. Cost per query: ``O(P d)`` for the base scores
plus ``O(Σ_{a ∈ S} Σ_{e ∈ E(a)} |P(e)|)`` for the links.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from kgpath.graph import KnowledgeGraph

__all__ = ["Link", "PassageEntityIndex", "chain_scores", "seed_scores"]


@dataclass(frozen=True)
class Link:
    """Seed passage ``seed`` links passage ``target`` through ``entity`` (node index)."""

    seed: int
    target: int
    entity: int


class PassageEntityIndex:
    """Which entities each passage cites and which passages each entity is cited by.

    Built from node provenance (the passages an entity was extracted from).

    Examples
    --------
    >>> g = KnowledgeGraph.from_triples([("A", "r", "B")], {"p": "A r B", "q": "B"},
    ...                                 provenance=[["p"]])
    >>> _ = g.add_node("B", provenance=("p", "q"))
    >>> idx = PassageEntityIndex(g, ["p", "q"])
    >>> idx.entities_of(0), idx.passages_of(g.index_of("B"))
    ([0, 1], [0, 1])
    """

    def __init__(self, graph: KnowledgeGraph, passage_ids: Sequence[str]) -> None:
        self.graph = graph
        self.passage_ids = list(passage_ids)
        pos = {p: i for i, p in enumerate(self.passage_ids)}
        self._of_entity: list[list[int]] = []
        self._of_passage: list[list[int]] = [[] for _ in self.passage_ids]
        for e, node in enumerate(graph.nodes):
            cited = sorted({pos[p] for p in node.provenance if p in pos})
            self._of_entity.append(cited)
            for p in cited:
                self._of_passage[p].append(e)
        self.version = graph.version
        self._lead = [self._first_named(p, self._of_passage[i])
                      for i, p in enumerate(self.passage_ids)]

    def _first_named(self, pid: str, entities: Sequence[int]) -> int:
        """The entity whose name occurs first in the passage text (longer name on ties)."""
        text = self.graph.passages[pid].text.lower()
        best, key = -1, (len(text) + 1, 0)
        for e in entities:
            name = (self.graph.node_at(e).name or "").lower()
            at = text.find(name) if name else -1
            if at >= 0 and (at, -len(name)) < key:
                best, key = e, (at, -len(name))
        return best

    def lead(self, passage: int) -> int:
        """Node index of the entity passage ``passage`` names first (``-1``: none found)."""
        return self._lead[passage]

    def entities_of(self, passage: int) -> list[int]:
        """Node indices of the entities passage ``passage`` cites."""
        return list(self._of_passage[passage])

    def passages_of(self, entity: int) -> list[int]:
        """Passage positions citing node ``entity``."""
        return list(self._of_entity[entity])

    def df(self, entity: int) -> int:
        """How many passages cite ``entity``."""
        return len(self._of_entity[entity])

    def _expanded(self, entities: Iterable[int], neighbours: bool, cap: int) -> set[int]:
        out = {e for e in entities if self.df(e) <= cap}
        if neighbours:
            for e in list(out):
                nb = self.graph.neighbors(e, "both").tolist()
                out.update(int(x) for x in nb if self.df(int(x)) <= cap)
        return out

    def links(self, seeds: Sequence[int], *, neighbours: bool, cap: int,
              lead: bool = True) -> list[Link]:
        """Every ``(seed, passage, entity)`` link, seeds in the given order.

        ``lead``: keep a link only when its entity is the lead entity of either passage.
        """
        out: list[Link] = []
        for a in seeds:
            for e in sorted(self._expanded(self._of_passage[a], neighbours, cap)):
                out.extend(Link(a, d, e) for d in self._of_entity[e] if d != a and (
                    not lead or e in (self._lead[a], self._lead[d])))
        return out


def seed_scores(base: np.ndarray, mentioned: Sequence[int], gamma: float) -> np.ndarray:
    """``s'(d) = s(d) + γ [d ∈ M(q)]``.

    Examples
    --------
    >>> seed_scores(np.array([0.5, 0.25]), [1], 0.5).tolist()
    [0.5, 0.75]
    """
    s = np.asarray(base, dtype=np.float64).copy()
    if len(mentioned):
        s[np.asarray(sorted(set(mentioned)), np.int64)] += gamma
    return s


def chain_scores(s: np.ndarray, seeds: Sequence[int], links: Sequence[Link],
                 beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Best chain score of every passage and the seed realising it (``-1``: none).

    Examples
    --------
    Passage 2 is weak alone but linked to the best seed 0:

    >>> s = np.array([0.9, 0.6, 0.5])
    >>> score, partner = chain_scores(s, [0, 1], [Link(0, 2, 7)], beta=0.2)
    >>> np.round(score, 2).tolist(), partner.tolist()
    ([1.5, 1.5, 1.6], [1, 0, 0])
    """
    n = s.size
    seeds = list(dict.fromkeys(int(a) for a in seeds))
    best = np.full(n, -np.inf)
    partner = np.full(n, -1, dtype=np.int64)
    if seeds:
        order = sorted(seeds, key=lambda a: (-s[a], a))
        best[:] = s[order[0]]
        partner[:] = order[0]
        if len(order) > 1:
            best[order[0]], partner[order[0]] = s[order[1]], order[1]
        else:
            best[order[0]], partner[order[0]] = 0.0, -1
    for link in links:
        val = s[link.seed] + beta
        if val > best[link.target] or (val == best[link.target] and beta > 0):
            best[link.target], partner[link.target] = val, link.seed
    return s + best, partner
