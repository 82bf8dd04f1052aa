"""Alg. 4-6 of the article: triangulation of query, current chunk and candidate.

Article section "Knowledge Graph Traversal Algorithms", algorithms 4
(``triangulation_average``: the mean of the three pairwise cosines), 5
(``triangulation_geometric_3d``: the triangle centroid closest to the query in a 3-D PCA
space) and 6 (``triangulation_fulldim``: the same centroid rule in the embedding space).

Stopping (``stopping="reference"``, the default). The article gives a stop rule for Alg. 4
only ("when the average similarity of extracted sentences exceeds that of all candidate
chunks") and none for Alg. 5-6. The reference code (``utils/algos/triangulation_average.py``,
``triangulation_geometric_3d.py``, ``triangulation_geometric_fulldim.py``, each
``retrieve``) scores the *sentences of the current chunk* by the same triangle rule next to
the candidate chunks and ends the walk when a sentence wins ("TERMINATION: best triangle is
sentence - optimal extraction point reached"); Alg. 4 also stops once 8 sentences are in
when the best *extracted* sentence's triangle beats every candidate ("multi-vector
anchoring"). Alg. 5-6 have no relevance rule there. The competing chunks are every
neighbour of the current chunk, visited ones included, as in the reference
(:meth:`~kgpath.methods.traversal.policy.TraversalPolicy.competitors`).
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


class _TriangulationPolicy(TraversalPolicy):
    """Alg. 4-6: the candidate rule also scores the current chunk's sentences (reference)."""

    #: The sentence termination has no sentence gate in the reference code.
    reference_gate = 0

    def sentence_scores(
        self, walk: Walk, sents: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """The triangle score of each sentence ``s`` of the current chunk ``u``."""
        raise NotImplementedError

    def reference_stop(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> str | None:
        """Sentence termination: a sentence of ``u`` outscores every candidate chunk."""
        if walk.gated(config, self.reference_gate):
            return None
        sents = walk.view.sentences_of(walk.current).astype(np.int64)
        if sents.size == 0:
            return None
        sc = self.sentence_scores(walk, sents, config)
        i = int(np.argmax(sc))
        _, comp_scores, label = self.competitors(walk, cands, scores, config)
        best = float(comp_scores.max())
        if float(sc[i]) > best:
            sid = walk.view.sent_ids[int(sents[i])]
            return (
                f"sentence termination: sentence {sid} of the current chunk scores "
                f"{float(sc[i]):.4f} > best {label} {best:.4f}"
            )
        return None


class TriangulationAveragePolicy(_TriangulationPolicy):
    """Alg. 4 (``triangulation_average``): mean of the three pairwise similarities."""

    name = "triangulation_average"
    #: Reference "multi-vector anchoring" stop: once 8 sentences are extracted.
    extracted_gate = 8

    def score(
        self, walk: Walk, cands: np.ndarray, origins: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """``(cos(q,u) + cos(q,c) + cos(u,c)) / 3`` (Alg. 4, step 2)."""
        v = walk.view
        uc = np.einsum("ij,ij->i", v.chunk_emb[cands], v.chunk_emb[origins])
        return (walk.q_chunk[origins] + walk.q_chunk[cands] + uc) / 3

    def sentence_scores(
        self, walk: Walk, sents: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """``(cos(q,u) + 2 cos(q,s)) / 3``: the reference's sentence triangle.

        Reference ``TriangulationAverageAlgorithm._calculate_triangle_metrics`` uses
        ``cos(q, s)`` as a proxy for ``cos(u, s)`` ("for sentences within current chunk").
        """
        qs = walk.view.sent_emb[sents] @ walk.q
        return (float(walk.q_chunk[walk.current]) + 2.0 * qs) / 3

    def article_stop(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> str | None:
        """Article reading of step 4: ``mean cos(q, s)`` over E exceeds every candidate's."""
        best = float(scores.max())
        if walk.mean_extracted > best:
            return (
                f"relevance: mean extracted cos(q,s)={walk.mean_extracted:.4f} > best "
                f"triangle average {best:.4f}"
            )
        return None

    def reference_stop(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> str | None:
        """Step 4 as the reference code: extracted-triangle rule, then sentence termination.

        Extracted-triangle rule (reference ``TriangulationAverageAlgorithm.retrieve``,
        "multi-vector anchoring", once 8 sentences are in): stop when
        ``max_{s in E} (cos(q,u) + cos(q,s) + cos(u, c_s)) / 3`` exceeds every candidate's
        average among the :meth:`competitors`, ``c_s`` the chunk ``s`` was extracted from
        (the reference takes the first chunk in graph order that holds the sentence's text).
        """
        if not walk.gated(config, self.extracted_gate):
            v, u = walk.view, walk.current
            src = np.asarray(walk.sentence_chunk, dtype=np.int64)
            tri = (float(walk.q_chunk[u]) + np.asarray(walk.extracted_sims)
                   + v.chunk_emb[src] @ v.chunk_emb[u]) / 3
            top = float(tri.max())
            _, comp_scores, label = self.competitors(walk, cands, scores, config)
            best = float(comp_scores.max())
            if top > best:
                return (
                    f"relevance: best extracted triangle average {top:.4f} > best "
                    f"{label} triangle average {best:.4f}"
                )
        return super().reference_stop(walk, cands, scores, config)


class TriangulationGeometric3DPolicy(_TriangulationPolicy):
    """Alg. 5 (``triangulation_geometric_3d``): triangle centroid closest to the query in 3-D.

    Query, current and candidate embeddings are projected with a PCA of the chunk
    embeddings (:meth:`ChunkGraphView.pca`); the score is minus the distance between the
    centroid ``(q3 + u3 + c3) / 3`` and ``q3``. (The reference fits its PCA on chunk and
    sentence embeddings together.)
    """

    name = "triangulation_geometric_3d"

    def _project(self, walk: Walk, x: np.ndarray, config: TraversalConfig) -> np.ndarray:
        mean, basis = walk.view.pca(config.pca_components)
        return (np.asarray(x, dtype=np.float64) - mean) @ basis

    def score(
        self, walk: Walk, cands: np.ndarray, origins: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """``-|| (q3 + u3 + c3)/3 - q3 ||`` (Alg. 5, steps 1-3)."""
        v = walk.view
        q3 = self._project(walk, walk.q, config)
        u3 = self._project(walk, v.chunk_emb[origins], config)
        c3 = self._project(walk, v.chunk_emb[cands], config)
        return -np.linalg.norm((q3 + u3 + c3) / 3.0 - q3, axis=1)

    def sentence_scores(
        self, walk: Walk, sents: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """``-|| (q3 + u3 + s3)/3 - q3 ||`` (reference ``TriangulationGeometric3DAlgorithm``)."""
        v = walk.view
        q3 = self._project(walk, walk.q, config)
        u3 = self._project(walk, v.chunk_emb[walk.current], config)
        s3 = self._project(walk, v.sent_emb[sents], config)
        return -np.linalg.norm((q3 + u3 + s3) / 3.0 - q3, axis=1)


class TriangulationFullDimPolicy(_TriangulationPolicy):
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

    def sentence_scores(
        self, walk: Walk, sents: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """``-|| (q + u + s)/3 - q ||`` (reference ``TriangulationGeometricFullDimAlgorithm``)."""
        v = walk.view
        q = walk.q.astype(np.float64)
        u = v.chunk_emb[walk.current].astype(np.float64)
        return -np.linalg.norm((q + u + v.sent_emb[sents].astype(np.float64)) / 3 - q, axis=1)
