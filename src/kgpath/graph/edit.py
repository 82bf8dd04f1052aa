"""Editing a graph in place: provenance-counted removal, and swapping in rebuilt contents.

Module functions, not :class:`~kgpath.graph.KnowledgeGraph` methods (the graph keeps a
small surface; ``tests/test_structure.py`` pins it). Both keep the graph object, so every
index and retriever holding it sees the edit (its ``version`` increases), and both keep the
stored vector of every node whose id and search text are unchanged.

* :func:`remove_passages` removes passages and what only they supported: a node or edge
  citing a removed passage loses that citation; one left citing nothing (that cited
  something before) is removed, as is every edge touching a removed node. What other
  passages also support stays, with its provenance reduced. Node texts, names and ids are
  kept as they are: this is the removal for a graph without extraction records.
* :func:`set_contents` installs whole lists of nodes and edges at once (a bulk builder
  checks them once instead of merging record by record:
  :func:`kgpath.ingest.replay.assemble_open`).
* :func:`replace_contents` makes a graph equal to another one (nodes, edges, passages in
  their order) while keeping the vectors that are still valid: the document lifecycle
  (:mod:`kgpath.index.documents`) rebuilds a graph from its stored extraction records and
  swaps it in, which is how an update equals a rebuild exactly.

A compact graph (:mod:`kgpath.graph.columns`) is converted to Python objects first, as any
mutation does (``KnowledgeGraph.add_node``); the result is an object graph.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from kgpath.errors import GraphError
from kgpath.graph.model import Edge, Node, Passage, short

if TYPE_CHECKING:
    from kgpath.graph.knowledge_graph import KnowledgeGraph

__all__ = ["Removal", "remove_passages", "replace_contents", "set_contents"]


@dataclass(frozen=True)
class Removal:
    """What :func:`remove_passages` removed (ids) and how many records it edited."""

    passages: tuple[str, ...]
    nodes: tuple[str, ...]
    edges: tuple[tuple[str, str, str], ...]
    nodes_reduced: int
    edges_reduced: int


def _passage_ids(ids: Iterable[str]) -> list[str]:
    """The ids in the given order, each once."""
    if isinstance(ids, (str, bytes)):
        raise GraphError(f"passage ids must be a collection of ids, got the string {ids!r}")
    out: dict[str, None] = {}
    for p in ids:
        if not isinstance(p, str):
            raise GraphError(f"passage id must be a string, got {short(p)}")
        out[p] = None
    return list(out)


def remove_passages(graph: KnowledgeGraph, ids: Iterable[str]) -> Removal:
    """Remove passages and the nodes and edges that only they supported (in place).

    Parameters
    ----------
    graph
        Edited in place (a compact graph becomes an object graph first).
    ids
        Passage ids; ids the graph does not hold are ignored (removing twice is harmless).

    Returns
    -------
    Removal
        The removed passage, node and edge ids and the number of nodes and edges whose
        provenance was reduced.

    Raises
    ------
    GraphError
        For a single string or a non-string id.

    Examples
    --------
    >>> from kgpath.graph import KnowledgeGraph
    >>> g = KnowledgeGraph.from_triples([("a", "r", "b"), ("b", "s", "c")],
    ...     {"p": "a r b", "q": "b s c"}, provenance=[["p"], ["p", "q"]])
    >>> r = remove_passages(g, ["p"])
    >>> [n.id for n in g.nodes], [(e.source, e.target) for e in g.edges], r.nodes
    (['b', 'c'], [('b', 'c')], ('a',))
    """
    gone = _passage_ids(ids)
    graph._thaw()
    held = {p for p in gone if p in graph._passages}
    if not held:
        return Removal((), (), (), 0, 0)
    nodes, dropped_nodes, reduced_n = _reduce(graph._nodes, held)
    dead = set(dropped_nodes)
    edges: list[Edge] = []
    dropped_edges: list[tuple[str, str, str]] = []
    reduced_e = 0
    for e in graph._edges:
        kept = tuple(p for p in e.provenance if p not in held)
        if e.source in dead or e.target in dead or (e.provenance and not kept):
            dropped_edges.append((e.source, e.target, e.relation))
            continue
        if len(kept) != len(e.provenance):
            e = replace(e, provenance=kept)
            reduced_e += 1
        edges.append(e)
    passages = {k: v for k, v in graph._passages.items() if k not in held}
    _install(graph, nodes, edges, passages, graph)
    return Removal(tuple(p for p in gone if p in held), tuple(dropped_nodes),
                   tuple(dropped_edges), reduced_n, reduced_e)


def _reduce(nodes: Iterable[Node], held: set[str]) -> tuple[list[Node], list[str], int]:
    kept: list[Node] = []
    dropped: list[str] = []
    reduced = 0
    for n in nodes:
        prov = tuple(p for p in n.provenance if p not in held)
        if n.provenance and not prov:
            dropped.append(n.id)
            continue
        if len(prov) != len(n.provenance):
            n = replace(n, provenance=prov)
            reduced += 1
        kept.append(n)
    return kept, dropped, reduced


def replace_contents(graph: KnowledgeGraph, source: KnowledgeGraph) -> None:
    """Make ``graph`` hold ``source``'s nodes, edges and passages, in their order (in place).

    A node keeps the vector ``graph`` stored for it when ``source`` has a node with the
    same id and search text and no vector of its own; ``source``'s own vectors win (when
    their dimension matches). ``graph``'s vector owner record is kept. ``graph.version``
    ends above every version either graph had, so indexes over ``graph`` rebuild.

    Examples
    --------
    >>> from kgpath.graph import KnowledgeGraph
    >>> g = KnowledgeGraph.from_triples([("a", "r", "b")])
    >>> g.vectors.set({"a": [1.0, 0.0], "b": [0.0, 1.0]})
    >>> replace_contents(g, KnowledgeGraph.from_triples([("b", "s", "c")]))
    >>> [n.id for n in g.nodes], g.vectors.missing()
    (['b', 'c'], [1])
    """
    source._thaw()
    graph._thaw()
    assert isinstance(source._node_index, dict)
    _install(graph, list(source._nodes), list(source._edges), dict(source._passages), source,
             dict(source._node_index), dict(source._edge_key))
    graph._version = max(graph._version, source._version) + 1


def set_contents(graph: KnowledgeGraph, nodes: Iterable[Node], edges: Iterable[Edge], *,
                 check: bool = True) -> None:
    """Make ``nodes`` and ``edges`` (in order) the graph's records; passages stay (in place).

    Vectors of nodes with an unchanged id and search text are kept. ``check=False`` skips
    the endpoint check for a caller whose edges join its own nodes by construction (the
    incremental assembly); duplicates are always refused.

    Raises
    ------
    GraphError
        For a duplicate node id, a duplicate ``(source, target, relation)`` edge or an edge
        naming an unknown node.

    Examples
    --------
    >>> from kgpath.graph import KnowledgeGraph, Node, Edge
    >>> g = KnowledgeGraph()
    >>> set_contents(g, [Node("a", "A"), Node("b", "B")], [Edge("a", "b", "r")])
    >>> g.bfs("a").nodes.tolist()
    [0, 1]
    """
    node_list, edge_list = list(nodes), list(edges)
    index = {n.id: i for i, n in enumerate(node_list)}
    if len(index) != len(node_list):
        seen: set[str] = set()
        for n in node_list:
            if n.id in seen:
                raise GraphError(f"duplicate node id {n.id!r}")
            seen.add(n.id)
    keys = {(e.source, e.target, e.relation): i for i, e in enumerate(edge_list)}
    if len(keys) != len(edge_list):
        raise GraphError(f"duplicate edge among {len(edge_list)} edges "
                         f"({len(edge_list) - len(keys)} repeated (source, target, relation))")
    for e in edge_list if check else ():
        if e.source not in index or e.target not in index:
            end = e.source if e.source not in index else e.target
            raise GraphError(f"edge {e.source!r} -> {e.target!r} names unknown node {end!r}")
    graph._thaw()
    _install(graph, node_list, edge_list, graph._passages, graph, index, keys)


def _install(graph: KnowledgeGraph, nodes: list[Node], edges: list[Edge],
             passages: dict[str, Passage], vectors_from: KnowledgeGraph,
             index: dict[str, int] | None = None,
             keys: dict[tuple[str, str, str], int] | None = None) -> None:
    """Set the graph's records, carrying vectors by (id, search text); bump the version."""
    emb, mask = _carry(graph, nodes, vectors_from)
    graph._nodes = nodes
    graph._edges = edges
    graph._passages = passages
    graph._node_index = index if index is not None else {n.id: i for i, n in enumerate(nodes)}
    graph._edge_key = keys if keys is not None else {
        (e.source, e.target, e.relation): i for i, e in enumerate(edges)}
    graph._emb, graph._emb_mask = emb, mask
    if emb is None:
        graph._emb_owner = None
    graph._csr = None
    graph._version += 1


def _vector_rows(g: KnowledgeGraph) -> tuple[dict[str, int], np.ndarray | None]:
    """``node id -> row`` of the nodes of ``g`` that have a vector, and the matrix."""
    if g._emb is None or g._emb_mask is None:
        return {}, None
    n = min(len(g._nodes), g._emb_mask.shape[0])
    nodes = g._nodes
    return {nodes[i].id: i for i in np.flatnonzero(g._emb_mask[:n]).tolist()}, g._emb


def _carry(graph: KnowledgeGraph, nodes: list[Node],
           vectors_from: KnowledgeGraph) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The vector matrix and mask for ``nodes``, carried by node id and search text.

    ``vectors_from``'s rows win over ``graph``'s; the same node object needs no text compare.
    """
    sources: list[tuple[KnowledgeGraph, dict[str, int], np.ndarray]] = []
    for g in ([graph] if vectors_from is graph else [vectors_from, graph]):
        rows, mat = _vector_rows(g)
        if mat is not None:
            sources.append((g, rows, mat))
    if not sources:
        return None, None
    dim = int(graph._emb.shape[1]) if graph._emb is not None else int(sources[0][2].shape[1])
    emb = np.zeros((len(nodes), dim), dtype=np.float32)
    mask = np.zeros(len(nodes), dtype=bool)
    for g, rows, mat in reversed(sources):  # the graph's own first, the source's win
        if mat.shape[1] != dim:
            continue
        old = g._nodes
        dst, src = [], []
        for i, n in enumerate(nodes):
            r = rows.get(n.id)
            if r is not None and (old[r] is n or old[r].search_text == n.search_text):
                dst.append(i)
                src.append(r)
        emb[dst] = mat[src]
        mask[dst] = True
    return emb, mask
