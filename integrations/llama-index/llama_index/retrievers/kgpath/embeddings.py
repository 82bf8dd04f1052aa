"""LlamaIndex ``BaseEmbedding`` as a kgpath :class:`~kgpath.embeddings.Embedder`.

:func:`wrap_embed_model` is this distribution's ``kgpath.embedder_adapters`` entry point:
:func:`kgpath.embeddings.as_embedder` calls it when it is given an object that is no
kgpath embedder, so a LlamaIndex model passed straight to the core (e.g.
``GraphIndex(graph, OpenAIEmbedding())``) is wrapped without the core importing LlamaIndex.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from kgpath.embeddings import BaseEmbedder

__all__ = ["LlamaIndexEmbedder", "wrap_embed_model"]

logger = logging.getLogger(__name__)


class LlamaIndexEmbedder(BaseEmbedder):
    """Adapts any LlamaIndex ``BaseEmbedding`` (query vs text embeddings, native async)."""

    def __init__(self, embed_model: Any, *, batch_size: int = 64) -> None:
        self.embed_model = embed_model
        self.batch_size = batch_size
        self.show_progress = False

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


def wrap_embed_model(obj: Any) -> LlamaIndexEmbedder | None:
    """``obj`` in a :class:`LlamaIndexEmbedder` if it has ``BaseEmbedding``'s methods.

    Read by attribute (``get_text_embedding_batch`` and ``get_query_embedding``), so any
    LlamaIndex embedding model qualifies; ``None`` for anything else.
    """
    if hasattr(obj, "get_text_embedding_batch") and hasattr(obj, "get_query_embedding"):
        logger.info("wrapping LlamaIndex embedding %s in LlamaIndexEmbedder",
                    type(obj).__name__)
        return LlamaIndexEmbedder(obj)
    return None
