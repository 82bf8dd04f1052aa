"""LangChain adapters for kgpath graph-constrained retrieval.

Each method module (``retrievers`` for PCR, ``pathrag``, ``c2rag``, ``schema``,
``traversal``) delegates to the framework-free ``kgpath`` core and returns
:class:`~langchain_core.documents.Document` objects carrying the method's trace in
``metadata``. Add one import line and one ``__all__`` line per exported name.
"""

from langchain_kgpath.pathrag import (
    PATHRAG_CHAT_PROMPT,
    PathOrderCompressor,
    PathRAGRetriever,
    format_paths,
)
from langchain_kgpath.retrievers import PathConstrainedRetriever, as_kgpath_embedder

__version__ = "0.1.0"

__all__ = [
    "PATHRAG_CHAT_PROMPT",
    "PathConstrainedRetriever",
    "PathOrderCompressor",
    "PathRAGRetriever",
    "__version__",
    "as_kgpath_embedder",
    "format_paths",
]
