from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from kgpath import ConfigError, EmptyGraphError, GraphError, KnowledgeGraph, NodeNotFoundError
from kgpath.graph import from_networkx, from_pathrag6, to_networkx
from kgpath.index import find_by_name


def test_csr_arrays_match_edges(chain_graph):
    csr = chain_graph.csr()
    assert csr["out_indices"].dtype == np.int32
    assert csr["in_indices"].dtype == np.int32
    # node order a b c d x y -> indices 0..5
    assert csr["out_indptr"].tolist() == [0, 1, 2, 3, 4, 5, 5]
    assert csr["out_indices"].tolist() == [1, 2, 3, 1, 5]
    # in-neighbours of b (index 1) are a and d
    lo, hi = csr["in_indptr"][1], csr["in_indptr"][2]
    assert sorted(csr["in_indices"][lo:hi].tolist()) == [0, 3]
    assert chain_graph.degree("out").tolist() == [1, 1, 1, 1, 1, 0]
    assert chain_graph.degree("in").tolist() == [0, 2, 1, 1, 0, 1]


def test_bfs_distances_parents_and_cycle(chain_graph):
    r = chain_graph.bfs("a")
    ids = [chain_graph.node_at(int(i)).id for i in r.nodes]
    assert ids == ["a", "b", "c", "d"]  # the d -> b back edge adds nothing new
    assert r.dist.tolist() == [0, 1, 2, 3]
    assert r.path_to(chain_graph.index_of("d")) == [0, 1, 2, 3]


def test_bfs_depth_limit_and_directions(chain_graph):
    assert chain_graph.bfs("a", max_depth=0).nodes.tolist() == [0]
    assert chain_graph.bfs("a", max_depth=2).nodes.tolist() == [0, 1, 2]
    # in-direction from c: c <- b <- a and b <- d
    r = chain_graph.bfs("c", direction="in")
    got = {chain_graph.node_at(int(n)).id: int(d) for n, d in zip(r.nodes, r.dist)}
    assert got == {"c": 0, "b": 1, "a": 2, "d": 2}
    r = chain_graph.bfs("y", direction="both")
    assert {chain_graph.node_at(int(n)).id for n in r.nodes} == {"x", "y"}


def test_bfs_matches_networkx_on_random_graphs():
    rng = np.random.default_rng(0)
    for trial in range(20):
        n = int(rng.integers(2, 40))
        g = KnowledgeGraph()
        G = nx.DiGraph()
        for i in range(n):
            g.add_node(str(i))
            G.add_node(str(i))
        for _ in range(int(rng.integers(0, 3 * n))):
            s, t = (str(x) for x in rng.integers(0, n, 2))
            g.add_edge(s, t)
            G.add_edge(s, t)
        src = str(int(rng.integers(0, n)))
        for depth in (None, 0, 1, 2, 3):
            r = g.bfs(src, max_depth=depth)
            got = {g.node_at(int(i)).id: int(d) for i, d in zip(r.nodes, r.dist)}
            want = nx.single_source_shortest_path_length(G, src, cutoff=depth)
            assert got == want, (trial, depth)
            for node in r.nodes:  # every parent chain is a real shortest path
                path = r.path_to(int(node))
                assert len(path) - 1 == got[g.node_at(int(node)).id]
                for u, v in zip(path, path[1:]):
                    assert G.has_edge(g.node_at(u).id, g.node_at(v).id)


def test_self_loop_and_duplicate_edges_are_handled():
    g = KnowledgeGraph()
    g.add_node("a")
    g.add_node("b")
    g.add_edge("a", "a", relation="self")
    e1 = g.add_edge("a", "b", relation="r", weight=1.0, provenance=["p1"])
    e2 = g.add_edge("a", "b", relation="r", weight=2.0, provenance=["p2"])
    assert e1 == e2 and g.num_edges == 2
    merged = g.edge_at(e1)
    assert merged.weight == 2.0 and merged.provenance == ("p1", "p2")
    g.add_edge("a", "b", relation="other")  # a different relation is a different edge
    assert g.num_edges == 3
    assert g.bfs("a").nodes.tolist() == [0, 1]


def test_unknown_nodes_and_bad_values():
    g = KnowledgeGraph()
    with pytest.raises(EmptyGraphError):
        g.bfs("a")
    g.add_node("a")
    with pytest.raises(NodeNotFoundError, match="'zz'"):
        g.add_edge("a", "zz")
    with pytest.raises(NodeNotFoundError, match="'nope'"):
        g.bfs("nope")
    with pytest.raises(ConfigError, match="-1"):
        g.bfs("a", max_depth=-1)
    with pytest.raises(ConfigError, match="sideways"):
        g.bfs("a", direction="sideways")  # type: ignore[arg-type]
    with pytest.raises(GraphError):
        g.add_node("")
    g.add_node("b")
    with pytest.raises(GraphError, match="nan"):
        g.add_edge("a", "b", weight=float("nan"))


def test_find_by_name_is_case_and_space_insensitive():
    g = KnowledgeGraph()
    g.add_node("q1", name="Tower of  London")
    assert find_by_name(g, "tower of london") == [0]
    assert find_by_name(g, "London") == []


def test_from_triples_provenance_and_validation():
    g = KnowledgeGraph.from_triples(
        [("A", "likes", "B"), ("B", "likes", "C")],
        passages={"p1": "A likes B.", "p2": "B likes C."},
        provenance=[["p1"], ["p2"]],
    )
    assert g.node("B").provenance == ("p1", "p2")
    assert g.edge_at(0).provenance == ("p1",)
    assert g.passage("p2").text == "B likes C."
    with pytest.raises(GraphError, match="unknown passage"):
        KnowledgeGraph.from_triples([("A", "r", "B")], passages={}, provenance=[["zz"]])
    with pytest.raises(GraphError, match="triple #0"):
        KnowledgeGraph.from_triples([("A", "B")])


def test_networkx_round_trip(chain_graph):
    chain_graph.add_passage("p", "text")
    G = to_networkx(chain_graph)
    assert G.number_of_nodes() == 6 and G.number_of_edges() == 5
    back = from_networkx(G)
    assert [n.id for n in back.nodes] == [n.id for n in chain_graph.nodes]
    assert [(e.source, e.target, e.relation) for e in back.edges] == [
        (e.source, e.target, e.relation) for e in chain_graph.edges
    ]
    assert back.passage("p").text == "text"


def test_from_undirected_networkx_adds_both_directions():
    G = nx.Graph()
    G.add_edge("u", "v", relation="knows")
    g = from_networkx(G)
    assert g.num_edges == 2
    assert g.bfs("v").nodes.size == 2


def test_pathrag6_loader_merges_duplicate_edges(datasets):
    g = from_pathrag6(datasets / "pathrag6" / "tech")
    assert len(g) == 30
    import json

    raw = json.loads((datasets / "pathrag6" / "tech" / "edges.json").read_text())
    assert g.num_edges == len({(e["source"], e["target"]) for e in raw}) < len(raw)


def test_from_arrays_bulk_build_matches_incremental():
    ids = ["n0", "n1", "n2", "n3"]
    src, dst = [0, 1, 1, 2, 0], [1, 2, 2, 3, 3]
    g = KnowledgeGraph.from_arrays(ids, src, dst, embeddings=np.eye(4, dtype=np.float32))
    h = KnowledgeGraph()
    for i in ids:
        h.add_node(i)
    for s, t in zip(src, dst):
        h.add_edge(ids[s], ids[t])
    assert g.num_edges == h.num_edges == 4  # duplicate 1->2 merged
    for name in ("out_indptr", "out_indices", "in_indptr", "in_indices"):
        assert g.csr()[name].tolist() == h.csr()[name].tolist()
    assert g.vectors.matrix.shape == (4, 4)
    with pytest.raises(GraphError, match="out of range"):
        KnowledgeGraph.from_arrays(ids, [0], [9])
    with pytest.raises(GraphError, match="duplicates"):
        KnowledgeGraph.from_arrays(["a", "a"], [], [])


def test_bfs_scratch_is_reset_between_calls_and_threads(chain_graph):
    from concurrent.futures import ThreadPoolExecutor

    first = chain_graph.bfs("a").nodes.tolist()
    assert chain_graph.bfs("x").nodes.tolist() == [4, 5]
    assert chain_graph.bfs("a").nodes.tolist() == first
    with ThreadPoolExecutor(4) as ex:
        outs = list(ex.map(lambda s: chain_graph.bfs(s).nodes.tolist(), ["a", "x"] * 20))
    assert outs == [first, [4, 5]] * 20
    chain_graph.add_node("z")  # scratch must grow with the graph
    chain_graph.add_edge("a", "z")
    assert chain_graph.bfs("a").nodes.tolist() == [0, 1, 6, 2, 3]
