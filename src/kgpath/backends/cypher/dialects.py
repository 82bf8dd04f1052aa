"""Cypher dialects: the few places where graph database engines disagree.

One class per engine, each overriding only what differs from :class:`CypherDialect`:

* :class:`KuzuDialect` - Kùzu and its maintained fork Ladybug (embedded, typed tables,
  ``SHORTEST`` variable-length matches capped at 30 hops, ``COPY FROM`` bulk loading);
* :class:`Neo4jDialect` - Neo4j 5.21+ (GQL ``ANY SHORTEST`` path selector).

Adding an engine (FalkorDB, Memgraph, ...) is one small module: subclass
:class:`CypherDialect`, implement :meth:`~CypherDialect.shortest_hops_query`, set the
function names that differ (:attr:`~CypherDialect.rel_type_function`,
:attr:`~CypherDialect.lower_function`) and, if needed, :meth:`~CypherDialect.create_schema`
(indexes) and :meth:`~CypherDialect.has_label`; pair it with a driver (a ``run(query,
parameters) -> list[dict]`` object whose ``dialect`` is an instance of the new class) and,
to accept the engine's own client objects, register a recogniser with
:func:`~kgpath.backends.cypher.drivers.register_driver`. Nothing else in kgpath changes:
queries (:mod:`~kgpath.backends.cypher.queries`) use only the hooks below.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import numpy as np

from kgpath.backends.cypher.identifiers import check_hops, quote_identifier
from kgpath.backends.cypher.schema import CypherSchema, edge_props, node_props, passage_props
from kgpath.errors import ConfigError
from kgpath.graph import Direction

__all__ = ["CypherDialect", "KuzuDialect", "Neo4jDialect", "Runner", "progress", "write_csv"]


class Runner(Protocol):
    """Anything that runs one parameterised query (a :class:`CypherDriver`)."""

    def run(self, query: str, parameters: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Execute ``query`` with ``parameters``; return the rows."""
        ...


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

    def create_schema(self, driver: Runner, schema: CypherSchema) -> None:
        """Create tables / constraints for :func:`load_graph` (none by default)."""
        return None

    def has_label(self, driver: Runner, label: str) -> bool:
        """Whether nodes of ``label`` can be matched (schemaless engines: always)."""
        return True

    def id_match(
        self, schema: CypherSchema, var: str, value: str, *, passage: bool = False
    ) -> str:
        """Condition text: the node (``passage``: passage) bound to ``var`` has id ``value``.

        ``value`` is a query expression kgpath wrote (``x``, ``row.source``, ``$id``), never
        user text. An engine whose index cannot hold every id adds a lookup key here.
        """
        prop = schema.passage_id_property if passage else schema.id_property
        return f"{schema.prop(var, prop)} = {value}"

    def key_items(self, schema: CypherSchema, value: str) -> str:
        """Extra ``, property: expression`` map items written beside the id ``value``."""
        return ""

    def check_ids(self, schema: CypherSchema, ids: Iterable[Any], what: str) -> None:
        """Refuse ids the engine would store but never find again (none by default)."""
        return None

    def bulk_load(
        self,
        driver: Runner,
        schema: CypherSchema,
        nodes: list[dict[str, Any]],
        edges: list[dict[str, Any]],
        *,
        batch_size: int,
        show_progress: bool,
    ) -> None:
        """Write node and edge rows with parameterised ``UNWIND`` batches."""
        s = schema
        props = node_props(s)
        set_items = ", ".join(f"{quote_identifier(p)}: row.{quote_identifier(k)}" for k, p in props)
        set_items += self.key_items(s, "row.`id`")
        node_q = f"UNWIND $rows AS row CREATE (:{s.n} {{{set_items}}})"
        eprops = edge_props(s)
        eset = ", ".join(
            f"{quote_identifier(p)}: row.{quote_identifier(k)}" for k, p in eprops[2:]
        )
        rel = quote_identifier(s.rel_types[0])
        edge_q = (
            f"UNWIND $rows AS row MATCH (a:{s.n}) WHERE {self.id_match(s, 'a', 'row.source')} "
            f"MATCH (b:{s.n}) WHERE {self.id_match(s, 'b', 'row.target')} "
            f"CREATE (a)-[:{rel} {{{eset}}}]->(b)"
        )
        self.check_ids(s, (r["id"] for r in nodes), "node")
        for query, rows, what in ((node_q, nodes, "nodes"), (edge_q, edges, "edges")):
            for start in progress(range(0, len(rows), batch_size), show_progress, what):
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
        h = check_hops(max_hops if max_hops is not None else self.max_hops_per_query)
        left, right = self._arrows(direction)
        idp = schema.prop
        return (
            f"MATCH p = (a:{schema.n}){left}[:{schema.rels}* SHORTEST 1..{h}]{right}"
            f"(b:{schema.n}) WHERE {idp('a', schema.id_property)} IN $sources "
            f"RETURN {idp('b', schema.id_property)} AS id, length(p) AS hops"
        )

    def create_schema(self, driver: Runner, schema: CypherSchema) -> None:
        """``CREATE NODE TABLE`` / ``CREATE REL TABLE`` (if not existing)."""
        s = schema
        cols = [f"{quote_identifier(s.id_property)} STRING"]
        for _k, p in node_props(s)[1:]:
            typ = "INT64" if p == s.order_property else "STRING"  # vectors: base64 text
            cols.append(f"{quote_identifier(p)} {typ}")
        cols.append(f"PRIMARY KEY({quote_identifier(s.id_property)})")
        driver.run(f"CREATE NODE TABLE IF NOT EXISTS {s.n}({', '.join(cols)})", {})
        ecols = [f"FROM {s.n} TO {s.n}"]
        for _k, p in edge_props(s)[2:]:
            typ = {s.edge_weight_property: "DOUBLE", s.edge_order_property: "INT64"}.get(
                p, "STRING"
            )
            ecols.append(f"{quote_identifier(p)} {typ}")
        for r in s.rel_types:
            driver.run(
                f"CREATE REL TABLE IF NOT EXISTS {quote_identifier(r)}({', '.join(ecols)})", {}
            )
        pprops = passage_props(s)
        if pprops:
            ptypes = {s.passage_order_property: "INT64"}
            pcols = [f"{quote_identifier(p)} {ptypes.get(p, 'STRING')}" for _k, p in pprops]
            pcols.append(f"PRIMARY KEY({quote_identifier(s.passage_id_property)})")
            driver.run(
                f"CREATE NODE TABLE IF NOT EXISTS {quote_identifier(s.passage_label)}"
                f"({', '.join(pcols)})",
                {},
            )

    def has_label(self, driver: Runner, label: str) -> bool:
        """Typed engine: matching a missing node table is an error, so look it up."""
        rows = driver.run("CALL show_tables() RETURN name", {})
        return any(r.get("name") == label for r in rows)

    def bulk_load(
        self,
        driver: Runner,
        schema: CypherSchema,
        nodes: list[dict[str, Any]],
        edges: list[dict[str, Any]],
        *,
        batch_size: int,
        show_progress: bool,
    ) -> None:
        """``COPY ... FROM`` CSV files for an embedded engine (much faster than ``UNWIND``).

        The CSV holds only data: the file is parsed by the engine's CSV reader, never as
        Cypher, so hostile text cannot inject. Falls back to ``UNWIND`` for drivers that
        cannot read this machine's files (no true ``reads_local_files`` attribute).
        """
        if not getattr(driver, "reads_local_files", False):
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
            nkeys = [k for k, _ in node_props(schema)]
            ekeys = ["source", "target"] + [k for k, _ in edge_props(schema)[2:]]
            write_csv(npath, nodes, nkeys, show_progress, "nodes")
            write_csv(epath, edges, ekeys, show_progress, "edges")
            ncols = ", ".join(quote_identifier(p) for _k, p in node_props(schema))
            driver.run(
                f"COPY {schema.n}({ncols}) FROM '{npath}' "
                "(HEADER=false, PARALLEL=false, ESCAPE='\"')",
                {},
            )
            if edges:
                ecols = ", ".join(quote_identifier(p) for _k, p in edge_props(schema)[2:])
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
        bound = "" if max_hops is None else str(check_hops(max_hops))
        left, right = self._arrows(direction)
        idp = schema.prop
        return (
            f"MATCH p = ANY SHORTEST (a:{schema.n} WHERE {idp('a', schema.id_property)} IN "
            f"$sources){left}[:{schema.rels}]{right}{{1,{bound}}}(b:{schema.n}) "
            f"RETURN {idp('b', schema.id_property)} AS id, length(p) AS hops"
        )

    def create_schema(self, driver: Runner, schema: CypherSchema) -> None:
        """A uniqueness constraint on the id property (also an index for lookups)."""
        idp = quote_identifier(schema.id_property)
        cname = quote_identifier(f"kgpath_{schema.node_label}_id")
        driver.run(
            f"CREATE CONSTRAINT {cname} IF NOT EXISTS FOR (n:{schema.n}) REQUIRE n.{idp} IS UNIQUE",
            {},
        )
        if schema.passage_label is not None:
            pidp = quote_identifier(schema.passage_id_property)
            pname = quote_identifier(f"kgpath_{schema.passage_label}_id")
            plabel = quote_identifier(schema.passage_label)
            driver.run(
                f"CREATE CONSTRAINT {pname} IF NOT EXISTS FOR (p:{plabel}) "
                f"REQUIRE p.{pidp} IS UNIQUE",
                {},
            )


def _csv_cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, (list, tuple, np.ndarray)):
        return "[" + ",".join(repr(float(x)) for x in v) + "]"
    return v


def write_csv(
    path: str, rows: list[dict[str, Any]], keys: list[str], show_progress: bool, what: str
) -> None:
    """Write ``rows`` (only ``keys``, in order, no header) as a CSV data file."""
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_MINIMAL, doublequote=True)
        for row in progress(rows, show_progress, f"write {what} CSV"):
            w.writerow([_csv_cell(row.get(k)) for k in keys])


def progress(it: Any, show: bool, desc: str) -> Any:
    """``it``, wrapped in a tqdm bar when ``show``."""
    if not show:
        return it
    from tqdm.auto import tqdm

    return tqdm(it, desc=desc, leave=False)
