"""A LangChain chat model, LLM or runnable as a kgpath :class:`~kgpath.llm.LLM`."""

from __future__ import annotations

from typing import Any

__all__ = ["LangChainLLM"]


class LangChainLLM:
    """Adapts any LangChain chat model or LLM (``invoke``/``ainvoke``)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    @staticmethod
    def _text(out: Any) -> str:
        content = getattr(out, "content", out)
        if isinstance(content, list):  # content blocks
            return "".join(
                b.get("text", "") if isinstance(b, dict) else str(b) for b in content
            )
        return str(content)

    def complete(self, prompt: str) -> str:
        """Complete via ``invoke``."""
        return self._text(self.model.invoke(prompt))

    async def acomplete(self, prompt: str) -> str:
        """Async complete via ``ainvoke``."""
        return self._text(await self.model.ainvoke(prompt))
