"""PCR anchors from the question: linking, several anchors, the configured similar anchor."""

from __future__ import annotations

import pytest

from kgpath import ConfigError, GraphIndex, HashingEmbedder, KnowledgeGraph, NodeNotFoundError
from kgpath.backends import InMemoryBackend
from kgpath.backends.cypher import EmbeddedCypherDriver, load_graph
from kgpath.methods.pcr import CypherPCR, PathConstrainedRetriever, PCRConfig, link_anchors


@pytest.fixture
def curie() -> KnowledgeGraph:
    g = KnowledgeGraph()
    for nid, name in [("mc", "Marie Curie"), ("c", "Curie"), ("pc", "Pierre Curie"),
                      ("wa", "Warsaw"), ("pa", "Paris"), ("so", "Sorbonne"), ("fi", "Film")]:
        g.add_node(nid, name=name)
    for s, t, r in [("mc", "wa", "born_in"), ("pc", "mc", "married"), ("pc", "so", "worked_at"),
                    ("so", "pa", "located_in"), ("mc", "so", "worked_at")]:
        g.add_edge(s, t, relation=r)
    return g


@pytest.fixture
def chain() -> KnowledgeGraph:
    """A -> B -> C and X -> C: C is 2 hops from A but 1 from X; D is 1 hop from both."""
    g = KnowledgeGraph()
    for n in "ABCDX":
        g.add_node(n, name=f"{n} name", provenance=[f"p{n}"])
        g.add_passage(f"p{n}", f"passage {n}")
    for s, t in [("A", "B"), ("B", "C"), ("X", "C"), ("A", "D"), ("X", "D")]:
        g.add_edge(s, t, relation="r")
    return g


def _links(g: KnowledgeGraph, q: str) -> list[tuple[str, str, int, int]]:
    b = InMemoryBackend(g, embedder=HashingEmbedder(dim=8))
    return [(x.node.id, x.surface, x.start, x.end) for x in link_anchors(b, q)]


def test_longest_name_wins_and_spans_are_recorded(curie):
    assert _links(curie, "Where was Marie Curie born?") == [("mc", "Marie Curie", 10, 21)]
    assert _links(curie, "Did Curie marry?") == [("c", "Curie", 4, 9)]


def test_lowercase_common_words_and_articles(curie):
    # "film" is written lower case: not a name; "the Sorbonne" matches by "Sorbonne"
    assert _links(curie, "which film did Pierre Curie shoot at the Sorbonne") == [
        ("pc", "Pierre Curie", 15, 27), ("so", "Sorbonne", 41, 49)]
    assert _links(curie, "Is the Film about PARIS?") == [("fi", "Film", 7, 11),
                                                         ("pa", "PARIS", 18, 23)]
    assert _links(curie, "nothing named here") == []


def test_linked_anchors_union_of_reachable_sets(curie):
    pcr = PathConstrainedRetriever(curie, embedder=HashingEmbedder(dim=32),
                                   config=PCRConfig.paper())
    res = pcr.retrieve("Did Marie Curie work in Paris?", max_depth=1, k=10)
    # Marie Curie reaches Warsaw and Sorbonne in one hop, Paris reaches nothing
    assert res.anchor_resolution == "linked" and [a.id for a in res.anchors] == ["mc", "pa"]
    assert res.reachable_count == 4 and set(res.ids) == {"mc", "pa", "wa", "so"}
    assert res.trace["anchor_ids"] == ["mc", "pa"]
    paths = {h.id: (h.path, h.hops) for h in res.hits}
    assert paths["wa"] == (("mc", "wa"), 1) and paths["pa"] == (("pa",), 0)


def test_each_node_keeps_the_path_from_its_nearest_anchor(chain):
    pcr = PathConstrainedRetriever(chain, embedder=HashingEmbedder(dim=32),
                                   config=PCRConfig.paper())
    res = pcr.retrieve("q", anchors=["A", "X"], k=10)
    assert res.reachable_count == 5 and res.anchor_resolution == "id"
    got = {h.id: (h.path, h.hops) for h in res.hits}
    assert got == {"A": (("A",), 0), "X": (("X",), 0), "B": (("A", "B"), 1),
                   "C": (("X", "C"), 1),   # 2 hops from A, 1 from X
                   "D": (("A", "D"), 1)}   # a tie goes to the anchor named first
    ev = {e.id: e.trace for e in res.evidence("native")}
    assert (ev["C"]["anchor_id"], ev["C"]["anchor_name"]) == ("X", "X name")
    assert ev["C"]["path"] == "X name -[r]-> C name"
    no_anchor = pcr.retrieve("q", anchors=["A", "X"], include_anchor=False, k=10)
    assert set(no_anchor.ids) == {"B", "C", "D"}


def test_no_anchor_raises_only_with_the_none_fallback(curie):
    pcr = PathConstrainedRetriever(curie, embedder=HashingEmbedder(dim=32),
                                   config=PCRConfig.paper())
    with pytest.raises(NodeNotFoundError, match="anchor_fallback='similar'"):
        pcr.retrieve("who was born where", anchor_fallback="none")
    with pytest.raises(NodeNotFoundError):  # linking switched off: a named node is ignored
        pcr.retrieve("Marie Curie", link_anchors=False, anchor_fallback="none")
    res = pcr.retrieve("who was born where")  # the default fallback, recorded
    assert res.anchor_resolution == "similarity" and res.trace["anchor_fallback"] == "similar"
    assert len(res.anchors) == 1
    # an explicit anchor wins over linking
    assert pcr.retrieve("Marie Curie", anchor="pa").anchor.id == "pa"
    with pytest.raises(ConfigError, match="anchors must be a list"):
        pcr.retrieve("q", anchors="mc")
    with pytest.raises(NodeNotFoundError, match="'zz'"):
        pcr.retrieve("q", anchors=["mc", "zz"])


@pytest.mark.parametrize("kw", [dict(anchors=["A", "X"]), dict(anchor="A", anchors=["X"]),
                                dict(anchors=["A", "X"], include_anchor=False, max_depth=1)])
def test_several_anchors_same_result_on_the_cypher_backend(chain, tmp_path, kw):
    emb = HashingEmbedder(dim=32)
    idx = GraphIndex(chain, emb)
    drv = EmbeddedCypherDriver.open(tmp_path / "db")
    try:
        schema = load_graph(drv, idx)
        # a database backend has no shared passage vectors (nor the in-memory re-rank):
        # passages in hit order
        mem = PathConstrainedRetriever(idx).retrieve("passage", k=10, rerank=None, **kw)
        db = CypherPCR(drv, embedder=emb, schema=schema).retrieve("passage", k=10, **kw)
        assert mem.passages.whole_graph and not db.passages.whole_graph  # store: no re-rank
        assert db.anchor_resolution == mem.anchor_resolution
        assert [a.id for a in db.anchors] == [a.id for a in mem.anchors]
        assert db.reachable_count == mem.reachable_count
        assert [(h.id, h.path, h.hops) for h in db.hits] == [
            (h.id, h.path, h.hops) for h in mem.hits]
        for x, y in zip(mem.evidence(), db.evidence()):
            assert (x.id, x.kind, x.text, x.trace) == (y.id, y.kind, y.text, y.trace)
    finally:
        drv.close()


def test_linking_on_the_cypher_backend(curie, tmp_path):
    emb = HashingEmbedder(dim=32)
    idx = GraphIndex(curie, emb)
    drv = EmbeddedCypherDriver.open(tmp_path / "db")
    try:
        schema = load_graph(drv, idx)
        q = "Did Marie Curie work in Paris?"
        mem = PathConstrainedRetriever(idx).retrieve(q, max_depth=2)
        db = CypherPCR(drv, embedder=emb, schema=schema).retrieve(q, max_depth=2)
        assert [a.id for a in db.anchors] == [a.id for a in mem.anchors] == ["mc", "pa"]
        assert [(h.id, h.path) for h in db.hits] == [(h.id, h.path) for h in mem.hits]
    finally:
        drv.close()


def test_lower_case_span_links_a_node_written_so(curie):
    curie.add_node("ra", name="radium")
    assert _links(curie, "where was the ore for radium mined") == [("ra", "radium", 22, 28)]
    assert _links(curie, "the film about radium") == [("ra", "radium", 15, 21)]  # not "Film"
