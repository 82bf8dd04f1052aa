"""Search primitives that know no graph: BM25, exact inner-product top-k, compact re-scoring.

The construction package (keyword layers) and the index both use them, so they sit below both.
"""

from kgpath.search.bm25 import BM25Index, tokenize
from kgpath.search.vector import VectorIndex, top_k

__all__ = ["BM25Index", "VectorIndex", "tokenize", "top_k"]
