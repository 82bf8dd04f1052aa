"""Retrieval metrics, including the PCR paper's (section 4.3).

Definitions (``R`` = retrieved ids in rank order, ``G`` = relevant ids, ``a`` = anchor):

Relevance@k
    ``|R[:k] ∩ G| / min(k, |G|)`` — the fraction of the relevant nodes that *could* fit in
    the top ``k`` that actually do. This is the definition used by the PCR authors'
    evaluation code (it equals recall@k when ``|G| <= k`` and precision@k when
    ``|G| >= k``), so our numbers are comparable with their Table 1. 0 when ``G`` is empty.
Structural consistency
    ``|{v ∈ R : v reachable from a}| / |R|`` (reachability along out-edges by default, the
    anchor itself counts as reachable). Structural inconsistency is its complement.
Multi-hop consistency
    ``1 / (1 + σ/μ)`` over the shortest-path lengths ``d(a, v)`` of the *reachable*
    retrieved nodes (population std σ, mean μ); 1.0 when μ = 0; 0 when none is reachable.
Graph distance penalty
    mean over ``R`` of ``w · d(a, v)`` for reachable ``v`` and ``1.0`` for unreachable ``v``,
    with ``w = 0.1`` (paper Appendix A.2). Lower is better.
Recall@k / Precision@k
    ``|R[:k] ∩ G| / |G|`` and ``|R[:k] ∩ G| / k``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kgpath.errors import ConfigError

__all__ = [
    "relevance_at_k",
    "recall_at_k",
    "precision_at_k",
    "structural_consistency",
    "multi_hop_consistency",
    "graph_distance_penalty",
]


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise ConfigError(f"k must be a positive int, got {k!r}")


def relevance_at_k(retrieved: Sequence[str], relevant: Sequence[str], k: int) -> float:
    """``|R[:k] ∩ G| / min(k, |G|)`` (the PCR authors' Relevance@k)."""
    _check_k(k)
    gold = set(relevant)
    if not gold:
        return 0.0
    hits = sum(1 for r in retrieved[:k] if r in gold)
    return hits / min(k, len(gold))


def recall_at_k(retrieved: Sequence[str], relevant: Sequence[str], k: int) -> float:
    """``|R[:k] ∩ G| / |G|`` (0 when ``G`` is empty)."""
    _check_k(k)
    gold = set(relevant)
    if not gold:
        return 0.0
    return len(set(retrieved[:k]) & gold) / len(gold)


def precision_at_k(retrieved: Sequence[str], relevant: Sequence[str], k: int) -> float:
    """``|R[:k] ∩ G| / k``."""
    _check_k(k)
    gold = set(relevant)
    return len(set(retrieved[:k]) & gold) / k


def structural_consistency(retrieved: Sequence[str], distances: Mapping[str, int]) -> float:
    """Fraction of retrieved ids present in ``distances`` (= reachable from the anchor).

    ``distances`` maps every reachable node id (the anchor included, at 0) to its hop
    distance, e.g. from :meth:`KnowledgeGraph.bfs`. An empty retrieval scores 0.
    """
    if not retrieved:
        return 0.0
    return sum(1 for r in retrieved if r in distances) / len(retrieved)


def multi_hop_consistency(retrieved: Sequence[str], distances: Mapping[str, int]) -> float:
    """``1 / (1 + σ/μ)`` of the hop distances of the reachable retrieved nodes."""
    d = np.array([distances[r] for r in retrieved if r in distances], dtype=np.float64)
    if d.size == 0:
        return 0.0
    mu = float(d.mean())
    if mu == 0.0:
        return 1.0
    return 1.0 / (1.0 + float(d.std()) / mu)


def graph_distance_penalty(
    retrieved: Sequence[str], distances: Mapping[str, int], weight: float = 0.1
) -> float:
    """Mean of ``weight · d(a, v)`` (reachable) or ``1.0`` (unreachable) over ``R``."""
    if not retrieved:
        return 0.0
    total = sum(weight * distances[r] if r in distances else 1.0 for r in retrieved)
    return total / len(retrieved)
