"""LlamaIndex property graphs in and out of kgpath; kgpath methods as sub-retrievers.

* :func:`knowledge_graph_from_property_graph_store` reads any ``PropertyGraphStore``
  (``SimplePropertyGraphStore``, Ladybug/Kùzu stores, or any store with ``get`` and
  ``get_triplets``) into a :class:`kgpath.KnowledgeGraph`: entity names, relation labels,
  properties and source chunks (as passages and provenance).
* :func:`knowledge_graph_to_property_graph_store` writes a kgpath graph into a store. The two
  are inverse on a ``SimplePropertyGraphStore`` (ids, names, texts, types, metadata,
  provenance, weights, passages and order survive).
* :class:`PCRSubRetriever` and :class:`PathRAGSubRetriever` add a kgpath method to an index::

      index.as_retriever(sub_retrievers=[PCRSubRetriever.from_index(index)])

Property conventions: an entity's ``name`` is the kgpath name when unique (else the id),
``label`` the node type (``"entity"`` for none); properties ``kgpath_id``, ``kgpath_name``,
``description`` (node text), ``kgpath_provenance`` and LlamaIndex's ``triplet_source_id``
(first passage), plus the node metadata. Relations: ``label`` = relation, properties
``description``, ``weight``, ``kgpath_type``, ``kgpath_provenance``, ``triplet_source_id``.
Passages are ``ChunkNode``s. Foreign stores are read with the same rules (``text`` also
counts as node text; an entity's provenance is its source, its ``MENTIONS`` chunks and its
relations' sources).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

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
from llama_index.retrievers.kgpath._base import (
    evidence_to_node,
    make_evidence_retriever,
    query_call_args,
    to_kgpath_embedder,
    to_kgpath_llm,
)

from kgpath.errors import ConfigError, GraphError
from kgpath.evidence import check_output, rank_items
from kgpath.facade import EvidenceRetriever, method_spec
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex
from kgpath.methods.pcr import PCRResult

__all__ = [
    "PCRSubRetriever",
    "PathRAGSubRetriever",
    "find_mentioned_entity",
    "knowledge_graph_from_property_graph_store",
    "knowledge_graph_to_property_graph_store",
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
class _KgpathPGRetriever(BasePGRetriever):
    """A kgpath method as a ``PropertyGraphIndex`` sub-retriever (graph read lazily).

    Options as for :class:`~.retrievers.KgpathRetriever` (``embed_model``, ``llm``,
    ``similarity_top_k``, ``output``, the method's options); ``graph`` is an already
    converted graph or a kgpath ``GraphIndex`` to share (e.g. ``pcr_sub.index``).
    ``include_text`` appends each item's first source chunk (native output).
    """

    method: ClassVar[str] = ""

    def __init__(self, graph_store: PropertyGraphStore, *, embed_model: Any = None,
                 llm: Any = None, graph: KnowledgeGraph | GraphIndex | None = None,
                 similarity_top_k: int | None = None, output: str = "passages",
                 include_text: bool = False,
                 include_text_preamble: str | None = DEFAULT_PREAMBLE,
                 show_progress: bool = False, **options: Any) -> None:
        kw = {k: options.pop(k) for k in ("callback_manager", "verbose") if k in options}
        super().__init__(graph_store=graph_store, include_text=include_text,
                         include_text_preamble=include_text_preamble, **kw)
        spec = method_spec(self.method)
        bad = sorted(set(options) - spec.config_fields - spec.init_args - spec.call_args)
        if bad:
            accepted = sorted(spec.config_fields | spec.init_args | spec.call_args)
            raise ConfigError(f"unknown {self.method} argument(s) {bad}; accepted: {accepted}")
        if isinstance(graph, GraphIndex) and embed_model is not None:
            raise ConfigError("a GraphIndex has its own embedder; pass embed_model=None")
        self._defaults = {n: options.pop(n) for n in list(options)
                          if n in spec.call_args and n not in spec.init_args}
        self._config = spec.config_cls(**{n: v for n, v in options.items()
                                          if n in spec.config_fields})  # validates now
        self._options, self._k, self._output = options, similarity_top_k, output
        self._models = (to_kgpath_embedder(embed_model), to_kgpath_llm(llm))
        self._graph, self._show_progress = graph, show_progress
        self._er: EvidenceRetriever | None = None
        rank_items([], similarity_top_k)  # validates k now (ConfigError)
        check_output(output)

    @classmethod
    def from_index(cls, index: Any, **kwargs: Any) -> _KgpathPGRetriever:
        """Build from a ``PropertyGraphIndex`` (its store and, by default, embed model)."""
        if not isinstance(kwargs.get("graph"), GraphIndex):
            kwargs.setdefault("embed_model", getattr(index, "_embed_model", None))
        return cls(index.property_graph_store, **kwargs)

    @property
    def graph(self) -> KnowledgeGraph:
        """The kgpath graph (read from the store on first use; see :meth:`refresh`)."""
        if self._graph is None:
            self._graph = knowledge_graph_from_property_graph_store(
                self._graph_store, show_progress=self._show_progress)
        return self._graph if isinstance(self._graph, KnowledgeGraph) else self._graph.graph

    @property
    def index(self) -> GraphIndex:
        """The kgpath ``GraphIndex`` searched (shareable with another sub-retriever)."""
        return self.retriever.core.index  # type: ignore[no-any-return]

    @property
    def retriever(self) -> EvidenceRetriever:
        """The facade over the core retriever (built on first use)."""
        if self._er is None:
            self._er = self._build()
        return self._er

    def _build(self) -> EvidenceRetriever:
        emb, llm = self._models
        source = self._graph if isinstance(self._graph, GraphIndex) else self.graph
        return make_evidence_retriever(method_spec(self.method), source, embedder=emb, llm=llm,
                                       k=self._k, output=self._output,
                                       options=dict(self._options))

    def refresh(self) -> None:
        """Forget the loaded graph (call after inserting into the index)."""
        self._graph = None
        self._er = None

    def _call(self, query_bundle: QueryBundle) -> tuple[str, dict[str, Any]]:
        return query_call_args(query_bundle, self._defaults)

    def _nodes(self, items: Sequence[Any]) -> list[NodeWithScore]:
        nodes = [evidence_to_node(e) for e in items]
        if self.include_text:  # point each node at its first source chunk
            for n in nodes:
                prov = n.node.metadata.get("kgpath_passage_ids") or []
                if prov and n.node.metadata.get("kgpath_kind") != "passage":
                    n.node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(
                        node_id=str(prov[0]))
        return nodes

    def retrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Run the method for the bundle's query (and per-call options)."""
        q, kw = self._call(query_bundle)
        return self._nodes(self.retriever.retrieve(q, **kw))

    async def aretrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Async :meth:`retrieve_from_graph` (the core's native async path)."""
        q, kw = self._call(query_bundle)
        return self._nodes(await self.retriever.aretrieve(q, **kw))

    # LlamaIndex's add_source_text replaces each hit by its chunk, dropping the trace; here
    # the hit keeps its metadata and gains the chunk's text, once per chunk (best hit).
    def add_source_text(self, nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        """Append each source chunk's text to the best-ranked hit that cites it."""
        ids = [n.node.ref_doc_id for n in nodes if n.node.ref_doc_id is not None]
        return self._attach(nodes, self._graph_store.get_llama_nodes(ids) if ids else [])

    async def async_add_source_text(self, nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        """Async :meth:`add_source_text`."""
        ids = [n.node.ref_doc_id for n in nodes if n.node.ref_doc_id is not None]
        return self._attach(nodes, await self._graph_store.aget_llama_nodes(ids) if ids else [])

    def _attach(self, nodes: list[NodeWithScore], chunks: Sequence[Any]) -> list[NodeWithScore]:
        by_id, used = {c.node_id: c for c in chunks}, set()
        for nws in nodes:
            src = nws.node.ref_doc_id
            if src is None or src not in by_id or src in used:
                continue
            used.add(src)
            text = f"{self._include_text_preamble or ''}{nws.node.get_content()}\n\n"
            nws.node = nws.node.model_copy(update={"text": text + by_id[src].get_content()})
        return nodes


class PCRSubRetriever(_KgpathPGRetriever):
    """Path-Constrained Retrieval as a ``PropertyGraphIndex`` sub-retriever.

    Anchor, per query: a :class:`~._base.KgpathQueryBundle`'s; else ``anchor`` /
    ``anchor_name``; else, with ``anchor_from_query`` (default), the longest entity name the
    query mentions (:func:`find_mentioned_entity`, LLM-free); else the most similar entity.
    ``push_down`` runs PCR inside an embedded Ladybug/Kùzu store
    (:class:`kgpath.stores.CypherPCR`; default: yes for such stores) with ``schema``
    (default :meth:`~kgpath.stores.CypherSchema.llama_index_ladybug`); its items are nodes.
    """

    method = "pcr"

    def __init__(self, graph_store: PropertyGraphStore, *, push_down: bool | None = None,
                 schema: Any = None, anchor_from_query: bool = True, **kwargs: Any) -> None:
        super().__init__(graph_store, **kwargs)
        conn = getattr(graph_store, "connection", None)
        embedded = conn is not None and type(conn).__module__.split(".")[0] in ("ladybug", "kuzu")
        if push_down and not embedded and schema is None:
            raise ConfigError(
                f"push_down=True needs a Ladybug/Kùzu store or an explicit schema; "
                f"{type(graph_store).__name__} has no supported Cypher connection")
        self.push_down = embedded if push_down is None else bool(push_down)
        self._schema, self._anchor_from_query = schema, anchor_from_query
        self._names: dict[str, list[str]] | None = None

    def _build(self) -> EvidenceRetriever:
        if not self.push_down:
            return super()._build()
        from kgpath.embeddings import default_embedder
        from kgpath.stores import CypherPCR, CypherSchema

        core = CypherPCR(self._graph_store, embedder=self._models[0] or default_embedder(),
                         schema=self._schema or CypherSchema.llama_index_ladybug(),
                         config=self._config)
        return EvidenceRetriever("pcr", _WithPathGraph(core), k=self._k, output=self._output)

    def refresh(self) -> None:
        """Forget the loaded graph and name table."""
        super().refresh()
        self._names = None

    def _call(self, query_bundle: QueryBundle) -> tuple[str, dict[str, Any]]:
        q, kw = super()._call(query_bundle)
        if self._anchor_from_query and kw.get("anchor") is None \
                and kw.get("anchor_name") is None:
            if self.push_down:
                kw["anchor"] = self.retriever.core.find_mentioned(q)
            else:
                self._names = self._names or _name_table(self.graph)
                kw["anchor"] = find_mentioned_entity(q, self._names)
        return q, kw


class _WithPathGraph:
    """A push-down PCR whose results carry the small graph of their paths (for path text)."""

    def __init__(self, core: Any) -> None:
        self.core, self.config = core, core.config

    def find_mentioned(self, query: str) -> str | None:
        """Longest entity name in the query, looked up in the database."""
        return _db_mentioned(self.core, query)

    def retrieve(self, query: str, **kw: Any) -> PCRResult:
        return _with_graph(self.core.retrieve(query, **kw))

    async def aretrieve(self, query: str, **kw: Any) -> PCRResult:
        return _with_graph(await self.core.aretrieve(query, **kw))


def _with_graph(result: PCRResult) -> PCRResult:
    g = KnowledgeGraph()
    g.add_node(result.anchor.id, name=result.anchor.name)
    for h in result.hits:
        g.add_node(h.id, name=h.node.name)
    for e in (e for h in result.hits for e in h.edges):
        for end in (e.source, e.target):
            if end not in g:
                g.add_node(end, name=end)
        g.add_edge(e.source, e.target, relation=e.relation)
    return dataclasses.replace(result, graph=g)


def _db_mentioned(pcr: Any, query: str, max_words: int = 8) -> str | None:
    """:func:`find_mentioned_entity` with the name table in the database (one query)."""
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
        {"keys": list(dict.fromkeys(grams))})
    found: dict[str, str] = {}
    for r in sorted(rows, key=lambda r: str(r["id"])):
        found.setdefault(r["key"], str(r["id"]))
    return next((found[g] for g in grams if g in found), None)


class PathRAGSubRetriever(_KgpathPGRetriever):
    """PathRAG as a ``PropertyGraphIndex`` sub-retriever (``llm``: keyword extraction)."""

    method = "pathrag"
