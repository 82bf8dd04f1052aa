"""Single-flight: N concurrent first calls do a cold computation once and wait for it.

Every lazy cold path of kgpath (node vectors, passage vectors, the named text sets
methods derive, relation vectors, name indexes, embedding-cache misses) goes through
:class:`SingleFlight`: the first caller of a key runs the computation (the *leader*), the
callers that arrive while it runs (*followers*) wait for it and share its result, in
threads and in asyncio alike, sync and async mixed:

* a sync follower waits on a :class:`threading.Event`;
* an async follower awaits a future of its own event loop, resolved from whichever
  thread or loop the leader ran on, so it never blocks its loop while another thread or
  task computes.

Nothing is cached here: a key is forgotten when its computation ends, so the caller keeps
its own cache and looks there first (the usual pattern: look, else ``do`` a computation
that looks again and fills the cache). A failure reaches every waiter and is not kept:
the next call computes again. A leader cancelled (or interrupted) before it finishes
hands the key over: its followers retry, and one of them leads.

A caller that cannot wait without deadlocking computes itself instead (duplicate work in
that rare interleaving, never a deadlock): a computation that re-enters its own key (also
through :func:`asyncio.to_thread`, which copies the context), and sync code on the thread
whose event loop runs a suspended async leader of the key. A computation may use other
keys freely.

Examples
--------
>>> flight = SingleFlight()
>>> flight.do("answer", lambda: 42)
42
>>> import asyncio
>>> async def compute() -> int:
...     await asyncio.sleep(0)
...     return 7
>>> asyncio.run(flight.ado("seven", compute))
7
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Awaitable, Callable, Hashable, Iterable, Sequence
from typing import Any, TypeVar

from kgpath.errors import KgpathError

__all__ = ["Flight", "SingleFlight"]

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

#: The flights the current call chain leads (copied into ``asyncio.to_thread`` workers).
_LEADING: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "kgpath_singleflight_leading", default=frozenset())


class _Handover(Exception):
    """Raised to followers of a leader that stopped without a result: retry."""


class Flight:
    """One computation in flight: its outcome, reached by thread and asyncio waiters."""

    __slots__ = ("_async", "_error", "_event", "_lock", "_result", "_thread", "_waiters")

    def __init__(self, *, is_async: bool) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._result: Any = None
        self._error: BaseException | None = None
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._thread = threading.get_ident()
        self._async = is_async

    # ------------------------------------------------------------------ leader side
    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        """Publish the outcome and wake every waiter (threads and event loops)."""
        with self._lock:
            self._result, self._error = result, error
            self._event.set()
            waiters, self._waiters = self._waiters, []
        for loop, fut in waiters:
            try:
                loop.call_soon_threadsafe(_wake, fut)
            except RuntimeError:  # that loop is closed: nobody is waiting there any more
                pass

    # ------------------------------------------------------------------ follower side
    def _outcome(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._result

    def can_wait(self) -> bool:
        """Whether a sync caller here can block until this flight ends (no deadlock)."""
        return id(self) not in _LEADING.get() and self._thread != threading.get_ident()

    def can_await(self) -> bool:
        """Whether an async caller here can await this flight (no deadlock)."""
        if id(self) in _LEADING.get():
            return False
        return self._async or self._thread != threading.get_ident()

    def wait(self) -> Any:
        """Block until the leader ends; its result, or its exception raised here."""
        self._event.wait()
        return self._outcome()

    async def wait_async(self) -> Any:
        """Await the leader's end without blocking this event loop."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        with self._lock:
            done = self._event.is_set()
            if not done:
                self._waiters.append((loop, fut))
        if not done:
            await fut
        return self._outcome()


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():  # a cancelled follower has gone
        fut.set_result(None)


class SingleFlight:
    """Keyed once-only computations shared by threads and asyncio tasks.

    See the module docstring. :meth:`do` / :meth:`ado` run one computation per key;
    :meth:`do_many` / :meth:`ado_many` claim many keys at once (texts to embed): the keys
    nobody computes are computed in one batch, the others are waited for.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: dict[Hashable, Flight] = {}

    def in_flight(self, key: Hashable) -> bool:
        """Whether a computation of ``key`` is running now."""
        with self._lock:
            return key in self._flights

    def _claim(self, keys: Sequence[Hashable], *, is_async: bool
               ) -> tuple[Flight, list[Hashable], dict[Hashable, Flight]]:
        """A new flight for the keys nobody computes; the running flights of the others."""
        mine = Flight(is_async=is_async)
        claimed: list[Hashable] = []
        theirs: dict[Hashable, Flight] = {}
        with self._lock:
            for k in dict.fromkeys(keys):
                running = self._flights.get(k)
                if running is None:
                    self._flights[k] = mine
                    claimed.append(k)
                else:
                    theirs[k] = running
        return mine, claimed, theirs

    def _release(self, keys: Sequence[Hashable], flight: Flight, result: Any,
                 error: BaseException | None) -> None:
        with self._lock:
            for k in keys:
                if self._flights.get(k) is flight:
                    del self._flights[k]
        flight.finish(result, error)

    # ------------------------------------------------------------------ one key
    def do(self, key: Hashable, fn: Callable[[], T]) -> T:
        """``fn()`` run once for every concurrent caller of ``key``; its result or error."""
        while True:
            mine, claimed, theirs = self._claim([key], is_async=False)
            if claimed:
                return self._lead(claimed, mine, fn)
            flight = theirs[key]
            if not flight.can_wait():
                return fn()
            try:
                return flight.wait()  # type: ignore[no-any-return]
            except _Handover:
                continue

    async def ado(self, key: Hashable, fn: Callable[[], Awaitable[T]]) -> T:
        """Async :meth:`do`: ``await fn()`` once for every concurrent caller of ``key``."""
        while True:
            mine, claimed, theirs = self._claim([key], is_async=True)
            if claimed:
                return await self._alead(claimed, mine, fn)
            flight = theirs[key]
            if not flight.can_await():
                return await fn()
            try:
                return await flight.wait_async()  # type: ignore[no-any-return]
            except _Handover:
                continue

    def _lead(self, keys: list[Hashable], flight: Flight, fn: Callable[[], T]) -> T:
        token = _LEADING.set(_LEADING.get() | {id(flight)})
        try:
            result = fn()
        except Exception as exc:
            self._release(keys, flight, None, exc)
            raise
        except BaseException:
            self._release(keys, flight, None, _Handover())
            raise
        finally:
            _LEADING.reset(token)
        self._release(keys, flight, result, None)
        return result

    async def _alead(self, keys: list[Hashable], flight: Flight,
                     fn: Callable[[], Awaitable[T]]) -> T:
        token = _LEADING.set(_LEADING.get() | {id(flight)})
        try:
            result = await fn()
        except Exception as exc:
            self._release(keys, flight, None, exc)
            raise
        except BaseException:  # cancelled: a follower takes over
            self._release(keys, flight, None, _Handover())
            raise
        finally:
            _LEADING.reset(token)
        self._release(keys, flight, result, None)
        return result

    # ------------------------------------------------------------------ many keys
    def do_many(self, keys: Sequence[K], fn: Callable[[list[K]], Iterable[Any]]
                ) -> dict[K, Any]:
        """``key -> value`` for every key; ``fn(keys)`` computes the keys nobody computes.

        ``fn`` gets the claimed keys (distinct, in first-seen order) and returns one value
        per key, in that order; keys another caller is computing are waited for.
        """
        out: dict[K, Any] = {}
        todo = list(dict.fromkeys(keys))
        while todo:
            mine, claimed, theirs = self._claim(todo, is_async=False)
            if claimed:
                out.update(self._lead(claimed, mine, functools.partial(_values, fn, claimed)))
            todo = []
            for flight, ks in _by_flight(theirs).items():
                if not flight.can_wait():
                    out.update(_values(fn, ks))
                    continue
                try:
                    got = dict(flight.wait())
                except _Handover:
                    todo += ks
                    continue
                out.update((k, got[k]) for k in ks)  # type: ignore[misc]
        return out

    async def ado_many(self, keys: Sequence[K],
                       fn: Callable[[list[K]], Awaitable[Iterable[Any]]]) -> dict[K, Any]:
        """Async :meth:`do_many` (``fn`` awaited; other callers' keys awaited)."""
        out: dict[K, Any] = {}
        todo = list(dict.fromkeys(keys))
        while todo:
            mine, claimed, theirs = self._claim(todo, is_async=True)
            if claimed:
                compute = functools.partial(_avalues, fn, claimed)
                out.update(await self._alead(claimed, mine, compute))
            todo = []
            for flight, ks in _by_flight(theirs).items():
                if not flight.can_await():
                    out.update(await _avalues(fn, ks))
                    continue
                try:
                    got = dict(await flight.wait_async())
                except _Handover:
                    todo += ks
                    continue
                out.update((k, got[k]) for k in ks)  # type: ignore[misc]
        return out


def _by_flight(theirs: dict[Any, Flight]) -> dict[Flight, list[Any]]:
    grouped: dict[Flight, list[Any]] = {}
    for k, f in theirs.items():
        grouped.setdefault(f, []).append(k)
    return grouped


def _values(fn: Callable[[list[Any]], Iterable[Any]], keys: list[Any]) -> list[tuple[Any, Any]]:
    vals = list(fn(keys))
    if len(vals) != len(keys):
        raise KgpathError(f"computed {len(vals)} values for {len(keys)} keys")
    return list(zip(keys, vals))


async def _avalues(fn: Callable[[list[Any]], Awaitable[Iterable[Any]]],
                   keys: list[Any]) -> list[tuple[Any, Any]]:
    vals = list(await fn(keys))
    if len(vals) != len(keys):
        raise KgpathError(f"computed {len(vals)} values for {len(keys)} keys")
    return list(zip(keys, vals))
