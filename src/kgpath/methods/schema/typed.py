"""Pattern step 5, typed retrieval: filter or bias the search toward the involved types.

For the involved types of a sub-question, ``N`` (entity), ``R`` (relation) and ``A``
(attribute), each non-empty category gives an indicator per node ``v``:
``[type(v) ∈ N]``, ``[v has an edge typed in R]`` and ``[v has an attribute in A]``.

* ``type_mode="filter"`` (the pattern's *type_filter=plan.involved_types*, applied "before
  scoring") keeps only candidates that satisfy **every** category the sub-question
  constrains: a filter on ``{nodes, relations, attributes}`` narrows the search on each
  dimension it names, so the categories combine with AND (within a category, any listed type
  will do). Issue 12 fixed the earlier OR, which let e.g. an off-type node through because it
  touched an edge of an involved relation.
* ``type_mode="boost"`` (the pattern's "bias ... toward those schema types") scores every
  candidate and adds ``β · t(v)``, where the type affinity ``t(v) ∈ [0, 1]`` is the mean of
  the indicators over the non-empty categories (``β = boost``), so a partial match still
  counts for something.
* ``type_mode="off"`` ignores types.

Base scores come from :meth:`kgpath.index.GraphIndex.score_candidates` (vector, BM25 or
hybrid). Triples are the edges incident to the retrieved nodes, scored by the mean base score
of their two ends and filtered/boosted by ``[type(e) ∈ R]``; passages are the provenance of
the retrieved nodes and triples, scored by the best item citing them.

Complexity per sub-question: one query embedding, O(|C|·d) scoring over the candidate set
``C`` (all base nodes, the type-filtered subset, or the members of routed communities), and
O(|E|) to compute the relation indicator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex
from kgpath.ingest.hierarchy import CommunityRouter, is_layer_node
from kgpath.ingest.schema import Schema
from kgpath.methods.schema.config import SchemaRetrieverConfig
from kgpath.methods.schema.decompose import InvolvedTypes, SubQuestion
from kgpath.methods.schema.result import EvidenceItem, SubQuestionResult
from kgpath.search.vector import top_k

__all__ = ["full_match", "provenance_passages", "retrieve_sub_question", "type_match"]

#: ``t(v)`` at or above this is a full match (every constrained category satisfied); the
#: margin absorbs float32 rounding of the mean.
_FULL = 1.0 - 1e-6


class _TypeTable:
    """Per-graph arrays of canonical schema types (built once per graph version)."""

    def __init__(self, graph: KnowledgeGraph, schema: Schema) -> None:
        self.version = graph.version
        ents = schema.names("entity")
        rels = schema.names("relation")
        self.ent_id = {n: i for i, n in enumerate(ents)}
        self.rel_id = {n: i for i, n in enumerate(rels)}
        n = len(graph)
        self.node_type = np.full(n, -1, dtype=np.int32)
        self.layer = np.zeros(n, dtype=bool)
        self.attrs: list[frozenset[str]] = []
        for i, nd in enumerate(graph.nodes):
            t = schema.resolve("entity", str(nd.metadata.get("schema_type") or nd.type or ""))
            if t is not None:
                self.node_type[i] = self.ent_id[t]
            self.layer[i] = is_layer_node(nd.metadata)
            keys = set(dict(nd.metadata.get("attributes") or {}))
            keys |= {k for k in nd.metadata if k not in ("attributes", "schema_type")}
            self.attrs.append(frozenset(
                a for a in (schema.resolve("attribute", k) for k in keys) if a is not None
            ))
        m = graph.num_edges
        self.edge_type = np.full(m, -1, dtype=np.int32)
        self.edge_layer = np.zeros(m, dtype=bool)
        self.src = np.empty(m, dtype=np.int64)
        self.dst = np.empty(m, dtype=np.int64)
        for j, e in enumerate(graph.edges):
            label = e.metadata.get("schema_type") or e.type or e.relation
            r = schema.resolve("relation", str(label or ""))
            if r is not None:
                self.edge_type[j] = self.rel_id[r]
            self.edge_layer[j] = is_layer_node(e.metadata)
            self.src[j] = graph.index_of(e.source)
            self.dst[j] = graph.index_of(e.target)
        self.ent_names = ents
        self.rel_names = rels


def type_match(
    table: _TypeTable, types: InvolvedTypes
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(t(v) for every node, [type(e) ∈ R] for every edge)``; ``None`` for no types.

    ``t(v)`` is the mean over the non-empty categories among ``N``, ``R``, ``A`` of the
    indicators defined in the module docstring: boost mode adds ``β · t(v)``, the filter
    keeps ``t(v) = 1`` (:func:`full_match`, every category satisfied).
    """
    cats: list[np.ndarray] = []
    edge_ok: np.ndarray | None = None
    n = table.node_type.shape[0]
    if types.nodes:
        ids = [table.ent_id[t] for t in types.nodes if t in table.ent_id]
        cats.append(np.isin(table.node_type, ids))
    if types.relations:
        ids = [table.rel_id[t] for t in types.relations if t in table.rel_id]
        edge_ok = np.isin(table.edge_type, ids)
        ind = np.zeros(n, dtype=bool)
        ind[table.src[edge_ok]] = True
        ind[table.dst[edge_ok]] = True
        cats.append(ind)
    if types.attributes:
        want = set(types.attributes)
        cats.append(np.fromiter((bool(a & want) for a in table.attrs), dtype=bool, count=n))
    if not cats:
        return None, None
    return np.mean(np.vstack(cats).astype(np.float32), axis=0), edge_ok



def full_match(affinity: np.ndarray) -> np.ndarray:
    """The filter's AND: ``t(v) = 1``, i.e. every constrained category is satisfied."""
    return affinity >= _FULL


@dataclass(frozen=True)
class _Job:
    """One sub-question's retrieval inputs (shared, read-only structures included)."""

    index: GraphIndex
    table: _TypeTable
    cfg: SchemaRetrieverConfig
    i: int
    sq: SubQuestion
    qv: np.ndarray

    def score(self, cand: np.ndarray) -> np.ndarray:
        """Base scores of ``cand`` for this sub-question (vector, BM25 or hybrid)."""
        return self.index.score_candidates(self.sq.text, self.qv, cand, mode=self.cfg.mode,
                                           alpha=self.cfg.alpha)


def retrieve_sub_question(
    index: GraphIndex,
    i: int,
    sq: SubQuestion,
    qv: np.ndarray,
    cfg: SchemaRetrieverConfig,
    table: _TypeTable,
    router: CommunityRouter | None = None,
) -> SubQuestionResult:
    """Typed retrieval for sub-question ``i``: nodes, incident triples, provenance passages."""
    job = _Job(index, table, cfg, i, sq, qv)
    trace: dict[str, Any] = {"types": sq.types.to_dict()}
    cand = _candidates(job, router, trace)
    tm, edge_ok = (None, None) if cfg.type_mode == "off" else type_match(table, sq.types)
    cand, mode = _filter_nodes(cand, tm, cfg, trace)
    nodes, hits = _rank_nodes(job, cand, tm, mode)
    triples = _rank_triples(job, mode, edge_ok, hits, trace)
    passages = provenance_passages(index.graph, i, nodes + triples, cfg.k_passages)
    return SubQuestionResult(i, sq.text, sq.types, tuple(nodes), tuple(triples),
                             tuple(passages), trace)


def _candidates(job: _Job, router: CommunityRouter | None, trace: dict[str, Any]) -> np.ndarray:
    """Base nodes (layer nodes unless asked for), narrowed to routed communities if any."""
    cand = np.arange(len(job.index.graph), dtype=np.int64)
    if not job.cfg.include_layer_nodes:
        cand = cand[~job.table.layer]
    if router is not None:
        members, routed = router.candidates(job.qv, job.cfg.route_top_communities)
        cand = np.intersect1d(cand, members)
        trace["routed_communities"] = routed
    trace["candidates"] = int(cand.size)
    return cand


def _filter_nodes(
    cand: np.ndarray,
    tm: np.ndarray | None,
    cfg: SchemaRetrieverConfig,
    trace: dict[str, Any],
) -> tuple[np.ndarray, str]:
    """The type filter before scoring (AND over categories) and its empty-result policy."""
    mode = cfg.type_mode if tm is not None else "off"
    if mode == "filter" and tm is not None:
        keep = cand[full_match(tm[cand])]
        trace["filtered_out"] = int(cand.size - keep.size)
        if keep.size == 0:
            trace["filter_empty"] = True
            if cfg.empty_filter == "empty":
                cand = keep
            else:
                mode = "boost"
                trace["fallback"] = "boost (filter matched no candidate)"
        else:
            cand = keep
    trace["type_mode_used"] = mode
    return cand, mode


def _rank_nodes(
    job: _Job, cand: np.ndarray, tm: np.ndarray | None, mode: str
) -> tuple[list[EvidenceItem], np.ndarray]:
    """Top-``k`` nodes by base score (+ ``β · t(v)`` in boost mode), and their indices."""
    base = job.score(cand)
    boosted = mode == "boost" and tm is not None
    bonus = job.cfg.boost * tm[cand] if boosted else np.zeros_like(base)  # type: ignore[index]
    final = base + bonus
    pos = top_k(final, min(job.cfg.k, int(cand.size)))
    g, table = job.index.graph, job.table
    items = []
    for p in pos:
        v = int(cand[p])
        nd = g.node_at(v)
        t = table.node_type[v]
        items.append(EvidenceItem(
            kind="node", key=nd.id, text=nd.search_text, score=float(final[p]),
            sub_questions=(job.i,), schema_type=table.ent_names[t] if t >= 0 else None,
            base_score=float(base[p]),
            type_affinity=float(tm[v]) if tm is not None else None, node=nd,
        ))
    return items, np.asarray([int(cand[p]) for p in pos], dtype=np.int64)


def _incident_edges(graph: KnowledgeGraph, table: _TypeTable, hits: np.ndarray) -> np.ndarray:
    """Sorted ids of the non-layer edges touching any of ``hits`` (either direction)."""
    csr = graph.csr()
    parts: list[np.ndarray] = []
    for d in ("out", "in"):
        ip, ed = csr[f"{d}_indptr"], csr[f"{d}_edges"]
        parts.extend(ed[ip[h]: ip[h + 1]] for h in hits)
    eids = np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
    return eids[~table.edge_layer[eids]]


def _filter_edges(
    eids: np.ndarray, edge_ok: np.ndarray | None, mode: str, cfg: SchemaRetrieverConfig,
    trace: dict[str, Any],
) -> tuple[np.ndarray, str]:
    """``[type(e) ∈ R]`` as a filter, falling back to boost when it would empty the list."""
    if mode != "filter" or edge_ok is None:
        return eids, mode
    kept = eids[edge_ok[eids]]
    if kept.size or cfg.empty_filter == "empty":
        trace["triples_filtered_out"] = int(eids.size - kept.size)
        return kept, mode
    trace["triple_fallback"] = "boost (no incident edge of the involved relations)"
    return eids, "boost"


def _rank_triples(
    job: _Job, mode: str, edge_ok: np.ndarray | None, hits: np.ndarray,
    trace: dict[str, Any],
) -> list[EvidenceItem]:
    """Top-``k_triples`` incident edges by the mean base score of their ends (+ type bonus)."""
    cfg, table = job.cfg, job.table
    if cfg.k_triples == 0 or hits.size == 0:
        return []
    eids = _incident_edges(job.index.graph, table, hits)
    if eids.size == 0:
        return []
    eids, mode = _filter_edges(eids, edge_ok, mode, cfg, trace)
    if eids.size == 0:
        return []
    ends = np.unique(np.concatenate([table.src[eids], table.dst[eids]]))
    pos_of = {int(v): float(x) for v, x in zip(ends, job.score(ends), strict=True)}
    base = np.asarray([(pos_of[int(table.src[e])] + pos_of[int(table.dst[e])]) / 2
                       for e in eids], dtype=np.float32)
    match = edge_ok[eids].astype(np.float32) if edge_ok is not None else None
    final = base + cfg.boost * match if (mode == "boost" and match is not None) else base
    return [_triple_item(job, int(eids[p]), float(final[p]), float(base[p]),
                         float(match[p]) if match is not None else None)
            for p in top_k(final, min(cfg.k_triples, int(eids.size)))]


def _triple_item(
    job: _Job, eid: int, score: float, base: float, affinity: float | None
) -> EvidenceItem:
    g = job.index.graph
    e = g.edge_at(eid)
    t = job.table.edge_type[eid]
    text = f"{g.node(e.source).name} -[{e.relation}]-> {g.node(e.target).name}"
    if e.text and e.text != f"{e.source} {e.relation} {e.target}":
        text += f" ({e.text})"
    return EvidenceItem(
        kind="triple", key=f"{e.source}|{e.relation}|{e.target}", text=text, score=score,
        sub_questions=(job.i,), schema_type=job.table.rel_names[t] if t >= 0 else None,
        base_score=base, type_affinity=affinity, edge=e,
    )


def provenance_passages(
    graph: KnowledgeGraph, i: int, items: list[EvidenceItem], k_passages: int
) -> list[EvidenceItem]:
    """The ``k_passages`` passages cited by ``items``, each scored by its best citing item.

    Ties keep first-seen order (items in the given order, each item's provenance in order).
    """
    if k_passages == 0:
        return []
    known = graph.passages
    score: dict[str, float] = {}
    for it in items:
        for pid in it.provenance:
            if pid in known and (pid not in score or it.score > score[pid]):
                score[pid] = it.score
    ranked = sorted(score, key=lambda p: -score[p])[:k_passages]  # stable: first seen
    return [EvidenceItem(kind="passage", key=p, text=known[p].text, score=score[p],
                         sub_questions=(i,), passage=known[p], base_score=score[p])
            for p in ranked]
