"""The Cypher :class:`~kgpath.backends.base.GraphBackend`: a graph in a database.

Only what a query touches crosses the wire:

1. **Reachability** (Eq. 1 of PCR) is one variable-length shortest-path match with a depth
   bound, run by the database (:func:`~kgpath.backends.cypher.queries.reachable_hops`); the
   region's edges come from one one-hop expansion, and
   :func:`~kgpath.backends.cypher.queries.bfs_order` rebuilds the in-memory BFS tree from
   them (same order, same parents).
2. **Vector search** (:class:`~kgpath.backends.base.VectorSearch`): the candidates' rows
   (name, text, stored embedding) are fetched by id; their scores are the same float32 dot
   product as in memory. Nodes without a stored embedding are embedded from their text
   (cached by id, bounded). A global scan pages through the nodes in node order, keeping
   only the running top-k. With ``vectors=`` (:mod:`~kgpath.backends.cypher.vectors`), the
   global top-k of nodes and passages is an exact chunked scan of a float32 file beside the
   database instead (same scores, same ties), and nodes without a stored embedding read
   theirs from it.
3. **Neighbourhood push-down** (:class:`~kgpath.backends.base.NeighbourhoodPushDown`):
   distinct neighbour pairs and degrees of a batch of ids, in ``UNWIND`` batches.

Node keys are :class:`NodeRow` objects (the row travels with the key; equal by id). The
database holds the graph; the process holds only what a query reached. BM25 and hybrid
scores need corpus-wide statistics the database does not keep, so only ``mode="vector"``
is offered.

Evidence: a result needs a graph to resolve names and passage text.
:meth:`CypherBackend.evidence_graph` (the protocol's default) builds a small
:class:`~kgpath.graph.KnowledgeGraph` from the records of the result (hits, anchor, path
nodes and edges) plus the passages they cite, fetched from ``schema.passage_label`` nodes
(written by :func:`~kgpath.backends.cypher.load_graph`). Without a passage label, or with
passages missing from the database, the result's passage evidence keeps the nodes.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import time
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kgpath.backends.base import (
    BackendNames,
    EntityRecord,
    GraphBackend,
    Keys,
    NeighbourhoodPushDown,
    PassageEntityStore,
    PassageRecord,
    VectorSearch,
    parent_chain,
)
from kgpath.backends.cypher.drivers import CypherDriver, as_cypher_driver
from kgpath.backends.cypher.identifiers import quote_identifier
from kgpath.backends.cypher.loading import decode_vector
from kgpath.backends.cypher.queries import (
    Step,
    adjacent_pairs,
    bfs_order,
    expand_one_hop,
    fetch_nodes,
    fetch_passages,
    node_page,
    node_row,
    order_and_degree,
    parent_edges,
    passage_orders,
    passage_page,
    reachable_hops,
    rows_by_entity_key,
    rows_by_name,
)
from kgpath.backends.cypher.schema import CypherSchema, node_from_row, passage_from_row
from kgpath.backends.cypher.vectors import VectorFile, VectorFiles, check_file_rows
from kgpath.embeddings import Embedder, default_embedder
from kgpath.errors import BackendError, ConfigError, EmbeddingError, EmptyGraphError
from kgpath.graph import Direction, Edge, Node, Passage
from kgpath.index.graph_index import check_query
from kgpath.index.linking import NameLookup
from kgpath.search.vector import top_k

__all__ = ["CypherBackend", "CypherTree", "NodeRow"]

logger = logging.getLogger(__name__)


class NodeRow:
    """A node key of the Cypher backend: the node's id with its database row.

    Equal (and hashed) by id; :attr:`node` is the :class:`~kgpath.graph.Node` record.
    """

    __slots__ = ("id", "row", "_node")

    def __init__(self, row: Mapping[str, Any]) -> None:
        self.id: str = row["id"]
        self.row = row
        self._node: Node | None = None

    @property
    def node(self) -> Node:
        """The node record (built on first access)."""
        if self._node is None:
            self._node = node_from_row(self.row)
        return self._node

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NodeRow) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"NodeRow({self.id!r})"


@dataclass(frozen=True)
class CypherTree:
    """The BFS tree of one anchor, rebuilt from the database.

    A :class:`~kgpath.backends.base.BFSTree` whose keys are :class:`NodeRow` objects.
    """

    nodes: list[NodeRow]
    dist: np.ndarray
    parent_pos: np.ndarray
    steps: list[Step | None]
    """The edge from each node's parent (``None`` for the anchor)."""
    place: dict[str, int]

    def position_of(self, node: NodeRow) -> int:
        """Position of ``node`` (``-1`` if not reached)."""
        return self.place.get(node.id, -1)


class _Counting:
    """Driver view that counts the queries of one retrieval (for its trace)."""

    def __init__(self, driver: CypherDriver) -> None:
        self._driver = driver
        self.dialect = driver.dialect
        self.count = 0

    def run(self, query: str, parameters: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        self.count += 1
        return self._driver.run(query, parameters or {})


class CypherBackend(
    GraphBackend[NodeRow, CypherTree], VectorSearch[NodeRow], NeighbourhoodPushDown,
    PassageEntityStore,
):
    """:class:`~kgpath.backends.base.GraphBackend` over a Cypher database (keys: :class:`NodeRow`).

    Parameters
    ----------
    driver
        Anything :func:`~kgpath.backends.cypher.as_cypher_driver` accepts.
    embedder
        Embeds queries, and nodes that have no stored embedding (cached by id).
    schema
        Where fields live (:class:`CypherSchema`); the default matches ``load_graph``.
    page_size
        Rows per page when a global scan is needed (no anchor, or ``fallback="global"``).
    max_cached_embeddings
        Bound on the cache of embeddings computed for nodes without a stored one.
    vectors
        A :class:`~kgpath.backends.cypher.vectors.VectorFiles` (or its directory) written
        with the graph (``load_graph(..., vector_dir=...)``): global top-k from the file
        (exact, chunked reads) instead of the paged scan. Needs ``schema.order_property``
        (and ``passage_order_property`` for passages).

    Raises
    ------
    ConfigError
        If ``page_size`` is not a positive int, or ``vectors`` is given without the order
        properties that key its rows.
    """

    modes: tuple[str, ...] = ("vector",)
    blocking: bool = True

    def __init__(
        self,
        driver: Any,
        *,
        embedder: Embedder | None = None,
        schema: CypherSchema | None = None,
        page_size: int = 20_000,
        max_cached_embeddings: int = 200_000,
        vectors: VectorFiles | str | os.PathLike[str] | None = None,
    ) -> None:
        self.driver = as_cypher_driver(driver)
        self._embedder = embedder if embedder is not None else default_embedder()
        self.schema = schema or CypherSchema()
        if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size <= 0:
            raise ConfigError(f"page_size must be a positive int, got {page_size!r}")
        self.page_size = page_size
        self.max_cached_embeddings = max_cached_embeddings
        self._emb_cache: dict[str, np.ndarray] = {}
        self._labels: dict[str, bool] = {}  # shared with bound views
        self._run: CypherDriver | _Counting = self.driver
        self._t0 = 0.0
        self.vectors = (vectors if vectors is None or isinstance(vectors, VectorFiles)
                        else VectorFiles(vectors))
        if self.vectors is not None and (
                self.schema.order_property is None
                or (self.vectors.passages is not None
                    and self.schema.passage_order_property is None)):
            raise ConfigError("vectors= needs schema.order_property and "
                              "schema.passage_order_property: they key the file rows")

    @property
    def name(self) -> str:
        """``cypher/<dialect>``."""
        return f"cypher/{self.driver.dialect.name}"

    @property
    def embedder(self) -> Embedder:
        """Embeds queries, and nodes without a stored embedding."""
        return self._embedder

    def __repr__(self) -> str:
        return f"CypherBackend(driver={self.driver!r}, node_label={self.schema.node_label!r})"

    # -- per retrieval
    def bind(self) -> CypherBackend:
        """A shallow copy counting its queries (caches shared with this backend)."""
        view = copy.copy(self)
        view._run = _Counting(self.driver)
        view._t0 = time.perf_counter()
        return view

    def call_trace(self) -> dict[str, Any]:
        """``backend``, ``queries`` (round trips) and ``seconds`` of the bound retrieval."""
        count = self._run.count if isinstance(self._run, _Counting) else 0
        return {"backend": self.name, "queries": count,
                "seconds": time.perf_counter() - self._t0}

    # -- structure
    def node_count(self) -> int:
        """Number of ``node_label`` nodes."""
        return int(self._run.run(f"MATCH (n:{self.schema.n}) RETURN count(n) AS c", {})[0]["c"])

    def node_by_id(self, node_id: str) -> NodeRow | None:
        """The node with this id, or ``None``."""
        row = node_row(self._run, self.schema, node_id)
        return None if row is None else NodeRow(row)

    def names(self) -> NameLookup:
        """Anchor names by the stored entity key (``load_graph`` writes it), as in memory.

        One query per span; "Grace Krilanovich's" or "the Exies" link as with the in-memory
        key index. Without ``schema.entity_key_property``: :class:`BackendNames`.
        """
        return BackendNames(self) if self.schema.entity_key_property is None else _KeyNames(self)

    def nodes_by_name(self, name: str) -> list[NodeRow]:
        """Nodes with this normalised name, in node order (then id)."""
        rows = rows_by_name(self._run, self.schema, name)
        return [NodeRow(r) for r in sorted(rows, key=self._order_key)]

    def node(self, key: NodeRow) -> Node:
        """The node record carried by ``key``."""
        return key.node

    def _order_key(self, r: Mapping[str, Any]) -> tuple[int, int, str]:
        if self.schema.order_property is not None and r.get("ord") is not None:
            return (0, int(r["ord"]), r["id"])
        return (1, 0, r["id"])

    def reachable(
        self, anchor: NodeRow, *, max_depth: int | None, direction: Direction
    ) -> CypherTree:
        """Eq. (1) pushed down, then the in-memory BFS tree rebuilt from the region's edges."""
        drv, s, aid = self._run, self.schema, anchor.id
        hops = reachable_hops(drv, s, aid, max_depth=max_depth, direction=direction)
        steps = parent_edges(drv, s, hops, direction)
        order, parent = bfs_order(aid, hops, steps, direction=direction)
        rows = fetch_nodes(drv, s, order[1:])
        rows[aid] = dict(anchor.row)
        missing = [i for i in order if i not in rows]
        if missing:
            raise BackendError(
                f"reachable nodes vanished during the query (graph changed?): {missing[:5]}"
            )
        place = {nid: i for i, nid in enumerate(order)}
        return CypherTree(
            nodes=[anchor] + [NodeRow(rows[i]) for i in order[1:]],
            dist=np.fromiter((hops[i] for i in order), dtype=np.int32, count=len(order)),
            parent_pos=np.fromiter(
                (place[parent[i][0]] if i in parent else -1 for i in order),
                dtype=np.int32, count=len(order),
            ),
            steps=[parent[i][1] if i in parent else None for i in order],
            place=place,
        )

    def neighbours(self, key: NodeRow, *, direction: Direction) -> list[tuple[NodeRow, Edge]]:
        """``(neighbour, edge)`` of every edge at ``key``, in edge order (two queries)."""
        steps = expand_one_hop(self._run, self.schema, [key.id], direction=direction)
        steps.sort(key=lambda st: (not st.forward, _order(st.edge_order)))
        rows = fetch_nodes(self._run, self.schema, list(dict.fromkeys(
            st.neighbour for st in steps)))
        return [(NodeRow(rows[st.neighbour]), st.edge) for st in steps if st.neighbour in rows]

    def path(self, tree: CypherTree, pos: int) -> tuple[tuple[str, ...], tuple[Edge, ...]]:
        """Node ids and edges along the rebuilt parent pointers."""
        chain = parent_chain(tree.parent_pos, pos)
        return (
            tuple(tree.nodes[i].id for i in chain),
            tuple(tree.steps[i].edge for i in chain[1:]),  # type: ignore[union-attr]
        )

    def path_node(self, tree: CypherTree, node_id: str) -> Node:
        """The record carried by the tree (no query)."""
        return tree.nodes[tree.place[node_id]].node

    def passages(self, ids: Sequence[str]) -> list[Passage]:
        """Passages by id from ``schema.passage_label`` nodes (none without that label)."""
        return [passage_from_row(r) for r in self._passage_rows(list(ids))]

    def _passage_rows(self, ids: list[str]) -> list[dict[str, Any]]:
        label = self.schema.passage_label
        if not ids or label is None:
            return []
        if label not in self._labels:  # a database not written by load_graph may lack it
            # one-time schema probe, on the raw driver: not one of this retrieval's queries
            self._labels[label] = self.driver.dialect.has_label(self.driver, label)
        return fetch_passages(self._run, self.schema, ids) if self._labels[label] else []

    # -- neighbourhood push-down
    def adjacent_pairs(
        self, ids: Sequence[str], *, batch_size: int = 5000
    ) -> list[tuple[str, str, bool]]:
        """:func:`~kgpath.backends.cypher.queries.adjacent_pairs` (both directions)."""
        return adjacent_pairs(self._run, self.schema, ids, batch_size=batch_size)

    def order_and_degree(
        self, ids: Sequence[str], *, directed: bool, batch_size: int = 5000
    ) -> dict[str, tuple[Hashable, int]]:
        """:func:`~kgpath.backends.cypher.queries.order_and_degree`."""
        return order_and_degree(self._run, self.schema, ids, directed=directed,
                                batch_size=batch_size)

    # -- similarity
    def embed_query(self, query: str) -> np.ndarray:
        """The embedder's query embedding."""
        return self.embedder.embed_queries([check_query(query)])[0]

    async def aembed_query(self, query: str) -> np.ndarray:
        """Native async query embedding."""
        return (await self.embedder.aembed_queries([check_query(query)]))[0]

    def check_query_vector(self, query_vec: Any) -> np.ndarray:
        """1-D float32 (its dimension is checked against the node embeddings when scoring)."""
        return np.asarray(query_vec, dtype=np.float32).reshape(-1)

    def score(
        self, query: str, query_vec: np.ndarray, candidates: Keys[NodeRow], *,
        mode: str = "vector", alpha: float = 0.7,
    ) -> np.ndarray:
        """Eq. (2)'s ``sim(q, v)``: the same float32 dot product as :class:`VectorIndex`."""
        if mode != "vector":
            raise ConfigError(f"the Cypher backend scores mode='vector' only, got {mode!r}")
        if not len(candidates):
            return np.zeros(0, np.float32)
        mat = self._vectors([c.row for c in candidates])
        if mat.shape[1] != query_vec.shape[0]:
            raise EmbeddingError(
                f"query embedding has dimension {query_vec.shape[0]}, node embeddings have "
                f"{mat.shape[1]}"
            )
        # per-row summation (not BLAS): equal vectors score equal wherever they sit in a
        # page, so ties go by node order (kgpath.backends.cypher.vectors, module docstring)
        return np.einsum("ij,j->i", mat, np.asarray(query_vec, dtype=np.float32))

    def _vectors(self, rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """Stored embeddings of ``rows`` (in order); missing ones embedded and cached."""
        out: list[np.ndarray | None] = []
        todo: list[int] = []
        nodes = None if self.vectors is None else self.vectors.nodes
        got: dict[int, np.ndarray] = {}
        if nodes is not None:  # one read per run of rows instead of embedding them
            at = [i for i, r in enumerate(rows) if not r.get("embedding")
                  and r.get("ord") is not None and 0 <= int(r["ord"]) < nodes.count]
            ords = [int(rows[i]["ord"]) for i in at]
            got = dict(zip(at, nodes.vectors(ords)))
            # the file rows are those nodes (not a generation from before an update)
            check_file_rows(nodes, np.asarray(ords), nodes.ids(ords),
                        {str(rows[i]["id"]): o for i, o in zip(at, ords)})
        for i, r in enumerate(rows):
            v = decode_vector(r.get("embedding"))
            if v is not None and len(v):
                out.append(v)
            elif nodes is not None and i in got:
                out.append(got[i])
            elif r["id"] in self._emb_cache:
                out.append(self._emb_cache[r["id"]])
            else:
                out.append(None)
                todo.append(i)
        if todo:
            texts = [node_from_row(rows[i]).search_text for i in todo]
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

    def most_similar(self, query_vec: np.ndarray) -> NodeRow:
        """Top-1 of a paged global scan."""
        keys, _, _ = self.global_top("", query_vec, 1, mode="vector", alpha=1.0)
        if not keys:
            raise EmptyGraphError(f"the database has no {self.schema.node_label!r} nodes")
        return keys[0]

    def global_top(
        self, query: str, query_vec: np.ndarray, k: int, *, mode: str = "vector",
        alpha: float = 0.7, exclude: NodeRow | None = None,
    ) -> tuple[list[NodeRow], np.ndarray, int]:
        """Top-``k`` nodes of the whole database, from a keyset-paged scan in node order.

        Ties go to the earlier node, as in memory. With ``vectors=``, a chunked scan of the
        node vector file (:meth:`_file_global_top`).
        """
        if self.vectors is not None and self.vectors.nodes is not None and mode == "vector":
            return self._file_global_top(self.vectors.nodes, query_vec, k, exclude)
        best: list[tuple[float, int, NodeRow]] = []
        seen = 0
        after: Any = None
        while True:
            rows = node_page(self._run, self.schema, after, self.page_size)
            if not rows:
                break
            after = rows[-1]["page_key"]
            full = len(rows) == self.page_size
            keys = [NodeRow(r) for r in rows if exclude is None or r["id"] != exclude.id]
            if keys:
                sc = self.score(query, query_vec, keys, mode=mode, alpha=alpha)
                for j in top_k(sc, min(k, len(keys))):
                    best.append((float(sc[j]), seen + int(j), keys[int(j)]))
                best.sort(key=lambda t: (-t[0], t[1]))
                del best[k:]
            seen += len(keys)
            if not full:
                break
        return (
            [key for _, _, key in best],
            np.asarray([s for s, _, _ in best], dtype=np.float32),
            seen,
        )

    def _file_global_top(
        self, vf: VectorFile, query_vec: np.ndarray, k: int, exclude: NodeRow | None,
    ) -> tuple[list[NodeRow], np.ndarray, int]:
        """Top-``k`` rows of the node file, resolved to database rows and checked fresh."""
        self._check_count(vf, self.node_count(), "node")
        skip = None
        if exclude is not None:
            skip = -1 if exclude.row.get("ord") is None else int(exclude.row["ord"])
        pos, sc = vf.top(query_vec, k, exclude=skip)
        ids = vf.ids(pos)
        rows = fetch_nodes(self._run, self.schema, ids)
        check_file_rows(vf, pos, ids, {i: r.get("ord") for i, r in rows.items()})
        return ([NodeRow(rows[i]) for i in ids], sc.astype(np.float32),
                vf.count - (skip is not None and 0 <= skip < vf.count))

    def _check_count(self, vf: VectorFile, held: int, what: str) -> None:
        if held != vf.count:
            raise BackendError(
                f"the vector file {str(vf.path)!r} has {vf.count} {what} rows but the database "
                f"holds {held} {what}s: rewrite it (write_vector_files) after changing the graph")

    # -- passages and their entities (PassageEntityStore)
    def passage_top(self, query_vec: np.ndarray, n: int) -> list[tuple[str, float]]:
        """Exact top-``n`` passages from a keyset-paged scan in passage order.

        Raises
        ------
        ConfigError
            When a passage has no stored vector (load from a ``GraphIndex``).
        """
        qv = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        vf = None if self.vectors is None else self.vectors.passages
        if vf is not None and self.schema.passage_label is not None:
            label = quote_identifier(self.schema.passage_label)
            held = self._run.run(f"MATCH (p:{label}) RETURN count(p) AS c", {})[0]["c"]
            self._check_count(vf, int(held), "passage")
            pos, sc = vf.top(qv, n)
            ids = vf.ids(pos)
            check_file_rows(vf, pos, ids, passage_orders(self._run, self.schema, ids))
            return [(pid, float(x)) for pid, x in zip(ids, sc)]
        best: list[tuple[float, int, str]] = []
        after: Any = None
        seen = 0
        while self.schema.passage_label is not None:
            rows = passage_page(self._run, self.schema, after, self.page_size)
            if not rows:
                break
            after = rows[-1]["page_key"]
            sc = np.einsum("ij,j->i", _passage_matrix(rows, qv.shape[0]), qv)  # as score()
            for j in top_k(sc, min(n, len(rows))):
                best.append((float(sc[j]), seen + int(j), rows[int(j)]["id"]))
            best.sort(key=lambda t: (-t[0], t[1]))
            del best[n:]
            seen += len(rows)
            if len(rows) < self.page_size:
                break
        return [(pid, score) for score, _, pid in best]

    def passage_records(self, ids: Sequence[str]) -> dict[str, PassageRecord]:
        """Passage records by id (order, citing node ids, stored vector)."""
        out = {}
        vf = None if self.vectors is None else self.vectors.passages
        from_file: dict[str, int] = {}
        for r in fetch_passages(self._run, self.schema, list(ids), full=True):
            emb = decode_vector(r.get("embedding"))
            if emb is None and vf is not None and r.get("ord") is not None:
                emb = vf.vectors([int(r["ord"])])[0]
                from_file[str(r["id"])] = int(r["ord"])
            out[str(r["id"])] = PassageRecord(
                passage_from_row(r),
                (1, 0, str(r["id"])) if r.get("ord") is None else (0, int(r["ord"]), ""),
                tuple(_json_list(r.get("entities"))),
                emb)
        if vf is not None and from_file:  # those file rows are these passages
            pos = list(from_file.values())
            check_file_rows(vf, np.asarray(pos), vf.ids(pos), from_file)
        return out

    def passages_held(self, ids: Sequence[str]) -> set[str]:
        """Ids of the passages held (one light id query per 10^4 ids)."""
        s = self.schema
        if s.passage_label is None or not ids:
            return set()
        q = (f"UNWIND $ids AS x MATCH (p:{quote_identifier(s.passage_label)}) "
             f"WHERE {self.driver.dialect.id_match(s, 'p', 'x', passage=True)} "
             f"RETURN {s.prop('p', s.passage_id_property)} AS id")
        uniq = list(dict.fromkeys(ids))
        return {str(r["id"]) for start in range(0, len(uniq), 10_000)
                for r in self._run.run(q, {"ids": uniq[start : start + 10_000]})}

    def entity_records(self, ids: Sequence[str]) -> dict[str, EntityRecord]:
        """Node records by id, with their node order."""
        rows = fetch_nodes(self._run, self.schema, list(ids), embedding=False)
        return {i: EntityRecord(node_from_row(r), self._order_key(r)) for i, r in rows.items()}

    def entities_by_key(self, keys: Sequence[str]) -> dict[str, EntityRecord]:
        """Every node whose entity key is one of ``keys`` (one query per 10^4 keys)."""
        return {r["id"]: EntityRecord(node_from_row(r), self._order_key(r))
                for r in rows_by_entity_key(self._run, self.schema, list(keys))}


class _KeyNames:
    """:class:`NameLookup` over the store's entity-key column (``CypherBackend.names``)."""

    def __init__(self, b: CypherBackend) -> None:
        self.b = b

    def candidates(self, key: str, span: str) -> list[NodeRow]:
        """The nodes whose entity key is ``key``, in node order (then id)."""
        rows = rows_by_entity_key(self.b._run, self.b.schema, [key], embedding=True)
        return [NodeRow(r) for r in sorted(rows, key=self.b._order_key)]

    def node(self, k: NodeRow) -> Node:
        return k.node  # the record carried by the key


def _json_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    v = json.loads(value) if isinstance(value, str) else value
    return [str(x) for x in v]


def _passage_matrix(rows: Sequence[Mapping[str, Any]], dim: int) -> np.ndarray:
    vecs = [decode_vector(r.get("embedding")) for r in rows]
    missing = [r["id"] for r, v in zip(rows, vecs) if v is None or v.shape != (dim,)]
    if missing:
        raise ConfigError(
            f"passages without a stored vector of dimension {dim}: {missing[:5]!r}; load "
            "the graph from a GraphIndex (load_graph(driver, index)) to store them"
        )
    return np.asarray(vecs, dtype=np.float32)


def _order(value: Any) -> tuple[int, Any]:
    """A sort key for edge order values (``None`` last)."""
    return (1, 0) if value is None else (0, value)
