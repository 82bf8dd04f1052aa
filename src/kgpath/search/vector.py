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
from kgpath.search.rescore import RESCORE_TOP, Float16File, rescore

__all__ = ["COMPACT_KINDS", "CompactVectorIndex", "VectorIndex", "top_k"]


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
            return _rowdot(self.vectors, q)
        cand = _candidate_rows(candidates, len(self))
        if cand.size * 4 > len(self):  # large sets: one full mat-vec beats a big gather
            return _rowdot(self.vectors, q)[cand]
        return _rowdot(self.vectors[cand], q)

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


# ---------------------------------------------------------------------- compact store
#: Storage kinds of :class:`CompactVectorIndex` (``"float32"`` is :class:`VectorIndex`).
COMPACT_KINDS = ("float16", "int8", "int8+float16")
_CHUNK = 16384  # rows decoded per block in a full scan (≈ 25 MB of float32 at d = 384)


class CompactVectorIndex:
    """Cosine search over unit vectors stored as ``float16`` and/or ``int8`` (issue 14).

    Same interface as :class:`VectorIndex` (``dim``, ``len``, :meth:`scores`,
    :meth:`search`); rows are decoded to float32 in blocks while scoring, and no float32
    copy of the matrix is kept (:attr:`vectors` decodes one on request).

    * ``"float16"`` (2 bytes/dimension, the recommended compact mode): each component
      rounded to half precision, relative error ``<= 2**-11``, so every score is within
      ``2**-11 · Σ|q_i·v_i| + d·2**-25 <= 5.0e-4`` (d = 384) of the float32 cosine.
      Restricted search is exact on the stored vectors; it differs from float32 only
      where two cosines are closer than that bound. Measured on 10^6 random 384-d unit
      vectors: PCR recall@10 1.000 of float32 (``benchmarks/bench_compact.py``).
    * ``"int8"`` (1 byte/dimension + one float32 scale per row): symmetric per-row
      quantisation ``code = round(127·v / max|v|)``; score error ``<= scale/2 · Σ|q_i|``
      (worst case ≈ 0.013 at d = 384, about 4e-4 standard deviation on random
      vectors). Approximate, no re-scoring. Measured on 10^6 random 384-d vectors, PCR
      depth 3 (150 candidates on average): recall@10 0.989 of float32, just outside the
      issue's 0.01 tolerance; int8 halves the store again (370 MB vs 732 MB) where that
      tolerance is acceptable, and ``"int8+float16"`` removes the loss at the same memory.
    * ``"int8+float16"``: the int8 codes in memory score every row, and the short list that
      can reach the top ``rescore_top`` (by the int8 error bound) is re-scored from a
      float16 copy in an anonymous file, read back row by row
      (:mod:`kgpath.search.rescore`): the top ``rescore_top`` rows and scores are those of
      ``"float16"``, with int8's resident memory. Measured with the compact graph at
      10^6 nodes: peak RSS 670 MB, PCR recall@10 1.000 of float32, p50 2.0 ms (the
      mode for issue 14's 1 GB target; ``"float16"`` peaks at 1,019 MB there).

    Rows are written with :meth:`put` (in chunks, so a float32 copy of the whole matrix
    never exists) or given at once to the constructor.
    """

    def __init__(self, vectors: np.ndarray | None = None, *, kind: str = "float16",
                 n: int = 0, dim: int = 0, rescore_top: int = RESCORE_TOP) -> None:
        if kind not in COMPACT_KINDS:
            raise ConfigError(f"kind must be one of {COMPACT_KINDS}, got {short(kind)}")
        if (not isinstance(rescore_top, (int, np.integer)) or isinstance(rescore_top, bool)
                or rescore_top <= 0):
            raise ConfigError(f"rescore_top must be a positive int, got {short(rescore_top)}")
        self.kind = kind
        if vectors is not None:
            mat = np.asarray(vectors)
            if mat.ndim != 2:
                raise EmbeddingError(f"vectors must be 2-D, got shape {mat.shape}")
            n, dim = mat.shape
        dt = np.float16 if kind == "float16" else np.int8
        self.codes = np.zeros((n, dim), dtype=dt)
        self.scale = np.ones(n, dtype=np.float32) if kind != "float16" else None
        self.exact = Float16File(n, dim) if kind == "int8+float16" and dim else None
        self.rescore_top = int(rescore_top)
        if vectors is not None and n:
            self.put(np.arange(n), mat)

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return int(self.codes.shape[1])

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes held in memory by the stored rows (codes and per-row scales)."""
        return int(self.codes.nbytes + (0 if self.scale is None else self.scale.nbytes))

    @property
    def file_bytes(self) -> int:
        """Bytes of the float16 re-scoring file (``"int8+float16"``), else 0."""
        return 0 if self.exact is None else self.exact.file_bytes

    def grow(self, n: int) -> None:
        """Extend to ``n`` rows (new rows zero) for nodes added to the graph."""
        extra = n - len(self)
        if extra > 0:
            self.codes = np.vstack([self.codes, np.zeros((extra, self.dim), self.codes.dtype)])
            if self.scale is not None:
                self.scale = np.concatenate([self.scale, np.ones(extra, np.float32)])
            if self.exact is not None:
                self.exact.grow(n)

    def put(self, rows: Sequence[int] | np.ndarray, vecs: np.ndarray) -> None:
        """Encode float32 ``vecs`` into ``rows`` (finite values checked)."""
        v = np.asarray(vecs, dtype=np.float32)
        idx = np.asarray(rows, dtype=np.int64)
        if v.ndim != 2 or v.shape != (idx.size, self.dim):
            raise EmbeddingError(f"expected vectors of shape ({idx.size}, {self.dim}), "
                                 f"got {v.shape}")
        if not np.isfinite(v).all():
            bad = int(idx[np.flatnonzero(~np.isfinite(v).all(axis=1))[0]])
            raise EmbeddingError(f"vector row {bad} contains NaN or inf")
        if self.scale is None:
            self.codes[idx] = v.astype(np.float16)
            return
        peak = np.abs(v).max(axis=1)
        scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
        if self.exact is not None:  # first: a failed write leaves the codes as they were
            self.exact.put(idx, v)
        self.codes[idx] = np.rint(v / scale[:, None]).astype(np.int8)
        self.scale[idx] = scale

    def decode(self, rows: np.ndarray | slice) -> np.ndarray:
        """float32 rows (as stored: rounded or dequantised; the float16 copy if there is one)."""
        if self.exact is not None:
            return self.exact.read(rows)
        out = self.codes[rows].astype(np.float32)
        if self.scale is not None:
            out *= self.scale[rows][:, None]
        return out

    @property
    def vectors(self) -> np.ndarray:
        """A decoded float32 copy of every row (``n·d·4`` bytes: avoid on large stores)."""
        return self.decode(slice(None))

    def _query(self, query: np.ndarray) -> np.ndarray:
        return VectorIndex._query(self, query)  # type: ignore[arg-type]

    def _dot(self, rows: np.ndarray | slice, q: np.ndarray) -> np.ndarray:
        s = self.codes[rows].astype(np.float32) @ q
        return s * self.scale[rows] if self.scale is not None else s

    def _all(self, q: np.ndarray, top: int = 0) -> np.ndarray:
        out = np.empty(len(self), dtype=np.float32)
        for a in range(0, len(self), _CHUNK):
            out[a:a + _CHUNK] = self._dot(slice(a, a + _CHUNK), q)
        return self._rescored(np.arange(len(self)), out, q, top)

    def _rescored(self, rows: np.ndarray, s: np.ndarray, q: np.ndarray, top: int) -> np.ndarray:
        """``s`` with the float16 short list re-scored (``"int8+float16"`` only)."""
        exact = self.exact
        if exact is None or self.scale is None:
            return s
        return rescore(rows, s, self.scale[rows], q, lambda r: exact.read(r) @ q,
                       max(top, self.rescore_top))

    def scores(self, query: np.ndarray, candidates: np.ndarray | None = None) -> np.ndarray:
        """Cosine of ``query`` to every row (or to ``candidates`` rows, in that order).

        As stored: ``"float16"`` rows score within 5e-4 of float32, ``"int8"`` rows within
        the int8 bound. ``"int8+float16"`` is float16-exact only for its short list: the
        rows (of those scored) that the int8 error bound lets reach the top
        ``rescore_top`` get their float16 score, every other row keeps its int8 score,
        which is below all of those (:func:`kgpath.search.rescore.rescore`). So the top
        ``rescore_top`` rows, their order and scores are ``"float16"``'s; lower rows are
        approximate. Not every row is re-scored, by measurement: reading each candidate's
        float16 row costs about the same at 150 candidates but 3.9x at 10^4 and 2.2x at
        10^5 (200,000 rows, 384-d), and a float32 copy of all of them; a hybrid score over
        all 10^6 nodes would read the whole file per query.
        """
        q = self._query(query)
        if candidates is None:
            return self._all(q)
        cand = _candidate_rows(candidates, len(self))
        return self._rescored(cand, self._dot(cand, q), q, 0)

    def search(
        self,
        query: np.ndarray,
        k: int,
        candidates: Sequence[int] | np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` rows by cosine, optionally only among ``candidates``.

        Best first, ties by ascending row; as :meth:`VectorIndex.search`.
        """
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k <= 0:
            raise ConfigError(f"k must be a positive int, got {short(k)}")
        q = self._query(query)
        if candidates is None:
            s = self._all(q, int(k))
            pos = top_k(s, min(int(k), len(self)))
            return pos.astype(np.int64), s[pos]
        cand = np.unique(np.asarray(candidates, dtype=np.int64))
        if cand.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        if cand[0] < 0 or cand[-1] >= len(self):
            raise ConfigError(f"candidate row out of range [0, {len(self)})")
        s = self._rescored(cand, self._dot(cand, q), q, int(k))
        pos = top_k(s, min(int(k), cand.size))
        return cand[pos], s[pos]


def _candidate_rows(candidates: Sequence[int] | np.ndarray, n: int) -> np.ndarray:
    """``candidates`` as int64 rows, each in ``[0, n)`` (``ConfigError`` otherwise)."""
    cand = np.asarray(candidates, dtype=np.int64)
    if cand.size and (cand.min() < 0 or cand.max() >= n):
        raise ConfigError(f"candidate row out of range [0, {n})")
    return cand


def _rowdot(matrix: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``matrix @ q`` summed row by row (``einsum``), not by BLAS.

    BLAS blocks rows, so two equal rows can score 1 ulp apart depending on where they sit;
    per-row sums give equal rows equal scores wherever they are, so ties go by node order
    here and in a graph store that scores a part of the rows
    (:mod:`kgpath.backends.cypher.vectors`). Same speed as BLAS on a mat-vec (memory bound).
    """
    return np.einsum("ij,j->i", matrix, q)
