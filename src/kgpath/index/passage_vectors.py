"""Passage embeddings shared by every retriever of a graph, keyed by the embedder's model.

Methods that search a graph's passages (C2RAG's textual recovery, Eq. 11) used to embed
the whole corpus once per retriever: 6.2 s per question on a 16k-node graph when a
retriever is built per question (issue 12). :func:`passage_cache` returns the one
:class:`PassageVectorCache` of a graph and a model, found by the embedder's fingerprint
(model name, dimension, probe; issue 21), so every retriever, call, thread and embedder
object of that model embeds each passage once: concurrent first callers, threads or asyncio
tasks, wait for one embedding (:mod:`kgpath._singleflight`; issue 23). The cache is
incremental: when the graph changes (its ``version``), only passages that are new or whose
text changed are embedded, and removed ones are dropped. Entries disappear with the graph.
"""

from __future__ import annotations

import functools
import logging
import threading
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgpath._singleflight import SingleFlight
from kgpath.embeddings import (
    Embedder,
    _remember,
    embedder_name,
    embedder_record,
    normalize_rows,
    same_embedder,
)
from kgpath.errors import EmbeddingError
from kgpath.graph import KnowledgeGraph, Passage
from kgpath.index.identity import embedder_key

__all__ = [
    "PassageVectorCache", "PassageVectors", "apassage_vectors", "aquery_vectors",
    "atext_vectors", "passage_cache", "passage_vectors", "query_vectors",
    "seed_passage_cache", "text_vectors",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PassageVectors:
    """Every passage of a graph version with its unit vector (``embed_passages``)."""

    version: int
    ids: tuple[str, ...]
    texts: tuple[str, ...]
    matrix: np.ndarray
    """``(len(ids), dim)`` float32, row ``i`` is passage ``ids[i]``."""
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """Structures a method builds from these vectors, shared with them (e.g. C2RAG's
    passage index); dropped with this version."""


class PassageVectorCache:
    """Per-passage vectors of one graph and one model; see the module docstring.

    Stored per passage id with the text it embedded: a graph change embeds only new or
    edited passages and :meth:`vectors` drops the removed ones. :attr:`relations` holds
    the model's query vectors of relation strings (C2RAG Eq. 5), kept here so every
    retriever of the graph shares them and :meth:`GraphIndex.save
    <kgpath.index.GraphIndex.save>` writes them.
    """

    def __init__(self, maker: Any = None) -> None:
        self._vecs: dict[str, tuple[str, np.ndarray]] = {}
        self._built: PassageVectors | None = None
        self.lock = threading.Lock()
        self.flight = SingleFlight()
        """Single-flight of what fills this cache: passages, each named set."""
        self.owner: dict[str, Any] | None = None
        """The embedder record of these vectors (:func:`~kgpath.embeddings.embedder_record`)."""
        self.sets: dict[str, dict[str, np.ndarray]] = {"relations": {}}
        """Named sets of ``text -> vector`` a method derives from the graph (see
        :func:`text_vectors`): ``"relations"`` (C2RAG Eq. 5's ``v_r``, ``embed_queries``),
        PathRAG's ``"node_names"`` and ``"edge_texts"`` (``embed_passages``)."""
        self.relations = self.sets["relations"]
        try:
            self._maker: Any = weakref.ref(maker) if maker is not None else None
        except TypeError:
            self._maker = None

    def record(self) -> dict[str, Any] | None:
        """:attr:`owner`, derived from the first stored vector if not set (no embedding)."""
        if self.owner is None and self._vecs and self._maker is not None:
            maker = self._maker()
            if maker is not None:
                text, vec = next(iter(self._vecs.values()))
                self.owner = embedder_record(maker, text, vec)
                _remember(maker, text, self.owner["fingerprint"])
        return self.owner

    @property
    def key(self) -> str | None:
        """:func:`~kgpath.embeddings.embedder_key` of :meth:`record` (``None`` while empty)."""
        rec = self.record()
        return None if rec is None else embedder_key(rec)

    def stored(self) -> dict[str, tuple[str, np.ndarray]]:
        """A copy of ``passage id -> (text embedded, vector)`` (what a save writes)."""
        return dict(self._vecs)

    def missing(self, graph: KnowledgeGraph) -> list[Passage]:
        """Passages of ``graph`` not embedded yet (or whose text changed)."""
        if self._built is not None and self._built.version == graph.version:
            return []
        return [p for p in graph.passages.values()
                if (hit := self._vecs.get(p.id)) is None or hit[0] != p.text]

    def add(self, passages: Sequence[Passage], vecs: np.ndarray) -> None:
        """Store the vectors of ``passages`` (row ``i`` for ``passages[i]``)."""
        arr = np.asarray(vecs, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[0] != len(passages):
            raise EmbeddingError(
                f"embedder returned {arr.shape[0] if arr.ndim else 0} vectors for "
                f"{len(passages)} passages"
            )
        for p, v in zip(passages, arr, strict=True):
            self._vecs[p.id] = (p.text, v)

    def vectors(self, graph: KnowledgeGraph) -> PassageVectors | None:
        """All of ``graph``'s passages as :class:`PassageVectors` (``None`` if it has none).

        Call :meth:`missing` and :meth:`add` first; raises if a passage is not embedded.
        """
        if self._built is not None and self._built.version == graph.version:
            return self._built
        ps = list(graph.passages.values())
        if not ps:
            return None
        if any(p.id not in self._vecs or self._vecs[p.id][0] != p.text for p in ps):
            raise EmbeddingError("passage vectors requested before every passage was embedded")
        live = {p.id for p in ps}
        for stale in [k for k in self._vecs if k not in live]:
            del self._vecs[stale]
        self._built = PassageVectors(
            graph.version, tuple(p.id for p in ps), tuple(p.text for p in ps),
            np.stack([self._vecs[p.id][1] for p in ps]),
        )
        return self._built


_FAST: dict[tuple[int, int], tuple[Any, Any, PassageVectorCache]] = {}
_BY_GRAPH: weakref.WeakKeyDictionary[KnowledgeGraph, list[PassageVectorCache]] = (
    weakref.WeakKeyDictionary()
)
_REGISTRY_LOCK = threading.RLock()


def passage_cache(graph: KnowledgeGraph, embedder: Embedder) -> PassageVectorCache:
    """The shared :class:`PassageVectorCache` of ``graph`` for ``embedder``'s model.

    Caches are found by the embedder's fingerprint (model name, dimension, probe vector;
    :func:`kgpath.embeddings.embedder_key`), not by object: a new instance of the same
    model, or a :class:`~kgpath.embed_cache.CachedEmbedder` over it, gets the cache the
    first one filled (checking a new object costs one probe text, once; none when its
    fingerprint is known, e.g. after :meth:`GraphIndex.load
    <kgpath.index.GraphIndex.load>`). A model with the same name but other vectors gets a
    cache of its own, with a warning: vectors of two models are never mixed.
    """
    key = (id(graph), id(embedder))
    with _REGISTRY_LOCK:
        hit = _FAST.get(key)
        if hit is not None and hit[0]() is graph and hit[1]() is embedder:
            return hit[2]
        cache = _matching(graph, embedder)
        if cache is None:
            cache = PassageVectorCache(embedder)
            _BY_GRAPH.setdefault(graph, []).append(cache)
        _remember_fast(key, graph, embedder, cache)
        return cache


def _matching(graph: KnowledgeGraph, embedder: Embedder) -> PassageVectorCache | None:
    """The cache of ``graph`` whose vectors ``embedder``'s model made, if any."""
    name = embedder_name(embedder)
    for cache in _BY_GRAPH.get(graph, ()):
        rec = cache.record()
        if rec is None:
            continue
        if same_embedder(embedder, rec):
            return cache
        if rec.get("name") == name:
            logger.warning(
                "%r: passage vectors of %r were made by another model named %s (probe "
                "fingerprint differs); embedding the passages again with this one",
                graph, embedder, name,
            )
    return None


def _remember_fast(key: tuple[int, int], graph: KnowledgeGraph, embedder: Embedder,
                   cache: PassageVectorCache) -> None:
    _FAST[key] = (weakref.ref(graph), weakref.ref(embedder), cache)
    for obj in (graph, embedder):
        weakref.finalize(obj, _drop, key, cache)


def seed_passage_cache(
    graph: KnowledgeGraph, embedder: Embedder, owner: dict[str, Any],
    vectors: dict[str, tuple[str, np.ndarray]], sets: dict[str, dict[str, np.ndarray]],
) -> PassageVectorCache:
    """Register vectors read from disk as ``embedder``'s cache for ``graph`` (no embedding).

    ``owner`` is the record of the model that made them; the caller has checked (or, for a
    bundled model, trusted) that ``embedder`` is that model.
    """
    cache = PassageVectorCache(embedder)
    cache.owner = dict(owner)
    cache._vecs.update(vectors)
    for name, rows in sets.items():
        cache.sets.setdefault(name, {}).update(rows)
    with _REGISTRY_LOCK:
        caches = _BY_GRAPH.setdefault(graph, [])
        caches[:] = [c for c in caches if c.key != cache.key] + [cache]
        _remember_fast((id(graph), id(embedder)), graph, embedder, cache)
    return cache


def _drop(key: tuple[int, int], cache: PassageVectorCache) -> None:
    with _REGISTRY_LOCK:
        hit = _FAST.get(key)
        if hit is not None and hit[2] is cache:
            del _FAST[key]


def passage_vectors(graph: KnowledgeGraph, embedder: Embedder) -> PassageVectors | None:
    """Embed what is missing (once per passage per model) and return all vectors.

    Single-flight (:mod:`kgpath._singleflight`): concurrent first callers, in threads or
    asyncio (:func:`apassage_vectors`), embed the missing passages once; the others wait.
    Rows are unit length.
    """
    cache = passage_cache(graph, embedder)
    while True:
        with cache.lock:
            if not cache.missing(graph):
                return cache.vectors(graph)
        cache.flight.do("passages", functools.partial(_fill_passages, cache, graph, embedder))


async def apassage_vectors(graph: KnowledgeGraph, embedder: Embedder) -> PassageVectors | None:
    """Async :func:`passage_vectors`: the missing passages through ``aembed_passages``.

    Awaited without blocking the event loop while another caller (thread or task) embeds.
    """
    cache = passage_cache(graph, embedder)
    while True:
        with cache.lock:
            if not cache.missing(graph):
                return cache.vectors(graph)
        await cache.flight.ado("passages",
                               functools.partial(_afill_passages, cache, graph, embedder))


def _fill_passages(cache: PassageVectorCache, graph: KnowledgeGraph, embedder: Embedder) -> None:
    """The leader's work: embed the passages ``cache`` lacks for ``graph``."""
    with cache.lock:
        todo = cache.missing(graph)
    if todo:
        _add_passages(cache, embedder, todo, embedder.embed_passages([p.text for p in todo]))


async def _afill_passages(cache: PassageVectorCache, graph: KnowledgeGraph,
                          embedder: Embedder) -> None:
    with cache.lock:
        todo = cache.missing(graph)
    if todo:
        vecs = await embedder.aembed_passages([p.text for p in todo])
        _add_passages(cache, embedder, todo, vecs)


def _add_passages(cache: PassageVectorCache, embedder: Embedder, todo: Sequence[Passage],
                  raw: Any) -> None:
    """Store unit rows, and the record of the model that made them (no extra call)."""
    arr = np.asarray(raw, dtype=np.float32)
    if arr.ndim != 2 or arr.shape[0] != len(todo):
        raise EmbeddingError(f"embedder returned {arr.shape[0] if arr.ndim else 0} vectors "
                             f"for {len(todo)} passages")
    with cache.lock:
        cache.add(todo, normalize_rows(arr))
        if cache.owner is None:
            cache.owner = embedder_record(embedder, todo[0].text, arr[0])
            _remember(embedder, todo[0].text, cache.owner["fingerprint"])


def text_vectors(graph: KnowledgeGraph, embedder: Embedder, name: str,
                 texts: Sequence[str]) -> np.ndarray:
    """``embed_passages`` vectors of ``texts`` from the shared set ``name``, rows in order.

    Only texts the set lacks are embedded, once for concurrent callers (single-flight);
    the set then holds exactly ``texts`` (a method asks for all its texts of the current
    graph, e.g. every node name, so what the graph lost is dropped). Shared by every
    retriever of the graph and model and saved with the index, like the passage vectors.
    """
    return _named_set(graph, embedder, name, texts, embedder.embed_passages, prune=True)


async def atext_vectors(graph: KnowledgeGraph, embedder: Embedder, name: str,
                        texts: Sequence[str]) -> np.ndarray:
    """Async :func:`text_vectors` (``aembed_passages``)."""
    return await _anamed_set(graph, embedder, name, texts, embedder.aembed_passages,
                             prune=True)


def query_vectors(graph: KnowledgeGraph, embedder: Embedder, name: str,
                  texts: Sequence[str]) -> np.ndarray:
    """``embed_queries`` vectors of ``texts`` from the shared set ``name``, rows in order.

    As :func:`text_vectors` (once for concurrent callers, shared, saved), but with the
    query side of the model and nothing dropped: the set only grows (C2RAG's
    ``"relations"``, Eq. 5's ``v_r``, also holds relation strings of plans).
    """
    return _named_set(graph, embedder, name, texts, embedder.embed_queries, prune=False)


async def aquery_vectors(graph: KnowledgeGraph, embedder: Embedder, name: str,
                         texts: Sequence[str]) -> np.ndarray:
    """Async :func:`query_vectors` (``aembed_queries``)."""
    return await _anamed_set(graph, embedder, name, texts, embedder.aembed_queries,
                             prune=False)


def _fill_set(cache: PassageVectorCache, name: str, texts: Sequence[str],
              call: Callable[[list[str]], Any]) -> None:
    with cache.lock:
        missing = _absent(cache, name, texts)
    if missing:
        _put(cache, name, missing, call(missing))


async def _afill_set(cache: PassageVectorCache, name: str, texts: Sequence[str],
                     call: Callable[[list[str]], Awaitable[Any]]) -> None:
    with cache.lock:
        missing = _absent(cache, name, texts)
    if missing:
        _put(cache, name, missing, await call(missing))


def _absent(cache: PassageVectorCache, name: str, texts: Sequence[str]) -> list[str]:
    rows = cache.sets.setdefault(name, {})
    return list(dict.fromkeys(t for t in texts if t not in rows))


def _put(cache: PassageVectorCache, name: str, texts: list[str], vecs: Any) -> None:
    arr = np.asarray(vecs, dtype=np.float32)
    if arr.ndim != 2 or arr.shape[0] != len(texts):
        raise EmbeddingError(f"embedder returned {arr.shape[0] if arr.ndim else 0} vectors "
                             f"for {len(texts)} texts")
    with cache.lock:
        cache.sets.setdefault(name, {}).update(zip(texts, arr, strict=True))


def _exactly(cache: PassageVectorCache, name: str, texts: Sequence[str],
             embedder: Embedder, *, prune: bool) -> np.ndarray:
    rows = cache.sets[name]
    if prune:
        live = set(texts)
        for stale in [t for t in rows if t not in live]:
            del rows[stale]
    if not texts:
        return np.zeros((0, embedder.dim), np.float32)
    return np.stack([rows[t] for t in texts])


def _named_set(graph: KnowledgeGraph, embedder: Embedder, name: str, texts: Sequence[str],
               embed: Any, *, prune: bool) -> np.ndarray:
    """The rows of ``texts`` in the shared set ``name``, its missing texts embedded once."""
    cache = passage_cache(graph, embedder)
    while True:
        with cache.lock:
            if not _absent(cache, name, texts):
                return _exactly(cache, name, texts, embedder, prune=prune)
        cache.flight.do(("set", name), functools.partial(_fill_set, cache, name, texts, embed))


async def _anamed_set(graph: KnowledgeGraph, embedder: Embedder, name: str,
                      texts: Sequence[str], embed: Any, *, prune: bool) -> np.ndarray:
    """Async :func:`_named_set` (``embed`` is the async embedding call)."""
    cache = passage_cache(graph, embedder)
    while True:
        with cache.lock:
            if not _absent(cache, name, texts):
                return _exactly(cache, name, texts, embedder, prune=prune)
        await cache.flight.ado(("set", name),
                               functools.partial(_afill_set, cache, name, texts, embed))
