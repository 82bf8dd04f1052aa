"""Embedding models across the boundary, both ways.

* :class:`LangChainEmbedder`: any LangChain ``Embeddings`` as a kgpath
  :class:`~kgpath.embeddings.Embedder`.
* :class:`KgpathEmbeddings`: any kgpath embedder (default the bundled offline
  :class:`~kgpath.embeddings.LocalEmbedder`) as a LangChain ``Embeddings``, for an
  ``InMemoryVectorStore`` (or any vector store) beside a kgpath retriever on the same
  model. Its :attr:`~KgpathEmbeddings.kgpath_embedder` is what kgpath is given when the
  wrapper is passed to it (never wrapped again) and remembers the passage vectors it made,
  so the vector store and the kgpath retriever embed each passage once in total.

:func:`wrap_embeddings` is this distribution's ``kgpath.embedder_adapters`` entry point:
:func:`kgpath.embeddings.as_embedder` calls it when it is given an object that is no
kgpath embedder, so a LangChain model passed straight to the core (e.g.
``GraphIndex(graph, OpenAIEmbeddings())``) is wrapped without the core importing LangChain,
and a :class:`KgpathEmbeddings` is unwrapped to its kgpath embedder.

The passage memo both adapters use is the core's :class:`kgpath.embed_cache.SharedEmbedder`.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from kgpath._progress import progress_if
from kgpath.embed_cache import SharedEmbedder
from kgpath.embeddings import BaseEmbedder, LocalEmbedder, as_embedder

__all__ = ["KgpathEmbeddings", "LangChainEmbedder", "kgpath_embedder_of",
           "wrap_embeddings"]

logger = logging.getLogger(__name__)


class LangChainEmbedder(BaseEmbedder):
    """Adapts any LangChain ``Embeddings`` (``embed_query``/``embed_documents`` + async).

    Texts go to the model ``batch_size`` at a time, behind kgpath's progress bar for long
    runs (``show_progress``, :mod:`kgpath._progress`).
    """

    def __init__(self, embeddings: Any, *, batch_size: int = 64,
                 show_progress: bool = True) -> None:
        self.embeddings = embeddings
        self.batch_size = batch_size
        self.show_progress = show_progress

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        e = self.embeddings
        if kind == "query":
            return np.array([e.embed_query(t) for t in texts], dtype=np.float32)
        return np.array(e.embed_documents(texts), dtype=np.float32)

    async def _aembed(self, texts: list[str], kind: str) -> np.ndarray:
        e = self.embeddings
        if kind == "query":
            vecs = [await e.aembed_query(t) for t in texts]
        else:
            vecs = await e.aembed_documents(texts)
        return np.array(vecs, dtype=np.float32)


class KgpathEmbeddings(Embeddings):
    """A kgpath embedder as a LangChain ``Embeddings`` (default: the bundled model).

    ``embed_documents`` embeds in batches of ``batch_size`` (a tqdm bar over the batches
    with ``show_progress=True``), ``aembed_*`` use the kgpath embedder's async path, and
    the e5 query/passage prefixes are kept (``embed_query`` / ``embed_documents`` call
    ``embed_queries`` / ``embed_passages``). Passed to any kgpath retriever, index or
    ``from_documents``, it is replaced by :attr:`kgpath_embedder`, not wrapped again, and
    passages embedded on either side are embedded once.

    Examples
    --------
    >>> from kgpath import HashingEmbedder
    >>> emb = KgpathEmbeddings(HashingEmbedder(8))
    >>> len(emb.embed_query("Marie Curie"))
    8
    >>> from kgpath.embeddings import as_embedder
    >>> as_embedder(emb) is emb.kgpath_embedder
    True
    """

    def __init__(self, embedder: Any = None, *, batch_size: int = 64,
                 show_progress: bool = False, max_shared_texts: int = 100_000) -> None:
        inner = LocalEmbedder() if embedder is None else kgpath_embedder_of(embedder)
        if inner is None:
            inner = as_embedder(embedder, "embedder")
        self.kgpath_embedder: SharedEmbedder = inner if isinstance(inner, SharedEmbedder) \
            else SharedEmbedder(inner, max_texts=max_shared_texts)
        self.batch_size = batch_size
        self.show_progress = show_progress

    def __repr__(self) -> str:
        return f"KgpathEmbeddings({self.kgpath_embedder!r})"

    def _batches(self, texts: list[str]) -> Any:
        starts = range(0, len(texts), self.batch_size)
        return progress_if([texts[i:i + self.batch_size] for i in starts],
                           self.show_progress, "embedding documents")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Passage vectors, one list of floats per text."""
        out: list[list[float]] = []
        for batch in self._batches(list(texts)):
            out.extend([float(x) for x in v] for v in self.kgpath_embedder.embed_passages(batch))
        return out

    def embed_query(self, text: str) -> list[float]:
        """The query vector."""
        return [float(x) for x in self.kgpath_embedder.embed_queries([text])[0]]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async :meth:`embed_documents` (the kgpath embedder's async path)."""
        out: list[list[float]] = []
        for batch in self._batches(list(texts)):
            vecs = await self.kgpath_embedder.aembed_passages(batch)
            out.extend([float(x) for x in v] for v in vecs)
        return out

    async def aembed_query(self, text: str) -> list[float]:
        """Async :meth:`embed_query`."""
        return [float(x) for x in (await self.kgpath_embedder.aembed_queries([text]))[0]]


def kgpath_embedder_of(obj: Any) -> Any:
    """The kgpath embedder a framework wrapper of kgpath stands for, else ``None``.

    Its ``kgpath_embedder``: this adapter's :class:`KgpathEmbeddings` or the LlamaIndex
    adapter's ``KgpathEmbedding``.
    """
    inner = getattr(obj, "kgpath_embedder", None)
    return inner if inner is not None and hasattr(inner, "embed_passages") else None


def wrap_embeddings(obj: Any) -> Any:
    """``obj`` in a :class:`LangChainEmbedder` if it has LangChain's ``Embeddings`` methods.

    Read by attribute (``embed_documents`` and ``embed_query``), so any ``Embeddings``
    implementation qualifies; a :class:`KgpathEmbeddings` is unwrapped to its
    :attr:`~KgpathEmbeddings.kgpath_embedder` (the same object every time); ``None`` for
    anything else (another adapter may wrap it).
    """
    inner = kgpath_embedder_of(obj)
    if inner is not None:
        return inner
    if hasattr(obj, "embed_documents") and hasattr(obj, "embed_query"):
        logger.info("wrapping LangChain embeddings %s in LangChainEmbedder", type(obj).__name__)
        return LangChainEmbedder(obj)
    return None
