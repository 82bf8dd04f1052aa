"""``KgpathIndex``: a kgpath :class:`~kgpath.index.GraphIndex` with LlamaIndex's index methods.

LlamaIndex users keep an index up to date with ``insert``, ``delete_ref_doc``,
``update_ref_doc`` and ``refresh_ref_docs``, save it with ``persist`` and query it through
``as_retriever`` / ``as_query_engine``. :class:`KgpathIndex` offers exactly those names over
the core's document lifecycle (:mod:`kgpath.index.documents`): every update is the core's
``add_documents`` / ``upsert_documents`` / ``delete_documents``, so after any sequence of
them the graph equals ``GraphIndex.from_documents`` over the current documents, and only new
or changed passages are extracted and embedded. A document's id is its ``id_`` (LlamaIndex's
``ref_doc_id`` for the nodes split from it).

It is not a ``BaseIndex`` subclass. ``BaseIndex`` is built around nodes that LlamaIndex has
already split (``_insert(nodes)``, ``_delete_node(node_id)``), a docstore holding every node
and document hash, an ``IndexStruct`` and a ``StorageContext`` whose ``persist`` writes
``docstore.json`` / ``index_store.json``. kgpath chunks, extracts and assembles documents
itself and keeps its documents, passages and extraction records in its own ledger, saved
with the graph and its vectors by ``GraphIndex.save`` (JSON + ``.npy``, checksummed, atomic).
A ``BaseIndex`` subclass would keep a second copy of every document in a docstore that must
agree with the ledger, and persist two stores that can disagree after a crash; a class with
the same method names keeps one source of truth and works wherever LlamaIndex code calls
those methods.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.retrievers.kgpath import retrievers as _retrievers
from llama_index.retrievers.kgpath._base import (
    KgpathRetriever,
    to_kgpath_embedder,
    to_kgpath_llm,
)

from kgpath.embeddings import default_embedder
from kgpath.errors import ConfigError, DocumentError
from kgpath.graph.model import short
from kgpath.index import GraphIndex
from kgpath.ingest import IngestReport
from kgpath.ingest.chunking import passage_document
from kgpath.ingest.documents import coerce_documents, content_digest

__all__ = ["KgpathIndex"]


def _retriever_classes() -> dict[str, type[KgpathRetriever]]:
    """Method name -> the adapter's retriever class (``"pcr"`` -> PathConstrainedRetriever)."""
    out = {}
    for name in _retrievers.__all__:
        cls = getattr(_retrievers, name)
        if isinstance(cls, type) and issubclass(cls, KgpathRetriever) and cls.method:
            out[cls.method] = cls
    return out


class KgpathIndex:
    """A durable, updatable kgpath index with LlamaIndex's index methods.

    Build it with :meth:`from_documents` (or wrap a :class:`~kgpath.index.GraphIndex`),
    update it by document, save it with :meth:`persist` and reopen it with :meth:`load`;
    retrievers from :meth:`as_retriever` search the live index, so they see every update.

    Parameters
    ----------
    index
        The core index. Updates by document are exact (equal to a rebuild) when it was built
        by ``GraphIndex.from_documents`` and so keeps a document ledger.

    Examples
    --------
    >>> from llama_index.core import Document
    >>> from kgpath import HashingEmbedder
    >>> index = KgpathIndex.from_documents(
    ...     [Document(text="Marie Curie was born in Warsaw.", id_="curie")],
    ...     embed_model=HashingEmbedder())  # doctest: +SKIP
    >>> index.insert(Document(text="Warsaw is in Poland.", id_="warsaw"))  # doctest: +SKIP
    >>> index.delete_ref_doc("curie")  # doctest: +SKIP
    """

    def __init__(self, index: GraphIndex) -> None:
        if not isinstance(index, GraphIndex):
            raise ConfigError(f"KgpathIndex wraps a kgpath GraphIndex, got "
                              f"{type(index).__name__}: {short(index)}")
        self._index = index

    def __repr__(self) -> str:
        return f"KgpathIndex(documents={len(self.ref_doc_ids)}, graph={self._index.graph!r})"

    # ------------------------------------------------------------------ building
    @classmethod
    def from_documents(cls, documents: Sequence[Any], *, embed_model: Any = None,
                       extractor: Any = None, llm: Any = None, show_progress: bool = False,
                       chunking: Any = None, **kwargs: Any) -> KgpathIndex:
        """Chunk, extract and embed ``documents`` into a new index (the corpus embedded once).

        Parameters
        ----------
        documents
            LlamaIndex ``Document`` / ``TextNode`` objects (id: ``id_``), strings or ``(id,
            text)`` pairs; none gives an empty index to :meth:`insert` into.
        embed_model
            A LlamaIndex ``BaseEmbedding`` or a kgpath embedder; ``None``: a user-set
            ``Settings.embed_model``, else kgpath's bundled offline model.
        extractor, llm
            How entities and relations are read: offline spaCy by default, an LLM
            (LlamaIndex or kgpath) when ``llm`` is given, ``extractor`` overrides both.
        show_progress
            Accepted for LlamaIndex's signature: kgpath shows a bar for every long step
            unless ``KGPATH_PROGRESS=0`` (:mod:`kgpath._progress`), whatever this says.
        chunking, **kwargs
            As :meth:`kgpath.index.GraphIndex.from_documents` (``checkpoint=``,
            ``batch_size=``, ``node_vectors=``, ``id_key=``).
        """
        docs = documents if isinstance(documents, (str, bytes)) else list(documents)
        emb = to_kgpath_embedder(embed_model) or default_embedder()
        index = GraphIndex.from_documents(docs, embedder=emb, extractor=extractor,
                                          llm=to_kgpath_llm(llm) if llm else None,
                                          chunking=chunking, **kwargs)
        return cls(index)

    @classmethod
    def load(cls, persist_dir: str | os.PathLike[str], embed_model: Any = None,
             extractor: Any = None) -> KgpathIndex:
        """Reopen an index written by :meth:`persist`, embedding nothing.

        ``embed_model=None`` rebuilds the bundled model it was saved with; any other model
        must be passed and is checked against the saved vectors
        (:meth:`kgpath.index.GraphIndex.load`). ``extractor`` reads the passages of later
        updates when the saved one cannot be rebuilt by name (a custom extractor).
        """
        emb = to_kgpath_embedder(embed_model)
        extra = {} if extractor is None else {"extractor": extractor}
        return cls(GraphIndex.load(persist_dir, embedder=emb, **extra))

    def persist(self, persist_dir: str | os.PathLike[str]) -> None:
        """Save the index (graph, documents, every vector) to ``persist_dir``.

        :meth:`kgpath.index.GraphIndex.save`: JSON + ``.npy``, checksummed, written
        atomically; :meth:`load` reopens it without embedding anything.
        """
        self._index.refresh()  # save every vector a search would otherwise compute later
        self._index.save(persist_dir)

    # ------------------------------------------------------------------ documents
    @property
    def graph_index(self) -> GraphIndex:
        """The core index (its ``graph``, ``embedder`` and ``ledger``)."""
        return self._index

    @property
    def graph(self) -> Any:
        """The kgpath graph, edited in place by every update."""
        return self._index.graph

    @property
    def ref_doc_ids(self) -> list[str]:
        """The ids of the documents in the index, in index order."""
        ledger = self._index.ledger
        if ledger is not None:
            return list(ledger.documents)
        return list(dict.fromkeys(passage_document(p.metadata, pid)
                                  for pid, p in self._index.graph.passages.items()))

    def insert(self, document: Any, **insert_kwargs: Any) -> IngestReport:
        """Add one document (a known ``id_`` with the same content is a no-op).

        ``insert_kwargs`` as :meth:`kgpath.index.GraphIndex.add_documents`. Raises
        :class:`~kgpath.errors.DocumentError` for a known id with other content
        (:meth:`update_ref_doc` replaces it).
        """
        return self._index.add_documents([document], **insert_kwargs)

    async def ainsert(self, document: Any, **insert_kwargs: Any) -> IngestReport:
        """Async :meth:`insert`."""
        return await self._index.aadd_documents([document], **insert_kwargs)

    def update_ref_doc(self, document: Any, **update_kwargs: Any) -> IngestReport:
        """Replace the document with ``document.id_`` (added when the index lacks it)."""
        return self._index.upsert_documents([document], **update_kwargs)

    async def aupdate_ref_doc(self, document: Any, **update_kwargs: Any) -> IngestReport:
        """Async :meth:`update_ref_doc`."""
        return await self._index.aupsert_documents([document], **update_kwargs)

    def delete_ref_doc(self, ref_doc_id: str, delete_from_docstore: bool = True,
                       **delete_kwargs: Any) -> IngestReport:
        """Remove a document: its passages and the nodes and edges only it supported.

        The index keeps its documents in one place (no separate docstore), so the document
        always leaves it; ``delete_from_docstore`` is accepted for LlamaIndex's signature.
        ``missing_ok=True`` ignores an unknown id.

        Raises
        ------
        DocumentError
            For an id the index does not hold (unless ``missing_ok``).
        """
        return self._index.delete_documents([_check_ref_doc_id(ref_doc_id)], **delete_kwargs)

    async def adelete_ref_doc(self, ref_doc_id: str, delete_from_docstore: bool = True,
                              **delete_kwargs: Any) -> IngestReport:
        """Async :meth:`delete_ref_doc`."""
        return await self._index.adelete_documents([_check_ref_doc_id(ref_doc_id)],
                                                   **delete_kwargs)

    def _changed(self, documents: Sequence[Any]) -> list[bool]:
        """For each document, whether the index lacks it or holds other content for its id."""
        ledger = self._index.ledger
        docs = coerce_documents(list(documents))
        if ledger is None:
            return [True] * len(docs)
        out = []
        for d in docs:
            held = ledger.documents.get(d.id)
            out.append(held is None
                       or held.digest != content_digest(d.title, d.sentences, d.metadata))
        return out

    def refresh_ref_docs(self, documents: Sequence[Any], **update_kwargs: Any) -> list[bool]:
        """Insert new documents and replace changed ones; True where that happened.

        As LlamaIndex's ``refresh_ref_docs``: unchanged documents (same id, text and
        metadata) cost nothing; the others go to the index in one update.
        """
        docs = list(documents)
        flags = self._changed(docs)
        if any(flags):
            self._index.upsert_documents([d for d, f in zip(docs, flags) if f], **update_kwargs)
        return flags

    async def arefresh_ref_docs(self, documents: Sequence[Any],
                                **update_kwargs: Any) -> list[bool]:
        """Async :meth:`refresh_ref_docs`."""
        docs = list(documents)
        flags = self._changed(docs)
        if any(flags):
            await self._index.aupsert_documents([d for d, f in zip(docs, flags) if f],
                                                **update_kwargs)
        return flags

    # ------------------------------------------------------------------ querying
    def as_retriever(self, method: str = "pcr", **kwargs: Any) -> KgpathRetriever:
        """The adapter's retriever for ``method`` over this live index.

        ``method``: ``"pcr"``, ``"pathrag"``, ``"c2rag"``, ``"schema"``, ``"augmented"`` or
        ``"traversal"``; ``kwargs`` as that retriever (``similarity_top_k``, ``llm``,
        ``output``, the method's options). The retriever uses the index's embedder and sees
        every later update.
        """
        classes = _retriever_classes()
        if method not in classes:
            raise ConfigError(f"unknown method {method!r}; choose one of {sorted(classes)}")
        if kwargs.get("embed_model") is not None:
            raise ConfigError("as_retriever uses the index's embed_model; pass embed_model "
                              "to KgpathIndex.from_documents or load")
        kwargs.pop("embed_model", None)
        return classes[method](self._index, **kwargs)

    def as_query_engine(self, llm: Any = None, method: str = "pcr",
                        **kwargs: Any) -> BaseQueryEngine:
        """A ``RetrieverQueryEngine`` over :meth:`as_retriever` answering with ``llm``.

        ``llm=None`` uses ``Settings.llm``, as LlamaIndex's indices do. Keyword arguments
        ``RetrieverQueryEngine.from_args`` takes (``response_mode``,
        ``node_postprocessors``, ...) go to the engine, the others to the retriever.
        """
        from llama_index.core import Settings
        from llama_index.core.llms.utils import resolve_llm
        from llama_index.core.query_engine import RetrieverQueryEngine

        engine_args = set(inspect.signature(RetrieverQueryEngine.from_args).parameters)
        engine_kw = {k: kwargs.pop(k) for k in list(kwargs) if k in engine_args}
        retriever = self.as_retriever(method, **kwargs)
        answer_llm = resolve_llm(llm) if llm is not None else Settings.llm
        return RetrieverQueryEngine.from_args(retriever, llm=answer_llm, **engine_kw)


def _check_ref_doc_id(ref_doc_id: object) -> str:
    if not isinstance(ref_doc_id, str) or not ref_doc_id:
        raise DocumentError(f"ref_doc_id must be a non-empty string, got {short(ref_doc_id)}",
                            document_id=str(ref_doc_id))
    return ref_doc_id
