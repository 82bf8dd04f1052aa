"""The shared walk of the seven algorithms, its sync and async drivers, and entry points.

Article section "Knowledge Graph Traversal Algorithms": every algorithm starts at the
anchor, the chunk most similar to the query, then repeatedly picks the next chunk among
candidates by its own rule (a :class:`~kgpath.methods.traversal.policy.TraversalPolicy`),
extracting that chunk's sentences not seen before, until its stopping rule, the sentence
budget or the hop cap ends the walk. :func:`traverse` runs any policy; the named functions
(:func:`basic_retrieval` ... :func:`llm_guided_traversal`) are Alg. 1-7.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

import numpy as np

from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.llm import LLM
from kgpath.methods.traversal.config import ALGORITHMS, EXTENSIONS, TraversalConfig
from kgpath.methods.traversal.greedy import (
    BasicRetrievalPolicy,
    KGTraversalPolicy,
    QueryTraversalPolicy,
)
from kgpath.methods.traversal.llm_guided import LLMGuidedPolicy
from kgpath.methods.traversal.policy import Choice, TraversalPolicy, Walk
from kgpath.methods.traversal.result import TraversalResult, TraversalStep, TraversedSentence
from kgpath.methods.traversal.triangulation import (
    TriangulationAveragePolicy,
    TriangulationFullDimPolicy,
    TriangulationGeometric3DPolicy,
)
from kgpath.methods.traversal.view import ChunkGraphView, as_view
from kgpath.prompts.traversal import LLM_TRAVERSAL_PROMPT

__all__ = [
    "allm_guided_traversal",
    "atraverse",
    "basic_retrieval",
    "check_algorithm",
    "kg_traversal",
    "llm_guided_traversal",
    "make_policy",
    "query_traversal",
    "traverse",
    "triangulation_average",
    "triangulation_fulldim",
    "triangulation_geometric_3d",
]

_POLICIES: dict[str, type[TraversalPolicy]] = {
    "basic_retrieval": BasicRetrievalPolicy,
    "query_traversal": QueryTraversalPolicy,
    "kg_traversal": KGTraversalPolicy,
    "triangulation_average": TriangulationAveragePolicy,
    "triangulation_geometric_3d": TriangulationGeometric3DPolicy,
    "triangulation_fulldim": TriangulationFullDimPolicy,
    "llm_guided_traversal": LLMGuidedPolicy,
}


def make_policy(
    algorithm: str, *, llm: LLM | None = None, llm_prompt: str = LLM_TRAVERSAL_PROMPT
) -> TraversalPolicy:
    """Instantiate the policy of an algorithm by name."""
    cls = _POLICIES.get(algorithm)
    if cls is None:
        raise ConfigError(f"unknown traversal algorithm {algorithm!r}; choose from {ALGORITHMS}")
    return LLMGuidedPolicy(llm, prompt=llm_prompt) if cls is LLMGuidedPolicy else cls()


def check_algorithm(algorithm: str) -> str:
    """Return ``algorithm`` if it names an article algorithm or a kgpath extension.

    Adapters validate names with this (not :func:`make_policy`, which knows only the
    walk policies of :data:`ALGORITHMS`).
    """
    if algorithm in ALGORITHMS or algorithm in EXTENSIONS:
        return algorithm
    raise ConfigError(
        f"unknown traversal algorithm {algorithm!r}; choose from {ALGORITHMS + EXTENSIONS}"
    )


# ============================================================================ the walk
_Request = tuple[np.ndarray, np.ndarray]


def _walk(
    walk: Walk, policy: TraversalPolicy, config: TraversalConfig
) -> Generator[_Request, Choice, tuple[str, list[TraversalStep]]]:
    """Run the shared walk, yielding ``(candidates, scores)`` and receiving a choice.

    Written as a generator so the sync and async drivers run the same steps and only
    differ in how :meth:`TraversalPolicy.choose` is awaited.
    """
    v = walk.view
    anchor = int(np.lexsort((np.arange(v.num_chunks), -walk.q_chunk))[0])
    new = walk.visit(anchor, config.max_sentences)
    steps = [_step(walk, 0, anchor, float(walk.q_chunk[anchor]), new, "anchor", (), ())]
    while True:
        if len(walk.extracted) >= config.max_sentences:
            return "max_sentences", steps
        if len(walk.path) - 1 >= config.max_hops:
            return "max_hops", steps
        cands, origins = _candidates(walk, policy, config)
        if cands.size == 0:
            return "dead end: no unvisited candidate adds a sentence", steps
        scores = np.asarray(policy.score(walk, cands, origins, config), dtype=np.float64)
        cands, origins, scores = _best_origin(cands, origins, scores)
        keep = policy.limit(walk, cands, config)
        cands, origins, scores = cands[keep], origins[keep], scores[keep]
        reason = policy.stop_reason(walk, cands, scores, config)  # gated by the policy
        if reason is not None:
            return reason, steps
        choice = yield cands, scores
        if choice.index is None:
            return choice.reason, steps
        nxt = int(cands[choice.index])
        new = walk.visit(nxt, config.max_sentences, parent=int(origins[choice.index]))
        steps.append(
            _step(walk, len(steps), nxt, float(scores[choice.index]), new, choice.reason,
                  cands, scores, config.record_candidates)
        )


def _candidates(
    walk: Walk, policy: TraversalPolicy, config: TraversalConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Unvisited candidate chunks that add a sentence, each with its origin chunk."""
    v = walk.view
    if policy.global_candidates:
        cands = np.arange(v.num_chunks, dtype=np.int64)
        origins = np.full(cands.size, walk.current, dtype=np.int64)
    elif config.frontier == "current":
        cands = np.unique(v.neighbours(walk.current))
        origins = np.full(cands.size, walk.current, dtype=np.int64)
    else:
        parts = [v.neighbours(c) for c in walk.path]
        cands = np.concatenate(parts)
        origins = np.repeat(np.asarray(walk.path, dtype=np.int64), [p.size for p in parts])
    ok = ~walk.visited[cands]
    cands, origins = cands[ok], origins[ok]
    if cands.size == 0:
        return cands, origins
    fresh = walk.new_sentence_counts()[cands]
    if policy.skip_overlapping:
        ok = fresh == np.diff(v.chunk_sent_ptr)[cands]
    else:
        ok = fresh > 0
    return cands[ok], origins[ok]


def _best_origin(
    cands: np.ndarray, origins: np.ndarray, scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keep one (origin, candidate) pair per candidate: the best score, ties by origin."""
    order = np.lexsort((origins, -scores, cands))
    c = cands[order]
    first = np.ones(c.size, dtype=bool)
    first[1:] = c[1:] != c[:-1]
    pick = order[first]
    return cands[pick], origins[pick], scores[pick]


def _step(
    walk: Walk,
    hop: int,
    chunk: int,
    score: float,
    new: list[int],
    reason: str,
    cands: Sequence[int] | np.ndarray,
    scores: Sequence[float] | np.ndarray,
    keep: int = 0,
) -> TraversalStep:
    v = walk.view
    recorded: tuple[tuple[str, float], ...] = ()
    if keep and len(cands):
        c = np.asarray(cands)
        sc = np.asarray(scores)
        order = np.lexsort((c, -sc))[:keep]
        recorded = tuple((v.chunk_ids[int(c[i])], float(sc[i])) for i in order)
    return TraversalStep(
        hop=hop,
        chunk_id=v.chunk_ids[chunk],
        doc_id=v.chunk_doc[chunk],
        score=score,
        query_similarity=float(walk.q_chunk[chunk]),
        transition_similarity=walk.transitions[-1] if hop > 0 else None,
        origin_id=v.chunk_ids[walk.parents[-1]] if hop > 0 else None,
        new_sentences=tuple(v.sent_ids[s] for s in new),
        reason=reason,
        candidates=recorded,
    )


def _result(
    walk: Walk,
    policy: TraversalPolicy,
    config: TraversalConfig,
    stop: str,
    steps: list[TraversalStep],
) -> TraversalResult:
    v = walk.view
    sentences = tuple(
        TraversedSentence(
            id=v.sent_ids[s], text=v.sent_text[s], doc_id=v.sent_doc[s],
            chunk_id=v.chunk_ids[c], hop=h, query_similarity=sim,
        )
        for s, c, h, sim in zip(
            walk.extracted, walk.sentence_chunk, walk.sentence_hop, walk.extracted_sims,
            strict=True,
        )
    )
    trace: dict[str, Any] = {
        "algorithm": policy.name,
        "anchor_id": steps[0].chunk_id,
        "hops": len(steps) - 1,
        "path": [s.chunk_id for s in steps],
        "documents_visited": list(dict.fromkeys(s.doc_id for s in steps)),
        "stop_reason": stop,
        "mean_extracted_similarity": walk.mean_extracted if walk.extracted else None,
        "max_extracted_similarity": walk.max_extracted if walk.extracted else None,
        "stopping": config.stopping,
        "frontier": "global" if policy.global_candidates else config.frontier,
    }
    if isinstance(policy, LLMGuidedPolicy):
        trace["llm"] = policy.llm is not None
        trace["llm_calls"] = walk.llm_calls
        trace["llm_fallbacks"] = sum(1 for s in steps if s.reason.startswith("llm_fallback"))
    return TraversalResult(
        query=walk.query,
        algorithm=policy.name,
        anchor_id=steps[0].chunk_id,
        sentences=sentences,
        path=tuple(steps),
        stop_reason=stop,
        config=config,
        trace=trace,
        graph=v.graph,
    )


def traverse(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    policy: TraversalPolicy | str,
    *,
    config: TraversalConfig | None = None,
    query: str = "",
    llm: LLM | None = None,
) -> TraversalResult:
    """Run one algorithm (a policy or its name) from the anchor chunk; sync."""
    cfg = config or TraversalConfig()
    pol = make_policy(policy, llm=llm) if isinstance(policy, str) else policy
    walk = Walk(as_view(graph), query_vec, query)
    gen = _walk(walk, pol, cfg)
    try:
        request = next(gen)
        while True:
            request = gen.send(pol.choose(walk, request[0], request[1], cfg))
    except StopIteration as done:
        stop, steps = done.value
    return _result(walk, pol, cfg, stop, steps)


async def atraverse(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    policy: TraversalPolicy | str,
    *,
    config: TraversalConfig | None = None,
    query: str = "",
    llm: LLM | None = None,
) -> TraversalResult:
    """Async :func:`traverse` (the LLM policy awaits ``acomplete``)."""
    cfg = config or TraversalConfig()
    pol = make_policy(policy, llm=llm) if isinstance(policy, str) else policy
    walk = Walk(as_view(graph), query_vec, query)
    gen = _walk(walk, pol, cfg)
    try:
        request = next(gen)
        while True:
            choice = await pol.achoose(walk, request[0], request[1], cfg)
            request = gen.send(choice)
    except StopIteration as done:
        stop, steps = done.value
    return _result(walk, pol, cfg, stop, steps)


# ---------------------------------------------------------------------- named entry points
def basic_retrieval(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    *,
    config: TraversalConfig | None = None,
    query: str = "",
) -> TraversalResult:
    """Alg. 1: chunks in decreasing ``cos(q, c)`` order, ignoring edges."""
    return traverse(graph, query_vec, BasicRetrievalPolicy(), config=config, query=query)


def query_traversal(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    *,
    config: TraversalConfig | None = None,
    query: str = "",
) -> TraversalResult:
    """Alg. 2: hop to the neighbour most similar to the query."""
    return traverse(graph, query_vec, QueryTraversalPolicy(), config=config, query=query)


def kg_traversal(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    *,
    config: TraversalConfig | None = None,
    query: str = "",
) -> TraversalResult:
    """Alg. 3: hop to the neighbour most similar to the current chunk."""
    return traverse(graph, query_vec, KGTraversalPolicy(), config=config, query=query)


def triangulation_average(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    *,
    config: TraversalConfig | None = None,
    query: str = "",
) -> TraversalResult:
    """Alg. 4: hop to the neighbour with the best mean of the three similarities."""
    return traverse(graph, query_vec, TriangulationAveragePolicy(), config=config, query=query)


def triangulation_geometric_3d(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    *,
    config: TraversalConfig | None = None,
    query: str = "",
) -> TraversalResult:
    """Alg. 5: triangle-centroid rule in a 3-D PCA space."""
    return traverse(
        graph, query_vec, TriangulationGeometric3DPolicy(), config=config, query=query
    )


def triangulation_fulldim(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    *,
    config: TraversalConfig | None = None,
    query: str = "",
) -> TraversalResult:
    """Alg. 6: triangle-centroid rule in the full embedding space."""
    return traverse(graph, query_vec, TriangulationFullDimPolicy(), config=config, query=query)


def llm_guided_traversal(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    *,
    llm: LLM | None = None,
    config: TraversalConfig | None = None,
    query: str = "",
) -> TraversalResult:
    """Alg. 7: the LLM chooses among the top-5 neighbours (``llm=None``: fallback only)."""
    return traverse(graph, query_vec, LLMGuidedPolicy(llm), config=config, query=query)


async def allm_guided_traversal(
    graph: KnowledgeGraph | ChunkGraphView,
    query_vec: np.ndarray,
    *,
    llm: LLM | None = None,
    config: TraversalConfig | None = None,
    query: str = "",
) -> TraversalResult:
    """Async :func:`llm_guided_traversal` (native ``acomplete``)."""
    return await atraverse(graph, query_vec, LLMGuidedPolicy(llm), config=config, query=query)

