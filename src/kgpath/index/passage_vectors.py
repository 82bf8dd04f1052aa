"""Passage embeddings shared by every retriever of a (graph, embedder) pair.

Methods that search a graph's passages (C2RAG's textual recovery, Eq. 11) used to embed
the whole corpus once per retriever: 6.2 s per question on a 16k-node graph when a
retriever is built per question (issue 12). :func:`passage_cache` returns the one
:class:`PassageVectorCache` of a ``(graph, embedder)`` pair, so every retriever, call and
thread on that pair embeds each passage once. The cache is incremental: when the graph
changes (its ``version``), only passages that are new or whose text changed are embedded.
Entries hold weak references and disappear with the graph or the embedder.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgpath.embeddings import Embedder
from kgpath.errors import EmbeddingError
from kgpath.graph import KnowledgeGraph, Passage

__all__ = [
    "PassageVectorCache", "PassageVectors", "apassage_vectors", "passage_cache",
    "passage_vectors",
]


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
    """Per-passage vectors of one (graph, embedder) pair; see the module docstring."""

    def __init__(self) -> None:
        self._vecs: dict[str, tuple[str, np.ndarray]] = {}
        self._built: PassageVectors | None = None
        self.lock = threading.Lock()
        self.owner: dict[str, Any] | None = None
        """The embedder record of these vectors, when a caller made one (ingest)."""

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


_REGISTRY: dict[tuple[int, int], tuple[Any, Any, PassageVectorCache]] = {}
_REGISTRY_LOCK = threading.Lock()


def passage_cache(graph: KnowledgeGraph, embedder: Embedder) -> PassageVectorCache:
    """The shared :class:`PassageVectorCache` of ``(graph, embedder)`` (by identity)."""
    key = (id(graph), id(embedder))
    with _REGISTRY_LOCK:
        hit = _REGISTRY.get(key)
        if hit is not None and hit[0]() is graph and hit[1]() is embedder:
            return hit[2]
        cache = PassageVectorCache()
        _REGISTRY[key] = (weakref.ref(graph), weakref.ref(embedder), cache)
    for obj in (graph, embedder):
        weakref.finalize(obj, _drop, key, cache)
    return cache


def _drop(key: tuple[int, int], cache: PassageVectorCache) -> None:
    with _REGISTRY_LOCK:
        hit = _REGISTRY.get(key)
        if hit is not None and hit[2] is cache:
            del _REGISTRY[key]


def passage_vectors(graph: KnowledgeGraph, embedder: Embedder) -> PassageVectors | None:
    """Embed what is missing (once per passage per embedder) and return all vectors."""
    cache = passage_cache(graph, embedder)
    with cache.lock:
        missing = cache.missing(graph)
        if missing:
            cache.add(missing, embedder.embed_passages([p.text for p in missing]))
        return cache.vectors(graph)


async def apassage_vectors(graph: KnowledgeGraph, embedder: Embedder) -> PassageVectors | None:
    """Async :func:`passage_vectors`: the missing passages through ``aembed_passages``.

    The embedding is awaited outside the (thread) lock, so two callers may embed the same
    missing passages once each; the cache keeps one copy. The final read goes through
    :func:`passage_vectors`, which embeds nothing unless the graph changed meanwhile.
    """
    cache = passage_cache(graph, embedder)
    with cache.lock:
        missing = cache.missing(graph)
    if missing:
        vecs = await embedder.aembed_passages([p.text for p in missing])
        with cache.lock:
            cache.add(missing, vecs)
    return passage_vectors(graph, embedder)
