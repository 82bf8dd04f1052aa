"""A LlamaIndex ``LLM`` as a kgpath :class:`~kgpath.llm.LLM`.

:func:`wrap_llm` is this distribution's ``kgpath.llm_adapters`` entry point:
:func:`kgpath.llm.as_llm` calls it for an object that is no kgpath LLM, so a LlamaIndex
model passed straight to the core (``GraphIndex.from_documents(docs, llm=OpenAI())``,
``PathRAGRetriever(g, llm=...)``) is wrapped without the core importing LlamaIndex.
"""

from __future__ import annotations

import logging
from typing import Any

from llama_index.core.base.llms.base import BaseLLM

from kgpath.llm import model_fingerprint

__all__ = ["LlamaIndexLLM", "wrap_llm"]

logger = logging.getLogger(__name__)


def _text(response: Any) -> str:
    """The text of a ``CompletionResponse`` (``None`` text: an empty reply)."""
    text = getattr(response, "text", response)
    return "" if text is None else str(text)


class LlamaIndexLLM:
    """Adapts any LlamaIndex ``LLM`` (``complete``/``acomplete`` returning a response).

    The reply is the response's ``text``. :attr:`fingerprint` (class + model name +
    temperature of the wrapped model) keys kgpath's extraction cache.
    """

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    @property
    def fingerprint(self) -> str:
        """``module.Class:model=...:temperature=...`` of the wrapped model."""
        llm = self.llm
        model = getattr(llm, "model", None) or getattr(llm, "model_name", None)
        if not isinstance(model, str) or not model:
            try:
                model = llm.metadata.model_name
            except Exception:  # noqa: BLE001 - metadata is optional for custom LLMs
                model = None
        return model_fingerprint(llm, model)

    def complete(self, prompt: str) -> str:
        """Complete via the wrapped LlamaIndex LLM."""
        return _text(self.llm.complete(prompt))

    async def acomplete(self, prompt: str) -> str:
        """Async complete via the wrapped LlamaIndex LLM."""
        return _text(await self.llm.acomplete(prompt))


def wrap_llm(obj: Any) -> LlamaIndexLLM | None:
    """``obj`` in a :class:`LlamaIndexLLM` if it is a LlamaIndex ``BaseLLM``, else ``None``."""
    if isinstance(obj, LlamaIndexLLM):
        return obj
    if isinstance(obj, BaseLLM):
        logger.info("wrapping LlamaIndex LLM %s in LlamaIndexLLM", type(obj).__name__)
        return LlamaIndexLLM(obj)
    return None
