"""kgpath._singleflight: one computation per key for concurrent threads and asyncio tasks."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from kgpath._singleflight import SingleFlight


class _Slow:
    """A computation that counts its runs and lasts until every thread caller has come.

    ``arrived`` counts thread callers about to call; a sync run waits for ``expect`` of them
    (then ``delay`` more), so no caller can come after it ended, however loaded the machine.
    """

    def __init__(self, value: object = 42, delay: float = 0.05, fail: int = 0,
                 expect: int = 0) -> None:
        self.value, self.delay, self.fail, self.expect = value, delay, fail, expect
        self.runs = 0
        self.came = 0
        self._lock = threading.Lock()

    def arrived(self) -> None:
        with self._lock:
            self.came += 1

    def _all_came(self, n: int) -> bool:
        return n > 1 or self.came >= self.expect

    def _start(self) -> int:
        with self._lock:
            self.runs += 1
            return self.runs

    def __call__(self) -> object:
        n = self._start()
        while not self._all_came(n):
            time.sleep(0.002)
        time.sleep(self.delay)
        if n <= self.fail:
            raise RuntimeError(f"failure {n}")
        return self.value

    async def run(self) -> object:
        n = self._start()
        while not self._all_came(n):
            await asyncio.sleep(0.002)
        await asyncio.sleep(self.delay)
        if n <= self.fail:
            raise RuntimeError(f"failure {n}")
        return self.value


def _threads(n: int, fn, work: _Slow | None = None):
    barrier = threading.Barrier(n)

    def call(_):
        barrier.wait()
        if work is not None:
            work.arrived()
        return fn()
    with ThreadPoolExecutor(n) as ex:
        return list(ex.map(call, range(n)))


def test_fifty_threads_compute_once():
    flight, work = SingleFlight(), _Slow(expect=50)
    assert _threads(50, lambda: flight.do("k", work), work) == [42] * 50
    assert work.runs == 1 and not flight.in_flight("k")
    assert flight.do("k", work) == 42 and work.runs == 2  # nothing is cached


def test_hundred_tasks_compute_once():
    flight, work = SingleFlight(), _Slow()

    async def main():
        return await asyncio.gather(*[flight.ado("k", work.run) for _ in range(100)])
    assert asyncio.run(main()) == [42] * 100 and work.runs == 1


def test_sync_and_async_callers_share_one_computation():
    flight, work = SingleFlight(), _Slow(delay=0.2, expect=25)
    got: list[object] = []

    def loop_thread():
        async def main():
            return await asyncio.gather(*[flight.ado("k", work.run) for _ in range(25)])
        got.extend(asyncio.run(main()))
    t = threading.Thread(target=loop_thread)
    t.start()
    got.extend(_threads(25, lambda: flight.do("k", work), work))
    t.join()
    assert got == [42] * 50 and work.runs == 1


def test_a_failure_reaches_every_waiter_and_is_not_kept():
    flight, work = SingleFlight(), _Slow(fail=1, expect=20)
    errors: list[str] = []

    def call():
        try:
            return flight.do("k", work)
        except RuntimeError as exc:
            errors.append(str(exc))
            return None
    assert _threads(20, call, work) == [None] * 20
    assert errors == ["failure 1"] * 20 and work.runs == 1
    assert flight.do("k", work) == 42 and work.runs == 2  # the next call computes again


def test_a_failure_reaches_every_async_waiter():
    flight, work = SingleFlight(), _Slow(fail=1)

    async def main():
        return await asyncio.gather(*[flight.ado("k", work.run) for _ in range(30)],
                                    return_exceptions=True)
    got = asyncio.run(main())
    assert [str(e) for e in got] == ["failure 1"] * 30 and work.runs == 1
    assert asyncio.run(flight.ado("k", work.run)) == 42


def test_a_cancelled_leader_hands_over_to_a_follower():
    flight, work = SingleFlight(), _Slow(delay=0.05)

    async def main():
        leader = asyncio.create_task(flight.ado("k", work.run))
        await asyncio.sleep(0.01)
        followers = [asyncio.create_task(flight.ado("k", work.run)) for _ in range(5)]
        await asyncio.sleep(0.01)
        leader.cancel()
        return await asyncio.gather(*followers), leader.cancelled()
    values, cancelled = asyncio.run(main())
    assert cancelled and values == [42] * 5 and work.runs == 2


def test_reentering_the_same_key_does_not_deadlock():
    flight = SingleFlight()
    assert flight.do("k", lambda: flight.do("k", lambda: 1) + 1) == 2

    async def inner() -> int:
        return await flight.ado("k", _one) + 1

    async def through_a_thread() -> int:
        return await asyncio.to_thread(flight.do, "k", lambda: 1) + 1
    assert asyncio.run(flight.ado("k", inner)) == 2
    assert asyncio.run(flight.ado("k", through_a_thread)) == 2


async def _one() -> int:
    return 1


def test_a_computation_may_use_other_keys():
    flight = SingleFlight()
    out = _threads(10, lambda: flight.do("a", lambda: flight.do("b", lambda: "b") + "a"))
    assert out == ["ba"] * 10


def test_sync_code_on_the_loop_of_a_suspended_async_leader_does_not_deadlock():
    flight = SingleFlight()

    async def main():
        started = asyncio.Event()

        async def slow() -> str:
            started.set()
            await asyncio.sleep(0.05)
            return "async"
        leader = asyncio.create_task(flight.ado("k", slow))
        await started.wait()
        sync = flight.do("k", lambda: "sync")  # would block the loop the leader needs
        return sync, await leader
    assert asyncio.run(main()) == ("sync", "async")


def test_many_keys_each_computed_once():
    flight = SingleFlight()
    seen: list[str] = []
    lock = threading.Lock()

    def embed(keys):
        with lock:
            seen.extend(keys)
        time.sleep(0.02)
        return [k.upper() for k in keys]
    sets = [["a", "b", "c"], ["b", "c", "d"], ["d", "a"], ["c", "c", "e"]] * 10
    barrier = threading.Barrier(len(sets))

    def call(keys):
        barrier.wait()
        return flight.do_many(keys, embed)
    with ThreadPoolExecutor(len(sets)) as ex:
        got = list(ex.map(call, sets))
    assert got == [{k: k.upper() for k in keys} for keys in sets]
    assert sorted(seen) == ["a", "b", "c", "d", "e"]


def test_many_keys_async_and_failure():
    flight = SingleFlight()
    calls: list[list[str]] = []

    async def embed(keys):
        calls.append(list(keys))
        await asyncio.sleep(0.02)
        if "x" in keys:
            raise ValueError("no x")
        return [k * 2 for k in keys]

    async def main():
        return await asyncio.gather(*[flight.ado_many(["p", "q"], embed) for _ in range(20)])
    assert asyncio.run(main()) == [{"p": "pp", "q": "qq"}] * 20 and calls == [["p", "q"]]

    async def failing():
        return await asyncio.gather(*[flight.ado_many(["x", "y"], embed) for _ in range(5)],
                                    return_exceptions=True)
    assert [str(e) for e in asyncio.run(failing())] == ["no x"] * 5
    with pytest.raises(ValueError, match="no x"):
        flight.do_many(["x"], lambda ks: (_ for _ in ()).throw(ValueError("no x")))
