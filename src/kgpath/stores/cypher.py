"""Path-Constrained Retrieval pushed down into a Cypher graph database.

The in-memory :class:`~kgpath.methods.pcr.PathConstrainedRetriever` keeps the whole graph in
CSR arrays. :class:`CypherPCR` runs the same method against a graph that lives in a database
and loads only what a query touches:

1. **Reachability (Eq. 1 of the PCR paper)** - ``C_reachable = {v : path(a, v) exists,
   length <= d_max}`` - is one variable-length shortest-path match with a depth bound,
   executed by the database (:func:`reachable_hops`). It returns each reachable node with its
   hop distance; nothing else crosses the wire.
2. The candidates' rows (name, text, stored embedding) are fetched by id (:func:`fetch_nodes`).
3. **Constrained search (Eq. 2)** - ``argmax_{v in C_reachable, |R| = k} sim(q, v)`` - is
   the same float32 dot product and the same :func:`~kgpath.index.vector.top_k` as in memory.
4. **Paths** for the top-k hits are rebuilt with **one-hop neighbourhood expansion**
   (:func:`expand_one_hop`): one query per hop level for all hits at once.

Exact agreement with the in-memory retriever
--------------------------------------------
The in-memory BFS keeps each level sorted by node index and records, for every newly reached
node, the first edge met when it scans the previous level in that order (for
``direction="both"``: all forward edges before all reversed ones). Hence the rule reproduced
here, which does not depend on the order rows come back from the database:

* **candidate order** (and so the tie-break between equal scores) is ``(hops, node order)``;
* the **parent** of a node at ``h`` hops is, among its neighbours at ``h - 1`` hops, the one
  reached through a forward edge before a reversed one, then the smallest node order, then the
  smallest edge order.

"Node order" and "edge order" are the ``order_property`` / ``edge_order_property`` of the
:class:`CypherSchema`; :func:`load_graph` writes them as the node and edge indices of the
source :class:`~kgpath.graph.KnowledgeGraph`, so hits, scores, hops *and* paths equal the
in-memory result. On a database written by someone else, set them to ``None``: ties then
break by node id and by ``(relation type, relation, edge text, source id, target id)``, which
is deterministic; hits, scores and hop counts are still those of the in-memory method on the
same graph, and so are the paths when the in-memory graph lists its nodes by id and its
edges in that order (as the LlamaIndex property-graph converter does).

Safety
------
Every value (node ids, names, id lists, paging offsets) is passed as a query parameter.
Labels, relationship types and property names cannot be parameters in Cypher, so they are
validated against ``[A-Za-z_][A-Za-z0-9_]*`` and back-quoted; depth bounds are validated
``int``s. A hostile node name is therefore data, never query text.

Targeting Neo4j or another server-based store
---------------------------------------------
All database access goes through the small :class:`CypherDriver` protocol (``dialect`` plus
``run(query, parameters) -> list[dict]``). Two implementations ship:

* :class:`EmbeddedCypherDriver` wraps a ``ladybug`` (or ``kuzu``) ``Connection``: an embedded
  database in a local directory, used by the tests and the benchmark;
* :class:`Neo4jDriver` wraps a ``neo4j`` ``Driver`` or ``Session``. It speaks the same queries
  except for the variable-length shortest-path pattern, which :class:`Neo4jDialect` writes with
  the GQL path selector (``ANY SHORTEST (a)-[:R]->{1,d}(b)``, Neo4j >= 5.21). Example::

      import neo4j
      from kgpath.stores import CypherPCR, Neo4jDriver, load_graph

      drv = Neo4jDriver(neo4j.GraphDatabase.driver(uri, auth=(user, password)))
      schema = load_graph(drv, graph_index)          # once; or point a schema at your data
      pcr = CypherPCR(drv, embedder=embedder, schema=schema)
      pcr.retrieve("question", anchor="node-id")

  The Neo4j path is exercised here only against a recording fake and a refused connection (no
  server can run in this environment). For another engine (Memgraph, FalkorDB, ...), subclass
  :class:`CypherDialect` and override :meth:`CypherDialect.shortest_hops_query` (and, if the
  function names differ, :attr:`~CypherDialect.rel_type_function` /
  :attr:`~CypherDialect.lower_function`).

The database holds the graph; the client holds only the reachable set of one query, so graphs
larger than one machine's memory work as long as a single anchor's region fits.

Complexity: the reachability query is a breadth-first search inside the engine (one round trip
per 30 hops on Kùzu/Ladybug, whose variable-length bound is capped at 30); fetching and
scoring are O(|C_reachable| · d); paths cost ``max hops`` one-hop queries.
"""

from __future__ import annotations

import asyncio
import csv
import dataclasses
import json
import logging
import math
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from kgpath._config import with_overrides
from kgpath.embeddings import Embedder, default_embedder
from kgpath.errors import (
    BackendError,
    ConfigError,
    EmbeddingError,
    EmptyGraphError,
    KgpathError,
    MissingDependencyError,
    NodeNotFoundError,
)
from kgpath.graph import Direction, Edge, KnowledgeGraph, Node
from kgpath.index.graph_index import GraphIndex, check_query
from kgpath.index.vector import top_k
from kgpath.methods.pcr import PCRConfig, PCRHit, PCRResult

__all__ = [
    "CypherSchema",
    "CypherDialect",
    "KuzuDialect",
    "Neo4jDialect",
    "CypherDriver",
    "EmbeddedCypherDriver",
    "Neo4jDriver",
    "as_cypher_driver",
    "load_graph",
    "reachable_hops",
    "fetch_nodes",
    "expand_one_hop",
    "bfs_order",
    "Step",
    "CypherPCR",
    "quote_identifier",
]

logger = logging.getLogger(__name__)

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def quote_identifier(name: object, what: str = "identifier") -> str:
    """Back-quote a label / relationship type / property name after validating it.

    Only ``[A-Za-z_][A-Za-z0-9_]*`` is accepted, so the quoted form can never close the
    quotes or inject query text. Raises :class:`ConfigError` naming the bad value.
    """
    if not isinstance(name, str) or not _IDENT.match(name):
        raise ConfigError(
            f"{what} must match [A-Za-z_][A-Za-z0-9_]* to be used in a Cypher query, "
            f"got {name!r}"
        )
    return f"`{name}`"


def _norm_name(s: str) -> str:
    """Same normalisation as :meth:`KnowledgeGraph.find_by_name`."""
    return " ".join(str(s).lower().split())


# ---------------------------------------------------------------------- schema
@dataclass(frozen=True, kw_only=True)
class CypherSchema:
    """Where kgpath's node and edge fields live in the database.

    Every ``*_property`` may be ``None`` when the database has no such property (the field
    then takes its default: empty text, no type, no metadata, ...). The defaults are what
    :func:`load_graph` writes. :meth:`llama_index_ladybug` describes the tables of
    ``llama-index-graph-stores-ladybug`` (unstructured mode).

    Attributes
    ----------
    node_label, rel_types
        Node label (Kùzu/Ladybug: node table) and relationship types followed by PCR.
    order_property, edge_order_property
        Integer node / edge order used for tie-breaking (module docstring); ``None`` falls
        back to node id / ``(relation type, relation, text, source id, target id)``.
    name_key_property
        Pre-normalised name (lower case, single spaces) for anchor lookup by name; ``None``
        compares ``lower(trim(name))`` instead (runs of inner spaces then must match).
    metadata_property, provenance_property, edge_*_property
        JSON text (metadata as an object, provenance as a list); a plain string provenance
        value is read as one passage id.
    """

    node_label: str = "KgNode"
    rel_types: tuple[str, ...] = ("KG_EDGE",)
    id_property: str = "id"
    name_property: str | None = "name"
    name_key_property: str | None = "name_key"
    text_property: str | None = "text"
    type_property: str | None = "type"
    metadata_property: str | None = "metadata"
    provenance_property: str | None = "provenance"
    embedding_property: str | None = "embedding"
    order_property: str | None = "idx"
    relation_property: str | None = "relation"
    edge_text_property: str | None = "text"
    edge_type_property: str | None = "type"
    edge_weight_property: str | None = "weight"
    edge_provenance_property: str | None = "provenance"
    edge_metadata_property: str | None = "metadata"
    edge_order_property: str | None = "rank"

    def __post_init__(self) -> None:
        if isinstance(self.rel_types, str):
            object.__setattr__(self, "rel_types", (self.rel_types,))
        if not self.rel_types:
            raise ConfigError("rel_types must name at least one relationship type, got ()")
        quote_identifier(self.node_label, "node_label")
        for r in self.rel_types:
            quote_identifier(r, "relationship type")
        for f in dataclasses.fields(self):
            if f.name.endswith("_property"):
                value = getattr(self, f.name)
                if f.name == "id_property" or value is not None:
                    quote_identifier(value, f.name)

    @classmethod
    def llama_index_ladybug(cls) -> CypherSchema:
        """Tables of ``LadybugPropertyGraphStore`` / ``KuzuPropertyGraphStore`` (unstructured).

        Entities live in ``Entity(id, name, label, triplet_source_id, ...)`` and relations in
        ``LINKS(label, triplet_source_id)``. There is no text, embedding or order column, so
        nodes are embedded from their names and ties break by id.
        """
        return cls(
            node_label="Entity",
            rel_types=("LINKS",),
            name_key_property=None,
            text_property=None,
            type_property="label",
            metadata_property=None,
            provenance_property="triplet_source_id",
            embedding_property=None,
            order_property=None,
            relation_property="label",
            edge_text_property=None,
            edge_type_property=None,
            edge_weight_property=None,
            edge_provenance_property="triplet_source_id",
            edge_metadata_property=None,
            edge_order_property=None,
        )

    # -- query fragments (all identifiers validated in __post_init__)
    @property
    def n(self) -> str:
        """Quoted node label."""
        return quote_identifier(self.node_label)

    @property
    def rels(self) -> str:
        """Quoted relationship type disjunction, e.g. ``KG_EDGE`` or ``A`|`B``."""
        return "|".join(quote_identifier(r) for r in self.rel_types)

    def prop(self, var: str, name: str | None) -> str:
        """``var.`name```."""
        return f"{var}.{quote_identifier(name)}"

    def node_return(self, var: str, *, embedding: bool = True) -> str:
        """RETURN items for a node variable, aliased to kgpath field names."""
        items = [f"{self.prop(var, self.id_property)} AS id"]
        for alias, p in (
            ("name", self.name_property),
            ("text", self.text_property),
            ("type", self.type_property),
            ("metadata", self.metadata_property),
            ("provenance", self.provenance_property),
            ("ord", self.order_property),
        ):
            if p is not None:
                items.append(f"{self.prop(var, p)} AS {alias}")
        if embedding and self.embedding_property is not None:
            items.append(f"{self.prop(var, self.embedding_property)} AS embedding")
        return ", ".join(items)

    def edge_return(self, var: str, dialect: CypherDialect) -> str:
        """RETURN items for a relationship variable."""
        items = [f"{dialect.rel_type_function}({var}) AS rel_type"]
        for alias, p in (
            ("relation", self.relation_property),
            ("etext", self.edge_text_property),
            ("etype", self.edge_type_property),
            ("weight", self.edge_weight_property),
            ("eprov", self.edge_provenance_property),
            ("emeta", self.edge_metadata_property),
            ("rank", self.edge_order_property),
        ):
            if p is not None:
                items.append(f"{self.prop(var, p)} AS {alias}")
        return ", ".join(items)


# ---------------------------------------------------------------------- dialects
class CypherDialect(ABC):
    """The few places where Cypher engines disagree, behind one abstract hook."""

    name: str = "cypher"
    #: Largest depth bound one variable-length match may use (``None`` = unbounded).
    max_hops_per_query: int | None = None
    #: Function returning a relationship's type.
    rel_type_function: str = "type"
    #: Lower-case string function.
    lower_function: str = "toLower"

    @abstractmethod
    def shortest_hops_query(
        self, schema: CypherSchema, direction: Direction, max_hops: int | None
    ) -> str:
        """Query text for Eq. (1) with hop counts, from several sources at once.

        Parameter ``$sources`` is a list of node ids; each row has ``id`` (a node reached by
        a path of 1..``max_hops`` relationships) and ``hops`` (length of a shortest such
        path from some source).
        """

    def create_schema(self, driver: CypherDriver, schema: CypherSchema) -> None:
        """Create tables / constraints for :func:`load_graph` (none by default)."""
        return None

    def bulk_load(
        self,
        driver: CypherDriver,
        schema: CypherSchema,
        nodes: list[dict[str, Any]],
        edges: list[dict[str, Any]],
        *,
        batch_size: int,
        show_progress: bool,
    ) -> None:
        """Write node and edge rows with parameterised ``UNWIND`` batches."""
        s = schema
        props = _node_props(s)
        set_items = ", ".join(f"{quote_identifier(p)}: row.{quote_identifier(k)}" for k, p in props)
        node_q = f"UNWIND $rows AS row CREATE (:{s.n} {{{set_items}}})"
        eprops = _edge_props(s)
        eset = ", ".join(
            f"{quote_identifier(p)}: row.{quote_identifier(k)}" for k, p in eprops[2:]
        )
        rel = quote_identifier(s.rel_types[0])
        idp = quote_identifier(s.id_property)
        edge_q = (
            f"UNWIND $rows AS row MATCH (a:{s.n} {{{idp}: row.source}}), "
            f"(b:{s.n} {{{idp}: row.target}}) CREATE (a)-[:{rel} {{{eset}}}]->(b)"
        )
        for query, rows, what in ((node_q, nodes, "nodes"), (edge_q, edges, "edges")):
            for start in _progress(range(0, len(rows), batch_size), show_progress, what):
                driver.run(query, {"rows": rows[start : start + batch_size]})

    @staticmethod
    def _arrows(direction: Direction) -> tuple[str, str]:
        if direction == "out":
            return "-", "->"
        if direction == "in":
            return "<-", "-"
        if direction == "both":
            return "-", "-"
        raise ConfigError(f"direction must be 'out', 'in' or 'both', got {direction!r}")


class KuzuDialect(CypherDialect):
    """Kùzu and its maintained fork Ladybug (embedded, typed node/rel tables)."""

    name = "kuzu"
    max_hops_per_query = 30
    rel_type_function = "label"
    lower_function = "lower"

    def shortest_hops_query(
        self, schema: CypherSchema, direction: Direction, max_hops: int | None
    ) -> str:
        """``MATCH p = (a)-[:R* SHORTEST 1..d]->(b)`` (Kùzu's single-shortest-path BFS)."""
        h = _check_hops(max_hops if max_hops is not None else self.max_hops_per_query)
        left, right = self._arrows(direction)
        idp = schema.prop
        return (
            f"MATCH p = (a:{schema.n}){left}[:{schema.rels}* SHORTEST 1..{h}]{right}"
            f"(b:{schema.n}) WHERE {idp('a', schema.id_property)} IN $sources "
            f"RETURN {idp('b', schema.id_property)} AS id, length(p) AS hops"
        )

    def create_schema(self, driver: CypherDriver, schema: CypherSchema) -> None:
        """``CREATE NODE TABLE`` / ``CREATE REL TABLE`` (if not existing)."""
        s = schema
        cols = [f"{quote_identifier(s.id_property)} STRING"]
        for _k, p in _node_props(s)[1:]:
            typ = {
                s.order_property: "INT64",
                s.embedding_property: "FLOAT[]",
            }.get(p, "STRING")
            cols.append(f"{quote_identifier(p)} {typ}")
        cols.append(f"PRIMARY KEY({quote_identifier(s.id_property)})")
        driver.run(f"CREATE NODE TABLE IF NOT EXISTS {s.n}({', '.join(cols)})", {})
        ecols = [f"FROM {s.n} TO {s.n}"]
        for _k, p in _edge_props(s)[2:]:
            typ = {s.edge_weight_property: "DOUBLE", s.edge_order_property: "INT64"}.get(
                p, "STRING"
            )
            ecols.append(f"{quote_identifier(p)} {typ}")
        for r in s.rel_types:
            driver.run(
                f"CREATE REL TABLE IF NOT EXISTS {quote_identifier(r)}({', '.join(ecols)})", {}
            )

    def bulk_load(
        self,
        driver: CypherDriver,
        schema: CypherSchema,
        nodes: list[dict[str, Any]],
        edges: list[dict[str, Any]],
        *,
        batch_size: int,
        show_progress: bool,
    ) -> None:
        """``COPY ... FROM`` CSV files for an embedded engine (much faster than ``UNWIND``).

        The CSV holds only data: the file is parsed by the engine's CSV reader, never as
        Cypher, so hostile text cannot inject. Falls back to ``UNWIND`` for other drivers.
        """
        if not isinstance(driver, EmbeddedCypherDriver):
            super().bulk_load(
                driver, schema, nodes, edges, batch_size=batch_size, show_progress=show_progress
            )
            return
        tmp = tempfile.mkdtemp(prefix="kgpath-copy-")
        try:
            if not re.fullmatch(r"[\w./\\:-]+", tmp):
                super().bulk_load(
                    driver, schema, nodes, edges, batch_size=batch_size,
                    show_progress=show_progress,
                )
                return
            npath = os.path.join(tmp, "nodes.csv")
            epath = os.path.join(tmp, "edges.csv")
            nkeys = [k for k, _ in _node_props(schema)]
            ekeys = ["source", "target"] + [k for k, _ in _edge_props(schema)[2:]]
            _write_csv(npath, nodes, nkeys, show_progress, "nodes")
            _write_csv(epath, edges, ekeys, show_progress, "edges")
            ncols = ", ".join(quote_identifier(p) for _k, p in _node_props(schema))
            driver.run(
                f"COPY {schema.n}({ncols}) FROM '{npath}' "
                "(HEADER=false, PARALLEL=false, ESCAPE='\"')",
                {},
            )
            if edges:
                ecols = ", ".join(quote_identifier(p) for _k, p in _edge_props(schema)[2:])
                rel = quote_identifier(schema.rel_types[0])
                driver.run(
                    f"COPY {rel}({ecols}) FROM '{epath}' "
                    "(HEADER=false, PARALLEL=false, ESCAPE='\"')",
                    {},
                )
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class Neo4jDialect(CypherDialect):
    """Neo4j 5.21+ (GQL path selectors and quantified relationships)."""

    name = "neo4j"
    max_hops_per_query = None
    rel_type_function = "type"
    lower_function = "toLower"

    def shortest_hops_query(
        self, schema: CypherSchema, direction: Direction, max_hops: int | None
    ) -> str:
        """``MATCH p = ANY SHORTEST (a)-[:R]->{1,d}(b)``; ``{1,}`` when unbounded."""
        bound = "" if max_hops is None else str(_check_hops(max_hops))
        left, right = self._arrows(direction)
        idp = schema.prop
        return (
            f"MATCH p = ANY SHORTEST (a:{schema.n} WHERE {idp('a', schema.id_property)} IN "
            f"$sources){left}[:{schema.rels}]{right}{{1,{bound}}}(b:{schema.n}) "
            f"RETURN {idp('b', schema.id_property)} AS id, length(p) AS hops"
        )

    def create_schema(self, driver: CypherDriver, schema: CypherSchema) -> None:
        """A uniqueness constraint on the id property (also an index for lookups)."""
        idp = quote_identifier(schema.id_property)
        cname = quote_identifier(f"kgpath_{schema.node_label}_id")
        driver.run(
            f"CREATE CONSTRAINT {cname} IF NOT EXISTS FOR (n:{schema.n}) REQUIRE n.{idp} IS UNIQUE",
            {},
        )


def _check_hops(h: object) -> int:
    if isinstance(h, bool) or not isinstance(h, int) or h < 1:
        raise ConfigError(f"a variable-length depth bound must be an int >= 1, got {h!r}")
    return h


# ---------------------------------------------------------------------- drivers
@runtime_checkable
class CypherDriver(Protocol):
    """What :class:`CypherPCR` needs from a database: a dialect and parameterised queries."""

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

    Use :meth:`open` to create or open a database directory. Ladybug and Kùzu cannot be
    imported into the same process (their native bindings register the same class names);
    install and use one of them.
    """

    def __init__(self, connection: Any, *, database: Any = None, engine: str | None = None) -> None:
        self.connection = connection
        self.database = database
        self.engine = engine or type(connection).__module__.split(".")[0]
        self.dialect: CypherDialect = KuzuDialect()
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


def as_cypher_driver(obj: Any) -> CypherDriver:
    """Wrap a database handle as a :class:`CypherDriver`.

    Accepts a :class:`CypherDriver`; a ``ladybug``/``kuzu`` ``Connection`` or ``Database``;
    a LlamaIndex ``LadybugPropertyGraphStore``/``KuzuPropertyGraphStore`` (its ``connection``);
    a ``neo4j`` ``Driver``/``Session``; or a LlamaIndex ``Neo4jPropertyGraphStore`` (its
    ``client``).
    """
    if isinstance(obj, (EmbeddedCypherDriver, Neo4jDriver)) or (
        isinstance(obj, CypherDriver) and isinstance(getattr(obj, "dialect", None), CypherDialect)
    ):
        return obj
    root = type(obj).__module__.split(".")[0]
    if root in ("ladybug", "kuzu", "real_ladybug"):
        if type(obj).__name__ == "Database":
            return EmbeddedCypherDriver(
                __import__(root).Connection(obj), database=None, engine=root
            )
        return EmbeddedCypherDriver(obj, engine=root)
    if root == "neo4j":
        return Neo4jDriver(obj)
    conn = getattr(obj, "connection", None)
    if conn is not None and type(conn).__module__.split(".")[0] in ("ladybug", "kuzu"):
        return EmbeddedCypherDriver(conn)
    client = getattr(obj, "client", None)
    if client is not None and type(client).__module__.split(".")[0] == "neo4j":
        return Neo4jDriver(client, database=getattr(obj, "_database", None))
    raise ConfigError(
        f"cannot use {type(obj).__name__!r} as a Cypher database: pass a ladybug/kuzu "
        "Connection, a neo4j Driver/Session, or an object implementing kgpath.stores.CypherDriver"
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


# ---------------------------------------------------------------------- loading
def _node_props(s: CypherSchema) -> list[tuple[str, str]]:
    """(row key, property) pairs written by :func:`load_graph`, id first."""
    pairs = [("id", s.id_property)]
    for key, p in (
        ("name", s.name_property),
        ("name_key", s.name_key_property),
        ("text", s.text_property),
        ("type", s.type_property),
        ("metadata", s.metadata_property),
        ("provenance", s.provenance_property),
        ("embedding", s.embedding_property),
        ("ord", s.order_property),
    ):
        if p is not None:
            pairs.append((key, p))
    return pairs


def _edge_props(s: CypherSchema) -> list[tuple[str, str]]:
    """(row key, property) pairs of edges; the first two are the endpoints."""
    pairs = [("source", "source"), ("target", "target")]
    for key, p in (
        ("relation", s.relation_property),
        ("etext", s.edge_text_property),
        ("etype", s.edge_type_property),
        ("weight", s.edge_weight_property),
        ("eprov", s.edge_provenance_property),
        ("emeta", s.edge_metadata_property),
        ("rank", s.edge_order_property),
    ):
        if p is not None:
            pairs.append((key, p))
    return pairs


def _csv_cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, (list, tuple, np.ndarray)):
        return "[" + ",".join(repr(float(x)) for x in v) + "]"
    return v


def _write_csv(
    path: str, rows: list[dict[str, Any]], keys: list[str], show_progress: bool, what: str
) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_MINIMAL, doublequote=True)
        for row in _progress(rows, show_progress, f"write {what} CSV"):
            w.writerow([_csv_cell(row.get(k)) for k in keys])


def _progress(it: Any, show: bool, desc: str) -> Any:
    if not show:
        return it
    from tqdm.auto import tqdm

    return tqdm(it, desc=desc, leave=False)


def load_graph(
    driver: Any,
    graph: KnowledgeGraph | GraphIndex,
    *,
    schema: CypherSchema | None = None,
    embeddings: bool = True,
    replace: bool = False,
    batch_size: int = 5000,
    show_progress: bool = False,
) -> CypherSchema:
    """Write a :class:`KnowledgeGraph` into a Cypher database and return the schema used.

    Node ``idx`` and edge ``rank`` properties record the graph's node and edge indices so
    that :class:`CypherPCR` breaks ties exactly as the in-memory retriever.

    Parameters
    ----------
    driver
        Anything :func:`as_cypher_driver` accepts.
    graph
        The graph, or a :class:`GraphIndex` (its node embeddings are computed and stored).
    embeddings
        Store node embeddings (when the graph has them for every node).
    replace
        Delete existing nodes of ``schema.node_label`` first; otherwise a non-empty target
        raises :class:`ConfigError`.
    """
    drv = as_cypher_driver(driver)
    s = schema or CypherSchema()
    if isinstance(graph, GraphIndex):
        graph.build()
        g = graph.graph
    else:
        g = graph
    if len(g) == 0:
        raise EmptyGraphError("cannot load an empty graph into the database")
    t0 = time.perf_counter()
    drv.dialect.create_schema(drv, s)
    count = drv.run(f"MATCH (n:{s.n}) RETURN count(n) AS c", {})[0]["c"]
    if count:
        if not replace:
            raise ConfigError(
                f"the database already holds {count} {s.node_label!r} nodes; pass replace=True "
                "or use another node_label"
            )
        drv.run(f"MATCH (n:{s.n}) DETACH DELETE n", {})
    emb = None
    if embeddings and s.embedding_property is not None and not g.missing_embeddings():
        emb = g.embeddings
    nodes = []
    for i, n in enumerate(_progress(g.nodes, show_progress, "prepare nodes")):
        nodes.append(
            {
                "id": n.id,
                "name": n.name,
                "name_key": _norm_name(n.name),
                "text": n.text,
                "type": n.type,
                "metadata": json.dumps(dict(n.metadata), sort_keys=True, default=str),
                "provenance": json.dumps(list(n.provenance)),
                "embedding": None if emb is None else emb[i].tolist(),
                "ord": i,
            }
        )
    edges = [
        {
            "source": e.source,
            "target": e.target,
            "relation": e.relation,
            "etext": e.text,
            "etype": e.type,
            "weight": float(e.weight),
            "eprov": json.dumps(list(e.provenance)),
            "emeta": json.dumps(dict(e.metadata), sort_keys=True, default=str),
            "rank": j,
        }
        for j, e in enumerate(g.edges)
    ]
    drv.dialect.bulk_load(
        drv, s, nodes, edges, batch_size=batch_size, show_progress=show_progress
    )
    logger.info(
        "loaded %d nodes and %d edges into %s in %.2f s",
        len(nodes), len(edges), drv.dialect.name, time.perf_counter() - t0,
    )
    return s


# ---------------------------------------------------------------------- queries
def reachable_hops(
    driver: CypherDriver,
    schema: CypherSchema,
    anchor_id: str,
    *,
    max_depth: int | None = None,
    direction: Direction = "out",
) -> dict[str, int]:
    """Eq. (1) pushed down: ``{node id: hop distance}`` of every node reachable from the anchor.

    The anchor is included at distance 0. When the engine caps the variable-length bound
    (Kùzu/Ladybug: 30 hops) and ``max_depth`` is larger or ``None``, the search continues in
    windows from the nodes at exactly the window's depth: every node farther away has a
    shortest path through one of them, so the distances stay exact.
    """
    if max_depth is not None and (
        isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0
    ):
        raise ConfigError(f"max_depth must be None or an int >= 0, got {max_depth!r}")
    hops = {anchor_id: 0}
    window = driver.dialect.max_hops_per_query
    frontier = [anchor_id]
    base = 0
    while frontier and (max_depth is None or base < max_depth):
        h = None if max_depth is None else max_depth - base
        if window is not None:
            h = window if h is None else min(h, window)
        rows = driver.run(
            driver.dialect.shortest_hops_query(schema, direction, h), {"sources": frontier}
        )
        found: dict[str, int] = {}
        for r in rows:
            nid = r["id"]
            if nid in hops:
                continue
            d = base + int(r["hops"])
            if d < found.get(nid, math.inf):
                found[nid] = d
        hops.update(found)
        if h is None:
            break
        base += h
        frontier = [nid for nid, d in found.items() if d == base]
    return hops


def fetch_nodes(
    driver: CypherDriver,
    schema: CypherSchema,
    ids: Sequence[str],
    *,
    embedding: bool = True,
    batch_size: int = 10_000,
) -> dict[str, dict[str, Any]]:
    """Rows (id, name, text, ..., embedding) of the given node ids, keyed by id."""
    out: dict[str, dict[str, Any]] = {}
    # UNWIND + equality uses the id index; ``IN $ids`` is a linear scan per row on Kùzu
    q = (
        f"UNWIND $ids AS x MATCH (n:{schema.n}) WHERE {schema.prop('n', schema.id_property)} = x "
        f"RETURN {schema.node_return('n', embedding=embedding)}"
    )
    ids = list(ids)
    for start in range(0, len(ids), batch_size):
        for r in driver.run(q, {"ids": ids[start : start + batch_size]}):
            out[r["id"]] = r
    return out


class Step:
    """One edge met by a one-hop expansion: ``node`` -- ``edge`` -- ``neighbour``.

    ``forward`` is true when the edge points from ``node`` to ``neighbour``. The
    :class:`~kgpath.graph.Edge` object is built on first access (most steps of a region are
    only compared by order, never shown).
    """

    __slots__ = ("node", "neighbour", "neighbour_order", "forward", "edge_order", "_row", "_edge")

    def __init__(
        self, node: str, neighbour: str, neighbour_order: Any, forward: bool,
        edge_order: Any, row: Mapping[str, Any],
    ) -> None:
        self.node = node
        self.neighbour = neighbour
        self.neighbour_order = neighbour_order
        self.forward = forward
        self.edge_order = edge_order
        self._row = row
        self._edge: Edge | None = None

    @property
    def edge(self) -> Edge:
        """The edge as a kgpath :class:`~kgpath.graph.Edge`."""
        if self._edge is None:
            src, dst = (
                (self.node, self.neighbour) if self.forward else (self.neighbour, self.node)
            )
            self._edge = _edge_from_row(src, dst, self._row)
        return self._edge

    def __repr__(self) -> str:
        arrow = "->" if self.forward else "<-"
        return f"Step({self.node!r} {arrow} {self.neighbour!r}, order={self.edge_order!r})"


def expand_one_hop(
    driver: CypherDriver,
    schema: CypherSchema,
    ids: Sequence[str],
    *,
    direction: Direction = "out",
    within: Iterable[str] | None = None,
) -> list[Step]:
    """One-hop neighbourhood expansion pushed down: every edge at the given nodes.

    ``direction="out"`` follows edges leaving ``ids``, ``"in"`` edges arriving at them,
    ``"both"`` both (each reported once per endpoint in ``ids``). With ``within``, only
    neighbours in that id collection are kept (filtered on arrival: a long ``IN`` list is a
    linear scan per row on Kùzu, slower than sending the few extra rows).
    """
    if not ids:
        return []
    s = schema
    ord_expr = s.prop("m", s.order_property) if s.order_property else "NULL"
    steps: list[Step] = []
    keep = None if within is None else set(within)
    plans = {"out": [True], "in": [False], "both": [True, False]}
    if direction not in plans:
        raise ConfigError(f"direction must be 'out', 'in' or 'both', got {direction!r}")
    for forward in plans[direction]:
        pattern = (
            f"(n:{s.n})-[r:{s.rels}]->(m:{s.n})"
            if forward
            else f"(m:{s.n})-[r:{s.rels}]->(n:{s.n})"
        )
        q = (
            f"UNWIND $ids AS x MATCH {pattern} WHERE {s.prop('n', s.id_property)} = x "
            f"RETURN {s.prop('n', s.id_property)} AS node, {s.prop('m', s.id_property)} AS nb, "
            f"{ord_expr} AS nb_ord, {s.edge_return('r', driver.dialect)}"
        )
        for r in driver.run(q, {"ids": list(ids)}):
            if keep is not None and r["nb"] not in keep:
                continue
            src, dst = (r["node"], r["nb"]) if forward else (r["nb"], r["node"])
            eord = r.get("rank") if s.edge_order_property else (
                r.get("rel_type") or "", str(r.get("relation") or ""), str(r.get("etext") or ""),
                src, dst,
            )
            steps.append(Step(r["node"], r["nb"], r.get("nb_ord"), forward, eord, r))
    return steps


def bfs_order(
    anchor_id: str,
    hops: Mapping[str, int],
    steps: Iterable[Step],
    *,
    direction: Direction = "out",
) -> tuple[list[str], dict[str, tuple[str, Step]]]:
    """The in-memory BFS discovery order and parent edges, rebuilt from the database's answer.

    ``hops`` comes from :func:`reachable_hops`; ``steps`` are the edges inside the reachable
    region (:func:`expand_one_hop` with ``direction="out"`` and ``within`` = the region).
    :meth:`KnowledgeGraph.bfs` scans each level in discovery order and each node's edges in
    edge order, forward edges of the whole level before reversed ones for
    ``direction="both"``; a node's place in its level, and its parent, is therefore the
    smallest ``(reversed?, place of the parent, edge order)`` over the edges reaching it
    from the previous level. Returns ``(ids in BFS order, {id: (parent id, step)})``; the
    step's :attr:`Step.edge` is the edge used.
    """
    incoming: dict[str, list[tuple[int, str, Any, Step]]] = {}
    for st in steps:
        if not st.forward:
            continue
        x, y = st.node, st.neighbour  # edge x -> y
        hx, hy = hops.get(x), hops.get(y)
        if hx is None or hy is None:
            continue
        if direction in ("out", "both") and hy == hx + 1:
            incoming.setdefault(y, []).append((0, x, st.edge_order, st))
        if direction == "in" and hx == hy + 1:
            incoming.setdefault(x, []).append((0, y, st.edge_order, st))
        if direction == "both" and hx == hy + 1:
            incoming.setdefault(x, []).append((1, y, st.edge_order, st))
    levels: dict[int, list[str]] = {}
    for nid, h in hops.items():
        if nid != anchor_id:
            levels.setdefault(h, []).append(nid)
    order = [anchor_id]
    place = {anchor_id: 0}
    parent: dict[str, tuple[str, Step]] = {}
    for h in sorted(levels):
        keyed = []
        for v in levels[h]:
            opts = [
                ((flag, place[u], eord), u, e)
                for flag, u, eord, e in incoming.get(v, ())
                if u in place
            ]
            if not opts:
                raise BackendError(
                    f"node {v!r} is at {h} hops but no edge reaches it from {h - 1} hops: "
                    "the graph changed during the query"
                )
            key, u, e = min(opts, key=lambda t: t[0])
            parent[v] = (u, e)
            keyed.append((key, v))
        keyed.sort(key=lambda t: t[0])
        for _, v in keyed:
            place[v] = len(order)
            order.append(v)
    return order, parent


def _json_or(value: Any, default: Any) -> Any:
    if value is None or value == "":
        return default
    if isinstance(value, (list, dict)):
        return value
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return [value] if isinstance(default, list) else default
    return default


def _provenance(value: Any) -> tuple[str, ...]:
    v = _json_or(value, [])
    if isinstance(v, str):
        return (v,)
    if isinstance(v, list):
        return tuple(str(x) for x in v)
    return (str(v),)


def _node_from_row(r: Mapping[str, Any]) -> Node:
    meta = _json_or(r.get("metadata"), {})
    return Node(
        id=r["id"],
        name=str(r["name"]) if r.get("name") is not None else str(r["id"]),
        text=r.get("text") or "",
        type=r.get("type"),
        metadata=meta if isinstance(meta, dict) else {"metadata": meta},
        provenance=_provenance(r.get("provenance")),
    )


def _edge_from_row(source: str, target: str, r: Mapping[str, Any]) -> Edge:
    meta = _json_or(r.get("emeta"), {})
    relation = r.get("relation") if "relation" in r else r.get("rel_type")
    w = r.get("weight")
    return Edge(
        source=source,
        target=target,
        relation=relation or "",
        text=r.get("etext") or "",
        type=r.get("etype"),
        weight=1.0 if w is None else float(w),
        provenance=_provenance(r.get("eprov")),
        metadata=meta if isinstance(meta, dict) else {"metadata": meta},
    )


# ---------------------------------------------------------------------- retriever
class CypherPCR:
    """Path-Constrained Retrieval against a Cypher database (push-down of Eq. 1).

    Same configuration and result types as
    :class:`~kgpath.methods.pcr.PathConstrainedRetriever`; on a database written by
    :func:`load_graph` from graph ``G`` the result equals the in-memory result on ``G`` (same
    hits, scores, hops and paths; see the module docstring for the tie rule).

    Parameters
    ----------
    driver
        Anything :func:`as_cypher_driver` accepts.
    embedder
        Embeds queries, and nodes that have no stored embedding (cached by id).
    schema
        Where fields live (:class:`CypherSchema`); the default matches :func:`load_graph`.
    config
        :class:`PCRConfig`. ``mode`` must be ``"vector"``: BM25 and hybrid scores need
        corpus-wide statistics the database does not keep.
    page_size
        Rows per page when a global scan is needed (no anchor, or ``fallback="global"``).
    max_cached_embeddings
        Bound on the cache of embeddings computed for nodes without a stored one.

    Examples
    --------
    >>> from kgpath import KnowledgeGraph, HashingEmbedder
    >>> from kgpath.stores import EmbeddedCypherDriver, load_graph
    >>> g = KnowledgeGraph.from_triples([("a", "to", "b"), ("b", "to", "c"), ("x", "to", "y")])
    >>> import tempfile, os
    >>> drv = EmbeddedCypherDriver.open(os.path.join(tempfile.mkdtemp(), "db"))
    >>> schema = load_graph(drv, g)
    >>> pcr = CypherPCR(drv, embedder=HashingEmbedder(), schema=schema)
    >>> sorted(pcr.retrieve("c", anchor="a").ids)
    ['a', 'b', 'c']
    >>> drv.close()
    """

    def __init__(
        self,
        driver: Any,
        *,
        embedder: Embedder | None = None,
        schema: CypherSchema | None = None,
        config: PCRConfig | None = None,
        page_size: int = 20_000,
        max_cached_embeddings: int = 200_000,
    ) -> None:
        self.driver = as_cypher_driver(driver)
        self.embedder = embedder if embedder is not None else default_embedder()
        self.schema = schema or CypherSchema()
        self.config = config or PCRConfig()
        _check_mode(self.config)
        if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size <= 0:
            raise ConfigError(f"page_size must be a positive int, got {page_size!r}")
        self.page_size = page_size
        self.max_cached_embeddings = max_cached_embeddings
        self._emb_cache: dict[str, np.ndarray] = {}

    def __repr__(self) -> str:
        return (
            f"CypherPCR(driver={self.driver!r}, node_label={self.schema.node_label!r}, "
            f"k={self.config.k}, max_depth={self.config.max_depth})"
        )

    # ------------------------------------------------------------------ config
    def _config(self, overrides: dict[str, Any]) -> PCRConfig:
        # the same override rules as the in-memory PCR (max_depth=None means unlimited)
        cfg = with_overrides(self.config, overrides, label="PCR", none_is_value={"max_depth"})
        _check_mode(cfg)
        return cfg

    # ------------------------------------------------------------------ embeddings
    def _vectors(self, rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """Stored embeddings of ``rows`` (in order); missing ones embedded and cached."""
        out: list[np.ndarray | None] = []
        todo: list[int] = []
        for i, r in enumerate(rows):
            v = r.get("embedding")
            if v is not None and len(v):
                out.append(np.asarray(v, dtype=np.float32))
            elif r["id"] in self._emb_cache:
                out.append(self._emb_cache[r["id"]])
            else:
                out.append(None)
                todo.append(i)
        if todo:
            texts = [_node_from_row(rows[i]).search_text for i in todo]
            vecs = self.embedder.embed_passages(texts)
            for i, v in zip(todo, vecs):
                out[i] = v
                if len(self._emb_cache) < self.max_cached_embeddings:
                    self._emb_cache[rows[i]["id"]] = v
        vecs_ = [v for v in out if v is not None]
        dims = {v.shape[0] for v in vecs_}
        if len(dims) > 1:
            raise EmbeddingError(f"stored node embeddings have mixed dimensions {sorted(dims)}")
        return np.ascontiguousarray(np.vstack(vecs_).astype(np.float32, copy=False))

    def _scores(self, rows: Sequence[Mapping[str, Any]], qv: np.ndarray) -> np.ndarray:
        """Eq. (2)'s ``sim(q, v)``: the same float32 dot product as :class:`VectorIndex`."""
        mat = self._vectors(rows)
        if mat.shape[1] != qv.shape[0]:
            raise EmbeddingError(
                f"query embedding has dimension {qv.shape[0]}, node embeddings have "
                f"{mat.shape[1]}"
            )
        return mat @ np.asarray(qv, dtype=np.float32)

    # ------------------------------------------------------------------ ordering
    def _order_key(self, r: Mapping[str, Any]) -> tuple[int, int, str]:
        if self.schema.order_property is not None and r.get("ord") is not None:
            return (0, int(r["ord"]), r["id"])
        return (1, 0, r["id"])

    # ------------------------------------------------------------------ anchor
    def _node_row(self, drv: CypherDriver, node_id: str) -> dict[str, Any] | None:
        s = self.schema
        rows = drv.run(
            f"MATCH (n:{s.n}) WHERE {s.prop('n', s.id_property)} = $id "
            f"RETURN {s.node_return('n')}",
            {"id": node_id},
        )
        return rows[0] if rows else None

    def _rows_by_name(self, drv: CypherDriver, name: str) -> list[dict[str, Any]]:
        s = self.schema
        if s.name_key_property is not None:
            cond = f"{s.prop('n', s.name_key_property)} = $key"
        elif s.name_property is not None:
            lower = drv.dialect.lower_function
            cond = f"{lower}(trim({s.prop('n', s.name_property)})) = $key"
        else:
            cond = f"{s.prop('n', s.id_property)} = $name"
        rows = drv.run(
            f"MATCH (n:{s.n}) WHERE {cond} RETURN {s.node_return('n')}",
            {"key": _norm_name(name), "name": name},
        )
        return sorted(rows, key=self._order_key)

    def _global_top(
        self, drv: CypherDriver, qv: np.ndarray, k: int, exclude: str | None = None
    ) -> tuple[list[tuple[float, dict[str, Any]]], int]:
        """Top-``k`` nodes of the whole database by cosine, and how many were scored.

        A keyset-paged scan in node order (no ``SKIP``: cost per page does not grow with
        the offset); ties go to the earlier node, as in memory.
        """
        s = self.schema
        key_prop = s.order_property or s.id_property
        key = s.prop("n", key_prop)
        ret = f"RETURN {s.node_return('n')}, {key} AS page_key ORDER BY {key} LIMIT $limit"
        first = f"MATCH (n:{s.n}) {ret}"
        more = f"MATCH (n:{s.n}) WHERE {key} > $after {ret}"
        best: list[tuple[float, int, dict[str, Any]]] = []
        seen = 0
        after: Any = None
        while True:
            if after is None:
                rows = drv.run(first, {"limit": self.page_size})
            else:
                rows = drv.run(more, {"after": after, "limit": self.page_size})
            if not rows:
                break
            after = rows[-1]["page_key"]
            full = len(rows) == self.page_size
            rows = [r for r in rows if r["id"] != exclude]
            if rows:
                sc = self._scores(rows, qv)
                for j in top_k(sc, min(k, len(rows))):
                    best.append((float(sc[j]), seen + int(j), rows[int(j)]))
                best.sort(key=lambda t: (-t[0], t[1]))
                del best[k:]
            seen += len(rows)
            if not full:
                break
        return [(score, row) for score, _, row in best], seen

    def resolve_anchor(
        self,
        qv: np.ndarray,
        *,
        anchor: str | None,
        anchor_name: str | None,
        config: PCRConfig,
        driver: CypherDriver | None = None,
    ) -> tuple[dict[str, Any], str]:
        """``(anchor row, how it was resolved)``; same rules as the in-memory retriever.

        By id, by name (equal names broken by similarity, then node order), or, when
        neither is given, the node most similar to the query.
        """
        drv = driver or self.driver
        if anchor is not None:
            row = self._node_row(drv, anchor)
            if row is not None:
                return row, "id"
            if config.unknown_anchor == "error":
                raise NodeNotFoundError(f"unknown anchor id {anchor!r}", key=anchor)
            return self._most_similar(drv, qv), f"similarity (unknown id {anchor!r})"
        if anchor_name is not None:
            rows = self._rows_by_name(drv, anchor_name)
            if len(rows) == 1:
                return rows[0], "name"
            if rows:
                sc = self._scores(rows, qv)
                return rows[int(np.argmax(sc))], f"name ({len(rows)} matches, most similar chosen)"
            if config.unknown_anchor == "error":
                raise NodeNotFoundError(f"no node named {anchor_name!r}", key=anchor_name)
            return self._most_similar(drv, qv), f"similarity (unknown name {anchor_name!r})"
        return self._most_similar(drv, qv), "similarity"

    def _most_similar(self, drv: CypherDriver, qv: np.ndarray) -> dict[str, Any]:
        top, _ = self._global_top(drv, qv, 1)
        if not top:
            raise EmptyGraphError(f"the database has no {self.schema.node_label!r} nodes")
        return top[0][1]

    # ------------------------------------------------------------------ retrieval
    def retrieve(
        self,
        query: str,
        *,
        anchor: str | None = None,
        anchor_name: str | None = None,
        **overrides: Any,
    ) -> PCRResult:
        """Run PCR for ``query`` from an anchor (id, name, or most similar node).

        ``overrides`` are :class:`PCRConfig` fields for this call only (e.g. ``k=5``).
        """
        q = check_query(query)
        cfg = self._config(overrides)
        qv = self.embedder.embed_queries([q])[0]
        return self._retrieve(q, qv, anchor, anchor_name, cfg)

    async def aretrieve(
        self,
        query: str,
        *,
        anchor: str | None = None,
        anchor_name: str | None = None,
        **overrides: Any,
    ) -> PCRResult:
        """Async :meth:`retrieve`: native async query embedding, database calls in a thread."""
        q = check_query(query)
        cfg = self._config(overrides)
        qv = (await self.embedder.aembed_queries([q]))[0]
        return await asyncio.to_thread(self._retrieve, q, qv, anchor, anchor_name, cfg)

    def _retrieve(
        self,
        query: str,
        qv: np.ndarray,
        anchor: str | None,
        anchor_name: str | None,
        cfg: PCRConfig,
    ) -> PCRResult:
        t0 = time.perf_counter()
        drv = _Counting(self.driver)
        arow, how = self.resolve_anchor(
            qv, anchor=anchor, anchor_name=anchor_name, config=cfg, driver=drv
        )
        aid = arow["id"]
        # Eq. (1), pushed down: reachable set with hop counts
        hops = reachable_hops(
            drv, self.schema, aid, max_depth=cfg.max_depth, direction=cfg.direction
        )
        region = list(hops)
        # one-hop expansion inside the region -> BFS order and parents, as in memory
        steps = (
            expand_one_hop(drv, self.schema, region, direction="out", within=region)
            if len(region) > 1
            else []
        )
        order, parent = bfs_order(aid, hops, steps, direction=cfg.direction)
        rows = fetch_nodes(drv, self.schema, order[1:])
        rows[aid] = arow
        missing = [i for i in order if i not in rows]
        if missing:
            raise BackendError(
                f"reachable nodes vanished during the query (graph changed?): {missing[:5]}"
            )
        reach = [rows[i] for i in order]
        fallback = len(reach) <= 1 and cfg.fallback == "global"
        # Eq. (2) over C_reachable (or, on fallback, over every node)
        if fallback:
            top, scored = self._global_top(
                drv, qv, cfg.k, exclude=None if cfg.include_anchor else aid
            )
            picked = [(row, score) for score, row in top]
        else:
            cand = reach if cfg.include_anchor else reach[1:]
            scored = len(cand)
            picked = []
            if cand:
                sc = self._scores(cand, qv)
                picked = [(cand[int(p)], float(sc[p])) for p in top_k(sc, min(cfg.k, len(cand)))]
        hits = []
        for row, score in picked:
            nid = row["id"]
            if nid in hops:
                chain, edges = _path_to(nid, parent)
                hits.append(
                    PCRHit(
                        node=_node_from_row(row), score=score, hops=hops[nid],
                        path=tuple(chain), edges=tuple(edges),
                    )
                )
            else:
                hits.append(PCRHit(node=_node_from_row(row), score=score, hops=None, path=()))
        elapsed = time.perf_counter() - t0
        logger.debug(
            "CypherPCR %r: anchor %r, |C|=%d, %d queries, %.1f ms",
            query[:60], aid, len(reach), drv.count, 1000 * elapsed,
        )
        return PCRResult(
            query=query,
            anchor=_node_from_row(arow),
            anchor_resolution=how,
            hits=tuple(hits),
            reachable_count=len(reach),
            fallback_used=bool(fallback),
            config=cfg,
            trace={
                "anchor_id": aid,
                "anchor_resolution": how,
                "reachable_count": len(reach),
                "max_reached_depth": max(hops.values()),
                "candidates_scored": scored,
                "mode": cfg.mode,
                "direction": cfg.direction,
                "max_depth": cfg.max_depth,
                "fallback": "global" if fallback else None,
                "backend": f"cypher/{self.driver.dialect.name}",
                "queries": drv.count,
                "seconds": elapsed,
            },
        )


def _path_to(
    node_id: str, parent: Mapping[str, tuple[str, Step]]
) -> tuple[list[str], list[Edge]]:
    """Follow parent pointers back to the anchor."""
    chain, edges = [node_id], []
    while chain[-1] in parent:
        par, step = parent[chain[-1]]
        edges.append(step.edge)
        chain.append(par)
    chain.reverse()
    edges.reverse()
    return chain, edges


class _Counting:
    """Driver view that counts the queries of one retrieval (for its trace)."""

    def __init__(self, driver: CypherDriver) -> None:
        self._driver = driver
        self.dialect = driver.dialect
        self.count = 0

    def run(self, query: str, parameters: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        self.count += 1
        return self._driver.run(query, parameters or {})


def _check_mode(cfg: PCRConfig) -> None:
    if cfg.mode != "vector":
        raise ConfigError(
            f"CypherPCR supports mode='vector' (Eq. 2) only, got mode={cfg.mode!r}: BM25 and "
            "hybrid scores need corpus-wide term statistics; use PathConstrainedRetriever"
        )

