"""Node and passage vectors beside the database: exact top-k without holding them in memory.

:class:`~kgpath.backends.cypher.CypherBackend` scores the whole corpus (PCR's global
fallback, Section 3.5; the dense passage top ``N`` of graph-augmented retrieval) either by a
keyset-paged scan of the vectors stored in the database (one base64 string per row, decoded
in the query process: O(corpus) over the wire per query) or, with ``vectors=``, from a
:class:`VectorFiles` directory written next to it:

* ``nodes.json`` / ``passages.json``: the header ``{"format", "version", "count", "dim",
  "generation", "stem"}``, the one file a writer replaces (atomically: temporary sibling,
  fsync, rename);
* ``<stem>.f32``: ``count × dim`` little-endian float32 rows, row ``i`` = the node (passage)
  whose order property is ``i`` (:func:`~kgpath.backends.cypher.load_graph` writes the
  graph's node / passage index there, so file order is the database's order);
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
``stem`` (the first format) name ``<name>.f32`` and are still read.

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

Staleness: the files describe the database when they were written (``load_graph``, and
every :meth:`~kgpath.backends.cypher.CypherSync.push` given ``vector_dir``, which writes the
new generation before its Cypher statements and publishes it after they succeeded). The
backend checks, per query, that the database holds as many nodes (passages) as the file rows
and that every returned row's id has that order in the database; otherwise
:class:`~kgpath.errors.BackendError` (rewrite the files with :func:`write_vector_files` after
changing the graph by other means). A query that runs while a push is between its
statements and its header sees the new database with the old files, and may be refused.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kgpath._files import atomic_write, check_directory, user_path, write_chunked
from kgpath.errors import BackendError, ConfigError, PersistenceError
from kgpath.search.vector import top_k

__all__ = ["VectorFile", "VectorFileWriter", "VectorFiles", "check_file_rows", "read_header",
           "remove_vector_file", "stage_vector_file", "write_vector_files"]

FORMAT = "kgpath-vectors"
VERSION = 1
CHUNK_BYTES = 8 << 20  # bytes of float32 rows read and scored at a time
_EXTS = ("f32", "off", "ids")
_OPEN_ATTEMPTS = 5  # re-reads of the header when a newer generation removed the files


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
        for attempt in range(_OPEN_ATTEMPTS):
            head = read_header(base, name)
            stem = str(head.get("stem", name))
            try:
                for ext in ("f32", "off", "ids"):
                    self._fds.append(os.open(base / f"{stem}.{ext}", os.O_RDONLY))
                break
            except FileNotFoundError as exc:  # a newer generation replaced this one
                self.close()
                if attempt + 1 == _OPEN_ATTEMPTS or read_header(base, name) == head:
                    raise PersistenceError(f"cannot open vector file {name!r} in "
                                           f"{str(base)!r}: {exc}") from exc
            except OSError as exc:
                self.close()
                raise PersistenceError(f"cannot open vector file {name!r} in {str(base)!r}: "
                                       f"{exc}") from exc
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
        check_directory(self.base, "the vector directory")
        self.name, self.dim, self.count, self._pos = name, dim, 0, 0
        self._fds: list[int] = []
        try:
            prev = int(read_header(self.base, name).get("generation", 0))
        except PersistenceError:  # no (readable) header: the first generation
            prev = 0
        self.generation = prev + 1
        self.stem = f"{name}-{self.generation}-{secrets.token_hex(4)}"
        self.published = False
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        try:
            for ext in _EXTS:
                self._fds.append(os.open(self.base / f"{self.stem}.{ext}", flags, 0o644))
            write_chunked(self._fds[1], np.zeros(1, "<i8").tobytes(), what="id offsets")
        except BaseException as exc:
            self.discard()
            if isinstance(exc, OSError):
                raise PersistenceError(f"cannot write vector file {name!r} in "
                                       f"{str(self.base)!r}: {exc}") from exc
            raise

    def append(self, ids: Sequence[str], rows: np.ndarray) -> None:
        """Append rows (cast to float32) and their ids."""
        mat = np.ascontiguousarray(np.asarray(rows, dtype="<f4"))
        if mat.ndim != 2 or mat.shape != (len(ids), self.dim):
            raise ConfigError(f"expected ({len(ids)}, {self.dim}) rows, got {mat.shape}")
        if not self._fds:
            raise ConfigError(f"the vector file writer of {self.stem!r} is finished")
        blobs = [str(i).encode("utf-8") for i in ids]
        ends = self._pos + np.cumsum([len(b) for b in blobs], dtype=np.int64)
        write_chunked(self._fds[0], mat.data.cast("B"), what="vectors")
        write_chunked(self._fds[1], ends.astype("<i8").tobytes(), what="id offsets")
        write_chunked(self._fds[2], b"".join(blobs), what="ids")
        self._pos = int(ends[-1]) if len(ends) else self._pos
        self.count += len(ids)

    def finish(self) -> None:
        """Flush and close the data files (not yet visible to readers)."""
        fds, self._fds = self._fds, []
        try:
            for fd in fds:
                os.fsync(fd)
        except OSError as exc:
            raise PersistenceError(f"flushing vector file {self.stem!r} failed: {exc}") from exc
        finally:
            for fd in fds:
                os.close(fd)

    def publish(self) -> None:
        """Make this generation the one readers open, then remove older ones."""
        self.finish()
        atomic_write(self.base / f"{self.name}.json", json.dumps(
            {"format": FORMAT, "version": VERSION, "count": self.count, "dim": self.dim,
             "generation": self.generation, "stem": self.stem}),
            what="vector file header")
        self.published = True
        _remove_other_generations(self.base, self.name, keep=self.stem)

    def close(self) -> None:
        """:meth:`finish` and :meth:`publish`."""
        self.publish()

    def discard(self) -> None:
        """Remove this generation's data files (unless published); the old one stays."""
        for fd in self._fds:
            os.close(fd)
        self._fds = []
        if not self.published:
            for ext in _EXTS:
                try:
                    os.unlink(self.base / f"{self.stem}.{ext}")
                except OSError:
                    pass

    def __enter__(self) -> VectorFileWriter:
        return self

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.discard()


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
    path = directory / f"{name}.json"
    try:
        head = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise PersistenceError(f"cannot open vector file {name!r} in {str(directory)!r}: {exc}"
                               ) from exc
    if not isinstance(head, dict) or head.get("format") != FORMAT or head.get(
            "version") != VERSION:
        raise PersistenceError(f"{str(path)!r} is not a {FORMAT} v{VERSION} header: {head}")
    return head


def _remove_other_generations(base: Path, name: str, *, keep: str) -> None:
    """Unlink the data files of ``name`` other than generation ``keep`` (open ones live on)."""
    pattern = re.compile(rf"{re.escape(name)}(-\d+-[0-9a-f]+)?\.({'|'.join(_EXTS)})")
    for entry in os.scandir(base):
        if pattern.fullmatch(entry.name) and not entry.name.startswith(keep + "."):
            try:
                os.unlink(entry.path)
            except OSError:
                pass


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
    _remove_other_generations(base, name, keep="\0")


class VectorFiles:
    """The node and passage :class:`VectorFile` of one database (either may be absent).

    :attr:`nodes` and :attr:`passages` follow the directory: when a header was replaced
    (a new generation published) or removed, the next access opens what it names now. A
    :class:`VectorFile` taken earlier keeps reading its own generation.

    Parameters
    ----------
    directory
        Where :func:`write_vector_files` (or ``load_graph(..., vector_dir=...)``) wrote them.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = user_path(directory, "vector directory")
        if not self.directory.is_dir():
            raise PersistenceError(f"no vector directory at {str(self.directory)!r}")
        self._lock = threading.Lock()
        self._open: dict[str, tuple[Any, VectorFile | None]] = {}
        if self.nodes is None and self.passages is None:
            raise PersistenceError(f"{str(self.directory)!r} holds no node or passage vectors")

    @property
    def nodes(self) -> VectorFile | None:
        """The node vectors as the directory holds them now (``None`` when absent)."""
        return self._current("nodes")

    @property
    def passages(self) -> VectorFile | None:
        """The passage vectors as the directory holds them now (``None`` when absent)."""
        return self._current("passages")

    def _current(self, name: str) -> VectorFile | None:
        try:  # stat before opening: a swap in between only causes one more re-open
            st = os.stat(self.directory / f"{name}.json")
            stamp: Any = (st.st_ino, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = None
        held = self._open.get(name)
        if held is not None and held[0] == stamp:
            return held[1]
        with self._lock:
            held = self._open.get(name)
            if held is None or held[0] != stamp:
                held = (stamp, None if stamp is None else VectorFile(self.directory, name))
                self._open[name] = held
            return held[1]

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
