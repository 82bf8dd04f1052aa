"""Stream a large graph into a Cypher database in batches, without a ``KnowledgeGraph``.

:func:`~kgpath.backends.cypher.load_graph` takes a whole in-memory graph and materialises
every row first; at 10^7 edges that is gigabytes of Python dicts before the first write.
:func:`bulk_load` takes *iterables of row batches* instead (each a list of dicts with the
keys :func:`~kgpath.backends.cypher.node_rows` / :func:`~kgpath.backends.cypher.edge_rows`
/ :func:`~kgpath.backends.cypher.passage_rows` produce, any subset of them), so the caller
generates or reads rows batch by batch and the process holds one batch at a time.

Order of work (what makes it fast): the dialect's indexes first (node key, names, passage
key and order), then nodes, then edges (each ``UNWIND`` row finds both endpoints through the
node key index: the dialect's :meth:`~kgpath.backends.cypher.dialects.CypherDialect.id_match`),
then passages. Rows travel as query parameters, never as query text. The node ``ord`` and
edge ``rank`` values are the caller's: give them as a ``KnowledgeGraph`` would (node index,
edge index) when the result must equal an in-memory run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgpath.backends.cypher.drivers import as_cypher_driver
from kgpath.backends.cypher.identifiers import quote_identifier
from kgpath.backends.cypher.schema import CypherSchema, edge_props, node_props, passage_props
from kgpath.errors import ConfigError

__all__ = ["BulkStats", "bulk_load"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BulkStats:
    """What :func:`bulk_load` wrote and how long each phase took (seconds)."""

    nodes: int
    edges: int
    passages: int
    seconds: dict[str, float] = field(default_factory=dict)


def bulk_load(
    driver: Any,
    *,
    nodes: Iterable[Sequence[Mapping[str, Any]]],
    edges: Iterable[Sequence[Mapping[str, Any]]] = (),
    passages: Iterable[Sequence[Mapping[str, Any]]] = (),
    schema: CypherSchema | None = None,
    log_every: float = 30.0,
) -> BulkStats:
    """Write batches of node, edge and passage rows (in that order) into an empty target.

    Parameters
    ----------
    driver
        Anything :func:`~kgpath.backends.cypher.as_cypher_driver` accepts.
    nodes, edges, passages
        Iterables of batches (lists of row dicts). Keys are those of
        :func:`~kgpath.backends.cypher.node_rows` (``id``, ``name``, ``name_key``, ``ord``,
        ...), :func:`~kgpath.backends.cypher.edge_rows` (``source``, ``target``,
        ``relation``, ``rank``, ...) and :func:`~kgpath.backends.cypher.passage_rows`; a key
        the first row of a batch lacks is not written for that batch.
    log_every
        Seconds between progress log lines (``logging.INFO``).

    Raises
    ------
    ConfigError
        If the target already holds ``schema.node_label`` nodes, or an edge batch lacks
        ``source`` / ``target``.

    Examples
    --------
    >>> from kgpath.backends.cypher import EmbeddedCypherDriver  # doctest: +SKIP
    >>> bulk_load(drv, nodes=[[{"id": "a", "ord": 0}, {"id": "b", "ord": 1}]],
    ...           edges=[[{"source": "a", "target": "b", "rank": 0}]])  # doctest: +SKIP
    BulkStats(nodes=2, edges=1, passages=0, ...)
    """
    drv = as_cypher_driver(driver)
    s = schema or CypherSchema()
    dialect = drv.dialect
    t0 = time.perf_counter()
    dialect.create_schema(drv, s)
    if drv.run(f"MATCH (n:{s.n}) RETURN count(n) AS c", {})[0]["c"]:
        raise ConfigError(f"bulk_load needs an empty target; {s.node_label!r} nodes exist")
    secs = {"schema": time.perf_counter() - t0}
    counts = {}
    for what, batches in (("nodes", nodes), ("edges", edges), ("passages", passages)):
        t = time.perf_counter()
        counts[what] = _write(drv, s, what, batches, log_every)
        secs[what] = time.perf_counter() - t
    stats = BulkStats(counts["nodes"], counts["edges"], counts["passages"], secs)
    logger.info("bulk_load: %s", stats)
    return stats


def _write(drv: Any, s: CypherSchema, what: str,
           batches: Iterable[Sequence[Mapping[str, Any]]], log_every: float) -> int:
    done, last, t0 = 0, time.perf_counter(), time.perf_counter()
    queries: dict[tuple[str, ...], str] = {}
    for batch in batches:
        if not batch:
            continue
        keys = tuple(sorted(batch[0]))
        if keys not in queries:
            queries[keys] = _query(drv.dialect, s, what, set(keys))
        drv.run(queries[keys], {"rows": list(batch)})
        done += len(batch)
        if time.perf_counter() - last > log_every:
            last = time.perf_counter()
            logger.info("bulk_load: %d %s in %.0f s", done, what, last - t0)
    return done


def _items(pairs: Iterable[tuple[str, str]], keys: set[str]) -> str:
    return ", ".join(f"{quote_identifier(p)}: row.{quote_identifier(k)}"
                     for k, p in pairs if k in keys)


def _query(dialect: Any, s: CypherSchema, what: str, keys: set[str]) -> str:
    """The ``UNWIND $rows`` statement for one kind of row with these keys."""
    if what == "nodes":
        items = _items(node_props(s), keys) + dialect.key_items(s, "row.`id`")
        return f"UNWIND $rows AS row CREATE (:{s.n} {{{items}}})"
    if what == "passages":
        if s.passage_label is None:
            raise ConfigError("passages given but schema.passage_label is None")
        items = _items(passage_props(s), keys) + dialect.key_items(s, "row.`id`")
        return f"UNWIND $rows AS row CREATE (:{quote_identifier(s.passage_label)} {{{items}}})"
    if not {"source", "target"} <= keys:
        raise ConfigError(f"edge rows need 'source' and 'target', got keys {sorted(keys)}")
    items = _items(edge_props(s)[2:], keys)
    return (f"UNWIND $rows AS row MATCH (a:{s.n}) WHERE {dialect.id_match(s, 'a', 'row.source')} "
            f"MATCH (b:{s.n}) WHERE {dialect.id_match(s, 'b', 'row.target')} "
            f"CREATE (a)-[:{quote_identifier(s.rel_types[0])} {{{items}}}]->(b)")
