"""The five kgpath methods as LangChain retrievers; each only names its method.

Construction and per-call options, ``k``, ``output`` and the document metadata are those
of :class:`~langchain_kgpath._base.KgpathRetriever`; the methods themselves live in the
core (``kgpath.methods``). Per-call options beyond config fields: PCR ``anchor`` /
``anchor_name``; C2RAG and schema-guided ``plan``; traversal ``algorithm``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from langchain_core.documents import Document

from kgpath.errors import NodeNotFoundError
from langchain_kgpath._base import KgpathRetriever, as_kgpath_embedder, as_kgpath_llm

__all__ = [
    "C2RAGRetriever",
    "KGTraversalRetriever",
    "PathConstrainedRetriever",
    "PathRAGRetriever",
    "SchemaGuidedRetriever",
]


class PathConstrainedRetriever(KgpathRetriever):
    """Path-Constrained Retrieval (Oladokun 2025): top-``k`` nodes reachable from an anchor.

    ``anchor`` (node id) or ``anchor_name`` set the default anchor; a call giving either
    replaces both (so ``anchor=None`` per call asks for the most query-similar node).

    Examples
    --------
    >>> from kgpath import HashingEmbedder, KnowledgeGraph
    >>> g = KnowledgeGraph.from_triples([("a", "to", "b"), ("b", "to", "c"), ("x", "to", "y")])
    >>> r = PathConstrainedRetriever.from_graph(g, embedding=HashingEmbedder(), anchor="a")
    >>> sorted(d.id for d in r.invoke("c"))
    ['a', 'b', 'c']
    """

    method: ClassVar[str] = "pcr"
    exclusive_call_args: ClassVar[tuple[frozenset[str], ...]] = (
        frozenset({"anchor", "anchor_name"}),
    )

    def _check_defaults(self) -> None:
        """Fail at construction on an anchor the graph lacks (``unknown_anchor="error"``)."""
        anchor, name = self._defaults.get("anchor"), self._defaults.get("anchor_name")
        if self.core.config.unknown_anchor != "error":
            return
        g = self.core.graph
        if anchor is not None and anchor not in g:
            raise NodeNotFoundError(f"unknown anchor id {anchor!r}", key=anchor)
        if anchor is None and name is not None and not g.find_by_name(name):
            raise NodeNotFoundError(f"no node named {name!r}", key=name)


class PathRAGRetriever(KgpathRetriever):
    """PathRAG (Chen et al. 2025): relational paths ranked by Eq. 4 reliability."""

    method: ClassVar[str] = "pathrag"


class C2RAGRetriever(KgpathRetriever):
    """C2RAG: constraint-checked retrieval with the N_eff sufficiency check (Eq. 7-10)."""

    method: ClassVar[str] = "c2rag"


class SchemaGuidedRetriever(KgpathRetriever):
    """Schema-guided retrieval (Balic 2026); without ``schema`` one is derived from the graph."""

    method: ClassVar[str] = "schema"


class KGTraversalRetriever(KgpathRetriever):
    """The seven semantic-chunk-graph traversals; a graph without chunks gets a chunk graph.

    Examples
    --------
    >>> from kgpath import HashingEmbedder
    >>> r = KGTraversalRetriever.from_texts(
    ...     ["Bees make honey. Honey is sweet.", "Hives house bees. Hives are boxes."],
    ...     embedding=HashingEmbedder(64), k=1)
    >>> [d.metadata["kgpath_kind"] for d in r.invoke("What do bees make?")]
    ['passage']
    """

    method: ClassVar[str] = "traversal"

    def _check_defaults(self) -> None:
        """Fail at construction on an unknown default ``algorithm``."""
        if self._defaults.get("algorithm") is not None:
            from kgpath.methods.traversal import check_algorithm

            check_algorithm(self._defaults["algorithm"])

    @classmethod
    def from_documents(
        cls,
        documents: Sequence[Document],
        *,
        embedding: Any = None,
        llm: Any = None,
        graph_config: Any = None,
        cache_dir: str | None = None,
        **kwargs: Any,
    ) -> KGTraversalRetriever:
        """Build the chunk graph from LangChain documents, then the retriever over it.

        A document's id is ``doc.id`` (else ``doc-<i>``), its title ``metadata["title"]``;
        ``llm`` (if given) extracts themes and guides ``llm_guided_traversal``.
        """
        from kgpath.build.chunk_graph import ChunkGraphBuilder, SourceDocument, split_sentences
        from kgpath.embeddings import default_embedder

        src = [
            SourceDocument(d.id or f"doc-{i}", str(d.metadata.get("title", "")),
                           tuple(split_sentences(d.page_content)), dict(d.metadata))
            for i, d in enumerate(documents)
        ]
        emb = as_kgpath_embedder(embedding) or default_embedder()
        graph = ChunkGraphBuilder(emb, config=graph_config, llm=as_kgpath_llm(llm),
                                  cache_dir=cache_dir).build(src)
        return cls(graph=graph, embedding=emb, llm=llm, **kwargs)

    @classmethod
    def from_texts(cls, texts: Sequence[str], **kwargs: Any) -> KGTraversalRetriever:
        """:meth:`from_documents` for plain strings (ids ``doc-0``, ``doc-1``, ...)."""
        return cls.from_documents([Document(page_content=t) for t in texts], **kwargs)
