"""Relation-chain matching that follows the question (issue 25), against hand-computed truth.

The tiny film KB: Ann wrote F1 and acted in F2; D1 directed F1, D2 directed F2. Hand-chosen
3-d vectors make every cosine 0, 0.6, 0.8 or 1, so each chain's score is written out below.
"""

from __future__ import annotations

import numpy as np
import pytest

from kgpath import ConfigError, KnowledgeGraph
from kgpath.methods.pcr import PathConstrainedRetriever, PCRConfig
from kgpath.methods.pcr.chainmatch import QuestionParts, question_parts, relation_texts
from kgpath.methods.pcr.templates import beam_templates, relation_index, relation_templates

Q = "who directed the films written by Ann"
E1, E2, E3 = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]
VECS = {
    Q: [0.6, 0.8, 0.0],                      # question: directed 0.6, written 0.8
    "who directed the films": E1,            # the focus: "directed by" only
    "written by": E2,                        # anchor context = the relation "written by"
    "directed by": E1, "starred actors": E3,
}
CFG = dict(max_depth=2, direction="both", include_anchor=False, score="template",
           template_scorer="aligned", chain_examples=0, chain_focus=1.0, chain_anchor=1.0,
           chain_relations=1.0, chain_lexical=0.1, chain_length=0.025)


@pytest.fixture
def films() -> KnowledgeGraph:
    g = KnowledgeGraph()
    for n in ("ann", "f1", "f2", "d1", "d2"):
        g.add_node(n, name=n.capitalize())
    g.add_edge("f1", "ann", relation="written_by")
    g.add_edge("f2", "ann", relation="starred_actors")
    g.add_edge("f1", "d1", relation="directed_by")
    g.add_edge("f2", "d2", relation="directed_by")
    g.vectors.set(np.array([E3] * 5, np.float32))  # node scores: all 0 (no ties to break)
    return g


def test_question_parts():
    assert question_parts(Q, "Ann") == QuestionParts("who directed the films", "written by")
    # the wh-word ends the question: two words before it, never across the anchor
    assert question_parts("the films starred by Bo were in which genres", "Bo") == \
        QuestionParts("in which genres", "the films starred by")
    assert question_parts("the film Bo starred who", "Bo") == QuestionParts(
        "starred who", "the film")
    # too few words before the anchor: the words after it
    assert question_parts("who was Bo written by", "Bo") == QuestionParts("who was",
                                                                          "was written by")
    # whole words only, case ignored; no wh-word, no anchor: empty parts
    assert question_parts("describe ART starred", "Art").anchor_context == "describe starred"
    assert question_parts("describe it", "Zed") == QuestionParts("", "")


def test_relation_texts_name_the_most_frequent_objects():
    g = KnowledgeGraph.from_triples([("f1", "has_genre", "Drama"), ("f2", "has_genre", "Drama"),
                                     ("f3", "has_genre", "Comedy"), ("f4", "has_genre", "War"),
                                     ("f1", "directed_by", "Di")])
    assert relation_texts(g, 0) == ["has genre", "directed by"]
    # Drama (2 edges), then Comedy and War (1 each) in node order
    assert relation_texts(g, 2) == ["has genre: Drama, Comedy", "directed by: Di"]
    # walked backwards, a step reaches the subjects: one edge each, node order
    assert relation_texts(g, 2, side="in") == ["has genre: f1, f2", "directed by: f1"]


def test_aligned_chain_scores_hand_computed(films, table_embedder):
    pcr = PathConstrainedRetriever(films, embedder=table_embedder(VECS))
    res = pcr.retrieve(Q, anchor="ann", **CFG)
    # score = focus·last + anchor·first + mean question·steps + 0.1·lexical + 0.025·len
    # written, directed -> D1: 1 + 1 + (0.8 + 0.6)/2 + 0.1·2 + 0.05 = 2.95
    # written -> F1:           0 + 1 + 0.8 + 0.1·1 + 0.025         = 1.925
    # starred, directed -> D2: 1 + 0 + (0 + 0.6)/2 + 0.1·1 + 0.05   = 1.45
    # starred -> F2:           0 + 0 + 0 + 0 + 0.025                = 0.025
    assert res.ids == ["d1", "f1", "d2", "f2"]
    assert [h.score for h in res.hits] == pytest.approx([2.95, 1.925, 1.45, 0.025])
    assert res.hits[0].path == ("ann", "f1", "d1")
    # the last step against the focus decides: without it, D2's chain cannot pass F1's
    flat = pcr.retrieve(Q, anchor="ann", **{**CFG, "chain_focus": 0.0})
    assert [h.score for h in flat.hits] == pytest.approx([1.95, 1.925, 0.45, 0.025])
    assert PCRConfig().template_scorer == "aligned"
    with pytest.raises(ConfigError, match="template_scorer"):
        PCRConfig(template_scorer="llm")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="chain_focus"):
        PCRConfig(chain_focus=-1.0)


def test_chain_scores_direction_and_length_prior():
    from collections import Counter
    from types import SimpleNamespace

    from kgpath.methods.pcr.chainmatch import StepTable, chain_scores

    # two relations; focus per step id 2·code + backwards, anchor and question per code
    table = StepTable(focus=np.array([0.1, 0.2, 0.3, 0.4]), anchor=np.array([1.0, 0.5]),
                      question=np.array([0.2, 0.6]), query_stems=Counter(),
                      label_stems=[(), ()], usable=np.zeros(2, bool))
    cfg = SimpleNamespace(chain_focus=1.0, chain_anchor=1.0, chain_relations=1.0,
                          chain_lexical=0.0, chain_length=0.025, chain_length_open=-0.025,
                          max_depth=2)
    chains = [[0], [0, 3], [0, 2]]  # r0 forwards; then r1 backwards / forwards
    # [0]: 0.1 + 1.0 + 0.2 + 0.025; [0, 3]: 0.4 + 1.0 + (0.2 + 0.6)/2 + 0.05;
    # [0, 2]: 0.3 + 1.0 + 0.4 + 0.05 (the last step's direction picks the focus row)
    assert chain_scores(table, chains, cfg) == pytest.approx([1.325, 1.85, 1.75])
    # no max_depth: the open prior, -0.025 a step
    cfg.max_depth = None
    assert chain_scores(table, chains, cfg) == pytest.approx([1.275, 1.75, 1.65])
    # a prefix takes its best focus over all steps: [3, 0] -> max(0.4, 0.1)
    assert chain_scores(table, [[3, 0]], cfg, prefix=True) == pytest.approx(
        [0.4 + 0.5 + 0.4 - 0.05])


def test_relation_index_steps_and_expansions(films):
    idx = relation_index(films)
    ann, f1 = films.index_of("ann"), films.index_of("f1")
    front = np.asarray([f1], np.int64)
    code = {label: i for i, label in enumerate(idx.labels)}
    # F1: written_by and directed_by out, nothing in
    assert sorted(idx.steps(front, "both")) == sorted(
        [(code["written_by"], True), (code["directed_by"], True)])
    assert idx.steps(front, "in") == []
    assert idx.expand(front, code["directed_by"], True).tolist() == [films.index_of("d1")]
    assert idx.expand(np.asarray([ann], np.int64), code["written_by"], False).tolist() == [f1]


def test_beam_keeps_the_best_chains_and_scores_only_when_it_bounds(films):
    ann = films.index_of("ann")
    calls = []

    def score(chains):
        calls.append(len(chains))
        return [1.0 if chains_has(c, "starred_actors") else 0.0 for c in chains]

    idx = relation_index(films)

    def chains_has(c, label):  # step ids: 2·code + backwards
        return any(x // 2 == idx.labels.index(label) for x in c)

    full = relation_templates(films, ann, max_depth=2, direction="both")
    # two one-step chains; four two-step candidates (two lead back to Ann only: dropped)
    wide = beam_templates(films, ann, max_depth=2, direction="both", score=score, beam=4)
    assert calls == [] and [t.steps for t in wide] == [t.steps for t in full]
    narrow = beam_templates(films, ann, max_depth=2, direction="both", score=score, beam=1)
    # both lengths scored; at length 2 the tie (starred back to Ann, directed) goes to
    # enumeration order, and the chain back to Ann alone reaches nothing: skipped
    assert calls == [2, 2]
    assert [t.steps for t in narrow] == [(("starred_actors", False),),
                                         (("starred_actors", False), ("directed_by", True))]
    assert narrow[-1].endpoints.tolist() == [films.index_of("d2")]


def test_an_llm_picks_among_the_best_chains(films, table_embedder):
    from kgpath.llm import ScriptedLLM
    from kgpath.methods.pcr import TemplateScore

    llm = ScriptedLLM(["Chain 3."])
    pcr = PathConstrainedRetriever(films, embedder=table_embedder(VECS))
    res = pcr.retrieve(Q, anchor="ann", **{**CFG, "score": TemplateScore(llm, llm_chains=3)})
    # shown: the three best chains of the hand-computed order; the third (starred,
    # directed -> D2) is lifted above the best (2.95 + 1), the rest keep their scores
    prompt = llm.prompts[0]
    assert "Question: who directed the films written by Ann" in prompt
    assert "1. something written by Ann, something directed by something\n" in prompt
    assert "3. something starred actors Ann, something directed by something\n" in prompt
    assert "4." not in prompt
    assert res.ids == ["d2", "d1", "f1", "f2"]
    assert [h.score for h in res.hits] == pytest.approx([3.95, 2.95, 1.925, 0.025])
    # a reply without a chain number changes nothing
    mute = ScriptedLLM(["I cannot tell."])
    res = pcr.retrieve(Q, anchor="ann", **{**CFG, "score": TemplateScore(mute)})
    assert res.ids == ["d1", "f1", "d2", "f2"]
    with pytest.raises(ConfigError, match="llm_chains"):
        TemplateScore(llm, llm_chains=1)
