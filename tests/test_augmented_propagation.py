"""Graph propagation (personalised PageRank) against hand-computed stationary vectors."""

from __future__ import annotations

import numpy as np
import pytest

from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.methods.augmented import AugmentedConfig, GraphAugmentedRetriever
from kgpath.methods.augmented.fusion import PassageEntityIndex
from kgpath.methods.augmented.propagation import (
    entity_seeds,
    passage_seeds,
    personalized_pagerank,
    propagation_graph,
    transition,
)
from tests.test_augmented import FixedEmbedder, _graph


def _star():
    return transition(4, np.array([0, 1, 1]), np.array([1, 2, 3]), np.ones(3))


def test_star_by_hand():
    # x = 0.5 r + 0.5 W x, r = e0. x1 = (x0 + x2 + x3) / 2, x2 = x3 = x1 / 6,
    # x0 = 1/2 + x1 / 6  =>  x1 = 0.6 x0, x0 = 5/9, x1 = 1/3, x2 = x3 = 1/18.
    x = personalized_pagerank(_star(), np.array([1.0, 0, 0, 0]), 0.5)
    np.testing.assert_allclose(x, [5 / 9, 1 / 3, 1 / 18, 1 / 18], atol=1e-9)


def test_weighted_path_by_hand():
    # 0 -1- 1 -3- 2, r = e0, d = 0.5. From 1: 1/4 to 0, 3/4 to 2.
    # x2 = 3/8 x1, x1 = x0/2 + 3/16 x1 => x1 = 8/13 x0; x0 = 1/2 + x1/8 => x0 = 13/24.
    g = transition(3, np.array([0, 1]), np.array([1, 2]), np.array([1.0, 3.0]))
    x = personalized_pagerank(g, np.array([2.0, 0, 0]), 0.5)  # r is normalised
    np.testing.assert_allclose(x, [13 / 24, 1 / 3, 1 / 8], atol=1e-9)


def test_damping_zero_is_the_reset_and_isolated_node_keeps_its_mass():
    r = np.array([0.25, 0.25, 0.5, 0.0])
    np.testing.assert_allclose(personalized_pagerank(_star(), r, 0.0), r)
    lone = transition(3, np.array([0]), np.array([1]), np.ones(1))
    np.testing.assert_allclose(personalized_pagerank(lone, np.array([0, 0, 1.0]), 0.9),
                               [0, 0, 1.0], atol=1e-9)


def test_passage_entity_graph_is_the_star():
    # Three passages citing one entity X (and nothing else): the star with X at the centre.
    g = KnowledgeGraph()
    for p in ("p0", "p1", "p2"):
        g.add_passage(p, f"X in {p}.")
    g.add_node("X", name="X", provenance=("p0", "p1", "p2"))
    pg = propagation_graph(PassageEntityIndex(g, ["p0", "p1", "p2"]), lead_weight=5.0)
    assert (pg.n_passages, pg.n_nodes) == (3, 4)
    x = personalized_pagerank(pg, np.array([1.0, 0, 0, 0]), 0.5)
    np.testing.assert_allclose(x, [5 / 9, 1 / 18, 1 / 18, 1 / 3], atol=1e-9)


def test_lead_edge_weight_by_hand():
    # p names A first (lead, weight 3) then B (weight 1). r = e_p, d = 0.5:
    # xA = 3/8 xp, xB = 1/8 xp, xp = 1/2 + (xA + xB)/2 = 1/2 + xp/4 => xp = 2/3.
    g = KnowledgeGraph()
    g.add_passage("p", "A met B.")
    g.add_node("A", name="A", provenance=("p",))
    g.add_node("B", name="B", provenance=("p",))
    pg = propagation_graph(PassageEntityIndex(g, ["p"]), lead_weight=3.0)
    x = personalized_pagerank(pg, np.array([1.0, 0, 0]), 0.5)
    np.testing.assert_allclose(x, [2 / 3, 1 / 4, 1 / 12], atol=1e-9)


def test_relation_edges_join_entities():
    g = _graph()  # one relation edge: Kiss and Tell - Shirley Temple
    idx = PassageEntityIndex(g, list(g.passages))
    with_rel = propagation_graph(idx, relation_weight=1.0)
    without = propagation_graph(idx, relation_weight=0.0)
    assert with_rel.rows.size - without.rows.size == 2  # one edge, both directions


def test_passage_seeds_are_affine_invariant():
    s = np.array([0.9, 0.6, 0.5, -np.inf])
    a, b = passage_seeds(s, 1.5), passage_seeds(10 * s - 3, 1.5)
    np.testing.assert_allclose(a, b)
    assert a[3] == 0 and a.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(passage_seeds(np.array([0.4, 0.4]), 2.0), [0.5, 0.5])
    assert passage_seeds(np.array([-np.inf]), 1.0).tolist() == [0.0]


def test_entity_seeds_inverse_passage_frequency():
    g = _graph()
    idx = PassageEntityIndex(g, list(g.passages))
    temple, usa = g.index_of("Shirley Temple"), g.index_of("United States")
    got = entity_seeds(idx, [temple, usa], 0.5)  # |P| = 2 and 3: weights 1/2 : 1/3
    assert got[temple] == pytest.approx(0.3) and got[usa] == pytest.approx(0.2)
    assert entity_seeds(idx, [temple], 0.0) == {}


def test_bad_inputs_raise():
    with pytest.raises(ConfigError, match="damping"):
        personalized_pagerank(_star(), np.ones(4), 1.0)
    with pytest.raises(ConfigError, match="reset"):
        personalized_pagerank(_star(), np.ones(3), 0.5)
    with pytest.raises(ConfigError, match="positive mass"):
        personalized_pagerank(_star(), np.zeros(4), 0.5)
    with pytest.raises(ConfigError, match="scorer"):
        AugmentedConfig(scorer="pagerank")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="damping"):
        AugmentedConfig(damping=1.0)
    with pytest.raises(ConfigError, match="lead_weight"):
        AugmentedConfig(lead_weight=0.0)


def test_retriever_propagation_lifts_the_bridge_passage():
    # Dense order: film 0.9, other1 0.6, other2 0.5, temple 0.3, usa 0.2. temple shares
    # Shirley Temple with film (the top seed); usa shares only a hub with other1/other2.
    r = GraphAugmentedRetriever(_graph(), embedder=FixedEmbedder(), config=AugmentedConfig(
        scorer="propagation", use_query_entities=False, seed_sharpness=3.0))
    res = r.retrieve("Who did the star of Kiss and Tell become?")
    ids = res.passage_ids
    assert ids[0] == "film" and ids.index("temple") < ids.index("usa")
    assert all(h.score > 0 for h in res.hits)
    ev = res.evidence()
    assert [e.id for e in ev] == ids and ev[0].trace["query_similarity"] == pytest.approx(
        0.9, abs=1e-6)


def test_retriever_propagation_question_entity_seed():
    cfg = AugmentedConfig(scorer="propagation", entity_seed_weight=5.0, link_rule="shared")
    r = GraphAugmentedRetriever(_graph(), embedder=FixedEmbedder(), config=cfg)
    res = r.retrieve("What did Nobody2 write?")
    assert res.passage_ids[0] == "other2"
    assert res.hits[0].via == ("Nobody2",) and res.hits[0].question_entity
