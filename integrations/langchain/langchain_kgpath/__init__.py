"""LangChain adapters for kgpath graph-constrained retrieval.

Each method module (``retrievers`` for PCR, ``pathrag``, ``c2rag``, ``schema``,
``traversal``) delegates to the framework-free ``kgpath`` core and returns
:class:`~langchain_core.documents.Document` objects carrying the method's trace in
``metadata``. Add one import line and one ``__all__`` line per exported name.
"""

from langchain_kgpath._convert import as_kgpath_embedder, as_kgpath_llm
from langchain_kgpath.c2rag import (
    C2RAG_CHAT_PROMPT,
    C2RAGRetriever,
    SufficiencyCompressor,
    SufficiencyFallbackRetriever,
    format_evidence_blocks,
)
from langchain_kgpath.graphs import (
    knowledge_graph_from_entity_graph,
    knowledge_graph_from_graph_documents,
)
from langchain_kgpath.pathrag import (
    PATHRAG_CHAT_PROMPT,
    PathOrderCompressor,
    PathRAGRetriever,
    format_paths,
)
from langchain_kgpath.retrievers import PathConstrainedRetriever
from langchain_kgpath.schema import (
    SchemaGuidedRetriever,
    decompose_runnable,
    merge_sub_question_documents,
)
from langchain_kgpath.traversal import KGTraversalRetriever, traversal_result_to_documents

__version__ = "0.1.0"

__all__ = [
    "C2RAG_CHAT_PROMPT",
    "C2RAGRetriever",
    "KGTraversalRetriever",
    "PATHRAG_CHAT_PROMPT",
    "PathConstrainedRetriever",
    "PathOrderCompressor",
    "PathRAGRetriever",
    "SchemaGuidedRetriever",
    "SufficiencyCompressor",
    "SufficiencyFallbackRetriever",
    "__version__",
    "as_kgpath_embedder",
    "as_kgpath_llm",
    "decompose_runnable",
    "format_evidence_blocks",
    "format_paths",
    "knowledge_graph_from_entity_graph",
    "knowledge_graph_from_graph_documents",
    "merge_sub_question_documents",
    "traversal_result_to_documents",
]
