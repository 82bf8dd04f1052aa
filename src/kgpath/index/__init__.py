"""The index over a graph: node vectors, BM25, hybrid scoring, names, and documents in.

:class:`GraphIndex` is built over a graph or from documents (:meth:`GraphIndex.from_documents`,
:meth:`GraphIndex.add_documents`); :func:`find_by_name` looks nodes up by name.
"""

from kgpath.index.graph_index import GraphIndex, check_query
from kgpath.index.hybrid import hybrid_scores, normalize_bm25
from kgpath.index.linking import find_by_name
from kgpath.search.bm25 import BM25Index, tokenize
from kgpath.search.vector import VectorIndex, top_k

__all__ = [
    "BM25Index",
    "GraphIndex",
    "VectorIndex",
    "check_query",
    "find_by_name",
    "hybrid_scores",
    "normalize_bm25",
    "tokenize",
    "top_k",
]
