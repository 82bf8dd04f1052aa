"""A kgpath index as a LangChain ``VectorStore``: documents in, a graph kept up to date.

:class:`KgpathGraphStore` holds a core :class:`~kgpath.GraphIndex` built by
:meth:`~kgpath.GraphIndex.from_documents` and converts LangChain's vector-store calls to
the index's document lifecycle: ``add_documents`` is
:meth:`~kgpath.GraphIndex.upsert_documents` (LangChain's contract: adding a known id
replaces that document), ``delete`` is :meth:`~kgpath.GraphIndex.delete_documents`. After
any sequence of them the graph equals ``GraphIndex.from_documents`` over the documents the
store holds, so LangChain's indexing API (``langchain_core.indexing.index`` with a record
manager, ``cleanup="incremental"`` or ``"full"``) keeps the knowledge graph in sync with a
changing corpus. :meth:`~KgpathGraphStore.as_retriever` with ``method=`` gives any kgpath
method's retriever over the store's live index (it sees later updates).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from kgpath.embeddings import default_embedder, normalize_rows
from kgpath.errors import ConfigError
from kgpath.index import GraphIndex
from kgpath.ingest.chunking import passage_document, split_sentences, user_metadata
from kgpath.ingest.documents import SourceDocument, content_digest, content_id
from langchain_kgpath._base import KgpathRetriever, as_kgpath_embedder, as_kgpath_llm
from langchain_kgpath.retrievers import (
    C2RAGRetriever,
    GraphAugmentedRetriever,
    KGTraversalRetriever,
    PathConstrainedRetriever,
    PathRAGRetriever,
    SchemaGuidedRetriever,
)

__all__ = ["KgpathGraphStore"]

#: ``as_retriever(method=...)``: the adapter's retriever class of each method.
RETRIEVERS: dict[str, type[KgpathRetriever]] = {
    cls.method: cls for cls in (PathConstrainedRetriever, PathRAGRetriever, C2RAGRetriever,
                                SchemaGuidedRetriever, GraphAugmentedRetriever,
                                KGTraversalRetriever)
}


class KgpathGraphStore(VectorStore):
    """A LangChain vector store backed by a kgpath :class:`~kgpath.GraphIndex`.

    Parameters
    ----------
    embedding
        LangChain ``Embeddings`` or a kgpath embedder; ``None``: the bundled offline one.
    extractor
        The kgpath extractor that reads new passages (``None``: offline spaCy, or the LLM
        extractor when ``llm`` is given); see :meth:`kgpath.GraphIndex.from_documents`.
    llm
        LangChain chat model/LLM or a kgpath LLM: extracts entities and triples (when no
        ``extractor`` is given) and is the default LLM of :meth:`as_retriever`.
    chunking
        A :class:`kgpath.ingest.ChunkingConfig` (``None``: the core's default).
    index
        An existing :class:`~kgpath.GraphIndex` to wrap instead of starting empty.

    Notes
    -----
    A document's id is, in order: the ``ids=`` given, its ``Document.id``, else the core's
    content id (``doc-`` + 16 hex digits of the SHA-256 of its title, sentences and
    metadata, :func:`kgpath.ingest.documents.content_id`), so adding the same document
    twice keeps one. Its ``metadata["title"]`` (if any) is its title. The store keeps a
    document as the index does: its text split into sentences, so :meth:`get_by_ids` and
    :meth:`similarity_search` return ``page_content`` with whitespace between sentences
    normalised to single spaces, and the metadata as given.
    """

    def __init__(self, embedding: Any = None, *, extractor: Any = None, llm: Any = None,
                 chunking: Any = None, index: GraphIndex | None = None) -> None:
        self.embedding = embedding
        self.llm = llm
        if index is None:
            emb = as_kgpath_embedder(embedding) or default_embedder()
            index = GraphIndex.from_documents([], embedder=emb, extractor=extractor,
                                              llm=as_kgpath_llm(llm), chunking=chunking)
        if not isinstance(index, GraphIndex):
            raise ConfigError(f"index must be a kgpath GraphIndex, got {type(index).__name__}")
        self.index = index

    def __repr__(self) -> str:
        ledger = self.index.ledger
        docs = "?" if ledger is None else len(ledger.documents)
        return (f"KgpathGraphStore(documents={docs}, passages={len(self.index.graph.passages)}, "
                f"nodes={len(self.index.graph)})")

    @property
    def embeddings(self) -> Embeddings | None:
        """The LangChain ``Embeddings`` given (``None`` for a kgpath embedder)."""
        return self.embedding if isinstance(self.embedding, Embeddings) else None

    # ------------------------------------------------------------------ writes
    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Add documents, replacing those whose id the store holds; return their ids.

        ``ids=`` (optional) gives the ids, one per document. Only passages without an
        extraction record are extracted; the graph then equals a rebuild over the stored
        documents (:meth:`kgpath.GraphIndex.upsert_documents`).

        Raises
        ------
        ConfigError
            If ``ids`` is not one id per document.
        """
        docs = _source_documents(documents, kwargs.pop("ids", None))
        if docs:
            self.index.upsert_documents(docs)
        return [d.id for d in docs]

    async def aadd_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Async :meth:`add_documents` (the extractor's native ``aextract``)."""
        docs = _source_documents(documents, kwargs.pop("ids", None))
        if docs:
            await self.index.aupsert_documents(docs)
        return [d.id for d in docs]

    def add_texts(self, texts: Iterable[str], metadatas: list[dict] | None = None, *,
                  ids: list[str] | None = None, **kwargs: Any) -> list[str]:
        """Add texts (with optional metadatas and ids) as documents; see :meth:`add_documents`."""
        return self.add_documents(_documents(texts, metadatas), ids=ids)

    async def aadd_texts(self, texts: Iterable[str], metadatas: list[dict] | None = None, *,
                         ids: list[str] | None = None, **kwargs: Any) -> list[str]:
        """Async :meth:`add_texts`."""
        return await self.aadd_documents(_documents(texts, metadatas), ids=ids)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool:
        """Delete documents by id (unknown ids are ignored); return ``True``.

        The documents' passages, and the nodes and edges only they supported, leave the
        graph (:meth:`kgpath.GraphIndex.delete_documents`).

        Raises
        ------
        ConfigError
            If ``ids`` is ``None`` (this store deletes by id only).
        """
        self.index.delete_documents(_check_delete(ids), missing_ok=True)
        return True

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool:
        """Async :meth:`delete`."""
        await self.index.adelete_documents(_check_delete(ids), missing_ok=True)
        return True

    # ------------------------------------------------------------------ reads
    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The stored documents with these ids, in that order; unknown ids are skipped."""
        ledger = self.index.ledger
        if ledger is not None:
            return [_to_document(ledger.documents[i].document) for i in ids
                    if i in ledger.documents]
        return _from_passages(self.index, ids)  # an index without a ledger (see load)

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        """The ``k`` documents whose best passage is most similar to ``query`` (dense).

        Each passage of the index has a unit vector (the embedder's passage side); a
        document's score is the cosine similarity of its best passage with the query's
        vector. This is plain dense search over passages, not graph retrieval: for that
        use :meth:`as_retriever` with a ``method``.
        """
        return [doc for doc, _ in self.similarity_search_with_score(query, k, **kwargs)]

    def similarity_search_with_score(self, query: str, k: int = 4,
                                     **kwargs: Any) -> list[tuple[Document, float]]:
        """:meth:`similarity_search` with each document's cosine similarity."""
        pv = self.index.passage_vectors()
        if pv is None or not pv.ids:
            return []
        q = normalize_rows(np.asarray(self.index.embedder.embed_queries([query]),
                                      dtype=np.float32))[0]
        return _rank_documents(self, pv.ids, pv.matrix @ q, k)

    def similarity_search_by_vector(self, embedding: list[float], k: int = 4,
                                    **kwargs: Any) -> list[Document]:
        """The ``k`` documents whose best passage is most similar to ``embedding``."""
        pv = self.index.passage_vectors()
        if pv is None or not pv.ids:
            return []
        q = normalize_rows(np.asarray([embedding], dtype=np.float32))[0]
        return [doc for doc, _ in _rank_documents(self, pv.ids, pv.matrix @ q, k)]

    def _select_relevance_score_fn(self) -> Any:
        """Cosine similarity in [-1, 1] mapped to a relevance in [0, 1]."""
        return lambda score: (score + 1.0) / 2.0

    # ------------------------------------------------------------------ retrievers
    def as_retriever(self, method: str | None = None, **kwargs: Any) -> Any:
        """A kgpath method's retriever over the store's live index, or the dense one.

        With ``method`` (``"pcr"``, ``"pathrag"``, ``"c2rag"``, ``"schema"``,
        ``"augmented"``, ``"traversal"``) the adapter's retriever class of that method over
        this store's :class:`~kgpath.GraphIndex` (it sees later updates), with the store's
        embedding and LLM; ``kwargs`` are that retriever's (``k``, ``output``, the method's
        options). Without ``method``, LangChain's ``VectorStoreRetriever`` over
        :meth:`similarity_search`.

        Raises
        ------
        ConfigError
            For an unknown method (naming it and the known ones).
        EmptyGraphError
            For a store without documents (the core refuses a graph with nothing to
            search; build the retriever after adding documents).
        """
        if method is None:
            return super().as_retriever(**kwargs)
        cls = RETRIEVERS.get(method)
        if cls is None:
            raise ConfigError(f"unknown method {method!r}; known: {sorted(RETRIEVERS)}")
        kwargs.setdefault("llm", self.llm)
        return cls(graph=self.index, **kwargs)  # the index brings its own embedder

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str]) -> None:
        """Save the index to directory ``path`` (:meth:`kgpath.GraphIndex.save`)."""
        self.index.save(path)

    @classmethod
    def load(cls, path: str | os.PathLike[str], embedding: Any = None, *,
             extractor: Any = None, llm: Any = None) -> KgpathGraphStore:
        """Reopen a store saved by :meth:`save`, embedding nothing.

        ``embedding=None`` rebuilds the bundled model the index was saved with; another
        must be passed (checked against the saved probe, :meth:`kgpath.GraphIndex.load`).
        ``extractor`` reads the passages of later updates (the extractor is not saved);
        ``llm`` as the constructor.
        """
        index = GraphIndex.load(path, embedder=as_kgpath_embedder(embedding), extractor=extractor)
        return cls(embedding, llm=llm, index=index)

    @classmethod
    def from_texts(cls, texts: list[str], embedding: Any = None,
                   metadatas: list[dict] | None = None, *, ids: list[str] | None = None,
                   **kwargs: Any) -> KgpathGraphStore:
        """A store over ``texts``; ``kwargs`` as the constructor (``extractor``, ``llm``, ...).

        ``from_documents(documents, embedding, **kwargs)`` (LangChain's) comes here with
        the documents' ids.
        """
        store = cls(embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store


def _documents(texts: Iterable[str], metadatas: list[dict] | None) -> list[Document]:
    texts = list(texts)
    metas = list(metadatas) if metadatas is not None else [{}] * len(texts)
    if len(metas) != len(texts):
        raise ConfigError(f"metadatas has {len(metas)} entries for {len(texts)} texts")
    return [Document(page_content=t, metadata=dict(m or {})) for t, m in zip(texts, metas)]


def _source_documents(documents: Sequence[Document], ids: Any) -> list[SourceDocument]:
    """Core documents with their ids: ``ids``, else ``Document.id``, else the content id."""
    documents = list(documents)
    if ids is not None:
        ids = list(ids)
        if len(ids) != len(documents):
            raise ConfigError(f"ids has {len(ids)} entries for {len(documents)} documents")
    out = []
    for i, doc in enumerate(documents):
        if not isinstance(doc, Document):
            raise ConfigError(f"document #{i} must be a LangChain Document, "
                              f"got {type(doc).__name__}")
        meta = dict(doc.metadata or {})
        title = str(meta.get("title") or "")
        sentences = tuple(split_sentences(doc.page_content))
        given = (ids[i] if ids is not None else None) or doc.id
        doc_id = str(given) if given else content_id(content_digest(title, sentences, meta))
        out.append(SourceDocument(doc_id, title, sentences, meta))
    return out


def _check_delete(ids: list[str] | None) -> list[str]:
    if ids is None:
        raise ConfigError("delete(ids=None): KgpathGraphStore deletes by id only; "
                          "pass the ids of the documents to delete")
    return list(ids)


def _to_document(doc: SourceDocument) -> Document:
    return Document(page_content=doc.text, metadata=dict(doc.metadata), id=doc.id)


def _rank_documents(store: KgpathGraphStore, passage_ids: Sequence[str], scores: np.ndarray,
                    k: int) -> list[tuple[Document, float]]:
    """Each document's best passage score, best first (ties: index order), top ``k``."""
    passages = store.index.graph.passages
    best: dict[str, float] = {}
    for pid, s in zip(passage_ids, scores.tolist()):
        doc_id = passage_document(passages[pid].metadata, pid)
        if s > best.get(doc_id, -np.inf):
            best[doc_id] = s
    order = sorted(best, key=lambda d: -best[d])[:max(k, 0)]
    found = {d.id: d for d in store.get_by_ids(order)}
    return [(found[d], float(best[d])) for d in order if d in found]


def _from_passages(index: GraphIndex, ids: Sequence[str]) -> list[Document]:
    """Documents rebuilt from the graph's passages (an index without a document ledger).

    The text is the document's passages joined by a space (with the chunking's overlap
    sentences repeated); the metadata is the first passage's, without the chunk keys.
    """
    by_doc: dict[str, list[Any]] = {}
    for pid, p in index.graph.passages.items():
        by_doc.setdefault(passage_document(p.metadata, pid), []).append(p)
    out = []
    for i in ids:
        if i in by_doc:
            meta = user_metadata(by_doc[i][0].metadata)
            text = " ".join(p.text for p in by_doc[i])
            out.append(Document(page_content=text, metadata=meta, id=i))
    return out
