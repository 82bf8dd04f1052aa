"""C2RAG textual recovery (Eq. 11-12) for constraints the graph cannot resolve.

For an unresolved constraint ``τ_u`` the top-``K'_t`` passages by cosine to ``Lin(τ_u)``
(Eq. 11, ``Û_u``) are reranked against ``q ‖ Lin(τ_u)`` and the top-``K_t`` kept (Eq. 12,
``T_u^txt``). With ``recovery_scope="anchor"`` the search is limited to passages linked to
the constraint's anchors (Appendix G's "anchor-filtered sentences").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgpath.embeddings import Embedder
from kgpath.graph import KnowledgeGraph
from kgpath.index.passage_vectors import passage_cache
from kgpath.methods.c2rag.alignment import Anchor, candidate_pool
from kgpath.methods.c2rag.config import C2RAGConfig
from kgpath.methods.c2rag.drive import Req, score
from kgpath.methods.c2rag.plan import tokens
from kgpath.search.vector import VectorIndex, top_k

__all__ = [
    "PassageIndex",
    "RecoveredPassage",
    "TextualRecovery",
    "anchor_scope",
    "build_passage_index",
    "rerank_recovered",
    "textual_recovery",
]


@dataclass(frozen=True)
class RecoveredPassage:
    """A passage found by textual recovery."""

    passage_id: str
    text: str
    s_txt: float
    """Eq. 11 cosine to ``Lin(τ_u)``."""
    score: float | None = None
    """Eq. 12 reranker score (``None`` if cut before reranking)."""


@dataclass(frozen=True)
class TextualRecovery:
    """Eq. 11-12 for one unresolved constraint."""

    query_text: str
    """``Lin(τ_u)``, the text embedded for Eq. 11."""
    scope: str
    """``"all"`` passages, ``"anchor"``-linked passages, or why recovery found nothing."""
    pool: tuple[RecoveredPassage, ...]
    """``Û_u``: top-``K'_t`` by ``S_txt``."""
    kept: tuple[RecoveredPassage, ...]
    """``T_u^txt``: top-``K_t`` after reranking."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (passage texts omitted from the pool)."""
        return {
            "query_text": self.query_text,
            "scope": self.scope,
            "pool": [{"passage_id": r.passage_id, "s_txt": r.s_txt} for r in self.pool],
            "kept": [dataclasses.asdict(r) for r in self.kept],
        }



@dataclass
class PassageIndex:
    """The graph's passages embedded for Eq. 11 (rebuilt when the graph version changes)."""

    version: int
    ids: list[str]
    texts: list[str]
    tokens: list[set[str]]
    index: VectorIndex
    text_rows: dict[str, int] | None = field(default=None, repr=False, compare=False)
    """Passage text -> row, built on first use (see :mod:`kgpath.methods.c2rag.scoring`)."""


def build_passage_index(
    graph: KnowledgeGraph, embedder: Embedder | None = None
) -> Generator[Req, Any, PassageIndex | None]:
    """The passages of ``graph`` embedded for Eq. 11 (``None`` when it has none).

    With an ``embedder``, the vectors come from the cache shared by every retriever on
    ``(graph, embedder)`` (:func:`kgpath.index.passage_vectors.passage_cache`): each
    passage is embedded once, not once per retriever, and the index built from them is
    shared too. Without one, every passage is embedded (the request is served by the
    caller's embedder).
    """
    if embedder is None:
        ps = list(graph.passages.values())
        if not ps:
            return None
        vecs = yield Req("embed_passages", ([p.text for p in ps],))
        return _index(graph.version, [p.id for p in ps], [p.text for p in ps], vecs)
    cache = passage_cache(graph, embedder)
    with cache.lock:
        cold = bool(cache.missing(graph))
    if cold:  # served by passage_vectors: once for concurrent callers (single-flight)
        yield Req("passage_vectors", (graph, embedder))
    with cache.lock:
        pv = cache.vectors(graph)
    if pv is None:
        return None
    built = pv.derived.get("c2rag")
    if not isinstance(built, PassageIndex):
        built = _index(pv.version, list(pv.ids), list(pv.texts), pv.matrix)
        pv.derived["c2rag"] = built
    return built


def _index(version: int, ids: list[str], texts: list[str], vecs: Any) -> PassageIndex:
    return PassageIndex(
        version=version,
        ids=ids,
        texts=texts,
        tokens=[set(tokens(t)) for t in texts],
        index=VectorIndex(np.asarray(vecs, dtype=np.float32)),
    )


def anchor_scope(
    graph: KnowledgeGraph, pidx: PassageIndex, anchors: Sequence[Anchor]
) -> np.ndarray:
    """Rows of passages linked to ``anchors``: their provenance, their edges', or naming them."""
    linked: set[str] = set()
    for a in anchors:
        node = graph.node(a.node_id)
        linked.update(node.provenance)
        for cand in candidate_pool(graph, [a.node_id]):
            linked.update(cand.provenance)
    rows = []
    for r, (pid, toks) in enumerate(zip(pidx.ids, pidx.tokens, strict=True)):
        named = any(set(tokens(a.name)) <= toks for a in anchors if tokens(a.name))
        if pid in linked or named:
            rows.append(r)
    return np.asarray(rows, dtype=np.int64)


def textual_recovery(
    graph: KnowledgeGraph,
    pidx: PassageIndex | None,
    query: str,
    lin: str,
    anchors: Sequence[Anchor],
    cfg: C2RAGConfig,
) -> Generator[Req, Any, TextualRecovery]:
    """Eq. 11-12: passages by cosine to ``Lin(τ_u)``, top-K'_t, reranked, keep K_t."""
    if pidx is None:
        return TextualRecovery(lin, "none: the graph has no passages", (), ())
    scope = "all"
    cand: np.ndarray | None = None
    if cfg.recovery_scope == "anchor" and anchors:
        rows = anchor_scope(graph, pidx, anchors)
        if rows.size:
            cand, scope = rows, "anchor"
        else:
            scope = "all (no passage linked to the anchors)"
    qv = yield Req("embed_queries", ([lin],))
    rows_, s_txt = pidx.index.search(np.asarray(qv)[0], cfg.k_t_pool, cand)
    pool = [
        RecoveredPassage(pidx.ids[int(r)], pidx.texts[int(r)], float(s))
        for r, s in zip(rows_, s_txt, strict=True)
    ]
    return (yield from rerank_recovered(query, lin, scope, pool, cfg))


def rerank_recovered(
    query: str, lin: str, scope: str, pool: Sequence[RecoveredPassage], cfg: C2RAGConfig
) -> Generator[Req, Any, TextualRecovery]:
    """Eq. 12 over ``Û_u`` (``pool``, Eq. 11's top-``K'_t``): rerank, keep top-``K_t``."""
    scores = yield from score(cfg.rerank_query(query, lin), [x.text for x in pool])
    pool = [dataclasses.replace(x, score=float(s)) for x, s in zip(pool, scores, strict=True)]
    keep = top_k(np.asarray(scores, dtype=np.float64), cfg.k_t)
    return TextualRecovery(lin, scope, tuple(pool), tuple(pool[int(k)] for k in keep))
