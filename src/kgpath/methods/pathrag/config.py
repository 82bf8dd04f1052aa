"""PathRAG configuration: :class:`PathRAGConfig` (paper defaults) and the ``PathRAG-lt`` preset.

Defaults follow section 5.1 and Figure 3 of the paper (``N = 40``, ``K = 15``, ``α = 0.8``,
``θ = 0.05``); :data:`PATHRAG_LT` is the lightweight preset of section 5.5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from kgpath.errors import ConfigError
from kgpath.methods.pathrag.prompt import PathOrdering, get_ordering

__all__ = ["PATHRAG_LT", "NodeMatch", "PathDirection", "PathRAGConfig"]

PathDirection = Literal["directed", "undirected"]
NodeMatch = Literal["name", "text"]
_DIRECTIONS = ("directed", "undirected")


@dataclass(frozen=True, kw_only=True)
class PathRAGConfig:
    """PathRAG hyperparameters; defaults follow the paper (section 5.1, Figure 3).

    Attributes
    ----------
    num_nodes
        ``N``, nodes retrieved in section 4.1 (paper: 40). Must be at least 2.
    top_k
        ``K``, paths kept for the prompt (paper: 15). When fewer candidate paths exist,
        all of them are returned (``trace["pool_size"] < K``); this is not an error.
    alpha
        ``α``, decay rate of Eq. (2), in ``(0, 1]`` (paper: 0.8; 1.0 disables the decay).
    theta
        ``θ``, early-stopping threshold of Eq. (3), ``> 0`` (paper: 0.05).
    paths_per_pair
        How many of the most reliable paths of each ordered pair enter the candidate pool
        (section 4.2 keeps "the most reliable relational paths"; default 1).
    direction
        ``"directed"`` follows edges forward, as the paper's notation ``N(v,·)`` does;
        ``"undirected"`` lets resource flow both ways (the authors' released code builds an
        undirected graph). In undirected mode a path and its exact reverse are one
        candidate: only the more reliable orientation is kept.
    max_hops
        Optional hard cap on path length. ``None`` (paper) relies on Eq. (3) alone; the
        authors' code enumerates paths of at most 3 hops.
    ordering
        Prompt policy: ``"ascending"`` (Eq. 6, default), ``"descending"``, ``"random"``,
        ``"hop_first"``, ``"flat"`` (section 5.4, Appendix D), or a
        :class:`PathOrdering` instance.
    seed
        Seed for the random parts of the ``random``, ``hop_first`` and ``flat`` policies.
    token_budget
        Optional cap on the prompt's token count (tiktoken ``encoding``); the least
        reliable paths are dropped first until the prompt fits.
    encoding
        tiktoken encoding for ``token_budget`` (offline: ``cl100k_base``, ``o200k_base``).
    node_match
        What keywords are matched against in section 4.1: ``"name"`` embeds node
        identifiers as the paper does; ``"text"`` reuses the index's embeddings of the
        node texts (no extra embedding pass).
    """

    num_nodes: int = 40
    top_k: int = 15
    alpha: float = 0.8
    theta: float = 0.05
    paths_per_pair: int = 1
    direction: PathDirection = "directed"
    max_hops: int | None = None
    ordering: str | PathOrdering = "ascending"
    seed: int = 0
    token_budget: int | None = None
    encoding: str = "cl100k_base"
    node_match: NodeMatch = "name"

    def __post_init__(self) -> None:
        _check_int(self.num_nodes, "num_nodes", 2)
        _check_int(self.top_k, "top_k", 1)
        _check_int(self.paths_per_pair, "paths_per_pair", 1)
        if (
            isinstance(self.alpha, bool)
            or not isinstance(self.alpha, (int, float))
            or not (0.0 < float(self.alpha) <= 1.0)
        ):
            raise ConfigError(
                f"alpha (decay rate α of Eq. 2) must be in (0, 1], got {self.alpha!r}"
            )
        if (
            isinstance(self.theta, bool)
            or not isinstance(self.theta, (int, float))
            or not math.isfinite(float(self.theta))
            or float(self.theta) <= 0.0
        ):
            raise ConfigError(
                f"theta (pruning threshold θ of Eq. 3) must be a finite number > 0, "
                f"got {self.theta!r}"
            )
        if self.direction not in _DIRECTIONS:
            raise ConfigError(f"direction must be one of {_DIRECTIONS}, got {self.direction!r}")
        if self.max_hops is not None:
            _check_int(self.max_hops, "max_hops", 1)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ConfigError(f"seed must be an int, got {self.seed!r}")
        if self.token_budget is not None:
            _check_int(self.token_budget, "token_budget", 1)
        if not isinstance(self.encoding, str) or not self.encoding:
            raise ConfigError(f"encoding must be a tiktoken encoding name, got {self.encoding!r}")
        if self.node_match not in ("name", "text"):
            raise ConfigError(f"node_match must be 'name' or 'text', got {self.node_match!r}")
        get_ordering(self.ordering)  # validates the name

    @classmethod
    def lite(cls, **overrides: Any) -> PathRAGConfig:
        """Return the ``PathRAG-lt`` preset of section 5.5: ``N = 20``, ``K = 5``."""
        return cls(**{"num_nodes": 20, "top_k": 5, **overrides})


def _check_int(value: object, name: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ConfigError(f"{name} must be an int >= {minimum}, got {value!r}")


#: The lightweight preset of section 5.5 (``N = 20``, ``K = 5``).
PATHRAG_LT = PathRAGConfig.lite()
