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

Where the graph lives is behind one seam, :class:`TypedAccess`: the steps above
(:func:`retrieve_typed`) read candidates in node order, their ``t(v)``, their scores, the
edges at the hits and passages by id through it. :class:`MemoryAccess` reads the whole-graph
arrays of a :class:`~kgpath.index.GraphIndex`; the database access
(:mod:`kgpath.methods.schema.cypher`) fetches only what a sub-question reaches. Both feed the
same filter, ranking and merge code, so their results are equal by construction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from kgpath.graph import Edge, KnowledgeGraph, Node, Passage
from kgpath.index.graph_index import GraphIndex
from kgpath.ingest.hierarchy import CommunityRouter, is_layer_node
from kgpath.ingest.schema import Schema
from kgpath.methods.schema.config import SchemaRetrieverConfig
from kgpath.methods.schema.decompose import InvolvedTypes, SubQuestion
from kgpath.methods.schema.result import EvidenceItem, SubQuestionResult
from kgpath.search.vector import top_k

__all__ = [
    "Block",
    "EdgeRecord",
    "MemoryAccess",
    "TypedAccess",
    "TypedJob",
    "category_mean",
    "edge_schema_type",
    "full_match",
    "node_attributes",
    "node_schema_type",
    "provenance_passages",
    "retrieve_sub_question",
    "retrieve_typed",
    "type_match",
]

#: ``t(v)`` at or above this is a full match (every constrained category satisfied); the
#: margin absorbs float32 rounding of the mean.
_FULL = 1.0 - 1e-6


# ---------------------------------------------------------------------- schema types
def node_schema_type(schema: Schema, node: Node) -> str | None:
    """Canonical entity type of ``node``: its ``metadata["schema_type"]``, else its type."""
    return schema.resolve("entity", str(node.metadata.get("schema_type") or node.type or ""))


def node_attributes(schema: Schema, node: Node) -> frozenset[str]:
    """Canonical attribute types of ``node`` (keys of ``metadata["attributes"]`` and metadata)."""
    keys = set(dict(node.metadata.get("attributes") or {}))
    keys |= {k for k in node.metadata if k not in ("attributes", "schema_type")}
    return frozenset(a for a in (schema.resolve("attribute", k) for k in keys) if a is not None)


def edge_schema_type(schema: Schema, edge: Edge) -> str | None:
    """Canonical relation type of ``edge``: ``metadata["schema_type"]``, type, or relation."""
    label = edge.metadata.get("schema_type") or edge.type or edge.relation
    return schema.resolve("relation", str(label or ""))


def category_mean(cats: Sequence[np.ndarray]) -> np.ndarray:
    """``t(v)``: the float32 mean of the category indicators (one bool array per category)."""
    return np.mean(np.vstack(cats).astype(np.float32), axis=0)


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
            t = node_schema_type(schema, nd)
            if t is not None:
                self.node_type[i] = self.ent_id[t]
            self.layer[i] = is_layer_node(nd.metadata)
            self.attrs.append(node_attributes(schema, nd))
        m = graph.num_edges
        self.edge_type = np.full(m, -1, dtype=np.int32)
        self.edge_layer = np.zeros(m, dtype=bool)
        self.src = np.empty(m, dtype=np.int64)
        self.dst = np.empty(m, dtype=np.int64)
        for j, e in enumerate(graph.edges):
            r = edge_schema_type(schema, e)
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
    return category_mean(cats), edge_ok


def full_match(affinity: np.ndarray) -> np.ndarray:
    """The filter's AND: ``t(v) = 1``, i.e. every constrained category is satisfied."""
    return affinity >= _FULL


# ---------------------------------------------------------------------- the seam
@dataclass(frozen=True)
class Block:
    """Candidates in node order (all of them in memory, one page on a store).

    ``keys`` are the access's node handles (node indices in memory, rows on a store),
    ``affinity`` their ``t(v)`` (``None`` when no types apply).
    """

    keys: Sequence[Any] | np.ndarray
    affinity: np.ndarray | None


@dataclass(frozen=True)
class EdgeRecord:
    """An edge at a retrieved node, as typed retrieval reads it."""

    edge: Edge
    source: Any
    """Handle of the source node (what :meth:`TypedAccess.score` takes)."""
    target: Any
    source_name: str
    target_name: str
    relation_type: str | None
    """Canonical relation type (:func:`edge_schema_type`)."""
    layer: bool


@dataclass(frozen=True)
class TypedJob:
    """One sub-question's retrieval inputs."""

    i: int
    sq: SubQuestion
    qv: np.ndarray
    cfg: SchemaRetrieverConfig
    trace: dict[str, Any] = field(default_factory=dict)


class TypedAccess(Protocol):
    """Where typed retrieval reads the graph (in memory, or a store)."""

    def scope(self, job: TypedJob) -> Any:
        """The sub-question's candidate scope (routing); sets ``trace["candidates"]``."""
        ...

    def filtered(self, job: TypedJob, scope: Any, types: InvolvedTypes) -> list[Block]:
        """The candidates with ``t(v) = 1``, in node order."""
        ...

    def scan(self, job: TypedJob, scope: Any, types: InvolvedTypes | None) -> Iterable[Block]:
        """Every candidate in node order (blocks in order), with ``t(v)`` when ``types``."""
        ...

    def score(self, job: TypedJob, keys: Sequence[Any] | np.ndarray) -> np.ndarray:
        """Base scores of the nodes ``keys`` for this sub-question."""
        ...

    def node(self, key: Any) -> tuple[Node, str | None]:
        """The node record of ``key`` and its canonical schema type."""
        ...

    def order(self, key: Any) -> Any:
        """A sort key of ``key`` in node order."""
        ...

    def incident_edges(self, hits: Sequence[Any]) -> list[EdgeRecord]:
        """Edges touching any of ``hits`` (either direction), once each, in edge order."""
        ...

    def passages(self, ids: Sequence[str]) -> Mapping[str, Passage]:
        """The passages with these ids that the graph holds."""
        ...


class MemoryAccess:
    """:class:`TypedAccess` over a :class:`GraphIndex` and its whole-graph type table."""

    def __init__(self, index: GraphIndex, table: _TypeTable,
                 router: CommunityRouter | None = None) -> None:
        self.index, self.table, self.router = index, table, router

    def scope(self, job: TypedJob) -> np.ndarray:
        """Base nodes (layer nodes unless asked for), narrowed to routed communities if any."""
        cand = np.arange(len(self.index.graph), dtype=np.int64)
        if not job.cfg.include_layer_nodes:
            cand = cand[~self.table.layer]
        if self.router is not None:
            members, routed = self.router.candidates(job.qv, job.cfg.route_top_communities)
            cand = np.intersect1d(cand, members)
            job.trace["routed_communities"] = routed
        job.trace["candidates"] = int(cand.size)
        return cand

    def filtered(self, job: TypedJob, scope: np.ndarray, types: InvolvedTypes) -> list[Block]:
        """``scope`` where :func:`full_match`."""
        tm, _ = type_match(self.table, types)
        assert tm is not None  # types is not empty
        keep = scope[full_match(tm[scope])]
        return [Block(keep, tm[keep])]

    def scan(self, job: TypedJob, scope: np.ndarray,
             types: InvolvedTypes | None) -> list[Block]:
        """All of ``scope`` in one block."""
        tm = None if types is None else type_match(self.table, types)[0]
        return [Block(scope, None if tm is None else tm[scope])]

    def score(self, job: TypedJob, keys: Sequence[Any] | np.ndarray) -> np.ndarray:
        """:meth:`GraphIndex.score_candidates` (vector, BM25 or hybrid)."""
        return self.index.score_candidates(job.sq.text, job.qv, np.asarray(keys, np.int64),
                                           mode=job.cfg.mode, alpha=job.cfg.alpha)

    def node(self, key: Any) -> tuple[Node, str | None]:
        """The node at index ``key``."""
        t = self.table.node_type[key]
        return self.index.graph.node_at(int(key)), self.table.ent_names[t] if t >= 0 else None

    def order(self, key: Any) -> int:
        """The node index."""
        return int(key)

    def incident_edges(self, hits: Sequence[Any]) -> list[EdgeRecord]:
        """From the CSR arrays."""
        g, table = self.index.graph, self.table
        csr = g.csr()
        parts: list[np.ndarray] = []
        for d in ("out", "in"):
            ip, ed = csr[f"{d}_indptr"], csr[f"{d}_edges"]
            parts.extend(ed[ip[h]: ip[h + 1]] for h in hits)
        eids = np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
        out = []
        for j in eids:
            e, t = g.edge_at(int(j)), table.edge_type[j]
            out.append(EdgeRecord(
                e, int(table.src[j]), int(table.dst[j]), g.node(e.source).name,
                g.node(e.target).name, table.rel_names[t] if t >= 0 else None,
                bool(table.edge_layer[j])))
        return out

    def passages(self, ids: Sequence[str]) -> Mapping[str, Passage]:
        """The graph's passages."""
        return self.index.graph.passages


# ---------------------------------------------------------------------- the steps
def retrieve_sub_question(
    index: GraphIndex,
    i: int,
    sq: SubQuestion,
    qv: np.ndarray,
    cfg: SchemaRetrieverConfig,
    table: _TypeTable,
    router: CommunityRouter | None = None,
) -> SubQuestionResult:
    """Typed retrieval for sub-question ``i`` on an in-memory index (:class:`MemoryAccess`)."""
    return retrieve_typed(MemoryAccess(index, table, router), i, sq, qv, cfg)


def retrieve_typed(
    access: TypedAccess, i: int, sq: SubQuestion, qv: np.ndarray, cfg: SchemaRetrieverConfig
) -> SubQuestionResult:
    """Typed retrieval for sub-question ``i``: nodes, incident triples, provenance passages."""
    job = TypedJob(i, sq, qv, cfg, {"types": sq.types.to_dict()})
    types = None if cfg.type_mode == "off" or sq.types.is_empty else sq.types
    scope = access.scope(job)
    blocks, mode = _candidates(access, job, scope, types)
    nodes, hits = _rank_nodes(access, job, blocks, mode)
    triples = _rank_triples(access, job, mode, types, hits)
    cited = list(dict.fromkeys(p for it in nodes + triples for p in it.provenance))
    known = access.passages(cited) if cited and cfg.k_passages else {}
    passages = provenance_passages(known, i, nodes + triples, cfg.k_passages)
    return SubQuestionResult(i, sq.text, sq.types, tuple(nodes), tuple(triples),
                             tuple(passages), job.trace)


def _candidates(
    access: TypedAccess, job: TypedJob, scope: Any, types: InvolvedTypes | None
) -> tuple[Iterable[Block], str]:
    """The type filter before scoring (AND over categories) and its empty-result policy."""
    cfg, trace = job.cfg, job.trace
    mode = cfg.type_mode if types is not None else "off"
    blocks: Iterable[Block]
    if mode == "filter" and types is not None:
        blocks = access.filtered(job, scope, types)
        kept = sum(len(b.keys) for b in blocks)
        trace["filtered_out"] = int(trace["candidates"] - kept)
        if kept == 0:
            trace["filter_empty"] = True
            if cfg.empty_filter == "boost":
                mode = "boost"
                trace["fallback"] = "boost (filter matched no candidate)"
                blocks = access.scan(job, scope, types)
    else:
        blocks = access.scan(job, scope, types)
    trace["type_mode_used"] = mode
    return blocks, mode


def _rank_nodes(
    access: TypedAccess, job: TypedJob, blocks: Iterable[Block], mode: str
) -> tuple[list[EvidenceItem], list[Any]]:
    """Top-``k`` nodes by base score (+ ``β · t(v)`` in boost mode), and their handles.

    Blocks come in node order; each keeps its own top ``k`` and the merge breaks ties by
    (block, position), i.e. by node order, as one :func:`top_k` over all candidates would.
    """
    cfg = job.cfg
    best: list[tuple[float, int, int, float, float | None, Any]] = []
    for b_no, b in enumerate(blocks):
        if not len(b.keys):
            continue
        base = access.score(job, b.keys)
        tm = b.affinity
        boosted = mode == "boost" and tm is not None
        bonus = cfg.boost * tm if boosted else np.zeros_like(base)  # type: ignore[operator]
        final = base + bonus
        for p in top_k(final, min(cfg.k, len(b.keys))):
            best.append((float(final[p]), b_no, int(p), float(base[p]),
                         float(tm[p]) if tm is not None else None, b.keys[p]))
        best.sort(key=lambda c: (-c[0], c[1], c[2]))
        del best[cfg.k:]
    items = []
    for score, _, _, base_score, aff, key in best:
        nd, typ = access.node(key)
        items.append(EvidenceItem(
            kind="node", key=nd.id, text=nd.search_text, score=score,
            sub_questions=(job.i,), schema_type=typ, base_score=base_score,
            type_affinity=aff, node=nd,
        ))
    return items, [c[5] for c in best]


def _filter_edges(
    recs: list[EdgeRecord], ok: np.ndarray | None, mode: str, job: TypedJob,
) -> tuple[list[EdgeRecord], np.ndarray | None, str]:
    """``[type(e) ∈ R]`` as a filter, falling back to boost when it would empty the list."""
    if mode != "filter" or ok is None:
        return recs, ok, mode
    kept = [r for r, m in zip(recs, ok, strict=True) if m]
    if kept or job.cfg.empty_filter == "empty":
        job.trace["triples_filtered_out"] = len(recs) - len(kept)
        return kept, np.ones(len(kept), dtype=bool), mode
    job.trace["triple_fallback"] = "boost (no incident edge of the involved relations)"
    return recs, ok, "boost"


def _rank_triples(
    access: TypedAccess, job: TypedJob, mode: str, types: InvolvedTypes | None,
    hits: list[Any],
) -> list[EvidenceItem]:
    """Top-``k_triples`` incident edges by the mean base score of their ends (+ type bonus)."""
    cfg = job.cfg
    if cfg.k_triples == 0 or not hits:
        return []
    recs = [r for r in access.incident_edges(hits) if not r.layer]
    if not recs:
        return []
    ok = None if types is None or not types.relations else np.fromiter(
        (r.relation_type in types.relations for r in recs), dtype=bool, count=len(recs))
    recs, ok, mode = _filter_edges(recs, ok, mode, job)
    if not recs:
        return []
    ends = sorted({h for r in recs for h in (r.source, r.target)}, key=access.order)
    pos_of = dict(zip(ends, (float(x) for x in access.score(job, ends)), strict=True))
    base = np.asarray([(pos_of[r.source] + pos_of[r.target]) / 2 for r in recs],
                      dtype=np.float32)
    match = ok.astype(np.float32) if ok is not None else None
    final = base + cfg.boost * match if (mode == "boost" and match is not None) else base
    return [_triple_item(job, recs[p], float(final[p]), float(base[p]),
                         float(match[p]) if match is not None else None)
            for p in top_k(final, min(cfg.k_triples, len(recs)))]


def _triple_item(
    job: TypedJob, rec: EdgeRecord, score: float, base: float, affinity: float | None
) -> EvidenceItem:
    e = rec.edge
    text = f"{rec.source_name} -[{e.relation}]-> {rec.target_name}"
    if e.text and e.text != f"{e.source} {e.relation} {e.target}":
        text += f" ({e.text})"
    return EvidenceItem(
        kind="triple", key=f"{e.source}|{e.relation}|{e.target}", text=text, score=score,
        sub_questions=(job.i,), schema_type=rec.relation_type,
        base_score=base, type_affinity=affinity, edge=e,
    )


def provenance_passages(
    graph: KnowledgeGraph | Mapping[str, Passage], i: int, items: list[EvidenceItem],
    k_passages: int,
) -> list[EvidenceItem]:
    """The ``k_passages`` passages cited by ``items``, each scored by its best citing item.

    ``graph`` is the graph, or a mapping holding (at least) the passages the items cite.
    Ties keep first-seen order (items in the given order, each item's provenance in order).
    """
    if k_passages == 0:
        return []
    known = graph.passages if isinstance(graph, KnowledgeGraph) else graph
    score: dict[str, float] = {}
    for it in items:
        for pid in it.provenance:
            if pid in known and (pid not in score or it.score > score[pid]):
                score[pid] = it.score
    ranked = sorted(score, key=lambda p: -score[p])[:k_passages]  # stable: first seen
    return [EvidenceItem(kind="passage", key=p, text=known[p].text, score=score[p],
                         sub_questions=(i,), passage=known[p], base_score=score[p])
            for p in ranked]
