"""LangChain ``Embeddings`` as a kgpath :class:`~kgpath.embeddings.Embedder`.

:func:`wrap_embeddings` is this distribution's ``kgpath.embedder_adapters`` entry point:
:func:`kgpath.embeddings.as_embedder` calls it when it is given an object that is no
kgpath embedder, so a LangChain model passed straight to the core (e.g.
``GraphIndex(graph, OpenAIEmbeddings())``) is wrapped without the core importing LangChain.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from kgpath.embeddings import BaseEmbedder

__all__ = ["LangChainEmbedder", "wrap_embeddings"]

logger = logging.getLogger(__name__)


class LangChainEmbedder(BaseEmbedder):
    """Adapts any LangChain ``Embeddings`` (``embed_query``/``embed_documents`` + async)."""

    def __init__(self, embeddings: Any, *, batch_size: int = 64) -> None:
        self.embeddings = embeddings
        self.batch_size = batch_size
        self.show_progress = False

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


def wrap_embeddings(obj: Any) -> LangChainEmbedder | None:
    """``obj`` in a :class:`LangChainEmbedder` if it has LangChain's ``Embeddings`` methods.

    Read by attribute (``embed_documents`` and ``embed_query``), so any ``Embeddings``
    implementation qualifies; ``None`` for anything else (another adapter may wrap it).
    """
    if hasattr(obj, "embed_documents") and hasattr(obj, "embed_query"):
        logger.info("wrapping LangChain embeddings %s in LangChainEmbedder", type(obj).__name__)
        return LangChainEmbedder(obj)
    return None
