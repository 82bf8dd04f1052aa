"""Incremental vectors (issue 21): after any additions and edits, refresh() == a fresh build."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kgpath import HashingEmbedder, KnowledgeGraph
from kgpath.index import GraphIndex
from kgpath.index.graph_vectors import embed_graph

WORDS = ["Ada", "London", "Babbage", "engine", "Paris", "poem"]
words = st.sampled_from(WORDS)
texts = st.lists(words, min_size=1, max_size=4).map(" ".join)


@st.composite
def steps(draw: st.DrawFn) -> list[tuple[str, ...]]:
    """add_passage / add_node / add_edge steps over a small vocabulary."""
    out = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["passage", "node", "edge"]))
        if kind == "passage":
            out.append(("passage", f"p{draw(st.integers(0, 4))}", draw(texts)))
        elif kind == "node":
            out.append(("node", draw(words), draw(st.sampled_from(["", "a", "b"])),
                        *draw(st.lists(st.sampled_from([f"p{i}" for i in range(5)]),
                                       max_size=2))))
        else:
            out.append(("edge", draw(words), draw(words)))
    return out


def _apply(g: KnowledgeGraph, todo: list[tuple[str, ...]]) -> None:
    for step in todo:
        if step[0] == "passage":
            g.add_passage(step[1], step[2])
        elif step[0] == "node":
            prov = tuple(p for p in step[3:] if p in g.passages)
            g.add_node(step[1], name=step[1], text=step[2], provenance=prov)
        elif step[1] in g and step[2] in g:
            g.add_edge(step[1], step[2], relation="r")


def _rebuilt(g: KnowledgeGraph, drop: frozenset[str] = frozenset()) -> KnowledgeGraph:
    """The same records in a new graph without any vector; passages in ``drop`` deleted
    (with their citations, and the nodes that cited only them)."""
    out = KnowledgeGraph()
    for p in g.passages.values():
        if p.id not in drop:
            out.add_passage(p.id, p.text)
    for n in g.nodes:
        prov = tuple(p for p in n.provenance if p not in drop)
        if prov or not n.provenance:
            out.add_node(n.id, name=n.name, text=n.text, provenance=prov)
    for e in g.edges:
        if e.source in out and e.target in out:
            out.add_edge(e.source, e.target, relation=e.relation, provenance=e.provenance)
    return out


@settings(max_examples=100, deadline=None)
@given(todo=steps())
def test_refresh_after_changes_equals_a_fresh_build(todo):
    emb = HashingEmbedder(32)
    g = KnowledgeGraph.from_triples([("Ada", "r", "London")], {"p0": "Ada in London"},
                                    provenance=[["p0"]])
    embed_graph(g, emb)
    index = GraphIndex(g, emb)
    index.refresh()
    _apply(g, todo)
    index.refresh()
    fresh = _rebuilt(g)
    embed_graph(fresh, HashingEmbedder(32))
    np.testing.assert_allclose(g.vectors.matrix, fresh.vectors.matrix, atol=1e-6)
    pv = index.passage_vectors()
    assert pv.ids == tuple(g.passages)
    want = HashingEmbedder(32).embed_passages([p.text for p in g.passages.values()])
    np.testing.assert_allclose(pv.matrix, want, atol=1e-6)


@settings(max_examples=100, deadline=None)
@given(todo=steps(), drop=st.sets(st.sampled_from([f"p{i}" for i in range(5)])))
def test_use_graph_after_deletions_equals_a_fresh_build(todo, drop):
    emb = HashingEmbedder(32)
    g = KnowledgeGraph.from_triples([("Ada", "r", "London")], {"p0": "Ada in London"},
                                    provenance=[["p0"]])
    embed_graph(g, emb)
    index = GraphIndex(g, emb)  # the index follows the graph's changes from here on
    _apply(g, todo)
    index.refresh()
    smaller = _rebuilt(g, frozenset(drop))
    if not len(smaller):
        return
    counts = index.use_graph(smaller)
    assert counts["passages_embedded"] == 0  # every kept passage carried over
    fresh = _rebuilt(smaller)
    if fresh.passages:
        embed_graph(fresh, HashingEmbedder(32))
        np.testing.assert_allclose(smaller.vectors.matrix, fresh.vectors.matrix, atol=1e-6)
