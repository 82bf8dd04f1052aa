"""PathRAG's high-level keywords over a database: the relations, from the edge file or a scan.

:func:`file_relations` streams the edge vector file (``VectorFiles.edges``, written by
:func:`~kgpath.methods.pathrag.dbstore.store_pathrag_vectors` given ``vector_dir``): one
pass scores every row (:meth:`~kgpath.backends.cypher.vectors.VectorFile.score_rows`, summed
row by row as in memory), :func:`~kgpath.methods.pathrag.nodes.rank_relations` ranks the
``|E|`` similarities as the in-memory retriever does, and only the candidates (the
``num_relations`` most similar rows) are read from the store: their records, fetched by
source and target id and rank (an expand-into between two indexed nodes, never an edge
scan), and their ends' degrees (:class:`~kgpath.methods.pathrag.dbstore.EndpointDegrees`).
Every candidate's file row is checked against the store (the edge of that rank between
those ends, with the relation text the row was embedded from), and the file's row count
against the store's edge count: a stale file is a :class:`~kgpath.errors.BackendError`
naming what to rewrite. :func:`scan_relations` ranks the matrix of a paged scan the same
way.

:func:`start_passage_scores` scores the question against the passage file in a worker
thread, so that scan (memory bound, no GIL held) overlaps section 4.2's round trips to the
store instead of following them; measured on the 10^6-node graph at 384-d (``bench_graphdb.py
--scale`` graph, 40 questions): the scan took 54 ms of a 440 ms question.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from kgpath.backends.cypher import CypherBackend, CypherSchema
from kgpath.backends.cypher.identifiers import quote_identifier
from kgpath.backends.cypher.schema import edge_from_row
from kgpath.backends.cypher.vectors import VectorFile, check_file_rows
from kgpath.errors import BackendError
from kgpath.graph import Edge
from kgpath.methods.pathrag.config import PathRAGConfig
from kgpath.methods.pathrag.dbstore import (
    EndpointDegrees,
    edge_file_key,
    name_of,
    relation_text_of,
)
from kgpath.methods.pathrag.nodes import RetrievedRelation, node_similarities, rank_relations
from kgpath.search.vector import top_k

__all__ = ["check_edge_count", "edge_count", "edges_at", "file_relations", "scan_relations",
           "start_passage_scores"]

_SCANS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="kgpath-passage-scan")
"""Runs the passage-file scans (tasks wait on nothing, so no task can block another)."""

_REWRITE = ("rewrite it (store_pathrag_vectors(..., vector_dir=...)) after changing the "
            "graph")


def file_relations(backend: CypherBackend, vf: VectorFile, hv: np.ndarray,
                   cfg: PathRAGConfig, batch_size: int = 5000,
                   counted: dict[str, int] | None = None) -> list[RetrievedRelation]:
    """The high-level keywords' relations from the edge vector file (module docstring).

    ``counted``: remembers a verified count between questions (:func:`check_edge_count`).

    Raises
    ------
    BackendError
        When the file is stale: the store holds another number of edges, or a candidate
        row's edge is not in the store with that rank, those ends and that relation text.
    EmbeddingError
        When ``hv``'s dimension is not the file's.
    """
    check_edge_count(backend, vf, {} if counted is None else counted)
    sims = vf.score_rows(np.asarray(hv, np.float32))[0]
    n = min(cfg.num_relations, sims.size)
    if n <= 0:
        return []
    rows = top_k(sims, n).tolist()  # the candidates rank_relations keeps from
    ids = vf.ids(rows)
    keys = [_parse_key(vf, k) for k in ids]
    got = edges_at(backend, [(row, k[1], k[2]) for row, k in zip(rows, keys, strict=True)],
                   batch_size)
    found: dict[int, tuple[Edge, str]] = {}
    for row, key, raw in zip(rows, keys, ids, strict=True):
        hit = got.get((row, key[1], key[2]))
        if hit is None or edge_file_key(row, key[1], key[2], hit[1]) != raw:
            raise BackendError(f"the edge vector file {str(vf.path)!r} is stale: its row "
                               f"{row} {raw} is not that edge of the database (rank, ends "
                               f"and relation text); {_REWRITE}")
        found[row] = hit
    degree = EndpointDegrees(backend, lambda r: (found[r][0].source, found[r][0].target),
                             sims, n)
    hits = rank_relations(sims, degree, cfg.num_relations, cfg.min_similarity,
                          cfg.min_similarity_z)
    return [RetrievedRelation(found[r][0], r, sim, found[r][1]) for r, sim in hits]


def scan_relations(backend: CypherBackend, edges: Sequence[tuple[Edge, int, tuple[str, str]]],
                   mat: np.ndarray, hv: np.ndarray, cfg: PathRAGConfig
                   ) -> list[RetrievedRelation]:
    """The relations from the matrix of a paged scan (``edges[row]``: edge, rank, end names)."""
    if not edges:
        return []
    sims = node_similarities(hv, mat)[0]
    degree = EndpointDegrees(backend, lambda r: (edges[r][0].source, edges[r][0].target),
                             sims, cfg.num_relations)
    out = []
    for row, sim in rank_relations(sims, degree, cfg.num_relations, cfg.min_similarity,
                                   cfg.min_similarity_z):
        edge, rank, names = edges[row]
        out.append(RetrievedRelation(edge, rank, sim, relation_text_of(edge, names)))
    return out


def check_edge_count(backend: CypherBackend, vf: VectorFile, counted: dict[str, int]) -> None:
    """The store holds as many edges as the file has rows (``BackendError`` otherwise).

    Edges of ``rel_types`` between two ``node_label`` nodes (what a scan reads): that count
    walks every edge (374-556 ms at 10^6 on FalkorDB), while the count of every edge of
    ``rel_types`` whatever its ends is a constant-time lookup (0.7 ms). So the exact count
    runs once per file generation and again whenever the cheap one moved: ``counted``
    maps the file's path (one per generation) to the cheap count it was verified at.
    (A change that adds as many edges of another label, e.g. another tenant's, as it
    removes here goes unseen by the count; the candidate rows are still checked.)

    Raises
    ------
    BackendError
        When the store holds another number of edges than the file has rows.
    """
    s = backend.schema
    cheap = sum(int(backend.driver.run(
        f"MATCH ()-[r:{quote_identifier(t)}]->() RETURN count(r) AS c", {})[0]["c"])
        for t in s.rel_types)
    if counted.get(str(vf.path)) == cheap:
        return
    held = edge_count(backend)
    if held != vf.count:
        raise BackendError(f"the edge vector file {str(vf.path)!r} has {vf.count} rows but "
                           f"the database holds {held} edges: {_REWRITE}")
    counted.clear()
    counted[str(vf.path)] = cheap


def edge_count(backend: CypherBackend) -> int:
    """Edges of ``schema.rel_types`` between two ``node_label`` nodes (what a scan reads)."""
    s = backend.schema
    q = f"MATCH (:{s.n})-[r:{s.rels}]->(:{s.n}) RETURN count(r) AS c"
    return int(backend.driver.run(q, {})[0]["c"])


def edges_at(backend: CypherBackend, keys: Sequence[tuple[int, str, str]], batch_size: int
             ) -> dict[tuple[int, str, str], tuple[Edge, str]]:
    """``(rank, source, target) -> (edge, relation text)`` for the edges the store holds.

    Both ends are bound by id (the node id index), then the edge between them with that
    rank is matched (after ``WITH``: FalkorDB's planner then matches edge-into instead of
    walking the source's edges, see :func:`~kgpath.methods.pathrag.dbstore.edges_between`):
    no edge is scanned.
    """
    if not keys:
        return {}
    s, drv = backend.schema, backend.driver
    d = drv.dialect
    q = (f"UNWIND $rows AS row MATCH (a:{s.n}) WHERE {d.id_match(s, 'a', 'row.s')} "
         f"MATCH (b:{s.n}) WHERE {d.id_match(s, 'b', 'row.t')} WITH row, a, b "
         f"MATCH (a)-[r:{s.rels}]->(b) WHERE {s.prop('r', s.edge_order_property)} = row.rank "
         f"RETURN {s.prop('a', s.id_property)} AS source, {s.prop('b', s.id_property)} AS "
         f"target, {_name(s, 'a')} AS sname, {_name(s, 'b')} AS tname, "
         f"{s.edge_return('r', d)}")
    rows = [{"rank": k[0], "s": k[1], "t": k[2]} for k in dict.fromkeys(keys)]
    out: dict[tuple[int, str, str], tuple[Edge, str]] = {}
    for start in range(0, len(rows), batch_size):
        for r in drv.run(q, {"rows": rows[start:start + batch_size]}):
            edge = edge_from_row(r["source"], r["target"], r)
            names = (name_of(r["sname"], r["source"]), name_of(r["tname"], r["target"]))
            out[(int(r["rank"]), r["source"], r["target"])] = (edge,
                                                               relation_text_of(edge, names))
    return out


def _parse_key(vf: VectorFile, raw: str) -> list[Any]:
    """An :func:`edge_file_key` read back (anything else: a :class:`BackendError`)."""
    try:
        key = json.loads(raw)
        if isinstance(key, list) and len(key) == 4 and all(isinstance(x, str) for x in key[1:]):
            return key
    except ValueError:
        pass
    raise BackendError(f"{str(vf.path)!r} is not an edge vector file: row id {raw!r} is not "
                       f"[rank, source, target, digest]; {_REWRITE}")


def _name(s: CypherSchema, var: str) -> str:
    return s.prop(var, s.name_property) if s.name_property else "NULL"


def start_passage_scores(backend: CypherBackend, vf: VectorFile,
                         question: np.ndarray) -> Future[np.ndarray]:
    """The question's float32 dot product with every row of the passage file, started.

    The file's row count is checked against the store's passages first, in the caller's
    thread (a stale file raises :class:`~kgpath.errors.BackendError` here); the scan
    (:meth:`~kgpath.backends.cypher.vectors.VectorFile.score_rows`) then runs in a worker
    thread: ``.result()`` returns the ``count`` scores or raises what the scan raised.
    """
    s = backend.schema
    held = backend.driver.run(
        f"MATCH (p:{quote_identifier(s.passage_label or '')}) RETURN count(p) AS c", {})
    check_file_rows(vf, [], [], {}, int(held[0]["c"]))
    q = np.asarray(question, np.float32)
    return _SCANS.submit(lambda: vf.score_rows(q)[0])
