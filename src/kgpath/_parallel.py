"""Bounded concurrent map for sync and async backends (shared by extraction and retrieval).

Schema-guided retrieval runs its sub-questions concurrently (pattern step 6,
*parallel_map(plan.sub_questions, ...)*); schema-bounded extraction runs passages the same
way. Both use these two helpers, which live below ``build`` and ``methods`` so that neither
layer imports the other.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from kgpath.errors import ConfigError

__all__ = ["aparallel_map", "parallel_map"]

T = TypeVar("T")
R = TypeVar("R")


def parallel_map(
    fn: Callable[[T], R],
    items: Sequence[T],
    *,
    max_workers: int = 4,
    desc: str | None = None,
    progress_threshold: int = 16,
) -> list[tuple[R, float, float]]:
    """Apply ``fn`` to every item on a bounded thread pool (pattern step 6, sync backends).

    Returns ``(result, start, end)`` per item in input order, times from
    ``time.perf_counter``. One item (or ``max_workers == 1``) runs inline without a thread.
    The first exception raised by ``fn`` propagates. With ``desc``, a progress bar is shown
    when there are more than ``progress_threshold`` items (for long LLM steps).
    """
    from kgpath._progress import progress

    if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
        raise ConfigError(f"max_workers must be an int >= 1, got {max_workers!r}")

    def timed(x: T) -> tuple[R, float, float]:
        t0 = time.perf_counter()
        r = fn(x)
        return r, t0, time.perf_counter()

    def bar(results: Iterable[tuple[R, float, float]]) -> list[tuple[R, float, float]]:
        return list(progress(results, total=len(items), desc=desc or "", enabled=desc is not None,
                             threshold=progress_threshold))

    if len(items) <= 1 or max_workers == 1:
        return bar(timed(x) for x in items)
    with ThreadPoolExecutor(max_workers=min(max_workers, len(items))) as pool:
        return bar(pool.map(timed, items))


async def aparallel_map(
    fn: Callable[[T], Awaitable[R]], items: Sequence[T], *, limit: int = 4
) -> list[tuple[R, float, float]]:
    """Await ``fn`` on every item concurrently, at most ``limit`` at a time (async backends).

    Returns ``(result, start, end)`` per item in input order (``asyncio.gather``).
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ConfigError(f"limit must be an int >= 1, got {limit!r}")
    sem = asyncio.Semaphore(limit)

    async def timed(x: T) -> tuple[R, float, float]:
        async with sem:
            t0 = time.perf_counter()
            r = await fn(x)
            return r, t0, time.perf_counter()

    return list(await asyncio.gather(*(timed(x) for x in items)))
