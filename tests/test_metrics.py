from __future__ import annotations

import pytest

from kgpath import ConfigError
from kgpath.eval.metrics import (
    graph_distance_penalty,
    multi_hop_consistency,
    precision_at_k,
    recall_at_k,
    relevance_at_k,
    structural_consistency,
)

R = ["a", "x", "b", "y", "c"]
G = ["a", "b", "z"]
DIST = {"anchor": 0, "a": 1, "b": 2, "c": 3}


def test_relevance_recall_precision_by_hand():
    assert relevance_at_k(R, G, 1) == 1.0          # 1 hit / min(1, 3)
    assert relevance_at_k(R, G, 3) == pytest.approx(2 / 3)
    assert relevance_at_k(R, G, 5) == pytest.approx(2 / 3)
    assert recall_at_k(R, G, 1) == pytest.approx(1 / 3)
    assert precision_at_k(R, G, 5) == pytest.approx(2 / 5)
    assert relevance_at_k(R, [], 5) == 0.0
    with pytest.raises(ConfigError):
        relevance_at_k(R, G, 0)


def test_structural_metrics_by_hand():
    # reachable: a(1), b(2), c(3); unreachable: x, y
    assert structural_consistency(R, DIST) == pytest.approx(3 / 5)
    mu, sigma = 2.0, (2 / 3) ** 0.5
    assert multi_hop_consistency(R, DIST) == pytest.approx(1 / (1 + sigma / mu))
    assert graph_distance_penalty(R, DIST) == pytest.approx((0.1 + 1 + 0.2 + 1 + 0.3) / 5)
    assert multi_hop_consistency(["anchor"], DIST) == 1.0
    assert multi_hop_consistency(["x"], DIST) == 0.0
    assert structural_consistency([], DIST) == 0.0
