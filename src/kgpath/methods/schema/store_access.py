"""The store side of schema-guided retrieval over a graph database: :class:`StoreAccess`.

It answers the typed-retrieval seam (:class:`~kgpath.methods.schema.typed.TypedAccess`) with
queries on a :class:`~kgpath.backends.cypher.CypherBackend`; what it fetches, and why the
result is exact, is in :mod:`kgpath.methods.schema.cypher` (the retriever).
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, TypeVar, cast

import numpy as np

from kgpath.backends.cypher import CypherBackend, CypherSchema, NodeRow
from kgpath.backends.cypher.queries import expand_one_hop, fetch_nodes, node_page
from kgpath.backends.cypher.schema import edge_from_row
from kgpath.backends.cypher.vectors import VectorFile
from kgpath.embeddings import Embedder
from kgpath.errors import BackendError, EmptyGraphError
from kgpath.graph import Node, Passage
from kgpath.ingest.hierarchy import CommunityRouter, Hierarchy, is_layer_node
from kgpath.ingest.schema import Schema
from kgpath.methods.schema.config import SchemaRetrieverConfig
from kgpath.methods.schema.typed import (
    Block,
    EdgeRecord,
    InvolvedTypes,
    TypedJob,
    category_mean,
    edge_schema_type,
    full_match,
    node_attributes,
    node_schema_type,
)
from kgpath.search.vector import VectorIndex

__all__ = ["MemberRouter", "NameCatalog", "StoreAccess", "StoreFacts"]

T = TypeVar("T")

_ST = '"schema_type"'
_PARAMS = {"st": _ST, "st_null": '"schema_type": null', "st_empty": '"schema_type": ""',
           "st_pre": '"schema_type": "', "layer": '"layer"'}


def _may_override(meta: str | None, own: str | None) -> str:
    """Cypher: the JSON ``meta`` may hold a ``schema_type`` other than ``own`` (a superset).

    False only when the text has no ``"schema_type"`` key, or exactly one whose value is
    null, empty or ``own`` itself: then the label is ``own`` exactly. The cheap ``CONTAINS``
    comes first; the key is counted with ``size``/``replace`` (Kùzu has no ``split``).
    """
    if meta is None:
        return "false"
    occ = f"(size({meta}) - size(replace({meta}, $st, ''))) / size($st)"
    same = [f"{meta} CONTAINS $st_null", f"{meta} CONTAINS $st_empty"]
    if own is not None:
        same.append(f"coalesce({meta} CONTAINS ($st_pre + {own} + '\"'), false)")
    return f"coalesce({meta} CONTAINS $st AND NOT ({occ} = 1 AND ({' OR '.join(same)})), false)"


class MemberRouter(CommunityRouter):
    """:class:`CommunityRouter` whose candidates are member ids (the store resolves them)."""

    def __init__(self, hierarchy: Hierarchy, embedder: Embedder) -> None:
        if not hierarchy.communities:
            raise EmptyGraphError("the hierarchy has no communities to route through")
        self.hierarchy = hierarchy
        self.index = VectorIndex(
            embedder.embed_passages([c.routing_text for c in hierarchy.communities]))
        self._members = [c.members for c in hierarchy.communities]  # type: ignore[misc]

    def member_ids(self, query_vec: np.ndarray, top: int) -> tuple[list[str], list[Any]]:
        """Ids of the members of the routed communities, and the routing."""
        routed = self.route(query_vec, top)
        ids = dict.fromkeys(m for c, _ in routed for m in c.members)
        return list(ids), [(c.id, s) for c, s in routed]


class StoreFacts:
    """Graph-wide facts, read by the first retrieval that needs them and then kept.

    The store's type spellings (``DISTINCT``), its base-node count and the ids of the nodes
    whose metadata may override their type: each a scan of the whole label, so read once
    per retriever like the name catalog (:meth:`CypherSchemaRetriever.refresh` forgets
    them), not once per question (at 10^5 nodes they cost ~100 ms a question).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[Any, Any] = {}

    def get(self, key: Any, compute: Callable[[], T]) -> T:
        """The fact ``key``, computed on first use."""
        with self._lock:
            if key not in self._values:
                self._values[key] = compute()
            return cast(T, self._values[key])

    def clear(self) -> None:
        """Forget every fact."""
        with self._lock:
            self._values.clear()


class StoreAccess:
    """:class:`~kgpath.methods.schema.typed.TypedAccess` over a Cypher store (one retrieval).

    Built per retrieval on a bound backend (its ``call_trace`` counts the queries); the
    fetched rows are shared by its sub-questions, the graph-wide facts (type spellings,
    base-node count, nodes whose metadata may override their type) by the retriever's
    retrievals (``facts``).
    """

    def __init__(self, backend: CypherBackend, schema: Schema,
                 router: MemberRouter | None = None, facts: StoreFacts | None = None) -> None:
        self.b, self.schema, self.router = backend, schema, router
        self.s: CypherSchema = backend.schema
        self.drv = backend._run  # the bound view's counting driver
        self.rows: dict[str, NodeRow] = {}
        self._lock = threading.Lock()
        self.facts = facts if facts is not None else StoreFacts()

    # -- small helpers
    def _q(self, query: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        return self.drv.run(query, {**_PARAMS, **(params or {})})

    def _keep(self, rows: Iterable[Mapping[str, Any]], cfg: SchemaRetrieverConfig) -> list[NodeRow]:
        """Rows as keys (cached by id), without layer nodes unless asked for, in node order."""
        out = []
        for r in rows:
            key = NodeRow(r)
            if cfg.include_layer_nodes or not is_layer_node(key.node.metadata):
                out.append(key)
        with self._lock:
            for k in out:
                self.rows.setdefault(k.id, k)
        return sorted(out, key=self.order)

    def order(self, key: NodeRow) -> tuple[int, int, str]:
        """Node order: the ``order_property`` written by ``load_graph``, then the id."""
        r = key.row
        if self.s.order_property is not None and r.get("ord") is not None:
            return (0, int(r["ord"]), key.id)
        return (1, 0, key.id)

    def base_count(self) -> int:
        """Nodes that are not keyword/community layer nodes (exact; two queries, kept)."""
        return self.facts.get("base_count", self._base_count)

    def _base_count(self) -> int:
        s = self.s
        total = int(self._q(f"MATCH (n:{s.n}) RETURN count(n) AS c")[0]["c"])
        layer = 0
        if s.metadata_property is not None:
            meta = s.prop("n", s.metadata_property)
            rows = self._q(f"MATCH (n:{s.n}) WHERE {meta} CONTAINS $layer "
                           f"RETURN {s.node_return('n', embedding=False)}")
            layer = sum(is_layer_node(NodeRow(r).node.metadata) for r in rows)
        return total - layer

    def _labels(self, kind: Literal["entity", "relation"], wanted: Sequence[str]) -> list[Any]:
        """The store's raw spellings of the ``wanted`` types (one DISTINCT query per kind)."""
        vocab = self.facts.get(("vocab", kind), lambda: self._distinct(kind))
        return [x for x in vocab if self.schema.resolve(kind, str(x)) in wanted]

    def _distinct(self, kind: str) -> list[Any]:
        s = self.s
        if kind == "entity":
            if s.type_property is None:
                return []
            rows = self._q(f"MATCH (n:{s.n}) RETURN DISTINCT {s.prop('n', s.type_property)} AS t")
            return [r["t"] for r in rows if r["t"] is not None]
        out: dict[Any, None] = {}
        for expr in self._edge_label_exprs():
            for r in self._q(f"MATCH (:{s.n})-[r:{s.rels}]->(:{s.n}) RETURN DISTINCT {expr} AS t"):
                if r["t"] is not None:
                    out.setdefault(r["t"], None)
        return list(out)

    def _edge_label_exprs(self) -> list[str]:
        """The edge's ``type`` property and its relation (property, or relationship type)."""
        s = self.s
        rel = (s.prop("r", s.relation_property) if s.relation_property is not None
               else f"{self.drv.dialect.rel_type_function}(r)")
        return ([s.prop("r", s.edge_type_property)] if s.edge_type_property else []) + [rel]

    # -- candidates
    def scope(self, job: TypedJob) -> list[NodeRow] | None:
        """``None`` (the whole store) or the rows of the routed communities' members."""
        if self.router is None:
            count = self.base_count() if not job.cfg.include_layer_nodes else int(
                self._q(f"MATCH (n:{self.s.n}) RETURN count(n) AS c")[0]["c"])
            job.trace["candidates"] = count
            return None
        ids, routed = self.router.member_ids(job.qv, job.cfg.route_top_communities)
        rows = self._keep(fetch_nodes(self.drv, self.s, ids).values(), job.cfg)
        job.trace["routed_communities"] = routed
        job.trace["candidates"] = len(rows)
        return rows

    def filtered(self, job: TypedJob, scope: list[NodeRow] | None,
                 types: InvolvedTypes) -> list[Block]:
        """Typed candidates (pushed down), checked exactly; those with ``t(v) = 1``."""
        if scope is not None:
            rows = scope
        elif types.nodes:
            rows = self._keep(self._typed_rows(types.nodes), job.cfg)
        elif types.relations:
            ids = sorted(self._relation_ends(None, types.relations))
            rows = self._keep(fetch_nodes(self.drv, self.s, ids).values(), job.cfg)
        else:  # attributes only: not pushed down (keys inside the JSON metadata)
            rows = [k for page in self._pages(job.cfg) for k in page]
        if not rows:
            return [Block([], np.zeros(0, np.float32))]
        touch = None  # the edges at many candidates: one scan of the involved relations'
        if types.relations and 10 * len(rows) > self.base_count():  # edges instead (exact)
            touch = self._relation_ends(None, types.relations)
        tm = self._affinity(rows, types, touch)
        keep = full_match(tm)
        return [Block([k for k, m in zip(rows, keep, strict=True) if m], tm[keep])]

    def scan(self, job: TypedJob, scope: list[NodeRow] | None,
             types: InvolvedTypes | None) -> Iterator[Block]:
        """Every candidate, page by page in node order, with ``t(v)`` when ``types``.

        With a node vector file (and no attribute type), one block instead: the nodes
        that can make the top ``k`` (:meth:`_file_block`).
        """
        if scope is None and self._file() is not None and (
                types is None or not types.attributes):
            yield self._file_block(job, types)
            return
        pages: Iterable[list[NodeRow]] = [scope] if scope is not None else self._pages(job.cfg)
        touch = None  # every node: one scan of the involved relations' edges, not per page
        if scope is None and types is not None and types.relations:
            touch = self._relation_ends(None, types.relations)
        for rows in pages:
            if rows:
                yield Block(rows, None if types is None else self._affinity(rows, types, touch))

    def _file(self) -> VectorFile | None:
        """The node vector file beside the database, if the backend has one."""
        return None if self.b.vectors is None else self.b.vectors.nodes

    def _file_block(self, job: TypedJob, types: InvolvedTypes | None) -> Block:
        """The candidates that can reach the top ``k`` of ``base + β·t(v)``, in node order.

        ``C+``: every node whose ``t(v)`` may be above 0 (the typed rows and the ends of
        the involved relations' edges, as :meth:`filtered` fetches them); every other node
        scores its base alone. ``T``: the top ``k`` base nodes of the vector file (exact
        scores, ties by row = node order; fetched with as many more as there are layer
        nodes, which the scope leaves out). A node ``x`` outside ``C+ ∪ T`` scores
        ``base(x)``, and each of the ``k`` nodes of ``T`` scores at least its own base,
        which is above ``base(x)`` or equal with an earlier node: so the top ``k`` of
        ``C+ ∪ T`` is the top ``k`` of the whole scan.
        """
        vf, cfg = self._file(), job.cfg
        assert vf is not None  # scan() checked
        touch: set[str] | None = None
        plus: list[NodeRow] = []
        if types is not None and types.nodes:
            plus += self._keep(self._typed_rows(types.nodes, embedding=False), cfg)
        if types is not None and types.relations:
            touch = self._relation_ends(None, types.relations)
            plus += self._keep(fetch_nodes(self.drv, self.s, sorted(touch),
                                           embedding=False).values(), cfg)
        total = int(self._q(f"MATCH (n:{self.s.n}) RETURN count(n) AS c")[0]["c"])
        if total != vf.count:
            raise BackendError(
                f"the vector file {str(vf.path)!r} has {vf.count} node rows but the database "
                f"holds {total} nodes: rewrite it (write_vector_files) after changing the graph")
        skipped = 0 if cfg.include_layer_nodes else total - self.base_count()
        pos, _ = vf.top(job.qv, cfg.k + skipped)
        ids = vf.ids(pos)
        rows = fetch_nodes(self.drv, self.s, ids, embedding=False)
        stale = [(i, int(p)) for p, i in zip(pos, ids)
                 if i not in rows or rows[i].get("ord") is None or int(rows[i]["ord"]) != p]
        if stale:
            raise BackendError(f"the vector file {str(vf.path)!r} is stale: (id, row) "
                               f"{stale[:5]!r} not in the database with that order")
        keys = self._keep([*(k.row for k in plus), *(rows[i] for i in ids)], cfg)
        keys = list({k.id: k for k in keys}.values())  # sorted by node order, once each
        return Block(keys, None if types is None else self._affinity(keys, types, touch))

    def _pages(self, cfg: SchemaRetrieverConfig) -> Iterator[list[NodeRow]]:
        after: Any = None
        while True:
            rows = node_page(self.drv, self.s, after, self.b.page_size)
            if not rows:
                return
            after = rows[-1]["page_key"]
            yield self._keep(rows, cfg)
            if len(rows) < self.b.page_size:
                return

    def _typed_rows(self, wanted: Sequence[str], *, embedding: bool | None = None
                    ) -> list[dict[str, Any]]:
        """Nodes typed as one of ``wanted``, plus those whose metadata may override (superset).

        ``embedding``: return the stored vectors (default: unless a node vector file
        serves them).
        """
        s = self.s
        typ = s.prop("n", s.type_property) if s.type_property else None
        if embedding is None:
            embedding = self._file() is None
        labels = self._labels("entity", wanted)
        rows: dict[str, dict[str, Any]] = {}
        if typ is not None and labels:
            q = (f"MATCH (n:{s.n}) WHERE coalesce({typ} IN $labels, false) "
                 f"RETURN {s.node_return('n', embedding=embedding)}")
            rows.update((r["id"], r) for r in self._q(q, {"labels": labels}))
        others = [i for i in self.facts.get("override_ids", self._override_ids)
                  if i not in rows]
        rows.update(fetch_nodes(self.drv, s, others, embedding=embedding))
        return list(rows.values())

    def _override_ids(self) -> list[str]:
        """Ids of the nodes whose metadata may override their type (one scan, kept)."""
        s = self.s
        if s.metadata_property is None:
            return []
        typ = s.prop("n", s.type_property) if s.type_property else None
        cond = _may_override(s.prop("n", s.metadata_property), typ)
        return [str(r["id"]) for r in self._q(
            f"MATCH (n:{s.n}) WHERE {cond} RETURN {s.prop('n', s.id_property)} AS id")]

    def _relation_ends(self, ids: Sequence[str] | None, wanted: Sequence[str]) -> set[str]:
        """Ids (among ``ids``, or all) of nodes at an edge whose relation type is wanted.

        For ``ids``: the labels of their edges, one query per direction. For all nodes:
        the edges whose label may be wanted (the store's spellings, or a metadata that may
        override), one scan. Either way every row is then resolved exactly.
        """
        s, d = self.s, self.drv.dialect
        labels = self._edge_label_exprs()
        ret = ", ".join([f"{s.prop('a', s.id_property)} AS a", f"{s.prop('b', s.id_property)} AS b",
                         f"{d.rel_type_function}(r) AS rel_type"] + [
            f"{s.prop('r', p)} AS {k}" for k, p in (
                ("relation", s.relation_property), ("etype", s.edge_type_property),
                ("emeta", s.edge_metadata_property)) if p is not None])
        if ids is None:
            meta = s.prop("r", s.edge_metadata_property) if s.edge_metadata_property else None
            own = (labels[-1] if len(labels) == 1 else
                   f"CASE WHEN {labels[0]} IS NULL OR {labels[0]} = '' THEN {labels[1]} "
                   f"ELSE {labels[0]} END")
            conds = [_may_override(meta, own)] + [f"coalesce({x} IN $labels, false)"
                                                  for x in labels]
            rows = self._q(f"MATCH (a:{s.n})-[r:{s.rels}]->(b:{s.n}) WHERE "
                           f"{' OR '.join(conds)} RETURN {ret}",
                           {"labels": self._labels("relation", wanted)})
        else:
            rows = []
            for pattern in (f"(a:{s.n})-[r:{s.rels}]->(b:{s.n})",
                            f"(b:{s.n})-[r:{s.rels}]->(a:{s.n})"):
                for start in range(0, len(ids), 10_000):
                    rows += self._q(f"UNWIND $ids AS x MATCH {pattern} WHERE "
                                    f"{d.id_match(s, 'a', 'x')} RETURN {ret}",
                                    {"ids": list(ids[start: start + 10_000])})
        out = set[str]()
        for r in rows:
            if edge_schema_type(self.schema, edge_from_row(r["a"], r["b"], r)) in wanted:
                out.update((r["a"], r["b"]) if ids is None else (r["a"],))
        return out

    def _affinity(self, rows: Sequence[NodeRow], types: InvolvedTypes,
                  touch: set[str] | None = None) -> np.ndarray:
        """``t(v)`` of ``rows``: the in-memory indicators, read from the rows and their edges.

        ``touch``: the ids at an edge of the involved relations, if already known.
        """
        n, cats = len(rows), []
        if types.nodes:
            cats.append(np.fromiter((node_schema_type(self.schema, k.node) in types.nodes
                                     for k in rows), dtype=bool, count=n))
        if types.relations:
            if touch is None:
                touch = self._relation_ends([k.id for k in rows], types.relations)
            cats.append(np.fromiter((k.id in touch for k in rows), dtype=bool, count=n))
        if types.attributes:
            want = set(types.attributes)
            cats.append(np.fromiter((bool(node_attributes(self.schema, k.node) & want)
                                     for k in rows), dtype=bool, count=n))
        return category_mean(cats)

    # -- scores, records, edges, passages
    def score(self, job: TypedJob, keys: Sequence[Any] | np.ndarray) -> np.ndarray:
        """The stored vectors' float32 dot product with the query (``mode="vector"``)."""
        return self.b.score(job.sq.text, job.qv, list(keys), mode=job.cfg.mode,
                            alpha=job.cfg.alpha)

    def node(self, key: NodeRow) -> tuple[Node, str | None]:
        """The row's node record and canonical type."""
        return key.node, node_schema_type(self.schema, key.node)

    def incident_edges(self, hits: Sequence[NodeRow]) -> list[EdgeRecord]:
        """Edges at the hits (one query per direction), their other ends fetched by id."""
        steps = expand_one_hop(self.drv, self.s, [h.id for h in hits], direction="both")
        seen: dict[Any, Any] = {}  # edge order (load_graph's, else a tuple) -> step, ends
        for st in steps:
            src, dst = (st.node, st.neighbour) if st.forward else (st.neighbour, st.node)
            seen.setdefault(st.edge_order, (st, src, dst))
        with self._lock:
            missing = list(dict.fromkeys(
                i for _, a, b in seen.values() for i in (a, b) if i not in self.rows))
        for r in fetch_nodes(self.drv, self.s, missing).values():
            with self._lock:
                self.rows.setdefault(r["id"], NodeRow(r))
        out = []
        for key in sorted(seen):
            st, src, dst = seen[key]
            e = st.edge
            a, b = self.rows[src], self.rows[dst]
            out.append(EdgeRecord(e, a, b, a.node.name, b.node.name,
                                  edge_schema_type(self.schema, e), is_layer_node(e.metadata)))
        return out

    def passages(self, ids: Sequence[str]) -> dict[str, Passage]:
        """The cited passages held by the store."""
        return {p.id: p for p in self.b.passages(list(ids))}


class NameCatalog:
    """The store's typed node names, types and metadata in node order, read once on first use.

    What the LLM-free decomposition reads of a graph: it matches the names of nodes whose
    type resolves in the schema (:class:`~kgpath.methods.schema.decompose._TypeDetector`
    skips every other node), so only nodes with a non-empty ``type`` or a metadata that
    may hold a ``"schema_type"`` are read (a superset; an untyped 10^6-node store reads
    none instead of holding 10^6 nodes in the process).
    """

    def __init__(self, backend: CypherBackend) -> None:
        self.b = backend
        self._nodes: list[Node] | None = None
        self._lock = threading.Lock()

    @property
    def nodes(self) -> list[Node]:
        """Every node (id, name, type, metadata; no text or vector), in node order."""
        with self._lock:
            if self._nodes is None:
                self._nodes = self._read()
            return self._nodes

    def _read(self) -> list[Node]:
        s, after = self.b.schema, None
        out: list[Node] = []
        key = s.prop("n", s.order_property or s.id_property)
        items = [f"{s.prop('n', s.id_property)} AS id"] + [
            f"{s.prop('n', p)} AS {a}" for a, p in (
                ("name", s.name_property), ("type", s.type_property),
                ("metadata", s.metadata_property)) if p is not None]
        ret = f"RETURN {', '.join(items)}, {key} AS page_key ORDER BY {key} LIMIT $limit"
        typed = []
        if s.type_property is not None:
            typ = s.prop("n", s.type_property)
            typed.append(f"coalesce({typ} <> '', false)")
        if s.metadata_property is not None:
            typed.append(f"coalesce({s.prop('n', s.metadata_property)} CONTAINS $st, false)")
        if not typed:
            return out
        while True:
            where = f"WHERE ({' OR '.join(typed)}) " + ("" if after is None else
                                                        f"AND {key} > $after ")
            rows = self.b.driver.run(f"MATCH (n:{s.n}) {where}{ret}",
                                     {"after": after, "limit": self.b.page_size, "st": _ST})
            out += [NodeRow(r).node for r in rows]
            if len(rows) < self.b.page_size:
                return out
            after = rows[-1]["page_key"]

    def clear(self) -> None:
        """Forget the catalog (read again on next use)."""
        with self._lock:
            self._nodes = None
