"""Pictures a person reads at a glance (issue 24), pinned on the picture model, not pixels.

PathRAG: at most five paths by default, each in its own colour, a legend naming every path
with its reliability, and its stars called retrieved nodes (PathRAG has no anchor). C2RAG:
the hops lead to the evidence passages and the first-ranked one is highlighted. PCR: the
legend starts with the anchor. Traversal: visited chunks numbered 1, 2, 3 in visit order.
"""

from __future__ import annotations

import json

import pytest

from kgpath import ConfigError, GraphIndex, HashingEmbedder, KnowledgeGraph, ScriptedLLM
from kgpath.viz import (
    ANCHOR_COLOUR,
    ANSWER_COLOUR,
    MAX_PATHS,
    build_picture,
    html_document,
    legend_entries,
    render,
)
from kgpath.viz.layout import node_colour, path_colour

TRIPLES = [
    ("Marie Curie", "discovered", "radium"), ("radium", "used in", "radiotherapy"),
    ("Pierre Curie", "married", "Marie Curie"), ("Marie Curie", "won", "Nobel Prize"),
    ("Pierre Curie", "won", "Nobel Prize"), ("radium", "found in", "pitchblende"),
    ("pitchblende", "mined in", "Joachimsthal"), ("Marie Curie", "born in", "Warsaw"),
    ("Nobel Prize", "awarded in", "Stockholm"), ("radiotherapy", "treats", "cancer"),
    ("Pierre Curie", "discovered", "piezoelectricity"),
    ("polonium", "found in", "pitchblende"), ("Marie Curie", "discovered", "polonium"),
]


@pytest.fixture(scope="module")
def pathrag_result():
    pytest.importorskip("kgpath.methods.pathrag")
    from kgpath.methods.pathrag import PathRAGConfig, PathRAGRetriever

    g = KnowledgeGraph.from_triples(TRIPLES)
    idx = GraphIndex(g, HashingEmbedder(dim=64))
    return PathRAGRetriever(idx, config=PathRAGConfig.paper(num_nodes=6)).retrieve(
        "Marie Curie radium Nobel Prize pitchblende radiotherapy")


def test_pathrag_draws_the_five_most_reliable_paths_in_distinct_colours(pathrag_result):
    pr = pathrag_result
    assert len(pr.paths) > MAX_PATHS == 5
    pic = build_picture(pr)
    assert [p.node_ids for p in pic.paths] == [p.ids for p in pr.paths[:5]]
    rel = [p.reliability for p in pic.paths]
    assert rel == sorted(rel, reverse=True) and rel[0] == pytest.approx(1.0)
    assert pic.hidden_paths == len(pr.paths) - 5
    assert f"{len(pr.paths) - 5} more not drawn (max_paths=None draws all)" in pic.notes[-1]
    lines = [e for e in legend_entries(pic) if e.kind == "path"]
    assert [e.path for e in lines] == [0, 1, 2, 3, 4]
    assert len({e.colour for e in lines}) == 5  # no colour reused
    for e, p in zip(lines, pr.paths, strict=False):
        assert f"P{p.rank} reliability {p.reliability:.4f}" in e.label
    # every coloured edge belongs to a drawn path, and only drawn nodes are drawn
    assert all(i < 5 for e in pic.edges for i in e.paths)
    assert {n.id for n in pic.nodes} == {i for p in pr.paths[:5] for i in p.ids}
    every = build_picture(pr, max_paths=None)
    assert len(every.paths) == len(pr.paths) and every.hidden_paths == 0
    assert len(build_picture(pr, max_paths=2).paths) == 2


def test_pathrag_stars_are_retrieved_nodes_not_anchors(pathrag_result):
    pr = pathrag_result
    pic = build_picture(pr)
    retrieved = {rn.node.id for rn in pr.nodes}
    ends = {i for p in pr.paths[:5] for i in (p.ids[0], p.ids[-1]) if i in retrieved}
    assert pic.anchor_kind == "retrieved node" and set(pic.anchors) == ends
    assert pic.anchor_heading().startswith("retrieved nodes: ")
    first = legend_entries(pic)[0]
    assert (first.kind, first.marker, first.colour) == ("anchor", "*", ANCHOR_COLOUR)
    assert first.label.startswith("retrieved nodes: ")
    assert "anchor:" not in html_document(pic)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "5"])
def test_max_paths_must_be_a_positive_int(pathrag_result, bad):
    with pytest.raises(ConfigError, match=f"max_paths must be an int >= 1 or None, got {bad!r}"):
        build_picture(pathrag_result, max_paths=bad)


def test_c2rag_follows_the_hops_to_the_first_evidence_passage(tmp_path):
    pytest.importorskip("kgpath.methods.c2rag")
    from kgpath.demo.c2rag import demo_questions, load_demo_kg
    from kgpath.methods.c2rag import ConstraintCheckedRetriever
    from kgpath.rerank import EmbeddingReranker

    emb = HashingEmbedder(dim=64)
    cg = load_demo_kg()
    q = demo_questions()[0]
    cr = ConstraintCheckedRetriever(cg, embedder=emb, llm=ScriptedLLM([json.dumps(q["plan"])]),
                                    reranker=EmbeddingReranker(emb)).retrieve(q["query"])
    ranked = cr.evidence()
    pic = build_picture(cr, cg)
    assert pic.answer == f"passage:{ranked[0].id}"
    passages = [n for n in pic.nodes if n.role == "passage"]
    assert [n.id for n in sorted(passages, key=lambda n: n.rank)] == [
        f"passage:{e.id}" for e in ranked[:3]]
    top = pic.node(pic.answer)
    assert top.rank == 1 and top.text == ranked[0].text
    assert top.layer == 2 * len(cr.hops)  # after the last hop's columns
    assert node_colour(top, 0, 1) == ANSWER_COLOUR
    assert node_colour(pic.node(f"passage:{ranked[1].id}"), 0, 1) != ANSWER_COLOUR
    # the arrow into it starts at a node a hop touched: hops lead to the evidence
    into = [e for e in pic.edges if e.target == pic.answer]
    touched = {i for h in pic.hops for i in h.node_ids}
    assert len(into) == 1 and into[0].source in touched and into[0].info["rank"] == 1
    kinds = [e.kind for e in legend_entries(pic)]
    assert kinds[0] == "anchor" and "answer" in kinds and "passage" in kinds
    assert f"top evidence (rank 1): {ranked[0].text}" in pic.notes
    png = pytest.importorskip("matplotlib") and render(cr, tmp_path, "c2rag", cg)["png"]
    assert png.read_bytes().startswith(b"\x89PNG")


def test_pcr_legend_names_the_anchor_first(table_embedder):
    from kgpath import PathConstrainedRetriever

    g = KnowledgeGraph()
    g.add_node("a", name="radium", text="radium")
    for n in "bcd":
        g.add_node(n, name=n.upper(), text=f"{n} text")
    g.add_edge("a", "b", relation="r1")
    g.add_edge("b", "c", relation="r2")
    g.add_edge("a", "d", relation="r3")
    emb = table_embedder({"q": [1.0, 0.0], "radium": [0.0, 1.0], "b text": [0.6, 0.8],
                          "c text": [0.8, 0.6], "d text": [1.0, 0.0]})
    res = PathConstrainedRetriever(GraphIndex(g, emb)).retrieve("q", anchor="a", k=1)
    assert res.ids == ["d"]
    pic = build_picture(res, g)
    entries = legend_entries(pic)
    assert [(e.kind, e.label) for e in entries] == [
        ("anchor", "anchor: radium"),
        ("hit", "retrieved hit (#rank; darker = higher score)"),
        ("region", "reachable, not retrieved"),
        ("path", "#1 D (score 1.000, 1 hop)"),
    ]
    assert entries[-1].colour == path_colour(0)


def test_traversal_steps_are_numbered_in_visit_order(tmp_path):
    pytest.importorskip("kgpath.methods.traversal")
    from kgpath.data import demo_corpus
    from kgpath.ingest.chunk_graph import ChunkGraphBuilder, ChunkGraphConfig
    from kgpath.methods.traversal import TraversalConfig, TraversalRetriever, format_traversal
    from kgpath.viz.traversal import CAPTION, plot_traversals, traversal_steps

    emb = HashingEmbedder(dim=64)
    graph = ChunkGraphBuilder(emb, config=ChunkGraphConfig(theme_nodes=False)).build(
        demo_corpus()["passages"])
    results = TraversalRetriever(graph, embedder=emb, config=TraversalConfig(
        max_sentences=6, min_sentences=3)).retrieve_all("Which award did Marie Curie win?")
    for r in results.values():
        steps = traversal_steps(r, graph)
        assert [s.step for s in steps] == list(range(1, len(r.path_ids) + 1))
        assert [s.chunk_id for s in steps] == r.path_ids
        # the same passage#window names the text trace prints, in the same order
        text = format_traversal(r, graph)
        assert [text.index(s.name) for s in steps] == sorted(text.index(s.name) for s in steps)
        assert steps[0].label == f"1 {steps[0].name}"
    assert "PCA 1" in CAPTION and "visit order" in CAPTION
    pytest.importorskip("matplotlib")
    out = plot_traversals(graph, results, tmp_path / "t.png")
    assert open(out, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
