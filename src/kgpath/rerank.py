"""Reranker protocol and backends.

A reranker scores ``(query, text)`` pairs; higher is more relevant. No cross-encoder
weights can be downloaded on offline machines, so the default is a bi-encoder score
(:class:`EmbeddingReranker` over the configured embedder). Users with a
sentence-transformers ``CrossEncoder`` wrap it in :class:`CrossEncoderReranker`; any
``callable(query, texts) -> scores`` works through :class:`CallableReranker`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from kgpath.embeddings import Embedder
from kgpath.errors import BackendError

__all__ = ["Reranker", "EmbeddingReranker", "CrossEncoderReranker", "CallableReranker"]


@runtime_checkable
class Reranker(Protocol):
    """Scores candidate texts against a query."""

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Return one float score per text (higher = more relevant)."""
        ...

    async def ascore(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Async :meth:`score`."""
        ...


class EmbeddingReranker:
    """Bi-encoder reranker: cosine between the query embedding and each text embedding.

    Weaker than a cross-encoder (no token-level interaction) but offline and fast.
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Cosine similarity of ``query`` to every text."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        q = self.embedder.embed_queries([query])[0]
        p = self.embedder.embed_passages(list(texts))
        return (p @ q).astype(np.float32)

    async def ascore(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Async :meth:`score`."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        q = (await self.embedder.aembed_queries([query]))[0]
        p = await self.embedder.aembed_passages(list(texts))
        return (p @ q).astype(np.float32)


class CallableReranker:
    """Wraps ``fn(query, texts) -> sequence of floats``."""

    def __init__(self, fn: Callable[[str, Sequence[str]], Sequence[float]]) -> None:
        self.fn = fn

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Call the wrapped function and validate its output length."""
        out = np.asarray(self.fn(query, list(texts)), dtype=np.float32).reshape(-1)
        if out.size != len(texts):
            raise BackendError(f"reranker returned {out.size} scores for {len(texts)} texts")
        return out

    async def ascore(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Run :meth:`score` in a worker thread."""
        return await asyncio.to_thread(self.score, query, texts)


class CrossEncoderReranker(CallableReranker):
    """Wraps a sentence-transformers ``CrossEncoder`` (or anything with ``predict(pairs)``)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        super().__init__(lambda q, ts: self.model.predict([(q, t) for t in ts]))
