"""PCR relation-chain templates and question-ranked passages (kgpath extensions)."""

from __future__ import annotations

import numpy as np
import pytest

from kgpath import ConfigError, KnowledgeGraph
from kgpath.methods.pcr import PathConstrainedRetriever, PCRConfig
from kgpath.methods.pcr.passages import rank_passages
from kgpath.methods.pcr.templates import (
    lexical_matches,
    relation_templates,
    stem,
    template_text,
)

Q = "who directed the films written by Ann"
W, S, D = "something written by something", "something starred actors something", \
    "something directed by something"
VECS = {
    Q: [1.0, 0.0],
    W: [0.0, 1.0], S: [0.0, 1.0],
    f"{W}, {D}": [0.0, 1.0],
    f"{S}, {D}": [0.05, float(np.sqrt(1 - 0.05**2))],  # cosine 0.05: the best text
}


@pytest.fixture
def films() -> KnowledgeGraph:
    """Ann wrote F1 and acted in F2; D1 directed F1, D2 directed F2."""
    g = KnowledgeGraph()
    for n in ("ann", "f1", "f2", "d1", "d2"):
        g.add_node(n, name=n.upper())
    g.add_edge("f1", "ann", relation="written_by")
    g.add_edge("f2", "ann", relation="starred_actors")
    g.add_edge("f1", "d1", relation="directed_by")
    g.add_edge("f2", "d2", relation="directed_by")
    # node scores (cosine to Q): d2 0.6, everything else 0
    g.vectors.set(np.array([[0, 1], [0, 1], [0, 1], [0, 1], [0.6, 0.8]], np.float32))
    return g


def test_templates_enumerate_walks_with_direction(films):
    ts = relation_templates(films, films.index_of("ann"), max_depth=2, direction="both")
    got = {t.steps: sorted(films.node_at(int(i)).id for i in t.endpoints) for t in ts}
    assert got == {
        (("written_by", False),): ["f1"],
        (("starred_actors", False),): ["f2"],
        # written_by back then forward reaches only the anchor: not a template
        (("written_by", False), ("directed_by", True)): ["d1"],
        (("starred_actors", False), ("directed_by", True)): ["d2"],
    }
    films.add_edge("f1", "d2", relation="written_by")  # d2 co-wrote f1 with Ann
    ts = relation_templates(films, films.index_of("ann"), max_depth=2, direction="both")
    got = {t.steps: sorted(films.node_at(int(i)).id for i in t.endpoints) for t in ts}
    assert got[(("written_by", False), ("written_by", True))] == ["d2"]  # Ann not listed
    assert relation_templates(films, films.index_of("ann"), max_depth=2, direction="out") == []
    assert template_text([("written_by", False), ("directed_by", True)], "Ann") == (
        "something written by Ann, something directed by something")
    assert template_text([("written_by", False)], "Ann", mask_anchor=True) == W


def test_stem_and_lexical_matches():
    assert [stem(w) for w in ("Directors", "acted", "actors", "writer", "written")] == [
        "dire", "act", "act", "writ", "writ"]
    written_directed = [("written_by", False), ("directed_by", True)]
    assert lexical_matches(Q, written_directed) == 2
    assert lexical_matches(Q, [("written_by", False), ("written_by", True)]) == 1  # one use
    assert lexical_matches(Q, [("starred_actors", False)]) == 0


def test_template_ranking_hand_computed(films, table_embedder):
    pcr = PathConstrainedRetriever(films, embedder=table_embedder(VECS))
    kw = dict(max_depth=2, direction="both", include_anchor=False, score="template",
              path_text="relations", template_node_weight=0.0, template_scorer="text")
    res = pcr.retrieve(Q, anchor="ann", **kw)
    # written/directed: 0 + 2 x 0.1; starred/directed: 0.05 + 0.1; written: 0 + 0.1;
    # starred: 0
    assert res.ids == ["d1", "d2", "f1", "f2"]
    assert [h.score for h in res.hits] == pytest.approx([0.2, 0.15, 0.1, 0.0])
    top = res.hits[0]
    assert top.path == ("ann", "f1", "d1") and top.hops == 2
    assert [e.relation for e in top.edges] == ["written_by", "directed_by"]
    assert top.node_score == pytest.approx(0.0)
    # without the lexical term the chain with the best text wins
    plain = pcr.retrieve(Q, anchor="ann", template_lexical=0.0, **kw)
    assert plain.ids[0] == "d2" and plain.hits[0].score == pytest.approx(0.05)
    assert plain.hits[0].node_score == pytest.approx(0.6)
    # + 0.6 x mean endpoint node score: starred/directed 0.15 + 0.6 x 0.6 = 0.51
    typed = pcr.retrieve(Q, anchor="ann", **{**kw, "template_node_weight": 0.6})
    assert typed.ids == ["d2", "d1", "f1", "f2"]
    assert [h.score for h in typed.hits] == pytest.approx([0.51, 0.2, 0.1, 0.0])
    with pytest.raises(ConfigError, match="template_lexical"):
        pcr.retrieve(Q, anchor="ann", template_lexical=2.0, **kw)


def test_rank_passages_hand_computed(table_embedder):
    g = KnowledgeGraph()
    for pid in ("p0", "p1", "p2"):
        g.add_passage(pid, f"text {pid}")
    g.add_node("a", name="A", provenance=["p0"])
    g.add_node("b", name="B", provenance=["p1", "p2"])
    g.add_edge("a", "b", relation="r")
    g.vectors.set(np.array([[0, 1], [1, 0]], np.float32))  # node scores: a 0, b 1
    table = {"q": [1.0, 0.0], "text p0": [1.0, 0.0], "text p1": [0.0, 1.0],
             "text p2": [0.6, 0.8]}
    res = PathConstrainedRetriever(g, embedder=table_embedder(table),
                                   config=PCRConfig(rerank=None)).retrieve("q", anchor="a")
    assert res.ids == ["b", "a"]
    rows = {"p0": 0, "p1": 1, "p2": 2}
    mat = np.array([[1, 0], [0, 1], [0.6, 0.8]], np.float32)
    q = np.array([1.0, 0.0], np.float32)
    # 0.7 cos + 0.3 hit: p0 0.7, p1 0.3, p2 0.72
    got = rank_passages([res], q, rows, mat)
    assert [p for p, _ in got] == ["p2", "p0", "p1"]
    assert [s for _, s in got] == pytest.approx([0.72, 0.7, 0.3])
    # the result's own passage output (passage_order="question", the index's vectors)
    ev = res.evidence()
    assert [(e.id, e.kind) for e in ev] == [("p2", "passage"), ("p0", "passage"),
                                            ("p1", "passage")]
    assert [e.score for e in ev] == pytest.approx([0.72, 0.7, 0.3])
    assert [p for p, _ in rank_passages([res], q, rows, mat, anchors_first=True)] == [
        "p0", "p2", "p1"]
    # hit scores alone: p1, p2 tie at 1.0 (citation order), then the anchor's p0
    assert [p for p, _ in rank_passages([res], q, rows, mat, weight=0.0)] == ["p1", "p2", "p0"]
    with pytest.raises(ConfigError, match="weight"):
        rank_passages([res], q, rows, mat, weight=1.5)


def test_templates_need_the_in_memory_backend(films, table_embedder, tmp_path):
    from kgpath import GraphIndex
    from kgpath.backends.cypher import EmbeddedCypherDriver, load_graph
    from kgpath.methods.pcr import CypherPCR

    emb = table_embedder(VECS)
    drv = EmbeddedCypherDriver.open(tmp_path / "db")
    try:
        db = CypherPCR(drv, embedder=emb, schema=load_graph(drv, GraphIndex(films, emb)))
        with pytest.raises(ConfigError, match="in-memory"):
            db.retrieve(Q, anchor="ann", score="template", direction="both")
    finally:
        drv.close()


def test_relation_codes_cached_per_version_and_dropped_with_the_graph():
    import gc

    from kgpath.methods.pcr import templates

    g = KnowledgeGraph.from_triples([("a", "r", "b"), ("b", "s", "c"), ("c", "r", "a")])
    codes, labels = templates.relation_codes(g)
    assert codes.tolist() == [0, 1, 0] and labels == ["r", "s"]
    assert templates.relation_codes(g)[0] is codes  # cached
    g.add_edge("a", "c", relation="t")
    assert templates.relation_codes(g)[0].tolist() == [0, 1, 0, 2]
    key = id(g)
    assert key in templates._CODES
    del g
    gc.collect()
    assert key not in templates._CODES  # the cache never keeps a graph alive


def test_equal_template_scores_are_tied_by_node_score():
    from kgpath.methods.pcr.templates import Template, rank_by_templates

    def t(*ends):
        return Template(0, (("r", True),), (np.asarray([0]), np.asarray(ends)))

    # templates 0 and 1 tie at 0.5 (template 2 is worse); node scores 1: 0.2, 2: 0.9,
    # 3: 0.4, 4: 1.0. Ties across templates 0 and 1 go by node score: 2, 3, 1; node 4
    # (template 2 only) comes last whatever its own score; node 2 keeps template 0.
    tmpl = [t(1, 2), t(2, 3), t(4)]
    ns = {1: 0.2, 2: 0.9, 3: 0.4, 4: 1.0}
    calls = []

    def node_score(idx):
        calls.append(idx.tolist())
        return np.asarray([ns[i] for i in idx.tolist()])

    got = rank_by_templates(tmpl, np.asarray([0.5, 0.5, 0.1]), node_score, 10, exclude={0})
    assert [(v, ti) for v, ti, _ in got] == [(2, 0), (3, 1), (1, 0), (4, 2)]
    assert calls == [[1, 2, 3], [4]]  # once per group of equal-score templates
    assert [(v, ti) for v, ti, _ in rank_by_templates(
        tmpl, np.asarray([0.5, 0.5, 0.1]), node_score, 2, exclude={0})] == [(2, 0), (3, 1)]
