"""LlamaIndex retrievers for kgpath graph-constrained retrieval.

Each retriever delegates to the framework-free ``kgpath`` core and returns ``NodeWithScore``
objects whose metadata carries the method's trace (see ``_convert.py``).

To add an adapter: one import line below and one ``__all__`` entry (keep both sorted).
"""

from llama_index.retrievers.kgpath._convert import KgpathQueryBundle
from llama_index.retrievers.kgpath.base import PathConstrainedRetriever
from llama_index.retrievers.kgpath.c2rag import (
    C2RAG_EVIDENCE_PROMPT,
    C2RAG_PLANNER_PROMPT,
    C2RAGRetriever,
    SufficiencyPostprocessor,
)
from llama_index.retrievers.kgpath.pathrag import (
    PATHRAG_KEYWORD_TEMPLATE,
    PATHRAG_QA_TEMPLATE,
    PathOrderPostprocessor,
    PathRAGRetriever,
    pathrag_query_engine,
)
from llama_index.retrievers.kgpath.property_graph import (
    PathRAGSubRetriever,
    PCRSubRetriever,
    knowledge_graph_from_property_graph_store,
    knowledge_graph_to_property_graph_store,
)
from llama_index.retrievers.kgpath.schema import (
    SchemaDecomposeQueryTransform,
    SchemaGuidedRetriever,
    SchemaSubQuestionRetriever,
    graph_from_schema_llm_output,
    schema_to_llamaindex_kwargs,
)
from llama_index.retrievers.kgpath.traversal import KGTraversalRetriever

__all__ = [
    "C2RAG_EVIDENCE_PROMPT",
    "C2RAG_PLANNER_PROMPT",
    "C2RAGRetriever",
    "KGTraversalRetriever",
    "KgpathQueryBundle",
    "PATHRAG_KEYWORD_TEMPLATE",
    "PATHRAG_QA_TEMPLATE",
    "PCRSubRetriever",
    "PathConstrainedRetriever",
    "PathOrderPostprocessor",
    "PathRAGRetriever",
    "PathRAGSubRetriever",
    "SchemaDecomposeQueryTransform",
    "SchemaGuidedRetriever",
    "SchemaSubQuestionRetriever",
    "SufficiencyPostprocessor",
    "graph_from_schema_llm_output",
    "knowledge_graph_from_property_graph_store",
    "knowledge_graph_to_property_graph_store",
    "pathrag_query_engine",
    "schema_to_llamaindex_kwargs",
]
