"""C2RAG equations against hand-computed values (Eq. 3, 4, 5, 7, 8, 9, 13, 14; Lemma A.1/A.2)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgpath import BackendError, ConfigError, KnowledgeGraph
from kgpath.methods.c2rag import (
    C2RAGConfig,
    Candidate,
    candidate_pool,
    effective_candidates,
    induced_entities,
    match_anchors,
    merge_bindings,
    normalize_scores,
    relation_alignment,
    sufficiency_state,
    token_coverage,
)

# ---------------------------------------------------------------- Eq. 3


def test_token_coverage_hand_values() -> None:
    assert token_coverage("Tower of London", "Tower of London") == 1.0
    assert token_coverage("Tower of London", "London") == pytest.approx(1 / 3)
    assert token_coverage("Tower of London", "Tower Bridge") == pytest.approx(1 / 3)
    # coverage is of the surface form: extra name tokens do not lower it
    assert token_coverage("London", "Tower of London") == 1.0
    # case and punctuation are ignored
    assert token_coverage("No Cross, No Crown", "no cross no crown") == 1.0
    assert token_coverage("", "anything") == 0.0
    assert token_coverage("Paris", "London") == 0.0


def _graph(names: list[str], edges: list[tuple[str, str, str]] = ()) -> KnowledgeGraph:  # type: ignore[assignment]
    g = KnowledgeGraph()
    for n in names:
        g.add_node(n, name=n)
    for h, r, t in edges:
        g.add_edge(h, t, relation=r)
    return g


def test_match_anchors_top_e_and_tie_break() -> None:
    g = _graph(["London Bridge", "Tower of London", "London", "Paris"])
    # surface "London": coverage 1 for three names; Jaccard prefers the exact name, then
    # the shorter names ("London Bridge" 1/2 beats "Tower of London" 1/3)
    got = match_anchors("London", g, top_e=3)
    assert [a.node_id for a in got] == ["London", "London Bridge", "Tower of London"]
    assert [a.coverage for a in got] == [1.0, 1.0, 1.0]
    assert [a.node_id for a in match_anchors("London", g, top_e=1)] == ["London"]
    # zero coverage never becomes an anchor
    assert match_anchors("Berlin", g, top_e=3) == []
    # index-based and scan-based matching agree
    index: dict[str, list[int]] = {}
    for i, n in enumerate(g.nodes):
        for t in set(n.name.lower().split()):
            index.setdefault(t, []).append(i)
    assert match_anchors("Tower of London", g, 3, token_index=index) == match_anchors(
        "Tower of London", g, 3
    )


# ---------------------------------------------------------------- Eq. 4 / Eq. 13


def test_candidate_pool_both_directions_each_edge_once() -> None:
    g = _graph(
        ["A", "B", "C", "D"],
        [("A", "r1", "B"), ("C", "r2", "A"), ("B", "r3", "D"), ("A", "loop", "A"),
         ("B", "r4", "A")],
    )
    pool = candidate_pool(g, ["A"])
    got = [(c.source, c.relation, c.target, c.anchor, c.entity) for c in pool]
    assert got == [
        ("A", "r1", "B", "A", "B"),
        ("A", "loop", "A", "A", "A"),
        ("C", "r2", "A", "A", "C"),
        ("B", "r4", "A", "A", "B"),
    ]
    # edge A->B joins two anchors: kept once, from the first anchor's side
    both = candidate_pool(g, ["A", "B"])
    assert sum(c.edge_index == 0 for c in both) == 1
    assert [c.text for c in both if c.anchor == "B"] == ["B r3 D"]
    # Eq. 13 reads the non-anchor end, ordered by rank, duplicates removed
    assert induced_entities(pool) == ("B", "A", "C")
    assert candidate_pool(g, []) == []


def test_candidate_pool_isolated_anchor_is_empty() -> None:
    g = _graph(["A", "B"])
    assert candidate_pool(g, ["A"]) == []


# ---------------------------------------------------------------- Eq. 5


def test_relation_alignment_is_max_cosine_over_variants() -> None:
    rel = np.array([[1, 0, 0], [0.6, 0.8, 0], [0, 0, 1]], dtype=np.float32)
    var = np.array([[1, 0, 0], [0, 1, 0]], dtype=np.float32)
    assert relation_alignment(rel, var) == pytest.approx([1.0, 0.8, 0.0])
    assert relation_alignment(np.zeros((0, 3)), var).shape == (0,)
    with pytest.raises(ConfigError, match="at least one relation variant"):
        relation_alignment(rel, np.zeros((0, 3)))


# ---------------------------------------------------------------- Eq. 7


def test_normalize_scores_hand_value() -> None:
    # z = [0.9, 0.3, 0.29], ε = 0.01 -> shifted [0.62, 0.02, 0.01] / 0.65
    p = normalize_scores([0.9, 0.3, 0.29], 0.01)
    assert p == pytest.approx([62 / 65, 2 / 65, 1 / 65])
    # shift invariance: adding a constant to every score changes nothing
    assert normalize_scores([10.9, 10.3, 10.29], 0.01) == pytest.approx(p)
    # ε sets the scale: a larger ε flattens the same scores
    assert normalize_scores([0.9, 0.3, 0.29], 1.0) == pytest.approx(
        np.array([1.61, 1.01, 1.0]) / 3.62
    )


def test_normalize_scores_equal_scores_are_uniform_and_single_is_point_mass() -> None:
    assert normalize_scores([0.4, 0.4, 0.4], 0.01) == pytest.approx([1 / 3] * 3)
    assert normalize_scores([-7.0], 0.01) == pytest.approx([1.0])
    assert normalize_scores([], 0.01).size == 0


def test_normalize_scores_rejects_bad_input() -> None:
    with pytest.raises(BackendError, match="finite"):
        normalize_scores([0.1, float("nan")], 0.01)
    with pytest.raises(ConfigError, match="epsilon"):
        normalize_scores([0.1, 0.2], 0.0)


# ---------------------------------------------------------------- Eq. 8 / Lemma A.1, A.2


def test_n_eff_point_mass_is_one() -> None:
    assert effective_candidates([1.0]) == 1.0
    assert effective_candidates([0.0, 1.0, 0.0]) == 1.0


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_n_eff_uniform_is_n(n: int) -> None:
    assert effective_candidates([1 / n] * n) == pytest.approx(n)


def test_n_eff_hand_values_and_figure5_weights() -> None:
    assert effective_candidates([0.5, 0.25, 0.25]) == pytest.approx(1 / 0.375)  # 8/3
    # Figure 5 prints N_eff 0.65 for [0.79, 0.12, 0.09]: that is Σp²; Eq. 8 gives 1.5466,
    # which is above γ = 1.5 (the figure's "Resolved" contradicts Eq. 8/9).
    p = [0.79, 0.12, 0.09]
    assert sum(x * x for x in p) == pytest.approx(0.6466)
    assert effective_candidates(p) == pytest.approx(1 / 0.6466)
    assert sufficiency_state(effective_candidates(p), 1.5) == "unresolved"
    # the second hop of Figure 5, [0.35, 0.33, 0.32], is 2.996 under Eq. 8 ("2.99")
    assert effective_candidates([0.35, 0.33, 0.32]) == pytest.approx(2.996, abs=1e-3)


def test_n_eff_rejects_non_distributions() -> None:
    with pytest.raises(ConfigError, match="empty"):
        effective_candidates([])
    with pytest.raises(ConfigError, match="sum to 1"):
        effective_candidates([0.5, 0.4])
    with pytest.raises(ConfigError, match=">= 0"):
        effective_candidates([1.5, -0.5])


distributions = st.lists(
    st.floats(min_value=0.0, max_value=1e3, allow_nan=False), min_size=1, max_size=12
).filter(lambda xs: sum(xs) > 1e-9)


@settings(max_examples=200, deadline=None)
@given(distributions)
def test_lemma_a1_range_and_a2_bound(weights: list[float]) -> None:
    p = np.asarray(weights) / sum(weights)
    n_eff = effective_candidates(p)
    # Lemma A.1: 1 <= N_eff <= n
    assert 1 - 1e-9 <= n_eff <= len(p) + 1e-9
    # Lemma A.2: p_max >= Σp² = 1/N_eff
    assert p.max() >= 1 / n_eff - 1e-12


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(min_value=-10, max_value=10, allow_nan=False), min_size=1, max_size=9),
    st.floats(min_value=1e-4, max_value=2.0),
    st.floats(min_value=1.0, max_value=9.0),
)
def test_prop_a3_resolved_implies_dominant_candidate(
    z: list[float], eps: float, gamma: float
) -> None:
    p = normalize_scores(z, eps)
    n_eff = effective_candidates(p)
    if sufficiency_state(n_eff, gamma) == "resolved":
        assert p.max() >= 1 / gamma - 1e-12


# ---------------------------------------------------------------- Eq. 9


def test_sufficiency_state_threshold_is_inclusive() -> None:
    assert sufficiency_state(1.5, 1.5) == "resolved"
    assert sufficiency_state(math.nextafter(1.5, 2), 1.5) == "unresolved"
    assert sufficiency_state(1.0, 1.5) == "resolved"
    assert sufficiency_state(None, 1.5) == "unresolved"
    # γ < 1 can never resolve (N_eff >= 1)
    assert sufficiency_state(1.0, 0.5) == "unresolved"


# ---------------------------------------------------------------- Eq. 14


def test_merge_bindings_intersection_union_single() -> None:
    assert merge_bindings([("a", "b", "c"), ("c", "b", "d")]) == (("b", "c"), "intersection")
    assert merge_bindings([("a", "b"), ("c",), ("b", "c")]) == (("a", "b", "c"), "union")
    assert merge_bindings([("x", "y", "x")]) == (("x", "y"), "single")
    assert merge_bindings([]) == ((), "empty")
    # three sets: intersection over all of them
    assert merge_bindings([("a", "b"), ("b", "a"), ("b",)]) == (("b",), "intersection")


def test_induced_entities_keeps_rank_order() -> None:
    cands = [
        Candidate(0, "q", "r", "x", "q r x", anchor="q", entity="x"),
        Candidate(1, "y", "r", "q", "y r q", anchor="q", entity="y"),
        Candidate(2, "q", "s", "x", "q s x", anchor="q", entity="x"),
    ]
    assert induced_entities(cands) == ("x", "y")


# ---------------------------------------------------------------- config


def test_config_defaults_follow_the_paper() -> None:
    c = C2RAGConfig()
    assert (c.m, c.top_e, c.top_r, c.k_s, c.k_t_pool, c.k_t) == (3, 3, 8, 3, 8, 3)
    # γ and ε default per scorer: with a reranker, the paper's γ = 1.5 (and ε = 0.01)
    r = c.resolve(reranker_given=True)
    assert (r.scorer, r.gamma, r.epsilon) == ("reranker", 1.5, 0.01)
    assert c.gamma is None and c.epsilon is None and c.scorer == "auto"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"m": 0}, "m must be a positive int"),
        ({"k_s": True}, "k_s must be a positive int"),
        ({"top_r": 2.5}, "top_r must be a positive int"),
        ({"gamma": 0.0}, "gamma must be > 0"),
        ({"gamma": -1.0}, "gamma must be > 0"),
        ({"gamma": float("inf")}, "gamma must be a finite number"),
        ({"epsilon": 0}, "epsilon must be > 0"),
        ({"k_t": 9, "k_t_pool": 8}, "k_t \\(9\\) must be <= k_t_pool \\(8\\)"),
        ({"binding": "all"}, "binding must be"),
        ({"recovery_scope": "near"}, "recovery_scope must be"),
        ({"on_invalid_plan": "ignore"}, "on_invalid_plan must be"),
        ({"rerank_input": "both"}, "rerank_input must be"),
    ],
)
def test_config_rejects_bad_values(kwargs: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        C2RAGConfig(**kwargs)


def test_config_gamma_below_one_warns_but_is_allowed() -> None:
    with pytest.warns(UserWarning, match="Lemma A.1"):
        c = C2RAGConfig(gamma=0.5)
    assert c.gamma == 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        C2RAGConfig(gamma=1.0)  # exactly 1 is fine (resolves single candidates)


# ---------------------------------------------------------------- check on any scored list


def test_check_sufficiency_on_arbitrary_scores() -> None:
    from kgpath.methods.c2rag import check_sufficiency

    res = check_sufficiency([0.29, 0.9, None, 0.3, 0.1, float("nan")])
    assert res.top == (1, 3, 0)  # the top K_s = 3 usable scores, best first
    assert res.probabilities == pytest.approx((62 / 65, 2 / 65, 1 / 65))
    assert res.n_eff == pytest.approx(4225 / 3849) and res.state == "resolved"
    assert res.probability_of(3) == pytest.approx(2 / 65) and res.probability_of(4) is None
    flat = check_sufficiency([0.5, 0.5, 0.5, 0.5], k_s=4)
    assert flat.n_eff == pytest.approx(4.0) and flat.state == "unresolved"
    empty = check_sufficiency([None, None])
    assert empty.state == "unresolved" and empty.n_eff is None and empty.top == ()
    assert check_sufficiency([0.1]).n_eff == 1.0
    with pytest.raises(ConfigError, match="k_s"):
        check_sufficiency([0.1], k_s=0)
    with pytest.raises(ConfigError, match="gamma"):
        check_sufficiency([0.1], gamma=0)
