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

A kgpath extension, :func:`seed_text_units` (``PathRAGConfig.seed_passages``, on for
``unit_order="question"``), adds the question's most similar passages to the local
candidates, so a passage no retrieved entity cites can still be ranked: the authors'
Sources only hold passages of ``V_q``, and on the offline HotpotQA-100 and 2Wiki-100 graphs
every gold passage dense retrieval has in its top 5 and PathRAG's defaults lose was cited by
no retrieved entity (HotpotQA q0-49: 1 of 1; 2Wiki-100: 9 of 9), never one ranked too low.
``count = 5`` was chosen on HotpotQA-100 q0-49 (R@5 88 -> 89; 5 is the smallest count
reaching that, equal to the facade's ``k``), then confirmed once on 2Wiki-100 (R@2/R@5
59.2/66.5 -> 62.0/68.8, dense 62.5/66.8).

The code truncates the list to ``max_token_for_text_unit = 4000`` tokens; kgpath leaves the
cut to the caller's ``k``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kgpath.graph import Edge, KnowledgeGraph
from kgpath.methods.pathrag.flow import FlowAdjacency
from kgpath.methods.pathrag.nodes import RetrievedNode, RetrievedRelation
from kgpath.search.vector import top_k

__all__ = [
    "QUESTION_WEIGHT", "TextUnit", "entity_text_units", "passage_citations",
    "prompt_text_units", "relation_text_units", "seed_candidates", "seed_text_units",
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
    seeded: bool = False
    """A passage of the question's own nearest passages that no retrieved entity cites
    (:func:`seed_text_units`); ``node_id`` is then its most similar citing node, if any."""


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


def seed_text_units(
    graph: KnowledgeGraph,
    units: Sequence[TextUnit],
    passage_similarity: Mapping[str, float],
    count: int,
    question_weight: float,
    node_vectors: np.ndarray | None = None,
    node_queries: np.ndarray | None = None,
    cited_by: Mapping[str, Sequence[int]] | None = None,
) -> list[TextUnit]:
    """Add the question's ``count`` most similar passages to the local text units (kgpath).

    ``unit_order="question"`` ranks every candidate passage ``p`` by
    ``w·cos(q, p) + (1 − w)·s(p)``, ``s(p)`` the similarity of the first retrieved entity
    citing ``p``. The candidates are the passages of ``V_q`` only, so a passage no retrieved
    entity cites is never returned, however similar to the question. Here the ``count``
    passages of ``passage_similarity`` (passage id -> ``cos(q, p)``) with the highest cosine
    (ties: mapping order) join the candidates when they are not there yet, with
    ``s(p) = max cos(k, v)`` over the nodes ``v`` citing ``p`` (``cited_by``, node indices;
    from the graph when ``None``) and the node-query vectors ``k`` (``node_queries`` over
    the rows of ``node_vectors``, section 4.1's matrix): for the defaults' joined node query,
    the value ``s`` would have had had ``p``'s best entity been retrieved (no node outside
    ``V_q`` is more similar than the last inside). No node queries or citing nodes: 0.
    Relation units stay first; the local units and the seeds rank together by the rule
    above, ties by ``order`` (a seed comes after every entity). ``count = 0`` returns
    ``units`` unchanged. A deviation from the authors' code (module docstring: evidence).

    Examples
    --------
    >>> g = KnowledgeGraph()
    >>> for pid in ("p", "s"):
    ...     _ = g.add_passage(pid, pid)
    >>> _ = g.add_node("a", provenance=["p"])
    >>> _ = g.add_node("b", provenance=["s"])
    >>> units = [TextUnit("p", 0, 0, "a", None, 0.5, ("a",))]
    >>> vecs, query = np.array([[1.0, 0.0], [0.6, 0.8]]), np.array([[0.0, 1.0]])
    >>> out = seed_text_units(g, units, {"p": 0.2, "s": 0.6}, 1, 0.7, vecs, query)
    >>> [(u.passage_id, u.node_id, round(u.similarity, 2), u.seeded) for u in out]
    [('s', 'b', 0.8, True), ('p', 'a', 0.5, False)]
    """
    if count <= 0 or not passage_similarity:
        return list(units)
    have = {u.passage_id for u in units}
    local = [u for u in units if u.edge is None]
    after = 1 + max((u.order for u in local), default=-1)
    cited = passage_citations(graph) if cited_by is None else cited_by
    for pid in seed_candidates(passage_similarity, count):
        if pid in have or pid not in graph.passages:
            continue
        node, s = _best_citing(cited.get(pid, ()), node_vectors, node_queries)
        local.append(TextUnit(pid, after, 0, None if node is None else graph.node_at(node).id,
                              None, s, (), True))
    w = question_weight
    local.sort(key=lambda u: (
        -(w * passage_similarity.get(u.passage_id, 0.0) + (1.0 - w) * u.similarity), u.order))
    return [*(u for u in units if u.edge is not None), *local]


def seed_candidates(passage_similarity: Mapping[str, float], count: int) -> list[str]:
    """The ``count`` passages :func:`seed_text_units` may seed: highest cosine, ties in order.

    >>> seed_candidates({"p": 0.2, "s": 0.6, "t": 0.6}, 2)
    ['s', 't']
    """
    ids = list(passage_similarity)
    sims = np.fromiter(passage_similarity.values(), dtype=np.float64, count=len(ids))
    return [ids[i] for i in top_k(sims, count).tolist()]


def passage_citations(
    graph: KnowledgeGraph, store: dict[str, Any] | None = None
) -> dict[str, list[int]]:
    """``passage id -> indices of the nodes citing it``, in node order.

    With ``store`` (e.g. :attr:`PassageVectors.derived
    <kgpath.index.passage_vectors.PassageVectors.derived>` of the graph's version) the map is
    kept under ``"cited_by"`` and reused: the same map, same key, as
    :meth:`InMemoryBackend.nodes_citing <kgpath.backends.memory.InMemoryBackend.nodes_citing>`.
    """
    got = None if store is None else store.get("cited_by")
    if got is None:
        got = {}
        for i, n in enumerate(graph.nodes):
            for p in dict.fromkeys(n.provenance):
                got.setdefault(p, []).append(i)
        if store is not None:
            store["cited_by"] = got
    return got  # type: ignore[no-any-return]


def _best_citing(
    nodes: Sequence[int], vectors: np.ndarray | None, queries: np.ndarray | None
) -> tuple[int | None, float]:
    """The citing node most similar to any node query, and that cosine (``0.0`` without)."""
    if not len(nodes) or vectors is None or queries is None or not len(queries):
        return None, 0.0
    sims = np.asarray(vectors, np.float32)[list(nodes)] @ np.atleast_2d(
        np.asarray(queries, np.float32)).T
    best = sims.max(axis=1)
    j = int(np.argmax(best))  # the first node (node order) at the maximum
    return int(nodes[j]), float(best[j])


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
