"""The six kgpath methods as LangChain retrievers; each only names its method.

Construction and per-call options, ``k``, ``output`` and the document metadata are those
of :class:`~langchain_kgpath._base.KgpathRetriever`; the methods themselves live in the
core (``kgpath.methods``), and each method's options are its registered spec's
(:mod:`kgpath.methods.registry`: config fields, ``init_args``, ``call_args``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from kgpath.ingest.chunk_graph import chunk_graph_from_documents
from langchain_kgpath._base import KgpathRetriever, as_kgpath_embedder, as_kgpath_llm

__all__ = ["C2RAGRetriever", "GraphAugmentedRetriever", "KGTraversalRetriever",
           "PathConstrainedRetriever", "PathRAGRetriever", "SchemaGuidedRetriever"]


class PathConstrainedRetriever(KgpathRetriever):
    """Path-Constrained Retrieval (Oladokun 2025): top-``k`` nodes reachable from an anchor.

    ``anchor`` (node id) or ``anchor_name`` set the default anchor (an unknown one fails at
    construction); a call giving either replaces both (so ``anchor=None`` per call asks for
    the most query-similar node).

    Examples
    --------
    >>> from kgpath import HashingEmbedder, KnowledgeGraph
    >>> g = KnowledgeGraph.from_triples([("a", "to", "b"), ("b", "to", "c"), ("x", "to", "y")])
    >>> r = PathConstrainedRetriever.from_graph(g, embedding=HashingEmbedder(), anchor="a")
    >>> sorted(d.id for d in r.invoke("c"))  # defaults: one hop, either direction
    ['a', 'b']
    >>> from kgpath import PCRConfig
    >>> paper = PathConstrainedRetriever.from_graph(g, embedding=HashingEmbedder(), anchor="a",
    ...                                             config=PCRConfig.paper())
    >>> sorted(d.id for d in paper.invoke("c"))  # the paper's: out-edges, any depth
    ['a', 'b', 'c']
    """

    method: ClassVar[str] = "pcr"


class PathRAGRetriever(KgpathRetriever):
    """PathRAG (Chen et al. 2025): relational paths ranked by Eq. 4 reliability."""

    method: ClassVar[str] = "pathrag"


class C2RAGRetriever(KgpathRetriever):
    """C2RAG: constraint-checked retrieval with the N_eff sufficiency check (Eq. 7-10)."""

    method: ClassVar[str] = "c2rag"


class SchemaGuidedRetriever(KgpathRetriever):
    """Schema-guided retrieval (Balic 2026); without ``schema`` one is derived from the graph."""

    method: ClassVar[str] = "schema"


class GraphAugmentedRetriever(KgpathRetriever):
    """Dense passage search expanded along the graph (a kgpath extension, not a paper).

    The entities of the top dense passages and of the question link to passages that name
    them; a passage is ranked by its best two-passage chain (see
    :mod:`kgpath.methods.augmented` for the fusion rule and its constants).
    """

    method: ClassVar[str] = "augmented"


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

    @classmethod
    def from_documents(cls, documents: Sequence[Any], *, embedding: Any = None, llm: Any = None,
                       graph_config: Any = None, cache_dir: str | None = None,
                       **kwargs: Any) -> KGTraversalRetriever:
        """Build the chunk graph from LangChain documents (or strings), then the retriever.

        A document's id is ``doc.id`` (else ``doc-<i>``), its title ``metadata["title"]``;
        ``llm`` (if given) extracts themes and guides ``llm_guided_traversal``.
        """
        graph, emb = chunk_graph_from_documents(
            documents, embedder=as_kgpath_embedder(embedding), llm=as_kgpath_llm(llm),
            graph_config=graph_config, cache_dir=cache_dir)
        return cls(graph=graph, embedding=emb, llm=llm, **kwargs)
