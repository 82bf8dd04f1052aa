"""Cypher drivers: one parameterised ``run(query, parameters) -> rows`` per engine.

:class:`CypherDriver` is all the Cypher backend needs from a database: a
:class:`~kgpath.backends.cypher.dialects.CypherDialect` and parameterised queries returning
rows as dicts. Two ship: :class:`EmbeddedCypherDriver` (a ``ladybug`` / ``kuzu`` embedded
database in a local directory) and :class:`Neo4jDriver` (a ``neo4j`` ``Driver`` or
``Session``). :func:`as_cypher_driver` wraps engine objects; another engine plugs in with
:func:`register_driver`. Every driver raises :class:`~kgpath.errors.BackendError` when the
database is unreachable, closed, or rejects a query.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from kgpath.backends.cypher.dialects import CypherDialect, KuzuDialect, Neo4jDialect
from kgpath.errors import BackendError, ConfigError, KgpathError, MissingDependencyError

__all__ = [
    "CypherDriver",
    "EmbeddedCypherDriver",
    "Neo4jDriver",
    "as_cypher_driver",
    "register_driver",
]

logger = logging.getLogger(__name__)


@runtime_checkable
class CypherDriver(Protocol):
    """What the Cypher backend needs from a database: a dialect and parameterised queries."""

    dialect: CypherDialect

    def run(self, query: str, parameters: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Execute ``query`` with ``parameters``; return the rows as dicts keyed by alias.

        Implementations raise :class:`~kgpath.errors.BackendError` when the database is
        unreachable, closed, or rejects the query.
        """
        ...


class EmbeddedCypherDriver:
    """A ``ladybug`` / ``kuzu`` embedded database connection as a :class:`CypherDriver`.

    Parameters
    ----------
    connection
        A ``ladybug.Connection`` or ``kuzu.Connection``.
    database
        The ``Database`` object, when this driver owns it (closed by :meth:`close`).

    Notes
    -----
    Use :meth:`open` to create or open a database directory. Ladybug and Kùzu cannot be
    imported into the same process (their native bindings register the same class names);
    install and use one of them.
    """

    def __init__(self, connection: Any, *, database: Any = None, engine: str | None = None) -> None:
        self.connection = connection
        self.database = database
        self.engine = engine or type(connection).__module__.split(".")[0]
        self.dialect: CypherDialect = KuzuDialect()
        #: The engine reads files on this machine (``COPY FROM`` bulk loading).
        self.reads_local_files = True
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, engine: str | None = None, read_only: bool = False
    ) -> EmbeddedCypherDriver:
        """Open (or create) an embedded database at ``path``.

        ``engine`` is ``"ladybug"`` or ``"kuzu"``; by default Ladybug (maintained) is tried
        first, then Kùzu. Raises :class:`MissingDependencyError` if neither is installed and
        :class:`BackendError` if the directory cannot be opened.
        """
        mod = _import_engine(engine)
        try:
            db = mod.Database(os.fspath(path), read_only=read_only)
            conn = mod.Connection(db)
        except Exception as exc:  # noqa: BLE001 - engine raises bare RuntimeError
            raise BackendError(
                f"cannot open embedded graph database ({mod.__name__}) at {os.fspath(path)!r}: "
                f"{exc}"
            ) from exc
        return cls(conn, database=db, engine=mod.__name__)

    def run(self, query: str, parameters: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Execute one parameterised statement and return its rows."""
        if self._closed:
            raise BackendError(f"the embedded {self.engine} database connection is closed")
        t0 = time.perf_counter()
        with self._lock:
            try:
                res = self.connection.execute(query, dict(parameters or {}))
                if isinstance(res, list):  # several statements: not produced by kgpath
                    res = res[-1]
                cols = res.get_column_names()
                rows = [dict(zip(cols, r)) for r in res.get_all()]
            except Exception as exc:  # noqa: BLE001 - engine raises bare RuntimeError
                raise BackendError(
                    f"embedded {self.engine} query failed: {exc} (query: {query[:200]!r})"
                ) from exc
        logger.debug(
            "%s query %.1f ms, %d rows, params %s: %s",
            self.engine, 1000 * (time.perf_counter() - t0), len(rows),
            sorted(parameters or {}), query[:160],
        )
        return rows

    def close(self) -> None:
        """Close the connection (and the database if this driver opened it)."""
        self._closed = True
        for obj in (self.connection, self.database):
            close = getattr(obj, "close", None)
            if obj is not None and close is not None:
                try:
                    close()
                except Exception:  # noqa: BLE001 - closing twice is harmless
                    logger.debug("closing %r failed", obj, exc_info=True)

    def __enter__(self) -> EmbeddedCypherDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"EmbeddedCypherDriver(engine={self.engine!r}, {state})"


class Neo4jDriver:
    """A ``neo4j`` ``Driver`` or ``Session`` as a :class:`CypherDriver`.

    With a ``Driver``, each query runs in its own auto-commit session (no retry loop, so an
    unreachable server fails at once with :class:`BackendError`).
    """

    def __init__(self, client: Any, *, database: str | None = None) -> None:
        self.client = client
        self.database = database
        self.dialect: CypherDialect = Neo4jDialect()

    def run(self, query: str, parameters: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Execute one parameterised statement and return its rows."""
        params = dict(parameters or {})
        try:
            if hasattr(self.client, "session") and not hasattr(self.client, "run"):
                kw = {"database": self.database} if self.database else {}
                with self.client.session(**kw) as session:
                    return [dict(r.data()) for r in session.run(query, params)]
            return [dict(r.data()) for r in self.client.run(query, params)]
        except KgpathError:
            raise
        except Exception as exc:  # noqa: BLE001 - neo4j raises many driver errors
            raise BackendError(
                f"Neo4j query failed ({type(exc).__name__}): {exc} (query: {query[:200]!r})"
            ) from exc

    def close(self) -> None:
        """Close the wrapped client."""
        close = getattr(self.client, "close", None)
        if close is not None:
            close()


#: Recognisers tried by :func:`as_cypher_driver`, in order (see :func:`register_driver`).
_RECOGNISERS: list[Callable[[Any], CypherDriver | None]] = []


def register_driver(recognise: Callable[[Any], CypherDriver | None]) -> None:
    """Teach :func:`as_cypher_driver` another engine's client objects.

    ``recognise(obj)`` returns a :class:`CypherDriver` wrapping ``obj``, or ``None`` when
    ``obj`` is not that engine's. A new dialect module registers one at import.
    """
    _RECOGNISERS.append(recognise)


def _root(obj: Any) -> str:
    return type(obj).__module__.split(".")[0]


def _embedded(obj: Any) -> CypherDriver | None:
    root = _root(obj)
    if root in ("ladybug", "kuzu", "real_ladybug"):
        if type(obj).__name__ == "Database":
            return EmbeddedCypherDriver(
                __import__(root).Connection(obj), database=None, engine=root
            )
        return EmbeddedCypherDriver(obj, engine=root)
    conn = getattr(obj, "connection", None)
    if conn is not None and _root(conn) in ("ladybug", "kuzu"):
        return EmbeddedCypherDriver(conn)  # a LlamaIndex Ladybug/Kuzu property graph store
    return None


def _neo4j(obj: Any) -> CypherDriver | None:
    if _root(obj) == "neo4j":
        return Neo4jDriver(obj)
    client = getattr(obj, "client", None)
    if client is not None and _root(client) == "neo4j":  # a LlamaIndex Neo4j store
        return Neo4jDriver(client, database=getattr(obj, "_database", None))
    return None


register_driver(_embedded)
register_driver(_neo4j)


def as_cypher_driver(obj: Any) -> CypherDriver:
    """Wrap a database handle as a :class:`CypherDriver`.

    Accepts a :class:`CypherDriver`; a ``ladybug``/``kuzu`` ``Connection`` or ``Database``;
    a LlamaIndex ``LadybugPropertyGraphStore``/``KuzuPropertyGraphStore`` (its ``connection``);
    a ``neo4j`` ``Driver``/``Session``; a LlamaIndex ``Neo4jPropertyGraphStore`` (its
    ``client``); or whatever a recogniser added by :func:`register_driver` accepts.
    """
    if isinstance(obj, (EmbeddedCypherDriver, Neo4jDriver)) or (
        isinstance(obj, CypherDriver) and isinstance(getattr(obj, "dialect", None), CypherDialect)
    ):
        return obj
    for recognise in _RECOGNISERS:
        drv = recognise(obj)
        if drv is not None:
            return drv
    raise ConfigError(
        f"cannot use {type(obj).__name__!r} as a Cypher database: pass a ladybug/kuzu "
        "Connection, a neo4j Driver/Session, or an object implementing "
        "kgpath.backends.cypher.CypherDriver"
    )


def _import_engine(engine: str | None) -> Any:
    import importlib
    import importlib.util

    # auto: an engine this process already loaded comes first (the other cannot load now)
    names = [engine] if engine else sorted(["ladybug", "kuzu"], key=lambda n: n not in sys.modules)
    for name in names:
        if name not in ("ladybug", "kuzu"):
            raise ConfigError(f"engine must be 'ladybug' or 'kuzu', got {engine!r}")
        if importlib.util.find_spec(name) is None:
            continue
        other = "kuzu" if name == "ladybug" else "ladybug"
        if other in sys.modules and name not in sys.modules:
            # refuse before importing: a failed import of the second engine leaves native
            # state behind that makes the first one crash later in the same process
            raise BackendError(
                f"the embedded engine {name!r} cannot be loaded: {other!r} is already loaded "
                "in this process, and ladybug and kuzu cannot share a process - use one of them"
            )
        try:
            return importlib.import_module(name)
        except ImportError as exc:
            # both engines bind C++ classes of the same names: one process loads one of them
            raise BackendError(
                f"the embedded engine {name!r} is installed but cannot be imported here "
                f"({exc}); ladybug and kuzu cannot share a process - use one of them"
            ) from exc
    raise MissingDependencyError(
        "an embedded Cypher engine is needed; run: pip install 'kgpath[graphdb]' "
        "(installs ladybug; 'kuzu' also works)"
    )
