"""PCR hits to passages ranked by the question (a kgpath extension).

The PCR paper ranks nodes (Eq. 2), not passages; which passages a node stands for is
kgpath's evidence contract (a node's provenance), so how PCR's passages are ordered is a
kgpath choice, not a deviation from an equation. Two orders
(``PCRConfig.passage_order``):

``"hits"``
    Hit order, then each hit's provenance in its stored order: every passage citing the
    best node comes before any passage citing the second, whatever the passages say.
``"question"`` (default)
    PCR's structural constraint is kept (only passages cited by reachable hits, or by the
    anchors, are candidates), and the candidates are ordered by

        ``weight · cos(q, passage) + (1 − weight) · best score of a hit citing it``

    (``passage_weight``); an anchor's passage not cited by a hit has hit score 0. The
    passage vectors are the index's shared ones
    (:func:`kgpath.index.passage_vectors.passage_vectors`: each passage embedded once per
    ``(graph, embedder)``), unit length, so the dot product is the cosine; nothing is
    embedded per query beyond the query vector PCR already has. The candidates come from
    ``passage_hits`` hits (at least ``k``), since with ``k`` = 5 hits there are few.

On HotpotQA-100 (``kgpath eval kg --halves``) hit order wastes the top ranks on long
provenance lists of one node. :data:`PASSAGE_WEIGHT` = 0.7 was chosen on questions 0-49
(weights 0 / 0.5 / 0.7 / 1 with 10 hits per anchor and 0.5 / 0.7 with 5 and 20 hits;
R@5 81-89 there, 20 hits at 0.7 best). Putting the anchors' own passages first
(``anchors_first`` of :func:`rank_passages`) costs 12-18 points of R@5 on q0-49, since
anchors cite many passages that do not answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kgpath.errors import ConfigError
from kgpath.evidence import Evidence, passages_from_sources, rank_items
from kgpath.methods.pcr.config import PASSAGE_WEIGHT

if TYPE_CHECKING:
    from kgpath.backends.base import PassageEntityStore
    from kgpath.graph import KnowledgeGraph, Node
    from kgpath.index.passage_vectors import PassageVectors
    from kgpath.methods.pcr.result import PCRHit, PCRResult

__all__ = ["PASSAGE_WEIGHT", "PassageContext", "question_evidence", "rank_passages",
           "stored_passage_vectors"]


@dataclass(frozen=True)
class PassageContext:
    """What a :class:`PCRResult` needs to rank its passages by the question."""

    query_vector: np.ndarray
    vectors: PassageVectors
    """The index's shared passage vectors (``passage_order="question"``)."""
    pool: tuple[PCRHit, ...] = ()
    """Hits after the first ``k`` (up to ``passage_hits``): passage candidates only."""
    whole_graph: bool = True
    """False when the vectors are a store's, fetched for the cited passages only (the
    result's graph is then a part: no propagation re-rank, which walks the whole graph)."""

    def rows(self) -> Mapping[str, int]:
        """``passage id -> row`` of the matrix (built once per vectors version)."""
        rows = self.vectors.derived.get("pcr_rows")
        if rows is None:
            rows = self.vectors.derived["pcr_rows"] = {
                p: i for i, p in enumerate(self.vectors.ids)}
        return rows  # type: ignore[no-any-return]


def stored_passage_vectors(
    store: PassageEntityStore, graph: KnowledgeGraph, anchors: Sequence[Node],
    hits: Sequence[PCRHit],
) -> PassageVectors:
    """The stored vectors of the passages the hits and anchors cite (a graph store).

    What ``passage_order="question"`` reads, fetched by id instead of held for the whole
    corpus: the store's vectors are the index's (``load_graph`` writes them), so every
    cosine, and the order, equal the in-memory run. The anchors' passages also join
    ``graph`` (the evidence graph of a store holds only what the hits cite). Passages
    without a stored vector get no row (scored by their hit score, as in memory).
    """
    from kgpath.index.passage_vectors import PassageVectors

    ids = list(dict.fromkeys(p for n in (*anchors, *(h.node for h in hits))
                             for p in n.provenance))
    recs = store.passage_records(ids)
    for p in ids:
        rec = recs.get(p)
        if rec is not None and p not in graph.passages:
            graph.add_passage(p, rec.passage.text, rec.passage.metadata)
    have = [p for p in ids if p in recs and recs[p].vector is not None]
    dim = next((len(recs[p].vector) for p in have), 0)  # type: ignore[arg-type]
    matrix = (np.stack([np.asarray(recs[p].vector, np.float32) for p in have])
              if have else np.zeros((0, dim), np.float32))
    return PassageVectors(-1, tuple(have), tuple(recs[p].passage.text for p in have), matrix)


def _cited(results: Sequence[PCRResult]) -> tuple[dict[str, float], set[str]]:
    """Best hit score per cited passage, and the passages the anchors cite."""
    best: dict[str, float] = {}
    anchored: set[str] = set()
    for res in results:
        for a in res.anchors or (res.anchor,):
            anchored.update(a.provenance)
        pool = res.passages.pool if res.passages is not None else ()
        for h in (*res.hits, *pool):
            for p in h.node.provenance:
                best[p] = max(best.get(p, -np.inf), float(h.score))
    for p in anchored:
        best.setdefault(p, 0.0)
    return best, anchored


def _scores(ids: Sequence[str], hit: np.ndarray, query_vec: np.ndarray,
            vectors: Mapping[str, int], matrix: np.ndarray,
            weight: float) -> tuple[np.ndarray, np.ndarray]:
    """``(combined score, cosine)`` per passage; no vector row: the hit score, cosine 0."""
    q = np.asarray(query_vec, np.float32).reshape(-1)
    rows = np.asarray([vectors.get(p, -1) for p in ids], np.int64)
    cos = np.zeros(len(ids), np.float32)
    have = rows >= 0
    if have.any():
        cos[have] = np.asarray(matrix, np.float32)[rows[have]] @ q
    return np.where(have, weight * cos + (1.0 - weight) * hit, hit), cos


def rank_passages(
    results: Sequence[PCRResult], query_vec: np.ndarray, vectors: Mapping[str, int],
    matrix: np.ndarray, *, weight: float = PASSAGE_WEIGHT, anchors_first: bool = False,
) -> list[tuple[str, float]]:
    """``(passage id, score)`` best first, over the passages PCR's hits and anchors cite.

    ``vectors`` maps a passage id to its row of ``matrix``; a cited passage without a row
    scores its hit score alone. Ties keep citation order. Several results (e.g. one per
    anchor) pool their candidates.
    """
    if not 0.0 <= weight <= 1.0:
        raise ConfigError(f"weight must be in [0, 1], got {weight!r}")
    best, anchored = _cited(results)
    ids = list(best)
    if not ids:
        return []
    hit = np.asarray([best[p] for p in ids], np.float32)
    score, _ = _scores(ids, hit, query_vec, vectors, matrix, weight)
    first = np.asarray([anchors_first and p in anchored for p in ids])
    order = np.lexsort((np.arange(len(ids)), -score, ~first))
    return [(ids[i], float(score[i])) for i in order]


def question_evidence(result: PCRResult, nodes: Sequence[Evidence],
                      node_evidence: Callable[[PCRHit], Evidence],
                      k: int | None) -> list[Evidence]:
    """``output="passages"`` with ``passage_order="question"`` (module docstring).

    ``nodes`` are the node evidence of ``result.hits`` (``node_evidence`` makes one for
    any hit). A passage keeps the trace of the
    best hit citing it (as in hit order) plus ``query_similarity`` (its cosine), and takes
    the combined score. Hits citing no passage the graph holds follow, in hit order.
    """
    ctx, graph = result.passages, result.graph
    assert ctx is not None and graph is not None
    pool = [node_evidence(h) for h in ctx.pool]
    hits = (*result.hits, *ctx.pool)
    sources: list[tuple[Sequence[str], Evidence]] = [
        (h.node.provenance, e) for h, e in zip(hits, (*nodes, *pool))]
    cited = {p for h in hits for p in h.node.provenance}
    sources += [(a.provenance, node_evidence(_anchor_hit(a))) for a in
                result.anchors or (result.anchor,) if not cited.issuperset(a.provenance)]
    expanded = passages_from_sources(graph, sources)
    passages = [e for e in expanded if e.kind == "passage"]
    own = {n.id for n in nodes}
    native = [e for e in expanded if e.kind != "passage" and e.id in own]
    if not passages:
        return rank_items(native, k)
    ids = [e.id for e in passages]
    hit = np.asarray([e.score for e in passages], np.float32)
    score, cos = _scores(ids, hit, ctx.query_vector, ctx.rows(), ctx.vectors.matrix,
                         result.config.passage_weight)
    order = np.lexsort((np.arange(len(ids)), -score))
    ranked = [_rescored(passages[i], float(score[i]), float(cos[i])) for i in order]
    return rank_items([*ranked, *native], k)


def _anchor_hit(anchor: Any) -> PCRHit:
    """An anchor as a 0-hop hit of score 0 (its passages are candidates)."""
    from kgpath.methods.pcr.result import PCRHit

    return PCRHit(anchor, 0.0, 0, (anchor.id,))


def _rescored(e: Evidence, score: float, cos: float) -> Evidence:
    return Evidence(e.id, e.text, score, e.kind, e.method, 1,
                    {**e.trace, "query_similarity": cos}, e.source_metadata)
