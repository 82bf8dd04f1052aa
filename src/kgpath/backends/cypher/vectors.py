"""Node, passage and edge vectors beside the database: exact top-k without holding them.

:class:`~kgpath.backends.cypher.CypherBackend` scores the whole corpus (PCR's global
fallback, Section 3.5; the dense passage top ``N`` of graph-augmented retrieval) either by a
keyset-paged scan of the vectors stored in the database (one base64 string per row, decoded
in the query process: O(corpus) over the wire per query) or, with ``vectors=``, from a
:class:`VectorFiles` directory written next to it:

* ``nodes.json`` / ``passages.json`` / ``edges.json``: the header ``{"format", "version",
  "count", "dim", "generation", "stem"}``, the one file a writer replaces (atomically:
  temporary sibling, fsync, rename);
* ``<stem>.f32``: ``count × dim`` little-endian float32 rows, row ``i`` = the node (passage)
  whose order property is ``i`` (:func:`~kgpath.backends.cypher.load_graph` writes the
  graph's node / passage index there, so file order is the database's order); in the
  edge file (PathRAG's relation-text vectors, written by
  :func:`~kgpath.methods.pathrag.store_pathrag_vectors` given ``vector_dir``) row ``i`` is
  the edge whose ``edge_order_property`` is ``i``, and its id is a key the store can
  check (:func:`~kgpath.methods.pathrag.dbstore.edge_file_key`);
* ``<stem>.off`` / ``<stem>.ids``: ``count + 1`` int64 byte offsets into the UTF-8 ids, so
  the id of a row is two small reads.

The data files of a generation (stem ``nodes-<generation>-<random>``) are written whole and
fsynced under new names, never changed afterwards, and published by replacing the header;
the previous generation's files are then unlinked. A reader holding a :class:`VectorFile`
keeps reading the generation it opened (its descriptors keep the unlinked files alive: never
a torn file); :class:`VectorFiles` re-opens when the header changed (one ``stat`` per
access), so a backend follows every rewrite. A write that fails or is interrupted leaves
the old header and files (and stray new files that the next write removes). One writer per
directory (:class:`~kgpath.backends.cypher.CypherSync` holds a lock). Headers without
``stem`` (the first format) name ``<name>.f32`` and are still read. The name token index
(:mod:`~kgpath.backends.cypher.names`) is published the same way; both use
:mod:`~kgpath.backends.cypher.generations`.

A query reads the float32 file in chunks of about 8 MB (each memory-mapped, scored and
unmapped before the next: measured on 10^6 x 384 rows, 86 ms against 136 ms for
``os.preadv`` into one reused buffer, which copies every byte once more; the process's peak
RSS grows by one chunk either way) and scores each chunk with the float32 dot product of Eq.
(2) (``sim(q, v)`` of PCR); the top ``k`` is :func:`~kgpath.search.vector.top_k` over all
``count`` scores (ties by row, i.e. by node order, as in memory and as the paged scan).
Exact: no approximation, no re-scoring. The dot product is ``np.einsum`` rather than BLAS
``matmul``: BLAS sums a row in an order that depends on its position in the block (measured:
equal rows scored 1 ulp apart, so a tie between duplicate vectors went to the later node
depending on the chunk size); einsum sums each row the same way wherever it sits (about 25%
slower, ~13 ms per 10^6 x 64).

Why one chunk at a time and not one map of the whole file: the file stays in the kernel's
page cache (shared, not this process's memory) and the process holds one chunk; a full scan
of a memory map of the whole file makes every page of it resident in the querying process
(its RSS grows by the file's size, measured in ``benchmarks/bench_graphdb.py --vectors``:
10^6 x 64, peak 309 MB mapped whole vs 66 MB read in chunks), which is what serving without
the vectors in memory must avoid. FalkorDB's HNSW vector index was measured too (same
benchmark): ~3 ms per query, but approximate even after over-fetching and re-scoring exactly
(recall@10 0.48 at 10^6 random 64-d vectors with ``efRuntime`` 200; 0.11 at 10^5 with the
default 10), 12 minutes and 1.1 GB of server memory to build: equality with the in-memory
methods would be lost.

Staleness: the files describe the database when they were written (``load_graph``, and
every :meth:`~kgpath.backends.cypher.CypherSync.push` given ``vector_dir``, which writes the
new generation before its Cypher statements and publishes it after they succeeded). The
backend checks, per query, that the database holds as many nodes (passages) as the file rows
and that every returned row's id has that order in the database; otherwise
:class:`~kgpath.errors.BackendError` (rewrite the files with :func:`write_vector_files` after
changing the graph by other means). A query that runs while a push is between its
statements and its header sees the new database with the old files, and may be refused.
The edge file is checked the same way by its reader
(:mod:`~kgpath.methods.pathrag.dbfiles`: edge count; each candidate row's rank, ends and
relation-text digest) and kept by ``CypherSync(..., edge_vectors=)``.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from kgpath._files import user_path
from kgpath.backends.cypher.generations import (
    FileGeneration,
    GenerationWriter,
    Published,
    open_generation,
    remove_generations,
)
from kgpath.backends.cypher.generations import (
    read_header as read_json_header,
)
from kgpath.errors import BackendError, ConfigError, PersistenceError
from kgpath.search.vector import top_k

__all__ = ["VectorFile", "VectorFileWriter", "VectorFiles", "check_file_rows", "read_header",
           "remove_vector_file", "stage_vector_file", "write_vector_files"]

FORMAT = "kgpath-vectors"
VERSION = 1
CHUNK_BYTES = 8 << 20  # bytes of float32 rows read and scored at a time
_EXTS = ("f32", "off", "ids")


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
        self._fds: list[int] = []
        head, fds = open_generation(base, name, _EXTS, read_header, what="vector file")
        self._fds = [fds[ext] for ext in _EXTS]
        stem = str(head.get("stem", name))
        self._fd, self._off, self._ids = self._fds
        self.path = base / f"{stem}.f32"
        self.generation = int(head.get("generation", 0))
        self.count, self.dim = int(head["count"]), int(head["dim"])
        if self.dim <= 0 or self.count < 0:
            self.close()
            raise PersistenceError(f"{str(self.path)!r}: bad header {head}")
        size = os.fstat(self._fd).st_size
        if size != self.count * self.dim * 4 or os.fstat(self._off).st_size != 8 * (
                self.count + 1):
            self.close()
            raise PersistenceError(
                f"{str(self.path)!r} holds {size} bytes, its header says {self.count} rows of "
                f"{self.dim} float32 (was the write interrupted?)")

    def __repr__(self) -> str:
        return f"VectorFile({str(self.path)!r}, count={self.count}, dim={self.dim})"

    def close(self) -> None:
        """Close the file descriptors (once; also when the object is collected)."""
        fds, self._fds = getattr(self, "_fds", []), []
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown: nothing left to close into
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
        return self.score_rows(self._check(query_vec)[None, :])[0]

    def score_rows(self, queries: np.ndarray) -> np.ndarray:
        """``(len(queries), count)`` float32: every row's dot product with each query row.

        One pass over the file: each chunk of about ``CHUNK_BYTES`` is memory-mapped, scored
        against every query row (``np.einsum``, per row: module docstring) and unmapped
        before the next, so the process holds one chunk (module docstring: why not one map
        of the whole file).

        Raises
        ------
        EmbeddingError
            When the query rows' dimension is not the file's.
        PersistenceError
            When the file is shorter than its header says (truncated after it was opened).
        """
        q = np.ascontiguousarray(np.atleast_2d(np.asarray(queries, dtype=np.float32)))
        if q.shape[1] != self.dim:
            self._check(q[0])  # raises, naming both dimensions
        out = np.empty((q.shape[0], self.count), dtype=np.float32)
        step = max(1, CHUNK_BYTES // (4 * self.dim))
        for a in range(0, self.count, step):  # a map per call: threads share the file
            m = min(step, self.count - a)
            start, size = a * self.dim * 4, m * self.dim * 4
            if os.fstat(self._fd).st_size < start + size:  # a map past the end would SIGBUS
                raise PersistenceError(f"{str(self.path)!r} ended early at byte {start}")
            base = start - start % mmap.ALLOCATIONGRANULARITY
            view = mmap.mmap(self._fd, start + size - base, access=mmap.ACCESS_READ,
                             offset=base)
            try:
                chunk = np.frombuffer(view, dtype="<f4", count=m * self.dim,
                                      offset=start - base).reshape(m, self.dim)
                for k in range(q.shape[0]):
                    np.einsum("ij,j->i", chunk, q[k], out=out[k, a:a + m])
                del chunk
            finally:
                view.close()
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


class VectorFileWriter(GenerationWriter):
    """Append ``(ids, rows)`` chunks to a new generation of ``<directory>/<name>``.

    The data files get new names (module docstring); :meth:`close` fsyncs them and
    publishes them by replacing the header ``<name>.json`` atomically, then unlinks the
    previous generation. Until then readers see the previous generation whole; an
    interrupted or failed write (an exception inside ``with``, or :meth:`discard`) leaves
    it as it was. :meth:`finish` then :meth:`publish` split :meth:`close` in two (write the
    data before a database update, publish after it succeeded).

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
        self.name, self.dim, self.count = name, dim, 0
        self._gen = FileGeneration(self.base, name, _EXTS, what="vector file",
                                   ids=("off", "ids"))
        self.generation, self.stem = self._gen.generation, self._gen.stem

    @property
    def published(self) -> bool:
        """Whether :meth:`publish` made this generation the one readers open."""
        return self._gen.published

    def append(self, ids: Sequence[str], rows: np.ndarray) -> None:
        """Append rows (cast to float32) and their ids."""
        mat = np.ascontiguousarray(np.asarray(rows, dtype="<f4"))
        if mat.ndim != 2 or mat.shape != (len(ids), self.dim):
            raise ConfigError(f"expected ({len(ids)}, {self.dim}) rows, got {mat.shape}")
        self._gen.write("f32", mat.data.cast("B"))
        self._gen.append_ids(ids)
        self.count += len(ids)

    def finish(self) -> None:
        """Flush and close the data files (not yet visible to readers)."""
        self._gen.finish()

    def publish(self) -> None:
        """Make this generation the one readers open, then remove older ones."""
        self._gen.publish({"format": FORMAT, "version": VERSION, "count": self.count,
                           "dim": self.dim})


def check_file_rows(vf: VectorFile, rows: Sequence[int] | np.ndarray, ids: Sequence[str],
                    orders: Mapping[str, Any], held: int | None = None) -> None:
    """The file still describes the store: ``held`` rows, each row's id at that order.

    Raises
    ------
    BackendError
        When the store holds another number of rows, or a row's id is not in the store
        with that row as its order (rewrite the files with
        :func:`~kgpath.backends.cypher.vectors.write_vector_files` after a change).
    """
    if held is not None and held != vf.count:
        raise BackendError(f"the vector file {str(vf.path)!r} has {vf.count} rows but the "
                           f"database holds {held}: rewrite it (write_vector_files) after "
                           "changing the graph")
    bad = [(i, int(r)) for r, i in zip(rows, ids, strict=True)
           if orders.get(i) is None or int(orders[i]) != int(r)]
    if bad:
        raise BackendError(f"the vector file {str(vf.path)!r} is stale: (id, row) {bad[:5]!r} "
                           "not in the database with that order; rewrite it "
                           "(write_vector_files) after changing the graph")


def read_header(directory: Path, name: str) -> dict[str, Any]:
    """The header ``<directory>/<name>.json``, checked for format and version.

    Raises
    ------
    PersistenceError
        If it is missing, unreadable or not a ``kgpath-vectors`` v1 header.
    """
    return read_json_header(directory, name, "vector file",
                            {"format": FORMAT, "version": VERSION})


def remove_vector_file(directory: str | os.PathLike[str], name: str) -> None:
    """Unpublish ``name`` (its header first, then its data files); readers stop using it."""
    base = user_path(directory, "vector directory")
    try:
        os.unlink(base / f"{name}.json")
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise PersistenceError(f"cannot remove vector file {name!r} in {str(base)!r}: {exc}"
                               ) from exc
    remove_generations(base, name, _EXTS, keep="\0")


class VectorFiles:
    """The node, passage and edge :class:`VectorFile` of one database (any may be absent).

    :attr:`nodes`, :attr:`passages` and :attr:`edges` follow the directory: when a header
    was replaced (a new generation published) or removed, the next access opens what it
    names now. A :class:`VectorFile` taken earlier keeps reading its own generation.

    Parameters
    ----------
    directory
        Where :func:`write_vector_files` (or ``load_graph(..., vector_dir=...)``) wrote them.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = user_path(directory, "vector directory")
        if not self.directory.is_dir():
            raise PersistenceError(f"no vector directory at {str(self.directory)!r}")
        self._files = {name: Published(self.directory, name,
                                       partial(VectorFile, self.directory, name))
                       for name in ("nodes", "passages", "edges")}
        if self.nodes is None and self.passages is None and self.edges is None:
            raise PersistenceError(f"{str(self.directory)!r} holds no node or passage vectors "
                                   "(nor edge vectors)")

    @property
    def nodes(self) -> VectorFile | None:
        """The node vectors as the directory holds them now (``None`` when absent)."""
        return self._current("nodes")

    @property
    def passages(self) -> VectorFile | None:
        """The passage vectors as the directory holds them now (``None`` when absent)."""
        return self._current("passages")

    @property
    def edges(self) -> VectorFile | None:
        """The edges' relation-text vectors (PathRAG's high-level keywords), or ``None``."""
        return self._current("edges")

    def _current(self, name: str) -> VectorFile | None:
        return self._files[name].current()

    def __repr__(self) -> str:
        return f"VectorFiles({str(self.directory)!r})"


def stage_vector_file(directory: str | os.PathLike[str], name: str, ids: Sequence[str],
                      vectors: np.ndarray, *, chunk: int = 65_536) -> VectorFileWriter:
    """Write a new generation of ``name`` and fsync it, unpublished.

    :meth:`~VectorFileWriter.publish` or :meth:`~VectorFileWriter.discard` the writer returned.

    ``vectors`` is ``(len(ids), dim)``; an empty matrix needs its ``dim`` (shape ``(0, dim)``).
    """
    mat = np.asarray(vectors)
    if mat.ndim != 2 or len(ids) != len(mat):
        raise ConfigError(f"{len(ids)} {name} ids but vectors of shape {mat.shape}")
    w = VectorFileWriter(directory, name, int(mat.shape[1]))
    try:
        for a in range(0, len(ids), chunk):
            w.append(list(ids[a:a + chunk]), mat[a:a + chunk])
        w.finish()
    except BaseException:
        w.discard()
        raise
    return w


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

    Both are written and fsynced before either is published (module docstring); a failure
    leaves the previous files. Returns the directory. Used by ``load_graph(...,
    vector_dir=...)``; call it again after changing the graph in the database by other means
    than :class:`~kgpath.backends.cypher.CypherSync`.
    """
    base = user_path(directory, "vector directory")
    staged: list[VectorFileWriter] = []
    try:
        for name, ids, mat in (("nodes", node_ids, node_vectors),
                               ("passages", passage_ids, passage_vectors)):
            if ids is not None and mat is not None:
                staged.append(stage_vector_file(base, name, ids, mat, chunk=chunk))
    except BaseException:
        for w in staged:
            w.discard()
        raise
    for w in staged:
        w.publish()
    return base
