"""PCR's ``score=`` variants are strategy objects chosen by name, with hand-computed scores.

One tiny graph (Marie Curie -born_in-> Warsaw, -worked_at-> Sorbonne) and hand-chosen
vectors, so every score below is computed by hand: cosine of unit vectors in 2-D.
Each name of :data:`SCORES` must give the same ranking and scores as its strategy object,
and the scores written here (the ones PCR gave before the strategies existed).
"""

from __future__ import annotations

import pytest

from kgpath import ConfigError, KnowledgeGraph
from kgpath.methods.pcr import (
    SCORES,
    MixedScore,
    NodeScore,
    PathConstrainedRetriever,
    PathScore,
    PCRConfig,
    ScoreStrategy,
    TemplateScore,
    score_strategy,
)

Q = "where was she born"
VECS = {
    Q: [1.0, 0.0],
    "Marie Curie": [0.0, 1.0],                       # node 0.0
    "Warsaw": [0.0, 1.0],                            # node 0.0
    "Sorbonne": [0.6, 0.8],                          # node 0.6
    "Marie Curie born in Warsaw": [0.8, 0.6],        # path 0.8
    "Marie Curie worked at Sorbonne": [0.0, 1.0],    # path 0.0
    "Marie Curie born in something": [0.8, 0.6],     # template 0.8
    "Marie Curie worked at something": [0.0, 1.0],   # template 0.0
}

# (ids, scores) by hand, k = 3, anchor "mc" included:
HAND = {
    # Eq. (2): Sorbonne 0.6; ties 0.0 in BFS order (mc, wa)
    "node": (["so", "mc", "wa"], [0.6, 0.0, 0.0]),
    # path cosine: Warsaw 0.8; ties 0.0 in BFS order (mc's own path is its name: 0.0)
    "path": (["wa", "mc", "so"], [0.8, 0.0, 0.0]),
    # 0.7·path + 0.3·node: wa 0.56, so 0.3·0.6 = 0.18, mc 0
    "mixed": (["wa", "so", "mc"], [0.56, 0.18, 0.0]),
    # template cosine + 0.1 per step naming a query word ("born") + 0.6 · mean endpoint
    # node score: born_in 0.8 + 0.1 + 0.6·0.0 = 0.9; worked_at 0.0 + 0 + 0.6·0.6 = 0.36;
    # the root template "Marie Curie": 0.0 + 0.6·0.0 = 0
    "template": (["wa", "so", "mc"], [0.9, 0.36, 0.0]),
}


@pytest.fixture
def pcr(table_embedder) -> PathConstrainedRetriever:
    g = KnowledgeGraph()
    for nid, name in {"mc": "Marie Curie", "wa": "Warsaw", "so": "Sorbonne"}.items():
        g.add_node(nid, name=name)
    g.add_edge("mc", "wa", relation="born_in")
    g.add_edge("mc", "so", relation="worked_at")
    return PathConstrainedRetriever(g, embedder=table_embedder(VECS))


def test_the_table_names_each_strategy():
    assert {n: type(s) for n, s in SCORES.items()} == {
        "node": NodeScore, "path": PathScore, "mixed": MixedScore, "template": TemplateScore}
    for name, s in SCORES.items():
        assert s.name == name and score_strategy(name) is s and score_strategy(s) is s
    assert [n for n, s in SCORES.items() if not s.embeds_texts] == ["node"]


@pytest.mark.parametrize("name", sorted(HAND))
def test_each_name_gives_the_hand_computed_scores_and_equals_its_object(pcr, name):
    ids, scores = HAND[name]
    # the template numbers are the whole-chain text scorer's (template_scorer="text")
    by_name = pcr.retrieve(Q, anchor="mc", k=3, score=name, template_scorer="text")
    by_object = pcr.retrieve(Q, anchor="mc", k=3, score=type(SCORES[name])(),
                             template_scorer="text")
    for res in (by_name, by_object):
        assert res.ids == ids
        assert [round(h.score, 4) for h in res.hits] == scores
    assert [(h.score, h.hops, h.path, h.node_score, h.path_score) for h in by_object.hits] == [
        (h.score, h.hops, h.path, h.node_score, h.path_score) for h in by_name.hits]
    assert by_object.trace == by_name.trace
    assert by_name.trace.get("score") == (None if name == "node" else name)


def test_a_strategy_object_is_accepted_by_the_config_and_a_bad_name_is_not():
    assert PCRConfig(score=MixedScore()).score.name == "mixed"
    with pytest.raises(ConfigError, match="score must be one of .*'template'.*'paths'"):
        PCRConfig(score="paths")
    with pytest.raises(ConfigError, match="score"):
        PCRConfig(score=None)  # type: ignore[arg-type]


def test_a_custom_strategy_plugs_in_through_the_one_hook(pcr):
    class Reversed(NodeScore):
        name = "reversed"

        def combine(self, path, node, cfg):  # unused path; rank nodes by -score
            return -node

    class ByNegatedNode(ScoreStrategy):
        name = "negated"
        embeds_texts = False

        def rank(self, b, region, anchors, query, qv, cfg):
            from kgpath.methods.pcr.scoring import search_region

            return search_region(b, region, query, qv, cfg, Reversed())

    res = pcr.retrieve(Q, anchor="mc", k=3, score=ByNegatedNode())
    assert res.ids == ["mc", "wa", "so"]  # -0.0, -0.0 (BFS order), -0.6
    assert [round(h.score, 4) for h in res.hits] == [0.0, 0.0, -0.6]
