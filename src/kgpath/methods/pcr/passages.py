"""PCR hits to passages ranked by the question (a kgpath extension).

PCR's evidence contract ranks passages in hit order, then each hit's provenance
(:meth:`PCRResult.evidence`): every passage citing the best node comes before any passage
citing the second, whatever the passages say. For passage retrieval (HotpotQA) that order
wastes the top ranks on long provenance lists of one node. :func:`rank_passages` keeps
PCR's structural constraint (only passages cited by reachable hits, or by the anchors, are
candidates) and orders the candidates by

    ``weight · cos(q, passage) + (1 − weight) · best score of a hit citing it``

optionally with the passages of the anchors themselves first (``anchors_first``; off by
default: on HotpotQA-100 q0-49 it costs 12-18 points of R@5, since anchors cite many
passages that do not answer). Passage vectors come from the
caller (e.g. :func:`kgpath.index.passage_vectors.passage_vectors`), unit length, so the
dot product is the cosine. :data:`PASSAGE_WEIGHT` = 0.7 was chosen on HotpotQA-100
questions 0-49 (``kgpath eval kg --halves``: weights 0 / 0.5 / 0.7 / 1 with 10 hits per
anchor and 0.5 / 0.7 with 5 and 20 hits; R@5 81-89 there, 20 hits at 0.7 best).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kgpath.errors import ConfigError
from kgpath.methods.pcr.result import PCRResult

__all__ = ["PASSAGE_WEIGHT", "rank_passages"]

PASSAGE_WEIGHT = 0.7


def _cited(results: Sequence[PCRResult]) -> tuple[dict[str, float], set[str]]:
    """Best hit score per cited passage, and the passages the anchors cite."""
    best: dict[str, float] = {}
    anchored: set[str] = set()
    for res in results:
        for a in res.anchors or (res.anchor,):
            anchored.update(a.provenance)
        for h in res.hits:
            for p in h.node.provenance:
                best[p] = max(best.get(p, -np.inf), float(h.score))
    for p in anchored:
        best.setdefault(p, 0.0)
    return best, anchored


def rank_passages(
    results: Sequence[PCRResult], query_vec: np.ndarray, vectors: Mapping[str, int],
    matrix: np.ndarray, *, weight: float = PASSAGE_WEIGHT, anchors_first: bool = False,
) -> list[tuple[str, float]]:
    """``(passage id, score)`` best first, over the passages PCR's hits and anchors cite.

    ``vectors`` maps a passage id to its row of ``matrix``; a cited passage without a row
    scores its hit score alone. Ties keep citation order.
    """
    if not 0.0 <= weight <= 1.0:
        raise ConfigError(f"weight must be in [0, 1], got {weight!r}")
    best, anchored = _cited(results)
    ids = list(best)
    if not ids:
        return []
    q = np.asarray(query_vec, np.float32).reshape(-1)
    rows = [vectors.get(p, -1) for p in ids]
    cos = np.asarray([float(matrix[r] @ q) if r >= 0 else 0.0 for r in rows], np.float32)
    hit = np.asarray([best[p] for p in ids], np.float32)
    score = np.where(np.asarray(rows) >= 0, weight * cos + (1.0 - weight) * hit, hit)
    first = np.asarray([anchors_first and p in anchored for p in ids])
    order = np.lexsort((np.arange(len(ids)), -score, ~first))
    return [(ids[i], float(score[i])) for i in order]
