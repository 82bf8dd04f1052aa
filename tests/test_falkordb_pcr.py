"""PCR over FalkorDB equals the in-memory retriever: hits, paths, and passages by the question.

Truth: :class:`~kgpath.methods.pcr.PathConstrainedRetriever` on the same ``GraphIndex``.
With ``passage_order="question"`` (the default) the database side reads the stored vectors
of the passages its hits and anchors cite (:func:`~kgpath.methods.pcr.passages.
stored_passage_vectors`) and ranks them with the in-memory rule; the propagation re-rank
walks the whole graph, so a store keeps the method's order and the in-memory side is
compared with ``rerank=None``. Anchors come from the question (linked by entity key in
both), from a given id and from a name; the defaults, ``PCRConfig.paper()`` and hit order.
"""

from __future__ import annotations

import asyncio
import random

import pytest

from kgpath import GraphIndex, HashingEmbedder, KnowledgeGraph
from kgpath.backends.cypher import load_graph
from kgpath.data import demo_corpus, load_demo_graph
from kgpath.methods.pcr import CypherPCR, PathConstrainedRetriever, PCRConfig

pytestmark = pytest.mark.falkordb

CONFIGS = {
    "defaults": PCRConfig(),
    "paper": PCRConfig.paper(),
    "hits_order": PCRConfig(passage_order="hits"),
    "deep_both": PCRConfig(max_depth=3, direction="both", passage_hits=12),
}


def pair(index, drv, cfg):
    schema = load_graph(drv, index, replace=True)
    mem = PathConstrainedRetriever(index, config=PCRConfig(**{
        **{f: getattr(cfg, f) for f in cfg.__dataclass_fields__}, "rerank": None}))
    return mem, CypherPCR(drv, embedder=index.embedder, schema=schema, config=cfg)


def assert_same(a, b):
    assert [x.id for x in b.anchors] == [x.id for x in a.anchors]
    assert b.reachable_count == a.reachable_count
    assert [(h.id, h.hops, h.path) for h in b.hits] == [(h.id, h.hops, h.path) for h in a.hits]
    assert [h.score for h in b.hits] == pytest.approx([h.score for h in a.hits], abs=1e-6)
    for output in ("passages", "native"):
        ea, eb = a.evidence(output), b.evidence(output)
        assert [(e.id, e.kind, e.text, e.trace) for e in eb] == [
            (e.id, e.kind, e.text, e.trace) for e in ea]
        assert [e.score for e in eb] == pytest.approx([e.score for e in ea], abs=1e-6)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_pcr_demo_graph_equals_in_memory(falkordb_driver, name):
    index = GraphIndex(load_demo_graph(), HashingEmbedder(64))
    mem, db = pair(index, falkordb_driver, CONFIGS[name])
    passages = 0
    for q in [q["query"] for q in demo_corpus()["queries"]]:
        a, b = mem.retrieve(q), db.retrieve(q)
        assert_same(a, b)
        passages += sum(e.kind == "passage" for e in b.evidence())
    assert passages  # the passage ranking is exercised, not only node hits
    a = mem.retrieve("radium", anchor_name="marie curie")
    assert_same(a, db.retrieve("radium", anchor_name="marie curie"))


def test_pcr_random_graphs_with_ties_equal_in_memory_async(falkordb_driver):
    for seed in range(4):
        rnd = random.Random(seed)
        g = KnowledgeGraph()
        for j in range(8):
            g.add_passage(f"p{j}", f"passage {j % 3}")  # repeated texts: tied cosines
        for i in range(40):
            g.add_node(f"n{i}", name=f"Name {i % 7}", text=f"text {rnd.choice('abcd')}",
                       provenance=rnd.sample([f"p{j}" for j in range(8)] + ["gone"], 2))
        for _ in range(90):
            g.add_edge(f"n{rnd.randrange(40)}", f"n{rnd.randrange(40)}", rnd.choice("rs"))
        index = GraphIndex(g, HashingEmbedder(16))
        for cfg in (PCRConfig(), PCRConfig.paper()):
            mem, db = pair(index, falkordb_driver, cfg)
            for q, anchor in (("text a", "n3"), ("Name 2 and Name 5", None)):
                a = mem.retrieve(q, anchor=anchor)
                b = asyncio.run(db.aretrieve(q, anchor=anchor))
                assert_same(a, b)
