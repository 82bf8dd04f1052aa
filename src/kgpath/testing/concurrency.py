"""Concurrency helpers for tests and benchmarks: a counting embedder, calls run at once.

:class:`CountingEmbedder` returns its inner embedder's vectors unchanged (``vectors_of``),
so an index treats it as that model and shares every vector the model made; it records each
requested text with its kind, so a test can compare what concurrent calls embedded with
what the same calls embedded one after another. ``delay`` (seconds) is slept before each
call (``time.sleep`` in a thread, ``asyncio.sleep`` in a task), a stand-in for a real
model's latency that widens the window in which concurrent callers meet a cold path.

:func:`in_threads`, :func:`in_tasks` and :func:`mixed` start calls at the same moment (a
barrier for threads, one ``asyncio.gather`` for tasks, both at once for mixed).

Examples
--------
>>> from kgpath import HashingEmbedder
>>> emb = CountingEmbedder(HashingEmbedder())
>>> emb.embed_passages(["a", "b"]).shape, emb.count("passage"), emb.count()
((2, 256), 2, 2)
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from kgpath.embeddings import HashingEmbedder

__all__ = ["CountingEmbedder", "FailsOnce", "assert_same_work", "in_tasks", "in_threads",
           "mixed"]


class CountingEmbedder:
    """Wrap ``inner``; record ``(kind, text)`` of every text requested (see the module)."""

    def __init__(self, inner: Any, *, delay: float = 0.0) -> None:
        self.inner = inner
        self.delay = delay
        self.texts: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    @property
    def vectors_of(self) -> Any:
        """The wrapped embedder: these are its vectors."""
        return self.inner

    @property
    def dim(self) -> int:
        """The wrapped embedder's dimension."""
        return int(self.inner.dim)

    def __repr__(self) -> str:
        return repr(self.inner)

    def count(self, kind: str | None = None) -> int:
        """Texts requested so far (of ``kind``, ``"query"`` or ``"passage"``, when given)."""
        with self._lock:
            return sum(1 for k, _ in self.texts if kind is None or k == kind)

    def counter(self, kind: str | None = None) -> Counter[str]:
        """How many times each text was requested (of ``kind`` when given)."""
        with self._lock:
            return Counter(t for k, t in self.texts if kind is None or k == kind)

    def reset(self) -> None:
        """Forget the texts counted so far."""
        with self._lock:
            self.texts.clear()

    def _note(self, kind: str, texts: Sequence[str]) -> None:
        with self._lock:
            self.texts.extend((kind, t) for t in texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Counted ``embed_queries``."""
        self._note("query", texts)
        if self.delay:
            time.sleep(self.delay)
        return np.asarray(self.inner.embed_queries(texts))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Counted ``embed_passages``."""
        self._note("passage", texts)
        if self.delay:
            time.sleep(self.delay)
        return np.asarray(self.inner.embed_passages(texts))

    async def aembed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Counted ``aembed_queries``."""
        self._note("query", texts)
        if self.delay:
            await asyncio.sleep(self.delay)
        return np.asarray(await self.inner.aembed_queries(texts))

    async def aembed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Counted ``aembed_passages``."""
        self._note("passage", texts)
        if self.delay:
            await asyncio.sleep(self.delay)
        return np.asarray(await self.inner.aembed_passages(texts))


def assert_same_work(concurrent: CountingEmbedder, sequential: CountingEmbedder, *,
                     extra: float = 0.05) -> None:
    """Concurrent calls embedded what the same calls did one after another.

    Every passage text exactly as often (each cold text once), and at most ``extra`` times
    the sequential count of texts more in all (a query text two callers meet at once).
    """
    assert concurrent.counter("passage") == sequential.counter("passage")
    more = sum((concurrent.counter() - sequential.counter()).values())
    assert more <= extra * sequential.count(), (more, sequential.count())


class FailsOnce(HashingEmbedder):
    """Fails its first passage call (``ConnectionError``) once ``expect`` callers came.

    A caller signals it came with ``came.release()``; later calls embed (``calls`` counts
    them). Set ``expect = 0`` before a call that must not wait.
    """

    def __init__(self, expect: int) -> None:
        super().__init__()
        self.calls = 0
        self.expect = expect
        self.came = threading.Semaphore(0)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Fail the first call (after ``expect`` callers came), then embed."""
        self.calls += 1
        if self.calls == 1:
            for _ in range(self.expect):  # no caller comes after the failure
                assert self.came.acquire(timeout=10)
            threading.Event().wait(0.05)
            raise ConnectionError("model offline")
        return super().embed_passages(texts)


def in_threads(fns: Sequence[Callable[[], Any]]) -> list[Any]:
    """Call every function at once, each in its own thread (a barrier); results in order."""
    if not fns:
        return []
    barrier = threading.Barrier(len(fns))

    def call(fn: Callable[[], Any]) -> Any:
        barrier.wait()
        return fn()
    with ThreadPoolExecutor(len(fns)) as ex:
        return list(ex.map(call, fns))


def in_tasks(coros: Sequence[Callable[[], Awaitable[Any]]]) -> list[Any]:
    """Await every coroutine function at once on a new event loop; results in order."""
    async def main() -> list[Any]:
        return list(await asyncio.gather(*[c() for c in coros]))
    return asyncio.run(main())


def mixed(fns: Sequence[Callable[[], Any]],
          coros: Sequence[Callable[[], Awaitable[Any]]]) -> list[Any]:
    """:func:`in_threads` and :func:`in_tasks` (on a loop in another thread) at once.

    Results: the functions', then the coroutines', each in order. An exception of either
    side is raised after both finished.
    """
    out: list[Any] = []
    error: list[BaseException] = []

    def loop() -> None:
        try:
            out.extend(in_tasks(coros))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            error.append(exc)
    t = threading.Thread(target=loop)
    t.start()
    try:
        first = in_threads(fns)
    finally:
        t.join()
    if error:
        raise error[0]
    return first + out
