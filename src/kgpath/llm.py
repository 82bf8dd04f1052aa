"""LLM protocol, the one call path every LLM step uses, backends, a scripted fake, JSON repair.

kgpath only needs text completion: ``complete(prompt) -> str`` and its async twin.
Every LLM-using step in kgpath also has an LLM-free path, so no backend is required.

One call path
-------------
Every LLM step (extraction, PathRAG keywords, C2RAG plans, schema decomposition, LLM-guided
traversal, chunk-graph themes, community summaries) calls the model through :func:`call_llm`
/ :func:`acall_llm` only. Any ``Exception`` the model raises (provider
errors, ``RuntimeError``, ``TimeoutError``, ``ConnectionError``, ``asyncio.TimeoutError``)
is retried with exponential backoff and jitter up to :attr:`CallPolicy.max_retries`, each
call bounded by :attr:`CallPolicy.timeout` (sync: a worker thread waited on for at most
``timeout`` seconds; async: ``asyncio.wait_for``), and what still fails becomes one
:class:`~kgpath.errors.BackendError` naming the model and the step. Each step then takes
its documented fallback or lets the typed error through. Set the policy of one model with
:class:`ReliableLLM`.

Framework models
----------------
:func:`as_llm` checks an ``llm`` argument where it is passed in: a kgpath LLM is used as is;
a LlamaIndex ``LLM``, a LangChain ``BaseChatModel`` or ``BaseLLM`` is wrapped by the
function its adapter distribution registers under the entry-point group
:data:`LLM_ADAPTERS` (``llama_index.retrievers.kgpath.LlamaIndexLLM``,
``langchain_kgpath.LangChainLLM``), so the core never imports a framework; anything else
(``llm="gpt"``, a class) is a :class:`~kgpath.errors.ConfigError` naming the value.
:func:`llm_fingerprint` (class + model name + temperature) keys the extraction cache.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import json
import logging
import math
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from kgpath._plugins import load_plugins, model_fingerprint
from kgpath.errors import (
    BackendError,
    ConfigError,
    MissingDependencyError,
    ParseError,
    require,
    short,
)

__all__ = [
    "LLM", "LLM_ADAPTERS", "CallPolicy", "ReliableLLM", "OpenAILLM", "ScriptedLLM",
    "acall_llm", "as_llm", "backoff_delay", "call_llm", "llm_fingerprint", "model_fingerprint",
    "parse_json_response", "json_depth", "MAX_REPLY_CHARS", "MAX_JSON_DEPTH",
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


# ---------------------------------------------------------------------- the call policy
@dataclass(frozen=True, kw_only=True)
class CallPolicy:
    """How :func:`call_llm` calls a model: attempts, the per-call timeout, the backoff.

    Attributes
    ----------
    max_retries
        Extra attempts after a failed call (``0``: one attempt).
    timeout
        Seconds one call may take (``None``: unbounded; default 300, room for a local CPU
        model writing a long extraction). A sync call that overruns is left to finish in
        its daemon worker thread; its reply is discarded.
    backoff
        Base delay in seconds: before retry ``i`` (0-based) kgpath waits a random time in
        ``[d/2, d]`` with ``d = min(max_backoff, backoff * 2**i)`` (exponential, "equal jitter").
    max_backoff
        Upper bound of ``d``.
    """

    max_retries: int = 2
    timeout: float | None = 300.0
    backoff: float = 0.5
    max_backoff: float = 8.0

    def __post_init__(self) -> None:
        r = self.max_retries
        if isinstance(r, bool) or not isinstance(r, int) or r < 0:
            raise ConfigError(f"CallPolicy.max_retries must be an int >= 0, got {short(r)}")
        for label, v, allow_none in (("timeout", self.timeout, True),
                                     ("backoff", self.backoff, False),
                                     ("max_backoff", self.max_backoff, False)):
            if v is None and allow_none:
                continue
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) \
                and (v > 0 if label == "timeout" else v >= 0)
            if not ok:
                raise ConfigError(
                    f"CallPolicy.{label} must be a finite number "
                    f"{'> 0 or None' if allow_none else '>= 0'}, got {short(v)}")


DEFAULT_POLICY = CallPolicy()


def backoff_delay(retry: int, policy: CallPolicy = DEFAULT_POLICY,
                  rng: random.Random | None = None) -> float:
    """Seconds to wait before retry ``retry`` (0-based): uniform in ``[d/2, d]``.

    ``d = min(policy.max_backoff, policy.backoff * 2**retry)`` (exponential backoff with
    jitter, so concurrent callers that failed together do not retry together).
    """
    d = min(policy.max_backoff, policy.backoff * 2.0 ** min(retry, 62))
    return d / 2 + (rng or random).random() * d / 2


class ReliableLLM:
    """A model with its own :class:`CallPolicy` (still a kgpath :class:`LLM`).

    ``ReliableLLM(llm, policy=CallPolicy(timeout=30, max_retries=4))`` (or the fields as
    keywords: ``ReliableLLM(llm, timeout=30, max_retries=4)``) can be passed anywhere an
    ``llm`` is taken; every step then calls ``llm`` with that policy. Its own
    :meth:`complete` goes through :func:`call_llm` too (step ``"completion"``).
    """

    def __init__(self, llm: Any, *, policy: CallPolicy | None = None, **fields: Any) -> None:
        if policy is not None and not isinstance(policy, CallPolicy):
            raise ConfigError(f"policy must be a kgpath CallPolicy, got {short(policy)}")
        known = {f.name for f in dataclasses.fields(CallPolicy)}
        if unknown := sorted(set(fields) - known):
            raise ConfigError(f"ReliableLLM got unknown option(s) {unknown}; CallPolicy has "
                              f"{sorted(known)}")
        self.llm = as_llm(llm)
        self.policy = dataclasses.replace(policy or DEFAULT_POLICY, **fields)

    @property
    def fingerprint(self) -> str:
        """The wrapped model's :func:`llm_fingerprint`."""
        return llm_fingerprint(self.llm)

    def complete(self, prompt: str) -> str:
        """:func:`call_llm` with this policy."""
        return call_llm(self, prompt, step="completion")

    async def acomplete(self, prompt: str) -> str:
        """:func:`acall_llm` with this policy."""
        return await acall_llm(self, prompt, step="completion")


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

    Notes
    -----
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


# ---------------------------------------------------------------------- checking LLMs
#: Entry-point group of the functions that wrap a framework's language model: each takes
#: any object and returns a kgpath :class:`LLM`, or ``None`` when it is not its
#: framework's (declared by ``langchain-kgpath`` and ``llama-index-retrievers-kgpath``).
LLM_ADAPTERS = "kgpath.llm_adapters"

#: (framework, module prefix of its model classes, adapter distribution, its wrapper):
#: to recognise a framework model (whose ``complete`` returns no string) and to say which
#: adapter to install when none wraps it.
_FRAMEWORKS = (
    ("LlamaIndex", "llama_index.core", "llama-index-retrievers-kgpath",
     "llama_index.retrievers.kgpath.LlamaIndexLLM"),
    ("LangChain", "langchain_core", "langchain-kgpath", "langchain_kgpath.LangChainLLM"),
)


@functools.cache
def _llm_adapters() -> tuple[Callable[[Any], Any], ...]:
    """The installed :data:`LLM_ADAPTERS` functions, by entry-point name (loaded once).

    One that fails to load is skipped with a warning, so a broken adapter cannot stop the
    others.
    """
    return load_plugins(entry_points(group=LLM_ADAPTERS), "LLM adapter", logger)


def _framework(obj: Any) -> tuple[str, str, str, str] | None:
    """The framework row of ``obj``'s class (by the modules of its bases), else ``None``."""
    for row in _FRAMEWORKS:
        if any(c.__module__.startswith(row[1]) for c in type(obj).__mro__):
            return row
    return None


def _has_llm_methods(obj: Any) -> bool:
    cls = type(obj)
    return callable(getattr(cls, "complete", None)) and callable(getattr(cls, "acomplete", None))


class _SyncOnlyLLM:
    """A model with ``complete`` only: its async twin runs it in a worker thread."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    @property
    def fingerprint(self) -> str:
        return llm_fingerprint(self.llm)

    def complete(self, prompt: str) -> str:
        return self.llm.complete(prompt)  # type: ignore[no-any-return]

    async def acomplete(self, prompt: str) -> str:
        return await asyncio.to_thread(self.llm.complete, prompt)


def as_llm(obj: Any, argument: str = "llm") -> LLM:
    """The kgpath :class:`LLM` ``obj`` stands for, checked where it is passed in.

    A kgpath LLM (``complete`` and ``acomplete`` returning strings; :class:`ReliableLLM`)
    is returned as is; one with ``complete`` only gets an ``acomplete`` that runs it in a
    worker thread. A framework model is offered to the installed adapters (entry-point
    group :data:`LLM_ADAPTERS`): with ``llama-index-retrievers-kgpath`` a LlamaIndex
    ``LLM`` is wrapped in its ``LlamaIndexLLM``, with ``langchain-kgpath`` a LangChain
    ``BaseChatModel`` / ``BaseLLM`` in its ``LangChainLLM``. Anything else (a string such
    as ``"gpt"``, a class, ``None``) raises :class:`~kgpath.errors.ConfigError` naming
    ``argument`` and the value.
    """
    if obj is None:
        raise ConfigError(f"{argument} must be an LLM, got None")
    if isinstance(obj, (str, bytes)):
        raise ConfigError(
            f"{argument} must be an LLM object, got the string {short(obj)}: pass a model, "
            f"e.g. OpenAILLM({obj!r}) (kgpath[openai]), a LlamaIndex LLM or a LangChain chat "
            f"model")
    if isinstance(obj, type):
        raise ConfigError(f"{argument} must be an LLM instance, got the class {obj.__name__}; "
                          f"pass {obj.__name__}(...) instead")
    row = _framework(obj)
    if row is None and _has_llm_methods(obj):
        return obj  # type: ignore[no-any-return]
    if row is None and callable(getattr(type(obj), "complete", None)) \
            and not hasattr(obj, "acomplete"):
        return _SyncOnlyLLM(obj)
    for adapt in _llm_adapters():
        wrapped = adapt(obj)
        if wrapped is not None:
            return wrapped  # type: ignore[no-any-return]
    if row is not None:
        framework, _, dist, wrapper = row
        raise ConfigError(
            f"{argument} is a {framework} model ({type(obj).__name__}) and no installed kgpath "
            f"adapter wraps it: install (or reinstall) {dist} (pip install {dist}), which "
            f"registers its wrapper under the entry-point group {LLM_ADAPTERS!r}, or pass "
            f"{wrapper}({argument})")
    raise ConfigError(
        f"{argument} must be a kgpath LLM (complete/acomplete returning str, e.g. OpenAILLM, "
        f"ScriptedLLM), a LlamaIndex LLM or a LangChain chat model / LLM, got "
        f"{type(obj).__name__}: {short(obj)}")


def llm_fingerprint(llm: Any) -> str:
    """What identifies a model's replies: class + model name + temperature.

    A ``fingerprint`` attribute (the adapters' wrappers and :class:`ReliableLLM` have one,
    describing the wrapped model) wins; otherwise ``module.Class``, then ``model`` /
    ``model_name`` and ``temperature`` when the object has them. Keys the extraction
    cache, so two models never share replies.
    """
    fp = getattr(llm, "fingerprint", None)
    if isinstance(fp, str) and fp:
        return fp
    return model_fingerprint(llm, getattr(llm, "model", None) or getattr(llm, "model_name", None))


# ---------------------------------------------------------------------- the call path
#: Errors of the caller's own making, passed through unchanged and never retried.
_NOT_RETRIED = (ConfigError, MissingDependencyError)


def _policy_of(llm: Any, policy: CallPolicy | None) -> tuple[Any, CallPolicy]:
    """The model to call and the policy: ``policy``, else a :class:`ReliableLLM`'s own."""
    while isinstance(llm, ReliableLLM):
        policy = policy or llm.policy
        llm = llm.llm
    return llm, policy or DEFAULT_POLICY


def _bounded(fn: Callable[[str], Any], prompt: str, timeout: float | None) -> Any:
    """``fn(prompt)``, waited on for at most ``timeout`` seconds (in a daemon thread)."""
    if timeout is None:
        return fn(prompt)
    box: dict[str, Any] = {}
    done = threading.Event()
    ctx = contextvars.copy_context()  # the caller's context vars (tracing, callbacks)

    def run() -> None:
        try:
            box["value"] = ctx.run(fn, prompt)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="kgpath-llm-call", daemon=True).start()
    if not done.wait(timeout):
        raise TimeoutError(f"no reply within timeout={timeout} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _text(reply: Any, llm: Any, step: str) -> str:
    if isinstance(reply, str):
        return reply
    raise BackendError(
        f"LLM {llm_fingerprint(llm)} returned {type(reply).__name__}, not a string, in "
        f"{step}: {short(reply)} (wrap framework models with kgpath.llm.as_llm)")


def _failure(llm: Any, step: str, errors: list[BaseException]) -> BackendError:
    last = errors[-1]
    return BackendError(
        f"LLM {llm_fingerprint(llm)} failed in {step} after {len(errors)} attempt(s): "
        f"{type(last).__name__}: {str(last)[:200]}")


def call_llm(llm: Any, prompt: str, *, step: str, policy: CallPolicy | None = None) -> str:
    """``llm.complete(prompt)`` through the one call path (see the module docstring).

    Parameters
    ----------
    llm
        A kgpath :class:`LLM` (checked by :func:`as_llm`), possibly a :class:`ReliableLLM`.
    step
        What the call is for (``"PathRAG keywords"``, ...), named in the error.
    policy
        Overrides the model's policy (:class:`ReliableLLM`) and :data:`DEFAULT_POLICY`.

    Raises
    ------
    BackendError
        Every attempt failed or timed out, or the reply is not a string.
    ConfigError, MissingDependencyError
        Raised by the model itself (a mistake of the caller, not retried).
    """
    inner, pol = _policy_of(llm, policy)
    errors: list[BaseException] = []
    for attempt in range(pol.max_retries + 1):
        if attempt:
            time.sleep(backoff_delay(attempt - 1, pol))
        try:
            reply = _bounded(inner.complete, prompt, pol.timeout)
        except _NOT_RETRIED:
            raise
        except Exception as exc:  # noqa: BLE001 - any provider error is retried, then typed
            errors.append(exc)
            logger.debug("LLM call for %s failed (attempt %d): %r", step, attempt + 1, exc)
            continue
        return _text(reply, inner, step)
    raise _failure(inner, step, errors) from errors[-1]


async def acall_llm(llm: Any, prompt: str, *, step: str,
                    policy: CallPolicy | None = None) -> str:
    """Async :func:`call_llm`: ``await llm.acomplete(prompt)`` under ``asyncio.wait_for``."""
    inner, pol = _policy_of(llm, policy)
    errors: list[BaseException] = []
    for attempt in range(pol.max_retries + 1):
        if attempt:
            await asyncio.sleep(backoff_delay(attempt - 1, pol))
        try:
            reply = await asyncio.wait_for(inner.acomplete(prompt), pol.timeout)
        except _NOT_RETRIED:
            raise
        except Exception as exc:  # noqa: BLE001 - asyncio.TimeoutError included
            errors.append(exc)
            logger.debug("LLM call for %s failed (attempt %d): %r", step, attempt + 1, exc)
            continue
        return _text(reply, inner, step)
    raise _failure(inner, step, errors) from errors[-1]


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


#: A double-quoted string, also one cut off by the end of the text; it always matches from a
#: quote without backtracking (linear).
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def json_depth(text: str) -> int:
    """Deepest ``[``/``{`` nesting in ``text``; linear, no recursion.

    Brackets inside double-quoted JSON strings are ignored; inside single-quoted ones they
    count (an over-estimate). Strings and every other character are removed by two regex
    passes first, so the Python loop runs over the brackets only.
    """
    depth = best = 0
    for ch in _NOT_BRACKET.sub("", _JSON_STRING.sub("", text)):
        if ch in "[{":
            depth += 1
            best = max(best, depth)
        else:
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
