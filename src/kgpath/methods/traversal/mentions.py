"""kgpath extension ``mention_expansion``: documents ranked by their best mention chain.

Not one of the article's seven algorithms. It walks the mention layer that
:func:`kgpath.ingest.chunk_graph.add_mention_edges` adds to the chunk graph. With
``s(d) = cos(q, e_d) + γ [the question names d's title]`` (:func:`seed_scores`) and
``link(a, b) = 1`` when a sentence of one document names the other's title, every document
is scored by its best two-document chain,
``score(d) = s(d) + max_{a != d} (s(a) + β link(a, b))`` (:func:`chain_scores`), and the
best ``max_documents`` are returned with their best sentences (:func:`mention_expansion`).
Cost per query ``O(N d + |mention edges|)``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from kgpath.errors import GraphError
from kgpath.graph import KnowledgeGraph
from kgpath.ingest.chunk_graph import NODE_DOCUMENT, REL_MENTIONS, TitleMatcher
from kgpath.methods.traversal.config import MentionExpansionConfig, TraversalConfig
from kgpath.methods.traversal.result import TraversalResult, TraversalStep, TraversedSentence
from kgpath.methods.traversal.view import ChunkGraphView, as_view, doc_of

__all__ = [
    "MentionLayer",
    "chain_scores",
    "mention_expansion",
    "question_mentions",
    "seed_scores",
]


class MentionLayer:
    """Document-level arrays of a chunk graph's mention layer (built once per view).

    ``doc_ids``/``doc_emb`` come from the ``document`` nodes; ``link_src``/``link_dst``/
    ``link_sent`` hold one row per ``mentions`` edge (source document, mentioned document,
    sentence position or ``-1`` for a chunk source); ``df[d]`` counts the distinct
    documents that mention ``d``.
    """

    def __init__(self, view: ChunkGraphView, *, min_title_chars: int = 3) -> None:
        g = view.graph
        doc_nodes = [i for i, n in enumerate(g.nodes) if n.type == NODE_DOCUMENT]
        if not doc_nodes:
            raise GraphError("chunk graph has no 'document' nodes; mention expansion needs them")
        self.doc_ids = [doc_of(g, i) for i in doc_nodes]
        self.doc_pos = {d: k for k, d in enumerate(self.doc_ids)}
        self.doc_emb = np.ascontiguousarray(g.vectors.matrix[np.asarray(doc_nodes, np.int64)])
        titles = {d: (g.node_at(i).name or d) for d, i in zip(self.doc_ids, doc_nodes,
                                                                strict=True)}
        self.matcher = TitleMatcher(titles, min_chars=min_title_chars)
        n_docs = len(self.doc_ids)
        self.doc_sents: list[list[int]] = [[] for _ in range(n_docs)]
        for s, d in enumerate(view.sent_doc):
            if d in self.doc_pos:
                self.doc_sents[self.doc_pos[d]].append(s)
        self.doc_chunks: list[list[int]] = [[] for _ in range(n_docs)]
        for c, d in enumerate(view.chunk_doc):
            if d in self.doc_pos:
                self.doc_chunks[self.doc_pos[d]].append(c)
        spos = {int(gi): p for p, gi in enumerate(view.sent_nodes)}
        rows: list[tuple[int, int, int]] = []
        for e in g.edges:
            if e.relation != REL_MENTIONS:
                continue
            si, ti = g.index_of(e.source), g.index_of(e.target)
            a = self.doc_pos.get(doc_of(g, si))
            b = self.doc_pos.get(doc_of(g, ti))
            if a is not None and b is not None and a != b:
                rows.append((a, b, spos.get(si, -1)))
        arr = np.asarray(rows, dtype=np.int64).reshape(-1, 3)
        self.link_src, self.link_dst, self.link_sent = arr[:, 0], arr[:, 1], arr[:, 2]
        pairs = np.unique(arr[:, :2], axis=0) if arr.size else np.zeros((0, 2), np.int64)
        self.df = np.bincount(pairs[:, 1], minlength=n_docs) if pairs.size else np.zeros(
            n_docs, np.int64)

    @property
    def num_links(self) -> int:
        """Number of ``mentions`` edges between two different documents."""
        return int(self.link_src.size)


def question_mentions(layer: MentionLayer, query: str) -> np.ndarray:
    """Positions of the documents whose titles the question names (seed set ``M(q)``)."""
    found = layer.matcher.find(query) if query else []
    return np.asarray(sorted(layer.doc_pos[d] for d in found), dtype=np.int64)


def seed_scores(
    layer: MentionLayer, q: np.ndarray, mentioned: np.ndarray, config: MentionExpansionConfig
) -> np.ndarray:
    """``s(d) = cos(q, e_d) + γ [d ∈ M(q)]`` for every document ``d``."""
    s = (layer.doc_emb @ q).astype(np.float64)
    s[mentioned] += config.question_bonus
    return s


def chain_scores(
    layer: MentionLayer, s: np.ndarray, config: MentionExpansionConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Score of the best two-document chain through each document, and the link mask.

    ``pair(a, b) = s(a) + s(b) + β link(a, b)`` where ``link(a, b) = 1`` when a sentence
    of one mentions the other's title and that title is mentioned by at most
    ``max_title_df * N`` documents; ``score(d) = max_{a != d} pair(d, a)``. Exact in
    ``O(N + |links|)``: the best unlinked partner is the top document (the runner-up for
    the top document itself) and the best linked partner a maximum over ``d``'s links.
    """
    n = s.size
    keep = layer.df[layer.link_dst] <= config.max_title_df * n
    u = np.concatenate([layer.link_src[keep], layer.link_dst[keep]])
    v = np.concatenate([layer.link_dst[keep], layer.link_src[keep]])
    order = np.argsort(-s, kind="stable")
    best_other = np.full(n, s[order[0]])
    if n > 1:
        best_other[order[0]] = s[order[1]]
    else:
        best_other[order[0]] = 0.0
    # pair sums are formed as (s(a) + s(b)) + β so both members of a pair get the same
    # float score (addition is commutative), and ties then fall to s(d)
    linked = np.full(n, -np.inf)
    if u.size:
        np.maximum.at(linked, u, (s[u] + s[v]) + config.link_bonus)
    return np.maximum(s + best_other, linked), keep


@dataclass(frozen=True)
class _Chains:
    """Per-query arrays shared by every document of one :func:`mention_expansion` call."""

    view: ChunkGraphView
    layer: MentionLayer
    config: MentionExpansionConfig
    mentioned: np.ndarray  # M(q), document positions
    seed: np.ndarray  # s(d)
    score: np.ndarray  # score(d)
    keep: np.ndarray  # mention links that pass the max_title_df filter
    ranked: np.ndarray  # the max_documents best documents
    q_chunk: np.ndarray  # cos(q, chunk)
    q_sent: np.ndarray  # cos(q, sentence)
    top2: list[int]  # the two best documents by s(d)
    links: tuple[np.ndarray, np.ndarray, np.ndarray]  # kept (source, target, sentence or -1)


def _score_chains(
    view: ChunkGraphView, query_vec: np.ndarray, query: str, cfg: MentionExpansionConfig
) -> _Chains:
    """Seeds, chain scores and the document ranking: ``score(d)``, ties by ``s(d)``, id."""
    layer = view.mention_layer(cfg.min_title_chars)
    q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
    if q.shape[0] != layer.doc_emb.shape[1]:
        raise GraphError(
            f"query embedding has dimension {q.shape[0]}, document embeddings have "
            f"{layer.doc_emb.shape[1]}"
        )
    mentioned = question_mentions(layer, query)
    s = seed_scores(layer, q, mentioned, cfg)
    score, keep = chain_scores(layer, s, cfg)
    n_docs = s.size
    return _Chains(
        view=view, layer=layer, config=cfg, mentioned=mentioned, seed=s, score=score,
        keep=keep,
        ranked=np.lexsort((np.arange(n_docs), -s, -score))[: cfg.max_documents],
        q_chunk=view.chunk_emb @ q,
        q_sent=view.sent_emb @ q,
        top2=np.lexsort((np.arange(n_docs), -s))[:2].tolist(),
        links=(layer.link_src[keep], layer.link_dst[keep], layer.link_sent[keep]),
    )


def _best_chunk(chunks: list[int], q_chunk: np.ndarray) -> int:
    """The most query-similar chunk of a document (``-1`` when it has none)."""
    return chunks[int(np.argmax(q_chunk[chunks]))] if chunks else -1


def _document_sentences(ctx: _Chains, d: int, evidence: list[int]) -> list[int]:
    """Link-evidence sentences of ``d`` first, then its most query-similar; document order."""
    view, layer = ctx.view, ctx.layer
    own = [x for x in evidence if view.sent_doc[x] == layer.doc_ids[d]]
    pool = [x for x in layer.doc_sents[d] if x not in own]
    pool.sort(key=lambda x: (-ctx.q_sent[x], x))
    return sorted((own + pool)[: ctx.config.sentences_per_document])


def _document_step(
    ctx: _Chains, rank: int, d: int, best_chunk: int,
    partner: int, edge: str | None, chosen: list[int],
) -> TraversalStep:
    """The path step of a returned document: its chunk, chain partner and joining edge."""
    view, layer = ctx.view, ctx.layer
    if edge is not None:
        reason = f"{edge}: {layer.doc_ids[partner]}"
    elif d in set(ctx.mentioned.tolist()):
        reason = "seed: question mention"
    else:
        reason = "seed: dense"
    pchunk = _best_chunk(layer.doc_chunks[partner], ctx.q_chunk) if partner >= 0 else -1
    origin = view.chunk_ids[pchunk] if rank > 0 and edge is not None and pchunk >= 0 \
        else None
    trans = None  # only a hop through a mention edge has a transition
    if origin is not None and best_chunk >= 0:
        trans = float(view.chunk_emb[best_chunk] @ view.chunk_emb[pchunk])
    return TraversalStep(
        hop=rank,
        chunk_id=view.chunk_ids[best_chunk] if best_chunk >= 0 else f"doc:{layer.doc_ids[d]}",
        doc_id=layer.doc_ids[d],
        score=float(ctx.score[d]),
        query_similarity=float(ctx.q_chunk[best_chunk]) if best_chunk >= 0
        else float(ctx.seed[d]),
        transition_similarity=trans,
        new_sentences=tuple(view.sent_ids[x] for x in chosen),
        reason=reason,
        origin_id=origin,
    )


def _expand_document(
    ctx: _Chains, rank: int, d: int
) -> tuple[list[TraversedSentence], TraversalStep, dict[str, Any]]:
    """Sentences, path step and trace record of the document ranked ``rank``."""
    view, layer = ctx.view, ctx.layer
    src, dst, sent = ctx.links
    partner, edge, evidence = _chain_partner(d, ctx.seed, ctx.config, src, dst, sent, ctx.top2)
    best_chunk = _best_chunk(layer.doc_chunks[d], ctx.q_chunk)
    chosen = _document_sentences(ctx, d, evidence)
    sentences = [
        TraversedSentence(
            id=view.sent_ids[x], text=view.sent_text[x], doc_id=layer.doc_ids[d],
            chunk_id=view.chunk_ids[best_chunk] if best_chunk >= 0 else "",
            hop=rank, query_similarity=float(ctx.q_sent[x]),
        )
        for x in chosen
    ]
    record = {
        "doc_id": layer.doc_ids[d],
        "score": float(ctx.score[d]),
        "seed_score": float(ctx.seed[d]),
        "question_mention": d in set(ctx.mentioned.tolist()),
        "partner": layer.doc_ids[partner] if partner >= 0 else None,
        "edge": edge,
        "evidence": [view.sent_ids[x] for x in evidence],
    }
    step = _document_step(ctx, rank, d, best_chunk, partner, edge, chosen)
    return sentences, step, record


def mention_expansion(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    *,
    query: str = "",
    config: MentionExpansionConfig | None = None,
    traversal_config: TraversalConfig | None = None,
) -> TraversalResult:
    """Rank documents by their best two-document chain through the mention layer.

    A kgpath extension, not one of the article's algorithms. Seeds are every document by
    query similarity plus the documents the question names (:func:`seed_scores`); each
    document is expanded one hop through ``mentions`` edges in both directions and scored
    by the best chain it belongs to (:func:`chain_scores`), so the passage a strong seed
    links to rises even when it shares little vocabulary with the question (HotpotQA
    bridge questions follow Wikipedia's hyperlinks). The ``max_documents`` best are
    returned with ``sentences_per_document`` sentences each; the path has one step per
    returned document recording its chain partner and the edge type that joined them.

    The graph must carry the mention layer (:func:`kgpath.ingest.chunk_graph.add_mention_edges`;
    the builder adds it by default). Without any ``mentions`` edge the ranking reduces to
    dense document similarity plus the question bonus.
    """
    cfg = config or MentionExpansionConfig()
    view = as_view(graph)
    ctx = _score_chains(view, query_vec, query, cfg)
    steps: list[TraversalStep] = []
    sentences: list[TraversedSentence] = []
    documents: list[dict[str, Any]] = []
    for rank, d in enumerate(ctx.ranked.tolist()):
        sents, step, record = _expand_document(ctx, rank, d)
        sentences.extend(sents)
        steps.append(step)
        documents.append(record)
    return TraversalResult(
        query=query, algorithm="mention_expansion", anchor_id=steps[0].chunk_id,
        sentences=tuple(sentences), path=tuple(steps), stop_reason="max_documents",
        config=traversal_config or TraversalConfig(),
        trace=_mention_trace(ctx, steps, documents), graph=view.graph,
    )


def _mention_trace(
    ctx: _Chains, steps: list[TraversalStep], documents: list[dict[str, Any]]
) -> dict[str, Any]:
    """The ``trace`` of a :func:`mention_expansion` result."""
    return {
        "algorithm": "mention_expansion",
        "anchor_id": steps[0].chunk_id,
        "path": [st.chunk_id for st in steps],
        "documents_visited": [x["doc_id"] for x in documents],
        "documents": documents,
        "question_mentions": [ctx.layer.doc_ids[k] for k in ctx.mentioned.tolist()],
        "mention_links": int(ctx.keep.sum()),
        "mention_links_dropped_df": int((~ctx.keep).sum()),
        "stop_reason": "max_documents",
        "mention_config": dataclasses.asdict(ctx.config),
        "frontier": "documents",
    }


def _chain_partner(
    d: int, s: np.ndarray, cfg: MentionExpansionConfig,
    src: np.ndarray, dst: np.ndarray, sent: np.ndarray, top2: list[int],
) -> tuple[int, str | None, list[int]]:
    """The partner realising ``score(d)``: ``(doc, edge type or None, evidence sentences)``.

    A linked partner wins ties with the unlinked one (the link is then the evidence).
    """
    out_m = dst[src == d]
    in_m = src[dst == d]
    best = -1
    best_val = -np.inf
    for a in np.unique(np.concatenate([out_m, in_m])).tolist():
        val = s[a] + cfg.link_bonus
        if val > best_val:
            best, best_val = a, val
    alt = top2[0] if top2[0] != d or len(top2) == 1 else top2[1]
    if best < 0 or s[alt] > best_val:
        return (alt if alt != d else -1), None, []
    mentions_fwd = (src == d) & (dst == best)
    mentions_bwd = (src == best) & (dst == d)
    kinds = []
    if mentions_fwd.any():
        kinds.append("mentions")
    if mentions_bwd.any():
        kinds.append("mentioned_by")
    evidence = sorted(set(sent[mentions_fwd | mentions_bwd].tolist()) - {-1})
    return best, "+".join(kinds), evidence

