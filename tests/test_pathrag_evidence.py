"""PathRAGResult.evidence: paths by Eq. (4) reliability, then their provenance; node fallback.

These run under ``PathRAGConfig.literal_eq4(passages="paths")`` (the literal Eq. 4 reading and
the path-provenance passage rule, kgpath's defaults before issue 12; the default text-unit rule
is tested in ``tests/test_pathrag_sources.py``), whose numbers are computed by hand below;
the same contract under the default edge-flow reliability is tested in
``tests/test_pathrag_edgeflow.py``.

Hand-computed truth on a tiny directed graph (α = 0.8, θ = 0.05, all of A, B, C retrieved)::

    A -r1-> B -r2-> C        B -r3-> D        (|N(A,·)| = 1, |N(B,·)| = 2)

From A: S(A) = 1, S(B) = 0.8, S(C) = S(D) = 0.8·0.8/2 = 0.32.  From B: S(B) = 1,
S(C) = S(D) = 0.4.  From C: a sink, no path.  Eq. (4) reliabilities:

    P_1 = A->B     (1 + 0.8) / 1          = 1.8
    P_2 = B->C     (1 + 0.4) / 1          = 1.4
    P_3 = A->B->C  (1 + 0.8 + 0.32) / 2   = 1.06

Provenance (nodes first, then edges, first-seen): nodes A: p1, B: p2, C: p3, D: none;
edges A->B: p2, p4; B->C: p5; B->D: none.  So P_1 cites (p1, p2, p4), P_2 (p2, p3, p5),
P_3 (p1, p2, p3, p4, p5), and the passages in order are p1, p2, p4 (1.8), p3, p5 (1.4).
"""

from __future__ import annotations

import hashlib

import pytest

from kgpath import ConfigError, HashingEmbedder, KnowledgeGraph
from kgpath.evidence import Evidence
from kgpath.methods.pathrag import (
    PathRAGConfig,
    PathRAGResult,
    PathRAGRetriever,
    RetrievedNode,
)

P1_REL, P2_REL, P3_REL = 1.8, 1.4, 1.06
LITERAL = PathRAGConfig.literal_eq4(passages="paths")


def tiny_graph() -> KnowledgeGraph:
    g = KnowledgeGraph()
    for pid in ("p1", "p2", "p3", "p4", "p5", "p6"):
        g.add_passage(pid, f"text of {pid}", {"source": f"doc-{pid}"})
    g.add_node("A", name="A", text="A is first.", provenance=["p1"])
    g.add_node("B", name="B", text="B is second.", provenance=["p2"])
    g.add_node("C", name="C", text="C is third.", provenance=["p3"])
    g.add_node("D", name="D", text="D is alone.", metadata={"colour": "red"})
    g.add_edge("A", "B", relation="r1", text="A r1 B", provenance=["p2", "p4"])
    g.add_edge("B", "C", relation="r2", text="B r2 C", provenance=["p5"])
    g.add_edge("B", "D", relation="r3", text="B r3 D")
    return g


def path_id(*ids: str) -> str:
    return "pathrag-" + hashlib.sha1("\x1f".join(ids).encode("utf-8")).hexdigest()[:16]


@pytest.fixture
def retriever() -> PathRAGRetriever:
    return PathRAGRetriever(tiny_graph(), embedder=HashingEmbedder(), config=LITERAL)


@pytest.fixture
def result(retriever: PathRAGRetriever) -> PathRAGResult:
    return retriever.retrieve_from_nodes("how are A, B and C linked?", ["A", "B", "C"])


# ---------------------------------------------------------------- native: one item per path
def test_native_is_one_path_item_per_path_in_reliability_order(result):
    ev = result.evidence("native")
    assert [e.id for e in ev] == [path_id("A", "B"), path_id("B", "C"), path_id("A", "B", "C")]
    assert [e.kind for e in ev] == ["path"] * 3
    assert [e.method for e in ev] == ["pathrag"] * 3
    assert [e.rank for e in ev] == [1, 2, 3]
    assert [e.score for e in ev] == pytest.approx([P1_REL, P2_REL, P3_REL])
    assert all(type(e.score) is float for e in ev)
    assert ev[0].text == "A is first. | A r1 B | B is second."
    assert ev[2].text == "A is first. | A r1 B | B is second. | B r2 C | C is third."


def test_native_trace_of_the_two_hop_path(result):
    e = result.evidence("native")[2]
    assert e.trace == {
        "node_ids": ["A", "B", "C"],
        "relations": ["r1", "r2"],
        "path": "A -[r1]-> B -[r2]-> C",
        "hops": 2,
        "reliability": pytest.approx(P3_REL),
        "passage_ids": ["p1", "p2", "p3", "p4", "p5"],
        "node_id": "A",
    }
    assert e.source_metadata == {}
    meta = e.metadata()
    assert meta["kgpath_kind"] == "path" and meta["kgpath_rank"] == 3
    assert meta["kgpath_node_ids"] == ["A", "B", "C"]


def test_native_k_cuts_after_the_most_reliable(result):
    assert [e.id for e in result.evidence("native", k=1)] == [path_id("A", "B")]


# ---------------------------------------------------------------- passages (the default)
def test_passages_follow_the_paths_most_reliable_first_then_provenance(result):
    ev = result.evidence()
    assert [e.id for e in ev] == ["p1", "p2", "p4", "p3", "p5"]
    assert [e.kind for e in ev] == ["passage"] * 5
    assert [e.rank for e in ev] == [1, 2, 3, 4, 5]
    assert [e.text for e in ev] == [f"text of {p}" for p in ("p1", "p2", "p4", "p3", "p5")]
    # a passage takes the reliability of the best path citing it
    assert [e.score for e in ev] == pytest.approx([P1_REL, P1_REL, P1_REL, P2_REL, P2_REL])
    assert ev[0].source_metadata == {"source": "doc-p1"}


def test_passages_are_deduplicated_and_list_every_supporting_path(result):
    ev = {e.id: e for e in result.evidence()}
    ab, bc, abc = path_id("A", "B"), path_id("B", "C"), path_id("A", "B", "C")
    assert ev["p2"].trace["supporting"] == [ab, bc, abc]  # cited by all three, listed once
    assert ev["p1"].trace["supporting"] == [ab, abc]
    assert ev["p3"].trace["supporting"] == [bc, abc]
    # the trace is that of the best citing path
    assert ev["p3"].trace["node_ids"] == ["B", "C"]
    assert ev["p3"].trace["reliability"] == pytest.approx(P2_REL)
    assert ev["p3"].trace["passage_ids"] == ["p2", "p3", "p5"]
    assert "p6" not in ev  # cited by nothing on a path


def test_passages_k(result):
    assert [e.id for e in result.evidence(k=3)] == ["p1", "p2", "p4"]
    assert [e.id for e in result.evidence("passages", k=4)] == ["p1", "p2", "p4", "p3"]
    assert [e.rank for e in result.evidence(k=4)] == [1, 2, 3, 4]


def test_passages_rank_by_reliability_even_if_paths_are_out_of_order(result):
    shuffled = PathRAGResult(**{**result.__dict__, "paths": result.paths[::-1]})
    assert [e.id for e in shuffled.evidence()] == ["p1", "p2", "p4", "p3", "p5"]
    # native keeps the order of self.paths
    assert [e.id for e in shuffled.evidence("native")][0] == path_id("A", "B", "C")


def test_path_without_passages_stays_a_path():
    g = KnowledgeGraph.from_triples([("x", "to", "y")])
    res = PathRAGRetriever(g, embedder=HashingEmbedder(), config=LITERAL).retrieve_from_nodes(
        "x?", ["x", "y"]
    )
    ev = res.evidence()
    assert [(e.kind, e.id, e.score) for e in ev] == [("path", path_id("x", "y"), 1.8)]


def test_passages_without_graph_are_the_native_items(result):
    bare = PathRAGResult(**{**result.__dict__, "graph": None})
    assert bare.evidence() == result.evidence("native")


# ---------------------------------------------------------------- fallback: no path
def test_no_path_falls_back_to_retrieved_nodes(retriever):
    res = retriever.retrieve_from_nodes("C and D?", ["C", "D"])  # both are sinks
    assert res.empty_reason == "no_path" and res.paths == ()
    native = res.evidence("native")
    assert [(e.kind, e.id, e.text) for e in native] == [
        ("node", "C", "C is third."),
        ("node", "D", "D is alone."),
    ]
    assert [e.score for e in native] == [0.0, 0.0]  # given nodes have no similarity (NaN)
    assert native[0].trace == {"node_id": "C", "passage_ids": ["p3"], "fallback": True}
    assert native[1].source_metadata == {"colour": "red"}
    passages = res.evidence()
    # C's provenance; D cites nothing and stays a node
    assert [(e.kind, e.id) for e in passages] == [("passage", "p3"), ("node", "D")]
    assert passages[0].trace["fallback"] is True
    assert passages[0].trace["supporting"] == ["C"]
    assert passages[0].metadata()["kgpath_fallback"] is True


def test_fallback_scores_are_the_keyword_similarities(result):
    g = result.graph
    nodes = (
        RetrievedNode(g.node("B"), g.index_of("B"), "beta", 0.75),
        RetrievedNode(g.node("A"), g.index_of("A"), "alpha", 0.5),
    )
    res = PathRAGResult(**{**result.__dict__, "paths": (), "nodes": nodes,
                           "empty_reason": "no_path"})
    assert [(e.id, e.score) for e in res.evidence("native")] == [("B", 0.75), ("A", 0.5)]
    assert [(e.id, e.score) for e in res.evidence()] == [("p2", 0.75), ("p1", 0.5)]
    assert [e.id for e in res.evidence(k=1)] == ["p2"]


def test_fewer_than_two_nodes_falls_back_to_the_one_node(retriever):
    res = retriever.retrieve_from_nodes("A?", ["A"])
    assert res.empty_reason == "fewer_than_two_nodes"
    assert [(e.kind, e.id) for e in res.evidence()] == [("passage", "p1")]
    assert [(e.kind, e.id) for e in res.evidence("native")] == [("node", "A")]


def test_nothing_retrieved_is_empty(result):
    res = PathRAGResult(**{**result.__dict__, "paths": (), "nodes": ()})
    assert res.evidence() == [] and res.evidence("native") == []


# ---------------------------------------------------------------- options
@pytest.mark.parametrize("output", ["paths", "nodes", "", None])
def test_unknown_output_raises(result, output):
    with pytest.raises(ConfigError, match="output"):
        result.evidence(output)


@pytest.mark.parametrize("k", [0, -1, 1.5, True])
def test_bad_k_raises(result, k):
    with pytest.raises(ConfigError, match="k must be"):
        result.evidence(k=k)


def test_retrieve_gives_evidence_of_its_paths(retriever):
    res = retriever.retrieve("A r1 B")
    ev = res.evidence("native")
    assert [e.id for e in ev] == [p.stable_id for p in res.paths]
    assert all(isinstance(e, Evidence) for e in res.evidence())
