"""A LlamaIndex ``LLM`` as a kgpath :class:`~kgpath.llm.LLM`."""

from __future__ import annotations

from typing import Any

__all__ = ["LlamaIndexLLM"]


class LlamaIndexLLM:
    """Adapts any LlamaIndex ``LLM`` (``complete``/``acomplete`` returning a response)."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    def complete(self, prompt: str) -> str:
        """Complete via the wrapped LlamaIndex LLM."""
        return str(self.llm.complete(prompt).text)

    async def acomplete(self, prompt: str) -> str:
        """Async complete via the wrapped LlamaIndex LLM."""
        return str((await self.llm.acomplete(prompt)).text)
