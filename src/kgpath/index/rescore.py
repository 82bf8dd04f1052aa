"""Exact re-scoring for the ``"int8+float16"`` compact vector store (issue 14).

The int8 codes stay in memory and score every candidate; a float16 copy of every row lives
in a file read through a read-only memory map, and only a short list is re-scored from it.
The short list is chosen with the int8 error bound, so that the top ``top`` rows and their
scores are those of the ``"float16"`` store (up to float32 summation order) while the
process keeps only 1 byte per dimension resident:

For a unit query ``q`` and a row with int8 scale ``c`` (``max|v| = 127·c``), the int8 score
is within ``c/2·Σ|q_i|`` of the float32 cosine and the float16 score within
``2**-11·127·c·Σ|q_i|`` of it; ``bound = c·Σ|q_i|·(1/2 + 127·2**-11) + 1e-4`` (the
constant covers float32 summation) bounds ``|s_int8 - s_float16|``. Let ``tau`` be the
``top``-th largest lower bound ``s_int8 - bound``: ``top`` rows score at least ``tau`` in
float16, so a row whose upper bound ``s_int8 + bound`` is below ``tau`` cannot be among
float16's top ``top``. Every other row (the short list) gets its float16 score; the rest
keep their int8 score, which is below ``tau`` and so below every re-scored top row.

This is a kgpath extension (no paper stores vectors this way); measured in
``benchmarks/bench_compact.py``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence

import numpy as np

from kgpath.errors import ConfigError

__all__ = ["RESCORE_TOP", "Float16File", "rescore"]

#: Rows whose float16 ranking is guaranteed by default (``>= k`` of any PCR query).
RESCORE_TOP = 64
_SLACK = 1e-4  # float32 summation error of a 384-term dot product, with room to spare


class Float16File:
    """``(n, dim)`` float16 rows in an anonymous temporary file, read via ``np.memmap``.

    Rows are written with ``os.pwrite`` (they go to the page cache, not to this process's
    resident set) and read through a read-only map, so only the pages of rows actually
    re-scored become resident. The file has no name (``tempfile.TemporaryFile``): it
    vanishes when the store is dropped or the process ends. Never pickled.
    """

    def __init__(self, n: int, dim: int, directory: str | os.PathLike[str] | None = None
                 ) -> None:
        if n < 0 or dim <= 0:
            raise ConfigError(f"Float16File needs n >= 0 and dim > 0, got ({n}, {dim})")
        self._f = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115 - owned by self
        self.dim, self.n = dim, 0
        self._map: np.ndarray | None = None
        self.grow(n)

    @property
    def row_bytes(self) -> int:
        """Bytes per row (``2·dim``)."""
        return 2 * self.dim

    @property
    def file_bytes(self) -> int:
        """Size of the backing file."""
        return self.n * self.row_bytes

    def grow(self, n: int) -> None:
        """Extend to ``n`` rows (new rows read as zeros)."""
        if n > self.n:
            os.ftruncate(self._f.fileno(), n * self.row_bytes)
            self.n, self._map = n, None

    def put(self, rows: Sequence[int] | np.ndarray, vecs: np.ndarray) -> None:
        """Write ``vecs`` (rounded to float16) to ``rows``, one ``pwrite`` per run."""
        idx = np.asarray(rows, dtype=np.int64)
        order = np.argsort(idx, kind="stable")
        idx = idx[order]
        v16 = np.ascontiguousarray(np.asarray(vecs, dtype=np.float32)[order].astype(np.float16))
        cuts = [0, *(np.flatnonzero(np.diff(idx) != 1) + 1).tolist(), idx.size]
        fd = self._f.fileno()
        for a, b in zip(cuts[:-1], cuts[1:]):
            if b > a:
                os.pwrite(fd, v16[a:b].tobytes(), int(idx[a]) * self.row_bytes)

    def read(self, rows: np.ndarray | slice) -> np.ndarray:
        """float32 copies of ``rows``."""
        if self._map is None:
            self._map = np.memmap(self._f, dtype=np.float16, mode="r",
                                  shape=(self.n, self.dim))
        return np.asarray(self._map[rows], dtype=np.float32)

    def close(self) -> None:
        """Drop the map and the file."""
        self._map = None
        self._f.close()


def rescore(rows: np.ndarray, approx: np.ndarray, scale: np.ndarray, q: np.ndarray,
            exact: Callable[[np.ndarray], np.ndarray], top: int) -> np.ndarray:
    """``approx`` (int8 scores of ``rows``) with the short list replaced by exact scores.

    ``scale`` are the rows' int8 scales; ``exact(rows)`` returns float16 scores. The top
    ``top`` of the result are float16's top ``top`` (see the module docstring).
    """
    m = approx.shape[0]
    if m == 0:
        return approx
    bound = scale * np.float32(np.abs(q).sum() * (0.5 + 127 * 2.0**-11)) + np.float32(_SLACK)
    t = min(int(top), m)
    tau = np.partition(approx - bound, m - t)[m - t]
    short = np.flatnonzero(approx + bound >= tau)
    out = approx.astype(np.float32, copy=True)
    out[short] = exact(rows[short])
    return out
