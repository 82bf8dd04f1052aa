"""Path-aware scoring: the query against the textualised path (a kgpath extension).

**Not in the PCR paper.** Eq. (2) ranks a reachable node by its own text, so the relations
that connect it to the anchor never count: in "who directed the films written by X" every
name two hops from X looks alike. Here a node is scored by the query's cosine to its path
from the anchor written as text, relation labels included::

    Marie Curie born in Warsaw
    Killers directed by Timo Tjahjanto, Killers written by Takuji Ushiyama

Each edge is written in its own direction as ``source relation target`` (underscores in
relation labels become spaces), edges joined by ``", "``; a path of length 0 is the
anchor's name. ``mask=True`` keeps only the relations and writes every name as
:data:`MASK`, so all paths with the same relation chain share one text, within a query and
across queries (the anchor's name is the same in every path of a query, so it does not
rank them).

All texts of one query are embedded in one ``embed_passages`` call (duplicates once):
:func:`path_similarity`. ``score="mixed"`` combines with the node's own score by
:func:`mix_scores`. The functions take plain names and :class:`~kgpath.graph.Edge` objects,
so any method with paths (PathRAG) can reuse them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kgpath.backends.base import BFSTree, GraphBackend, InProcessGraph
from kgpath.errors import ConfigError
from kgpath.graph import BFSResult, Edge

__all__ = [
    "MASK",
    "humanize_relation",
    "mix_scores",
    "path_similarity",
    "textualize_path",
    "tree_path_texts",
]

MASK = "something"


def humanize_relation(relation: str | None) -> str:
    """``"born_in"`` -> ``"born in"`` (empty labels read ``"related to"``)."""
    r = (relation or "").replace("_", " ").strip()
    return " ".join(r.split()) or "related to"


def _segment(edge: Edge, names: Mapping[str, str], mask: bool) -> str:
    def name(nid: str) -> str:
        return MASK if mask else names.get(nid, nid)

    return f"{name(edge.source)} {humanize_relation(edge.relation)} {name(edge.target)}"


def textualize_path(
    node_ids: Sequence[str], edges: Sequence[Edge], names: Mapping[str, str], *,
    mask: bool = False,
) -> str:
    """The path ``node_ids`` (start first) with its ``edges`` as one text (module docstring).

    ``names`` maps node ids to names (a missing id is written as itself).

    Examples
    --------
    >>> e = Edge("mc", "wa", "born_in")
    >>> textualize_path(["mc", "wa"], [e], {"mc": "Marie Curie", "wa": "Warsaw"})
    'Marie Curie born in Warsaw'
    >>> textualize_path(["mc", "wa"], [e], {"mc": "Marie Curie", "wa": "Warsaw"}, mask=True)
    'something born in something'
    """
    if not node_ids:
        return ""
    if not edges:
        return names.get(node_ids[0], node_ids[0])
    return ", ".join(_segment(e, names, mask) for e in edges)


def tree_path_texts(
    b: GraphBackend[Any, Any], tree: BFSTree[Any], positions: Sequence[int] | np.ndarray,
    *, mask: bool = False,
) -> list[str]:
    """:func:`textualize_path` of the BFS-tree path to each position, on any backend.

    Built along the parent pointers, each tree position's text once: a child's text is its
    parent's text plus the edge from the parent (O(|positions| + their ancestors)).
    """
    parent = np.asarray(tree.parent_pos)
    texts: dict[int, str] = {}
    names: dict[str, str] = {}

    def text(pos: int) -> str:
        chain = []
        while pos not in texts and parent[pos] >= 0:
            chain.append(pos)
            pos = int(parent[pos])
        if pos not in texts:  # the root: its name
            node = b.node(tree.nodes[pos])
            names[node.id] = node.name
            texts[pos] = node.name
        for p in reversed(chain):
            node = b.node(tree.nodes[p])
            names[node.id] = node.name
            seg = _segment(_parent_edge(b, tree, p), names, mask)
            up = int(parent[p])
            texts[p] = seg if parent[up] < 0 else f"{texts[up]}, {seg}"
        return texts[chain[0] if chain else pos]

    return [text(int(p)) for p in positions]


def _parent_edge(b: GraphBackend[Any, Any], tree: BFSTree[Any], pos: int) -> Edge:
    """The edge from ``pos``'s BFS parent (direct on an in-process CSR tree, else ``b.path``)."""
    if isinstance(tree, BFSResult) and b.has(InProcessGraph):
        return b.capability(InProcessGraph).graph.edge_at(int(tree.parent_edge[pos]))
    return b.path(tree, pos)[1][-1]


def path_similarity(embedder: Any, query_vec: np.ndarray, texts: Sequence[str]) -> np.ndarray:
    """``cos(q, embed(text))`` per text, from one ``embed_passages`` call.

    Distinct texts are embedded once; unit vectors, so the dot product is the cosine.
    """
    if not len(texts):
        return np.zeros(0, np.float32)
    if embedder is None:
        raise ConfigError("path-aware scoring needs an embedder for the path texts")
    uniq: dict[str, int] = {}
    idx = np.fromiter((uniq.setdefault(t, len(uniq)) for t in texts), np.int64, len(texts))
    vecs = np.asarray(embedder.embed_passages(list(uniq)), dtype=np.float32)
    q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
    if vecs.shape[1] != q.shape[0]:
        raise ConfigError(
            f"path text embeddings have dimension {vecs.shape[1]}, the query {q.shape[0]}"
        )
    return (vecs @ q)[idx].astype(np.float32)


def mix_scores(path: np.ndarray, node: np.ndarray, weight: float) -> np.ndarray:
    """``weight·path + (1 − weight)·node`` (``score="mixed"``)."""
    return (weight * np.asarray(path, np.float32)
            + (1.0 - weight) * np.asarray(node, np.float32)).astype(np.float32)
