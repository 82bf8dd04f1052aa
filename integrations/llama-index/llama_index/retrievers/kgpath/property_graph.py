"""LlamaIndex property graphs in and out of kgpath; kgpath as ``PropertyGraphIndex`` sub-retriever.

* :func:`knowledge_graph_from_property_graph_store` reads any ``PropertyGraphStore``
  (``SimplePropertyGraphStore``, ``LadybugPropertyGraphStore``/``KuzuPropertyGraphStore``,
  or any store implementing ``get``/``get_triplets``) into a :class:`kgpath.KnowledgeGraph`:
  entity names, relation labels, properties and source chunks (as passages and provenance).
* :func:`knowledge_graph_to_property_graph_store` writes a kgpath graph into a store (a new
  ``SimplePropertyGraphStore`` by default). The two are inverse on a ``SimplePropertyGraphStore``:
  ids, names, texts, types, metadata, provenance, weights, passages and node/edge order survive,
  so retrieval on the round-tripped graph equals retrieval on the original.
* :class:`PCRSubRetriever` and :class:`PathRAGSubRetriever` are ``BasePGRetriever``
  subclasses: add PCR or PathRAG to an existing index in one line::

      retriever = index.as_retriever(sub_retrievers=[PCRSubRetriever.from_index(index)])

  For an embedded Ladybug/Kùzu store, :class:`PCRSubRetriever` pushes the reachability query
  into the database (:class:`kgpath.stores.CypherPCR`) instead of loading the graph.

Property conventions (written by the exporter, read by the importer)
--------------------------------------------------------------------
Entity: ``name`` = the kgpath name when names are unique (else the kgpath id), ``label`` = the
node type (``"entity"`` for none), properties ``kgpath_id``, ``kgpath_name`` (when the entity name
is not the node name), ``description`` (node text), ``kgpath_provenance`` (passage ids) and
LlamaIndex's ``triplet_source_id`` (first passage id, so LlamaIndex's ``include_text`` finds the
source chunk), plus the node metadata. Relation: ``label`` = relation, properties
``description`` (edge text), ``weight``, ``kgpath_type``, ``kgpath_provenance``,
``triplet_source_id``, plus the edge metadata. Passages become ``ChunkNode``s (id = passage id).
Stores not written by kgpath are read with the same rules: ``description`` or ``text`` is the
node text, an entity's provenance is its ``triplet_source_id``, the chunks linked to it
(``MENTIONS``) and the sources of its relations, a label ``"entity"`` means no type, and
properties whose value is ``None`` are dropped.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from llama_index.core.graph_stores.types import (
    TRIPLET_SOURCE_KEY,
    ChunkNode,
    EntityNode,
    LabelledNode,
    LabelledPropertyGraph,
    PropertyGraphStore,
    Relation,
)
from llama_index.core.indices.property_graph.sub_retrievers.base import (
    DEFAULT_PREAMBLE,
    BasePGRetriever,
)
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo
from llama_index.retrievers.kgpath._convert import (
    LLM_METADATA_KEYS,
    pcr_result_to_nodes,
    query_call_args,
)
from llama_index.retrievers.kgpath.base import to_kgpath_embedder

from kgpath.embeddings import Embedder
from kgpath.errors import ConfigError, GraphError
from kgpath.graph import Edge, KnowledgeGraph
from kgpath.index.graph_index import GraphIndex
from kgpath.methods.pcr import PathConstrainedRetriever as KgPathConstrainedRetriever
from kgpath.methods.pcr import PCRConfig, PCRResult

__all__ = [
    "knowledge_graph_from_property_graph_store",
    "knowledge_graph_to_property_graph_store",
    "find_mentioned_entity",
    "PCRSubRetriever",
    "PathRAGSubRetriever",
]

logger = logging.getLogger(__name__)

_RESERVED = frozenset(
    {"kgpath_id", "kgpath_name", "kgpath_provenance", "kgpath_type", "description",
     TRIPLET_SOURCE_KEY}
)
#: Bookkeeping columns of database-backed stores that are not user metadata.
_STORE_COLUMNS = frozenset({"id", "name", "label", "text", "embedding", "_label", "_LABEL",
                            "_id", "_ID"})
_NO_TYPE = ("entity", "Entity")


def _progress(it: Iterable[Any], show: bool, desc: str) -> Iterable[Any]:
    if not show:
        return it
    from tqdm.auto import tqdm

    return tqdm(it, desc=desc, leave=False)


# ====================================================================== store -> kgpath
def _props(p: Mapping[str, Any], drop: Iterable[str] = ()) -> dict[str, Any]:
    skip = _RESERVED | set(drop)
    return {k: v for k, v in p.items() if k not in skip and v is not None}


def _prov_from(p: Mapping[str, Any]) -> list[str]:
    prov = p.get("kgpath_provenance")
    if isinstance(prov, (list, tuple)):
        return [str(x) for x in prov]
    src = p.get(TRIPLET_SOURCE_KEY)
    return [str(src)] if src else []


class _Reader:
    """Accumulates entities, relations and chunks, then builds the graph in order."""

    def __init__(self) -> None:
        self.entities: list[tuple[str, str, str, str | None, dict[str, Any], list[str]]] = []
        self.exact_prov: set[str] = set()  # written by kgpath: provenance is complete
        self.embeddings: dict[str, Sequence[float]] = {}
        self.alias: dict[str, str] = {}  # LlamaIndex entity id -> kgpath id
        self.chunks: dict[str, tuple[str, dict[str, Any]]] = {}
        self.edges: list[tuple[str, str, str, str, str | None, float, list[str],
                               dict[str, Any]]] = []
        self.mentions: list[tuple[str, str]] = []  # (chunk id, entity alias)

    def entity(self, node: EntityNode | LabelledNode, *, extra_drop: Iterable[str] = ()) -> None:
        p = dict(node.properties)
        alias = str(node.id)
        kid = str(p.get("kgpath_id") or alias)
        name = str(p.get("kgpath_name") or getattr(node, "name", None) or kid)
        text = p.get("description") or p.get("text") or ""
        label = node.label
        typ = None if label in _NO_TYPE or not label else str(label)
        self.alias[alias] = kid
        self.alias.setdefault(kid, kid)
        if isinstance(p.get("kgpath_provenance"), (list, tuple)):
            self.exact_prov.add(kid)
        self.entities.append((kid, name, str(text), typ, _props(p, extra_drop), _prov_from(p)))
        if node.embedding is not None:
            self.embeddings[kid] = node.embedding

    def relation(self, rel: Relation) -> None:
        s, t = str(rel.source_id), str(rel.target_id)
        if s in self.chunks and t not in self.chunks:
            self.mentions.append((s, t))
            return
        if t in self.chunks:
            self.mentions.append((t, s))
            return
        p = dict(rel.properties)
        w = p.get("weight", 1.0)
        self.edges.append((
            s, t, str(rel.label), str(p.get("description") or ""), p.get("kgpath_type"),
            1.0 if w is None else float(w), _prov_from(p), _props(p, ("weight",)),
        ))

    def build(self, *, include_chunks: bool, embeddings: bool) -> KnowledgeGraph:
        g = KnowledgeGraph()
        if include_chunks:
            for cid, (text, meta) in self.chunks.items():
                g.add_passage(cid, text, meta)
        extra: dict[str, list[str]] = {}
        for cid, alias in self.mentions:
            extra.setdefault(self.alias.get(alias, alias), []).append(cid)
        # LlamaIndex keeps one source chunk per entity (the last one seen); the chunks of its
        # relations are sources too, as in KnowledgeGraph.from_triples
        for s, t, *_rest, prov, _meta in self.edges:
            for end in (s, t):
                kid = self.alias.get(end)
                if kid is not None and kid not in self.exact_prov:
                    extra.setdefault(kid, []).extend(prov)
        for kid, name, text, typ, meta, prov in self.entities:
            merged = list(dict.fromkeys(prov + extra.get(kid, []))) if include_chunks else []
            g.add_node(kid, name=name, text=text, type=typ, metadata=meta, provenance=merged)
        dangling = 0
        for s, t, rel, text, typ, w, prov, meta in self.edges:
            src, dst = self.alias.get(s), self.alias.get(t)
            if src is None or dst is None:
                dangling += 1
                continue
            g.add_edge(src, dst, relation=rel, text=text, type=typ, weight=w,
                       provenance=prov if include_chunks else (), metadata=meta)
        if dangling:
            logger.warning("skipped %d relation(s) whose end is not an entity of the store",
                           dangling)
        if embeddings and self.embeddings:
            if len(self.embeddings) != len(g):
                raise GraphError(
                    f"only {len(self.embeddings)} of {len(g)} entities carry an embedding; "
                    "pass embeddings=False to let kgpath embed the nodes"
                )
            g.set_embeddings(self.embeddings)
        return g


def knowledge_graph_from_property_graph_store(
    store: PropertyGraphStore,
    *,
    include_chunks: bool = True,
    embeddings: bool = False,
    batch_size: int = 256,
    show_progress: bool = False,
) -> KnowledgeGraph:
    """Build a :class:`kgpath.KnowledgeGraph` from a LlamaIndex ``PropertyGraphStore``.

    Parameters
    ----------
    store
        ``SimplePropertyGraphStore`` (read directly, in insertion order), a Ladybug/Kùzu
        store (read with Cypher through its connection, entities by id and relations in the
        tie order of :mod:`kgpath.stores.cypher`), or any other store (``get()`` for nodes,
        ``get_triplets(ids=...)`` in batches for relations; a store that caps triplets per
        call loses the rest).
    include_chunks
        Keep ``ChunkNode``s as passages and chunk references as provenance (``False``: no
        passages and no provenance).
    embeddings
        Use the entities' stored embeddings (they must come from the embedder you will query
        with); by default kgpath embeds the nodes itself.
    show_progress
        Progress bars while reading.

    Notes
    -----
    Property conventions are listed in the module docstring. The entity ``id`` LlamaIndex uses
    (its name, with ``"`` replaced by a space) becomes the kgpath id unless a ``kgpath_id``
    property says otherwise.
    """
    reader = _Reader()
    graph_obj = getattr(store, "graph", None)
    conn = getattr(store, "connection", None)
    if isinstance(graph_obj, LabelledPropertyGraph):
        nodes = list(graph_obj.nodes.values())
        _read_nodes(reader, nodes, show_progress)
        for rel in _progress(list(graph_obj.relations.values()), show_progress, "relations"):
            reader.relation(rel)
    elif conn is not None and type(conn).__module__.split(".")[0] in ("ladybug", "kuzu"):
        _read_embedded(reader, conn, show_progress)
    else:
        nodes = list(store.get())
        _read_nodes(reader, nodes, show_progress)
        ids = [n.id for n in nodes if not isinstance(n, ChunkNode)]
        seen: set[tuple[str, str, str]] = set()
        for start in _progress(range(0, len(ids), batch_size), show_progress, "triplets"):
            for _s, rel, _t in store.get_triplets(ids=ids[start : start + batch_size]):
                key = (rel.source_id, rel.label, rel.target_id)
                if key not in seen:
                    seen.add(key)
                    reader.relation(rel)
    return reader.build(include_chunks=include_chunks, embeddings=embeddings)


def _read_nodes(reader: _Reader, nodes: Sequence[LabelledNode], show: bool) -> None:
    for n in nodes:
        if isinstance(n, ChunkNode):
            meta = {k: v for k, v in n.properties.items()
                    if not str(k).startswith("_") and v is not None}
            reader.chunks[str(n.id)] = (n.text, meta)
    for n in _progress(nodes, show, "entities"):
        if not isinstance(n, ChunkNode):
            reader.entity(n)


def _read_embedded(reader: _Reader, connection: Any, show: bool) -> None:
    """Ladybug/Kùzu property-graph tables, read with three Cypher queries."""
    from kgpath.stores import EmbeddedCypherDriver

    drv = EmbeddedCypherDriver(connection)
    for r in drv.run("MATCH (c:Chunk) RETURN c.id AS id, c.text AS text, "
                     "c.ref_doc_id AS ref_doc_id ORDER BY c.id"):
        reader.chunks[str(r["id"])] = (r["text"] or "", _props({"ref_doc_id": r["ref_doc_id"]}))
    rows = drv.run("MATCH (e) WHERE label(e) <> 'Chunk' RETURN e.id AS id, e.name AS name, "
                   f"e.label AS label, e.{TRIPLET_SOURCE_KEY} AS src ORDER BY e.id")
    for r in _progress(rows, show, "entities"):
        props: dict[str, Any] = {"kgpath_id": r["id"]}
        if r["src"]:
            props[TRIPLET_SOURCE_KEY] = r["src"]
        reader.entity(EntityNode(name=r["name"] or r["id"], label=r["label"] or "entity",
                                 properties=props))
        reader.alias[str(r["id"])] = str(r["id"])
    rels = drv.run(
        "MATCH (a)-[r]->(b) RETURN a.id AS s, b.id AS t, label(r) AS rt, r.label AS label, "
        f"r.{TRIPLET_SOURCE_KEY} AS src, label(a) AS at, label(b) AS bt"
    )
    # the fallback tie order of kgpath.stores.cypher: (type, relation, text, source, target)
    rels.sort(key=lambda r: (r["rt"], r["label"] or "", "", r["s"], r["t"]))
    for r in _progress(rels, show, "relations"):
        if r["at"] == "Chunk" or r["bt"] == "Chunk":
            chunk, ent = (r["s"], r["t"]) if r["at"] == "Chunk" else (r["t"], r["s"])
            reader.mentions.append((str(chunk), str(ent)))
            continue
        props = {TRIPLET_SOURCE_KEY: r["src"]} if r["src"] else {}
        reader.relation(Relation(label=r["label"] or r["rt"], source_id=str(r["s"]),
                                 target_id=str(r["t"]), properties=props))


# ====================================================================== kgpath -> store
def _entity_names(graph: KnowledgeGraph) -> dict[str, str]:
    """Map kgpath id -> LlamaIndex entity name: the node name when unique, else the id."""
    counts: dict[str, int] = {}
    for n in graph.nodes:
        key = n.name.replace('"', " ")
        counts[key] = counts.get(key, 0) + 1
    names: dict[str, str] = {}
    used: dict[str, str] = {}
    for n in graph.nodes:
        cand = n.name if counts[n.name.replace('"', " ")] == 1 else n.id
        if cand.replace('"', " ") in used:
            cand = f"{n.name} [{n.id}]"
        key = cand.replace('"', " ")
        if key in used:
            raise GraphError(
                f"cannot give node {n.id!r} a unique LlamaIndex entity name ({cand!r} is taken "
                f"by {used[key]!r})"
            )
        used[key] = n.id
        names[n.id] = cand
    return names


def knowledge_graph_to_property_graph_store(
    graph: KnowledgeGraph,
    store: PropertyGraphStore | None = None,
    *,
    embeddings: bool = False,
    show_progress: bool = False,
) -> PropertyGraphStore:
    """Write a kgpath graph into a ``PropertyGraphStore`` (a new ``SimplePropertyGraphStore``).

    ``embeddings=True`` stores the graph's node embeddings on the entities (they must exist).
    Property conventions are listed in the module docstring.
    """
    if store is None:
        from llama_index.core.graph_stores import SimplePropertyGraphStore

        store = SimplePropertyGraphStore()
    emb = graph.embeddings if embeddings else None
    names = _entity_names(graph)
    chunks = [ChunkNode(text=p.text, id_=p.id, properties=dict(p.metadata))
              for p in graph.passages.values()]
    entities = []
    for i, n in enumerate(_progress(graph.nodes, show_progress, "entities")):
        props: dict[str, Any] = dict(n.metadata)
        props["kgpath_id"] = n.id
        if names[n.id] != n.name:
            props["kgpath_name"] = n.name
        if n.text:
            props["description"] = n.text
        if n.provenance:
            props["kgpath_provenance"] = list(n.provenance)
            props[TRIPLET_SOURCE_KEY] = n.provenance[0]
        entities.append(EntityNode(
            name=names[n.id], label=n.type or "entity", properties=props,
            embedding=None if emb is None else emb[i].tolist(),
        ))
    relations = []
    for e in _progress(graph.edges, show_progress, "relations"):
        props = dict(e.metadata)
        props["weight"] = e.weight
        if e.text:
            props["description"] = e.text
        if e.type is not None:
            props["kgpath_type"] = e.type
        if e.provenance:
            props["kgpath_provenance"] = list(e.provenance)
            props[TRIPLET_SOURCE_KEY] = e.provenance[0]
        relations.append(Relation(
            label=e.relation, source_id=names[e.source].replace('"', " "),
            target_id=names[e.target].replace('"', " "), properties=props,
        ))
    if chunks:
        store.upsert_nodes(chunks)
    store.upsert_nodes(entities)
    store.upsert_relations(relations)
    logger.info("wrote %d entities, %d relations, %d chunks", len(entities), len(relations),
                len(chunks))
    return store


# ====================================================================== anchors
_WORD = re.compile(r"\w+", re.UNICODE)


def find_mentioned_entity(
    query: str, names: Mapping[str, Sequence[str]], *, max_words: int = 8
) -> str | None:
    """The longest entity name mentioned in ``query`` (whole words, case-insensitive).

    ``names`` maps a normalised name (lower case, single spaces) to candidate node ids. An
    LLM-free anchor heuristic (weaker than asking an LLM which entity the question is about):
    returns the first id of the longest matching name, or ``None``.
    """
    words = [w.lower() for w in _WORD.findall(query)]
    for size in range(min(max_words, len(words)), 0, -1):
        for start in range(len(words) - size + 1):
            ids = names.get(" ".join(words[start : start + size]))
            if ids:
                return ids[0]
    return None


def _name_table(graph: KnowledgeGraph) -> dict[str, list[str]]:
    table: dict[str, list[str]] = {}
    for n in graph.nodes:
        key = " ".join(_WORD.findall(n.name.lower()))
        if key:
            table.setdefault(key, []).append(n.id)
    return table


# ====================================================================== sub-retrievers
def _with_sources(nodes: list[NodeWithScore], include_text: bool) -> list[NodeWithScore]:
    """Point each node at its first source passage so ``include_text`` can attach it."""
    if not include_text:
        return nodes
    for nws in nodes:
        prov = nws.node.metadata.get("provenance") or []
        if prov:
            nws.node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(
                node_id=str(prov[0])
            )
    return nodes


class _KgpathPGRetriever(BasePGRetriever):
    """Shared plumbing: lazy graph loading from the store, embedder, anchors."""

    def __init__(
        self,
        graph_store: PropertyGraphStore,
        *,
        embedder: Any = None,
        graph: KnowledgeGraph | None = None,
        graph_index: GraphIndex | None = None,
        include_text: bool = False,
        include_text_preamble: str | None = DEFAULT_PREAMBLE,
        show_progress: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(graph_store=graph_store, include_text=include_text,
                         include_text_preamble=include_text_preamble, **kwargs)
        if graph_index is not None:
            if graph is not None and graph is not graph_index.graph:
                raise ConfigError("pass graph or graph_index, not both")
            if embedder is not None:
                raise ConfigError("graph_index has its own embedder; pass embedder=None")
            graph = graph_index.graph
        self._embedder: Embedder | None = to_kgpath_embedder(embedder)
        self._graph = graph
        self._index: GraphIndex | None = graph_index
        self._show_progress = show_progress

    @property
    def graph(self) -> KnowledgeGraph:
        """The kgpath graph (read from the store on first use; see :meth:`refresh`)."""
        if self._graph is None:
            self._graph = knowledge_graph_from_property_graph_store(
                self._graph_store, show_progress=self._show_progress
            )
            logger.info("loaded %r from %s", self._graph, type(self._graph_store).__name__)
        return self._graph

    @property
    def index(self) -> GraphIndex:
        """The kgpath :class:`~kgpath.GraphIndex` over :attr:`graph`."""
        if self._index is None or self._index.graph is not self.graph:
            self._index = GraphIndex(self.graph, self._embedder)
        return self._index

    def refresh(self) -> None:
        """Forget the loaded graph (call after inserting into the index)."""
        self._graph = None
        self._index = None

    # LlamaIndex's own add_source_text replaces each hit by its source chunk, dropping the
    # kgpath trace; here the hit keeps its node and metadata and gains the chunk's text
    # (once per chunk, on the best-ranked hit citing it).
    def add_source_text(self, nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        """Append each source chunk's text to the best-ranked hit that cites it."""
        ids = [n.node.ref_doc_id for n in nodes if n.node.ref_doc_id is not None]
        return self._attach(nodes, self._graph_store.get_llama_nodes(ids) if ids else [])

    async def async_add_source_text(self, nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        """Async :meth:`add_source_text`."""
        ids = [n.node.ref_doc_id for n in nodes if n.node.ref_doc_id is not None]
        chunks = await self._graph_store.aget_llama_nodes(ids) if ids else []
        return self._attach(nodes, chunks)

    def _attach(self, nodes: list[NodeWithScore], chunks: Sequence[Any]) -> list[NodeWithScore]:
        by_id = {c.node_id: c for c in chunks}
        used: set[str] = set()
        preamble = self._include_text_preamble or ""
        for nws in nodes:
            src = nws.node.ref_doc_id
            chunk = by_id.get(src) if src is not None else None
            if src is None or chunk is None or src in used:
                continue
            used.add(src)
            node = nws.node
            text = node.get_content()
            nws.node = node.model_copy(
                update={"text": f"{preamble}{text}\n\n{chunk.get_content()}"}
            )
        return nodes


class PCRSubRetriever(_KgpathPGRetriever):
    """Path-Constrained Retrieval as a ``PropertyGraphIndex`` sub-retriever.

    Returns the top-``k`` entities reachable from an anchor (Eq. 1-2 of the PCR paper) as
    ``NodeWithScore``s carrying the PCR trace (hops, path, anchor, ...; see
    :func:`~llama_index.retrievers.kgpath._convert.pcr_hit_trace`).

    Anchor, per query: a :class:`KgpathQueryBundle`'s anchor; else ``anchor`` / ``anchor_name``;
    else, with ``anchor_from_query`` (default), the longest entity name the query mentions
    (:func:`find_mentioned_entity`, an LLM-free heuristic); else PCR's own rule, the entity
    most similar to the query.

    Parameters
    ----------
    graph_store
        The index's ``property_graph_store``.
    embedder
        kgpath ``Embedder`` or LlamaIndex ``BaseEmbedding`` (``from_index`` passes the
        index's embed model); ``None`` uses kgpath's offline default.
    graph
        An already converted graph (otherwise read from the store on first use).
    graph_index
        A kgpath :class:`~kgpath.GraphIndex` to share (its node embeddings are reused, e.g.
        ``PathRAGSubRetriever.from_index(index, graph_index=pcr_sub.index)``).
    push_down
        Run PCR inside the database (:class:`kgpath.stores.CypherPCR`). ``None`` (default):
        yes for Ladybug/Kùzu stores (their ``connection``), no otherwise.
    schema
        :class:`kgpath.stores.CypherSchema` for push-down (default: the store's unstructured
        tables, :meth:`~kgpath.stores.CypherSchema.llama_index_ladybug`).
    include_text
        Append each hit's source chunk (LlamaIndex's ``include_text``; needs provenance).
    **config_fields
        :class:`kgpath.PCRConfig` fields (``k``, ``max_depth``, ``direction``, ...).
    """

    def __init__(
        self,
        graph_store: PropertyGraphStore,
        *,
        embedder: Any = None,
        graph: KnowledgeGraph | None = None,
        graph_index: GraphIndex | None = None,
        push_down: bool | None = None,
        schema: Any = None,
        anchor: str | None = None,
        anchor_name: str | None = None,
        anchor_from_query: bool = True,
        include_text: bool = False,
        include_text_preamble: str | None = DEFAULT_PREAMBLE,
        llm_metadata_keys: Sequence[str] = LLM_METADATA_KEYS,
        show_progress: bool = False,
        callback_manager: Any = None,
        **config_fields: Any,
    ) -> None:
        self._config = PCRConfig(**config_fields)
        super().__init__(graph_store, embedder=embedder, graph=graph, graph_index=graph_index,
                         include_text=include_text,
                         include_text_preamble=include_text_preamble,
                         show_progress=show_progress, callback_manager=callback_manager)
        conn = getattr(graph_store, "connection", None)
        embedded = conn is not None and type(conn).__module__.split(".")[0] in ("ladybug", "kuzu")
        if push_down and not embedded and schema is None:
            raise ConfigError(
                f"push_down=True needs a Ladybug/Kùzu store or an explicit schema; "
                f"{type(graph_store).__name__} has no supported Cypher connection"
            )
        self._push_down = embedded if push_down is None else bool(push_down)
        self._schema = schema
        self._anchor = anchor
        self._anchor_name = anchor_name
        self._anchor_from_query = anchor_from_query
        self._llm_metadata_keys = tuple(llm_metadata_keys)
        self._pcr: Any = None
        self._names: dict[str, list[str]] | None = None

    @classmethod
    def from_index(cls, index: Any, **kwargs: Any) -> PCRSubRetriever:
        """Build from a ``PropertyGraphIndex`` (its store and embed model)."""
        if "graph_index" not in kwargs:
            kwargs.setdefault("embedder", getattr(index, "_embed_model", None))
        return cls(index.property_graph_store, **kwargs)

    @property
    def push_down(self) -> bool:
        """Whether PCR runs inside the database."""
        return self._push_down

    def refresh(self) -> None:
        """Forget the loaded graph and name table (call after inserting into the index)."""
        super().refresh()
        self._pcr = None
        self._names = None

    def _core(self) -> Any:
        if self._pcr is None:
            if self._push_down:
                from kgpath.stores import CypherPCR, CypherSchema

                self._pcr = CypherPCR(
                    self._graph_store, embedder=self._embedder or self._default_embedder(),
                    schema=self._schema or CypherSchema.llama_index_ladybug(),
                    config=self._config,
                )
            else:
                self._pcr = KgPathConstrainedRetriever(self.index, config=self._config)
        return self._pcr

    @staticmethod
    def _default_embedder() -> Embedder:
        from kgpath.embeddings import default_embedder

        return default_embedder()

    def _anchor_from(self, query: str) -> str | None:
        if self._push_down:
            return self._db_mentioned(query)
        if self._names is None:
            self._names = _name_table(self.graph)
        return find_mentioned_entity(query, self._names)

    def _db_mentioned(self, query: str, max_words: int = 8) -> str | None:
        """Longest entity name in the query, looked up in the database (one query)."""
        pcr = self._core()
        s = pcr.schema
        if s.name_property is None:
            return None
        words = [w.lower() for w in _WORD.findall(query)]
        grams = [" ".join(words[i : i + n]) for n in range(min(max_words, len(words)), 0, -1)
                 for i in range(len(words) - n + 1)]  # longest first, then leftmost
        if not grams:
            return None
        lower = pcr.driver.dialect.lower_function
        rows = pcr.driver.run(
            f"UNWIND $keys AS k MATCH (n:{s.n}) WHERE {lower}({s.prop('n', s.name_property)}) = k "
            f"RETURN {s.prop('n', s.id_property)} AS id, k AS key",
            {"keys": list(dict.fromkeys(grams))},
        )
        found: dict[str, str] = {}
        for r in sorted(rows, key=lambda r: str(r["id"])):
            found.setdefault(r["key"], str(r["id"]))
        return next((found[g] for g in grams if g in found), None)

    def _args(self, query_bundle: QueryBundle) -> tuple[str, dict[str, Any]]:
        q, kwargs = query_call_args(query_bundle, anchor=self._anchor,
                                    anchor_name=self._anchor_name)
        if kwargs["anchor"] is None and kwargs["anchor_name"] is None and self._anchor_from_query:
            kwargs["anchor"] = self._anchor_from(q)
        return q, kwargs

    def _nodes(self, result: PCRResult) -> list[NodeWithScore]:
        graph = _result_graph(result) if self._push_down else self.graph
        nodes = pcr_result_to_nodes(result, graph, llm_metadata_keys=self._llm_metadata_keys)
        return _with_sources(nodes, self.include_text)

    def retrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Run PCR for the bundle's query (and per-call options)."""
        q, kwargs = self._args(query_bundle)
        return self._nodes(self._core().retrieve(q, **kwargs))

    async def aretrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Async :meth:`retrieve_from_graph` (native async query embedding)."""
        q, kwargs = self._args(query_bundle)
        return self._nodes(await self._core().aretrieve(q, **kwargs))


def _result_graph(result: PCRResult) -> KnowledgeGraph:
    """A small graph holding the nodes and edges a push-down result mentions (for path text)."""
    g = KnowledgeGraph()
    g.add_node(result.anchor.id, name=result.anchor.name)
    edges: list[Edge] = []
    for h in result.hits:
        g.add_node(h.id, name=h.node.name)
        edges.extend(h.edges)
    for e in edges:
        for end in (e.source, e.target):
            if end not in g:
                g.add_node(end, name=end)
        g.add_edge(e.source, e.target, relation=e.relation)
    return g


class PathRAGSubRetriever(_KgpathPGRetriever):
    """PathRAG as a ``PropertyGraphIndex`` sub-retriever (graph loaded from the store).

    Each of the top-K relational paths becomes a ``NodeWithScore`` whose score is the Eq. 4
    reliability (see :func:`llama_index.retrievers.kgpath.pathrag.path_to_node_with_score`).

    Parameters
    ----------
    graph_store, embedder, graph, graph_index, include_text
        As for :class:`PCRSubRetriever`.
    llm
        Keyword-extraction LLM (kgpath ``LLM`` or LlamaIndex ``LLM``); ``None`` uses kgpath's
        offline keyword extractor (weaker, documented in :mod:`kgpath.methods.pathrag`).
    **config_fields
        :class:`kgpath.methods.pathrag.PathRAGConfig` fields (``num_nodes``, ``top_k``, ...).
    """

    def __init__(
        self,
        graph_store: PropertyGraphStore,
        *,
        embedder: Any = None,
        llm: Any = None,
        graph: KnowledgeGraph | None = None,
        graph_index: GraphIndex | None = None,
        include_text: bool = False,
        include_text_preamble: str | None = DEFAULT_PREAMBLE,
        show_progress: bool = False,
        callback_manager: Any = None,
        **config_fields: Any,
    ) -> None:
        from kgpath.methods.pathrag import PathRAGConfig

        self._config = PathRAGConfig(**config_fields)
        super().__init__(graph_store, embedder=embedder, graph=graph, graph_index=graph_index,
                         include_text=include_text,
                         include_text_preamble=include_text_preamble,
                         show_progress=show_progress, callback_manager=callback_manager)
        from llama_index.retrievers.kgpath.pathrag import _to_llm

        self._llm = _to_llm(llm)
        self._core_retriever: Any = None

    @classmethod
    def from_index(cls, index: Any, **kwargs: Any) -> PathRAGSubRetriever:
        """Build from a ``PropertyGraphIndex`` (its store and embed model)."""
        if "graph_index" not in kwargs:
            kwargs.setdefault("embedder", getattr(index, "_embed_model", None))
        return cls(index.property_graph_store, **kwargs)

    def refresh(self) -> None:
        """Forget the loaded graph (call after inserting into the index)."""
        super().refresh()
        self._core_retriever = None

    def _core(self) -> Any:
        if self._core_retriever is None:
            from kgpath.methods.pathrag import PathRAGRetriever

            self._core_retriever = PathRAGRetriever(self.index, llm=self._llm,
                                                    config=self._config)
        return self._core_retriever

    def _nodes(self, result: Any) -> list[NodeWithScore]:
        from llama_index.retrievers.kgpath.pathrag import path_to_node_with_score

        nodes = [path_to_node_with_score(p, result) for p in result.paths]
        return _with_sources(nodes, self.include_text)

    def retrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Run PathRAG for the bundle's query."""
        return self._nodes(self._core().retrieve(query_bundle.query_str))

    async def aretrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Async :meth:`retrieve_from_graph`."""
        return self._nodes(await self._core().aretrieve(query_bundle.query_str))

