"""The five kgpath retrievers for LlamaIndex: each only names its method.

Everything else (models, ``similarity_top_k``, ``output``, options, per-call bundles,
conversion, prompts) is :class:`~._base.KgpathRetriever`'s; the method's own options are
its core config fields (see :mod:`kgpath.facade`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.retrievers.kgpath._base import (
    KgpathRetriever,
    to_kgpath_embedder,
    to_kgpath_llm,
)
from llama_index.retrievers.kgpath.prompts import PROMPT_ATTRS

from kgpath.ingest.chunk_graph import chunk_graph_from_documents

__all__ = ["C2RAGRetriever", "GraphAugmentedRetriever", "KGTraversalRetriever",
           "KgpathRetriever", "PathConstrainedRetriever", "PathRAGRetriever",
           "SchemaGuidedRetriever"]


class PathConstrainedRetriever(KgpathRetriever):
    """Path-Constrained Retrieval (Eq. 1 reachability, Eq. 2 or hybrid scoring).

    Passages: hit order, then each hit's provenance. Options: ``anchor``/``anchor_name``
    (default anchor; without one PCR anchors at the most similar node) and any
    :class:`kgpath.PCRConfig` field. A bundle's precomputed ``embedding`` is searched with.

    Examples
    --------
    >>> from kgpath import HashingEmbedder, KnowledgeGraph
    >>> g = KnowledgeGraph.from_triples([("a", "to", "b"), ("x", "to", "y")])
    >>> r = PathConstrainedRetriever.from_graph(g, embed_model=HashingEmbedder(), anchor="a",
    ...                                         output="native")
    >>> sorted(n.node.node_id for n in r.retrieve("b"))
    ['a', 'b']
    """

    method = "pcr"


class PathRAGRetriever(KgpathRetriever):
    """PathRAG: relational paths by Eq. 4 reliability; passages follow the paths' provenance.

    ``llm`` extracts keywords (section 4.1); without one the offline extractor is used.
    Put :class:`~.postprocessors.PathOrderPostprocessor` after it for the Eq. 6 prompt
    order (or use :func:`~.postprocessors.pathrag_query_engine`).
    """

    method = "pathrag"
    prompt_attrs = PROMPT_ATTRS["pathrag"]


class C2RAGRetriever(KgpathRetriever):
    """C2RAG: constraint-checked retrieval with the N_eff sufficiency check (Eq. 7-10).

    Passages and triples ranked by global score (Appendix B); the trace carries each
    item's constraint, state, N_eff and bindings. ``llm`` plans; without one the LLM-free
    plan is used.
    """

    method = "c2rag"
    prompt_attrs = PROMPT_ATTRS["c2rag"]


class SchemaGuidedRetriever(KgpathRetriever):
    """Schema-guided retrieval: schema-aware decomposition, typed retrieval, merged evidence.

    ``schema=`` a :class:`kgpath.ingest.schema.Schema`; without one a schema is derived
    from the graph's node types and relation labels (weaker: no descriptions or aliases).
    """

    method = "schema"
    prompt_attrs = PROMPT_ATTRS["schema"]


class GraphAugmentedRetriever(KgpathRetriever):
    """Dense passage search expanded along the graph (a kgpath extension, not a paper).

    The entities of the top dense passages and of the question link to passages that name
    them; a passage is ranked by its best two-passage chain (see
    :mod:`kgpath.methods.augmented` for the fusion rule and its constants).
    """

    method = "augmented"

class KGTraversalRetriever(KgpathRetriever):
    """One of the seven semantic chunk-graph traversals (``algorithm=``, default the core's).

    A graph without chunk nodes is turned into a chunk graph over its passages first.
    Sentences are ranked in extraction order (the walk order is the ranking).
    """

    method = "traversal"
    prompt_attrs = PROMPT_ATTRS["traversal"]

    @classmethod
    def from_documents(cls, documents: Sequence[Any], *, embed_model: Any = None,
                       llm: Any = None, graph_config: Any = None, cache_dir: str | None = None,
                       **kwargs: Any) -> KGTraversalRetriever:
        """Build the chunk graph from LlamaIndex documents (or strings), then the retriever.

        A document's id is its ``node_id``, its title ``metadata["title"]`` when present;
        ``llm`` (if given) also extracts the document themes.
        """
        kg_llm = to_kgpath_llm(llm)
        graph, emb = chunk_graph_from_documents(
            documents, embedder=to_kgpath_embedder(embed_model), llm=kg_llm,
            graph_config=graph_config, cache_dir=cache_dir)
        return cls(graph, embed_model=emb, llm=kg_llm, **kwargs)
