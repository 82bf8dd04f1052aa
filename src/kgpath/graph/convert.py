"""Converting a :class:`~kgpath.graph.KnowledgeGraph` from and to other graph formats.

Module functions, not methods: the graph is data, converters are functions (as in
networkx). :func:`from_networkx` / :func:`to_networkx` round-trip a networkx
``MultiDiGraph`` (networkx is imported only by :func:`to_networkx`; :func:`from_networkx`
reads any object with networkx's graph API); :func:`from_pathrag6` loads one PathRAG-6 domain
folder. They use only the graph's public mutators, except :func:`to_networkx`, which reads
the stored vectors' rows directly (a friend of :mod:`kgpath.graph.vectors`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgpath.errors import GraphError, KgpathError, short
from kgpath.graph.knowledge_graph import KnowledgeGraph

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["from_networkx", "from_pathrag6", "to_networkx"]


def from_pathrag6(directory: str | os.PathLike[str]) -> KnowledgeGraph:
    """Load one PathRAG-6 domain folder (``nodes.json`` + ``edges.json``).

    Node ``metadata.topic`` becomes the name, ``metadata.domain`` the type, ``embedding``
    the node's stored vector (:attr:`KnowledgeGraph.vectors`); edges keep ``relation`` and
    ``weight``.

    Raises
    ------
    GraphError
        If a file is missing, is not JSON, or does not hold PathRAG-6 records (naming the
        folder).
    """
    d = Path(directory)
    try:
        nodes = json.loads((d / "nodes.json").read_text(encoding="utf-8"))
        edges = json.loads((d / "edges.json").read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise GraphError(
            f"{d} is not a PathRAG-6 domain folder: {exc.filename} missing"
        ) from exc
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise GraphError(f"{d}: invalid JSON ({str(exc)[:200]})") from exc
    try:
        return _pathrag6_records(nodes, edges)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, KgpathError):
            raise
        raise GraphError(f"{d}: not PathRAG-6 records ({short(exc, 200)})") from exc


def _pathrag6_records(nodes: Any, edges: Any) -> KnowledgeGraph:
    g = KnowledgeGraph()
    for rec in nodes:
        meta = dict(rec.get("metadata") or {})
        g.add_node(
            str(rec["id"]),
            name=str(meta.get("topic") or rec["id"]),
            text=str(rec.get("text", "")),
            type=meta.get("domain"),
            metadata=meta,
            embedding=rec.get("embedding"),
        )
    for rec in edges:
        g.add_edge(
            str(rec["source"]),
            str(rec["target"]),
            relation=str(rec.get("relation", "")),
            weight=float(rec.get("weight", 1.0)),
        )
    return g


_NX_NODE_ATTRS = {"name", "text", "type", "provenance", "embedding"}
_NX_EDGE_ATTRS = {"relation", "text", "type", "weight", "provenance"}


def from_networkx(graph: nx.Graph) -> KnowledgeGraph:
    """Build a :class:`KnowledgeGraph` from a networkx (Multi)(Di)Graph.

    Node attributes ``name``, ``text``, ``type``, ``provenance``, ``embedding`` and
    edge attributes ``relation``, ``text``, ``type``, ``weight``, ``provenance`` are
    used when present; other attributes go to ``metadata``. An undirected graph gets
    both directions of every edge; ``graph.graph["passages"]`` (``{id: text}``) become
    passages.

    Raises
    ------
    GraphError
        If two networkx node ids become the same kgpath id (``str(id)``), or for an
        invalid attribute (naming the node or edge).

    Examples
    --------
    >>> import networkx as nx
    >>> from kgpath.graph import from_networkx, to_networkx
    >>> g = from_networkx(nx.DiGraph([("a", "b")]))
    >>> g, sorted(to_networkx(g).edges())
    (KnowledgeGraph(nodes=2, edges=1, passages=0), [('a', 'b')])
    """
    g = KnowledgeGraph()
    seen: dict[str, Any] = {}
    for nid, attrs in graph.nodes(data=True):
        key = str(nid)
        if key in seen:
            raise GraphError(
                f"networkx node ids {short(seen[key])} and {short(nid)} both become the "
                f"kgpath id {key!r}; rename one (kgpath ids are strings)"
            )
        seen[key] = nid
        g.add_node(
            key,
            name=str(attrs.get("name", nid)),
            text=str(attrs.get("text", "")),
            type=attrs.get("type"),
            metadata={k: v for k, v in attrs.items() if k not in _NX_NODE_ATTRS},
            provenance=attrs.get("provenance", ()),
            embedding=attrs.get("embedding"),
        )
    directed = graph.is_directed()
    for u, v, attrs in graph.edges(data=True):
        pairs = [(u, v)] if directed else [(u, v), (v, u)]
        for a, b in pairs:
            g.add_edge(
                str(a),
                str(b),
                relation=str(attrs.get("relation", "")),
                text=str(attrs.get("text", "")),
                type=attrs.get("type"),
                weight=attrs.get("weight", 1.0),
                provenance=attrs.get("provenance", ()),
                metadata={k: val for k, val in attrs.items() if k not in _NX_EDGE_ATTRS},
            )
    for pid, p in (graph.graph.get("passages") or {}).items():
        g.add_passage(str(pid), str(p))
    return g


def to_networkx(g: KnowledgeGraph) -> nx.MultiDiGraph:
    """Export ``g`` to a ``networkx.MultiDiGraph`` with the same attributes.

    The inverse of :func:`from_networkx`: node and edge records become attributes (a
    stored node vector as ``embedding``, a list), each edge is keyed by its relation, and
    the passages go to ``graph["passages"]``.
    """
    import networkx as nx

    out = nx.MultiDiGraph()
    emb, mask = g._emb, g._emb_mask
    for i, n in enumerate(g._nodes):
        attrs: dict[str, Any] = dict(n.metadata)
        attrs.update(name=n.name, text=n.text, type=n.type, provenance=list(n.provenance))
        if emb is not None and mask is not None and i < len(mask):
            if mask[i]:
                attrs["embedding"] = emb[i].tolist()
        out.add_node(n.id, **attrs)
    for e in g._edges:
        attrs = dict(e.metadata)
        attrs.update(
            relation=e.relation, text=e.text, type=e.type, weight=e.weight,
            provenance=list(e.provenance),
        )
        out.add_edge(e.source, e.target, key=e.relation, **attrs)
    out.graph["passages"] = {pid: p.text for pid, p in g._passages.items()}
    return out
