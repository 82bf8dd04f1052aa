"""A LangChain chat model, LLM or runnable as a kgpath :class:`~kgpath.llm.LLM`.

:func:`wrap_llm` is this distribution's ``kgpath.llm_adapters`` entry point:
:func:`kgpath.llm.as_llm` calls it for an object that is no kgpath LLM, so a LangChain
``BaseChatModel`` or ``BaseLLM`` passed straight to the core
(``kgpath.ingest.graph_from_documents(docs, llm=ChatOpenAI())``) is wrapped without the core
importing LangChain.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.language_models import BaseLanguageModel
from langchain_core.runnables import Runnable

from kgpath.llm import model_fingerprint

__all__ = ["LangChainLLM", "wrap_llm"]

logger = logging.getLogger(__name__)


class LangChainLLM:
    """Adapts any LangChain chat model, LLM or runnable (``invoke``/``ainvoke``).

    A chat model's ``AIMessage`` gives its ``content`` (content blocks joined), a
    ``BaseLLM`` its string. :attr:`fingerprint` (class + model name + temperature of the
    wrapped model) keys kgpath's extraction cache.
    """

    def __init__(self, model: Any) -> None:
        self.model = model

    @property
    def fingerprint(self) -> str:
        """``module.Class:model=...:temperature=...`` of the wrapped model."""
        m = self.model
        names = (getattr(m, attr, None) for attr in ("model_name", "model", "model_id"))
        return model_fingerprint(m, next((v for v in names if isinstance(v, str) and v), None))

    @staticmethod
    def _text(out: Any) -> str:
        content = getattr(out, "content", out)
        if isinstance(content, list):  # content blocks
            return "".join(
                b.get("text", "") if isinstance(b, dict) else str(b) for b in content
            )
        return "" if content is None else str(content)

    def complete(self, prompt: str) -> str:
        """Complete via ``invoke``."""
        return self._text(self.model.invoke(prompt))

    async def acomplete(self, prompt: str) -> str:
        """Async complete via ``ainvoke``."""
        return self._text(await self.model.ainvoke(prompt))


def wrap_llm(obj: Any) -> LangChainLLM | None:
    """``obj`` in a :class:`LangChainLLM` if it is a LangChain model or runnable, else ``None``.

    ``BaseChatModel`` and ``BaseLLM`` (both ``BaseLanguageModel``) and any other
    ``Runnable`` (a prompt | model chain) qualify.
    """
    if isinstance(obj, LangChainLLM):
        return obj
    if isinstance(obj, (BaseLanguageModel, Runnable)):
        logger.info("wrapping LangChain model %s in LangChainLLM", type(obj).__name__)
        return LangChainLLM(obj)
    return None
