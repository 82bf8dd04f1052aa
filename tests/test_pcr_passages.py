"""PCR's passage output ranked by the question (``passage_order``), hand-computed truth.

Graph (direction out from anchor ``a``; 2-d unit vectors, query ``q`` = (1, 0))::

    a -> b -> d        node scores (cos to q): a 0, b 0.6, c 0.8, d 1.0, e 0.9
    a -> c             hits from a: d 1.0, e 0.9, c 0.8, b 0.6, a 0
    a -> e             (e cites no passage)
    f (isolated, cites pa)

Passages and their cosines to q: pa (1, 0) 1.0 (cited by a and f), pb (0, 1) 0 (b),
pc (.6, .8) 0.6 (c), pd (0, 1) 0 (d), pn (.8, .6) 0.8 (cited by nobody).

``passage_order="question"``: 0.7·cos + 0.3·best citing hit (an anchor's own passage: 0):
pa 0.7·1 + 0 = 0.70, pc 0.42 + 0.24 = 0.66, pd 0 + 0.30 = 0.30, pb 0 + 0.18 = 0.18.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from kgpath import ConfigError, KnowledgeGraph, NodeNotFoundError
from kgpath.facade import EvidenceRetriever
from kgpath.methods.pcr import PathConstrainedRetriever, PCRConfig

PASSAGES = {"pa": [1.0, 0.0], "pb": [0.0, 1.0], "pc": [0.6, 0.8], "pd": [0.0, 1.0],
            "pn": [0.8, 0.6]}
NODES = {"a": ([0.0, 1.0], ["pa"]), "b": ([0.6, 0.8], ["pb"]), "c": ([0.8, 0.6], ["pc"]),
         "d": ([1.0, 0.0], ["pd"]), "e": ([0.9, float(np.sqrt(1 - 0.81))], []),
         "f": ([0.0, 1.0], ["pa"])}


@pytest.fixture
def graph() -> KnowledgeGraph:
    g = KnowledgeGraph()
    for pid in PASSAGES:
        g.add_passage(pid, f"text {pid}")
    for nid, (vec, prov) in NODES.items():
        g.add_node(nid, name=f"Node {nid.upper()}", provenance=prov, embedding=vec)
    for s, t in [("a", "b"), ("b", "d"), ("a", "c"), ("a", "e")]:
        g.add_edge(s, t, relation="r")
    return g


@pytest.fixture
def pcr(graph, table_embedder) -> PathConstrainedRetriever:
    table = {"q": [1.0, 0.0], **{f"text {p}": v for p, v in PASSAGES.items()}}
    return PathConstrainedRetriever(graph, embedder=table_embedder(table),
                                    config=PCRConfig.paper())


def _pairs(evidence):
    return [(e.id, e.kind) for e in evidence]


def test_question_order_is_the_default_and_hand_computed(pcr):
    res = pcr.retrieve("q", anchor="a")
    assert res.config.passage_order == "question"
    assert res.ids == ["d", "e", "c", "b", "a"]
    ev = res.evidence()
    assert _pairs(ev) == [("pa", "passage"), ("pc", "passage"), ("pd", "passage"),
                          ("pb", "passage"), ("e", "node")]  # e cites nothing: last
    assert [e.score for e in ev[:4]] == pytest.approx([0.70, 0.66, 0.30, 0.18])
    assert [e.trace["query_similarity"] for e in ev[:4]] == pytest.approx([1, 0.6, 0, 0])
    assert [e.trace["node_id"] for e in ev[:4]] == ["a", "c", "d", "b"]
    assert [e.rank for e in ev] == [1, 2, 3, 4, 5]
    assert _pairs(res.evidence(k=2)) == [("pa", "passage"), ("pc", "passage")]
    # native output is unchanged: the hits
    assert [e.id for e in res.evidence("native")] == ["d", "e", "c", "b", "a"]


def test_hits_order_is_kept_as_an_option(pcr):
    ev = pcr.retrieve("q", anchor="a", passage_order="hits").evidence()
    assert _pairs(ev) == [("pd", "passage"), ("e", "node"), ("pc", "passage"),
                          ("pb", "passage"), ("pa", "passage")]
    assert [e.score for e in ev] == pytest.approx([1.0, 0.9, 0.8, 0.6, 0.0])


def test_passage_hits_supply_candidates_beyond_k(pcr):
    # k=1: hits [d]; passage_hits=3 adds e, c as candidates; the anchor a gives pa (score 0)
    res = pcr.retrieve("q", anchor="a", k=1, passage_hits=3)
    assert res.ids == ["d"]
    assert [h.id for h in res.passages.pool] == ["e", "c"]
    ev = res.evidence()
    assert _pairs(ev) == [("pa", "passage"), ("pc", "passage"), ("pd", "passage")]
    assert ev[0].trace["anchor_id"] == "a" and ev[0].trace["hops"] == 0
    assert [e.id for e in res.evidence("native")] == ["d"]
    # passage_hits=1: only d's passage and the anchor's
    assert _pairs(pcr.retrieve("q", anchor="a", k=1, passage_hits=1).evidence()) == [
        ("pa", "passage"), ("pd", "passage")]


def test_passage_weight_extremes(pcr):
    # weight 0: the hit scores alone (d 1.0, c 0.8, b 0.6, a 0), as in hit order
    ev = pcr.retrieve("q", anchor="a", passage_weight=0.0).evidence()
    assert [e.id for e in ev if e.kind == "passage"] == ["pd", "pc", "pb", "pa"]
    # weight 1: the cosines (pa 1, pc 0.6, then pd and pb tie at 0: citation order)
    ev = pcr.retrieve("q", anchor="a", passage_weight=1.0).evidence()
    assert [e.id for e in ev if e.kind == "passage"] == ["pa", "pc", "pd", "pb"]


def test_the_corpus_is_embedded_once(pcr):
    emb = pcr.index.embedder
    pcr.retrieve("q", anchor="a")
    pcr.retrieve("q", anchor="b")
    passages = [texts for kind, texts in emb.calls if kind == "passage"]
    assert passages == [tuple(f"text {p}" for p in PASSAGES)]


def test_async_equals_sync(pcr):
    sync = pcr.retrieve("q", anchor="a", k=1, passage_hits=3).evidence()
    asyn = asyncio.run(pcr.aretrieve("q", anchor="a", k=1, passage_hits=3)).evidence()
    assert [(e.id, e.score, dict(e.trace)) for e in sync] == [
        (e.id, e.score, dict(e.trace)) for e in asyn]


def test_through_the_facade(graph, table_embedder):
    table = {"q": [1.0, 0.0], **{f"text {p}": v for p, v in PASSAGES.items()}}
    r = EvidenceRetriever("pcr", graph, embedder=table_embedder(table), k=2,
                          config=PCRConfig.paper())
    # k=2 sets the hit count (d, e) but passage_hits=20 keeps every hit a candidate
    assert _pairs(r.retrieve("q", anchor="a")) == [("pa", "passage"), ("pc", "passage")]
    assert _pairs(r.retrieve("q", anchor="a", passage_order="hits")) == [
        ("pd", "passage"), ("e", "node")]


def test_anchor_fallback_passage(pcr, graph, table_embedder):
    # nothing linked: the passage most similar to q is pa, cited by a and f (node order)
    res = pcr.retrieve("q", link_anchors=False, anchor_fallback="passage")
    assert res.anchor_resolution == "passage"
    assert [a.id for a in res.anchors] == ["a", "f"]
    res = pcr.retrieve("q", link_anchors=False, anchor_fallback="passage", max_anchors=1)
    assert [a.id for a in res.anchors] == ["a"]
    # "similar" anchors at the most similar node, d (cos 1)
    res = pcr.retrieve("q", link_anchors=False, anchor_fallback="similar")
    assert (res.anchor_resolution, res.anchor.id) == ("similarity", "d")
    with pytest.raises(NodeNotFoundError):
        pcr.retrieve("q", link_anchors=False, anchor_fallback="none")
    # no passages in the graph: "passage" acts as "similar"
    bare = KnowledgeGraph()
    for nid, (vec, _) in NODES.items():
        bare.add_node(nid, name=nid.upper(), embedding=vec)
    res = PathConstrainedRetriever(bare, embedder=table_embedder({"q": [1.0, 0.0]})).retrieve(
        "q", link_anchors=False, anchor_fallback="passage")
    assert (res.anchor_resolution, res.anchor.id, res.passages) == ("similarity", "d", None)


def test_async_passage_fallback_embeds_through_the_async_api(graph, table_embedder):
    # anchor_fallback="passage" with hit order: aretrieve must embed the corpus with
    # aembed_passages, never the blocking embed_passages inside the event loop
    class AsyncOnly(table_embedder):  # type: ignore[misc,valid-type]
        def embed_passages(self, texts, **kw):
            raise AssertionError("sync embed_passages called from aretrieve")

        async def aembed_passages(self, texts, **kw):
            return self._embed(list(texts), "passage")

    table = {"q": [1.0, 0.0], **{f"text {p}": v for p, v in PASSAGES.items()}}
    pcr = PathConstrainedRetriever(graph, embedder=AsyncOnly(table), config=PCRConfig.paper())
    res = asyncio.run(pcr.aretrieve("q", link_anchors=False, anchor_fallback="passage",
                                    passage_order="hits"))
    assert (res.anchor_resolution, [a.id for a in res.anchors]) == ("passage", ["a", "f"])


def test_max_anchors_caps_linked_anchors(graph, table_embedder):
    emb = table_embedder({"q": [1.0, 0.0], "Node B and Node C": [1.0, 0.0],
                          **{f"text {p}": v for p, v in PASSAGES.items()}})
    r = PathConstrainedRetriever(graph, embedder=emb, config=PCRConfig.paper())
    assert [a.id for a in r.retrieve("Node B and Node C").anchors] == ["b", "c"]
    assert [a.id for a in r.retrieve("Node B and Node C", max_anchors=1).anchors] == ["b"]


@pytest.mark.parametrize("bad", [dict(passage_order="nodes"), dict(passage_hits=0),
                                 dict(passage_hits=True), dict(max_anchors=0),
                                 dict(passage_weight=1.5), dict(anchor_fallback="first")])
def test_bad_options_raise_naming_the_value(bad):
    name, value = next(iter(bad.items()))
    with pytest.raises(ConfigError, match=name):
        PCRConfig(**bad)
    assert repr(value) in str(pytest.raises(ConfigError, PCRConfig, **bad).value)
