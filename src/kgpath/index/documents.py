"""The document lifecycle of an index: build, add, upsert and delete by document.

:class:`DocumentLifecycle` gives :class:`~kgpath.index.GraphIndex` its document entry
points. An index built by :meth:`~DocumentLifecycle.from_documents` keeps a
:class:`~kgpath.ingest.ledger.DocumentLedger`: its documents in order (by id: the id a user
gave, else a content hash, :mod:`kgpath.ingest.documents`) and the extraction record of
every passage. Every update changes the ledger, extracts only passages without a record for
their current text (and those whose extraction failed), then assembles the graph from the
records in document order (:func:`kgpath.ingest.assemble_graph`, the same calls a build
from scratch makes) and swaps it into the index's graph object
(:func:`kgpath.graph.edit.replace_contents`, so retrievers holding the graph see it):

* :meth:`~DocumentLifecycle.add_documents` appends documents; a known id with identical
  content is a no-op, with other content a :class:`~kgpath.errors.DocumentError`;
* :meth:`~DocumentLifecycle.upsert_documents` replaces known documents in place and appends
  new ones;
* :meth:`~DocumentLifecycle.delete_documents` removes documents.

A passage's vector is embedded once (the shared passage cache,
:mod:`kgpath.index.passage_vectors`, keeps those of unchanged passages); node vectors are
recomputed from them (``"passage_mean"``) or kept for nodes whose search text is unchanged
(``"text"``). So after any sequence of updates, nodes (ids, names, texts, types, provenance
and their order), edges, passages, vectors and retrieval results equal those of
``GraphIndex.from_documents(final documents)``, where the final documents are in index
order: first addition order, an upserted document keeping its place
(``tests/test_document_lifecycle.py`` checks this over random sequences). Nothing's order
is left to chance (node order = first mention, edge order = first occurrence, provenance =
passage order, all as a build computes them, :mod:`kgpath.ingest.replay`); what can differ
from a rebuild is what a rebuild would compute differently itself: an extractor that
answers differently for the same text (an LLM: the index keeps the records it got, a
rebuild asks again), a different ``chunking`` or extractor passed to one update, and an
embedder whose vector for a text depends on the other texts of its batch (the index embeds
only new passages, a rebuild all of them at once).

An index over a graph it did not build (``GraphIndex(graph)``) has no ledger: there
:meth:`~DocumentLifecycle.add_documents` is the incremental ingestion
(:func:`kgpath.ingest.ingest_documents`; existing nodes keep their text) and deletion is
provenance-counted removal (:func:`kgpath.graph.edit.remove_passages`: nodes and edges only
the removed passages supported go, the rest keep their text), which is not a rebuild.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from kgpath.embeddings import Embedder, as_embedder, default_embedder, normalize_rows
from kgpath.errors import DocumentError, GraphError
from kgpath.graph import KnowledgeGraph, Node, Passage
from kgpath.graph.edit import remove_passages, replace_contents
from kgpath.index.graph_vectors import (
    NodeVectorMode,
    aembed_graph,
    check_node_vectors,
    embed_graph,
    passage_mean_vectors,
)
from kgpath.index.passage_vectors import passage_cache
from kgpath.index.tenants import namespace_index, namespaces
from kgpath.ingest import ChunkingConfig, Extractor, IngestReport, ingest_documents
from kgpath.ingest.assemble import (
    aextract_pending,
    aingest_documents,
    assemble_graph,
    check_extractor,
    default_extractor,
    extract_pending,
    plan_documents,
)
from kgpath.ingest.documents import coerce_documents
from kgpath.ingest.ledger import DocumentLedger

if TYPE_CHECKING:
    from kgpath.index.graph_index import GraphIndex

__all__ = ["DocumentLifecycle"]


class DocumentLifecycle:
    """The document entry points of :class:`~kgpath.index.GraphIndex` (a mixin it inherits).

    ``cls(graph, embedder)`` builds the index, so a subclass builds itself; the updates
    edit ``self.graph`` in place.
    """

    graph: KnowledgeGraph
    embedder: Embedder
    ledger: DocumentLedger | None = None
    """The documents and extraction records (``None`` for an index over a given graph)."""
    node_vectors: NodeVectorMode = "passage_mean"
    last_build: IngestReport | None = None
    """The report of :meth:`from_documents` (extraction calls, resumed and failed passages)."""

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Any],
        *,
        embedder: Embedder | None = None,
        extractor: Extractor | None = None,
        llm: Any = None,
        chunking: ChunkingConfig | None = None,
        batch_size: int = 64,
        node_vectors: NodeVectorMode = "passage_mean",
        checkpoint: Any = None,
        id_key: str = "id",
    ) -> GraphIndex:
        """Build a graph from raw documents and index it, embedding the corpus once.

        Chunk, extract and merge (offline spaCy by default, ``pip install 'kgpath[nlp]'``;
        with ``llm`` an LLM extracts entities and triples; ``extractor`` overrides both),
        then embed every passage once and give each entity node the normalised mean of the
        passages that cite it (:func:`kgpath.index.graph_vectors.embed_graph`, a documented
        kgpath choice; ``node_vectors="text"`` embeds the node texts instead). The vectors
        are stored on the graph (``index.graph.vectors``) with ``embedder`` as their owner.
        The index keeps the documents and the extraction records (:attr:`ledger`) for
        :meth:`add_documents`, :meth:`upsert_documents` and :meth:`delete_documents`.

        Parameters
        ----------
        documents
            Strings, ``(id, text)`` pairs, mappings with ``text``, LlamaIndex and LangChain
            documents (ids: :mod:`kgpath.ingest.documents`).
        embedder
            Any :class:`~kgpath.embeddings.Embedder` (or a framework embedding model);
            default: the bundled offline model. Checked before any document is read.
        extractor, llm, chunking, batch_size
            As :func:`kgpath.ingest.graph_from_documents`.
        node_vectors
            ``"passage_mean"`` (default) or ``"text"``.
        checkpoint
            A directory: each extracted batch's records are written there (JSON, atomic)
            and a build started again with it extracts only the passages not finished
            (:mod:`kgpath.ingest.checkpoint`; open-family extractors: spaCy, LLM).
        id_key
            The metadata key holding the id of a document without one of its own.

        Raises
        ------
        ConfigError
            For a non-embedder, an unknown ``node_vectors`` or a bad ``batch_size``.
        GraphError
            For a malformed document collection (naming the bad document).
        """
        emb, ledger, ex, report = _start(embedder, documents, extractor, llm, chunking,
                                         batch_size, node_vectors, id_key)
        extract_pending(ledger, ex, batch_size=batch_size, checkpoint=checkpoint, report=report)
        graph = assemble_graph(ledger, ex)
        if graph.passages:
            embed_graph(graph, emb, node_vectors=node_vectors)
        return _made(cls, graph, emb, ledger, node_vectors, report)

    @classmethod
    async def afrom_documents(
        cls,
        documents: Iterable[Any],
        *,
        embedder: Embedder | None = None,
        extractor: Extractor | None = None,
        llm: Any = None,
        chunking: ChunkingConfig | None = None,
        batch_size: int = 64,
        node_vectors: NodeVectorMode = "passage_mean",
        checkpoint: Any = None,
        id_key: str = "id",
    ) -> GraphIndex:
        """Async :meth:`from_documents` (the extractor's ``aextract``, ``aembed_passages``)."""
        emb, ledger, ex, report = _start(embedder, documents, extractor, llm, chunking,
                                         batch_size, node_vectors, id_key)
        await aextract_pending(ledger, ex, batch_size=batch_size, checkpoint=checkpoint,
                               report=report)
        graph = assemble_graph(ledger, ex)
        if graph.passages:
            await aembed_graph(graph, emb, node_vectors=node_vectors)
        return _made(cls, graph, emb, ledger, node_vectors, report)

    # ------------------------------------------------------------------ updates
    def add_documents(self, documents: Iterable[Any], *, extractor: Extractor | None = None,
                      llm: Any = None, chunking: ChunkingConfig | None = None,
                      batch_size: int = 64, id_key: str = "id") -> IngestReport:
        """Add documents; a known id with the same content is a no-op (see the module).

        Extracts only passages without a record (and retries failed ones); keyword
        arguments as :meth:`from_documents` (``extractor``/``llm``/``chunking`` default to
        the build's). Returns the :class:`~kgpath.ingest.IngestReport`.

        Raises
        ------
        DocumentError
            For a known id with different content (:meth:`upsert_documents` replaces it) or
            a passage id another document already has; nothing is changed then.
        """
        if self.ledger is None:
            return ingest_documents(self.graph, coerce_documents(documents, id_key=id_key),
                                    extractor=extractor, llm=llm,
                                    chunking=chunking, batch_size=batch_size)
        return self._doc_update(documents, False, extractor, llm, chunking, batch_size, id_key)

    async def aadd_documents(self, documents: Iterable[Any], *,
                             extractor: Extractor | None = None, llm: Any = None,
                             chunking: ChunkingConfig | None = None, batch_size: int = 64,
                             id_key: str = "id") -> IngestReport:
        """Async :meth:`add_documents` (the extractor's ``aextract``)."""
        if self.ledger is None:
            return await aingest_documents(self.graph, coerce_documents(documents, id_key=id_key),
                                           extractor=extractor, llm=llm,
                                           chunking=chunking, batch_size=batch_size)
        return await self._doc_aupdate(documents, False, extractor, llm, chunking, batch_size,
                                       id_key)

    def upsert_documents(self, documents: Iterable[Any], *, extractor: Extractor | None = None,
                         llm: Any = None, chunking: ChunkingConfig | None = None,
                         batch_size: int = 64, id_key: str = "id") -> IngestReport:
        """Add new documents and replace known ones whose content changed (in place).

        A replaced document's old passages, the nodes and edges only they supported, their
        vectors and names leave the index; what other documents also support stays with
        its provenance reduced, as a rebuild would have it (see the module docstring).
        """
        if self.ledger is None:
            docs = coerce_documents(documents, id_key=id_key)
            self._doc_remove_unledgered([d.id for d in docs], missing_ok=True)
            return ingest_documents(self.graph, docs, extractor=extractor, llm=llm,
                                    chunking=chunking, batch_size=batch_size)
        return self._doc_update(documents, True, extractor, llm, chunking, batch_size, id_key)

    async def aupsert_documents(self, documents: Iterable[Any], *,
                                extractor: Extractor | None = None, llm: Any = None,
                                chunking: ChunkingConfig | None = None, batch_size: int = 64,
                                id_key: str = "id") -> IngestReport:
        """Async :meth:`upsert_documents`."""
        if self.ledger is None:
            docs = coerce_documents(documents, id_key=id_key)
            self._doc_remove_unledgered([d.id for d in docs], missing_ok=True)
            return await aingest_documents(self.graph, docs, extractor=extractor, llm=llm,
                                           chunking=chunking, batch_size=batch_size)
        return await self._doc_aupdate(documents, True, extractor, llm, chunking, batch_size,
                                       id_key)

    def delete_documents(self, ids: Iterable[str], *, missing_ok: bool = False) -> IngestReport:
        """Remove documents by id: their passages and what only they supported.

        Raises
        ------
        DocumentError
            For an id the index does not hold (unless ``missing_ok``); nothing is removed.
        """
        wanted = _check_ids(ids)
        if self.ledger is None:
            return self._doc_remove_unledgered(wanted, missing_ok=missing_ok)
        report = self._doc_drop(wanted, missing_ok)
        if report.documents_deleted:
            was = self._doc_install(assemble_graph(self.ledger, self._doc_extractor(None, None)))
            _refresh_vectors(self, was)
        return report

    async def adelete_documents(self, ids: Iterable[str], *,
                                missing_ok: bool = False) -> IngestReport:
        """Async :meth:`delete_documents`."""
        wanted = _check_ids(ids)
        if self.ledger is None:
            return self._doc_remove_unledgered(wanted, missing_ok=missing_ok)
        report = self._doc_drop(wanted, missing_ok)
        if report.documents_deleted:
            was = self._doc_install(assemble_graph(self.ledger, self._doc_extractor(None, None)))
            await _arefresh_vectors(self, was)
        return report

    def for_namespace(self, namespace: str, *, key: str = "namespace") -> GraphIndex:
        """The index of the documents whose metadata ``key`` is ``namespace``, and only them.

        Assembled from this index's stored records (nothing extracted) and passage vectors
        (nothing embedded), it equals ``GraphIndex.from_documents`` over those documents:
        an entity two namespaces mention is a node in each, with only that namespace's
        provenance, so a retriever over it never returns, traverses through or scores
        another namespace's nodes, edges or passages. A snapshot: updates of this index
        do not reach it; a retriever given ``namespace=`` (``EvidenceRetriever``, both
        adapters) follows them (:mod:`kgpath.index.tenants`).

        Raises
        ------
        ConfigError
            For an index without a ledger (not built by :meth:`from_documents`).
        """
        return namespace_index(cast("GraphIndex", self), namespace, key)

    def namespaces(self, *, key: str = "namespace") -> list[str]:
        """The namespaces of the documents (metadata ``key``), in first-document order."""
        return namespaces(cast("GraphIndex", self), key)

    # ------------------------------------------------------------------ internals
    def _doc_extractor(self, extractor: Extractor | None, llm: Any) -> Extractor:
        check_extractor(extractor, 1)
        if extractor is not None:
            return extractor
        if llm is not None or self.ledger is None or self.ledger.extractor is None:
            return default_extractor(llm)
        return cast("Extractor", self.ledger.extractor)

    def _doc_plan(self, documents: Iterable[Any], replace: bool, extractor: Extractor | None,
                  llm: Any, chunking: ChunkingConfig | None, batch_size: int,
                  id_key: str) -> tuple[DocumentLedger, Extractor, dict[str, Any], IngestReport]:
        check_extractor(extractor, batch_size)
        ledger = self.ledger
        assert ledger is not None
        before = dict(ledger.documents)
        ledger.documents, report = plan_documents(ledger, documents, replace=replace,
                                                  chunking=chunking, id_key=id_key)
        return ledger, self._doc_extractor(extractor, llm), before, report

    def _doc_update(self, documents: Iterable[Any], replace: bool, extractor: Extractor | None,
                    llm: Any, chunking: ChunkingConfig | None, batch_size: int,
                    id_key: str) -> IngestReport:
        ledger, ex, before, report = self._doc_plan(documents, replace, extractor, llm,
                                                    chunking, batch_size, id_key)
        try:
            extract_pending(ledger, ex, batch_size=batch_size, report=report)
        except BaseException:
            ledger.documents = before  # records already made stay valid for their text
            raise
        if report.documents_unchanged == report.documents and not report.passages_extracted:
            return report  # nothing new: the graph is the same
        was = self._doc_install(assemble_graph(ledger, ex), report)
        _refresh_vectors(self, was)
        return report

    async def _doc_aupdate(self, documents: Iterable[Any], replace: bool,
                           extractor: Extractor | None, llm: Any,
                           chunking: ChunkingConfig | None, batch_size: int,
                           id_key: str) -> IngestReport:
        ledger, ex, before, report = self._doc_plan(documents, replace, extractor, llm,
                                                    chunking, batch_size, id_key)
        try:
            await aextract_pending(ledger, ex, batch_size=batch_size, report=report)
        except BaseException:
            ledger.documents = before
            raise
        if report.documents_unchanged == report.documents and not report.passages_extracted:
            return report
        was = self._doc_install(assemble_graph(ledger, ex), report)
        await _arefresh_vectors(self, was)
        return report

    def _doc_drop(self, wanted: list[str], missing_ok: bool) -> IngestReport:
        ledger = self.ledger
        assert ledger is not None
        unknown = [d for d in wanted if d not in ledger.documents]
        if unknown and not missing_ok:
            raise DocumentError(f"no document {unknown[0]!r} in the index",
                                document_id=unknown[0])
        report = IngestReport(documents=len(wanted))
        for d in wanted:
            entry = ledger.documents.pop(d, None)
            if entry is not None:
                report.documents_deleted += 1
                report.passages_removed += len(entry.passages)
        return report

    def _doc_install(self, graph: KnowledgeGraph,
                     report: IngestReport | None = None) -> _Before:
        """Swap ``graph`` into the index's graph object; reset what indexes rows by position.

        Returns the node objects and passage texts from before, to tell what changed.
        """
        old = self.graph
        before = _Before({n.id: n for n in old.nodes},
                         {pid: p.text for pid, p in old.passages.items()})
        if report is not None:
            old_edges = {id(e) for e in old.edges}  # an edge that changed is a new object
            report.nodes_new = sum(n.id not in before.nodes for n in graph.nodes)
            report.edges_added = sum(id(e) not in old_edges for e in graph.edges)
        assert self.ledger is not None
        self.ledger.forget_unused()
        replace_contents(self.graph, graph)
        _reset_rows(self)
        return before

    def _doc_remove_unledgered(self, ids: list[str], *, missing_ok: bool) -> IngestReport:
        """Provenance-counted removal for an index without a ledger (see the module)."""
        passages = self.graph.passages
        by_doc: dict[str, list[str]] = {}
        for pid, p in passages.items():
            by_doc.setdefault(str(p.metadata.get("doc_id", pid)), []).append(pid)
        unknown = [d for d in ids if d not in by_doc]
        if unknown and not missing_ok:
            raise DocumentError(f"no document {unknown[0]!r} in the graph's passages",
                                document_id=unknown[0])
        gone = [pid for d in ids for pid in by_doc.get(d, ())]
        removal = remove_passages(self.graph, gone)
        _reset_rows(self)
        return IngestReport(documents=len(ids), documents_deleted=len(ids) - len(unknown),
                            passages_removed=len(removal.passages))


def _start(embedder: Any, documents: Iterable[Any], extractor: Extractor | None, llm: Any,
           chunking: ChunkingConfig | None, batch_size: int, node_vectors: object,
           id_key: str) -> tuple[Embedder, DocumentLedger, Extractor, IngestReport]:
    """Check the options, then read the documents into a new ledger (no extraction yet)."""
    emb = as_embedder(embedder) if embedder is not None else default_embedder()
    check_node_vectors(node_vectors)
    check_extractor(extractor, batch_size)
    ledger = DocumentLedger(chunking)
    ledger.documents, report = plan_documents(ledger, documents, replace=False, id_key=id_key)
    ex = ledger.extractor = extractor if extractor is not None else default_extractor(llm)
    return emb, ledger, ex, report


@dataclass(frozen=True)
class _Before:
    """The graph before an update: node objects by id, passage texts by id."""

    nodes: dict[str, Node]
    passages: dict[str, str]


class _Rows:
    """The few nodes whose vector is recomputed, as ``passage_mean_vectors`` reads a graph."""

    def __init__(self, nodes: list[Node]) -> None:
        self.nodes = nodes
        self.num_nodes = len(nodes)


def _stale(index: Any, before: _Before) -> tuple[list[Passage], list[int]]:
    """Passages the shared cache lacks; node rows whose passage-mean vector is stale.

    A node is recomputed when it is a new object (the assembly re-creates exactly the
    nodes an update touched), has no vector, or cites a passage whose text changed.
    """
    g = index.graph
    cache = passage_cache(g, index.embedder)
    with cache.lock:
        todo = cache.missing(g)
    changed = {pid for pid, p in g.passages.items() if before.passages.get(pid) != p.text}
    missing = set(g.vectors.missing())
    rows = []
    for i, node in enumerate(g.nodes):
        cites_changed = bool(changed) and not changed.isdisjoint(node.provenance)
        if cites_changed or i in missing or before.nodes.get(node.id) is not node:
            rows.append(i)
    return todo, rows


def _finish_vectors(index: Any, todo: list[Passage], raw: Any, rows: list[int],
                    texts_raw: Any) -> None:
    """Store new passage vectors (unit rows, as ``embed_graph``) and the stale node means."""
    g = index.graph
    cache = passage_cache(g, index.embedder)
    with cache.lock:
        if todo:
            cache.add(todo, normalize_rows(np.asarray(raw, dtype=np.float32)))
        pv = cache.vectors(g)
    if index.node_vectors != "passage_mean" or not rows or pv is None:
        return
    nodes = [g.node_at(i) for i in rows]
    mat, no_passage = passage_mean_vectors(cast(Any, _Rows(nodes)), pv.ids, pv.matrix)
    if no_passage:  # not in an assembled graph (every node cites a passage); as embed_graph
        if texts_raw is None or len(texts_raw) != len(no_passage):
            embed_graph(g, index.embedder, node_vectors="passage_mean")
            return
        mat[no_passage] = normalize_rows(np.asarray(texts_raw, dtype=np.float32))
    g.vectors.set({n.id: mat[j] for j, n in enumerate(nodes)}, owner=g.vectors.owner)


def _needs_full(index: Any) -> bool:
    """No owned vectors to update row by row: embed the graph as a build does."""
    g = index.graph
    return bool(g.passages) and (g.vectors.owner is None or g.vectors.dim is None)


def _refresh_vectors(index: Any, before: _Before) -> None:
    """After an update: embed new passages once, recompute the stale node vectors only."""
    embed = index.embedder.embed_passages
    if not index.graph.passages:
        return
    if _needs_full(index):
        embed_graph(index.graph, index.embedder, node_vectors=index.node_vectors)
        return
    todo, rows = _stale(index, before)
    raw = embed([p.text for p in todo]) if todo else None
    _finish_vectors(index, todo, raw, rows, _no_passage_texts(index, rows, embed))


async def _arefresh_vectors(index: Any, before: _Before) -> None:
    """Async :func:`_refresh_vectors` (``aembed_passages``)."""
    if not index.graph.passages:
        return
    if _needs_full(index):
        await aembed_graph(index.graph, index.embedder, node_vectors=index.node_vectors)
        return
    todo, rows = _stale(index, before)
    raw = await index.embedder.aembed_passages([p.text for p in todo]) if todo else None
    texts = [index.graph.node_at(i).search_text for i in rows
             if not index.graph.node_at(i).provenance]
    traw = await index.embedder.aembed_passages(texts) if texts else None
    _finish_vectors(index, todo, raw, rows, traw)


def _no_passage_texts(index: Any, rows: list[int], embed: Any) -> Any:
    """Vectors of the stale nodes that cite no passage (their own search text)."""
    texts = [index.graph.node_at(i).search_text for i in rows
             if not index.graph.node_at(i).provenance]
    return embed(texts) if texts else None


def _check_ids(ids: Iterable[str]) -> list[str]:
    if isinstance(ids, (str, bytes)):
        raise GraphError(f"ids must be a collection of document ids, got the string {ids!r}")
    out = list(dict.fromkeys(ids))
    for d in out:
        if not isinstance(d, str) or not d:
            raise GraphError(f"document id must be a non-empty string, got {d!r}")
    return out


def _reset_rows(index: Any) -> None:
    """Drop an index's per-row state that a shrinking or reordered graph invalidates.

    The float32 index re-reads the graph's vectors (carried by node id and text); a compact
    store and private vectors (another embedder's index) are rebuilt on the next search.
    """
    if getattr(index, "vectors", "float32") != "float32":
        index._vec = None
        index._chash = np.zeros(0, dtype=np.int64)
    if getattr(index, "_own", None) is not None:
        index._own = None
        index._own_texts = []


def _made(cls: type[DocumentLifecycle], graph: KnowledgeGraph, emb: Embedder,
          ledger: DocumentLedger, node_vectors: NodeVectorMode,
          report: IngestReport) -> GraphIndex:
    index = _index_class(cls)(graph, emb)
    index.ledger = ledger
    index.node_vectors = node_vectors
    index.last_build = report
    return index


def _index_class(cls: type[DocumentLifecycle]) -> type[GraphIndex]:
    """The mixin's ``cls`` is always :class:`~kgpath.index.GraphIndex` or a subclass of it."""
    return cast("type[GraphIndex]", cls)
