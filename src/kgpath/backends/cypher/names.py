"""A token index of the node names beside the database: exact name lookup without a scan.

C2RAG's anchors (Eq. 3, ``S_tok = |Tok(surface) ∩ Tok(name)| / |Tok(surface)|``) and its
fallback plan (3.2, names found as token n-grams of the question) only ever read the nodes
that share a ``Tok(·)`` token with the text. A Cypher database has no index for "names
holding this word": ``name_key CONTAINS t`` scans the node label (about 130 ms per question
at 2·10^4 nodes, seconds at 10^6). :func:`write_name_tokens` (called by
:func:`~kgpath.backends.cypher.load_graph` with ``vector_dir=``) writes, next to the
vector files (:mod:`~kgpath.backends.cypher.vectors`):

* ``names.tok`` / ``names.toff``: the distinct tokens, UTF-8, sorted by their bytes, and
  ``T + 1`` int64 offsets;
* ``names.post`` / ``names.poff``: per token, the ascending node orders (int64) of the
  nodes whose name holds it, and ``T + 1`` int64 offsets (in postings);
* ``names.ids`` / ``names.ioff``: the node ids in node order and ``count + 1`` offsets;
* ``names.json``: ``{"format", "version", "tokenizer", "count", "tokens", "postings"}``.

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
is not exact. The file costs ~1 s to write for 10^6 names and is read like the vector file.

Staleness: like the vector files, the index describes the database at write time. A reader
checks the node count, and that every returned node still has its order and the token in
its name (:class:`~kgpath.errors.BackendError` otherwise; rewrite with
:func:`write_name_tokens`). Not detected: a node renamed (count unchanged) to a name with a
token the index does not list for it is not found by that token until the rewrite.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kgpath._files import atomic_write, check_directory, user_path, write_chunked
from kgpath.errors import ConfigError, PersistenceError

__all__ = ["NameTokenWriter", "NameTokens", "name_tokens", "write_name_tokens"]

FORMAT = "kgpath-name-tokens"
VERSION = 1
TOKENIZER = r"re:\w+ (unicode), str.lower per token"
_WORD = re.compile(r"\w+", re.UNICODE)
_EXT = ("tok", "toff", "post", "poff", "ids", "ioff")


def name_tokens(text: str) -> list[str]:
    r"""``Tok(text)``: lower-cased ``\w+`` tokens (the tokenizer of C2RAG's Eq. 3).

    Examples
    --------
    >>> name_tokens("Curie's lab, PARIS")
    ['curie', 's', 'lab', 'paris']
    """
    return [t.lower() for t in _WORD.findall(text or "")]


class NameTokenWriter:
    """Collect ``(ids, names)`` in node order; :meth:`close` writes the index (header last).

    Holds the distinct tokens and one ``(token, order)`` pair per name token until
    :meth:`close` (about 100 MB for 10^6 one-token names), never the names themselves.

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
        check_directory(self.base, "the name index directory")
        head = self.base / "names.json"
        if head.exists():
            head.unlink()  # a half-rewritten index never opens
        self.count = 0
        self._tid: dict[str, int] = {}
        self._tids: list[np.ndarray] = []
        self._orders: list[np.ndarray] = []
        self._pos = 0
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        self._ids = os.open(self.base / "names.ids", flags, 0o644)
        self._ioff = os.open(self.base / "names.ioff", flags, 0o644)
        write_chunked(self._ioff, np.zeros(1, "<i8").tobytes(), what="id offsets")

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
        self._tids.append(np.asarray(tids, np.int64))
        self._orders.append(np.asarray(orders, np.int64))
        blobs = [str(i).encode("utf-8") for i in ids]
        ends = self._pos + np.cumsum([len(b) for b in blobs], dtype=np.int64)
        write_chunked(self._ids, b"".join(blobs), what="ids")
        write_chunked(self._ioff, ends.astype("<i8").tobytes(), what="id offsets")
        self._pos = int(ends[-1]) if len(ends) else self._pos
        self.count += len(ids)

    def close(self) -> None:
        """Sort the tokens and postings, write them, then the header."""
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
            fd = os.open(self.base / f"names.{ext}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                         0o644)
            try:
                write_chunked(fd, data, what=f"names.{ext}")
                os.fsync(fd)
            finally:
                os.close(fd)
        for fd in (self._ids, self._ioff):
            os.fsync(fd)
            os.close(fd)
        self._tid, self._tids, self._orders = {}, [], []
        atomic_write(self.base / "names.json", json.dumps(
            {"format": FORMAT, "version": VERSION, "tokenizer": TOKENIZER, "count": self.count,
             "tokens": len(toks), "postings": int(post.size)}), what="name index header")

    def __enter__(self) -> NameTokenWriter:
        return self

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:
            for fd in (self._ids, self._ioff):
                os.close(fd)


def write_name_tokens(directory: str | os.PathLike[str], ids: Sequence[str],
                      names: Sequence[str | None], *, chunk: int = 65_536) -> Path:
    """Write the name token index of nodes ``ids`` (node order) named ``names``.

    Returns the directory. Called by ``load_graph(..., vector_dir=...)``; call it again
    after changing the graph in the database.
    """
    if len(ids) != len(names):
        raise ConfigError(f"{len(ids)} node ids but {len(names)} names")
    with NameTokenWriter(directory) as w:
        for a in range(0, len(ids), chunk):
            w.append(list(ids[a:a + chunk]), list(names[a:a + chunk]))
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
        self.path = base / "names.json"
        try:
            head = json.loads(self.path.read_text())
            self._fd = {e: os.open(base / f"names.{e}", os.O_RDONLY) for e in _EXT}
        except (OSError, ValueError) as exc:
            raise PersistenceError(f"cannot open the name index in {str(base)!r}: {exc}"
                                   ) from exc
        if (head.get("format"), head.get("version"), head.get("tokenizer")) != (
                FORMAT, VERSION, TOKENIZER):
            self.close()
            raise PersistenceError(f"{str(self.path)!r} is not a {FORMAT} v{VERSION} index "
                                   f"of this tokenizer: {head}")
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
        """Close the file descriptors."""
        for fd in getattr(self, "_fd", {}).values():
            try:
                os.close(fd)
            except OSError:
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
