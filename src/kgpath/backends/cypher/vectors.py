"""Node and passage vectors beside the database: exact top-k without holding them in memory.

:class:`~kgpath.backends.cypher.CypherBackend` scores the whole corpus (PCR's global
fallback, Section 3.5; the dense passage top ``N`` of graph-augmented retrieval) either by a
keyset-paged scan of the vectors stored in the database (one base64 string per row, decoded
in the query process: O(corpus) over the wire per query) or, with ``vectors=``, from a
:class:`VectorFiles` directory written next to it:

* ``nodes.f32`` / ``passages.f32``: ``count × dim`` little-endian float32 rows, row ``i`` =
  the node (passage) whose order property is ``i`` (:func:`~kgpath.backends.cypher.load_graph`
  writes the graph's node / passage index there, so file order is the database's order);
* ``*.off`` / ``*.ids``: ``count + 1`` int64 byte offsets into the UTF-8 ids, so the id of a
  row is two small reads;
* ``*.json``: ``{"format", "version", "count", "dim"}``.

A query reads the float32 file in chunks of about 8 MB (``os.preadv`` into one reused
buffer) and scores each chunk with the float32 dot product of Eq. (2) (``sim(q, v)`` of
PCR); the top ``k`` is :func:`~kgpath.search.vector.top_k` over all ``count`` scores (ties
by row, i.e. by node order, as in memory and as the paged scan). Exact: no approximation, no
re-scoring. The dot product is ``np.einsum`` rather than BLAS ``matmul``: BLAS sums a row in
an order that depends on its position in the block (measured: equal rows scored 1 ulp apart,
so a tie between duplicate vectors went to the later node depending on the chunk size);
einsum sums each row the same way wherever it sits (about 25% slower, ~13 ms per 10^6 x 64).

Why read and not memory-map: the file stays in the kernel's page cache (shared, not this
process's memory) and the process holds one chunk; a full scan of a memory map makes every
page of the file resident in the querying process (its RSS grows by the file's size,
measured in ``benchmarks/bench_graphdb.py --vectors``: 10^6 x 64, peak 309 MB mapped vs
66 MB read, 34 ms per top-10 read), which is what serving without the vectors in memory must
avoid. FalkorDB's HNSW vector index was measured too (same benchmark): ~3 ms per query, but
approximate even after over-fetching and re-scoring exactly (recall@10 0.48 at 10^6 random
64-d vectors with ``efRuntime`` 200; 0.11 at 10^5 with the default 10), 12 minutes and
1.1 GB of server memory to build: equality with the in-memory methods would be lost.

Staleness: the files describe the database at load time. The backend checks, per query,
that the database holds as many nodes (passages) as the file rows and that every returned
row's id has that order in the database; otherwise :class:`~kgpath.errors.BackendError`
(rewrite the files with :func:`write_vector_files` after changing the graph).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kgpath._files import atomic_write, check_directory, user_path, write_chunked
from kgpath.errors import ConfigError, PersistenceError
from kgpath.search.vector import top_k

__all__ = ["VectorFile", "VectorFileWriter", "VectorFiles", "write_vector_files"]

FORMAT = "kgpath-vectors"
VERSION = 1
CHUNK_BYTES = 8 << 20  # bytes of float32 rows read and scored at a time


class VectorFile:
    """One ``<name>.f32`` file of float32 rows with their ids (read-only).

    Parameters
    ----------
    directory, name
        The files ``<directory>/<name>.{json,f32,off,ids}``.

    Raises
    ------
    PersistenceError
        If a file is missing, or sizes disagree with the header.
    """

    def __init__(self, directory: str | os.PathLike[str], name: str) -> None:
        base = user_path(directory, "vector directory")
        self.path = base / f"{name}.f32"
        try:
            head = json.loads((base / f"{name}.json").read_text())
            self._fd = os.open(self.path, os.O_RDONLY)
            self._off = os.open(base / f"{name}.off", os.O_RDONLY)
            self._ids = os.open(base / f"{name}.ids", os.O_RDONLY)
        except (OSError, ValueError) as exc:
            raise PersistenceError(f"cannot open vector file {name!r} in {str(base)!r}: {exc}"
                                   ) from exc
        if head.get("format") != FORMAT or head.get("version") != VERSION:
            raise PersistenceError(f"{str(self.path)!r} is not a {FORMAT} v{VERSION} file: {head}")
        self.count, self.dim = int(head["count"]), int(head["dim"])
        if self.dim <= 0 or self.count < 0:
            raise PersistenceError(f"{str(self.path)!r}: bad header {head}")
        size = os.fstat(self._fd).st_size
        if size != self.count * self.dim * 4 or os.fstat(self._off).st_size != 8 * (
                self.count + 1):
            raise PersistenceError(
                f"{str(self.path)!r} holds {size} bytes, its header says {self.count} rows of "
                f"{self.dim} float32 (was the write interrupted?)")

    def __repr__(self) -> str:
        return f"VectorFile({str(self.path)!r}, count={self.count}, dim={self.dim})"

    def close(self) -> None:
        """Close the file descriptors."""
        for fd in (self._fd, self._off, self._ids):
            try:
                os.close(fd)
            except OSError:
                pass

    def _read(self, fd: int, view: memoryview, offset: int) -> None:
        got = 0
        while got < view.nbytes:
            n = os.preadv(fd, [view[got:]], offset + got)
            if n <= 0:
                raise PersistenceError(f"{str(self.path)!r} ended early at byte {offset + got}")
            got += n

    def scores(self, query_vec: np.ndarray) -> np.ndarray:
        """``float32`` dot product of every row with ``query_vec`` (chunk by chunk)."""
        q = self._check(query_vec)
        out = np.empty(self.count, dtype=np.float32)
        step = max(1, CHUNK_BYTES // (4 * self.dim))
        buf = np.empty((min(step, max(self.count, 1)), self.dim), dtype="<f4")  # per call:
        for a in range(0, self.count, step):  # concurrent queries (threads) share the file
            m = min(step, self.count - a)
            chunk = buf[:m]
            self._read(self._fd, chunk.data.cast("B"), a * self.dim * 4)
            np.einsum("ij,j->i", chunk, q, out=out[a:a + m])  # per row (module docstring)
        return out

    def top(self, query_vec: np.ndarray, k: int, *, exclude: int | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
        """Rows and scores of the ``k`` best rows, best first, ties by row.

        ``exclude``: a row left out (PCR's anchor when ``include_anchor`` is off).
        """
        sc = self.scores(query_vec)
        pos = top_k(sc, min(k + (exclude is not None), self.count))
        if exclude is not None:
            pos = pos[pos != exclude][:k]
        return pos, sc[pos]

    def vectors(self, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """``(len(rows), dim)`` float32 rows (one read per run of consecutive rows)."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((rows.size, self.dim), dtype=np.float32)
        if rows.size and (rows.min() < 0 or rows.max() >= self.count):
            raise ConfigError(f"vector rows out of range [0, {self.count}): {rows[:5]!r}")
        srt = np.argsort(rows, kind="stable")
        i = 0
        while i < srt.size:
            j = i + 1
            while j < srt.size and rows[srt[j]] - rows[srt[j - 1]] in (0, 1):
                j += 1
            lo, hi = int(rows[srt[i]]), int(rows[srt[j - 1]]) + 1
            block = np.empty((hi - lo, self.dim), dtype="<f4")
            self._read(self._fd, block.data.cast("B"), lo * self.dim * 4)
            out[srt[i:j]] = block[rows[srt[i:j]] - lo]
            i = j
        return out

    def ids(self, rows: Iterable[int]) -> list[str]:
        """The ids of ``rows``."""
        out = []
        for r in rows:
            pair = np.empty(2, dtype="<i8")
            self._read(self._off, pair.data.cast("B"), int(r) * 8)
            raw = bytearray(int(pair[1] - pair[0]))
            if raw:
                self._read(self._ids, memoryview(raw), int(pair[0]))
            out.append(raw.decode("utf-8"))
        return out

    def _check(self, query_vec: np.ndarray) -> np.ndarray:
        q = np.ascontiguousarray(np.asarray(query_vec, dtype=np.float32).reshape(-1))
        if q.shape[0] != self.dim:
            from kgpath.errors import EmbeddingError

            raise EmbeddingError(f"query embedding has dimension {q.shape[0]}, the vectors in "
                                 f"{str(self.path)!r} have {self.dim}")
        return q


class VectorFileWriter:
    """Append ``(ids, rows)`` chunks to ``<directory>/<name>.*``; :meth:`close` writes the header.

    The header is written last (atomically): an interrupted write leaves no readable file.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> with VectorFileWriter(d, "nodes", 2) as w:
    ...     w.append(["a", "b"], np.eye(2, dtype=np.float32))
    >>> VectorFile(d, "nodes").top(np.array([0.0, 1.0]), 1)[0].tolist()
    [1]
    """

    def __init__(self, directory: str | os.PathLike[str], name: str, dim: int) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
            raise ConfigError(f"dim must be a positive int, got {dim!r}")
        self.base = user_path(directory, "vector directory")
        check_directory(self.base, "the vector directory")
        self.name, self.dim, self.count, self._pos = name, dim, 0, 0
        head = self.base / f"{name}.json"
        if head.exists():
            head.unlink()  # the old header goes first: a half-rewritten file never opens
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        self._fds = [os.open(self.base / f"{name}.{ext}", flags, 0o644)
                     for ext in ("f32", "off", "ids")]
        write_chunked(self._fds[1], np.zeros(1, "<i8").tobytes(), what="id offsets")

    def append(self, ids: Sequence[str], rows: np.ndarray) -> None:
        """Append rows (cast to float32) and their ids."""
        mat = np.ascontiguousarray(np.asarray(rows, dtype="<f4"))
        if mat.ndim != 2 or mat.shape != (len(ids), self.dim):
            raise ConfigError(f"expected ({len(ids)}, {self.dim}) rows, got {mat.shape}")
        blobs = [str(i).encode("utf-8") for i in ids]
        ends = self._pos + np.cumsum([len(b) for b in blobs], dtype=np.int64)
        write_chunked(self._fds[0], mat.data.cast("B"), what="vectors")
        write_chunked(self._fds[1], ends.astype("<i8").tobytes(), what="id offsets")
        write_chunked(self._fds[2], b"".join(blobs), what="ids")
        self._pos = int(ends[-1]) if len(ends) else self._pos
        self.count += len(ids)

    def close(self) -> None:
        """Flush the data files and write the header."""
        for fd in self._fds:
            os.fsync(fd)
            os.close(fd)
        self._fds = []
        atomic_write(self.base / f"{self.name}.json", json.dumps(
            {"format": FORMAT, "version": VERSION, "count": self.count, "dim": self.dim}),
            what="vector file header")

    def __enter__(self) -> VectorFileWriter:
        return self

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:
            for fd in self._fds:
                os.close(fd)


class VectorFiles:
    """The node and passage :class:`VectorFile` of one database (either may be absent).

    Parameters
    ----------
    directory
        Where :func:`write_vector_files` (or ``load_graph(..., vector_dir=...)``) wrote them.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = user_path(directory, "vector directory")
        if not self.directory.is_dir():
            raise PersistenceError(f"no vector directory at {str(self.directory)!r}")
        self.nodes = self._open("nodes")
        self.passages = self._open("passages")
        if self.nodes is None and self.passages is None:
            raise PersistenceError(f"{str(self.directory)!r} holds no node or passage vectors")

    def _open(self, name: str) -> VectorFile | None:
        if not (self.directory / f"{name}.json").exists():
            return None
        return VectorFile(self.directory, name)

    def __repr__(self) -> str:
        return f"VectorFiles({str(self.directory)!r})"


def write_vector_files(
    directory: str | os.PathLike[str],
    *,
    node_ids: Sequence[str] | None = None,
    node_vectors: np.ndarray | None = None,
    passage_ids: Sequence[str] | None = None,
    passage_vectors: np.ndarray | None = None,
    chunk: int = 65_536,
) -> Path:
    """Write ``nodes.*`` and/or ``passages.*`` (rows in the given order = the database order).

    Returns the directory. Used by ``load_graph(..., vector_dir=...)``; call it again after
    changing the graph in the database.
    """
    base = user_path(directory, "vector directory")
    for name, ids, mat in (("nodes", node_ids, node_vectors),
                           ("passages", passage_ids, passage_vectors)):
        if ids is None or mat is None:
            continue
        if len(ids) != len(mat):
            raise ConfigError(f"{len(ids)} {name} ids but {len(mat)} vectors")
        with VectorFileWriter(base, name, int(np.asarray(mat[:1]).reshape(1, -1).shape[1])
                              if len(mat) else int(mat.shape[1])) as w:
            for a in range(0, len(ids), chunk):
                w.append(list(ids[a:a + chunk]), np.asarray(mat[a:a + chunk]))
    return base
