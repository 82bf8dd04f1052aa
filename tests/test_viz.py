"""Pictures of retrieval results (kgpath.viz): content of the picture, PNG and HTML files."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys

import pytest

from kgpath import (
    ConfigError,
    GraphIndex,
    KnowledgeGraph,
    MissingDependencyError,
    PathConstrainedRetriever,
)
from kgpath.methods.pcr import PCRConfig
from kgpath.viz import build_picture, html_document, layout, render, render_html, render_png

PAPER = PCRConfig.paper()  # the paper's reachability: out-edges, unlimited depth

ANCHOR = "Curie <Lab> & \"Co\""

VECS = {
    "q": [1.0, 0.0],
    f"{ANCHOR}. anchor text": [0.0, 1.0],
    "b text": [0.6, 0.8],
    "c text": [0.8, 0.6],
    "d text": [1.0, 0.0],
    "e text": [0.7071, 0.7071],
}


@pytest.fixture
def pcr_result(table_embedder):
    """a -> b -> c, a -> d; e is reachable only through d (3 hops)... and isolated x."""
    g = KnowledgeGraph()
    g.add_node("a", name=ANCHOR, text="anchor text")
    for n in "BCDE":
        g.add_node(n.lower(), name=n, text=f"{n.lower()} text")
    g.add_edge("a", "b", relation="r1")
    g.add_edge("b", "c", relation="r2")
    g.add_edge("a", "d", relation="r3")
    g.add_edge("d", "e", relation="r4")
    idx = GraphIndex(g, table_embedder(VECS))
    res = PathConstrainedRetriever(idx, config=PAPER).retrieve("q", anchor="a", k=2)
    return g, res


def test_pcr_picture_content(pcr_result):
    g, res = pcr_result
    assert res.ids == ["d", "c"]  # cos 1.0 and 0.8
    pic = build_picture(res, g)
    by = {n.id: n for n in pic.nodes}
    assert pic.anchors == ("a",) and pic.anchor_names == (ANCHOR,)
    assert by["a"].role == "anchor" and by["a"].layer == 0
    assert (by["d"].role, by["d"].rank, by["d"].layer, by["d"].score) == ("hit", 1, 1, 1.0)
    assert (by["c"].role, by["c"].rank, by["c"].layer) == ("hit", 2, 2)
    assert by["b"].role == "path" and by["e"].role == "region" and by["e"].layer == 2
    assert [p.node_ids for p in pic.paths] == [("a", "d"), ("a", "b", "c")]
    on_path = {(e.source, e.target): e.paths for e in pic.edges}
    assert on_path == {("a", "d"): (0,), ("a", "b"): (1,), ("b", "c"): (1,), ("d", "e"): ()}
    assert pic.notes[0] == "5 reachable node(s) (Eq. 1)"
    # without the graph: only what the result holds (anchor, hits, their paths)
    bare = build_picture(res)
    assert {n.id for n in bare.nodes} == {"a", "b", "c", "d"}
    limited = build_picture(res, g, max_region=0)
    assert "e" not in {n.id for n in limited.nodes}
    assert "1 more reachable node(s) not drawn" in limited.notes


def test_layout_is_layered_and_deterministic(pcr_result):
    g, res = pcr_result
    pic = build_picture(res, g)
    pos = layout(pic)
    assert pos == layout(build_picture(res, g))
    assert pos["a"] == (0.0, 0.0)
    assert pos["d"][0] == pos["b"][0] == 1.0 and pos["c"][0] == pos["e"][0] == 2.0
    assert pos["d"][1] > pos["b"][1]  # hits above path nodes in a column
    assert pos["c"][1] > pos["e"][1]


def test_png_and_html_files_contain_the_anchor(pcr_result, tmp_path):
    pytest.importorskip("matplotlib")
    g, res = pcr_result
    out = render(res, tmp_path / "pics", "pcr", g)
    png = out["png"].read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000
    assert ANCHOR.encode("latin-1") in png  # PNG text chunk: "anchor: <name>; query: ..."
    page = out["html"].read_text(encoding="utf-8")
    assert html.escape(ANCHOR) in page and ANCHOR not in page  # escaped, never raw markup
    assert page.startswith("<!DOCTYPE html>") and "http" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")  # self-contained: no external resources
    data = json.loads(re.search(r'id="kgpath-data">(.*?)</script>', page, re.S).group(1))
    assert data["anchors"] == ["a"]
    assert data["nodes"]["d"]["rank"] == 1 and data["nodes"]["d"]["score"] == 1.0
    assert [p["nodes"] for p in data["paths"]] == [["a", "d"], ["a", "b", "c"]]
    assert page.count('class="node ') == 5


def test_html_payload_cannot_break_out_of_its_script(tmp_path, table_embedder):
    g = KnowledgeGraph()
    evil = "</script><script>alert(1)</script>"
    g.add_node("a", name="a", text=evil)
    g.add_node("b", name="b", text="b")
    g.add_edge("a", "b")
    emb = table_embedder({evil: [1.0, 0.0], "b": [0.0, 1.0], "q": [1.0, 0.0]})
    res = PathConstrainedRetriever(GraphIndex(g, emb), config=PAPER).retrieve("q", anchor="a")
    page = render_html(res, tmp_path / "x.html", g).read_text(encoding="utf-8")
    assert "<script>alert(1)" not in page
    assert page.count("<script") == 2


def test_pathrag_and_c2rag_pictures(tmp_path):
    pytest.importorskip("kgpath.methods.pathrag")
    pytest.importorskip("kgpath.methods.c2rag")
    from kgpath import HashingEmbedder, ScriptedLLM
    from kgpath.demo.c2rag import demo_questions, load_demo_kg
    from kgpath.methods.c2rag import ConstraintCheckedRetriever
    from kgpath.methods.pathrag import PathRAGConfig, PathRAGRetriever
    from kgpath.rerank import EmbeddingReranker

    emb = HashingEmbedder(dim=64)
    g = KnowledgeGraph.from_triples([("Marie Curie", "discovered", "radium"),
                                     ("radium", "used in", "radiotherapy"),
                                     ("Pierre Curie", "married", "Marie Curie")])
    pr = PathRAGRetriever(GraphIndex(g, emb), config=PathRAGConfig.paper()).retrieve(
        "Marie Curie radiotherapy")
    assert pr.paths
    pic = build_picture(pr)
    assert pic.method == "pathrag"
    for p, path in zip(pic.paths, pr.paths):
        assert p.node_ids == path.ids and p.reliability == pytest.approx(path.reliability)
        assert f"reliability {path.reliability:.4f}" in p.label
    assert {n.id for n in pic.nodes} == {i for p in pr.paths for i in p.ids}
    page = html_document(pic)
    assert "reliability" in page and html.escape(pic.anchor_names[0]) in page

    cg = load_demo_kg()
    q = demo_questions()[0]
    cr = ConstraintCheckedRetriever(cg, embedder=emb, llm=ScriptedLLM([json.dumps(q["plan"])]),
                                    reranker=EmbeddingReranker(emb)).retrieve(q["query"])
    cpic = build_picture(cr, cg)
    assert cpic.method == "c2rag" and [h.step for h in cpic.hops] == [h.step for h in cr.hops]
    assert set(cpic.anchors) == {a.node_id for h in cr.hops for a in h.anchors}
    kept = [c for h in cr.hops for c in h.top]
    assert len(cpic.paths) == len(kept)
    for p, c in zip(cpic.paths, kept):
        assert p.node_ids == (c.anchor, c.entity) and f"p={c.p:.3f}" in p.label
    page = render_html(cr, tmp_path / "c2rag.html", cg).read_text(encoding="utf-8")
    assert "Hops" in page and "N_eff" in page


def test_unknown_result_and_bad_options():
    with pytest.raises(ConfigError, match="cannot draw a dict"):
        build_picture({})
    with pytest.raises(ConfigError, match="max_region"):
        build_picture({}, max_region=-1)


def test_png_without_matplotlib_names_the_extra(pcr_result, tmp_path, monkeypatch):
    g, res = pcr_result
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingDependencyError, match=r"kgpath\[plot\]"):
        render_png(res, tmp_path / "x.png", g)


JS_HARNESS = r"""
const fs = require('fs');
const page = fs.readFileSync(process.argv[2], 'utf8');
const data = page.match(/id="kgpath-data">([\s\S]*?)<\/script>/)[1];
const js = page.match(/<script>([\s\S]*)<\/script>/)[1];
function el(data){ const cls = new Set(); const h = {};
  return {dataset: data, style: {}, cls,
    classList: {add: c => cls.add(c), remove: c => cls.delete(c),
                toggle: (c, on) => on ? cls.add(c) : cls.delete(c)},
    addEventListener: (e, f) => { h[e] = f; }, fire: e => h[e]({clientX: 1, clientY: 1})};}
const ids = JSON.parse(data).nodes;
const nodes = Object.keys(ids).map(id => el({id}));
const edges = [...page.matchAll(/data-paths="([^"]*)"/g)].map(m => el({paths: m[1]}));
const paths = [...page.matchAll(/class="path" data-index="(\d+)"/g)].map(m => el({index: m[1]}));
const tip = {style: {}, textContent: ''};
global.document = {
  getElementById: id => id === 'kgpath-data' ? {textContent: data} : id === 'tip' ? tip : null,
  querySelectorAll: s => s === '.node' ? nodes : s === '.edge' ? edges :
                         s === '.path' ? paths : []};
eval(js);
nodes[0].fire('mousemove');
paths[1].fire('mouseenter');
const dim = nodes.filter(n => n.cls.has('dim')).map(n => n.dataset.id).sort();
const hi = edges.filter(e => e.cls.has('hi')).length;
console.log(JSON.stringify({tip: tip.textContent, dim, hi}));
"""


def test_html_script_highlights_paths(pcr_result, tmp_path):
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    g, res = pcr_result
    page = render_html(res, tmp_path / "p.html", g)
    harness = tmp_path / "h.js"
    harness.write_text(JS_HARNESS, encoding="utf-8")
    out = subprocess.run([node, str(harness), str(page)], capture_output=True, text=True,
                         timeout=30, check=True)
    got = json.loads(out.stdout)
    assert got["tip"].startswith(f"{ANCHOR} [anchor]")
    assert got["dim"] == ["d", "e"]  # hovering path #2 (a -> b -> c) dims the rest
    assert got["hi"] == 2
