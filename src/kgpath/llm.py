"""LLM protocol, backends, a scripted fake for tests, and tolerant JSON parsing.

kgpath only needs text completion: ``complete(prompt) -> str`` and its async twin.
Every LLM-using step in kgpath also has an LLM-free path, so no backend is required.
The wrappers of LlamaIndex and LangChain models live in the adapter distributions
(``llama_index.retrievers.kgpath.LlamaIndexLLM``, ``langchain_kgpath.LangChainLLM``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from kgpath.errors import BackendError, ConfigError, ParseError, require

__all__ = [
    "LLM",
    "OpenAILLM",
    "ScriptedLLM",
    "parse_json_response",
    "json_depth",
    "MAX_REPLY_CHARS",
    "MAX_JSON_DEPTH",
]

logger = logging.getLogger(__name__)


@runtime_checkable
class LLM(Protocol):
    """What kgpath needs from a language model."""

    def complete(self, prompt: str) -> str:
        """Return the model's completion for ``prompt``."""
        ...

    async def acomplete(self, prompt: str) -> str:
        """Async :meth:`complete`."""
        ...


class OpenAILLM:
    """Chat completions on OpenAI or any OpenAI-compatible server (``base_url``)."""

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        client: Any = None,
        async_client: Any = None,
    ) -> None:
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._kwargs = {"api_key": api_key, "base_url": base_url}
        self._client = client
        self._aclient = async_client

    def _params(self, prompt: str) -> dict[str, Any]:
        p: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": self.temperature,
        }
        if self.max_tokens:
            p["max_tokens"] = self.max_tokens
        return p

    def complete(self, prompt: str) -> str:
        """Complete ``prompt`` with one chat turn."""
        if self._client is None:
            openai = require("openai", "kgpath[openai]")
            self._client = openai.OpenAI(**self._kwargs)  # type: ignore[attr-defined]
        try:
            resp = self._client.chat.completions.create(**self._params(prompt))
        except Exception as exc:  # noqa: BLE001
            raise BackendError(f"OpenAI completion failed for model {self.model!r}: {exc}") from exc
        return resp.choices[0].message.content or ""

    async def acomplete(self, prompt: str) -> str:
        """Async :meth:`complete` with the native async client."""
        if self._aclient is None:
            openai = require("openai", "kgpath[openai]")
            self._aclient = openai.AsyncOpenAI(**self._kwargs)  # type: ignore[attr-defined]
        try:
            resp = await self._aclient.chat.completions.create(**self._params(prompt))
        except Exception as exc:  # noqa: BLE001
            raise BackendError(f"OpenAI completion failed for model {self.model!r}: {exc}") from exc
        return resp.choices[0].message.content or ""


class ScriptedLLM:
    """A deterministic fake LLM for tests and demos.

    Parameters
    ----------
    responses
        Either a sequence of strings returned in order (cycling is an error: a test that
        asks more than it scripted should fail loudly), or a callable ``prompt -> str``.
    delay
        Seconds to sleep per call (``asyncio.sleep`` in async), to test concurrency.

    Every prompt is recorded in :attr:`prompts`.
    """

    def __init__(
        self,
        responses: Sequence[str] | Callable[[str], str],
        *,
        delay: float = 0.0,
    ) -> None:
        self._fn = responses if callable(responses) else None
        self._queue = list(responses) if not callable(responses) else []
        self.delay = delay
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    def _next(self, prompt: str) -> str:
        with self._lock:
            self.prompts.append(prompt)
            if self._fn is not None:
                return self._fn(prompt)
            if not self._queue:
                raise ConfigError(
                    f"ScriptedLLM ran out of responses after {len(self.prompts) - 1} call(s)"
                )
            return self._queue.pop(0)

    def complete(self, prompt: str) -> str:
        """Return the next scripted response."""
        if self.delay:
            import time

            time.sleep(self.delay)
        return self._next(prompt)

    async def acomplete(self, prompt: str) -> str:
        """Async :meth:`complete` (sleeps with ``asyncio.sleep``)."""
        if self.delay:
            await asyncio.sleep(self.delay)
        return self._next(prompt)


MAX_REPLY_CHARS = 1_000_000
"""Longest LLM reply :func:`parse_json_response` parses (longer: :class:`ParseError`)."""
MAX_JSON_DEPTH = 64
"""Deepest nesting of ``[``/``{`` it accepts; no kgpath prompt asks for more than ~4."""

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def parse_json_response(text: str, *, expect: type | tuple[type, ...] = (dict, list)) -> Any:
    """Parse JSON out of an LLM reply, repairing the usual damage.

    Repairs tried in order: code fences, prose around the first ``{...}``/``[...]``
    block, trailing commas, single quotes. Raises :class:`ParseError` naming the text
    when nothing parses or the top-level type is not ``expect``.

    Work is bounded on any input: a reply longer than :data:`MAX_REPLY_CHARS` or nested
    deeper than :data:`MAX_JSON_DEPTH` raises :class:`ParseError` (never
    ``RecursionError``), so every caller's "a malformed reply never raises anything but
    ParseError" holds.
    """
    if not isinstance(text, str):
        raise ParseError(f"LLM reply must be a string, got {type(text).__name__}")
    if len(text) > MAX_REPLY_CHARS:
        raise ParseError(
            f"LLM reply has {len(text)} characters, more than MAX_REPLY_CHARS "
            f"({MAX_REPLY_CHARS}): {text[:80]!r}..."
        )
    depth = json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise ParseError(
            f"LLM reply nests JSON {depth} levels deep, more than MAX_JSON_DEPTH "
            f"({MAX_JSON_DEPTH}): {text[:80]!r}..."
        )
    candidates: list[str] = []
    m = _FENCE.search(text)
    if m:
        candidates.append(m.group(1))
    candidates.append(text)
    for c in list(candidates):
        for open_, close in (("{", "}"), ("[", "]")):
            i, j = c.find(open_), c.rfind(close)
            if 0 <= i < j:
                candidates.append(c[i : j + 1])
    for c in _expand(candidates):
        try:
            val = json.loads(c)
        except (json.JSONDecodeError, ValueError, RecursionError):
            continue
        if isinstance(val, expect):
            if c != text.strip():
                logger.debug("repaired LLM JSON reply (%d chars)", len(text))
            return val
    snippet = text if len(text) < 200 else text[:200] + "..."
    raise ParseError(f"could not parse JSON of type {expect} from LLM reply: {snippet!r}")


def json_depth(text: str) -> int:
    """Deepest ``[``/``{`` nesting in ``text``; linear, no recursion.

    Brackets inside double-quoted JSON strings are ignored; inside single-quoted ones they
    count (an over-estimate).
    """
    depth = best = 0
    quote = ""
    escaped = False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch == '"':
            quote = ch
        elif ch in "[{":
            depth += 1
            best = max(best, depth)
        elif ch in "]}":
            depth = max(depth - 1, 0)
    return best


def _expand(cands: Iterable[str]) -> Iterable[str]:
    for c in cands:
        c = c.strip()
        yield c
        fixed = _TRAILING_COMMA.sub(r"\1", c)
        yield fixed
        if "'" in fixed and '"' not in fixed:
            yield fixed.replace("'", '"')
