"""Embedding models across the boundary, both ways.

* :class:`LlamaIndexEmbedder`: any LlamaIndex ``BaseEmbedding`` as a kgpath
  :class:`~kgpath.embeddings.Embedder`.
* :class:`KgpathEmbedding`: any kgpath embedder (default the bundled offline
  :class:`~kgpath.embeddings.LocalEmbedder`) as a LlamaIndex ``BaseEmbedding``, for a
  ``VectorStoreIndex`` beside a kgpath retriever on the same model. Its
  :attr:`~KgpathEmbedding.kgpath_embedder` is what kgpath is given when the wrapper is
  passed to it (never wrapped again) and remembers the passage vectors it made, so the
  vector index and the kgpath retriever embed each passage once in total.

:func:`wrap_embed_model` is this distribution's ``kgpath.embedder_adapters`` entry point:
:func:`kgpath.embeddings.as_embedder` calls it when it is given an object that is no
kgpath embedder, so a LlamaIndex model passed straight to the core (e.g.
``GraphIndex(graph, OpenAIEmbedding())``) is wrapped without the core importing LlamaIndex,
and a :class:`KgpathEmbedding` is unwrapped to its kgpath embedder.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import Field, PrivateAttr

from kgpath.embed_cache import SharedEmbedder
from kgpath.embeddings import BaseEmbedder, LocalEmbedder, as_embedder

__all__ = ["KgpathEmbedding", "LlamaIndexEmbedder", "kgpath_embedder_of",
           "wrap_embed_model"]

logger = logging.getLogger(__name__)


class LlamaIndexEmbedder(BaseEmbedder):
    """Adapts any LlamaIndex ``BaseEmbedding`` (query vs text embeddings, native async).

    Texts go to the model ``batch_size`` at a time (``get_text_embedding_batch``), behind
    kgpath's progress bar for long runs (``show_progress``, :mod:`kgpath._progress`).
    """

    def __init__(self, embed_model: Any, *, batch_size: int = 64,
                 show_progress: bool = True) -> None:
        self.embed_model = embed_model
        self.batch_size = batch_size
        self.show_progress = show_progress

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        m = self.embed_model
        if kind == "query":
            return np.array([m.get_query_embedding(t) for t in texts], dtype=np.float32)
        return np.array(m.get_text_embedding_batch(texts), dtype=np.float32)

    async def _aembed(self, texts: list[str], kind: str) -> np.ndarray:
        m = self.embed_model
        if kind == "query":
            vecs = [await m.aget_query_embedding(t) for t in texts]
        else:
            vecs = await m.aget_text_embedding_batch(texts)
        return np.array(vecs, dtype=np.float32)


class KgpathEmbedding(BaseEmbedding):
    """A kgpath embedder as a LlamaIndex ``BaseEmbedding`` (default: the bundled model).

    Batched (``embed_batch_size`` texts per call, 64 by default; LlamaIndex's progress bar
    with ``show_progress=True``), with native async, e5 query/passage prefixes kept (the
    query and text paths call ``embed_queries`` / ``embed_passages``). Passed to any kgpath
    retriever, index or ``from_documents``, it is replaced by :attr:`kgpath_embedder`, not
    wrapped again, and passages embedded on either side are embedded once.

    Examples
    --------
    >>> from kgpath import HashingEmbedder
    >>> emb = KgpathEmbedding(HashingEmbedder(8))
    >>> len(emb.get_text_embedding("Marie Curie"))
    8
    >>> from kgpath.embeddings import as_embedder
    >>> as_embedder(emb) is emb.kgpath_embedder
    True
    """

    embed_batch_size: int = Field(default=64, gt=0, description="texts per embedding call")
    _shared: SharedEmbedder = PrivateAttr()

    def __init__(self, embedder: Any = None, *, max_shared_texts: int = 100_000,
                 **kwargs: Any) -> None:
        inner = LocalEmbedder() if embedder is None else kgpath_embedder_of(embedder)
        if inner is None:
            inner = as_embedder(embedder, "embedder")
        kwargs.setdefault("model_name", repr(inner))
        super().__init__(**kwargs)
        self._shared = inner if isinstance(inner, SharedEmbedder) else SharedEmbedder(
            inner, max_texts=max_shared_texts)

    @classmethod
    def class_name(cls) -> str:
        """LlamaIndex's name for this class (serialisation)."""
        return "KgpathEmbedding"

    @property
    def kgpath_embedder(self) -> SharedEmbedder:
        """The kgpath embedder behind this model (what kgpath uses when given it)."""
        return self._shared

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its recipe (the bundled model is rebuilt, not copied)."""
        return (_rebuild_embedding, (self._shared, self.model_dump()))

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in self._shared.embed_queries([query])[0]]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in (await self._shared.aembed_queries([query]))[0]]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await self._aget_text_embeddings([text]))[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in v] for v in self._shared.embed_passages(texts)]

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in v] for v in await self._shared.aembed_passages(texts)]


def _rebuild_embedding(shared: SharedEmbedder, fields: dict[str, Any]) -> KgpathEmbedding:
    fields.pop("class_name", None)
    return KgpathEmbedding(shared, **{k: v for k, v in fields.items()
                                      if k in ("model_name", "embed_batch_size")})


def kgpath_embedder_of(obj: Any) -> Any:
    """The kgpath embedder a framework wrapper of kgpath stands for, else ``None``.

    Its ``kgpath_embedder``: this adapter's :class:`KgpathEmbedding` or the LangChain
    adapter's ``KgpathEmbeddings``.
    """
    inner = getattr(obj, "kgpath_embedder", None)
    return inner if inner is not None and hasattr(inner, "embed_passages") else None


def wrap_embed_model(obj: Any) -> Any:
    """``obj`` in a :class:`LlamaIndexEmbedder` if it has ``BaseEmbedding``'s methods.

    Read by attribute (``get_text_embedding_batch`` and ``get_query_embedding``), so any
    LlamaIndex embedding model qualifies; a :class:`KgpathEmbedding` is unwrapped to its
    :attr:`~KgpathEmbedding.kgpath_embedder` (the same object every time); ``None`` for
    anything else.
    """
    inner = kgpath_embedder_of(obj)
    if inner is not None:
        return inner
    if hasattr(obj, "get_text_embedding_batch") and hasattr(obj, "get_query_embedding"):
        logger.info("wrapping LlamaIndex embedding %s in LlamaIndexEmbedder",
                    type(obj).__name__)
        return LlamaIndexEmbedder(obj)
    return None
