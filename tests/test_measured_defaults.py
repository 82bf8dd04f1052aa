"""Issue 25: defaults are the measured best for passages; the papers' settings are presets."""

from __future__ import annotations

from kgpath.methods.augmented import AugmentedConfig
from kgpath.methods.pathrag import PathRAGConfig


def test_pathrag_defaults_are_the_passage_preset_and_paper_is_one_call_away():
    d, fp, paper = PathRAGConfig(), PathRAGConfig.for_passages(), PathRAGConfig.paper()
    assert d == fp
    assert (d.node_query, d.node_match, d.exclude_edge_types, d.unit_order) == (
        "joined", "text", ("cooccurrence",), "question")
    assert (paper.node_query, paper.node_match, paper.exclude_edge_types,
            paper.unit_order) == ("per_keyword", "name", (), "relation_count")
    assert (paper.num_nodes, paper.top_k, paper.alpha, paper.theta) == (40, 15, 0.8, 0.05)
    assert PathRAGConfig.paper(top_k=3).top_k == 3
    eq4 = PathRAGConfig.literal_eq4()
    assert (eq4.node_query, eq4.node_match, eq4.reliability) == (
        "per_keyword", "name", "literal_eq4")


def test_augmented_propagation_constants():
    c = AugmentedConfig(scorer="propagation")
    assert (c.damping, c.seed_sharpness, c.entity_seed_weight, c.lead_weight,
            c.relation_weight) == (0.7, 1.5, 0.2, 3.0, 1.0)
