"""LangChain graph objects (``GraphDocument``, ``NetworkxEntityGraph``) to a kgpath graph.

* :func:`knowledge_graph_from_graph_documents` takes ``GraphDocument``s - what
  ``LLMGraphTransformer`` (``langchain_experimental``) produces and
  ``Neo4jGraph.add_graph_documents`` consumes: nodes ``(id, type, properties)``,
  relationships ``(source, target, type, properties)`` and the source ``Document``.
* :func:`knowledge_graph_from_entity_graph` takes a ``NetworkxEntityGraph`` (or its triples,
  ``KnowledgeTriple``-like objects or ``(subject, predicate, object)`` tuples).

The inputs are read by attribute (duck typing), so ``langchain_community``, ``langchain_neo4j``
and ``langchain_experimental`` classes all work and none of them is a dependency.

Mapping
-------
Node ``id`` -> node id; ``properties["name"]`` (else the id) -> name; ``properties
["description"]`` or ``["text"]`` -> text; ``type`` -> type (the default ``"Node"`` means
none); the other properties -> metadata. Relationship ``type`` -> relation;
``properties["description"]`` -> edge text; ``properties["weight"]`` -> weight; the rest ->
metadata. Each source document becomes a passage (id: the document's ``id``, else its
``metadata["id"]``, else ``doc-<position>``) and the provenance of every node and
relationship it contains. A node seen in several documents is merged: first non-empty name,
text and type win, metadata is combined, provenance is the union in document order.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from kgpath._progress import progress_if
from kgpath.errors import GraphError
from kgpath.graph import KnowledgeGraph

__all__ = ["knowledge_graph_from_graph_documents", "knowledge_graph_from_entity_graph"]

logger = logging.getLogger(__name__)

_DEFAULT_TYPES = ("Node", "", None)


class _NodeAcc:
    """A node being merged across documents."""

    __slots__ = ("name", "text", "type", "metadata", "provenance")

    def __init__(self) -> None:
        self.name = ""
        self.text = ""
        self.type: str | None = None
        self.metadata: dict[str, Any] = {}
        self.provenance: dict[str, None] = {}

    def merge(self, node: Any, passage: str | None) -> None:
        props = dict(getattr(node, "properties", None) or {})
        name = props.pop("name", None)
        text = props.pop("description", None) or props.pop("text", None)
        typ = getattr(node, "type", None)
        if not self.name and name:
            self.name = str(name)
        if not self.text and text:
            self.text = str(text)
        if self.type is None and typ not in _DEFAULT_TYPES:
            self.type = str(typ)
        elif typ not in _DEFAULT_TYPES and str(typ) != self.type:
            others = self.metadata.setdefault("other_types", [])
            if str(typ) not in others:
                others.append(str(typ))
        for k, v in props.items():
            self.metadata.setdefault(k, v)
        if passage is not None:
            self.provenance[passage] = None


def _doc_id(doc: Any, position: int, taken: set[str]) -> str:
    pid = getattr(doc, "id", None) or (getattr(doc, "metadata", None) or {}).get("id")
    pid = str(pid) if pid else f"doc-{position}"
    if pid in taken:
        raise GraphError(f"two source documents share the id {pid!r}")
    taken.add(pid)
    return pid


def knowledge_graph_from_graph_documents(
    graph_documents: Iterable[Any],
    *,
    include_sources: bool = True,
    show_progress: bool = False,
) -> KnowledgeGraph:
    """Build a graph from LangChain ``GraphDocument``s (see the module docstring).

    Parameters
    ----------
    graph_documents
        ``GraphDocument``-like objects (``nodes``, ``relationships``, optional ``source``).
    include_sources
        Keep each source ``Document`` as a passage and as provenance.
    show_progress
        Progress bar over the documents.

    Raises
    ------
    GraphError
        A node without an id, or two source documents with the same id.
    """
    nodes: dict[str, _NodeAcc] = {}
    edges: list[tuple[str, str, str, str, float, dict[str, Any], str | None]] = []
    passages: list[tuple[str, str, dict[str, Any]]] = []
    taken: set[str] = set()
    docs = list(graph_documents)
    for i, gd in enumerate(progress_if(docs, show_progress, "graph documents")):
        source = getattr(gd, "source", None)
        pid = None
        if include_sources and source is not None:
            pid = _doc_id(source, i, taken)
            passages.append((pid, str(getattr(source, "page_content", "")),
                             dict(getattr(source, "metadata", None) or {})))
        for node in getattr(gd, "nodes", None) or ():
            nodes.setdefault(_node_id(node, i), _NodeAcc()).merge(node, pid)
        for rel in getattr(gd, "relationships", None) or ():
            s, t = _node_id(rel.source, i), _node_id(rel.target, i)
            for end, obj in ((s, rel.source), (t, rel.target)):
                nodes.setdefault(end, _NodeAcc()).merge(obj, pid)
            props = dict(getattr(rel, "properties", None) or {})
            text = props.pop("description", None) or props.pop("text", None) or ""
            weight = float(props.pop("weight", 1.0))
            edges.append((s, t, str(getattr(rel, "type", "") or ""), str(text), weight, props,
                          pid))
    g = KnowledgeGraph()
    for pid, text, meta in passages:
        g.add_passage(pid, text, meta)
    for nid, acc in nodes.items():
        g.add_node(nid, name=acc.name or nid, text=acc.text, type=acc.type,
                   metadata=acc.metadata, provenance=list(acc.provenance))
    for s, t, rel, text, weight, meta, pid in edges:
        g.add_edge(s, t, relation=rel, text=text, weight=weight, metadata=meta,
                   provenance=() if pid is None else (pid,))
    logger.info("built %r from %d graph document(s)", g, len(docs))
    return g


def _node_id(node: Any, position: int) -> str:
    nid = getattr(node, "id", None)
    if nid is None or str(nid) == "":
        raise GraphError(f"graph document #{position} has a node without an id: {node!r}")
    return str(nid)


def knowledge_graph_from_entity_graph(entity_graph: Any) -> KnowledgeGraph:
    """Build a graph from a ``NetworkxEntityGraph`` or from its triples.

    Accepts a ``NetworkxEntityGraph`` (its ``get_triples()`` yields ``(subject, object,
    relation)``; isolated nodes of its networkx graph are kept), a sequence of
    ``KnowledgeTriple``-like objects (``subject``, ``predicate``, ``object_``), or
    ``(subject, predicate, object)`` tuples. Node id = name = text = the entity string, as
    :meth:`KnowledgeGraph.from_triples` does.
    """
    triples: list[tuple[str, str, str]] = []
    isolated: list[str] = []
    if hasattr(entity_graph, "get_triples"):
        for subj, obj, rel in entity_graph.get_triples():
            triples.append((str(subj), str(rel), str(obj)))
        nxg = getattr(entity_graph, "_graph", None)
        if nxg is not None:
            isolated = [str(n) for n in nxg.nodes if nxg.degree(n) == 0]
    else:
        for i, t in enumerate(_as_list(entity_graph)):
            if hasattr(t, "subject"):
                triples.append((str(t.subject), str(t.predicate), str(t.object_)))
            elif isinstance(t, Sequence) and not isinstance(t, str) and len(t) == 3:
                triples.append((str(t[0]), str(t[1]), str(t[2])))
            else:
                raise GraphError(
                    f"item #{i} is neither a KnowledgeTriple nor a (subject, predicate, object) "
                    f"tuple: {t!r}"
                )
    g = KnowledgeGraph.from_triples(triples)
    for name in isolated:
        if name not in g:
            g.add_node(name, name=name, text=name)
    return g


def _as_list(obj: Any) -> list[Any]:
    if isinstance(obj, (str, bytes)) or not isinstance(obj, Iterable):
        raise GraphError(
            f"expected a NetworkxEntityGraph or a sequence of triples, got {type(obj).__name__}"
        )
    return list(obj)
