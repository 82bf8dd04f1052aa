"""PathRAG against hand-computed resources (Eq. 2), early stops (Eq. 3) and reliabilities (Eq. 4).

Every expected number below was worked out by hand from the paper's equations with
alpha = 0.8 and theta = 0.05 unless a test says otherwise; the arithmetic is in comments.
"""

from __future__ import annotations

import numpy as np
import pytest

from kgpath import HashingEmbedder, KnowledgeGraph
from kgpath.methods.pathrag import (
    FlowAdjacency,
    PathRAGConfig,
    PathRAGRetriever,
    best_paths_from,
    flow_adjacency,
    path_reliability,
    propagate_resources,
    prune_paths,
    retrieve_nodes,
    textual_path,
)


def graph(edges: list[tuple[str, str]], extra_nodes: tuple[str, ...] = ()) -> KnowledgeGraph:
    g = KnowledgeGraph()
    for u, v in edges:
        for x in (u, v):
            if x not in g:
                g.add_node(x, name=x, text=x)
    for x in extra_nodes:
        if x not in g:
            g.add_node(x, name=x, text=x)
    for u, v in edges:
        g.add_edge(u, v, relation="to", text=f"{u} to {v}")
    return g


def ids(g: KnowledgeGraph, path: tuple[int, ...]) -> tuple[str, ...]:
    return tuple(g.node_at(i).id for i in path)


def pool_view(g: KnowledgeGraph, pool) -> list[tuple[tuple[str, ...], float]]:
    return [(ids(g, c.nodes), c.reliability) for c in pool]


# ---------------------------------------------------------------- chain
CHAIN = [("a", "b"), ("b", "c"), ("c", "d")]


def test_chain_resources_eq2():
    g = graph(CHAIN)
    prop = propagate_resources(flow_adjacency(g), g.index_of("a"))
    # S(a)=1; S(b)=0.8*1/1=0.8; S(c)=0.8*0.8/1=0.64; S(d)=0.8*0.64/1=0.512
    res = {g.node_at(i).id: s for i, s in prop.resources().items()}
    assert res == pytest.approx({"a": 1.0, "b": 0.8, "c": 0.64, "d": 0.512})
    assert {g.node_at(i).id: lv for i, lv in prop.levels().items()} == {
        "a": 0,
        "b": 1,
        "c": 2,
        "d": 3,
    }
    assert {g.node_at(i).id for i in prop.emitting_nodes()} == {"a", "b", "c"}  # d is a sink
    assert prop.stopped_nodes() == set()


def test_chain_reliability_eq4_and_ranking():
    g = graph(CHAIN)
    pool = prune_paths(flow_adjacency(g), range(4))
    # a->b: (1+0.8)/1 = 1.8 ; a->b->c: (1+0.8+0.64)/2 = 1.22 ; a->..->d: 2.952/3 = 0.984
    assert pool_view(g, pool) == [
        (("a", "b"), pytest.approx(1.8)),
        (("b", "c"), pytest.approx(1.8)),
        (("c", "d"), pytest.approx(1.8)),
        (("a", "b", "c"), pytest.approx(1.22)),
        (("b", "c", "d"), pytest.approx(1.22)),
        (("a", "b", "c", "d"), pytest.approx(0.984)),
    ]
    assert pool.stats["ordered_pairs"] == 12
    assert pool.stats["pairs_with_path"] == 6  # nothing flows backwards in a directed chain


def test_chain_early_stop_eq3():
    g = graph(CHAIN)
    # theta = 0.7 from a: a 1/1 >= 0.7 emits; b 0.8/1 >= 0.7 emits; c 0.64/1 < 0.7 stops.
    prop = propagate_resources(flow_adjacency(g), 0, theta=0.7)
    assert {g.node_at(i).id for i in prop.stopped_nodes()} == {"c"}
    assert "d" not in {g.node_at(i).id for i in prop.resources()}
    # from b the same c holds S=0.8 (one hop nearer), 0.8 >= 0.7, so d is reached (0.64)
    pool = prune_paths(flow_adjacency(g), range(4), theta=0.7)
    paths = [p for p, _ in pool_view(g, pool)]
    assert ("a", "b", "c", "d") not in paths
    assert ("b", "c", "d") in paths
    assert len(paths) == 5


def test_chain_alpha_one_means_no_decay():
    g = graph(CHAIN)
    prop = propagate_resources(flow_adjacency(g), 0, alpha=1.0)
    assert list(prop.resources().values()) == pytest.approx([1.0, 1.0, 1.0, 1.0])
    pool = prune_paths(flow_adjacency(g), [0, 3], alpha=1.0)
    assert pool_view(g, pool) == [(("a", "b", "c", "d"), pytest.approx(4 / 3))]


def test_max_hops_caps_path_length():
    g = graph(CHAIN)
    pool = prune_paths(flow_adjacency(g), range(4), max_hops=2)
    assert max(c.hops for c in pool) == 2
    assert len(pool) == 5


# ---------------------------------------------------------------- diamond
DIAMOND = [("s", "a"), ("s", "b"), ("a", "c"), ("b", "c"), ("b", "e"), ("c", "t"), ("e", "t")]


def test_diamond_resources_sum_over_in_neighbours():
    g = graph(DIAMOND)
    prop = propagate_resources(flow_adjacency(g), g.index_of("s"))
    res = {g.node_at(i).id: s for i, s in prop.resources().items()}
    # S(a)=S(b)=0.8*1/2=0.4
    # S(c)=0.8*0.4/1 (from a) + 0.8*0.4/2 (from b) = 0.32+0.16 = 0.48 ; S(e)=0.16
    # S(t)=0.8*0.48/1 + 0.8*0.16/1 = 0.384+0.128 = 0.512
    assert res == pytest.approx({"s": 1, "a": 0.4, "b": 0.4, "c": 0.48, "e": 0.16, "t": 0.512})


@pytest.mark.parametrize(
    ("m", "expected"),
    [
        # s-a-c-t and s-b-c-t both sum to 1+0.4+0.48+0.512 = 2.392 -> 0.797333; tie broken
        # by the node-index sequence (a was added before b); s-b-e-t: 2.072/3 = 0.690667
        (1, [("s", "a", "c", "t")]),
        (2, [("s", "a", "c", "t"), ("s", "b", "c", "t")]),
        (3, [("s", "a", "c", "t"), ("s", "b", "c", "t"), ("s", "b", "e", "t")]),
    ],
)
def test_diamond_best_paths_per_pair(m, expected):
    g = graph(DIAMOND)
    pool = prune_paths(flow_adjacency(g), [g.index_of("s"), g.index_of("t")], paths_per_pair=m)
    assert [p for p, _ in pool_view(g, pool)] == expected
    want = {
        ("s", "a", "c", "t"): 2.392 / 3,
        ("s", "b", "c", "t"): 2.392 / 3,
        ("s", "b", "e", "t"): 2.072 / 3,
    }
    for p, r in pool_view(g, pool):
        assert r == pytest.approx(want[p])


def test_resource_updated_at_most_once():
    # s->x->t reaches t at level 2; the longer s->y->z->t arrives at level 3 and is ignored.
    g = graph([("s", "x"), ("s", "y"), ("x", "t"), ("y", "z"), ("z", "t")])
    prop = propagate_resources(flow_adjacency(g), g.index_of("s"))
    res = {g.node_at(i).id: s for i, s in prop.resources().items()}
    # S(x)=S(y)=0.4 ; S(t)=0.8*0.4=0.32 (z's later 0.8*0.32=0.256 is NOT added) ; S(z)=0.32
    assert res == pytest.approx({"s": 1, "x": 0.4, "y": 0.4, "t": 0.32, "z": 0.32})
    pool = prune_paths(flow_adjacency(g), [g.index_of("s"), g.index_of("t")])
    assert pool_view(g, pool) == [(("s", "x", "t"), pytest.approx((1 + 0.4 + 0.32) / 2))]


# ---------------------------------------------------------------- cycle + hub
def cycle_hub_graph() -> KnowledgeGraph:
    # cycle a->b->c->a ; a->h ; hub h -> x1..x25 ; x1 -> c
    edges = [("a", "b"), ("b", "c"), ("c", "a"), ("a", "h")]
    edges += [("h", f"x{i}") for i in range(1, 26)]
    edges += [("x1", "c")]
    return graph(edges)


def test_cycle_and_hub_resources():
    g = cycle_hub_graph()
    adj = flow_adjacency(g)
    assert adj.degree[g.index_of("h")] == 25
    prop = propagate_resources(adj, g.index_of("a"))
    res = {g.node_at(i).id: s for i, s in prop.resources().items()}
    # S(a)=1, |N(a)|=2 -> S(b)=S(h)=0.4 ; S(c)=0.8*0.4=0.32 ; c->a is ignored (a is settled,
    # so S(a) stays 1, not 1+0.256). h: 0.4/25 = 0.016 < 0.05 -> stopped, x_i never reached.
    assert res == pytest.approx({"a": 1.0, "b": 0.4, "h": 0.4, "c": 0.32})
    assert {g.node_at(i).id for i in prop.stopped_nodes()} == {"h"}


def test_hub_start_is_stopped_by_eq3():
    g = cycle_hub_graph()
    adj = flow_adjacency(g)
    h = g.index_of("h")
    # S(h)=1 but 1/25 = 0.04 < 0.05: Eq. 3 applies to the start node too.
    prop = propagate_resources(adj, h)
    assert prop.stopped_nodes() == {h} and prop.nodes.tolist() == [h]
    # theta = 0.03: 0.04 >= 0.03 -> every x_i gets 0.8/25 = 0.032
    prop = propagate_resources(adj, h, theta=0.03)
    x = {g.node_at(i).id: s for i, s in prop.resources().items() if g.node_at(i).id[0] == "x"}
    assert len(x) == 25 and all(v == pytest.approx(0.032) for v in x.values())


def test_cycle_and_hub_pool():
    g = cycle_hub_graph()
    sel = [g.index_of(n) for n in ("a", "c", "h", "x1")]
    pool = prune_paths(flow_adjacency(g), sel)
    # c->a: 1.8 ; x1->c: 1.8 ; a->h: (1+0.4)/1 = 1.4 ; x1->c->a: (1+0.8+0.64)/2 = 1.22
    # c->a->h: (1+0.8+0.32)/2 = 1.06 ; x1->c->a->h: (1+0.8+0.64+0.256)/3 = 0.898667
    # a->b->c: (1+0.4+0.32)/2 = 0.86 ; nothing from h (stopped) ; a->x1 pruned at the hub
    assert pool_view(g, pool) == [
        (("c", "a"), pytest.approx(1.8)),
        (("x1", "c"), pytest.approx(1.8)),
        (("a", "h"), pytest.approx(1.4)),
        (("x1", "c", "a"), pytest.approx(1.22)),
        (("c", "a", "h"), pytest.approx(1.06)),
        (("x1", "c", "a", "h"), pytest.approx(2.696 / 3)),
        (("a", "b", "c"), pytest.approx(0.86)),
    ]
    per = {g.node_at(p["start"]).id: p for p in pool.stats["propagations"]}
    assert per["h"]["emitted"] == 0 and per["h"]["early_stopped"] == 1
    assert pool.stats["pairs_with_path"] == 7


# ---------------------------------------------------------------- undirected
def test_undirected_chain_dedupes_reverse_paths():
    g = graph(CHAIN)
    adj = flow_adjacency(g, "undirected")
    assert adj.degree.tolist() == [1, 2, 2, 1]
    prop = propagate_resources(adj, 0)
    # from a: b=0.8 ; b: 0.8/2=0.4 -> c=0.32 ; c: 0.32/2=0.16 -> d=0.128
    assert list(prop.resources().values()) == pytest.approx([1, 0.8, 0.32, 0.128])
    pool = prune_paths(adj, range(4))
    # reverse pairs compete: a->b 1.8 beats b->a (1+0.4)/1=1.4; b->c 1.4 ties c->b 1.4 (the
    # smaller sequence wins); d->c 1.8 beats c->d 1.4; a-b-c (1+0.8+0.32)/2=1.06 beats c-b-a
    # (1+0.4+0.16)/2=0.78; d-c-b 1.06 beats b-c-d 0.78; a..d ties d..a at 2.248/3.
    assert pool_view(g, pool) == [
        (("a", "b"), pytest.approx(1.8)),
        (("d", "c"), pytest.approx(1.8)),
        (("b", "c"), pytest.approx(1.4)),
        (("a", "b", "c"), pytest.approx(1.06)),
        (("d", "c", "b"), pytest.approx(1.06)),
        (("a", "b", "c", "d"), pytest.approx(2.248 / 3)),
    ]
    assert pool.stats["reverse_duplicates_removed"] == 6


def test_undirected_path_marks_reversed_hops():
    g = graph([("a", "b"), ("c", "b")])
    r = PathRAGRetriever(
        g, embedder=HashingEmbedder(), config=PathRAGConfig(direction="undirected")
    )
    res = r.retrieve_from_nodes("q", ["a", "c"])
    p = res.paths[0]
    assert p.ids == ("a", "b", "c") and p.reversed_hops == (False, True)
    assert p.describe() == "a -[to]-> b <-[to]- c"
    directed = r.retrieve_from_nodes("q", ["a", "c"], direction="directed")
    assert directed.empty_reason == "no_path"


# ---------------------------------------------------------------- distinct neighbours
def test_parallel_relations_count_once_in_degree_and_all_appear_in_text():
    g = graph([("a", "b"), ("a", "c")])
    g.add_edge("a", "b", relation="also", text="a also b")
    adj = flow_adjacency(g)
    assert adj.degree[g.index_of("a")] == 2  # |N(a,.)| = |{b, c}|
    r = PathRAGRetriever(g, embedder=HashingEmbedder(), config=PathRAGConfig.literal_eq4())
    p = r.retrieve_from_nodes("q", ["a", "b"]).paths[0]
    assert p.reliability == pytest.approx(1 + 0.4)
    assert len(p.hop_edges[0]) == 2
    assert p.text == "a | a to b; a also b | b"  # Eq. 5


def test_flow_adjacency_cache_follows_graph_changes():
    g = graph(CHAIN)
    first = flow_adjacency(g)
    assert flow_adjacency(g) is first
    g.add_edge("a", "c", relation="to")
    assert flow_adjacency(g).degree[0] == 2


def test_from_edges_builds_distinct_sorted_neighbours():
    adj = FlowAdjacency.from_edges(3, np.array([0, 0, 0, 2]), np.array([2, 1, 2, 0]), "directed")
    assert adj.indptr.tolist() == [0, 2, 2, 3] and adj.indices.tolist() == [1, 2, 0]


# ---------------------------------------------------------------- Eq. 4 / Eq. 5 helpers
def test_path_reliability_eq4():
    assert path_reliability([1.0, 0.4, 0.48, 0.512]) == pytest.approx(2.392 / 3)
    with pytest.raises(Exception, match="at least one edge"):
        path_reliability([1.0])


def test_textual_path_eq5_uses_node_and_edge_texts():
    g = KnowledgeGraph()
    g.add_node("mc", name="Marie Curie", text="Physicist and chemist.")
    g.add_node("ra", name="radium", text="radium is an element.")
    g.add_edge("mc", "ra", relation="discovered")
    out = textual_path([g.node("mc"), g.node("ra")], [[g.edges[0]]])
    # the name is prefixed when the node text lacks it; an edge without text uses its relation
    assert out == (
        "Marie Curie. Physicist and chemist. | Marie Curie discovered radium"
        " | radium is an element."
    )


def test_best_paths_from_accepts_index_list():
    g = graph(DIAMOND)
    prop = propagate_resources(flow_adjacency(g), 0)
    out = best_paths_from(prop, [g.index_of("t"), 0])  # the start itself is never a target
    assert [ids(g, c.nodes) for c in out] == [("s", "a", "c", "t")]


def test_propagate_rejects_bad_start():
    g = graph(CHAIN)
    with pytest.raises(Exception, match="out of range"):
        propagate_resources(flow_adjacency(g), 99)


def test_batched_propagation_equals_single_start_runs():
    g = cycle_hub_graph()
    adj = flow_adjacency(g)
    starts = [g.index_of(n) for n in ("a", "c", "x1")]
    many = propagate_resources(adj, starts)
    for slot, s in enumerate(starts):
        one = propagate_resources(adj, s)
        assert many.resources(slot) == one.resources()
        assert many.levels(slot) == one.levels()


# ---------------------------------------------------------------- 4.1 node retrieval
def test_retrieve_nodes_iterates_keywords_round_robin():
    kw = np.array([[1, 0, 0], [0, 1, 0]], dtype=np.float32)
    nodes = np.array(
        [
            [0.6, 0.8, 0.0],  # 0: k1 0.6, k2 0.8
            [1.0, 0.0, 0.0],  # 1: k1 1.0
            [0.0, 1.0, 0.0],  # 2: k2 1.0
            [0.8, 0.6, 0.0],  # 3: k1 0.8, k2 0.6
            [0.0, 0.0, 1.0],  # 4: neither
        ],
        dtype=np.float32,
    )
    # k1 ranks 1,3,0 ; k2 ranks 2,0,3 ; turns: k1->1, k2->2, k1->3, k2->0
    got = retrieve_nodes(kw, nodes, 4)
    assert [(i, k) for i, k, _ in got] == [(1, 0), (2, 1), (3, 0), (0, 1)]
    assert [s for _, _, s in got] == pytest.approx([1.0, 1.0, 0.8, 0.8])
    assert len(retrieve_nodes(kw, nodes, 50)) == 5  # never more than |V|


def test_retriever_matches_keywords_against_node_names(table_embedder):
    from kgpath import ScriptedLLM

    g = graph(DIAMOND)
    vecs = {n: np.eye(6)[i].tolist() for i, n in enumerate(["s", "a", "b", "c", "e", "t"])}
    emb = table_embedder(vecs)
    llm = ScriptedLLM(['{"entities": ["s", "t"], "concepts": []}'])
    cfg = PathRAGConfig.literal_eq4(num_nodes=2)  # one best path per pair (literal Eq. 4)
    r = PathRAGRetriever(g, embedder=emb, llm=llm, config=cfg)
    res = r.retrieve("How is s linked to t?")
    assert res.keyword_source == "llm" and res.keywords == ("s", "t")
    assert [(n.id, n.keyword) for n in res.nodes] == [("s", "s"), ("t", "t")]
    assert [p.ids for p in res.paths] == [("s", "a", "c", "t")]
    assert ("passage", ("s", "a", "b", "c", "e", "t")) in emb.calls  # names, not texts
    assert "How is s linked to t?" in llm.prompts[0]


def test_repr_of_config_shows_paper_defaults():
    c = PathRAGConfig()
    assert (c.num_nodes, c.top_k, c.alpha, c.theta) == (40, 15, 0.8, 0.05)
    lt = PathRAGConfig.lite()
    assert (lt.num_nodes, lt.top_k, lt.alpha, lt.theta) == (20, 5, 0.8, 0.05)
