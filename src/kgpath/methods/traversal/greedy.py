"""Alg. 1-3 of the article: greedy walks on one cosine.

Article section "Knowledge Graph Traversal Algorithms", algorithms 1 (``basic_retrieval``:
``cos(q, c)`` over every chunk, no edges), 2 (``query_traversal``: ``cos(q, c)`` over the
current chunk's neighbours) and 3 (``kg_traversal``: ``cos(u, c)``, the query ignored after
the anchor).
"""

from __future__ import annotations

import numpy as np

from kgpath.methods.traversal.config import TraversalConfig
from kgpath.methods.traversal.policy import TraversalPolicy, Walk

__all__ = ["BasicRetrievalPolicy", "KGTraversalPolicy", "QueryTraversalPolicy"]


class BasicRetrievalPolicy(TraversalPolicy):
    """Alg. 1 (``basic_retrieval``): the next most query-similar chunk anywhere, no edges."""

    name = "basic_retrieval"
    global_candidates = True
    #: Reference ``BasicRetrievalAlgorithm.retrieve`` checks its stop once 5 sentences are in.
    reference_gate = 5

    def score(
        self, walk: Walk, cands: np.ndarray, origins: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """``cos(q, c)``."""
        return walk.q_chunk[cands]


class QueryTraversalPolicy(TraversalPolicy):
    """Alg. 2 (``query_traversal``): the neighbour most similar to the query."""

    name = "query_traversal"

    def score(
        self, walk: Walk, cands: np.ndarray, origins: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """``cos(q, c)`` (Alg. 2, step 2)."""
        return walk.q_chunk[cands]


class KGTraversalPolicy(TraversalPolicy):
    """Alg. 3 (``kg_traversal``): the neighbour most similar to the current chunk.

    The query is used only to pick the anchor. Candidates sharing a sentence with the
    extracted set are skipped (step 3); the walk stops when the best hop is not more
    similar than the previous hop (step 4; ``stopping="article"``: less similar).
    """

    name = "kg_traversal"
    skip_overlapping = True

    def score(
        self, walk: Walk, cands: np.ndarray, origins: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """``cos(u, c)`` (Alg. 3, step 2)."""
        v = walk.view
        return np.einsum("ij,ij->i", v.chunk_emb[cands], v.chunk_emb[origins])

    #: Reference ``SSGTraversalAlgorithm.retrieve`` checks from the second leap on.
    reference_gate = 0

    def article_stop(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> str | None:
        """Article reading of step 4: stop when ``max cos(u, c)`` < the previous hop's ``cos``."""
        if not walk.transitions:
            return None
        best, prev = float(scores.max()), walk.transitions[-1]
        if best < prev:
            return f"similarity drop: next hop cos={best:.4f} < previous hop cos={prev:.4f}"
        return None

    def reference_stop(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> str | None:
        """Step 4 as the reference code: stop when ``max cos(u, c)`` <= the previous hop's.

        Reference ``utils/algos/ssg_traversal.py`` (``SSGTraversalAlgorithm.retrieve``,
        "exploration-potential early stopping"): from the second leap on, with no sentence
        gate, the walk ends when no candidate beats the previous leap's similarity -- a tie
        stops it too (the article: "lower than the previous one").
        """
        if not walk.transitions or walk.gated(config, self.reference_gate):
            return None
        best, prev = float(scores.max()), walk.transitions[-1]
        if best <= prev:
            return f"similarity drop: next hop cos={best:.4f} <= previous hop cos={prev:.4f}"
        return None
