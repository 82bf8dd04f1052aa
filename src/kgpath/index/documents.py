"""Documents into an index: build a graph from documents and its node vectors, or extend it.

:class:`DocumentLifecycle` gives :class:`~kgpath.index.GraphIndex` its document entry
points: :meth:`~DocumentLifecycle.from_documents` chunks, extracts and merges
(:func:`kgpath.ingest.graph_from_documents`), then embeds the corpus once and stores the node
vectors on the graph (:func:`kgpath.index.graph_vectors.embed_graph`);
:meth:`~DocumentLifecycle.add_documents` extends the graph with the same incremental
ingestion (:func:`kgpath.ingest.ingest_documents`), and the index embeds the new nodes on its
next build. The graph itself knows nothing of documents (:mod:`kgpath.graph`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

from kgpath.embeddings import Embedder, as_embedder, default_embedder
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_vectors import (
    NodeVectorMode,
    aembed_graph,
    check_node_vectors,
    embed_graph,
)
from kgpath.ingest import (
    ChunkingConfig,
    Extractor,
    IngestReport,
    agraph_from_documents,
    aingest_documents,
    graph_from_documents,
    ingest_documents,
)

if TYPE_CHECKING:
    from kgpath.index.graph_index import GraphIndex

__all__ = ["DocumentLifecycle"]


class DocumentLifecycle:
    """The document entry points of :class:`~kgpath.index.GraphIndex` (a mixin it inherits).

    ``cls(graph, embedder)`` builds the index, so a subclass builds itself;
    :meth:`add_documents` extends ``self.graph``.
    """

    graph: KnowledgeGraph

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
    ) -> GraphIndex:
        """Build a graph from raw documents and index it, embedding the corpus once.

        Chunk, extract and merge (:func:`kgpath.ingest.graph_from_documents`: offline spaCy
        by default, ``pip install 'kgpath[nlp]'``; with ``llm`` an LLM extracts entities
        and triples; ``extractor`` overrides both), then embed every passage once and give
        each entity node the normalised mean of the passages that cite it
        (:func:`kgpath.index.graph_vectors.embed_graph`, a documented kgpath choice;
        ``node_vectors="text"`` embeds the node texts instead). The vectors are stored on
        the graph (``index.graph.vectors``) with ``embedder`` as their owner.

        Parameters
        ----------
        documents
            Strings, ``(id, text)`` pairs, mappings with ``text``, LlamaIndex and LangChain
            documents.
        embedder
            Any :class:`~kgpath.embeddings.Embedder` (or a LlamaIndex / LangChain embedding
            model); defaults to the bundled offline model. Checked before any document is
            read.
        extractor, llm, chunking, batch_size
            As :func:`kgpath.ingest.graph_from_documents`.
        node_vectors
            ``"passage_mean"`` (default) or ``"text"``.

        Raises
        ------
        ConfigError
            For an object that is not an embedder, an unknown ``node_vectors`` or a bad
            ``batch_size``.
        GraphError
            For a malformed document collection (naming the bad document).

        Examples
        --------
        >>> from kgpath import HashingEmbedder
        >>> index = GraphIndex.from_documents(  # doctest: +SKIP
        ...     ["Marie Curie was born in Warsaw."], embedder=HashingEmbedder())
        >>> index.graph.vectors.missing()  # doctest: +SKIP
        []
        """
        emb = as_embedder(embedder) if embedder is not None else default_embedder()
        check_node_vectors(node_vectors)
        graph = graph_from_documents(documents, extractor=extractor, llm=llm,
                                     chunking=chunking, batch_size=batch_size)
        if graph.passages:
            embed_graph(graph, emb, node_vectors=node_vectors)
        return _index_class(cls)(graph, emb)

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
    ) -> GraphIndex:
        """Async :meth:`from_documents` (the extractor's ``aextract``, ``aembed_passages``)."""
        emb = as_embedder(embedder) if embedder is not None else default_embedder()
        check_node_vectors(node_vectors)
        graph = await agraph_from_documents(documents, extractor=extractor, llm=llm,
                                            chunking=chunking, batch_size=batch_size)
        if graph.passages:
            await aembed_graph(graph, emb, node_vectors=node_vectors)
        return _index_class(cls)(graph, emb)

    def add_documents(
        self,
        documents: Iterable[Any],
        *,
        extractor: Extractor | None = None,
        llm: Any = None,
        chunking: ChunkingConfig | None = None,
        batch_size: int = 64,
    ) -> IngestReport:
        """Extend the graph with documents; passages with unchanged text are skipped.

        :func:`kgpath.ingest.ingest_documents` on :attr:`graph` (keyword arguments as
        :meth:`from_documents`): existing nodes keep their text, so their vectors stay
        valid, and gain provenance; the new nodes are embedded (their search text) by the
        next search, like any node without a vector. Returns the
        :class:`~kgpath.ingest.IngestReport`.
        """
        return ingest_documents(self.graph, documents, extractor=extractor, llm=llm,
                                chunking=chunking, batch_size=batch_size)

    async def aadd_documents(
        self,
        documents: Iterable[Any],
        *,
        extractor: Extractor | None = None,
        llm: Any = None,
        chunking: ChunkingConfig | None = None,
        batch_size: int = 64,
    ) -> IngestReport:
        """Async :meth:`add_documents` (the extractor's ``aextract``)."""
        return await aingest_documents(self.graph, documents, extractor=extractor, llm=llm,
                                       chunking=chunking, batch_size=batch_size)


def _index_class(cls: type[DocumentLifecycle]) -> type[GraphIndex]:
    """The mixin's ``cls`` is always :class:`~kgpath.index.GraphIndex` or a subclass of it."""
    return cast("type[GraphIndex]", cls)
