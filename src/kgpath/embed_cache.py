"""A content-addressed embedding cache shared across runs and processes.

:class:`CachedEmbedder` wraps any :class:`~kgpath.embeddings.Embedder`: a text is embedded
at most once per (embedder fingerprint, kind, text), whichever run or process asks first.
Opt-in for the library (``CachedEmbedder(embedder, cache_dir)``); the command line's eval
commands pass a cache folder by default (:func:`default_cache_dir`).

Layout (no pickle anywhere)::

    <cache_dir>/<fingerprint digest>/embedder.json       class name, for humans
    <cache_dir>/<fingerprint digest>/query-<id>.npz      one segment per write
    <cache_dir>/<fingerprint digest>/passage-<id>.npz

A segment holds ``keys`` (SHA-256 hex of each text, ``<U64``) and ``vectors`` (float32,
``(n, dim)``); it is written to a temporary file in the same folder and moved into place
with :func:`os.replace`, so readers see whole segments or none. Segments are never
modified, only added, which is what makes concurrent writers safe: two processes that
embed the same text write two segments with the same row, and readers keep either.
Segments are loaded with ``allow_pickle=False``; a segment that cannot be read (truncated,
not an npz, wrong shapes) is logged, deleted and ignored, so its texts count as misses and
are embedded and written again; one the OS refuses to read (permissions, too many open
files) is logged and skipped but kept, and so is a valid segment of another dimension
(another model's: warned once, never deleted; the good segments are served). Concurrent
misses of one text, in threads or asyncio, embed it once (:mod:`kgpath._singleflight`). A
lone surrogate is keyed as is (``surrogatepass``): the wrapped embedder decides (kgpath's
raise :class:`~kgpath.errors.EmbeddingError`). Vectors with NaN or inf are never written
(:class:`~kgpath.errors.EmbeddingError`), and a folder that cannot be written raises
:class:`~kgpath.errors.PersistenceError` naming it. When a folder holds more than
``compact_at`` segments of one kind they are merged into one (write new, then delete old).
"""

from __future__ import annotations

import errno
import functools
import hashlib
import inspect
import json
import logging
import os
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kgpath._singleflight import SingleFlight
from kgpath.embeddings import Embedder, LocalEmbedder, vector_source
from kgpath.errors import ConfigError, EmbeddingError, PersistenceError, short

__all__ = ["CachedEmbedder", "SharedEmbedder", "default_cache_dir", "embedder_fingerprint",
           "portable_embedder"]

logger = logging.getLogger(__name__)

_KINDS = ("query", "passage")
_SECRET_WORDS = ("key", "token", "secret", "password")
#: Read errors that say nothing about the file's content: such a segment is skipped, kept.
_TRANSIENT = frozenset({errno.EACCES, errno.EPERM, errno.EMFILE, errno.ENFILE, errno.EIO,
                        errno.EAGAIN, errno.ENOMEM})


def default_cache_dir() -> Path:
    """The default cache root of the command line.

    ``$KGPATH_CACHE_DIR``, else ``$XDG_CACHE_HOME/kgpath/embeddings``, else
    ``~/.cache/kgpath/embeddings``.
    """
    env = os.environ.get("KGPATH_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "kgpath" / "embeddings"


def embedder_fingerprint(embedder: Any) -> str:
    """A string that changes when the embedder would produce other vectors.

    ``embedder.fingerprint`` (a string attribute or property) when it has one; else its
    ``repr`` when that is not the default ``<... object at 0x...>`` (kgpath's embedders
    print their model and dimension); else the class name plus its plain attributes
    (``model``, ``dimensions``, ``base_url``, ...; names containing ``key``, ``token``,
    ``secret`` or ``password`` are left out).
    """
    fp = getattr(embedder, "fingerprint", None)
    if isinstance(fp, str) and fp:
        return fp
    cls = type(embedder)
    name = f"{cls.__module__}.{cls.__qualname__}"
    r = repr(embedder)
    if " object at 0x" not in r:
        return f"{name}|{r}"
    return f"{name}|{json.dumps(_plain_attrs(vars(embedder)), sort_keys=True, default=str)}"


def _plain_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    """Plain-valued attributes (one level of dicts), secrets and batching left out."""
    out: dict[str, Any] = {}
    for k, v in attrs.items():
        if not isinstance(k, str) or any(w in k.lower() for w in _SECRET_WORDS) \
                or k in ("batch_size", "show_progress"):
            continue
        if isinstance(v, dict):
            v = {a: b for a, b in _plain_attrs(v).items() if not isinstance(b, dict)}
        if isinstance(v, (str, int, float, bool, type(None), dict)):
            out[k] = v
    return out


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _cheap_dim(embedder: Any) -> int | None:
    """The embedder's dimension when known without an embedding call, else None."""
    for obj in (embedder, vector_source(embedder)):
        for attr in ("_dim", "dim"):
            v = inspect.getattr_static(obj, attr, None)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return v
    return None


class CachedEmbedder:
    """Wrap ``embedder`` with the content-addressed on-disk cache (see the module docstring).

    Parameters
    ----------
    embedder
        Any :class:`~kgpath.embeddings.Embedder`.
    cache_dir
        Root folder, shared by every embedder (each gets a sub-folder named after the hash
        of :func:`embedder_fingerprint`, or of ``cache_key`` when given).
    cache_key
        Overrides the fingerprint (when ``repr`` is not stable across runs).
    save_every
        New texts are embedded and written in slices of this many, so an interrupted run
        keeps what it finished.
    compact_at
        Merge a kind's segments into one when there are more than this many.

    ``hits`` counts requested texts found in the cache (or embedded meanwhile by a
    concurrent caller), ``misses`` distinct texts embedded, ``corrupt`` unreadable segments
    dropped. Works from threads and asyncio alike; concurrent misses of one text embed it
    once.

    Raises
    ------
    ConfigError
        For an argument it cannot work with, e.g. a ``cache_dir`` that is a file.
    """

    def __init__(
        self,
        embedder: Embedder,
        cache_dir: str | os.PathLike[str],
        *,
        cache_key: str | None = None,
        save_every: int = 2048,
        compact_at: int = 64,
    ) -> None:
        for name, v in (("save_every", save_every), ("compact_at", compact_at)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"{name} must be an int >= 1, got {v!r}")
        _check_args(embedder, cache_dir, cache_key)
        self.embedder = embedder
        self.save_every = save_every
        self.compact_at = compact_at
        self.fingerprint = cache_key if cache_key is not None else embedder_fingerprint(embedder)
        digest = hashlib.sha256(self.fingerprint.encode("utf-8")).hexdigest()[:24]
        self.cache_dir = Path(cache_dir)
        self.path = self.cache_dir / digest
        self.hits = 0
        self.misses = 0
        self.corrupt = 0
        self._lock = threading.Lock()
        self._rows: dict[str, dict[str, np.ndarray]] = {k: {} for k in _KINDS}
        self._seen: dict[str, set[str]] = {k: set() for k in _KINDS}
        self._skipped: set[str] = set()  # unreadable now (permissions): kept, never compacted
        self._foreign: dict[str, int] = {}  # segment -> its other dimension: kept, unread
        self._dim: int | None = _cheap_dim(embedder)
        self._dim_sure = self._dim is not None  # known from the embedder, not a segment
        self._flight = SingleFlight()  # per (kind, text key): concurrent misses embed once

    @property
    def dim(self) -> int:
        """Dimension of the wrapped embedder."""
        return self.embedder.dim

    @property
    def vectors_of(self) -> Any:
        """The wrapped embedder, whose vectors this cache returns unchanged.

        So they carry its identity (:func:`kgpath.embeddings.vector_source`).
        """
        return self.embedder

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.embedder!r}, cache={str(self.path)!r})"

    # ------------------------------------------------------------------ segments on disk
    def segments(self, kind: str) -> list[Path]:
        """The segment files of ``kind`` currently on disk."""
        if not self.path.is_dir():
            return []
        return sorted(self.path.glob(f"{kind}-*.npz"))

    def _read(self, seg: Path) -> tuple[np.ndarray, np.ndarray] | None:
        """A segment's keys and vectors; None when it vanished, is unreadable or corrupt.

        Only a corrupt segment (read, but not a valid segment) is deleted; one the OS will
        not let us read (permissions, too many open files) or open at all (a folder, a
        symlink loop) is left alone and skipped.
        """
        try:
            fh = open(seg, "rb")  # noqa: SIM115 - closed by the with below
        except FileNotFoundError:
            return None  # compacted away by another process; its rows live on elsewhere
        except OSError as exc:  # not even opened: says nothing about its content
            self._skip(seg, exc)
            return None
        try:
            with fh, np.load(fh, allow_pickle=False) as z:
                keys, vecs = np.asarray(z["keys"]), np.asarray(z["vectors"], np.float32)
            ok = (keys.ndim == 1 and vecs.ndim == 2 and keys.shape[0] == vecs.shape[0]
                  and keys.dtype.kind == "U" and vecs.shape[1] > 0
                  and bool(np.isfinite(vecs).all()))
            if not ok:
                raise ValueError(f"keys {keys.shape} {keys.dtype}, vectors {vecs.shape}")
        except OSError as exc:
            if exc.errno not in _TRANSIENT:
                self._drop(seg, exc)
            else:
                self._skip(seg, exc)  # the OS will not let us read it now: keep it
            return None
        except Exception as exc:  # noqa: BLE001 - any unreadable segment is dropped
            self._drop(seg, exc)
            return None
        return keys, vecs

    def _skip(self, seg: Path, exc: OSError) -> None:
        """Leave a segment we cannot read now alone (not read again by this instance)."""
        logger.warning("embedding cache: cannot read segment %s (%r); skipped", seg, exc)
        self._skipped.add(seg.name)

    def _drop(self, seg: Path, exc: BaseException) -> None:
        """Delete a corrupt segment (its texts count as misses and are written again)."""
        logger.warning("embedding cache: dropping unreadable segment %s (%r)", seg, exc)
        self.corrupt += 1
        try:
            seg.unlink(missing_ok=True)
        except OSError as err:  # a read-only folder: keep it, skip it, never fail the call
            self._skip(seg, err)

    def _refresh(self, kind: str) -> None:
        """Load segments written since the last look (by this or another process)."""
        rows = self._rows[kind]
        for seg in self.segments(kind):
            name = seg.name
            if name in self._seen[kind] or name in self._skipped or name in self._foreign:
                continue
            got = self._read(seg)
            if got is None:
                continue
            keys, vecs = got
            if self._dim is None:  # provisional until this instance embeds (see _store)
                self._dim = int(vecs.shape[1])
            if vecs.shape[1] != self._dim:
                self._other_dim(seg, int(vecs.shape[1]))
                continue
            self._seen[kind].add(name)
            for k, v in zip(keys.tolist(), vecs, strict=True):
                rows.setdefault(str(k), v)

    def _other_dim(self, seg: Path, dim: int) -> None:
        """A valid segment of another dimension (another model's): ignored, never deleted."""
        if not self._foreign:
            logger.warning("embedding cache %s: segment %s holds vectors of dimension %d, not "
                           "%d; ignored, kept on disk (and any more such)", self.path, seg.name,
                           dim, self._dim)
        self._foreign[seg.name] = dim

    def _check_dim(self, dim: int) -> None:
        """Take the embedder's dimension; a provisional one (from a segment) may be wrong."""
        if self._dim == dim:
            self._dim_sure = True
            return
        if self._dim is not None and self._dim_sure:
            raise EmbeddingError(
                f"embedder returned dimension {dim}, cache {self.path} holds {self._dim}")
        logger.warning("embedding cache %s: the embedder's dimension is %d; segments of "
                       "dimension %s ignored, kept on disk", self.path, dim, self._dim)
        self._dim, self._dim_sure = dim, True
        for kind in _KINDS:  # start over: read the segments of the right dimension
            self._rows[kind].clear()
            self._seen[kind].clear()
        self._foreign.clear()

    def _write(self, kind: str, keys: list[str], vecs: np.ndarray) -> str:
        """Write one segment atomically; returns its file name.

        Raises :class:`~kgpath.errors.PersistenceError` naming the folder when it cannot
        be written (read-only, not a folder, disk full).
        """
        try:
            return self._write_segment(kind, keys, vecs)
        except OSError as exc:
            raise PersistenceError(
                f"embedding cache {str(self.path)!r} cannot be written ({exc}); pass a "
                "writable cache_dir"
            ) from exc

    def _write_segment(self, kind: str, keys: list[str], vecs: np.ndarray) -> str:
        for folder in (self.cache_dir, self.path):  # a file there: named in the error
            if folder.exists() and not folder.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(folder))
        self.path.mkdir(parents=True, exist_ok=True)
        info = self.path / "embedder.json"
        if not info.exists():
            _atomic_bytes(info, json.dumps(
                {"embedder": type(self.embedder).__qualname__}).encode("utf-8"))
        name = f"{kind}-{time.time_ns():x}-{os.getpid()}-{uuid.uuid4().hex[:8]}.npz"
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=self.path)
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, keys=np.asarray(keys, dtype="U64"),
                         vectors=np.asarray(vecs, dtype=np.float32))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return name

    def _compact(self, kind: str) -> None:
        """Merge every known segment of ``kind`` into one new one, then delete the old."""
        old = [self.path / n for n in self._seen[kind]]
        rows = self._rows[kind]
        if len(old) <= self.compact_at or not rows:
            return
        name = self._write(kind, list(rows), np.stack(list(rows.values())))
        for seg in old:
            seg.unlink(missing_ok=True)
        self._seen[kind] = {name}

    # ------------------------------------------------------------------ lookup and store
    def _keys(self, texts: Sequence[str]) -> list[str]:
        if isinstance(texts, str):
            raise EmbeddingError("expected a sequence of strings, got a single str")
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise EmbeddingError(f"texts[{i}] must be a str, got {short(t)}")
        return [_text_key(t) for t in texts]

    def _missing(self, keys: list[str], texts: Sequence[str], kind: str) -> dict[str, str]:
        """``key -> text`` of the texts neither in memory nor on disk (distinct, in order)."""
        with self._lock:
            rows = self._rows[kind]
            if any(k not in rows for k in keys):
                self._refresh(kind)
            missing: dict[str, str] = {}
            for k, t in zip(keys, texts, strict=True):
                if k not in rows and k not in missing:
                    missing[k] = t
        return missing

    def _todo(self, kind: str, missing: dict[str, str], claimed: list[Any]) -> list[str]:
        """The claimed texts still missing (a concurrent caller may have just stored them)."""
        with self._lock:
            rows = self._rows[kind]
            return [missing[k] for _, k in claimed if k not in rows]

    def _store(self, kind: str, texts: list[str], vecs: np.ndarray) -> None:
        vecs = np.asarray(vecs, dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape[0] != len(texts):
            raise EmbeddingError(f"embedder returned shape {vecs.shape} for {len(texts)} texts")
        bad = np.flatnonzero(~np.isfinite(vecs).all(axis=1))
        if bad.size:  # never cached: a NaN row would be served to every later run
            raise EmbeddingError(
                f"embedder returned NaN or inf for {bad.size} of {len(texts)} texts, first "
                f"{short(texts[int(bad[0])])}; this batch was not cached"
            )
        with self._lock:
            self._check_dim(int(vecs.shape[1]))
            keys = [_text_key(t) for t in texts]
            self._seen[kind].add(self._write(kind, keys, vecs))
            for k, v in zip(keys, vecs, strict=True):
                self._rows[kind][k] = v
            self.misses += len(keys)
            if len(self._seen[kind]) > self.compact_at:
                self._compact(kind)

    def _done(self, keys: list[str], kind: str, mine: set[str]) -> np.ndarray:
        """Count the hits (texts this call did not embed) and return the rows in order."""
        with self._lock:
            self.hits += sum(1 for k in keys if k not in mine)
            if not keys:
                return np.zeros((0, self._dim or self.dim), np.float32)
            rows = self._rows[kind]
            return np.stack([rows[k] for k in keys]).astype(np.float32, copy=False)

    def _fill(self, kind: str, missing: dict[str, str], call: Callable[[list[str]], np.ndarray],
              mine: set[str], claimed: list[Any]) -> list[None]:
        """The leader's work for the claimed ``(kind, key)`` pairs: embed, write, remember."""
        todo = self._todo(kind, missing, claimed)
        for i in range(0, len(todo), self.save_every):
            part = todo[i : i + self.save_every]
            self._store(kind, part, call(part))
            mine.update(map(_text_key, part))
        return [None] * len(claimed)

    async def _afill(self, kind: str, missing: dict[str, str],
                     call: Callable[[list[str]], Awaitable[np.ndarray]], mine: set[str],
                     claimed: list[Any]) -> list[None]:
        todo = self._todo(kind, missing, claimed)
        for i in range(0, len(todo), self.save_every):
            part = todo[i : i + self.save_every]
            self._store(kind, part, await call(part))
            mine.update(map(_text_key, part))
        return [None] * len(claimed)

    def _embed(self, texts: Sequence[str], kind: str,
               call: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        keys = self._keys(texts)
        mine: set[str] = set()
        while missing := self._missing(keys, texts, kind):  # again only after a dim switch
            fill = functools.partial(self._fill, kind, missing, call, mine)
            self._flight.do_many([(kind, k) for k in missing], fill)
        return self._done(keys, kind, mine)

    async def _aembed(self, texts: Sequence[str], kind: str,
                      call: Callable[[list[str]], Awaitable[np.ndarray]]) -> np.ndarray:
        keys = self._keys(texts)
        mine: set[str] = set()
        while missing := self._missing(keys, texts, kind):
            fill = functools.partial(self._afill, kind, missing, call, mine)
            await self._flight.ado_many([(kind, k) for k in missing], fill)
        return self._done(keys, kind, mine)

    # ------------------------------------------------------------------ Embedder protocol
    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed queries, reading and extending the cache."""
        return self._embed(texts, "query", self.embedder.embed_queries)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages, reading and extending the cache."""
        return self._embed(texts, "passage", self.embedder.embed_passages)

    async def aembed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Async :meth:`embed_queries`."""
        return await self._aembed(texts, "query", self.embedder.aembed_queries)

    async def aembed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Async :meth:`embed_passages`."""
        return await self._aembed(texts, "passage", self.embedder.aembed_passages)


def _check_args(embedder: Any, cache_dir: Any, cache_key: Any) -> None:
    """:class:`ConfigError` for an argument :class:`CachedEmbedder` cannot work with."""
    if not all(callable(getattr(embedder, m, None)) for m in ("embed_queries", "embed_passages")):
        raise ConfigError(f"embedder must have embed_queries and embed_passages, got "
                          f"{short(embedder)}")
    if not isinstance(cache_dir, (str, os.PathLike)) or not str(cache_dir):
        raise ConfigError(f"cache_dir must be a folder path, got {short(cache_dir)}")
    if Path(cache_dir).exists() and not Path(cache_dir).is_dir():
        raise ConfigError(f"cache_dir {str(cache_dir)!r} exists and is not a folder")
    if cache_key is not None and (not isinstance(cache_key, str) or not cache_key):
        raise ConfigError(f"cache_key must be a non-empty str or None, got {short(cache_key)}")


def _atomic_bytes(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class SharedEmbedder:
    """A kgpath embedder that remembers the passage vectors it made, by text (bounded).

    What both adapters' framework embeddings (LlamaIndex ``KgpathEmbedding``, LangChain
    ``KgpathEmbeddings``) hand to kgpath and use themselves: a passage embedded for a
    framework's vector store is not embedded again for a kgpath index, and the other way
    round. Queries are not remembered. At most ``max_texts`` passages are kept (least
    recently used dropped first); ``embedded`` counts the passages actually embedded.
    ``fingerprint``, ``repr`` and ``vectors_of`` (the core's convention for a wrapper that
    returns its inner embedder's vectors unchanged) say that the vectors are the wrapped
    embedder's.
    """

    def __init__(self, embedder: Embedder, *, max_texts: int = 100_000) -> None:
        self.embedder = embedder
        self.max_texts = max_texts
        self.embedded = 0
        self._memo: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._flight = SingleFlight()  # per text: concurrent misses embed it once

    @property
    def dim(self) -> int:
        """The wrapped embedder's dimension."""
        return int(self.embedder.dim)

    @property
    def vectors_of(self) -> Embedder:
        """The embedder whose vectors these are (the wrapped one)."""
        return self.embedder

    @property
    def fingerprint(self) -> str:
        """The wrapped embedder's fingerprint (:func:`embedder_fingerprint`)."""
        return embedder_fingerprint(self.embedder)

    def __repr__(self) -> str:
        return repr(self.embedder)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its recipe: the wrapped embedder (see :func:`portable_embedder`)."""
        return (SharedEmbedder, (portable_embedder(self.embedder),),
                {"max_texts": self.max_texts})

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.max_texts = state["max_texts"]

    def _split(self, texts: Sequence[str]) -> list[str]:
        with self._lock:
            return list(dict.fromkeys(t for t in texts if t not in self._memo))

    def _join(self, texts: Sequence[str], new: dict[str, np.ndarray]) -> np.ndarray:
        with self._lock:
            found = {t: self._memo[t] for t in texts if t in self._memo}
            found.update(new)
            for t in texts:
                self._memo[t] = found[t]
                self._memo.move_to_end(t)
            while len(self._memo) > self.max_texts:
                self._memo.popitem(last=False)
        return np.array([found[t] for t in texts], dtype=np.float32).reshape(len(texts), -1)

    def _count(self, texts: list[str], vecs: np.ndarray) -> np.ndarray:
        with self._lock:
            self.embedded += len(texts)
        return np.asarray(vecs, dtype=np.float32)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Passage vectors; only the texts not remembered are embedded (once, concurrently)."""
        missing = self._split(texts)
        return self._join(texts, self._flight.do_many(
            missing, lambda ts: self._count(ts, self.embedder.embed_passages(ts))))

    async def aembed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Async :meth:`embed_passages` (the wrapped embedder's async path)."""
        async def embed(ts: list[str]) -> np.ndarray:
            return self._count(ts, await self.embedder.aembed_passages(ts))
        return self._join(texts, await self._flight.ado_many(self._split(texts), embed))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors (not remembered)."""
        return self.embedder.embed_queries(texts)

    async def aembed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Async :meth:`embed_queries`."""
        return await self.embedder.aembed_queries(texts)


def portable_embedder(embedder: Any) -> Any:
    """``embedder``, or a pickle recipe for the bundled :class:`LocalEmbedder`.

    The bundled embedder holds its loaded engine, not data: a :class:`_Bundled` recipe
    pickles its options and rebuilds it on load.
    """
    if type(embedder) is LocalEmbedder:
        return _Bundled(embedder.batch_size, embedder.show_progress)
    return embedder


class _Bundled:
    """Unpickles to a new :class:`LocalEmbedder` with the same options."""

    def __init__(self, batch_size: int, show_progress: bool) -> None:
        self.options = {"batch_size": batch_size, "show_progress": show_progress}

    def __reduce__(self) -> tuple[Any, ...]:
        return (_local_embedder, (self.options,))


def _local_embedder(options: dict[str, Any]) -> LocalEmbedder:
    return LocalEmbedder(**options)
