"""A token index of the node names beside the database: exact name lookup without a scan.

C2RAG's anchors (Eq. 3, ``S_tok = |Tok(surface) ∩ Tok(name)| / |Tok(surface)|``) and its
fallback plan (3.2, names found as token n-grams of the question) only ever read the nodes
that share a ``Tok(·)`` token with the text. A Cypher database has no index for "names
holding this word": ``name_key CONTAINS t`` scans the node label (about 130 ms per question
at 2·10^4 nodes, seconds at 10^6). :func:`write_name_tokens` (called by
:func:`~kgpath.backends.cypher.load_graph` with ``vector_dir=``) writes, next to the
vector files (:mod:`~kgpath.backends.cypher.vectors`):

* ``<stem>.tok`` / ``<stem>.toff``: the distinct tokens, UTF-8, sorted by their bytes, and
  ``T + 1`` int64 offsets;
* ``<stem>.post`` / ``<stem>.poff``: per token, the ascending node orders (int64) of the
  nodes whose name holds it, and ``T + 1`` int64 offsets (in postings);
* ``<stem>.ids`` / ``<stem>.ioff``: the node ids in node order and ``count + 1`` offsets;
* ``names.json``: ``{"format", "version", "tokenizer", "count", "tokens", "postings",
  "generation", "stem"}``, the one file a rewrite replaces.

The six data files switch together as one generation (stem
``names-<generation>-<random>``, :mod:`~kgpath.backends.cypher.generations`, as the vector
files): written and fsynced under new names, published by an atomic rename of the header,
the previous generation then unlinked. A reader never sees a torn index: a
:class:`NameTokens` keeps reading the generation it opened (its descriptors keep the files
alive), :class:`NameTokenFiles` opens the newest when the header changed. A header without
``stem`` (written before generations) names ``names.<ext>`` and is still read.

:class:`NameTokens` answers a token with a binary search over the sorted tokens (about
``2·log2 T`` small ``pread`` calls; nothing is held in memory) and returns its postings:
exactly the nodes whose ``Tok(name)`` holds the token, by construction (the file is written
with :func:`name_tokens`, the tokenizer of Eq. 3, recorded in the header).

Why a file and not the database (measured on FalkorDB, issue 22): ``:NameToken`` nodes
linked to their nodes would add one node and one edge per distinct token (10^6 of each for
the generated 10^6-node graph: edges load at ~4·10^4/s, +25 s and server memory) and
every engine would need the same schema; a list property with an index is not available on
every engine (Kùzu/Ladybug) and would change the node rows other code writes. A full-text
index (RediSearch) tokenizes, stems and drops stop words differently from ``Tok``, so it
is not exact. The file costs 1-2 s to write for 10^6 one-token names (2.2 s on 2 busy
cores) and is read like the vector file.

Staleness: like the vector files, the index describes the database when it was written:
by ``load_graph(..., vector_dir=)``, and by every
:meth:`~kgpath.backends.cypher.CypherSync.push` given ``vector_dir`` that adds, removes,
moves or renames a node (a new generation written before its Cypher statements, published
after they all succeeded, discarded when one fails: the previous index stays valid, the
retried push writes the new one). A reader checks the node count, and that every returned
node still has its order and the token in its name (:class:`~kgpath.errors.BackendError`
otherwise; rewrite with :func:`write_name_tokens` after changing the graph by other
means). :class:`~kgpath.methods.c2rag.cypher.CypherC2RAG` takes the current generation
per question (:class:`NameTokenFiles`), so it follows pushes; a question that runs while a
push is between its statements and its header reads the new database with the old index,
and is refused (``BackendError``) when a count, order or name disagrees. Not detected: a
node renamed by other means than ``CypherSync`` (count unchanged) to a name with a token
the index does not list for it is not found by that token until the rewrite; within a
push, only during that window.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
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
    read_header,
)
from kgpath.errors import BackendError, ConfigError, PersistenceError

__all__ = ["NameTokenFiles", "NameTokenWriter", "NameTokens", "name_tokens",
           "stage_name_tokens", "write_name_tokens"]

FORMAT = "kgpath-name-tokens"
VERSION = 1
TOKENIZER = r"re:\w+ (unicode), str.lower per token"
_WORD = re.compile(r"\w+", re.UNICODE)
NAME = "names"  # the header names.json, the data files names-<generation>-<random>.<ext>
_EXT = ("tok", "toff", "post", "poff", "ids", "ioff")


def name_tokens(text: str) -> list[str]:
    r"""``Tok(text)``: lower-cased ``\w+`` tokens (the tokenizer of C2RAG's Eq. 3).

    Examples
    --------
    >>> name_tokens("Curie's lab, PARIS")
    ['curie', 's', 'lab', 'paris']
    """
    return [t.lower() for t in _WORD.findall(text or "")]


class NameTokenWriter(GenerationWriter):
    """Collect ``(ids, names)`` in node order; :meth:`close` writes the index (header last).

    Holds the distinct tokens and one ``(token, order)`` pair per name token until
    :meth:`finish` (about 100 MB for 10^6 one-token names), never the names themselves.
    The files are a new generation (:class:`~kgpath.backends.cypher.generations.FileGeneration`):
    readers see the previous index whole until :meth:`publish` (or :meth:`close`, or the end
    of a ``with`` block) replaces the header; :meth:`discard` (or an exception inside
    ``with``) removes them and leaves the previous index.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> with NameTokenWriter(d) as w:
    ...     w.append(["a", "b"], ["Marie Curie", "Pierre Curie"])
    >>> NameTokens(d).lookup("curie").tolist()
    [0, 1]
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.base = user_path(directory, "name index directory")
        self._gen = FileGeneration(self.base, NAME, _EXT, what="name index",
                                   ids=("ioff", "ids"))
        self.generation = self._gen.generation
        self.count = 0
        self._tid: dict[str, int] = {}
        self._tids: list[np.ndarray] = []
        self._orders: list[np.ndarray] = []
        self._head: dict[str, Any] | None = None

    def append(self, ids: Sequence[str], names: Sequence[str | None]) -> None:
        """Append nodes (the next orders) with their names (``None``: the id names the node)."""
        if len(ids) != len(names):
            raise ConfigError(f"{len(ids)} ids but {len(names)} names")
        tids: list[int] = []
        orders: list[int] = []
        for j, name in enumerate(names):
            for t in dict.fromkeys(name_tokens(str(ids[j]) if name is None else name)):
                tids.append(self._tid.setdefault(t, len(self._tid)))
                orders.append(self.count + j)
        self._gen.append_ids(ids)
        self._tids.append(np.asarray(tids, np.int64))
        self._orders.append(np.asarray(orders, np.int64))
        self.count += len(ids)

    def finish(self) -> None:
        """Sort the tokens and postings, write and fsync every file (not yet published)."""
        if self._head is not None:
            return
        toks = sorted(self._tid, key=lambda t: t.encode("utf-8"))
        rank = np.empty(len(toks), np.int64)
        rank[[self._tid[t] for t in toks]] = np.arange(len(toks))
        tok_rank = rank[np.concatenate([np.zeros(0, np.int64), *self._tids])]
        orders = np.concatenate([np.zeros(0, np.int64), *self._orders])
        post = np.ascontiguousarray(orders[np.lexsort((orders, tok_rank))], dtype="<i8")
        poff = np.zeros(len(toks) + 1, "<i8")
        np.cumsum(np.bincount(tok_rank, minlength=len(toks)), out=poff[1:])
        blobs = [t.encode("utf-8") for t in toks]
        toff = np.zeros(len(toks) + 1, "<i8")
        np.cumsum([len(b) for b in blobs], out=toff[1:])
        for ext, data in (("tok", b"".join(blobs)), ("toff", toff.tobytes()),
                          ("post", post.tobytes()), ("poff", poff.tobytes())):
            self._gen.write(ext, data)
        self._gen.finish()
        self._tid, self._tids, self._orders = {}, [], []
        self._head = {"format": FORMAT, "version": VERSION, "tokenizer": TOKENIZER,
                      "count": self.count, "tokens": len(toks), "postings": int(post.size)}

    def publish(self) -> None:
        """:meth:`finish`, then make this index the one readers open (older ones removed)."""
        self.finish()
        assert self._head is not None
        self._gen.publish(self._head)


def stage_name_tokens(directory: str | os.PathLike[str], ids: Sequence[str],
                      names: Sequence[str | None], *, chunk: int = 65_536) -> NameTokenWriter:
    """Write the name token index of nodes ``ids`` named ``names``, fsynced, unpublished.

    :meth:`~NameTokenWriter.publish` or :meth:`~NameTokenWriter.discard` the writer
    returned (:class:`~kgpath.backends.cypher.CypherSync` publishes it after its
    statements succeeded).

    Raises
    ------
    ConfigError
        If ``ids`` and ``names`` differ in length.
    PersistenceError
        If a file cannot be written (nothing is published then).
    """
    if len(ids) != len(names):
        raise ConfigError(f"{len(ids)} node ids but {len(names)} names")
    w = NameTokenWriter(directory)
    try:
        for a in range(0, len(ids), chunk):
            w.append(list(ids[a:a + chunk]), list(names[a:a + chunk]))
        w.finish()
    except BaseException:
        w.discard()
        raise
    return w


def write_name_tokens(directory: str | os.PathLike[str], ids: Sequence[str],
                      names: Sequence[str | None], *, chunk: int = 65_536) -> Path:
    """Write the name token index of nodes ``ids`` (node order) named ``names``.

    Returns the directory. Called by ``load_graph(..., vector_dir=...)`` (and kept true
    by :class:`~kgpath.backends.cypher.CypherSync` given ``vector_dir``); call it again
    after changing the graph in the database by other means.

    Raises
    ------
    ConfigError
        If ``ids`` and ``names`` differ in length.
    PersistenceError
        If a file cannot be written (the previous index stays).
    """
    w = stage_name_tokens(directory, ids, names, chunk=chunk)
    w.publish()
    return w.base


class NameTokens:
    """The name token index in ``directory`` (read-only; see the module docstring).

    Raises
    ------
    PersistenceError
        If a file is missing, sizes disagree with the header, or the header names another
        format, version or tokenizer.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        base = user_path(directory, "name index directory")
        self.path = base / f"{NAME}.json"
        self._fd: dict[str, int] = {}
        head, self._fd = open_generation(base, NAME, _EXT, _read_header, what="name index")
        self.generation = int(head.get("generation", 0))
        self.count, self.tokens = int(head["count"]), int(head["tokens"])
        sizes = {e: os.fstat(fd).st_size for e, fd in self._fd.items()}
        want = {"toff": 8 * (self.tokens + 1), "poff": 8 * (self.tokens + 1),
                "post": 8 * int(head["postings"]), "ioff": 8 * (self.count + 1)}
        if any(sizes[e] != n for e, n in want.items()):
            self.close()
            raise PersistenceError(f"{str(self.path)!r}: file sizes {sizes} disagree with the "
                                   f"header {head} (was the write interrupted?)")

    @staticmethod
    def exists(directory: str | os.PathLike[str]) -> bool:
        """Whether ``directory`` holds a (complete) name index."""
        return (Path(directory) / "names.json").exists()

    def __repr__(self) -> str:
        return f"NameTokens({str(self.path.parent)!r}, count={self.count}, tokens={self.tokens})"

    def close(self) -> None:
        """Close the file descriptors (once; also when the object is collected)."""
        fds, self._fd = getattr(self, "_fd", {}), {}
        for fd in fds.values():
            try:
                os.close(fd)
            except OSError:
                pass

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown: nothing left to close into
            pass

    def _read(self, ext: str, offset: int, size: int) -> bytes:
        buf = bytearray(size)
        view, got = memoryview(buf), 0
        while got < size:
            n = os.preadv(self._fd[ext], [view[got:]], offset + got)
            if n <= 0:
                raise PersistenceError(f"names.{ext} ended early at byte {offset + got}")
            got += n
        return bytes(buf)

    def _pair(self, ext: str, i: int) -> tuple[int, int]:
        a, b = np.frombuffer(self._read(ext, 8 * i, 16), "<i8")
        return int(a), int(b)

    def _token(self, i: int) -> bytes:
        a, b = self._pair("toff", i)
        return self._read("tok", a, b - a)

    def lookup(self, token: str) -> np.ndarray:
        """Ascending orders of the nodes whose name holds ``token`` (empty if none)."""
        key = token.encode("utf-8")
        lo, hi = 0, self.tokens
        while lo < hi:  # the first token >= key
            mid = (lo + hi) // 2
            if self._token(mid) < key:
                lo = mid + 1
            else:
                hi = mid
        if lo == self.tokens or self._token(lo) != key:
            return np.zeros(0, np.int64)
        a, b = self._pair("poff", lo)
        return np.frombuffer(self._read("post", 8 * a, 8 * (b - a)), "<i8").astype(np.int64)

    def ids(self, orders: Iterable[int]) -> list[str]:
        """The node ids at ``orders``."""
        out = []
        for r in orders:
            if not 0 <= int(r) < self.count:
                raise ConfigError(f"node order {r} out of range [0, {self.count})")
            a, b = self._pair("ioff", int(r))
            out.append(self._read("ids", a, b - a).decode("utf-8"))
        return out


class NameTokenFiles:
    """The name token index in ``directory`` as it is now: follows every published rewrite.

    :meth:`current` opens the generation the header names when it changed since the last
    call (one ``stat`` per call); a :class:`NameTokens` taken earlier keeps reading its own
    generation whole. :class:`~kgpath.methods.c2rag.cypher.CypherC2RAG` takes one per
    question, so it reads the index a push of
    :class:`~kgpath.backends.cypher.CypherSync` published.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> files = NameTokenFiles(d)
    >>> _ = write_name_tokens(d, ["a"], ["Marie Curie"])
    >>> files.current().ids(files.current().lookup("curie"))
    ['a']
    >>> _ = write_name_tokens(d, ["b", "a"], ["Pierre Curie", "Marie"])
    >>> files.current().ids(files.current().lookup("curie"))
    ['b']
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = user_path(directory, "name index directory")
        self._published = Published(self.directory, NAME, partial(NameTokens, self.directory))

    def current(self) -> NameTokens:
        """The index the header names now.

        Raises
        ------
        BackendError
            If the directory holds no name index (any more).
        PersistenceError
            If the index cannot be read.
        """
        got = self._published.current()
        if got is None:
            raise BackendError(f"no name index in {str(self.directory)!r} (write_name_tokens, "
                               "or load_graph(..., vector_dir=))")
        return got

    def __repr__(self) -> str:
        return f"NameTokenFiles({str(self.directory)!r})"


def _read_header(directory: Path, name: str) -> dict[str, Any]:
    """The header ``<directory>/<name>.json``, checked for format, version and tokenizer."""
    return read_header(directory, name, "name index",
                       {"format": FORMAT, "version": VERSION, "tokenizer": TOKENIZER})
