"""Path-Constrained Retrieval (PCR).

Reference: J. Oladokun, "Path-Constrained Retrieval: A Structural Approach to Reliable LLM
Agent Reasoning Through Graph-Spaced Semantic Search", 2025 (shared/papers/pcr-*.txt).

Steps, named after the paper's section 3.3, written once over a graph backend
(:class:`~kgpath.backends.base.GraphBackend` with the
:class:`~kgpath.backends.base.VectorSearch` capability: the in-memory CSR graph, or a Cypher
database for :class:`CypherPCR`):

1. anchor resolution (:mod:`.anchors`): by id or name (one or several), else the entities
   the query names (a kgpath extension), else - only with ``anchor_fallback="similar"``,
   recorded - the most similar node;
2. Eq. (1): ``C_reachable = {v : path(a, v) exists}``, optionally with ``length <= d_max``,
   by the backend's BFS (:func:`reachable_candidates` on the CSR graph); several anchors give
   the union, each node from its nearest anchor (:func:`~.search.merge_regions`);
3. Eq. (2): ``argmax_{v in C_reachable, |R|=k} sim(q, v)`` (:func:`constrained_search`),
   or the hybrid score of section 3.4 (``α·sim + (1−α)·BM25``, α = 0.7, BM25 scaling by
   ``hybrid_norm``; in memory only), or - kgpath extensions - the path-aware or template
   score (:mod:`.pathscore`, :mod:`.templates`); each ``score=`` name is a strategy object
   (:mod:`.scoring`);
4. hits with their BFS-tree paths, and the fallback of section 3.5 (global search when
   nothing but the anchor is reachable), recorded in the result.

Complexity in memory: BFS is O(|reached| + |their edges|) with no per-edge Python work;
scoring is one gather-and-dot over the reachable set (O(|C|·d)); top-k by ``argpartition``.
Path-aware scoring adds one path text per candidate and one embedding call per query.

Modules: :mod:`.config`, :mod:`.result`, :mod:`.anchors`, :mod:`.search`,
:mod:`.pathscore`, :mod:`.templates`, :mod:`.chainmatch`, :mod:`.scoring`, :mod:`.passages`,
:mod:`.retriever`, :mod:`.cypher`.
"""

from __future__ import annotations

from kgpath.methods.pcr.anchors import AnchorLink, link_anchors
from kgpath.methods.pcr.config import (
    AnchorFallback,
    AnchorPolicy,
    Fallback,
    PathText,
    PCRConfig,
    ScoreMode,
    SearchMode,
)
from kgpath.methods.pcr.cypher import CypherPCR
from kgpath.methods.pcr.pathscore import (
    humanize_relation,
    mix_scores,
    path_similarity,
    textualize_path,
    tree_path_texts,
)
from kgpath.methods.pcr.result import PCRHit, PCRResult, format_path
from kgpath.methods.pcr.retriever import PathConstrainedRetriever, logger
from kgpath.methods.pcr.scoring import (
    SCORES,
    MixedScore,
    NodeScore,
    PathScore,
    ScoreStrategy,
    TemplateScore,
    score_strategy,
)
from kgpath.methods.pcr.search import constrained_search, reachable_candidates

__all__ = [
    "AnchorFallback",
    "AnchorLink",
    "AnchorPolicy",
    "CypherPCR",
    "Fallback",
    "MixedScore",
    "NodeScore",
    "PCRConfig",
    "PCRHit",
    "PCRResult",
    "PathConstrainedRetriever",
    "PathScore",
    "PathText",
    "SCORES",
    "ScoreMode",
    "ScoreStrategy",
    "SearchMode",
    "TemplateScore",
    "constrained_search",
    "format_path",
    "humanize_relation",
    "link_anchors",
    "logger",
    "mix_scores",
    "path_similarity",
    "reachable_candidates",
    "score_strategy",
    "textualize_path",
    "tree_path_texts",
]
