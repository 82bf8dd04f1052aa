"""kgpath methods as ``PropertyGraphIndex`` sub-retrievers, over the store's graph.

:class:`PCRSubRetriever` and :class:`PathRAGSubRetriever` add a kgpath method to an index::

    index.as_retriever(sub_retrievers=[PCRSubRetriever.from_index(index)])

The graph is read from the store on first use (:mod:`~.pg_store`, whose two converters are
re-exported here) and searched through :class:`kgpath.facade.EvidenceRetriever`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from llama_index.core.graph_stores.types import PropertyGraphStore
from llama_index.core.indices.property_graph.sub_retrievers.base import (
    DEFAULT_PREAMBLE,
    BasePGRetriever,
)
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo
from llama_index.retrievers.kgpath._base import (
    build_evidence_retriever,
    evidence_to_node,
    query_call_args,
    to_kgpath_embedder,
    to_kgpath_llm,
)
from llama_index.retrievers.kgpath.pg_store import (
    knowledge_graph_from_property_graph_store,
    knowledge_graph_to_property_graph_store,
)

from kgpath.errors import ConfigError
from kgpath.evidence import check_output, rank_items
from kgpath.facade import EvidenceRetriever, check_names, method_spec
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
        check_names(options, spec.config_fields | spec.init_args | spec.call_args, self.method)
        if isinstance(graph, GraphIndex) and embed_model is not None:
            raise ConfigError("a GraphIndex has its own embedder; pass embed_model=None")
        self._defaults = {n: options.pop(n) for n in list(options)
                          if n in spec.call_args and n not in spec.init_args}
        self._config = spec.config_cls(**{n: v for n, v in options.items()
                                          if n in spec.config_fields})  # validates now
        self._options, self._k, self._output = options, similarity_top_k, output
        self._models = (None if isinstance(graph, GraphIndex) else to_kgpath_embedder(embed_model),
                        to_kgpath_llm(llm))  # checked now; a GraphIndex has its own
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
        return build_evidence_retriever(self.method, source, embed_model=emb, llm=llm,
                                        k=self._k, output=self._output, options=self._options)

    def refresh(self) -> None:
        """Forget the loaded graph (call after inserting into the index)."""
        self._graph = None
        self._er = None

    def _call(self, query_bundle: QueryBundle) -> tuple[str, dict[str, Any]]:
        return query_call_args(query_bundle, self._defaults, method_spec(self.method).call_groups)

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
    (:class:`kgpath.methods.pcr.CypherPCR`; default: yes for such stores) with ``schema``
    (default :meth:`~kgpath.backends.cypher.CypherSchema.llama_index_ladybug`); its items are nodes.
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
        from kgpath.backends.cypher import CypherSchema
        from kgpath.embeddings import default_embedder
        from kgpath.methods.pcr import CypherPCR

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
