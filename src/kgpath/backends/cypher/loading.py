"""Write a :class:`~kgpath.graph.KnowledgeGraph` into a Cypher database.

:func:`load_graph` writes nodes (with their graph index as the ``order_property``), edges
(their index as the ``edge_order_property``), and the passages the graph holds, so that the
Cypher backend breaks ties exactly as the in-memory one and resolves passage text by itself.
Rows travel as parameters (``UNWIND``) or as CSV data files (Kùzu/Ladybug ``COPY``), never
as query text.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import time
from typing import Any

import numpy as np

from kgpath.backends.cypher.dialects import progress
from kgpath.backends.cypher.drivers import CypherDriver, as_cypher_driver
from kgpath.backends.cypher.identifiers import norm_name, quote_identifier
from kgpath.backends.cypher.schema import CypherSchema, passage_props
from kgpath.errors import ConfigError, EmptyGraphError
from kgpath.graph import Edge, KnowledgeGraph, Node, Passage
from kgpath.index.graph_index import GraphIndex
from kgpath.ingest.extraction import entity_key

__all__ = [
    "decode_vector",
    "edge_rows",
    "encode_vector",
    "load_graph",
    "node_rows",
    "passage_matrix",
    "passage_rows",
    "node_content",
    "edge_content",
    "passage_content",
    "citing_nodes",
]

logger = logging.getLogger(__name__)


def load_graph(
    driver: Any,
    graph: KnowledgeGraph | GraphIndex,
    *,
    schema: CypherSchema | None = None,
    embeddings: bool = True,
    replace: bool = False,
    batch_size: int = 5000,
    show_progress: bool = False,
    vector_dir: str | os.PathLike[str] | None = None,
) -> CypherSchema:
    """Write a :class:`KnowledgeGraph` into a Cypher database and return the schema used.

    Node ``idx`` and edge ``rank`` properties record the graph's node and edge indices so
    that a query over :class:`~kgpath.backends.cypher.CypherBackend` breaks ties exactly as
    in memory; passages go to ``schema.passage_label`` nodes (when it is set).

    Parameters
    ----------
    driver
        Anything :func:`~kgpath.backends.cypher.as_cypher_driver` accepts.
    graph
        The graph, or a :class:`GraphIndex` (its node embeddings are computed and stored).
    embeddings
        Store node embeddings (when the graph has them for every node).
    replace
        Delete existing nodes of ``schema.node_label`` (and passages) first; else a
        non-empty target is a :class:`ConfigError`.
    vector_dir
        Also write the node and passage vectors there (rows in node / passage order;
        :mod:`~kgpath.backends.cypher.vectors`) for ``CypherBackend(..., vectors=)``, and
        the names' token index (:mod:`~kgpath.backends.cypher.names`); independent of
        ``embeddings`` (``embeddings=False`` keeps vectors out of the database).
    """
    drv = as_cypher_driver(driver)
    s = schema or CypherSchema()
    g = graph.build().graph if isinstance(graph, GraphIndex) else graph
    if len(g) == 0:
        raise EmptyGraphError("cannot load an empty graph into the database")
    pvec = passage_matrix(graph) if embeddings and s.passage_embedding_property else None
    if vector_dir is not None and g.vectors.missing():
        raise ConfigError("vector_dir needs a vector for every node: load from a GraphIndex")
    t0 = time.perf_counter()
    use_emb = embeddings and s.embedding_property is not None and not g.vectors.missing()
    nodes = node_rows(g, embeddings=g.vectors.matrix if use_emb else None,
                      show_progress=show_progress)
    edges = edge_rows(g)
    passages = passage_rows(g, vectors=pvec)
    _check_ids(drv, s, nodes, passages)  # before anything is written or replaced
    drv.dialect.create_schema(drv, s)
    _make_room(drv, s, replace)
    drv.dialect.bulk_load(drv, s, nodes, edges, batch_size=batch_size,
                          show_progress=show_progress)
    n_passages = _load_passages(drv, s, passages, batch_size, show_progress)
    if vector_dir is not None:
        _write_vectors(vector_dir, graph, g)
    logger.info("loaded %d nodes, %d edges and %d passages into %s in %.2f s", len(nodes),
                len(edges), n_passages, drv.dialect.name, time.perf_counter() - t0)
    return s


def _check_ids(drv: CypherDriver, s: CypherSchema, nodes: list[dict[str, Any]],
               passages: list[dict[str, Any]]) -> None:
    """Ids the store's lookup key cannot hold are a :class:`ConfigError` (naming the id)."""
    drv.dialect.check_ids(s, (r["id"] for r in nodes), "node")
    if s.passage_label is not None:
        drv.dialect.check_ids(s, (r["id"] for r in passages), "passage")


def _make_room(drv: CypherDriver, s: CypherSchema, replace: bool) -> None:
    """Refuse a non-empty target, or empty it when ``replace``."""
    count = drv.run(f"MATCH (n:{s.n}) RETURN count(n) AS c", {})[0]["c"]
    if not count:
        return
    if not replace:
        raise ConfigError(
            f"the database already holds {count} {s.node_label!r} nodes; pass replace=True "
            "or use another node_label"
        )
    drv.run(f"MATCH (n:{s.n}) DETACH DELETE n", {})
    if s.passage_label is not None and drv.dialect.has_label(drv, s.passage_label):
        drv.run(f"MATCH (p:{quote_identifier(s.passage_label)}) DETACH DELETE p", {})


def node_content(n: Node) -> dict[str, Any]:
    """A node's row without its position and embedding (a function of the node alone)."""
    return {
        "id": n.id,
        "name": n.name,
        "name_key": norm_name(n.name),
        "text": n.text,
        "type": n.type,
        "metadata": json.dumps(dict(n.metadata), sort_keys=True, default=str),
        "provenance": json.dumps(list(n.provenance)),
        "entity_key": entity_key(n.name or n.id),
    }


def node_rows(
    g: KnowledgeGraph, *, embeddings: np.ndarray | None = None, show_progress: bool = False
) -> list[dict[str, Any]]:
    """One row per node, keyed as :func:`~kgpath.backends.cypher.schema.node_props` says."""
    return [
        {**node_content(n), "ord": i,
         "embedding": None if embeddings is None else encode_vector(embeddings[i])}
        for i, n in enumerate(progress(g.nodes, show_progress, "prepare nodes"))
    ]


def edge_content(e: Edge) -> dict[str, Any]:
    """An edge's row without its position."""
    return {
        "source": e.source,
        "target": e.target,
        "relation": e.relation,
        "etext": e.text,
        "etype": e.type,
        "weight": float(e.weight),
        "eprov": json.dumps(list(e.provenance)),
        "emeta": json.dumps(dict(e.metadata), sort_keys=True, default=str),
    }


def edge_rows(g: KnowledgeGraph) -> list[dict[str, Any]]:
    """One row per edge, keyed as :func:`~kgpath.backends.cypher.schema.edge_props` says."""
    return [{**edge_content(e), "rank": j} for j, e in enumerate(g.edges)]


def passage_content(p: Passage) -> dict[str, Any]:
    """A passage's row without its position, citing nodes and vector."""
    return {"id": p.id, "text": p.text,
            "metadata": json.dumps(dict(p.metadata), sort_keys=True, default=str)}


def citing_nodes(g: KnowledgeGraph) -> dict[str, list[str]]:
    """``passage id -> ids of the nodes citing it``, in node order."""
    citing: dict[str, list[str]] = {}
    for n in g.nodes:
        for pid in dict.fromkeys(n.provenance):
            citing.setdefault(pid, []).append(n.id)
    return citing


def passage_rows(
    g: KnowledgeGraph, *, vectors: dict[str, np.ndarray] | None = None
) -> list[dict[str, Any]]:
    """One row per passage, keyed as :func:`~kgpath.backends.cypher.schema.passage_props` says.

    ``metadata`` is JSON, ``ord`` the passage's position, ``entities`` the JSON list of the
    ids of the nodes citing it (node order), ``embedding`` its vector in ``vectors``
    (:func:`encode_vector`).
    """
    citing = citing_nodes(g)
    rows = []
    for i, p in enumerate(g.passages.values()):
        vec = None if vectors is None else vectors.get(p.id)
        rows.append({**passage_content(p), "ord": i,
                     "entities": json.dumps(citing.get(p.id, [])),
                     "embedding": None if vec is None else encode_vector(vec)})
    return rows


def encode_vector(vec: np.ndarray) -> str:
    """A vector as base64 of its little-endian float32 bytes (exact; one string per row).

    A list of floats costs the FalkorDB client ~20x more to read (a 2,000 x 64 scan:
    1.5 s as lists, 0.07 s as strings).
    """
    return base64.b64encode(np.asarray(vec, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(value: Any) -> np.ndarray | None:
    """:func:`encode_vector`'s inverse; a list of numbers is read as is; ``None`` stays."""
    if value is None or (isinstance(value, str) and not value):
        return None
    if isinstance(value, str):
        return np.frombuffer(base64.b64decode(value), dtype="<f4").astype(np.float32)
    return np.asarray(value, dtype=np.float32)


def passage_matrix(graph: KnowledgeGraph | GraphIndex) -> dict[str, np.ndarray] | None:
    """The index's shared passage vectors by passage id (``None`` for a bare graph)."""
    if not isinstance(graph, GraphIndex) or not graph.graph.passages:
        return None
    pv = graph.passage_vectors()
    if pv is None:
        return None
    return {pid: pv.matrix[i] for i, pid in enumerate(pv.ids)}


def _write_vectors(directory: str | os.PathLike[str], graph: KnowledgeGraph | GraphIndex,
                   g: KnowledgeGraph) -> None:
    """Node vectors in node order, passage vectors in passage order, the name token index."""
    from kgpath.backends.cypher.names import write_name_tokens
    from kgpath.backends.cypher.vectors import write_vector_files

    write_name_tokens(directory, [n.id for n in g.nodes], [n.name for n in g.nodes])
    pv = passage_matrix(graph)
    pids = [p for p in g.passages if pv is not None and p in pv]
    write_vector_files(
        directory, node_ids=[n.id for n in g.nodes], node_vectors=g.vectors.matrix,
        passage_ids=pids if pids and len(pids) == len(g.passages) else None,
        passage_vectors=(np.asarray([pv[p] for p in pids], dtype=np.float32)
                         if pv is not None and pids else None))


def _load_passages(
    drv: CypherDriver, s: CypherSchema, rows: list[dict[str, Any]], batch_size: int,
    show_progress: bool,
) -> int:
    """``UNWIND`` the passage rows into ``passage_label`` nodes; returns how many."""
    props = passage_props(s)
    if not props or not rows:
        return 0
    items = ", ".join(f"{quote_identifier(p)}: row.{quote_identifier(k)}" for k, p in props)
    items += drv.dialect.key_items(s, "row.`id`")
    query = f"UNWIND $rows AS row CREATE (:{quote_identifier(s.passage_label)} {{{items}}})"
    for start in progress(range(0, len(rows), batch_size), show_progress, "passages"):
        drv.run(query, {"rows": rows[start : start + batch_size]})
    return len(rows)
