"""Settings of schema-guided retrieval (:class:`SchemaRetrieverConfig`).

The pattern fixes no numbers; every default here is kgpath's and documented on its field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from kgpath.errors import ConfigError, short

__all__ = ["SchemaRetrieverConfig", "TypeMode"]

TypeMode = Literal["filter", "boost", "off"]


@dataclass(frozen=True, kw_only=True)
class SchemaRetrieverConfig:
    """Schema-guided retrieval settings. The pattern fixes no numbers; defaults are ours.

    Attributes
    ----------
    k
        Nodes retrieved per sub-question (default 5).
    k_triples
        Triples (edges incident to the retrieved nodes) per sub-question (default 5).
    k_passages
        Provenance passages per sub-question (default 3).
    type_mode
        ``"filter"`` (default; the pattern's "filter ... before scoring": a candidate must
        satisfy every category - node type, relation, attribute - the sub-question
        constrains), ``"boost"`` (add ``β · t(v)``) or ``"off"``.
    boost
        ``β``: score bonus for a full type match in boost mode (default 0.1, about the spread
        of cosine scores among the top nodes of a small e5 index).
    empty_filter
        When the filter leaves no candidate: ``"boost"`` (default; fall back to boosting, and
        record it) or ``"empty"`` (return nothing for that sub-question).
    mode, alpha
        Base score: ``"vector"`` (default), ``"bm25"`` or ``"hybrid"`` with weight ``alpha``
        (0.7) on the vector score, as in :meth:`GraphIndex.score_candidates`.
    max_sub_questions
        Cap on sub-questions for the built-in decomposer (default 4).
    max_concurrency
        Sub-questions retrieved at once (threads or tasks; default 4).
    route_top_communities
        With a hierarchy: communities a sub-question is routed to (default 3).
    route_min_nodes
        Route only when the graph has at least this many base nodes (default 5000); smaller
        graphs are searched whole.
    include_layer_nodes
        Whether keyword/community layer nodes may be retrieved as evidence (default False).
    """

    k: int = 5
    k_triples: int = 5
    k_passages: int = 3
    type_mode: TypeMode = "filter"
    boost: float = 0.1
    empty_filter: Literal["boost", "empty"] = "boost"
    mode: Literal["vector", "bm25", "hybrid"] = "vector"
    alpha: float = 0.7
    max_sub_questions: int = 4
    max_concurrency: int = 4
    route_top_communities: int = 3
    route_min_nodes: int = 5000
    include_layer_nodes: bool = False

    def __post_init__(self) -> None:
        for name in ("k", "max_sub_questions", "max_concurrency", "route_top_communities"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"{name} must be an int >= 1, got {short(v)}")
        for name in ("k_triples", "k_passages", "route_min_nodes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ConfigError(f"{name} must be an int >= 0, got {short(v)}")
        if self.type_mode not in ("filter", "boost", "off"):
            raise ConfigError(
                f"type_mode must be 'filter', 'boost' or 'off', got {short(self.type_mode)}"
            )
        if isinstance(self.boost, bool) or not isinstance(self.boost, (int, float)) or (
            not np.isfinite(self.boost) or self.boost < 0
        ):
            raise ConfigError(f"boost must be a finite number >= 0, got {short(self.boost)}")
        if self.empty_filter not in ("boost", "empty"):
            raise ConfigError(
                f"empty_filter must be 'boost' or 'empty', got {short(self.empty_filter)}"
            )
        if self.mode not in ("vector", "bm25", "hybrid"):
            raise ConfigError(f"mode must be 'vector', 'bm25' or 'hybrid', got {short(self.mode)}")
        if not isinstance(self.alpha, (int, float)) or not 0.0 <= self.alpha <= 1.0:
            raise ConfigError(f"alpha must be in [0, 1], got {short(self.alpha)}")
