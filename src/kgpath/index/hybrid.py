"""Hybrid vector + BM25 scoring (PCR paper, section 3.4).

``score(v, q) = α · cos(q, v) + (1 − α) · norm(BM25)(v, q)``

The paper writes the BM25 term unscaled; BM25 is unbounded (typically 0-15 on short node
texts), so read literally it swamps the cosine (in [−1, 1]) whatever α is. Three
normalisations are selectable (``norm=``, ``PCRConfig.hybrid_norm``):

``"max"`` (default)
    BM25 divided by its maximum over the scored candidate set ``C`` (all nodes for global
    search, the reachable set for PCR), mapping it to [0, 1]; all-zero BM25 gives a zero
    term. Max-scaling keeps a zero BM25 at zero (unlike min-max), so a node sharing no
    query word is never boosted by the keyword term. Cosine used as is.
``"raw"``
    The paper's section 3.4 formula as printed: unscaled BM25.
``"minmax"``
    What the authors' code does in its ``HybridRetriever`` baseline (``src/baselines.py``):
    both the cosine and the BM25 scores min-max scaled over the candidate set (a constant
    array maps to 0). (The authors' PCR ``_hybrid_search`` instead re-scores the vector
    top-2k with the fraction of query words found in the node text, a keyword score that is
    not BM25; it is not reproduced here.)
"""

from __future__ import annotations

import numbers
from typing import Literal

import numpy as np

from kgpath.errors import ConfigError, short

__all__ = ["HYBRID_NORMS", "HybridNorm", "hybrid_scores", "minmax", "normalize_bm25"]

HybridNorm = Literal["max", "raw", "minmax"]
HYBRID_NORMS: tuple[str, ...] = ("max", "raw", "minmax")


def normalize_bm25(bm25: np.ndarray) -> np.ndarray:
    """Divide by the maximum (0 stays 0; all-zero input returns zeros)."""
    b = np.asarray(bm25, dtype=np.float32)
    if b.size == 0:
        return b
    m = float(b.max())
    return b / m if m > 0 else np.zeros_like(b)


def minmax(x: np.ndarray) -> np.ndarray:
    """``(x − min) / (max − min)``; a constant (or empty) array maps to zeros."""
    a = np.asarray(x, dtype=np.float32)
    if a.size == 0:
        return a
    lo, hi = float(a.min()), float(a.max())
    return (a - lo) / (hi - lo) if hi > lo else np.zeros_like(a)


def hybrid_scores(
    cosine: np.ndarray, bm25: np.ndarray, alpha: float = 0.7, *, norm: str = "max"
) -> np.ndarray:
    """``α·cosine + (1−α)·bm25`` over the same candidate order, scaled by ``norm``.

    ``norm="max"`` (default): ``α·cosine + (1−α)·normalize_bm25(bm25)``; ``"raw"``: BM25
    unscaled (the paper's formula); ``"minmax"``: both terms min-max scaled.
    """
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0.0 <= alpha <= 1.0:
        raise ConfigError(f"hybrid alpha must be a number in [0, 1], got {short(alpha)}")
    if norm not in HYBRID_NORMS:
        raise ConfigError(f"hybrid norm must be one of {HYBRID_NORMS}, got {short(norm)}")
    c = np.asarray(cosine, dtype=np.float32)
    b = np.asarray(bm25, dtype=np.float32)
    if c.shape != b.shape:
        raise ConfigError(f"cosine and BM25 arrays differ in shape: {c.shape} vs {b.shape}")
    if norm == "raw":
        return alpha * c + (1.0 - alpha) * b
    if norm == "minmax":
        return alpha * minmax(c) + (1.0 - alpha) * minmax(b)
    return alpha * c + (1.0 - alpha) * normalize_bm25(b)
