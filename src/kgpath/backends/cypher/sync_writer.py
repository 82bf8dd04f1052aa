"""The parameterised statements of one :meth:`~kgpath.backends.cypher.CypherSync.push`.

Idempotent ``UNWIND`` batches (creation only when absent, ``SET`` of whole rows or of the
order property alone, deletion of what matches), one round trip per batch; the order in
which :class:`~kgpath.backends.cypher.sync.CypherSync` sends them is in its module docstring.
"""

from __future__ import annotations

from typing import Any

from kgpath.backends.cypher.drivers import CypherDriver
from kgpath.backends.cypher.identifiers import quote_identifier
from kgpath.backends.cypher.schema import CypherSchema, edge_props, node_props, passage_props

__all__ = ["SyncWriter"]

EdgeKey = tuple[str, str, str]


class SyncWriter:
    """The parameterised statements of one push (each batch one round trip).

    ``report`` is the push's :class:`~kgpath.backends.cypher.sync.SyncReport`: its
    ``statements`` counts the batches sent.
    """

    def __init__(self, driver: CypherDriver, schema: CypherSchema, batch_size: int,
                 report: Any) -> None:
        self.drv, self.s, self.d = driver, schema, driver.dialect
        self.batch_size, self.report = batch_size, report
        self.rel = quote_identifier(schema.rel_types[0])

    def _run(self, query: str, rows: list[Any]) -> None:
        for start in range(0, len(rows), self.batch_size):
            self.drv.run(query, {"rows": rows[start : start + self.batch_size]})
            self.report.statements += 1

    def _label(self, passage: bool) -> str:
        return quote_identifier(self.s.passage_label) if passage else self.s.n

    def _ends(self) -> str:
        """``MATCH`` of an edge row's endpoints ``a`` and ``b`` by id."""
        n, d, s = self.s.n, self.d, self.s
        return (f"MATCH (a:{n}) WHERE {d.id_match(s, 'a', 'row.source')} "
                f"MATCH (b:{n}) WHERE {d.id_match(s, 'b', 'row.target')} ")

    def _same_relation(self) -> str:
        return f"{self.s.prop('r', self.s.relation_property)} = row.relation"

    def _edge(self) -> str:
        """``MATCH`` of an edge row's relationship ``r``.

        The source by id (indexed), then its edges filtered by target id and relation
        (on FalkorDB with 60 edges per node, half the time of also looking the target up
        by its key).
        """
        n, d, s = self.s.n, self.d, self.s
        return (f"MATCH (a:{n}) WHERE {d.id_match(s, 'a', 'row.source')} "
                f"MATCH (a)-[r:{self.rel}]->(b:{n}) "
                f"WHERE {s.prop('b', s.id_property)} = row.target AND {self._same_relation()} ")

    def delete_edges(self, keys: list[EdgeKey]) -> None:
        """Delete the edges (source id, target id, relation) that match."""
        rows = [{"source": a, "target": b, "relation": r} for a, b, r in keys]
        self._run(f"UNWIND $rows AS row {self._edge()}DELETE r", rows)

    def delete(self, ids: list[str], *, passage: bool) -> None:
        """``DETACH DELETE`` the nodes (passages) with these ids."""
        if not ids:
            return
        cond = self.d.id_match(self.s, "n", "row", passage=passage)
        self._run(f"UNWIND $rows AS row MATCH (n:{self._label(passage)}) WHERE {cond} "
                  "DETACH DELETE n", ids)

    def create_missing(self, ids: list[str], *, passage: bool) -> None:
        """Create nodes (passages) with only their id and key, unless one exists."""
        if not ids:
            return
        s = self.s
        idp = quote_identifier(s.passage_id_property if passage else s.id_property)
        cond = self.d.id_match(s, "n", "row", passage=passage)
        label = self._label(passage)
        self._run(f"UNWIND $rows AS row OPTIONAL MATCH (n:{label}) WHERE {cond} "
                  f"WITH row, n WHERE n IS NULL "
                  f"CREATE (:{label} {{{idp}: row{self.d.key_items(s, 'row')}}})", ids)

    def _set(self, var: str, pairs: list[tuple[str, str]], nulls: tuple[str, ...] = ()) -> str:
        return ", ".join(
            f"{var}.{quote_identifier(p)} = "
            + ("NULL" if k in nulls else f"row.{quote_identifier(k)}") for k, p in pairs)

    def set_nodes(self, rows: list[dict[str, Any]]) -> None:
        """``SET`` whole node rows; rows without an embedding write a literal ``NULL``.

        (A typed engine infers the type of a parameter column of nulls; a literal is safe
        whatever the column's type.)
        """
        cond = self.d.id_match(self.s, "n", "row.`id`")
        props = node_props(self.s)[1:]
        for nulls in ((), ("embedding",)):
            part = [r for r in rows if (r.get("embedding") is None) == bool(nulls)]
            self._run(f"UNWIND $rows AS row MATCH (n:{self.s.n}) WHERE {cond} "
                      f"SET {self._set('n', props, nulls)}", part)

    def create_missing_edges(self, rows: list[dict[str, Any]]) -> None:
        """Create the edges of ``rows`` (relation only) unless one exists."""
        rel_p = quote_identifier(self.s.relation_property)
        self._run(f"UNWIND $rows AS row {self._ends()}"
                  f"OPTIONAL MATCH (a)-[r:{self.rel}]->(b) WHERE {self._same_relation()} "
                  f"WITH a, b, row, r WHERE r IS NULL "
                  f"CREATE (a)-[:{self.rel} {{{rel_p}: row.relation}}]->(b)",
                  [{"source": r["source"], "target": r["target"], "relation": r["relation"]}
                   for r in rows])

    def set_edges(self, rows: list[dict[str, Any]]) -> None:
        """``SET`` whole edge rows."""
        self._run(f"UNWIND $rows AS row {self._edge()}"
                  f"SET {self._set('r', edge_props(self.s)[2:])}", rows)

    def set_order(self, rows: list[dict[str, Any]], *, passage: bool) -> None:
        """``SET`` only the order property of rows that moved (``id``, ``ord``)."""
        if not rows:
            return
        s = self.s
        prop = s.passage_order_property if passage else s.order_property
        if prop is None:  # passages without an order property: nothing to move
            return
        cond = self.d.id_match(s, "n", "row.`id`", passage=passage)
        self._run(f"UNWIND $rows AS row MATCH (n:{self._label(passage)}) WHERE {cond} "
                  f"SET n.{quote_identifier(prop)} = row.`ord`", rows)

    def set_ranks(self, rows: list[dict[str, Any]]) -> None:
        """``SET`` only the order property of edges that moved."""
        if not rows:
            return
        rank = quote_identifier(self.s.edge_order_property)
        self._run(f"UNWIND $rows AS row {self._edge()}SET r.{rank} = row.`rank`",
                  [{"source": r["source"], "target": r["target"], "relation": r["relation"],
                    "rank": r["rank"]} for r in rows])

    def set_passages(self, rows: list[dict[str, Any]]) -> None:
        """``SET`` whole passage rows."""
        if not rows:
            return
        cond = self.d.id_match(self.s, "n", "row.`id`", passage=True)
        self._run(f"UNWIND $rows AS row MATCH (n:{self._label(True)}) WHERE {cond} "
                  f"SET {self._set('n', passage_props(self.s)[1:])}", rows)
