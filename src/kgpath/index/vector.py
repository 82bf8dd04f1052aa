"""FAISS inner-product index that can search restricted to a candidate set.

Vectors are L2-normalised, so the inner product is cosine similarity.

Restricted search chooses the cheaper of two exact strategies:

* small candidate sets (``len(candidates) <= dense_threshold``): gather the candidate rows
  and take one matrix-vector product (O(|C|·d), no index traversal);
* large candidate sets: FAISS ``IndexFlatIP.search`` with an ``IDSelectorBatch``.

Both are exact, so results are identical; ties break by ascending row index.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kgpath.errors import ConfigError, EmbeddingError, short

__all__ = ["VectorIndex", "top_k"]


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest scores, best first, ties by ascending position."""
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    if k < n:
        part = np.argpartition(-scores, k - 1)[:k]
        # include every element tied with the k-th score so tie-breaking is stable
        kth = scores[part].min()
        part = np.flatnonzero(scores >= kth)
    else:
        part = np.arange(n)
    order = np.lexsort((part, -scores[part]))
    return part[order][:k]


class VectorIndex:
    """Exact cosine search over a fixed ``(n, d)`` matrix of unit vectors."""

    def __init__(self, vectors: np.ndarray, *, dense_threshold: int = 4096) -> None:
        import faiss

        mat = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
        if mat.ndim != 2:
            raise EmbeddingError(f"vectors must be 2-D, got shape {mat.shape}")
        if not np.isfinite(mat).all():
            bad = int(np.flatnonzero(~np.isfinite(mat).all(axis=1))[0])
            raise EmbeddingError(f"vector row {bad} contains NaN or inf")
        self.vectors = mat
        self.dense_threshold = dense_threshold
        self._faiss = faiss
        self._index = faiss.IndexFlatIP(mat.shape[1])
        if mat.shape[0]:
            self._index.add(mat)

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    def _query(self, query: np.ndarray) -> np.ndarray:
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise EmbeddingError(
                f"query embedding has dimension {q.shape[0]}, index has {self.dim}"
            )
        if not np.isfinite(q).all():
            raise EmbeddingError("query embedding contains NaN or inf")
        return q

    def scores(self, query: np.ndarray, candidates: np.ndarray | None = None) -> np.ndarray:
        """Cosine of ``query`` to every row (or to ``candidates`` rows, in that order)."""
        q = self._query(query)
        if candidates is None:
            return self.vectors @ q
        cand = np.asarray(candidates, dtype=np.int64)
        if cand.size and (cand.min() < 0 or cand.max() >= len(self)):
            raise ConfigError(f"candidate row out of range [0, {len(self)})")
        if cand.size * 4 > len(self):  # large sets: one full mat-vec beats a big gather
            return (self.vectors @ q)[cand]
        return self.vectors[cand] @ q

    def search(
        self,
        query: np.ndarray,
        k: int,
        candidates: Sequence[int] | np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` rows by cosine, optionally only among ``candidates``.

        Returns ``(row_indices int64, scores float32)``, best first.
        """
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k <= 0:
            raise ConfigError(f"k must be a positive int, got {short(k)}")
        q = self._query(query)
        if candidates is None:
            if len(self) == 0:
                return np.zeros(0, np.int64), np.zeros(0, np.float32)
            kk = min(int(k), len(self))
            if len(self) <= self.dense_threshold:
                s = self.vectors @ q
                pos = top_k(s, kk)
                return pos.astype(np.int64), s[pos]
            d, i = self._index.search(q[None, :], kk)
            return i[0].astype(np.int64), d[0]
        cand = np.unique(np.asarray(candidates, dtype=np.int64))
        if cand.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        if cand[0] < 0 or cand[-1] >= len(self):
            raise ConfigError(f"candidate row out of range [0, {len(self)})")
        kk = min(int(k), cand.size)
        if cand.size <= self.dense_threshold:
            s = self.vectors[cand] @ q
            pos = top_k(s, kk)
            return cand[pos], s[pos]
        sel = self._faiss.IDSelectorBatch(cand)
        params = self._faiss.SearchParameters(sel=sel)  # type: ignore[call-arg]
        d, i = self._index.search(q[None, :], kk, params=params)
        keep = i[0] >= 0
        return i[0][keep].astype(np.int64), d[0][keep]
