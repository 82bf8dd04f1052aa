"""Search structures: FAISS vector index, BM25, hybrid scoring, and GraphIndex."""

from kgpath.index.graph_index import GraphIndex, check_query
from kgpath.index.hybrid import hybrid_scores, normalize_bm25
from kgpath.search.bm25 import BM25Index, tokenize
from kgpath.search.vector import VectorIndex, top_k

__all__ = [
    "BM25Index",
    "GraphIndex",
    "VectorIndex",
    "check_query",
    "hybrid_scores",
    "normalize_bm25",
    "tokenize",
    "top_k",
]
