"""Property test: the adapter's documents equal a networkx brute-force reference.

For random small directed graphs (cycles, self-loops and duplicate edges allowed) and a
``k`` larger than the graph, the returned ids must be exactly the nodes networkx can reach
from the anchor within ``max_depth``, each with networkx's shortest-path length as ``hops``
and ``kgpath_node_ids`` made of real edges whose relation labels match ``kgpath_relations``.
"""

from __future__ import annotations

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_kgpath import PathConstrainedRetriever

from kgpath import HashingEmbedder, KnowledgeGraph
from kgpath.methods.pcr import PCRConfig

PAPER = PCRConfig.paper()  # the paper's reachability: out-edges, unlimited depth

EMBEDDER = HashingEmbedder(dim=32)


@st.composite
def graphs(draw: st.DrawFn) -> tuple[int, list[tuple[int, int]]]:
    n = draw(st.integers(min_value=1, max_value=9))
    edges = draw(
        st.lists(
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n
        )
    )
    return n, edges


@settings(max_examples=40, deadline=None)
@given(
    graph=graphs(),
    anchor=st.integers(min_value=0, max_value=8),
    max_depth=st.one_of(st.none(), st.integers(min_value=0, max_value=3)),
)
def test_documents_match_networkx(
    graph: tuple[int, list[tuple[int, int]]], anchor: int, max_depth: int | None
) -> None:
    n, edges = graph
    anchor %= n
    g = KnowledgeGraph()
    ref = nx.DiGraph()
    for i in range(n):
        g.add_node(f"n{i}", f"node {i}", f"text of node number {i}")
        ref.add_node(f"n{i}")
    for s, t in edges:
        g.add_edge(f"n{s}", f"n{t}", f"r{s}_{t}")
        ref.add_edge(f"n{s}", f"n{t}")
    r = PathConstrainedRetriever.from_graph(g, config=PAPER,
                                            embedding=EMBEDDER, anchor=f"n{anchor}", k=n + 1)
    docs = r.invoke("node number", max_depth=max_depth)
    expected = nx.single_source_shortest_path_length(ref, f"n{anchor}", cutoff=max_depth)
    assert {d.id: d.metadata["kgpath_hops"] for d in docs} == expected
    scores = [d.metadata["kgpath_score"] for d in docs]
    assert scores == sorted(scores, reverse=True)
    for d in docs:
        path = d.metadata["kgpath_node_ids"]
        assert path[0] == f"n{anchor}" and path[-1] == d.id
        assert len(path) == d.metadata["kgpath_hops"] + 1
        assert d.metadata["kgpath_relations"] == [
            f"r{s[1:]}_{t[1:]}" for s, t in zip(path[:-1], path[1:], strict=True)
        ]
        assert all(ref.has_edge(s, t) for s, t in zip(path[:-1], path[1:], strict=True))
