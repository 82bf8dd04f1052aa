"""Graph-augmented passage retrieval (kgpath extension).

A base retriever, re-ranked by two-passage chains through the entity graph. See
:mod:`kgpath.methods.augmented.fusion` for the rule; :class:`CypherAugmented` runs the same
fusion over a graph stored in a Cypher database.
"""

from kgpath.methods.augmented.config import EXPANSIONS, LINK_RULES, SCORERS, AugmentedConfig
from kgpath.methods.augmented.cypher import CypherAugmented
from kgpath.methods.augmented.fusion import (
    Link,
    PassageEntityIndex,
    chain_scores,
    seed_scores,
)
from kgpath.methods.augmented.result import AugmentedHit, AugmentedResult
from kgpath.methods.augmented.retriever import (
    BaseRetriever,
    GraphAugmentedRetriever,
    evidence_base,
)

__all__ = [
    "EXPANSIONS",
    "LINK_RULES",
    "SCORERS",
    "AugmentedConfig",
    "AugmentedHit",
    "AugmentedResult",
    "BaseRetriever",
    "CypherAugmented",
    "GraphAugmentedRetriever",
    "Link",
    "PassageEntityIndex",
    "chain_scores",
    "evidence_base",
    "seed_scores",
]
