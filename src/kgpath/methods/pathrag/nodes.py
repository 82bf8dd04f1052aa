"""Section 4.1, second half: the retrieved node set ``V_q`` (keywords take turns).

Also the global half of the LightRAG keyword split PathRAG's code inherits
(``_get_edge_data`` in ``PathRAG/operate.py``): relations retrieved for the high-level
keywords, :func:`retrieve_relations`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kgpath.graph import Edge, Node
from kgpath.search.vector import top_k

__all__ = ["RetrievedNode", "RetrievedRelation", "node_similarities", "rank_nodes",
           "rank_relations", "retrieve_nodes", "retrieve_relations"]


@dataclass(frozen=True)
class RetrievedNode:
    """A node of ``V_q`` with the keyword that retrieved it and their cosine similarity."""

    node: Node
    index: int
    keyword: str
    similarity: float

    @property
    def id(self) -> str:
        """Node id."""
        return self.node.id


@dataclass(frozen=True)
class RetrievedRelation:
    """An edge retrieved for the high-level keywords, with its cosine similarity."""

    edge: Edge
    index: int
    similarity: float
    text: str


def node_similarities(keyword_vectors: np.ndarray, node_vectors: np.ndarray) -> np.ndarray:
    """``(|K_q|, |V|)`` float32 cosines of section 4.1 (rows are unit vectors).

    Summed row by row (``np.einsum``), not by a BLAS product: BLAS sums a row in an order
    that depends on the rows beside it, so equal node vectors could score 1 ulp apart and a
    tie go to the later node. Row by row, a node's cosine is the same whether the matrix is
    held whole, read in pages or streamed from a vector file
    (:meth:`~kgpath.backends.cypher.vectors.VectorFile.scores` sums the same way), which is
    what makes :class:`~kgpath.methods.pathrag.database.CypherPathRAG` equal to memory.
    """
    kv = np.atleast_2d(np.asarray(keyword_vectors, dtype=np.float32))
    nv = np.asarray(node_vectors, dtype=np.float32)
    out = np.empty((kv.shape[0], nv.shape[0]), dtype=np.float32)
    if nv.shape[0] == 0:
        return out
    for k in range(kv.shape[0]):
        np.einsum("ij,j->i", nv, np.ascontiguousarray(kv[k]), out=out[k])
    return out


def retrieve_nodes(
    keyword_vectors: np.ndarray,
    node_vectors: np.ndarray,
    n: int,
    min_similarity: float | None = None,
    min_z: float | None = None,
) -> list[tuple[int, int, float]]:
    """Section 4.1: iterate over the keywords, collecting similar nodes until ``n`` are found.

    :func:`rank_nodes` over :func:`node_similarities` (every keyword against every node).
    Returns ``(node index, keyword position, similarity)`` in collection order.
    """
    return rank_nodes(node_similarities(keyword_vectors, node_vectors), n, min_similarity,
                      min_z)


def rank_nodes(
    sims: np.ndarray,
    n: int,
    min_similarity: float | None = None,
    min_z: float | None = None,
) -> list[tuple[int, int, float]]:
    """Section 4.1's selection over the similarities ``sims`` (``|K_q| x |V|``, node order).

    Each keyword ranks all nodes by cosine similarity. Keywords
    take turns, each contributing its best node not yet collected, until ``n`` distinct
    nodes (or all nodes) are collected. A match below ``min_similarity`` ends that
    keyword's turns (the authors' vector store keeps only matches above its
    ``cosine_better_than_threshold``), so fewer than ``n`` nodes may come back. ``min_z``
    is the same floor in units of the keyword's own spread: a match counts only if its
    similarity is at least ``mean + min_z · std`` of that keyword's similarities to all
    nodes (a kgpath choice: cosine scales differ by embedder, e5 models put every pair
    above 0.8, hashing embedders near 0). When that relative floor leaves no node at all
    (a small graph, where no similarity stands ``min_z`` deviations out, or one joined
    query vector), the single best match is kept, so a question never loses every node to
    a floor meant to drop the weak ones. Returns
    ``(node index, keyword position, similarity)`` in collection order. Ties rank the lower
    node index first. The similarities may come from a matrix held in memory or streamed
    from a file (the floor needs all of them, not the matrix).
    """
    sims = np.atleast_2d(np.asarray(sims, dtype=np.float32))
    total = sims.shape[1]
    if sims.shape[0] == 0 or total == 0:
        return []
    n = min(int(n), total)
    depth = min(n, total)
    if depth < total:
        part = np.argpartition(-sims, depth - 1, axis=1)[:, :depth]
    else:
        part = np.broadcast_to(np.arange(total), sims.shape)
    psims = np.take_along_axis(sims, part, axis=1)
    ranked = np.take_along_axis(part, np.lexsort((part, -psims), axis=-1), axis=1)
    seen: set[int] = set()
    out: list[tuple[int, int, float]] = []
    floor = np.full(sims.shape[0], -np.inf if min_similarity is None else float(min_similarity))
    if min_z is not None:
        floor = np.maximum(floor, sims.mean(axis=1) + float(min_z) * sims.std(axis=1))
    for r in range(depth):
        for k in range(sims.shape[0]):
            node = int(ranked[k, r])
            if sims[k, node] < floor[k]:
                continue  # this keyword has no match above the floor left
            if node not in seen:
                seen.add(node)
                out.append((node, k, float(sims[k, node])))
                if len(out) == n:
                    return out
    if not out and min_z is not None:  # the relative floor left nothing: keep the best match
        k, node = divmod(int(np.argmax(sims)), total)
        if min_similarity is None or sims[k, node] >= float(min_similarity):
            out.append((node, k, float(sims[k, node])))
    return out


def retrieve_relations(
    keyword_vector: np.ndarray,
    edge_vectors: np.ndarray,
    edge_degree: np.ndarray,
    n: int,
    min_similarity: float | None = None,
    min_z: float | None = None,
) -> list[tuple[int, float]]:
    """Relations for the high-level keywords (``_get_edge_data`` in the authors' code).

    ``keyword_vector`` embeds the high-level keywords joined by ``", "`` (as ``kg_query``
    does). :func:`rank_relations` over its cosine to every edge vector, summed row by row
    as :func:`node_similarities` (so an edge's cosine is the same whether the matrix is
    held, read in pages or streamed from an edge vector file). Returns
    ``(edge index, similarity)``.
    """
    ev = np.asarray(edge_vectors, dtype=np.float32)
    if n <= 0 or ev.shape[0] == 0:
        return []
    sims = node_similarities(keyword_vector, ev)[0]
    return rank_relations(sims, edge_degree, n, min_similarity, min_z)


def rank_relations(
    sims: np.ndarray,
    edge_degree: Any,
    n: int,
    min_similarity: float | None = None,
    min_z: float | None = None,
) -> list[tuple[int, float]]:
    """The relations kept and their order, from every edge's similarity ``sims``.

    The ``n`` most similar edges (ties by edge index) at or above ``min_similarity`` (and at
    or above ``mean + min_z · std`` of all edges' similarities, see :func:`retrieve_nodes`)
    are kept, then ordered as the authors' code orders them: by edge degree
    (``edge_degree[e]``, the degrees of both endpoints added; read only for the kept
    edges), highest first; ties by similarity, then edge index. Returns
    ``(edge index, similarity)``.
    """
    sims = np.asarray(sims, dtype=np.float32).reshape(-1)
    if n <= 0 or sims.size == 0:
        return []
    order = top_k(sims, min(int(n), sims.size))
    if min_similarity is not None:
        order = order[sims[order] >= float(min_similarity)]
    if min_z is not None:
        order = order[sims[order] >= sims.mean() + float(min_z) * sims.std()]
    keep = sorted(order.tolist(), key=lambda e: (-int(edge_degree[e]), -float(sims[e]), e))
    return [(e, float(sims[e])) for e in keep]
