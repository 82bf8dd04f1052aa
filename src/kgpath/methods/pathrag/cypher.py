"""PathRAG's section 4.2 over a graph store: fetch only the neighbourhood the paths need.

The in-memory PathRAG (:mod:`kgpath.methods.pathrag`) runs on a
:class:`~kgpath.methods.pathrag.flow.FlowAdjacency` of the whole graph. Here the store
answers the neighbourhood queries through the
:class:`~kgpath.backends.base.NeighbourhoodPushDown` capability (distinct neighbour pairs
and degrees, in bounded batches; a :class:`~kgpath.backends.cypher.CypherBackend` runs them
as ``UNWIND`` queries) and the same reliability strategy
(:mod:`kgpath.methods.pathrag.reliability`) runs on the small local adjacency built from
the answers. Local node indices follow the store's node order (``order_property``, written
by :func:`~kgpath.backends.cypher.load_graph` as the graph's node index), so every
tie-break, and therefore every path and reliability, equals the in-memory run. What is
fetched depends on the variant (:meth:`ReliabilityStrategy.neighbourhood`):

* **edge flow** (``reliability="edge_flow"``, the default; the authors' code): the ball of
  radius ``⌊max_hops/2⌋`` around ``V_q``, level by level, then the edges among its nodes
  (:meth:`LocalGraph.expand_within`: on a power-law graph the ball holds hubs, so only its
  light nodes are expanded and the edges among the heavy ones are filtered in the store;
  measured at 10^5 nodes / 10^6 edges, a ball of ~800 nodes sent ~66k edge rows per
  question, 2-15 s, before; ~3k-40k after);
* **literal Eq. (4)** (``reliability="literal_eq4"``): Eq. (2) needs ``|N(v,·)|`` of every
  reached node and the neighbours of every node that emits; nodes are expanded lazily
  until every emitting node is expanded (at most one round per flow level).

``exclude_edge_types`` (:class:`PathRAGConfig`) is pushed down too: over a
:class:`~kgpath.backends.cypher.CypherBackend` the neighbour and degree queries skip the
edges of those types (:class:`TypedPushDown`), as the in-memory ``flow_adjacency`` does;
an edge without a type is kept.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgpath.backends.base import GraphBackend, InProcessGraph, NeighbourhoodPushDown
from kgpath.errors import BackendError, CapabilityError, NodeNotFoundError
from kgpath.graph import KnowledgeGraph
from kgpath.methods.pathrag.config import PathRAGConfig
from kgpath.methods.pathrag.flow import FlowAdjacency
from kgpath.methods.pathrag.paths import CandidatePool, PathCandidate
from kgpath.methods.pathrag.reliability import reliability_strategy

__all__ = ["DatabasePathPool", "LocalGraph", "TypedPushDown", "edge_counts", "edges_among",
           "pathrag_pool"]

HEAVY_DEGREE = 16
"""Nodes of the edge-flow ball with more distinct neighbours are not expanded (cost only;
16 measured best of 8/16/32/64 at 10^5 nodes / 10^6 edges; re-checked at 10^6 / 10^7 after
the edge-into lookups, 60 questions each: p95 342/324 ms at 16, 347 at 8, 386 at 32, 383
at 64)."""
MAX_HEAVY = 600
"""At most this many heavy nodes (the store compares each walked edge with their list)."""


@dataclass(frozen=True)
class DatabasePathPool:
    """The candidate pool of section 4.2 computed against a graph store.

    ``pool`` holds :class:`PathCandidate` objects whose ``nodes`` are the store's node
    order values (the in-memory graph's node indices after ``load_graph``); ``ids`` gives
    the node ids of each candidate, aligned with ``pool``. ``queries`` counts round trips,
    ``fetched_nodes`` the nodes the process saw, ``rounds`` the expansion rounds.
    """

    pool: CandidatePool
    ids: tuple[tuple[str, ...], ...]
    queries: int
    fetched_nodes: int
    rounds: int
    stats: dict[str, Any] = field(default_factory=dict)


class LocalGraph:
    """What the process knows of the store's graph: orders, degrees, fetched edges.

    Reads the store through its :class:`~kgpath.backends.base.NeighbourhoodPushDown`
    capability, ``batch_size`` ids per round trip.
    """

    def __init__(self, store: NeighbourhoodPushDown, batch_size: int,
                 heavy_degree: int = HEAVY_DEGREE, max_heavy: int = MAX_HEAVY) -> None:
        self.store, self.batch = store, batch_size
        self.heavy_degree, self.max_heavy = heavy_degree, max_heavy
        self.order: dict[str, Any] = {}  # node order values (int after load_graph) or ids
        self.degree: dict[str, int] = {}
        self.edges: set[tuple[str, str]] = set()
        self.expanded: set[str] = set()

    def learn(self, ids: Sequence[str], direction: str) -> None:
        """Order value and distinct-neighbour degree ``|N(v,·)|`` of new nodes (pushed down)."""
        new = [i for i in dict.fromkeys(ids) if i not in self.order]
        if not new:
            return
        got = self.store.order_and_degree(new, directed=direction == "directed",
                                          batch_size=self.batch)
        for nid, (order, deg) in got.items():
            self.order[nid] = order
            self.degree[nid] = deg
        missing = [i for i in new if i not in self.order]
        if missing:
            raise NodeNotFoundError(f"node {missing[0]!r} is not in the database",
                                    key=missing[0])

    def expand(self, ids: Sequence[str]) -> set[str]:
        """Every edge at ``ids`` (both directions, pushed down); returns the neighbours."""
        todo = [i for i in dict.fromkeys(ids) if i not in self.expanded]
        nbrs: set[str] = set()
        for a, b, fwd in self.store.adjacent_pairs(todo, batch_size=self.batch):
            self.edges.add((a, b) if fwd else (b, a))
            nbrs.add(b)
        self.expanded.update(todo)
        return nbrs

    def expand_within(self, ids: Sequence[str], direction: str) -> None:
        """Every edge between two of ``ids`` (and their orders), without sending hubs' edges.

        The edge-flow ball's inner edges. Exact: an edge with a light end (at most
        ``heavy_degree`` distinct neighbours, or past the ``max_heavy`` largest) is found by
        expanding that end; an edge between two heavy ends by :func:`edges_among` (the heavy
        nodes collected in the store, each one's edges kept there when they end in that
        list), so a hub's thousands of other edges never leave the store. A store without
        that query expands every node. ``heavy_degree`` changes the cost, never the edges.
        """
        counted = edge_counts(self.store, [i for i in ids if i not in self.order], self.batch)
        size: dict[str, int] = {}
        if counted is not None:
            self.order.update({k: v[0] for k, v in counted.items()})
            size = {k: v[1] for k, v in counted.items()}
        self.learn(ids, direction)  # the others (an unknown id raises)
        size = {**self.degree, **size}
        todo = [i for i in dict.fromkeys(ids) if i not in self.expanded]
        big = sorted((i for i in todo if size.get(i, 0) > self.heavy_degree),
                     key=lambda i: (-size[i], i))[:self.max_heavy]
        if len(big) < 2:
            self.expand(todo)
            return
        heavy = set(big)
        self.expand([i for i in todo if i not in heavy])
        found = edges_among(self.store, big, self.batch)
        if found is None:
            self.expand(big)
            return
        self.edges.update(found)
        self.expanded.update(big)

    def restrict(self, keep: Iterable[str]) -> None:
        """Forget the nodes (and their edges) outside ``keep``."""
        keep = set(keep)
        self.edges = {(a, b) for a, b in self.edges if a in keep and b in keep}
        self.order = {k: v for k, v in self.order.items() if k in keep}

    def adjacency(
        self, direction: str, *, true_degrees: bool
    ) -> tuple[FlowAdjacency, list[str]]:
        """Local :class:`FlowAdjacency` over the known nodes, indices in node order.

        With ``true_degrees`` the degree array holds the database's ``|N(v,·)|``; a node not
        yet expanded gets that many edges to a sink placed last (so a round in which it
        emits stays well-formed; :func:`pathrag_pool` then expands it and runs again).
        """
        names = sorted(self.order, key=lambda i: (self.order[i], i))
        place = {nid: k for k, nid in enumerate(names)}
        n = len(names) + 1  # + the sink
        pairs = {(place[a], place[b]) for a, b in self.edges if a in place and b in place}
        if direction == "undirected":
            pairs |= {(b, a) for a, b in pairs}
        lists: list[list[int]] = [[] for _ in range(n)]
        for a, b in pairs:
            if not true_degrees or names[a] in self.expanded:
                lists[a].append(b)
        if true_degrees:
            for k, nid in enumerate(names):
                if nid not in self.expanded:
                    lists[k] = [n - 1] * self.degree[nid]
        counts = np.fromiter((len(x) for x in lists), dtype=np.int64, count=n)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        indices = np.fromiter((b for x in lists for b in sorted(x)), dtype=np.int64,
                              count=int(counts.sum()))
        return FlowAdjacency(indptr, indices, counts, direction), names  # type: ignore[arg-type]


def pathrag_pool(
    store: GraphBackend[Any, Any],
    node_ids: Sequence[str],
    config: PathRAGConfig | None = None,
    *,
    batch_size: int = 5000,
    max_rounds: int = 1000,
    heavy_degree: int = HEAVY_DEGREE,
) -> DatabasePathPool:
    """Section 4.2 for the retrieved nodes ``node_ids`` (``V_q``, in retrieval order).

    ``store`` is a backend with the :class:`~kgpath.backends.base.NeighbourhoodPushDown`
    capability (e.g. a :class:`~kgpath.backends.cypher.CypherBackend`). Same paths,
    resources and reliabilities as the in-memory pool on the same graph (module
    docstring); only the neighbourhood the paths need is fetched, in batches of
    ``batch_size`` ids. ``queries`` counts the store's round trips when it counts them
    (:meth:`~kgpath.backends.base.GraphBackend.call_trace`). ``heavy_degree``: ball nodes
    with more neighbours are not expanded for the edge flow (:meth:`LocalGraph.expand_within`;
    the same paths, less read off hubs).

    Raises
    ------
    CapabilityError
        When ``store`` cannot push neighbourhood queries down (or, with
        ``exclude_edge_types``, is not a Cypher backend).
    """
    cfg = config or PathRAGConfig()
    bound = store.bind()
    push = bound.capability(NeighbourhoodPushDown)
    if cfg.exclude_edge_types:
        push = TypedPushDown.of(bound, cfg.exclude_edge_types)
    loc = LocalGraph(push, batch_size, heavy_degree)
    starts = list(dict.fromkeys(node_ids))
    loc.learn(starts, cfg.direction)
    strategy = reliability_strategy(cfg.reliability)
    adj, names, rounds = strategy.neighbourhood(loc, starts, cfg, max_rounds)
    place = {nid: k for k, nid in enumerate(names)}
    pool = strategy.pool(adj, [place[i] for i in starts], cfg)
    queries = int(bound.call_trace().get("queries", 0)) + getattr(push, "queries", 0)
    return _globalise(pool, names, loc, rounds, queries)


def _globalise(
    pool: CandidatePool, names: list[str], loc: LocalGraph, rounds: int, queries: int
) -> DatabasePathPool:
    """Candidates with database node order values instead of local indices."""
    glob = [loc.order[n] for n in names]
    cands = [PathCandidate(tuple(glob[i] for i in c.nodes), c.resources, c.reliability)
             for c in pool]
    stats = dict(pool.stats)
    if "propagations" in stats:
        stats["propagations"] = [{**p, "start": glob[p["start"]]} for p in stats["propagations"]]
    return DatabasePathPool(
        pool=CandidatePool(cands, stats),
        ids=tuple(tuple(names[i] for i in c.nodes) for c in pool),
        queries=queries, fetched_nodes=len(loc.order), rounds=rounds, stats=stats,
    )


def edge_counts(store: Any, ids: Sequence[str], batch_size: int
                ) -> dict[str, tuple[Any, int]] | None:
    """``{id: (node order, edges in + out)}`` from FalkorDB's ``indegree``/``outdegree``.

    The size the heavy-node split of :meth:`LocalGraph.expand_within` needs (every edge
    type, parallel edges counted: cost only), read without walking a hub's edges through
    the query engine (``count(DISTINCT m)`` did, ~30% of a question at 10^5 nodes).
    ``None`` on another engine (the caller learns distinct-neighbour degrees instead).
    """
    drv, s = getattr(store, "driver", None), getattr(store, "schema", None)
    if drv is None or s is None or getattr(drv.dialect, "name", "") != "falkordb" \
            or s.order_property is None:
        return None
    q = (f"UNWIND $ids AS x MATCH (n:{s.n}) WHERE {drv.dialect.id_match(s, 'n', 'x')} "
         f"RETURN {s.prop('n', s.id_property)} AS id, {s.prop('n', s.order_property)} AS ord, "
         f"outdegree(n) + indegree(n) AS d")
    out: dict[str, tuple[Any, int]] = {}
    ids = list(dict.fromkeys(ids))
    for start in range(0, len(ids), batch_size):
        for r in drv.run(q, {"ids": ids[start:start + batch_size]}):
            out[r["id"]] = (r["id"] if r["ord"] is None else r["ord"], int(r["d"]))
    return out


def edges_among(store: Any, ids: Sequence[str], batch_size: int
                ) -> set[tuple[str, str]] | None:
    """Directed edges ``(a, b)`` with both ends in ``ids``, filtered in the store.

    Over a Cypher store (a :class:`~kgpath.backends.cypher.CypherBackend` or a
    :class:`TypedPushDown`, whose excluded types are skipped): the nodes are bound by id and
    collected once, then every ordered pair of them is matched edge-into (``h^2`` lookups;
    a hub's other edges are never walked nor sent). Measured on the 10^7-edge graph, 600
    heavy nodes of one question: 39 ms, against 80 ms when each one's out-edges were
    walked and kept when they ended in the list (``b IN hs`` compares with the whole
    list). ``None`` for any other store, or when the engine refuses the query (the caller
    then expands the nodes).
    """
    drv, s = getattr(store, "driver", None), getattr(store, "schema", None)
    if drv is None or s is None or not hasattr(s, "rels"):
        return None
    keep = getattr(store, "keep", None)
    q = (f"UNWIND $ids AS y MATCH (h:{s.n}) WHERE {drv.dialect.id_match(s, 'h', 'y')} "
         f"WITH collect(h) AS hs UNWIND hs AS a UNWIND hs AS b MATCH (a)-[r:{s.rels}]->(b) "
         f"{'WHERE ' + keep + ' ' if keep else ''}"
         f"RETURN DISTINCT {s.prop('a', s.id_property)} AS a, {s.prop('b', s.id_property)} AS b")
    params: dict[str, Any] = {"ids": list(ids)}
    if keep:
        params["ex"] = store.exclude
        store.queries += 1
    try:
        return {(r["a"], r["b"]) for r in drv.run(q, params)}
    except BackendError:
        return None


class TypedPushDown(NeighbourhoodPushDown):
    """:class:`NeighbourhoodPushDown` over a Cypher backend, skipping edges of some types.

    The same ``UNWIND`` batches as :func:`~kgpath.backends.cypher.queries.adjacent_pairs`
    and :func:`~kgpath.backends.cypher.queries.order_and_degree`, with
    ``r.type IS NULL OR NOT (r.type IN $ex)`` on the edge (``schema.edge_type_property``):
    the neighbourhood of ``flow_adjacency(graph, direction, exclude_types)``. ``queries``
    counts its round trips.
    """

    def __init__(self, backend: Any, exclude: Sequence[str]) -> None:
        self.driver, self.schema = backend.driver, backend.schema
        self.exclude = sorted(set(exclude))
        self.queries = 0
        s = self.schema
        t = s.prop("r", s.edge_type_property or "type")
        self.keep = f"({t} IS NULL OR NOT ({t} IN $ex))"

    @classmethod
    def of(cls, backend: GraphBackend[Any, Any], exclude: Sequence[str]) -> NeighbourhoodPushDown:
        """The typed push-down of ``backend`` (its plain one when edges carry no type).

        Raises
        ------
        CapabilityError
            When ``backend`` is neither a Cypher backend (no driver and schema to query)
            nor an in-process graph (filtered here, edge by edge).
        """
        if isinstance(backend, InProcessGraph):
            return _MemoryTypedPushDown(backend.graph, exclude)
        schema = getattr(backend, "schema", None)
        if getattr(backend, "driver", None) is None or schema is None:
            raise CapabilityError(
                f"exclude_edge_types={tuple(exclude)!r} needs a Cypher backend to filter edge "
                f"types in the store, got {type(backend).__name__}; pass exclude_edge_types=()",
                capability="NeighbourhoodPushDown")
        if schema.edge_type_property is None:  # no edge has a type: nothing is excluded
            return backend.capability(NeighbourhoodPushDown)
        return cls(backend, exclude)

    def _run(self, query: str, ids: Sequence[str], batch_size: int) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        ids = list(ids)
        for start in range(0, len(ids), batch_size):
            self.queries += 1
            rows += self.driver.run(query, {"ids": ids[start:start + batch_size],
                                            "ex": self.exclude})
        return rows

    def adjacent_pairs(
        self, ids: Sequence[str], *, batch_size: int
    ) -> list[tuple[str, str, bool]]:
        """``(node, neighbour, forward)`` once per distinct neighbour and direction."""
        s, out = self.schema, []
        if not ids:
            return []
        for pattern, fwd in ((f"(n:{s.n})-[r:{s.rels}]->(m:{s.n})", True),
                             (f"(m:{s.n})-[r:{s.rels}]->(n:{s.n})", False)):
            q = (f"UNWIND $ids AS x MATCH {pattern} WHERE "
                 f"{self.driver.dialect.id_match(s, 'n', 'x')} AND {self.keep} "
                 f"RETURN DISTINCT {s.prop('n', s.id_property)} AS a, "
                 f"{s.prop('m', s.id_property)} AS b")
            out += [(r["a"], r["b"], fwd) for r in self._run(q, ids, batch_size)]
        return out

    def order_and_degree(
        self, ids: Sequence[str], *, directed: bool, batch_size: int
    ) -> dict[str, tuple[Hashable, int]]:
        """``{id: (node order, distinct neighbours over the kept edges)}``."""
        s = self.schema
        if not ids:
            return {}
        arrow = "->" if directed else "-"
        ord_expr = s.prop("n", s.order_property) if s.order_property else "NULL"
        q = (f"UNWIND $ids AS x MATCH (n:{s.n}) WHERE {self.driver.dialect.id_match(s, 'n', 'x')} "
             f"OPTIONAL MATCH (n)-[r:{s.rels}]{arrow}(m:{s.n}) WHERE {self.keep} "
             f"RETURN {s.prop('n', s.id_property)} AS id, {ord_expr} AS ord, "
             f"count(DISTINCT m) AS deg")
        return {r["id"]: (r["id"] if r["ord"] is None else r["ord"], int(r["deg"]))
                for r in self._run(q, ids, batch_size)}


class _MemoryTypedPushDown(NeighbourhoodPushDown):
    """:class:`TypedPushDown`'s answers over an in-process graph (edges of ``exclude`` skipped)."""

    def __init__(self, graph: KnowledgeGraph, exclude: Sequence[str]) -> None:
        skip = set(exclude)
        self.graph = graph
        self.queries = 0
        self.out: dict[str, dict[str, None]] = {}
        self.into: dict[str, dict[str, None]] = {}
        for e in graph.edges:
            if e.type is None or e.type not in skip:
                self.out.setdefault(e.source, {})[e.target] = None
                self.into.setdefault(e.target, {})[e.source] = None

    def adjacent_pairs(
        self, ids: Sequence[str], *, batch_size: int
    ) -> list[tuple[str, str, bool]]:
        """``(node, neighbour, forward)`` once per distinct neighbour and direction."""
        return [*((a, b, True) for a in ids for b in self.out.get(a, ())),
                *((a, b, False) for a in ids for b in self.into.get(a, ()))]

    def order_and_degree(
        self, ids: Sequence[str], *, directed: bool, batch_size: int
    ) -> dict[str, tuple[Hashable, int]]:
        """``{id: (node index, distinct neighbours over the kept edges)}``."""
        g = self.graph
        out: dict[str, tuple[Hashable, int]] = {}
        for nid in ids:
            if nid in g:
                nb = set(self.out.get(nid, ()))
                if not directed:
                    nb |= set(self.into.get(nid, ()))
                out[nid] = (g.index_of(nid), len(nb))
        return out
