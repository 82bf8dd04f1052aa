"""LlamaIndex retrievers for kgpath graph-constrained retrieval.

Each retriever delegates to the framework-free ``kgpath`` core and returns ``NodeWithScore``
objects whose metadata carries the method's trace (see ``_convert.py``).

To add an adapter: one import line below and one ``__all__`` entry (keep both sorted).
"""

from llama_index.retrievers.kgpath._convert import KgpathQueryBundle
from llama_index.retrievers.kgpath.base import PathConstrainedRetriever
from llama_index.retrievers.kgpath.pathrag import (
    PATHRAG_KEYWORD_TEMPLATE,
    PATHRAG_QA_TEMPLATE,
    PathOrderPostprocessor,
    PathRAGRetriever,
    pathrag_query_engine,
)

__all__ = [
    "KgpathQueryBundle",
    "PATHRAG_KEYWORD_TEMPLATE",
    "PATHRAG_QA_TEMPLATE",
    "PathConstrainedRetriever",
    "PathOrderPostprocessor",
    "PathRAGRetriever",
    "pathrag_query_engine",
]
