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

(:class:`SharedEmbedder` is the same as the LlamaIndex adapter's: each distribution
stands alone.)
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from kgpath._progress import progress_if
from kgpath.embed_cache import embedder_fingerprint
from kgpath.embeddings import BaseEmbedder, Embedder, LocalEmbedder, as_embedder

__all__ = ["KgpathEmbeddings", "LangChainEmbedder", "SharedEmbedder", "kgpath_embedder_of",
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


class SharedEmbedder:
    """A kgpath embedder that remembers the passage vectors it made, by text (bounded).

    What :class:`KgpathEmbedding` hands to kgpath and uses itself: a passage embedded for
    a ``VectorStoreIndex`` is not embedded again for a kgpath index, and the other way
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
        """The wrapped embedder's fingerprint (:func:`kgpath.embed_cache.embedder_fingerprint`)."""
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

    def _join(self, texts: Sequence[str], missing: list[str], new: np.ndarray) -> np.ndarray:
        with self._lock:
            self.embedded += len(missing)
            found = {t: self._memo[t] for t in texts if t in self._memo}
            found.update(zip(missing, np.asarray(new, dtype=np.float32), strict=True))
            for t in texts:
                self._memo[t] = found[t]
                self._memo.move_to_end(t)
            while len(self._memo) > self.max_texts:
                self._memo.popitem(last=False)
        return np.array([found[t] for t in texts], dtype=np.float32).reshape(len(texts), -1)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Passage vectors; only the texts not remembered are embedded."""
        missing = self._split(texts)
        new = self.embedder.embed_passages(missing) if missing else np.zeros((0, 0))
        return self._join(texts, missing, new)

    async def aembed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Async :meth:`embed_passages` (the wrapped embedder's async path)."""
        missing = self._split(texts)
        new = await self.embedder.aembed_passages(missing) if missing else np.zeros((0, 0))
        return self._join(texts, missing, new)

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
