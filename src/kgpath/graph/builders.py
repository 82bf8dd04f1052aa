"""Building a :class:`~kgpath.graph.KnowledgeGraph` from triples and from integer arrays.

From ``(head, relation, tail)`` triples and from integer endpoint arrays (the bulk path):
pure data, nothing above the graph. The classmethods of the same names on
:class:`~kgpath.graph.KnowledgeGraph` delegate here; ``cls`` lets a subclass build itself.
Foreign formats (networkx, PathRAG-6) are :mod:`kgpath.graph.convert`; documents are the
construction package's (:func:`kgpath.ingest.graph_from_documents`).

These functions are friends of :class:`~kgpath.graph.KnowledgeGraph`: the bulk paths fill
its private lists directly, as its own methods would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from kgpath.errors import GraphError, short
from kgpath.graph.model import Edge, Node, as_provenance, check_id, check_text

if TYPE_CHECKING:
    from kgpath.graph.knowledge_graph import KnowledgeGraph

__all__ = ["GraphBuilders", "from_arrays", "from_triples"]


class GraphBuilders:
    """The constructors of :class:`~kgpath.graph.KnowledgeGraph` (a mixin it inherits).

    Thin delegations to the functions of this module; ``cls`` is the class they are
    called on, so a subclass builds itself.
    """

    @classmethod
    def from_triples(
        cls,
        triples: Iterable[Sequence[str]],
        passages: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
        *,
        provenance: Sequence[Sequence[str]] | None = None,
    ) -> KnowledgeGraph:
        """Build a graph from ``(head, relation, tail)`` triples.

        Node ids and names are the entity strings. ``passages`` maps passage id to text;
        ``provenance[i]`` lists the passage ids that support ``triples[i]`` (they are also
        attached to both end nodes). See :func:`kgpath.graph.builders.from_triples`.
        """
        return from_triples(triples, passages, provenance=provenance, cls=_kg_class(cls))

    @classmethod
    def from_arrays(
        cls,
        node_ids: Sequence[str],
        sources: Sequence[int] | np.ndarray,
        targets: Sequence[int] | np.ndarray,
        *,
        relations: Sequence[str] | None = None,
        texts: Sequence[str] | None = None,
        embeddings: np.ndarray | None = None,
        compact: bool = False,
    ) -> KnowledgeGraph:
        """Bulk-build from node ids and integer edge endpoint arrays (fast path).

        ``sources[i] -> targets[i]`` index into ``node_ids``. Duplicate
        ``(source, target, relation)`` edges are merged as in :meth:`add_edge`. Intended
        for large generated or exported graphs (10^5-10^6 nodes). ``compact=True`` keeps
        nodes and edges in arrays, materialised on access (:mod:`kgpath.graph.columns`).
        See :func:`kgpath.graph.builders.from_arrays`.
        """
        return from_arrays(
            node_ids, sources, targets, relations=relations, texts=texts,
            embeddings=embeddings, compact=compact, cls=_kg_class(cls),
        )


def from_triples(
    triples: Iterable[Sequence[str]],
    passages: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    *,
    provenance: Sequence[Sequence[str]] | None = None,
    cls: type[KnowledgeGraph] | None = None,
) -> KnowledgeGraph:
    """Build a graph from ``(head, relation, tail)`` triples.

    Node ids and names are the entity strings. ``passages`` maps passage id to text;
    ``provenance[i]`` lists the passage ids that support ``triples[i]`` (they are also
    attached to both end nodes); a single string there is one passage id.
    """
    g = _new(cls)
    if passages is not None:
        items = passages.items() if isinstance(passages, Mapping) else passages
        for pid, text in items:
            g.add_passage(pid, text)
    trip = list(triples)
    if provenance is not None and len(provenance) != len(trip):
        raise GraphError(
            f"provenance has {len(provenance)} entries for {len(trip)} triples"
        )
    node_prov: dict[str, list[str]] = {}
    for i, t in enumerate(trip):
        _add_triple(g, i, t, provenance, node_prov)
    nodes = g._nodes
    assert isinstance(nodes, list)  # built by add_node: the object mode
    for ent, cites in node_prov.items():
        if cites:
            n = g.node(ent)
            nodes[g.index_of(ent)] = Node(
                n.id, n.name, n.text, n.type, n.metadata, tuple(dict.fromkeys(cites))
            )
    return g


def _kg_class(cls: type[GraphBuilders]) -> type[KnowledgeGraph]:
    """The mixin's ``cls`` is always :class:`KnowledgeGraph` or a subclass of it."""
    return cast("type[KnowledgeGraph]", cls)


def _new(cls: type[KnowledgeGraph] | None) -> KnowledgeGraph:
    """An empty graph of class ``cls`` (``KnowledgeGraph`` when ``None``).

    Imported here, not at module level: ``knowledge_graph`` imports this module for
    :class:`GraphBuilders`.
    """
    if cls is None:
        from kgpath.graph.knowledge_graph import KnowledgeGraph

        cls = KnowledgeGraph
    return cls()


def _add_triple(
    g: KnowledgeGraph,
    i: int,
    t: Sequence[str],
    provenance: Sequence[Sequence[str]] | None,
    node_prov: dict[str, list[str]],
) -> None:
    """Add triple number ``i`` (its end nodes when new, then the edge); collect citations."""
    if isinstance(t, (str, bytes)) or not isinstance(t, Sequence) or len(t) != 3:
        raise GraphError(f"triple #{i} must be (head, relation, tail), got {short(t)}")
    h, r, tl = (str(x).strip() for x in t)
    if not h or not tl:
        raise GraphError(f"triple #{i} has an empty head or tail: {short(t)}")
    prov = as_provenance(provenance[i], f"triple #{i}") if provenance is not None else ()
    for p in prov:
        if p not in g._passages:
            raise GraphError(f"triple #{i} cites unknown passage {p!r}")
    for ent in (h, tl):
        if ent not in g:
            g.add_node(ent, name=ent, text=ent)
        node_prov.setdefault(ent, []).extend(prov)
    g.add_edge(h, tl, relation=r, text=f"{h} {r} {tl}", provenance=prov)


def from_arrays(
    node_ids: Sequence[str],
    sources: Sequence[int] | np.ndarray,
    targets: Sequence[int] | np.ndarray,
    *,
    relations: Sequence[str] | None = None,
    texts: Sequence[str] | None = None,
    embeddings: np.ndarray | None = None,
    compact: bool = False,
    cls: type[KnowledgeGraph] | None = None,
) -> KnowledgeGraph:
    """Bulk-build from node ids and integer edge endpoint arrays (fast path).

    ``sources[i] -> targets[i]`` index into ``node_ids``. Duplicate
    ``(source, target, relation)`` edges are merged as in
    :meth:`~kgpath.graph.KnowledgeGraph.add_edge`. Intended for large generated or
    exported graphs (10^5-10^6 nodes). With ``compact=True`` nodes and edges live in
    arrays and are materialised on access (:mod:`kgpath.graph.columns`; about 1/10 of the
    memory, the same content).
    """
    g = _new(cls)
    if compact:
        src, dst = _endpoint_pair(sources, targets)
        n = len(node_ids)
        from kgpath.graph.columns import fill_columns

        fill_columns(
            g, node_ids, src, dst,
            relations=None if relations is None
            else _same_length(relations, src.size, "relations", "sources"),
            texts=None if texts is None else _same_length(texts, n, "texts", "node_ids"),
        )
    else:
        _fill_objects(g, node_ids, sources, targets, relations, texts)
    g._version += 1
    if embeddings is not None:
        g.vectors.set(embeddings)
    return g


def _fill_objects(g: KnowledgeGraph, node_ids: Sequence[str], sources: Any, targets: Any,
                  relations: Sequence[str] | None, texts: Sequence[str] | None) -> None:
    """The object mode of :func:`from_arrays`: one Node / Edge object each."""
    empty: Mapping[str, Any] = MappingProxyType({})
    ids = [check_id(x, f"node_ids[{k}]") for k, x in enumerate(node_ids)]
    if len(set(ids)) != len(ids):
        raise GraphError("node_ids contain duplicates")
    n = len(ids)
    src, dst = _endpoint_pair(sources, targets)
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        raise GraphError(f"edge endpoint out of range [0, {n})")
    txt = _same_length(texts, n, "texts", "node_ids") if texts is not None else [""] * n
    g._nodes = [Node(i, i, check_text(t, f"texts[{k}]"), None, empty)
                for k, (i, t) in enumerate(zip(ids, txt))]
    g._node_index = {i: k for k, i in enumerate(ids)}
    rel = _same_length(relations, src.size, "relations", "sources") if relations is not None \
        else None
    edges: list[Edge] = []
    keys = g._edge_key
    for k in range(src.size):
        a, b = ids[src[k]], ids[dst[k]]
        r = check_text(rel[k], f"relations[{k}]") if rel is not None else ""
        key = (a, b, r)
        if key in keys:
            continue
        keys[key] = len(edges)
        edges.append(Edge(a, b, r, "", None, 1.0, (), empty))
    g._edges = edges


def _endpoint_pair(sources: Any, targets: Any) -> tuple[np.ndarray, np.ndarray]:
    src, dst = _endpoints(sources, "sources"), _endpoints(targets, "targets")
    if src.shape != dst.shape:
        raise GraphError(f"sources and targets differ in length: {src.shape} vs {dst.shape}")
    return src, dst


def _endpoints(values: Any, what: str) -> np.ndarray:
    """Integer endpoint indices; floats (even 1.0) and other kinds are refused, not cast."""
    arr = np.asarray(values)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise GraphError(
            f"{what} must be a 1-D sequence of integer node indices, got dtype {arr.dtype} "
            f"shape {arr.shape}"
        )
    return arr.astype(np.int64)


def _same_length(values: Any, n: int, what: str, other: str) -> list[Any]:
    if isinstance(values, str):
        raise GraphError(f"{what} must be a sequence of strings, got a single string")
    out = list(values)
    if len(out) != n:
        raise GraphError(f"{what} has {len(out)} entries, {other} has {n}")
    return out
