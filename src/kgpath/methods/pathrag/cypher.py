"""PathRAG's section 4.2 over a Cypher database: fetch only the neighbourhood the paths need.

The in-memory PathRAG (:mod:`kgpath.methods.pathrag`) runs on a
:class:`~kgpath.methods.pathrag.flow.FlowAdjacency` of the whole graph. Here the database
answers the neighbourhood queries (one-hop expansions and distinct-neighbour degrees, in
bounded ``UNWIND`` batches) and the same in-memory functions run on the small local
adjacency built from the answers. Local node indices follow the database's node order
(``order_property``, written by :func:`~kgpath.backends.cypher.load_graph` as the graph's
node index), so every tie-break, and therefore every path and reliability, equals the
in-memory run:

* **edge flow** (``reliability="edge_flow"``, the default; the authors' code): every node
  of a simple path of at most ``max_hops`` hops between two retrieved nodes lies within
  ``⌊max_hops/2⌋`` hops of one of them. The ball of that radius is fetched level by level,
  then the edges among its nodes; :func:`~kgpath.methods.pathrag.edgeflow.edge_flow_pool`
  runs on that subgraph (paths outside it do not exist, so the DFS finds the same paths in
  the same order).
* **literal Eq. (4)** (``reliability="literal_eq4"``): Eq. (2) needs ``|N(v,·)|`` of every
  reached node and the neighbours of every node that emits. Nodes are expanded lazily:
  propagate (Eqs. 2-3) on what is known, fetch the neighbour lists of the emitting nodes not
  yet expanded, repeat until every emitting node is expanded (at most one round per flow
  level); then :func:`~kgpath.methods.pathrag.paths.prune_paths` runs once more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgpath.backends.cypher.drivers import CypherDriver, as_cypher_driver
from kgpath.backends.cypher.schema import CypherSchema
from kgpath.errors import ConfigError, NodeNotFoundError
from kgpath.methods.pathrag.config import PathRAGConfig
from kgpath.methods.pathrag.edgeflow import edge_flow_pool
from kgpath.methods.pathrag.flow import FlowAdjacency, propagate_resources
from kgpath.methods.pathrag.paths import CandidatePool, PathCandidate, prune_paths

__all__ = ["DatabasePathPool", "pathrag_pool"]


@dataclass(frozen=True)
class DatabasePathPool:
    """The candidate pool of section 4.2 computed against a database.

    ``pool`` holds :class:`PathCandidate` objects whose ``nodes`` are the database's node
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


class _Local:
    """What the process knows of the database graph: orders, degrees, fetched edges."""

    def __init__(self, driver: CypherDriver, schema: CypherSchema, batch_size: int) -> None:
        self.drv, self.s, self.batch = driver, schema, batch_size
        self.order: dict[str, Any] = {}
        self.degree: dict[str, int] = {}
        self.edges: set[tuple[str, str]] = set()
        self.expanded: set[str] = set()
        self.queries = 0

    def _run(self, query: str, ids: list[str]) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for start in range(0, len(ids), self.batch):
            self.queries += 1
            rows.extend(self.drv.run(query, {"ids": ids[start : start + self.batch]}))
        return rows

    def learn(self, ids: Sequence[str], direction: str) -> None:
        """Order value and distinct-neighbour degree ``|N(v,·)|`` of new nodes (pushed down)."""
        new = [i for i in dict.fromkeys(ids) if i not in self.order]
        if not new:
            return
        s = self.s
        arrow = "->" if direction == "directed" else "-"
        ord_expr = s.prop("n", s.order_property) if s.order_property else "NULL"
        q = (
            f"UNWIND $ids AS x MATCH (n:{s.n}) WHERE {s.prop('n', s.id_property)} = x "
            f"OPTIONAL MATCH (n)-[:{s.rels}]{arrow}(m:{s.n}) "
            f"RETURN {s.prop('n', s.id_property)} AS id, {ord_expr} AS ord, "
            f"count(DISTINCT m) AS deg"
        )
        for r in self._run(q, new):
            self.order[r["id"]] = r["id"] if r["ord"] is None else r["ord"]
            self.degree[r["id"]] = int(r["deg"])
        missing = [i for i in new if i not in self.order]
        if missing:
            raise NodeNotFoundError(f"node {missing[0]!r} is not in the database",
                                    key=missing[0])

    def expand(self, ids: Sequence[str]) -> set[str]:
        """Every edge at ``ids`` (both directions, pushed down); returns the neighbours."""
        todo = [i for i in dict.fromkeys(ids) if i not in self.expanded]
        s = self.s
        nbrs: set[str] = set()
        for pattern, fwd in ((f"(n:{s.n})-[:{s.rels}]->(m:{s.n})", True),
                             (f"(m:{s.n})-[:{s.rels}]->(n:{s.n})", False)):
            q = (
                f"UNWIND $ids AS x MATCH {pattern} WHERE {s.prop('n', s.id_property)} = x "
                f"RETURN DISTINCT {s.prop('n', s.id_property)} AS a, "
                f"{s.prop('m', s.id_property)} AS b"
            )
            for r in self._run(q, todo):
                self.edges.add((r["a"], r["b"]) if fwd else (r["b"], r["a"]))
                nbrs.add(r["b"])
        self.expanded.update(todo)
        return nbrs

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
    driver: Any,
    node_ids: Sequence[str],
    config: PathRAGConfig | None = None,
    *,
    schema: CypherSchema | None = None,
    batch_size: int = 5000,
    max_rounds: int = 1000,
) -> DatabasePathPool:
    """Section 4.2 for the retrieved nodes ``node_ids`` (``V_q``, in retrieval order).

    Same paths, resources and reliabilities as the in-memory ``edge_flow_pool`` /
    ``prune_paths`` on the same graph (module docstring); only the neighbourhood the paths
    need is fetched, in batches of ``batch_size`` ids.
    """
    cfg = config or PathRAGConfig()
    drv = as_cypher_driver(driver)
    loc = _Local(drv, schema or CypherSchema(), batch_size)
    starts = list(dict.fromkeys(node_ids))
    loc.learn(starts, cfg.direction)
    if cfg.reliability == "edge_flow":
        adj, names, rounds = _ball(loc, starts, cfg)
    else:
        adj, names, rounds = _until_closed(loc, starts, cfg, max_rounds)
    place = {nid: k for k, nid in enumerate(names)}
    local_starts = [place[i] for i in starts]
    if cfg.reliability == "edge_flow":
        assert cfg.max_hops is not None
        pool = edge_flow_pool(adj, local_starts, alpha=float(cfg.alpha),
                              threshold=float(cfg.flow_threshold), max_hops=cfg.max_hops)
    else:
        pool = prune_paths(adj, local_starts, alpha=float(cfg.alpha), theta=float(cfg.theta),
                           paths_per_pair=cfg.paths_per_pair, max_hops=cfg.max_hops,
                           eq3_at_start=cfg.eq3_at_start)
    return _globalise(pool, names, loc, rounds)


def _ball(
    loc: _Local, starts: list[str], cfg: PathRAGConfig
) -> tuple[FlowAdjacency, list[str], int]:
    """Edge flow: the ``⌊max_hops/2⌋`` ball around ``V_q`` and the edges among its nodes."""
    if cfg.max_hops is None:
        raise ConfigError("edge_flow needs max_hops (validated by PathRAGConfig)")
    radius = cfg.max_hops // 2
    ball, frontier = set(starts), list(starts)
    for _ in range(radius):
        frontier = sorted(loc.expand(frontier) - ball)
        ball.update(frontier)
    loc.expand(sorted(ball))  # edges between boundary nodes too
    loc.learn(sorted(ball), cfg.direction)
    loc.edges = {(a, b) for a, b in loc.edges if a in ball and b in ball}
    loc.order = {k: v for k, v in loc.order.items() if k in ball}
    adj, names = loc.adjacency(cfg.direction, true_degrees=False)
    return adj, names, radius + 1


def _until_closed(
    loc: _Local, starts: list[str], cfg: PathRAGConfig, max_rounds: int
) -> tuple[FlowAdjacency, list[str], int]:
    """Literal Eq. (4): expand emitting nodes until every one of them is expanded."""
    need = list(starts)
    for rounds in range(1, max_rounds + 1):
        new = loc.expand(need)
        loc.learn(sorted(new), cfg.direction)
        adj, names = loc.adjacency(cfg.direction, true_degrees=True)
        place = {nid: k for k, nid in enumerate(names)}
        prop = propagate_resources(adj, [place[i] for i in starts], alpha=float(cfg.alpha),
                                   theta=float(cfg.theta), max_hops=cfg.max_hops,
                                   eq3_at_start=cfg.eq3_at_start)
        emitting = {names[k] for k in prop.nodes[prop.emitted].tolist() if k < len(names)}
        need = sorted(emitting - loc.expanded)
        if not need:
            return adj, names, rounds
    raise ConfigError(f"the flow did not close within max_rounds={max_rounds} expansions")


def _globalise(
    pool: CandidatePool, names: list[str], loc: _Local, rounds: int
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
        queries=loc.queries, fetched_nodes=len(loc.order), rounds=rounds, stats=stats,
    )
