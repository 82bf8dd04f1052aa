"""Exact re-scoring for the ``"int8+float16"`` compact vector store (issue 14).

The int8 codes stay in memory and score every candidate; a float16 copy of every row lives
in an anonymous file, and only a short list is read back (``os.pread``) and re-scored.
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
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from kgpath._files import write_all
from kgpath.errors import ConfigError, PersistenceError

__all__ = ["RESCORE_TOP", "Float16File", "rescore"]

#: Rows whose float16 ranking is guaranteed by default (``>= k`` of any PCR query).
RESCORE_TOP = 64
_SLACK = 1e-4  # float32 summation error of a 384-term dot product, with room to spare


class Float16File:
    """``(n, dim)`` float16 rows in an anonymous temporary file, read row by row.

    Rows are written with ``os.pwrite`` and read with ``os.pread`` (one call per run of
    consecutive rows): the file lives in the kernel's page cache, and the process holds
    only the rows it is re-scoring. Not a memory map, by measurement: with ``np.memmap``
    every touched row also mapped its neighbours (the kernel's fault-around, 64 KB), and
    200 PCR queries at 10^6 nodes made the whole 732 MB file resident (RSS 669 -> 1402 MB,
    ``benchmarks/bench_compact.py``). The file has no name (``tempfile.TemporaryFile``):
    it vanishes when the store is dropped or the process ends. Never pickled.

    A write that fails or stops short (a full temporary directory) raises
    :class:`~kgpath.errors.PersistenceError`, and the rows of that :meth:`put` are marked
    unwritten: reading one raises too until a later :meth:`put` writes it, so an unwritten
    row is never scored as zeros.
    """

    def __init__(self, n: int, dim: int, directory: str | os.PathLike[str] | None = None
                 ) -> None:
        if n < 0 or dim <= 0:
            raise ConfigError(f"Float16File needs n >= 0 and dim > 0, got ({n}, {dim})")
        try:
            self._f = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115 - owned by self
        except OSError as exc:
            raise PersistenceError(f"cannot create the float16 re-scoring file: {exc}") from exc
        self.dim, self.n = dim, 0
        self._unwritten = np.zeros(0, dtype=bool)  # rows whose last put failed
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
            try:
                os.ftruncate(self._f.fileno(), n * self.row_bytes)
            except OSError as exc:
                raise PersistenceError(
                    f"cannot extend the float16 re-scoring file to {n} rows: {exc}") from exc
            self._unwritten = np.concatenate([self._unwritten, np.zeros(n - self.n, bool)])
            self.n = n

    def put(self, rows: Sequence[int] | np.ndarray, vecs: np.ndarray) -> None:
        """Write ``vecs`` (rounded to float16) to ``rows``, one ``pwrite`` per run.

        Raises
        ------
        PersistenceError
            If a write fails or is short; ``rows`` then read as unwritten (an error).
        """
        idx = np.asarray(rows, dtype=np.int64)
        order = np.argsort(idx, kind="stable")
        idx = idx[order]
        v16 = np.ascontiguousarray(np.asarray(vecs, dtype=np.float32)[order].astype(np.float16))
        fd = self._f.fileno()
        self._unwritten[idx] = True  # until every run is written
        for a, b in _runs(idx):
            write_all(fd, v16[a:b].data, offset=int(idx[a]) * self.row_bytes,
                      what=f"float16 vectors (rows {int(idx[a])}..{int(idx[b - 1])}) to the "
                           "re-scoring file in the temporary directory")
        self._unwritten[idx] = False

    def read(self, rows: np.ndarray | slice) -> np.ndarray:
        """float32 copies of ``rows`` (a slice reads every row it names: avoid on big files)."""
        idx = np.arange(self.n)[rows] if isinstance(rows, slice) \
            else np.asarray(rows, dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= self.n):
            raise ConfigError(f"row out of range [0, {self.n})")
        if idx.size and self._unwritten[idx].any():
            bad = int(idx[np.flatnonzero(self._unwritten[idx])[0]])
            raise PersistenceError(
                f"float16 row {bad} was never written (an earlier write to the re-scoring "
                "file failed); rebuild or refresh the index")
        order = np.argsort(idx, kind="stable")
        srt = idx[order]
        fd, rb = self._f.fileno(), self.row_bytes
        raw = b"".join(os.pread(fd, (b - a) * rb, int(srt[a]) * rb) for a, b in _runs(srt))
        if len(raw) != idx.size * rb:
            raise PersistenceError(f"the float16 re-scoring file returned {len(raw)} bytes "
                                   f"for {idx.size} rows of {rb}")
        out = np.empty((idx.size, self.dim), dtype=np.float32)
        out[order] = np.frombuffer(raw, dtype=np.float16).reshape(idx.size, self.dim)
        return out

    def close(self) -> None:
        """Delete the file."""
        self._f.close()


def _runs(srt: np.ndarray) -> Iterator[tuple[int, int]]:
    """``(a, b)`` position ranges of the runs of consecutive values in sorted ``srt``."""
    cuts = [0, *(np.flatnonzero(np.diff(srt) != 1) + 1).tolist(), srt.size]
    return ((a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a)


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
