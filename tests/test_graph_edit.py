"""kgpath.graph.edit: provenance-counted removal and swapping contents, in place."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgpath.errors import GraphError
from kgpath.graph import KnowledgeGraph
from kgpath.graph.edit import remove_passages, replace_contents

PASSAGES = {"p": "a r b", "q": "b s c", "u": "c t a"}


def small() -> KnowledgeGraph:
    #   a -r-> b   (p)        node a: p, u     node b: p, q    node c: q, u   node z: none
    #   b -s-> c   (p, q)
    #   c -t-> a   (u)
    g = KnowledgeGraph()
    for nid, prov in (("a", ("p", "u")), ("b", ("p", "q")), ("c", ("q", "u")), ("z", ())):
        g.add_node(nid, nid.upper(), f"text {nid}", provenance=prov)
    for pid, text in PASSAGES.items():
        g.add_passage(pid, text)
    g.add_edge("a", "b", "r", provenance=("p",))
    g.add_edge("b", "c", "s", provenance=("p", "q"))
    g.add_edge("c", "a", "t", provenance=("u",))
    g.vectors.set({n: [float(i), 1.0] for i, n in enumerate("abcz")})
    return g


def test_removal_by_hand() -> None:
    g = small()
    v0 = g.version
    r = remove_passages(g, ["q", "u", "nope"])
    # a keeps p, b keeps p, c loses q and u and goes; b-s->c keeps p but its target is
    # gone, so it goes too; c-t->a loses u and goes; z cited nothing and stays
    assert [n.id for n in g.nodes] == ["a", "b", "z"]
    assert [(n.id, n.provenance) for n in g.nodes] == [("a", ("p",)), ("b", ("p",)),
                                                          ("z", ())]
    assert [(e.source, e.relation, e.target, e.provenance) for e in g.edges] == [
        ("a", "r", "b", ("p",))]
    assert list(g.passages) == ["p"]
    assert (r.passages, r.nodes, r.nodes_reduced, r.edges_reduced) == (("q", "u"), ("c",), 2, 0)
    assert set(r.edges) == {("b", "c", "s"), ("c", "a", "t")}
    # vectors follow their nodes; text unchanged, so kept
    np.testing.assert_array_equal(g.vectors.matrix, [[0, 1], [1, 1], [3, 1]])
    assert g.version > v0 and g.bfs("a").nodes.tolist() == [0, 1]


def test_removing_nothing_known_changes_nothing() -> None:
    g = small()
    v0 = g.version
    assert remove_passages(g, ["nope"]).passages == () and g.version == v0
    with pytest.raises(GraphError, match="string 'p'"):
        remove_passages(g, "p")
    with pytest.raises(GraphError, match="3"):
        remove_passages(g, [3])  # type: ignore[list-item]


def test_a_compact_graph_is_edited_as_objects() -> None:
    g = KnowledgeGraph.from_arrays(["a", "b"], [0], [1], relations=["r"], compact=True)
    g.add_passage("p", "text")
    g.vectors.set(np.eye(2, dtype=np.float32))
    remove_passages(g, ["p"])  # nodes without provenance are not the passage's to remove
    assert not g.compact and [n.id for n in g.nodes] == ["a", "b"] and not g.passages
    np.testing.assert_array_equal(g.vectors.matrix, np.eye(2))


def test_replace_contents_keeps_vectors_of_unchanged_nodes() -> None:
    g = small()
    src = KnowledgeGraph()
    src.add_node("b", "B", "text b")  # same search text: keeps its vector
    src.add_node("a", "A", "edited")  # changed: no vector
    src.add_node("n", "N")  # new: no vector
    src.add_passage("x", "x")
    v0 = g.version
    replace_contents(g, src)
    assert [n.id for n in g.nodes] == ["b", "a", "n"] and list(g.passages) == ["x"]
    assert g.vectors.missing() == [1, 2] and g.version > max(v0, src.version)
    assert g.vectors.owner is None
    np.testing.assert_array_equal(g.vectors._g._emb[0], [1.0, 1.0])


TRIPLES = st.lists(st.tuples(st.sampled_from("abcde"), st.sampled_from("rs"),
                             st.sampled_from("abcde"),
                             st.sets(st.sampled_from("pqrs"), min_size=1)),
                   min_size=1, max_size=8)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(triples=TRIPLES, gone=st.sets(st.sampled_from("pqrst")))
def test_removal_equals_building_without_the_passages(triples, gone) -> None:
    """Brute force: build the graph only from the evidence that survives."""

    def build(keep) -> KnowledgeGraph:
        g = KnowledgeGraph()
        prov: dict[str, list[str]] = {}
        for h, _, t, ps in triples:
            for n in (h, t):
                prov.setdefault(n, [])
                prov[n] += [p for p in sorted(ps) if keep(p)]
        for n, ps in prov.items():
            if ps:  # a node no surviving passage supports is not built
                g.add_node(n, provenance=tuple(dict.fromkeys(ps)))
        for p in "pqrs":
            if keep(p):
                g.add_passage(p, p)
        for h, r, t, ps in triples:
            kept = [p for p in sorted(ps) if keep(p)]
            if kept and h in g and t in g:
                g.add_edge(h, t, r, provenance=kept)
        return g

    g = build(lambda p: True)
    remove_passages(g, sorted(gone))
    ref = build(lambda p: p not in gone)
    assert [(n.id, n.provenance) for n in g.nodes] == [(n.id, n.provenance) for n in ref.nodes]
    assert sorted((e.source, e.relation, e.target, e.provenance) for e in g.edges) == sorted(
        (e.source, e.relation, e.target, e.provenance) for e in ref.edges)
    assert list(g.passages) == list(ref.passages)


def test_set_contents_refuses_what_a_graph_cannot_hold() -> None:
    from kgpath.graph import Edge, Node
    from kgpath.graph.edit import set_contents

    g = KnowledgeGraph()
    with pytest.raises(GraphError, match="duplicate node id 'a'"):
        set_contents(g, [Node("a", "A"), Node("a", "B")], [])
    with pytest.raises(GraphError, match="unknown node 'z'"):
        set_contents(g, [Node("a", "A")], [Edge("a", "z", "r")])
    with pytest.raises(GraphError, match="duplicate edge"):
        set_contents(g, [Node("a", "A"), Node("b", "B")], [Edge("a", "b", "r")] * 2,
                     check=False)
    assert len(g) == 0
