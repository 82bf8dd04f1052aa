"""One module per paper: pcr, pathrag, c2rag, schema, traversal."""

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
    "PCRConfig",
    "PCRHit",
    "PCRResult",
    "PathConstrainedRetriever",
    "constrained_search",
    "format_path",
    "reachable_candidates",
]
