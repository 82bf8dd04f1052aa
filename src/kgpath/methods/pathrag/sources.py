"""The passages ("Sources") PathRAG puts in its prompt: the text units of the authors' code.

PathRAG's released code (``BUPT-GAMMA/PathRAG``, ``PathRAG/operate.py``) inherits LightRAG's
context builder: besides the paths, the prompt carries a ``-----Sources-----`` table of text
units (passages), chosen from the retrieved entities and relations, not from the paths:

* ``_find_most_related_text_unit_from_entities`` (local, low-level keywords): every passage
  an entity of ``V_q`` was extracted from (``source_id``), sorted by
  ``(order, -relation_counts)``. ``order`` is the position of the *first* entity citing the
  passage in retrieval order; ``relation_counts`` adds, over every entity citing it, the
  entity's graph neighbours that were extracted from the same passage
  (:func:`entity_text_units`).
* ``_find_related_text_unit_from_relationships`` (global, high-level keywords): the passages
  of the retrieved relations in relation order (:func:`relation_text_units`).
* ``combine_contexts`` puts the global text units first, then the local ones, dropping
  repeats (:func:`prompt_text_units`).

The code truncates the list to ``max_token_for_text_unit = 4000`` tokens; kgpath leaves the
cut to the caller's ``k``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kgpath.graph import Edge, KnowledgeGraph
from kgpath.methods.pathrag.flow import FlowAdjacency
from kgpath.methods.pathrag.nodes import RetrievedNode, RetrievedRelation

__all__ = [
    "QUESTION_WEIGHT", "TextUnit", "entity_text_units", "prompt_text_units",
    "relation_text_units",
]

QUESTION_WEIGHT = 0.7
"""``unit_order="question"``: the weight of the passage's cosine, PCR's ``passage_weight``
(chosen for PCR on HotpotQA-100 q0-49; not re-tuned for PathRAG)."""


@dataclass(frozen=True)
class TextUnit:
    """A passage of the authors' Sources table, with the item that brought it in first."""

    passage_id: str
    order: int
    """Position of the first entity (or relation) citing the passage."""
    relation_count: int
    """Local text units: neighbours of the citing entities cited by the same passage."""
    node_id: str | None
    """The first entity citing the passage (``None`` for a relation's passage)."""
    edge: Edge | None
    """The first relation citing the passage (``None`` for an entity's passage)."""
    similarity: float
    """Keyword similarity of that entity or relation."""
    supporting: tuple[str, ...] = ()
    """Every entity citing the passage in retrieval order (a relation's passage: the
    relation's two ends)."""


def entity_text_units(
    graph: KnowledgeGraph,
    adj: FlowAdjacency,
    nodes: Sequence[RetrievedNode],
    passage_similarity: Mapping[str, float] | None = None,
    question_weight: float | None = None,
) -> list[TextUnit]:
    """``_find_most_related_text_unit_from_entities``: passages of ``V_q`` in the code's order.

    ``adj`` gives each entity's neighbours (``get_node_edges`` on the code's undirected
    graph). Only passages the graph holds count (the code drops chunks missing from its
    store). With ``passage_similarity`` (passage id -> cosine to the query) the passages of
    one entity rank by it instead of by relation count (``PathRAGConfig.unit_order=
    "similarity"``, a kgpath extension). With ``question_weight`` ``w`` as well
    (``unit_order="question"``, a kgpath extension) entity order no longer comes first: every
    passage ranks by ``w·cos(q, passage) + (1 − w)·similarity of the first entity citing it``,
    PCR's passage rule (:mod:`kgpath.methods.pcr.passages`) over PathRAG's candidates.

    Examples
    --------
    >>> from kgpath.methods.pathrag.flow import flow_adjacency
    >>> from kgpath.methods.pathrag.nodes import RetrievedNode
    >>> g = KnowledgeGraph.from_triples([("a", "to", "b")], {"p": "a to b"},
    ...                                 provenance=[["p"]])
    >>> units = entity_text_units(g, flow_adjacency(g, "undirected"),
    ...                           [RetrievedNode(g.node("a"), g.index_of("a"), "a", 0.9)])
    >>> [(u.passage_id, u.relation_count) for u in units]  # b also cites p
    [('p', 1)]
    """
    store = graph.passages
    units: dict[str, list] = {}  # pid -> [order, relation count, node, similarity, supporting]
    for order, node in enumerate(nodes):
        own = [p for p in dict.fromkeys(node.node.provenance) if p in store]
        cited = _neighbour_citations(graph, adj, node.index, set(own))
        for pid in own:
            unit = units.setdefault(pid, [order, 0, node.id, node.similarity, []])
            unit[4].append(node.id)
            unit[1] += cited.get(pid, 0)
    if passage_similarity is None:
        ranked = sorted(units.items(), key=lambda kv: (kv[1][0], -kv[1][1]))
    elif question_weight is None:
        sim = passage_similarity
        ranked = sorted(units.items(), key=lambda kv: (kv[1][0], -sim.get(kv[0], -np.inf)))
    else:  # unit_order="question": one ranking over every entity's passages
        sim, w = passage_similarity, question_weight
        ranked = sorted(units.items(), key=lambda kv: (
            -(w * sim.get(kv[0], 0.0) + (1.0 - w) * _score(kv[1][3])), kv[1][0]))
    return [TextUnit(pid, o, rc, via, None, _score(s), tuple(sup))
            for pid, (o, rc, via, s, sup) in ranked]


def relation_text_units(
    graph: KnowledgeGraph, relations: Sequence[RetrievedRelation]
) -> list[TextUnit]:
    """``_find_related_text_unit_from_relationships``: passages of the relations, in order."""
    store = graph.passages
    units: dict[str, TextUnit] = {}
    for order, rel in enumerate(relations):
        ends = (rel.edge.source, rel.edge.target)
        for pid in rel.edge.provenance:
            if pid in store and pid not in units:
                units[pid] = TextUnit(pid, order, 0, None, rel.edge, _score(rel.similarity), ends)
    return list(units.values())


def prompt_text_units(
    graph: KnowledgeGraph,
    adj: FlowAdjacency,
    nodes: Sequence[RetrievedNode],
    relations: Sequence[RetrievedRelation] = (),
    passage_similarity: Mapping[str, float] | None = None,
    question_weight: float | None = None,
) -> list[TextUnit]:
    """``combine_contexts``: the relations' text units first, then the entities', no repeats."""
    out: dict[str, TextUnit] = {}
    local = entity_text_units(graph, adj, nodes, passage_similarity, question_weight)
    for unit in [*relation_text_units(graph, relations), *local]:
        out.setdefault(unit.passage_id, unit)
    return list(out.values())


def _neighbour_citations(
    graph: KnowledgeGraph, adj: FlowAdjacency, index: int, passages: set[str]
) -> dict[str, int]:
    """How many distinct neighbours of node ``index`` cite each of ``passages``."""
    out: dict[str, int] = {}
    for j in adj.indices[adj.indptr[index]:adj.indptr[index + 1]].tolist():
        for pid in set(graph.node_at(j).provenance) & passages:
            out[pid] = out.get(pid, 0) + 1
    return out


def _score(similarity: float) -> float:
    """The keyword similarity as a float score; nodes given by id (no keyword) score 0."""
    s = float(similarity)
    return 0.0 if math.isnan(s) else s
