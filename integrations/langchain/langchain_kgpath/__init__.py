"""LangChain adapters for kgpath graph retrieval: one base, six retrievers, policies, prompts.

Every retriever (:class:`PathConstrainedRetriever`, :class:`PathRAGRetriever`,
:class:`C2RAGRetriever`, :class:`SchemaGuidedRetriever`, :class:`KGTraversalRetriever`,
:class:`GraphAugmentedRetriever`) is
a :class:`KgpathRetriever`: built with ``from_graph(graph, embedding=, llm=, k=,
output=, **method_options)``, it returns one ``Document`` per evidence item of the core's
evidence contract (:mod:`kgpath.evidence`), source passages with their text by default,
with the same ``kgpath_*`` metadata as the LlamaIndex adapter.

:class:`KgpathEmbeddings` is kgpath's embedder (default the bundled offline model) as a
LangChain ``Embeddings``, sharing passage vectors with the kgpath retrievers.
:class:`LangChainEmbedder` and :class:`LangChainLLM` wrap LangChain models for the core; an
``Embeddings`` passed straight to the core is wrapped through this distribution's
``kgpath.embedder_adapters`` entry point (:func:`langchain_kgpath.embeddings.wrap_embeddings`).

:class:`KgpathGraphStore` is a kgpath :class:`~kgpath.GraphIndex` as a LangChain
``VectorStore`` (add / delete by document id, LangChain's indexing API, save / load), whose
``as_retriever(method=...)`` gives any of the retrievers above over its live index.
"""

from langchain_kgpath._base import (
    KgpathRetriever,
    as_kgpath_embedder,
    as_kgpath_llm,
    evidence_to_document,
)
from langchain_kgpath.compressors import (
    PathOrderCompressor,
    SufficiencyCompressor,
    SufficiencyFallbackRetriever,
)
from langchain_kgpath.embeddings import KgpathEmbeddings, LangChainEmbedder
from langchain_kgpath.graphs import (
    knowledge_graph_from_entity_graph,
    knowledge_graph_from_graph_documents,
)
from langchain_kgpath.llms import LangChainLLM
from langchain_kgpath.prompts import (
    C2RAG_CHAT_PROMPT,
    PATHRAG_CHAT_PROMPT,
    answer_prompt,
    decompose_runnable,
    format_documents,
    format_evidence_blocks,
    format_paths,
    merge_sub_question_documents,
)
from langchain_kgpath.retrievers import (
    C2RAGRetriever,
    GraphAugmentedRetriever,
    KGTraversalRetriever,
    PathConstrainedRetriever,
    PathRAGRetriever,
    SchemaGuidedRetriever,
)
from langchain_kgpath.store import KgpathGraphStore

__version__ = "0.1.0"

__all__ = [
    "C2RAG_CHAT_PROMPT",
    "C2RAGRetriever",
    "GraphAugmentedRetriever",
    "KGTraversalRetriever",
    "KgpathEmbeddings",
    "KgpathGraphStore",
    "KgpathRetriever",
    "LangChainEmbedder",
    "LangChainLLM",
    "PATHRAG_CHAT_PROMPT",
    "PathConstrainedRetriever",
    "PathOrderCompressor",
    "PathRAGRetriever",
    "SchemaGuidedRetriever",
    "SufficiencyCompressor",
    "SufficiencyFallbackRetriever",
    "__version__",
    "answer_prompt",
    "as_kgpath_embedder",
    "as_kgpath_llm",
    "decompose_runnable",
    "evidence_to_document",
    "format_documents",
    "format_evidence_blocks",
    "format_paths",
    "knowledge_graph_from_entity_graph",
    "knowledge_graph_from_graph_documents",
    "merge_sub_question_documents",
]
