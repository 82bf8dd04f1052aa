"""Hybrid vector + BM25 scoring (PCR paper, section 3.4).

``score(v, q) = α · cos(q, v) + (1 − α) · BM25(v, q) / max_{u ∈ C} BM25(u, q)``

Normalisation: cosine is used as is (unit vectors, so it lies in [−1, 1] and in practice
[0, 1]); BM25 is unbounded, so it is divided by its maximum over the scored candidate set
``C`` (all nodes for global search, the reachable set for PCR), mapping it to [0, 1]. When
every BM25 score in ``C`` is 0 the BM25 term is 0. Max-scaling keeps a zero BM25 at zero
(unlike min-max), so a node sharing no query word is never boosted by the keyword term.
"""

from __future__ import annotations

import numbers

import numpy as np

from kgpath.errors import ConfigError, short

__all__ = ["hybrid_scores", "normalize_bm25"]


def normalize_bm25(bm25: np.ndarray) -> np.ndarray:
    """Divide by the maximum (0 stays 0; all-zero input returns zeros)."""
    b = np.asarray(bm25, dtype=np.float32)
    if b.size == 0:
        return b
    m = float(b.max())
    return b / m if m > 0 else np.zeros_like(b)


def hybrid_scores(cosine: np.ndarray, bm25: np.ndarray, alpha: float = 0.7) -> np.ndarray:
    """``α·cosine + (1−α)·normalize_bm25(bm25)`` over the same candidate order."""
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0.0 <= alpha <= 1.0:
        raise ConfigError(f"hybrid alpha must be a number in [0, 1], got {short(alpha)}")
    c = np.asarray(cosine, dtype=np.float32)
    b = np.asarray(bm25, dtype=np.float32)
    if c.shape != b.shape:
        raise ConfigError(f"cosine and BM25 arrays differ in shape: {c.shape} vs {b.shape}")
    return alpha * c + (1.0 - alpha) * normalize_bm25(b)
