"""Parameterised Cypher queries: reachability (Eq. 1 of PCR), one-hop expansion, lookups.

Every query text is built from validated identifiers (:class:`CypherSchema`) and the
dialect's hooks; every value is a parameter.

Exact agreement with the in-memory BFS
--------------------------------------
:meth:`KnowledgeGraph.bfs` keeps each level sorted by discovery and records, for every newly
reached node, the first edge met when it scans the previous level in that order (for
``direction="both"``: all forward edges before all reversed ones). :func:`bfs_order`
reproduces that rule from the database's answer, whatever order rows come back in:

* **candidate order** (and so the tie-break between equal scores) is ``(hops, node order)``;
* the **parent** of a node at ``h`` hops is, among its neighbours at ``h - 1`` hops, the one
  reached through a forward edge before a reversed one, then the smallest node order, then
  the smallest edge order.

"Node order" and "edge order" are the ``order_property`` / ``edge_order_property`` of the
:class:`CypherSchema`; :func:`~kgpath.backends.cypher.load_graph` writes them as the node and
edge indices of the source graph, so hits, scores, hops *and* paths equal the in-memory
result. On a database written by someone else, set them to ``None``: ties then break by node
id and by ``(relation type, relation, edge text, source id, target id)``, which is
deterministic; hits, scores and hop counts are still those of the in-memory method on the
same graph, and so are the paths when the in-memory graph lists its nodes by id and its edges
in that order (as the LlamaIndex property-graph converter does).

Complexity: the reachability query is a breadth-first search inside the engine (one round
trip per 30 hops on Kùzu/Ladybug, whose variable-length bound is capped at 30); the region's
edges cost one one-hop query; node rows one query per 10^4 ids.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

from kgpath.backends.cypher.drivers import CypherDriver
from kgpath.backends.cypher.identifiers import norm_name, quote_identifier
from kgpath.backends.cypher.schema import CypherSchema, edge_from_row
from kgpath.errors import BackendError, ConfigError
from kgpath.graph import Direction, Edge

__all__ = [
    "reachable_hops",
    "fetch_nodes",
    "fetch_passages",
    "passage_orders",
    "passage_page",
    "parent_edges",
    "rows_by_entity_key",
    "node_row",
    "rows_by_name",
    "node_page",
    "expand_one_hop",
    "adjacent_pairs",
    "order_and_degree",
    "bfs_order",
    "Step",
]


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
        f"UNWIND $ids AS x MATCH (n:{schema.n}) WHERE {driver.dialect.id_match(schema, 'n', 'x')} "
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
            self._edge = edge_from_row(src, dst, self._row)
        return self._edge

    @property
    def row(self) -> Mapping[str, Any]:
        """The database row the step was read from (edge fields)."""
        return self._row

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
            f"UNWIND $ids AS x MATCH {pattern} WHERE {driver.dialect.id_match(s, 'n', 'x')} "
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
    incoming = _incoming(hops, steps, direction)
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


def _incoming(
    hops: Mapping[str, int], steps: Iterable[Step], direction: Direction
) -> dict[str, list[tuple[int, str, Any, Step]]]:
    """For each node, the edges reaching it from the previous BFS level.

    Entries are ``(reversed?, parent id, edge order, step)``: for ``direction="both"`` a
    forward edge (flag 0) sorts before a reversed one (flag 1), as in the CSR BFS.
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
    return incoming


def node_row(driver: CypherDriver, schema: CypherSchema, node_id: str) -> dict[str, Any] | None:
    """The row of one node by id, or ``None``."""
    s = schema
    rows = driver.run(
        f"MATCH (n:{s.n}) WHERE {driver.dialect.id_match(s, 'n', '$id')} "
        f"RETURN {s.node_return('n')}",
        {"id": node_id},
    )
    return rows[0] if rows else None


def rows_by_name(driver: CypherDriver, schema: CypherSchema, name: str) -> list[dict[str, Any]]:
    """Rows of the nodes whose normalised name equals ``name``'s (unsorted).

    Uses ``name_key_property`` when the schema has one, else ``lower(trim(name))``, else
    the id.
    """
    s = schema
    if s.name_key_property is not None:
        cond = f"{s.prop('n', s.name_key_property)} = $key"
    elif s.name_property is not None:
        lower = driver.dialect.lower_function
        cond = f"{lower}(trim({s.prop('n', s.name_property)})) = $key"
    else:
        cond = driver.dialect.id_match(s, "n", "$name")
    return driver.run(
        f"MATCH (n:{s.n}) WHERE {cond} RETURN {s.node_return('n')}",
        {"key": norm_name(name), "name": name},
    )


def node_page(
    driver: CypherDriver, schema: CypherSchema, after: Any, limit: int
) -> list[dict[str, Any]]:
    """One keyset page of node rows in node order (``page_key`` > ``after``; ``None``: first).

    No ``SKIP``: the cost of a page does not grow with its offset.
    """
    s = schema
    key = s.prop("n", s.order_property or s.id_property)
    ret = f"RETURN {s.node_return('n')}, {key} AS page_key ORDER BY {key} LIMIT $limit"
    if after is None:
        return driver.run(f"MATCH (n:{s.n}) {ret}", {"limit": limit})
    return driver.run(f"MATCH (n:{s.n}) WHERE {key} > $after {ret}",
                      {"after": after, "limit": limit})


def fetch_passages(
    driver: CypherDriver, schema: CypherSchema, ids: Sequence[str], *, full: bool = False,
    batch_size: int = 10_000,
) -> list[dict[str, Any]]:
    """Rows (``id``, ``text``, ``metadata``) of the passages with these ids that exist.

    ``full`` adds ``ord``, ``entities`` and ``embedding``
    (:meth:`CypherSchema.passage_full_return`).
    """
    s = schema
    if s.passage_label is None or not ids:
        return []
    ret = s.passage_full_return("p") if full else s.passage_return("p")
    q = (
        f"UNWIND $ids AS x MATCH (p:{quote_identifier(s.passage_label)}) "
        f"WHERE {driver.dialect.id_match(s, 'p', 'x', passage=True)} RETURN {ret}"
    )
    return _batched(driver, q, list(dict.fromkeys(ids)), batch_size)


def passage_page(
    driver: CypherDriver, schema: CypherSchema, after: Any, limit: int
) -> list[dict[str, Any]]:
    """One keyset page of passage ``id`` and ``embedding`` rows in passage order.

    Rows whose ``page_key`` is above ``after`` (``None``: the first page).
    """
    s = schema
    label = quote_identifier(s.passage_label)
    key = s.prop("p", s.passage_order_property or s.passage_id_property)
    emb = (s.prop("p", s.passage_embedding_property) if s.passage_embedding_property
           else "NULL")
    ret = (f"RETURN {s.prop('p', s.passage_id_property)} AS id, {emb} AS embedding, "
           f"{key} AS page_key ORDER BY {key} LIMIT $limit")
    if after is None:
        return driver.run(f"MATCH (p:{label}) {ret}", {"limit": limit})
    return driver.run(f"MATCH (p:{label}) WHERE {key} > $after {ret}",
                      {"after": after, "limit": limit})


def rows_by_entity_key(
    driver: CypherDriver, schema: CypherSchema, keys: Sequence[str], *,
    embedding: bool = False,
) -> list[dict[str, Any]]:
    """Node rows (with the embedding only if asked) whose ``entity_key_property`` is in ``keys``."""
    s = schema
    if s.entity_key_property is None:
        raise ConfigError("looking nodes up by entity key needs schema.entity_key_property")
    if not keys:
        return []
    q = (f"UNWIND $ids AS x MATCH (n:{s.n}) WHERE {s.prop('n', s.entity_key_property)} = x "
         f"RETURN {s.node_return('n', embedding=embedding)}")
    return _batched(driver, q, list(dict.fromkeys(keys)), 10_000)


def _batched(
    driver: CypherDriver, query: str, ids: Sequence[str], batch_size: int
) -> list[dict[str, Any]]:
    """``query`` over ``ids`` in ``UNWIND`` batches of ``batch_size`` (one round trip each)."""
    rows: list[dict[str, Any]] = []
    ids = list(ids)
    for start in range(0, len(ids), batch_size):
        rows.extend(driver.run(query, {"ids": ids[start : start + batch_size]}))
    return rows


def adjacent_pairs(
    driver: CypherDriver, schema: CypherSchema, ids: Sequence[str], *, batch_size: int = 5000
) -> list[tuple[str, str, bool]]:
    """``(node, neighbour, forward)`` once per distinct neighbour of each id, per direction.

    Two ``DISTINCT`` one-hop queries per batch (edges leaving ``ids``, then arriving):
    lighter than :func:`expand_one_hop`, which returns every edge with its properties.
    """
    s = schema
    out: list[tuple[str, str, bool]] = []
    if not ids:
        return out
    for pattern, fwd in ((f"(n:{s.n})-[:{s.rels}]->(m:{s.n})", True),
                         (f"(m:{s.n})-[:{s.rels}]->(n:{s.n})", False)):
        q = (
            f"UNWIND $ids AS x MATCH {pattern} WHERE {driver.dialect.id_match(s, 'n', 'x')} "
            f"RETURN DISTINCT {s.prop('n', s.id_property)} AS a, "
            f"{s.prop('m', s.id_property)} AS b"
        )
        out += [(r["a"], r["b"], fwd) for r in _batched(driver, q, ids, batch_size)]
    return out


def order_and_degree(
    driver: CypherDriver, schema: CypherSchema, ids: Sequence[str], *, directed: bool,
    batch_size: int = 5000,
) -> dict[str, tuple[Hashable, int]]:
    """``{id: (order value or id, distinct neighbours)}`` of the ids in the database.

    ``directed`` counts out-neighbours, else neighbours either way; the order value is
    ``order_property`` (the in-memory node index after
    :func:`~kgpath.backends.cypher.load_graph`), or the id.
    """
    s = schema
    if not ids:
        return {}
    arrow = "->" if directed else "-"
    ord_expr = s.prop("n", s.order_property) if s.order_property else "NULL"
    q = (
        f"UNWIND $ids AS x MATCH (n:{s.n}) WHERE {driver.dialect.id_match(s, 'n', 'x')} "
        f"OPTIONAL MATCH (n)-[:{s.rels}]{arrow}(m:{s.n}) "
        f"RETURN {s.prop('n', s.id_property)} AS id, {ord_expr} AS ord, "
        f"count(DISTINCT m) AS deg"
    )
    return {r["id"]: (r["id"] if r["ord"] is None else r["ord"], int(r["deg"]))
            for r in _batched(driver, q, ids, batch_size)}


def passage_orders(
    driver: CypherDriver, schema: CypherSchema, ids: Sequence[str]
) -> dict[str, Any]:
    """``passage id -> order value`` of the passages with these ids that exist."""
    s = schema
    if s.passage_label is None or s.passage_order_property is None or not ids:
        return {}
    q = (f"UNWIND $ids AS x MATCH (p:{quote_identifier(s.passage_label)}) "
         f"WHERE {driver.dialect.id_match(s, 'p', 'x', passage=True)} "
         f"RETURN {s.prop('p', s.passage_id_property)} AS id, "
         f"{s.prop('p', s.passage_order_property)} AS ord")
    return {str(r["id"]): r["ord"] for r in _batched(driver, q, list(dict.fromkeys(ids)), 10_000)}


def parent_edges(drv: Any, s: CypherSchema, hops: Mapping[str, int],
                  direction: Direction) -> list[Step]:
    """The region's edges that can be BFS parent edges, as forward :class:`Step` objects.

    A parent edge joins levels ``h`` and ``h + 1``, so the deepest level ``D`` never needs
    its own edges expanded (a hub there would send all of them): the out-edges of the
    levels below ``D`` inside the region, and for ``"in"``/``"both"`` the edges from level
    ``D`` into them (their in-edges from level-``D`` nodes). Same edges as expanding the whole
    region and filtering (:func:`bfs_order` ignores the rest).
    """
    if len(hops) < 2:
        return []
    deepest = max(hops.values())
    inner = [i for i, h in hops.items() if h < deepest]
    steps = expand_one_hop(drv, s, inner, direction="out", within=hops)
    if direction in ("in", "both"):
        deep = [i for i, h in hops.items() if h == deepest]
        steps += [Step(st.neighbour, st.node, None, True, st.edge_order, st.row)
                  for st in expand_one_hop(drv, s, inner, direction="in", within=deep)]
    return steps
