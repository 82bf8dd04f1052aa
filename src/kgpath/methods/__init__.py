"""One module per paper: pcr, pathrag, c2rag, schema, traversal."""

from kgpath.methods.pathrag import (
    PATHRAG_LT,
    PathOrdering,
    PathRAGConfig,
    PathRAGPath,
    PathRAGResult,
    PathRAGRetriever,
    path_reliability,
    propagate_resources,
    prune_paths,
    textual_path,
)
from kgpath.methods.pcr import (
    PathConstrainedRetriever,
    PCRConfig,
    PCRHit,
    PCRResult,
    constrained_search,
    format_path,
    reachable_candidates,
)

__all__ = [
    "PATHRAG_LT",
    "PathOrdering",
    "PathRAGConfig",
    "PathRAGPath",
    "PathRAGResult",
    "PathRAGRetriever",
    "path_reliability",
    "propagate_resources",
    "prune_paths",
    "textual_path",
    "PCRConfig",
    "PCRHit",
    "PCRResult",
    "PathConstrainedRetriever",
    "constrained_search",
    "format_path",
    "reachable_candidates",
]
