"""The store queries of :class:`~kgpath.methods.pathrag.database.CypherPathRAG`.

Keyset-paged scans of the stored node, edge and passage vectors, the edges between given
node pairs, the retrieved nodes' neighbours and bare rows, endpoint degrees, and
:func:`store_pathrag_vectors`, which writes the name and relation-text vectors PathRAG reads.
Every query is parameterised and sent with ``driver.run(query, params)`` under the names of
a :class:`~kgpath.backends.cypher.CypherSchema`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from kgpath.backends.cypher import CypherBackend, CypherSchema
from kgpath.backends.cypher.loading import encode_vector
from kgpath.backends.cypher.schema import edge_from_row
from kgpath.backends.cypher.vectors import stage_vector_file
from kgpath.errors import BackendError
from kgpath.graph import Edge, KnowledgeGraph
from kgpath.index.graph_index import GraphIndex
from kgpath.index.passage_vectors import text_vectors
from kgpath.methods.pathrag.prompt import relation_text
from kgpath.search.vector import top_k

__all__ = [
    "EDGE_VECTOR_PROPERTY", "NAME_VECTOR_PROPERTY", "EndpointDegrees", "TextVectors",
    "edge_file_key", "edge_page_query", "edges_between", "light_rows",
    "name_of", "neighbour_pairs",
    "node_degrees", "node_page_query", "pages", "passage_page_query", "pathrag_edge_vectors",
    "relation_text_of",
    "store_pathrag_vectors",
]

NAME_VECTOR_PROPERTY = "name_embedding"
"""Node property holding the vector of the node's name (``node_match="name"``)."""
EDGE_VECTOR_PROPERTY = "text_embedding"
"""Edge property holding the vector of its :func:`relation_text` (high-level keywords)."""


def store_pathrag_vectors(
    driver: Any, index: GraphIndex, *, schema: CypherSchema | None = None,
    relations: bool = True, batch_size: int = 2000,
    vector_dir: str | os.PathLike[str] | None = None,
) -> None:
    """Write the name and relation-text vectors PathRAG reads into a loaded database.

    The vectors are the in-memory retriever's own (``text_vectors`` of ``index``'s graph and
    embedder, shared sets ``"node_names"`` and ``"edge_texts"``): each node gets
    :data:`NAME_VECTOR_PROPERTY`, each edge :data:`EDGE_VECTOR_PROPERTY`. Needs a store that
    accepts new properties (FalkorDB, Neo4j); without them :class:`CypherPathRAG` embeds
    the texts itself. ``relations=False`` skips the edges (only high-level keywords, from
    an LLM, read them).

    ``vector_dir``: also write the relation-text vectors as the edge vector file there
    (``edges``, :class:`~kgpath.backends.cypher.vectors.VectorFiles`; row ``i`` = the
    edge of edge order ``i``, id :func:`edge_file_key`; a new generation published
    atomically), which ``CypherPathRAG(..., vectors=vector_dir)`` streams instead of
    scanning the stored vectors. Rewrite it after changing the graph (module docstring of
    :mod:`~kgpath.methods.pathrag.database`).
    """
    from kgpath.backends.cypher import as_cypher_driver

    drv = as_cypher_driver(driver)
    s = schema or CypherSchema()
    g = index.graph
    names = text_vectors(g, index.embedder, "node_names", [n.name or n.id for n in g.nodes])
    rows = [{"id": n.id, "v": encode_vector(names[i])} for i, n in enumerate(g.nodes)]
    q = (f"UNWIND $rows AS row MATCH (n:{s.n}) WHERE {drv.dialect.id_match(s, 'n', 'row.id')} "
         f"SET {s.prop('n', NAME_VECTOR_PROPERTY)} = row.v")
    for start in range(0, len(rows), batch_size):
        drv.run(q, {"rows": rows[start:start + batch_size]})
    if not g.num_edges or not relations:
        return
    keys, texts = pathrag_edge_vectors(index)
    if vector_dir is not None:
        stage_vector_file(vector_dir, "edges", keys, texts).publish()
    erows = [{"s": e.source, "t": e.target, "rank": j, "v": encode_vector(texts[j])}
             for j, e in enumerate(g.edges)]
    q = (f"UNWIND $rows AS row MATCH (a:{s.n})-[r:{s.rels}]->(b:{s.n}) "
         f"WHERE {drv.dialect.id_match(s, 'a', 'row.s')} AND "
         f"{drv.dialect.id_match(s, 'b', 'row.t')} AND "
         f"{s.prop('r', s.edge_order_property)} = row.rank "
         f"SET {s.prop('r', EDGE_VECTOR_PROPERTY)} = row.v")
    for start in range(0, len(erows), batch_size):
        drv.run(q, {"rows": erows[start:start + batch_size]})


def pathrag_edge_vectors(index: GraphIndex) -> tuple[list[str], np.ndarray]:
    """The edge vector file's rows of ``index``: ids (:func:`edge_file_key`) and vectors.

    Every edge in edge order with the in-memory retriever's :func:`relation_text` vector
    (shared set ``"edge_texts"``: only texts it lacks are embedded). Pass it to
    ``DatabaseIndex(..., edge_vectors=pathrag_edge_vectors)`` (or ``CypherSync``) to keep
    the edge file in ``vector_dir`` equal to the database through document updates.
    """
    g = index.graph
    rtexts = [relation_text(g, e) for e in g.edges]
    if not rtexts:
        return [], np.zeros((0, 1), np.float32)
    vecs = np.asarray(text_vectors(g, index.embedder, "edge_texts", rtexts), np.float32)
    return [edge_file_key(j, e.source, e.target, rtexts[j])
            for j, e in enumerate(g.edges)], vecs


def edge_file_key(rank: int, source: str, target: str, text: str) -> str:
    """The id of an edge vector file row: ``[rank, source, target, digest of its text]``.

    JSON (unambiguous for any id). The rank is the row; source and target let the store
    fetch the edge through its indexed node ids (no edge scan) and check that it still has
    that rank; the digest (BLAKE2b, 8 bytes, of :func:`relation_text`) that the row's
    vector was embedded from the text the edge has now (a renamed end changes it).
    """
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()
    return json.dumps([int(rank), source, target, digest], ensure_ascii=False)


def node_page_query(s: CypherSchema, prop: str | None) -> Callable[[bool], str]:
    """Node ``id``, vector ``prop`` (``NULL`` for none) and order, a page in node order."""
    key = s.prop("n", s.order_property)
    vec = s.prop("n", prop) if prop else "NULL"

    def query(first: bool) -> str:
        where = "" if first else f"WHERE {key} > $after "
        return (f"MATCH (n:{s.n}) {where}RETURN {s.prop('n', s.id_property)} AS id, "
                f"{vec} AS vec, {key} AS page_key ORDER BY {key} LIMIT $limit")
    return query


def edge_page_query(s: CypherSchema, dialect: Any, prop: str | None) -> Callable[[bool], str]:
    """Edge rows with their ends' ids and names and vector ``prop``, a page in edge order."""
    key = s.prop("r", s.edge_order_property)
    vec = s.prop("r", prop) if prop else "NULL"
    name = (lambda v: s.prop(v, s.name_property)) if s.name_property else (lambda v: "NULL")

    def query(first: bool) -> str:
        where = "" if first else f"WHERE {key} > $after "
        return (f"MATCH (a:{s.n})-[r:{s.rels}]->(b:{s.n}) {where}"
                f"RETURN {s.prop('a', s.id_property)} AS source, "
                f"{s.prop('b', s.id_property)} AS target, {name('a')} AS sname, "
                f"{name('b')} AS tname, {s.edge_return('r', dialect)}, "
                f"{vec} AS vec, {key} AS page_key "
                f"ORDER BY {key} LIMIT $limit")
    return query


def passage_page_query(s: CypherSchema) -> Callable[[bool], str]:
    """Passage ``id`` and stored vector, a page in passage order."""
    from kgpath.backends.cypher.identifiers import quote_identifier

    key = s.prop("p", s.passage_order_property or s.passage_id_property)
    emb = s.prop("p", s.passage_embedding_property) if s.passage_embedding_property else "NULL"

    def query(first: bool) -> str:
        where = "" if first else f"WHERE {key} > $after "
        return (f"MATCH (p:{quote_identifier(s.passage_label)}) {where}"
                f"RETURN {s.prop('p', s.passage_id_property)} AS id, {emb} AS vec, "
                f"{key} AS page_key ORDER BY {key} LIMIT $limit")
    return query


def pages(backend: CypherBackend, query: Callable[[bool], str], size: int, *,
           passage: bool = False) -> Iterator[dict[str, Any]]:
    """Every row of a keyset-paged scan (``page_key`` ascending)."""
    label = backend.schema.passage_label
    if passage and (label is None or not backend.driver.dialect.has_label(backend.driver,
                                                                          label)):
        return
    after: Any = None
    while True:
        params: dict[str, Any] = {"limit": size}
        if after is not None:
            params["after"] = after
        rows = backend.driver.run(query(after is None), params)
        yield from rows
        if len(rows) < size:
            return
        after = rows[-1]["page_key"]


def edges_between(drv: Any, s: CypherSchema, pairs: Sequence[tuple[str, str]],
                   batch_size: int) -> list[tuple[int, Edge]]:
    """``(rank, edge)`` of every edge ``a -> b`` for the ``(a, b)`` pairs.

    One row per source with the list of its targets; both ends are bound by id, then the
    edge between them is matched (an expand-into: a hub's other edges are never walked).
    Measured on the 10^7-edge graph (``bench_graphdb.py --scale``), 2,210 pairs of one
    question: 24 ms, against 148 ms when the source's out-edges were filtered by a target
    list. An engine refusing that query gets one lookup per pair.
    """
    if not pairs:
        return []
    want = set(pairs)
    ends: dict[str, list[str]] = {}
    for a, b in sorted(want):
        ends.setdefault(a, []).append(b)
    ret, d = f"{s.edge_return('r', drv.dialect)}", drv.dialect
    q = (f"UNWIND $rows AS row MATCH (a:{s.n}) WHERE {d.id_match(s, 'a', 'row.s')} "
         f"UNWIND row.ts AS t MATCH (b:{s.n}) WHERE {d.id_match(s, 'b', 't')} "
         f"WITH row, t, a, b MATCH (a)-[r:{s.rels}]->(b) "
         f"RETURN row.s AS source, t AS target, {ret}")
    try:
        grouped = [{"s": a, "ts": ts} for a, ts in ends.items()]
        rows = [r for start in range(0, len(grouped), batch_size)
                for r in drv.run(q, {"rows": grouped[start:start + batch_size]})]
    except BackendError:
        q = (f"UNWIND $rows AS row MATCH (a:{s.n}) WHERE {d.id_match(s, 'a', 'row.s')} "
             f"MATCH (b:{s.n}) WHERE {d.id_match(s, 'b', 'row.t')} MATCH (a)-[r:{s.rels}]->(b) "
             f"RETURN row.s AS source, row.t AS target, {ret}")
        prs = [{"s": a, "t": b} for a, b in sorted(want)]
        rows = [r for start in range(0, len(prs), batch_size)
                for r in drv.run(q, {"rows": prs[start:start + batch_size]})]
    return [(int(r["rank"]), edge_from_row(r["source"], r["target"], r)) for r in rows
            if (r["source"], r["target"]) in want]


def neighbour_pairs(drv: Any, s: CypherSchema, ids: Sequence[str],
                     batch_size: int) -> list[tuple[str, str]]:
    """``(node, neighbour)`` once per distinct neighbour either way (pushed down)."""
    q = (f"UNWIND $ids AS x MATCH (n:{s.n})-[:{s.rels}]-(m:{s.n}) "
         f"WHERE {drv.dialect.id_match(s, 'n', 'x')} "
         f"RETURN DISTINCT {s.prop('n', s.id_property)} AS a, {s.prop('m', s.id_property)} AS b")
    return [(r["a"], r["b"]) for start in range(0, len(ids), batch_size)
            for r in drv.run(q, {"ids": list(ids[start:start + batch_size])})]


def light_rows(drv: Any, s: CypherSchema, ids: Sequence[str],
                batch_size: int) -> list[dict[str, Any]]:
    """Node rows with id, order and provenance only (name: the id, no text)."""
    prov = s.prop("n", s.provenance_property) if s.provenance_property else "NULL"
    q = (f"UNWIND $ids AS x MATCH (n:{s.n}) WHERE {drv.dialect.id_match(s, 'n', 'x')} "
         f"RETURN {s.prop('n', s.id_property)} AS id, {s.prop('n', s.order_property)} AS ord, "
         f"{prov} AS provenance")
    return [r for start in range(0, len(ids), batch_size)
            for r in drv.run(q, {"ids": list(ids[start:start + batch_size])})]


class EndpointDegrees:
    """``degree[row]``: the edge's endpoint degrees added (in + out edges, every type).

    What ``_edge_degree`` gives in memory, read from the store only for the edges the
    relation ranking asks about; the first miss fetches the ends of the ``n`` most similar
    edges at once (the candidates :func:`~kgpath.methods.pathrag.nodes.rank_relations`
    keeps from), later misses one edge each. ``ends(row)``: the edge's source and target.
    """

    def __init__(self, backend: CypherBackend, ends: Callable[[int], tuple[str, str]],
                 sims: np.ndarray, n: int) -> None:
        self.backend, self.ends = backend, ends
        self.first = top_k(np.asarray(sims, np.float32), min(n, sims.size)).tolist()
        self.deg: dict[str, int] = {}

    def __getitem__(self, row: int) -> int:
        a, b = self.ends(int(row))
        if a not in self.deg or b not in self.deg:
            rows = [int(row), *self.first]
            self.first = []
            ends = {x for r in rows for x in self.ends(r)}
            self.deg.update(node_degrees(self.backend, sorted(ends - self.deg.keys())))
        return self.deg.get(a, 0) + self.deg.get(b, 0)


def node_degrees(backend: CypherBackend, ids: Sequence[str]) -> dict[str, int]:
    """Edges at each node, out plus in (a self-loop counts twice), pushed down."""
    s, drv = backend.schema, backend.driver
    q = (f"UNWIND $ids AS x MATCH (n:{s.n}) WHERE {drv.dialect.id_match(s, 'n', 'x')} "
         f"OPTIONAL MATCH (n)-[r:{s.rels}]->(:{s.n}) WITH n, count(r) AS o "
         f"OPTIONAL MATCH (n)<-[r2:{s.rels}]-(:{s.n}) "
         f"RETURN {s.prop('n', s.id_property)} AS id, o AS o, count(r2) AS i")
    return {r["id"]: int(r["o"]) + int(r["i"]) for r in drv.run(q, {"ids": list(ids)})}


class TextVectors:
    """Vectors of rows the store holds none for, embedded from their text (cached, bounded)."""

    def __init__(self, embedder: Any, limit: int) -> None:
        self.embedder, self.limit = embedder, limit
        self.cache: dict[tuple[str, str], np.ndarray] = {}

    def fill(self, kind: str, vecs: list[np.ndarray | None],
             texts_of: Callable[[list[int]], list[str]]) -> np.ndarray:
        """``vecs`` with the missing rows embedded (``embed_passages``), stacked float32.

        ``texts_of(rows)`` gives the texts of the rows without a vector (read only for them).
        """
        missing = [i for i, v in enumerate(vecs) if v is None]
        texts = dict(zip(missing, texts_of(missing), strict=True)) if missing else {}
        todo = [i for i in missing if (kind, texts[i]) not in self.cache]
        new = self.embedder.embed_passages([texts[i] for i in todo]) if todo else []
        for i, v in zip(todo, np.asarray(new, dtype=np.float32), strict=True):
            vecs[i] = v
            if len(self.cache) < self.limit:
                self.cache[(kind, texts[i])] = v
        rows = [v if v is not None else self.cache[(kind, texts[i])] for i, v in enumerate(vecs)]
        if not rows:
            return np.zeros((0, 0), np.float32)
        return np.ascontiguousarray(np.vstack(rows).astype(np.float32, copy=False))


def name_of(name: Any, node_id: str) -> str:
    """A node's name as :func:`node_from_row` reads it (its id when it has none)."""
    return str(name) if name is not None else node_id


def relation_text_of(edge: Edge, names: tuple[str, str]) -> str:
    """:func:`relation_text` of ``edge`` given its ends' names."""
    g = KnowledgeGraph()
    g.add_node(edge.source, names[0])
    if edge.target != edge.source:
        g.add_node(edge.target, names[1])
    return relation_text(g, edge)
