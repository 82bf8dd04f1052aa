"""Index a document graph at the cost of embedding its corpus once.

:func:`embed_graph` embeds every passage of a graph built by
:func:`kgpath.ingest.graph_from_documents` once (batched) and gives each entity node the
normalised mean of the vectors of the passages that cite it (its provenance). The node
vectors are stored on the graph (``graph.vectors.set``, :class:`~kgpath.graph.NodeVectors`),
so every method's :class:`~kgpath.index.GraphIndex` finds them and embeds nothing more; the
passage vectors are returned (:class:`GraphVectors`) so dense passage search reuses them.
:meth:`GraphIndex.from_documents <kgpath.index.GraphIndex.from_documents>` builds a graph
and calls :func:`embed_graph`.

This is a documented kgpath choice, not a paper's: a node vector made from its passages
says what the passages are about, not what the entity is, so node search is weaker than
with vectors of the node texts (``node_vectors="text"`` embeds those instead, at the cost
of a second pass over as many texts as there are nodes). Both are measured by
``kgpath eval kg --vectors`` (see its module docstring).

Nodes that cite no passage of the graph get the vector of their own search text
(``Node.search_text``); that is the only extra embedding ``"passage_mean"`` pays.

The passage vectors live in the shared cache of :mod:`kgpath.index.passage_vectors` (one
per graph and model, found by the embedder's fingerprint), so a retriever that searches
passages with the same model (C2RAG's textual recovery) reuses them, and
:func:`embed_graph` itself embeds only the passages that cache lacks. The node-vector mode
is recorded in the owner record (``"node_vectors"``), so
:meth:`GraphIndex.refresh <kgpath.index.GraphIndex.refresh>` recomputes the passage means
of changed nodes without embedding.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from kgpath.embeddings import (
    Embedder,
    _remember,
    _same_cheap,
    as_embedder,
    embedder_record,
    normalize_rows,
)
from kgpath.errors import ConfigError, EmbeddingError, PersistenceError
from kgpath.graph import KnowledgeGraph
from kgpath.index.passage_vectors import apassage_vectors as ashared_passage_vectors
from kgpath.index.passage_vectors import passage_cache
from kgpath.index.passage_vectors import passage_vectors as shared_passage_vectors

__all__ = [
    "NODE_VECTORS",
    "GraphVectors",
    "aembed_graph",
    "check_node_vectors",
    "embed_graph",
    "load_passage_vectors",
    "passage_mean_vectors",
    "save_passage_vectors",
]

NodeVectorMode = Literal["passage_mean", "text"]
NODE_VECTORS: tuple[str, ...] = ("passage_mean", "text")


@dataclass(frozen=True)
class GraphVectors:
    """Passage vectors (rows in ``passage_ids`` order) and how long they took.

    ``seconds`` has ``passages`` (embedding the corpus), ``nodes`` (mean pooling or node
    text embedding) and ``nodes_embedded`` (how many node texts were embedded).
    """

    passage_ids: tuple[str, ...]
    passage_vectors: np.ndarray
    node_vectors: np.ndarray
    seconds: dict[str, float] = field(default_factory=dict)

    def position(self) -> dict[str, int]:
        """``passage id -> row`` of :attr:`passage_vectors`."""
        return {p: i for i, p in enumerate(self.passage_ids)}


def check_node_vectors(mode: object) -> None:
    """Raise :class:`ConfigError` unless ``mode`` is one of :data:`NODE_VECTORS`."""
    if mode not in NODE_VECTORS:
        raise ConfigError(f"node_vectors must be one of {NODE_VECTORS}, got {mode!r}")


def passage_mean_vectors(
    graph: KnowledgeGraph, passage_ids: Sequence[str], passage_vectors: np.ndarray
) -> tuple[np.ndarray, list[int]]:
    """Each node's normalised mean of its cited passages' vectors.

    Returns the ``(n_nodes, d)`` matrix and the indices of nodes that cite no known
    passage (their rows are zero; :func:`embed_graph` embeds their own text).

    Examples
    --------
    >>> g = KnowledgeGraph.from_triples([("a", "r", "b")], {"p": "x", "q": "y"},
    ...                                 provenance=[["p", "q"]])
    >>> m, missing = passage_mean_vectors(g, ["p", "q"], np.eye(2, dtype=np.float32))
    >>> np.round(m.astype(float), 3).tolist(), missing
    ([[0.707, 0.707], [0.707, 0.707]], [])
    """
    pos = {p: i for i, p in enumerate(passage_ids)}
    vecs = np.asarray(passage_vectors, dtype=np.float32)
    out = np.zeros((graph.num_nodes, vecs.shape[1]), dtype=np.float32)
    missing: list[int] = []
    for i, node in enumerate(graph.nodes):
        rows = [pos[p] for p in dict.fromkeys(node.provenance) if p in pos]
        if rows:
            out[i] = vecs[rows].mean(axis=0)
        else:
            missing.append(i)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0)
    return out, missing


def _finish(graph: KnowledgeGraph, ids: tuple[str, ...], pvec: np.ndarray,
            mode: str) -> tuple[np.ndarray, list[int], float]:
    """Node vectors before embedding the rows listed as missing; the time they started."""
    t0 = time.perf_counter()
    if len(pvec) != len(ids):
        raise EmbeddingError(f"embedder returned {len(pvec)} vectors for {len(ids)} passages")
    if mode == "text":
        return np.zeros((graph.num_nodes, pvec.shape[1]), np.float32), \
            list(range(graph.num_nodes)), t0
    mat, missing = passage_mean_vectors(graph, ids, pvec)
    return mat, missing, t0


def embed_graph(
    graph: KnowledgeGraph,
    embedder: Embedder,
    *,
    node_vectors: NodeVectorMode = "passage_mean",
    passage_vectors: np.ndarray | None = None,
    store: bool = True,
) -> GraphVectors:
    """Embed the graph's passages once; give every node a vector; store them.

    Parameters
    ----------
    graph
        A graph with passages (e.g. from :func:`kgpath.ingest.graph_from_documents`).
    embedder
        Any :class:`~kgpath.embeddings.Embedder` (its own batching applies).
    node_vectors
        ``"passage_mean"`` (default; no extra embedding but for nodes citing no passage)
        or ``"text"`` (embed every node's search text, as :class:`GraphIndex` would).
    passage_vectors
        Vectors already computed for ``graph.passages`` in its order (e.g. loaded from
        a cache with :func:`load_passage_vectors`): the corpus is then not re-embedded.
    store
        Write the node vectors with ``graph.vectors.set``, recording
        ``embedder`` as their owner (so an index with another embedder re-embeds instead of
        using them); vectors passed in ``passage_vectors`` carry no owner record.

    Concurrent calls for the same graph, model and options (threads or asyncio,
    :func:`aembed_graph` included) embed once and share the result (single-flight).

    Raises
    ------
    ConfigError
        For an unknown ``node_vectors``.
    EmbeddingError
        If the graph has no passages or the embedder returns the wrong number of rows.
    """
    check_node_vectors(node_vectors)
    embedder = as_embedder(embedder)
    if not graph.passages:
        raise EmbeddingError("the graph has no passages to embed")
    run = functools.partial(_embed_graph, graph, embedder, node_vectors, passage_vectors, store)
    if passage_vectors is not None:  # the caller's vectors: nothing to share
        return run()
    key = ("embed_graph", node_vectors, store, graph.version)
    return passage_cache(graph, embedder).flight.do(key, run)


async def aembed_graph(
    graph: KnowledgeGraph,
    embedder: Embedder,
    *,
    node_vectors: NodeVectorMode = "passage_mean",
    passage_vectors: np.ndarray | None = None,
    store: bool = True,
) -> GraphVectors:
    """Async :func:`embed_graph` (the embedder's ``aembed_passages``)."""
    check_node_vectors(node_vectors)
    embedder = as_embedder(embedder)
    if not graph.passages:
        raise EmbeddingError("the graph has no passages to embed")
    run = functools.partial(_aembed_graph, graph, embedder, node_vectors, passage_vectors,
                            store)
    if passage_vectors is not None:
        return await run()
    key = ("embed_graph", node_vectors, store, graph.version)
    return await passage_cache(graph, embedder).flight.ado(key, run)


def _embed_graph(graph: KnowledgeGraph, embedder: Embedder, node_vectors: str,
                 given: np.ndarray | None, store: bool) -> GraphVectors:
    ids = tuple(graph.passages)
    t0 = time.perf_counter()
    cache = passage_cache(graph, embedder)
    _seed(graph, cache, given)
    shared_passage_vectors(graph, embedder)  # single-flight: the missing passages, once
    owner = cache.owner or _known_owner(graph, embedder)
    with cache.lock:
        pvec = _rows(graph, cache, ids)
    mat, missing, t1 = _finish(graph, ids, pvec, node_vectors)
    if missing:
        texts = [graph.node_at(i).search_text for i in missing]
        mat[missing] = normalize_rows(np.asarray(embedder.embed_passages(texts), np.float32))
    if store and owner is None and given is None:  # cached: probe one afresh
        probe = graph.passages[ids[0]].text
        owner = _record(embedder, probe, embedder.embed_passages([probe])[0])
    return _result(graph, ids, pvec, mat, missing, t1 - t0, t1, store, owner)


async def _aembed_graph(graph: KnowledgeGraph, embedder: Embedder, node_vectors: str,
                        given: np.ndarray | None, store: bool) -> GraphVectors:
    ids = tuple(graph.passages)
    t0 = time.perf_counter()
    cache = passage_cache(graph, embedder)
    _seed(graph, cache, given)
    await ashared_passage_vectors(graph, embedder)
    owner = cache.owner or _known_owner(graph, embedder)
    with cache.lock:
        pvec = _rows(graph, cache, ids)
    mat, missing, t1 = _finish(graph, ids, pvec, node_vectors)
    if missing:
        texts = [graph.node_at(i).search_text for i in missing]
        vecs = await embedder.aembed_passages(texts)
        mat[missing] = normalize_rows(np.asarray(vecs, np.float32))
    if store and owner is None and given is None:
        probe = graph.passages[ids[0]].text
        owner = _record(embedder, probe, (await embedder.aembed_passages([probe]))[0])
    return _result(graph, ids, pvec, mat, missing, t1 - t0, t1, store, owner)


def _unit(vecs: np.ndarray) -> np.ndarray:
    return normalize_rows(np.asarray(vecs, dtype=np.float32))


def _seed(graph: KnowledgeGraph, cache: Any, given: np.ndarray | None) -> None:
    """Put vectors the caller already has (``graph.passages`` order) into the cache."""
    if given is not None:
        with cache.lock:
            cache.add(list(graph.passages.values()), _unit(given))


def _rows(graph: KnowledgeGraph, cache: Any, ids: tuple[str, ...]) -> np.ndarray:
    pv = cache.vectors(graph)
    pos = {p: i for i, p in enumerate(pv.ids)}
    return np.ascontiguousarray(pv.matrix[[pos[p] for p in ids]])


def _record(embedder: Embedder, probe: str, vector: np.ndarray) -> dict[str, Any]:
    """The owner record of vectors ``embedder`` made, remembered for cheap later checks."""
    rec = embedder_record(embedder, probe, vector)
    _remember(embedder, probe, rec["fingerprint"])
    return rec


def _known_owner(graph: KnowledgeGraph, embedder: Embedder) -> dict[str, Any] | None:
    """The graph's vector owner when ``embedder`` is known to be it (no embedding call)."""
    rec = graph.vectors.owner
    return dict(rec) if rec and _same_cheap(embedder, dict(rec)) else None


def _result(graph: KnowledgeGraph, ids: tuple[str, ...], pvec: np.ndarray, mat: np.ndarray,
            missing: list[int], t_pass: float, t1: float, store: bool,
            owner: dict[str, Any] | None = None) -> GraphVectors:
    if store and graph.num_nodes:
        # the mode goes into the owner record, so GraphIndex.refresh can recompute the
        # passage means of nodes whose provenance changed (no embedding)
        mode = "text" if len(missing) == graph.num_nodes and len(ids) else "passage_mean"
        graph.vectors.set(mat, owner=None if owner is None else {**owner, "node_vectors": mode})
    seconds = {"passages": t_pass, "nodes": time.perf_counter() - t1,
               "nodes_embedded": float(len(missing))}
    return GraphVectors(ids, pvec, mat, seconds)


def save_passage_vectors(vectors: GraphVectors, directory: str | os.PathLike[str]) -> None:
    """Write ``passage_ids.txt`` and ``passage_vectors.npy`` into ``directory``."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    np.save(d / "passage_vectors.npy", vectors.passage_vectors)
    (d / "passage_ids.txt").write_text("\n".join(vectors.passage_ids), encoding="utf-8")


def load_passage_vectors(
    graph: KnowledgeGraph, directory: str | os.PathLike[str]
) -> np.ndarray:
    """Passage vectors saved by :func:`save_passage_vectors`, in ``graph.passages`` order.

    Raises
    ------
    PersistenceError
        If the files are missing or do not cover exactly the graph's passages.
    """
    d = Path(directory)
    try:
        mat = np.load(d / "passage_vectors.npy")
        ids = (d / "passage_ids.txt").read_text(encoding="utf-8").split("\n")
    except (OSError, ValueError) as exc:
        raise PersistenceError(f"no passage vectors in {d}: {exc}") from exc
    pos = {p: i for i, p in enumerate(ids)}
    if len(ids) != len(mat) or set(pos) != set(graph.passages):
        raise PersistenceError(f"passage vectors in {d} do not match the graph's passages")
    return np.ascontiguousarray(mat[[pos[p] for p in graph.passages]])
