"""C2RAGResult.evidence: the evidence contract, ranked by a global score (Appendix B).

Every expected order and score below is computed by hand from the blocks written out in
each test; the global score of a textual passage is Eq. 7 over its block's Eq. 12 scores:
``p_c = (z_c - min z + ε) / Σ (z - min z + ε)`` with the default ε = 0.01.
"""

from __future__ import annotations

import pytest

from kgpath import HashingEmbedder, KnowledgeGraph
from kgpath.errors import ConfigError
from kgpath.evidence import Evidence as ContractEvidence
from kgpath.methods.c2rag import (
    BlockEvidence,
    C2RAGConfig,
    C2RAGResult,
    ConstraintCheckedRetriever,
    Evidence,
    EvidenceBlock,
    Plan,
)

PAPER = C2RAGConfig(rerank=None)  # the Appendix B global ranking, not re-ranked


def passage(pid: str, score: float, source: str = "textual", triple: str | None = None):
    return BlockEvidence("passage", pid, f"text of {pid}", score, source, triple)  # type: ignore[arg-type]


def graph() -> KnowledgeGraph:
    g = KnowledgeGraph.from_triples([("Ada", "born in", "London")])
    for pid in ("p1", "p2", "p3", "p4", "p5"):
        g.add_passage(pid, f"text of {pid}", {"title": pid.upper()})
    return g


def result(*blocks: EvidenceBlock, g: KnowledgeGraph | None = None) -> C2RAGResult:
    return C2RAGResult(
        query="q", plan=Plan(constraints=()), hops=(), bindings={}, binding_cases={},
        blocks=blocks, config=PAPER, graph=g if g is not None else graph(),
    )


# Block A, resolved: candidate "Ada born in London" (p = 0.6) cites p1 and p5; a triple
# without provenance (p = 0.3).
A = EvidenceBlock(
    0, "Ada born in ?place", "resolved", 1.2, {"?place": ("London",)},
    (
        passage("p1", 0.6, "structural", "Ada born in London"),
        passage("p5", 0.6, "structural", "Ada born in London"),
        BlockEvidence("triple", "edge:3", "London capital of England", 0.3, "structural",
                      "London capital of England"),
    ),
    False,
)
# Block B, unresolved, Eq. 12 scores 0.50, 0.30, 0.10: shifted 0.41, 0.21, 0.01 (sum 0.63)
# -> p2 = 0.41/0.63, p1 = 0.21/0.63 (below A's 0.6: A's p1 kept), p3 = 0.01/0.63.
B = EvidenceBlock(
    1, "?place twinned with ?city", "unresolved", 2.9, {"?place": ("London",), "?city": ()},
    (passage("p2", 0.50), passage("p1", 0.30), passage("p3", 0.10)),
    True,
)
# Block C, unresolved, Eq. 12 scores -0.2, -0.5: shifted 0.31, 0.01 (sum 0.32)
# -> p4 = 0.96875, p3 = 0.03125 (beats B's 0.01/0.63: C's p3 kept).
C = EvidenceBlock(
    2, "?city located in ?country", "unresolved", 1.9, {"?city": (), "?country": ()},
    (passage("p4", -0.2), passage("p3", -0.5)),
    True,
)

EXPECTED = [
    ("p4", 0.96875),
    ("p2", 0.41 / 0.63),
    ("p1", 0.6),
    ("p5", 0.6),  # tie with p1: same block, in-block rank decides
    ("edge:3", 0.3),
    ("p3", 0.03125),
]


def test_global_order_dedup_and_scores() -> None:
    ev = result(A, B, C).evidence()
    assert [e.id for e in ev] == [i for i, _ in EXPECTED]
    assert [e.score for e in ev] == pytest.approx([s for _, s in EXPECTED])
    assert [e.rank for e in ev] == [1, 2, 3, 4, 5, 6]
    assert all(isinstance(e, ContractEvidence) and e.method == "c2rag" for e in ev)


def test_dedup_keeps_the_best_scoring_occurrence_and_its_trace() -> None:
    by_id = {e.id: e for e in result(A, B, C).evidence()}
    # p1: A (structural, 0.6) beats B (textual, 0.21/0.63)
    assert by_id["p1"].trace == {
        "constraint": "Ada born in ?place",
        "state": "resolved",
        "n_eff": 1.2,
        "bindings": ["?place=London"],
        "source": "structural",
        "triple": "Ada born in London",
        "passage_ids": ["p1"],
    }
    # p3: the later block C (0.03125) beats B (0.01/0.63)
    assert by_id["p3"].trace == {
        "constraint": "?city located in ?country",
        "state": "unresolved",
        "n_eff": 1.9,
        "bindings": [],
        "source": "textual",
        "passage_ids": ["p3"],
    }
    assert by_id["p3"].score == pytest.approx(0.03125)


def test_passage_text_metadata_and_triple_without_passage() -> None:
    by_id = {e.id: e for e in result(A, B, C).evidence()}
    p1 = by_id["p1"]
    assert (p1.kind, p1.text) == ("passage", "text of p1")
    meta = p1.metadata()
    assert meta["title"] == "P1" and meta["kgpath_rank"] == 3
    assert meta["kgpath_constraint"] == "Ada born in ?place"
    assert meta["kgpath_bindings"] == ["?place=London"]
    tri = by_id["edge:3"]
    assert (tri.kind, tri.text, tri.trace["passage_ids"]) == (
        "triple", "London capital of England", []
    )
    assert tri.source_metadata == {}


def test_k_cuts_the_global_ranking() -> None:
    res = result(A, B, C)
    assert [e.id for e in res.evidence(k=3)] == ["p4", "p2", "p1"]
    assert [e.id for e in res.evidence(output="native", k=1)] == ["p4"]


def test_native_holds_the_same_items_in_the_same_order() -> None:
    res = result(A, B, C)
    native = res.evidence(output="native")
    assert [(e.id, e.kind) for e in native] == [
        (i, "triple" if i.startswith("edge:") else "passage") for i, _ in EXPECTED
    ]
    assert native == res.evidence(output="passages")


def test_ties_across_blocks_keep_block_order_whatever_the_raw_scores() -> None:
    # One kept passage per block: Eq. 7 gives each 1.0, so block order decides even
    # though the second block's raw Eq. 12 score is higher.
    b1 = EvidenceBlock(0, "x r ?a", "unresolved", None, {}, (passage("p1", 0.1),), True)
    b2 = EvidenceBlock(1, "y r ?b", "unresolved", None, {}, (passage("p2", 0.9),), True)
    ev = result(b1, b2).evidence()
    assert [(e.id, e.score) for e in ev] == [("p1", 1.0), ("p2", 1.0)]


def test_global_scores_structural_keep_p_textual_get_eq7() -> None:
    res = result(A, B, C)
    assert res.global_scores(A) == [0.6, 0.6, 0.3]
    assert res.global_scores(B) == pytest.approx([0.41 / 0.63, 0.21 / 0.63, 0.01 / 0.63])


def test_block_evidence_untouched_and_ranked_evidence_unchanged() -> None:
    res = result(A, B, C)
    res.evidence()
    assert B.evidence[0].score == 0.50
    # round robin: rank 1 of each block, then rank 2, ..., first occurrence of an id kept
    assert [e.id for _, e in res.ranked_evidence()] == ["p1", "p2", "p4", "p5", "p3",
                                                        "edge:3"]


def test_without_graph_passages_have_no_metadata() -> None:
    res = C2RAGResult(
        query="q", plan=Plan(constraints=()), hops=(), bindings={}, binding_cases={},
        blocks=(A,), config=PAPER,
    )
    assert res.graph is None
    ev = res.evidence()
    assert [e.id for e in ev] == ["p1", "p5", "edge:3"]
    assert ev[0].source_metadata == {}


def test_empty_result_has_no_evidence() -> None:
    assert result().evidence() == []


@pytest.mark.parametrize("bad", ["nodes", "passage", "", None])
def test_bad_output_raises_config_error(bad: object) -> None:
    with pytest.raises(ConfigError, match="output must be one of"):
        result(A).evidence(output=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_bad_k_raises_config_error(bad: object) -> None:
    with pytest.raises(ConfigError, match="k must be a positive int"):
        result(A).evidence(k=bad)  # type: ignore[arg-type]


def test_evidence_alias_is_block_evidence() -> None:
    assert Evidence is BlockEvidence


def test_retriever_sets_graph_and_evidence_is_the_passage() -> None:
    g = KnowledgeGraph.from_triples(
        [("Ada", "born in", "London"), ("London", "capital of", "England")],
        passages={"p": "Ada was born in London."}, provenance=[["p"], ["p"]],
    )
    r = ConstraintCheckedRetriever(g, embedder=HashingEmbedder(), config=PAPER)
    res = r.retrieve("Where was Ada born?", plan={"constraints": [
        {"head": "Ada", "relation": "born in", "tail": "?place", "variants": []}]})
    assert res.graph is g
    # Ada has one neighbour edge: C_top = {Ada born in London}, p = 1, N_eff = 1, resolved.
    [ev] = res.evidence()
    assert (ev.id, ev.kind, ev.text, ev.score, ev.rank) == (
        "p", "passage", "Ada was born in London.", 1.0, 1
    )
    assert ev.trace["state"] == "resolved" and ev.trace["n_eff"] == 1.0
    assert ev.trace["bindings"] == ["?place=London"]
    assert ev.trace["source"] == "structural"
    assert ev.trace["triple"] == "Ada born in London"
