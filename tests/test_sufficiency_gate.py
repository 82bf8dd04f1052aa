"""The core sufficiency gate against hand-computed Eq. 7-9 values."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from kgpath import ConfigError, HashingEmbedder
from kgpath.policies import SufficiencyGate, SufficiencyGateConfig


def test_given_scores_hand_computed() -> None:
    # Eq. 7: p_i = (s_i - min + eps) / sum -> (0.81, 0.01, 0.01) / 0.83
    d = SufficiencyGate().decide("q", ["a", "b", "c"], [0.9, 0.1, 0.1])
    p = np.array([0.81, 0.01, 0.01]) / 0.83
    assert d.score_source == "given"
    assert d.n_eff == pytest.approx(1.0 / float((p ** 2).sum()))
    assert d.state == "resolved" and not d.use_fallback


def test_flat_scores_unresolved() -> None:
    d = SufficiencyGate().decide("q", ["a", "b", "c"], [0.5, 0.5, 0.5])
    assert d.n_eff == pytest.approx(3.0)
    assert d.use_fallback


class _Fixed:
    """Embedder whose query is e0 and whose passages are given rows (cosines known)."""

    dim = 2

    def __init__(self, rows: list[list[float]]) -> None:
        self.rows = np.asarray(rows, dtype=np.float32)
        self.calls = 0

    def embed_queries(self, texts):  # type: ignore[no-untyped-def]
        return np.array([[1.0, 0.0]], dtype=np.float32)

    def embed_passages(self, texts):  # type: ignore[no-untyped-def]
        self.calls += 1
        return self.rows[: len(texts)]

    async def aembed_queries(self, texts):  # type: ignore[no-untyped-def]
        return self.embed_queries(texts)

    async def aembed_passages(self, texts):  # type: ignore[no-untyped-def]
        return self.embed_passages(texts)


def test_unscored_list_is_scored_by_the_embedder() -> None:
    emb = _Fixed([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])  # cosines 1, 0, 0
    gate = SufficiencyGate(embedder=emb)
    d = gate.decide("q", ["a", "b", "c"], [None, None, None])
    assert d.score_source == "embedder" and emb.calls == 1
    assert d.scores == (1.0, 0.0, 0.0)
    assert d.state == "resolved"
    assert asyncio.run(gate.adecide("q", ["a", "b", "c"])) == d


def test_insufficient_policy_keeps_literal_behaviour() -> None:
    gate = SufficiencyGate(SufficiencyGateConfig(score_missing="insufficient"),
                           embedder=HashingEmbedder())
    d = gate.decide("q", ["a", "b"])
    assert d.score_source == "none" and d.n_eff is None and d.use_fallback


def test_combine_append_replace_and_marks() -> None:
    gate = SufficiencyGate(SufficiencyGateConfig(fallback_k=2))
    d = gate.decide("q", ["a", "b", "c"], [0.5, 0.5, 0.5])
    merged = gate.combine(["a", "b"], ["b", "x", "y"], d, key=str)
    assert [i for i, _ in merged] == ["a", "b", "x"]
    assert merged[0][1]["gate_action"] == "fallback_appended"
    assert merged[2][1]["gate_source"] == "fallback" and merged[2][1]["gate_p"] is None
    assert merged[0][1]["gate_p"] == pytest.approx(1 / 3)
    rep = SufficiencyGate(SufficiencyGateConfig(mode="replace"))
    assert [i for i, _ in rep.combine(["a"], ["x"], d, key=str)] == ["x"]
    kept = gate.combine(["a"], None, d, key=str)
    assert kept[0][1]["gate_action"] == "no_fallback_configured"


@pytest.mark.parametrize("kwargs, name", [
    ({"gamma": 0}, "gamma"), ({"epsilon": float("nan")}, "epsilon"), ({"top_k": 0}, "top_k"),
    ({"mode": "merge"}, "mode"), ({"fallback_k": 0}, "fallback_k"),
    ({"score_missing": "x"}, "score_missing"),
])
def test_bad_config_names_the_value(kwargs: dict, name: str) -> None:
    with pytest.raises(ConfigError, match=name):
        SufficiencyGateConfig(**kwargs)


def test_length_mismatch_raises() -> None:
    with pytest.raises(ConfigError, match="2 scores for 3 texts"):
        SufficiencyGate().decide("q", ["a", "b", "c"], [0.1, 0.2])
