"""Graph propagation as a passage re-ranker (kgpath.methods.augmented.rerank) and the
PCR / C2RAG defaults that use it."""

from __future__ import annotations

import pytest

from kgpath import ConfigError, HashingEmbedder, KnowledgeGraph
from kgpath.evidence import Evidence
from kgpath.methods.augmented.rerank import RERANK_K, propagation_rerank
from kgpath.methods.c2rag import C2RAGConfig
from kgpath.methods.pcr import PathConstrainedRetriever, PCRConfig


def star() -> KnowledgeGraph:
    """p0, p1, p2 all cite entity X; p3 cites Y only (X and Y unrelated)."""
    g = KnowledgeGraph()
    for p in ("p0", "p1", "p2", "p3"):
        g.add_passage(p, f"text of {p}.")
    g.add_node("X", name="Xavier", provenance=("p0", "p1", "p2"))
    g.add_node("Y", name="Yolanda", provenance=("p3",))
    return g


def item(pid: str, score: float, kind: str = "passage") -> Evidence:
    return Evidence(pid, f"text of {pid}.", score, kind, "c2rag",  # type: ignore[arg-type]
                    trace={"state": "resolved", "passage_ids": [pid]})


def test_seed_first_then_passages_sharing_its_entity_and_nothing_unconnected() -> None:
    g = star()
    out = propagation_rerank(g, "an unrelated question", [item("p1", 0.4)], "c2rag")
    # p1 seeds the walk; X spreads its mass to p0 and p2 equally (ties: passage order);
    # p3 shares no entity with p1, so it gets no mass and is left out
    assert [e.id for e in out] == ["p1", "p0", "p2"]
    assert out[0].score > out[1].score > 0
    assert out[1].score == pytest.approx(out[2].score)
    assert out[0].trace == {"state": "resolved", "passage_ids": ["p1"],
                            "rerank": "propagation", "method_score": 0.4}
    assert out[1].trace == {"passage_ids": ["p0"], "rerank": "propagation",
                            "method_score": None}
    assert (out[1].method, out[1].text, out[1].kind) == ("c2rag", "text of p0.", "passage")


def test_non_passages_follow_with_score_zero_and_no_seed_leaves_items_unchanged() -> None:
    g = star()
    triple = item("edge:0", 0.9, kind="triple")
    out = propagation_rerank(g, "q", [triple, item("p3", 0.2)], "c2rag")
    assert [(e.id, e.score) for e in out] == [("p3", out[0].score), ("edge:0", 0.0)]
    assert out[0].score > 0 and out[1].trace["method_score"] == 0.9
    assert propagation_rerank(g, "q", [triple], "c2rag") == [triple]
    assert RERANK_K == 20


def test_presets_and_validation() -> None:
    assert PCRConfig().rerank == "propagation" == C2RAGConfig().rerank
    assert PCRConfig.paper().rerank is None and C2RAGConfig.paper().rerank is None
    assert C2RAGConfig.paper().fallback_k_t is None
    assert C2RAGConfig.paper(k_t=2).k_t == 2
    with pytest.raises(ConfigError, match="rerank"):
        PCRConfig(rerank="dense")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="rerank"):
        C2RAGConfig(rerank="dense")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown C2RAGConfig option"):
        C2RAGConfig.paper(colour=1)


def test_pcr_passages_are_re_ranked_by_default_and_native_output_is_not() -> None:
    g = star()
    g.add_node("A", name="Anchor", provenance=("p1",))
    g.add_edge("A", "X", relation="knows")
    pcr = PathConstrainedRetriever(g, embedder=HashingEmbedder(dim=16))
    res = pcr.retrieve("text", anchor="A")
    plain = pcr.retrieve("text", anchor="A", rerank=None)
    assert [e.id for e in res.evidence("native")] == [e.id for e in plain.evidence("native")]
    ranked = res.evidence()
    assert {e.trace["rerank"] for e in ranked if e.kind == "passage"} == {"propagation"}
    assert all("rerank" not in e.trace for e in plain.evidence())
    assert "p3" not in {e.id for e in ranked}  # Y shares nothing with A's or X's passages
