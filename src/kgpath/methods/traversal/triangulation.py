"""Alg. 4-6 of the article: triangulation of query, current chunk and candidate.

Article section "Knowledge Graph Traversal Algorithms", algorithms 4
(``triangulation_average``: the mean of the three pairwise cosines), 5
(``triangulation_geometric_3d``: the triangle centroid closest to the query in a 3-D PCA
space) and 6 (``triangulation_fulldim``: the same centroid rule in the embedding space).
"""

from __future__ import annotations

import numpy as np

from kgpath.methods.traversal.config import TraversalConfig
from kgpath.methods.traversal.policy import TraversalPolicy, Walk

__all__ = [
    "TriangulationAveragePolicy",
    "TriangulationFullDimPolicy",
    "TriangulationGeometric3DPolicy",
]


class TriangulationAveragePolicy(TraversalPolicy):
    """Alg. 4 (``triangulation_average``): mean of the three pairwise similarities."""

    name = "triangulation_average"

    def score(
        self, walk: Walk, cands: np.ndarray, origins: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """``(cos(q,u) + cos(q,c) + cos(u,c)) / 3`` (Alg. 4, step 2)."""
        v = walk.view
        uc = np.einsum("ij,ij->i", v.chunk_emb[cands], v.chunk_emb[origins])
        return (walk.q_chunk[origins] + walk.q_chunk[cands] + uc) / 3

    def stop_reason(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> str | None:
        """Stop when ``mean cos(q, s)`` over E exceeds every candidate's average (step 4)."""
        best = float(scores.max())
        if walk.mean_extracted > best:
            return (
                f"relevance: mean extracted cos(q,s)={walk.mean_extracted:.4f} > best "
                f"triangle average {best:.4f}"
            )
        return None


class TriangulationGeometric3DPolicy(TraversalPolicy):
    """Alg. 5 (``triangulation_geometric_3d``): triangle centroid closest to the query in 3-D.

    Query, current and candidate embeddings are projected with a PCA of the chunk
    embeddings (:meth:`ChunkGraphView.pca`); the score is minus the distance between the
    centroid ``(q3 + u3 + c3) / 3`` and ``q3``.
    """

    name = "triangulation_geometric_3d"

    def score(
        self, walk: Walk, cands: np.ndarray, origins: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """``-|| (q3 + u3 + c3)/3 - q3 ||`` (Alg. 5, steps 1-3)."""
        v = walk.view
        mean, basis = v.pca(config.pca_components)
        q3 = (walk.q.astype(np.float64) - mean) @ basis
        u3 = (v.chunk_emb[origins].astype(np.float64) - mean) @ basis
        c3 = (v.chunk_emb[cands].astype(np.float64) - mean) @ basis
        centroid = (q3 + u3 + c3) / 3.0
        return -np.linalg.norm(centroid - q3, axis=1)


class TriangulationFullDimPolicy(TraversalPolicy):
    """Alg. 6 (``triangulation_fulldim``): the same centroid rule in the embedding space.

    For unit vectors ``||(q+u+c)/3 - q||^2 = (6 + 2 cos(u,c) - 4 cos(q,u) - 4 cos(q,c)) / 9``,
    so the rule rewards query similarity and penalises similarity to the current chunk.
    """

    name = "triangulation_fulldim"

    def score(
        self, walk: Walk, cands: np.ndarray, origins: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """``-|| (q + u + c)/3 - q ||`` (Alg. 6, steps 1-2)."""
        v = walk.view
        q = walk.q.astype(np.float64)
        centroid = (q + v.chunk_emb[origins] + v.chunk_emb[cands].astype(np.float64)) / 3
        return -np.linalg.norm(centroid - q, axis=1)

