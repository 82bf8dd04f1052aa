"""PathRAG's default reliability, as the authors' code computes it, against an oracle.

``authors_oracle`` below is a plain-Python transcription of the authors' algorithm
(``BUPT-GAMMA/PathRAG``, ``PathRAG/operate.py``: ``find_paths_and_edges_with_stats``,
``bfs_weighted_paths`` and ``_find_most_related_edges_from_entities3``), written from their
code's logic with networkx, with one deliberate change: where the authors iterate a Python
set or ``nx.Graph`` insertion order, it iterates node-index order (documented in
:mod:`kgpath.methods.pathrag.edgeflow`). The library must return the same top-K paths (ids
and order) with the same reliabilities on random graphs. Hand-computed cases follow.
"""

from __future__ import annotations

import random
import warnings
from collections import defaultdict

import networkx as nx
import pytest

from kgpath import ConfigError, HashingEmbedder, KnowledgeGraph, ScriptedLLM
from kgpath.methods.pathrag import (
    PathRAGConfig,
    PathRAGRetriever,
    edge_flow_reliability,
    parse_keyword_split,
    retrieve_nodes,
)


# ---------------------------------------------------------------- the oracle
def authors_oracle(
    G: nx.Graph, source_nodes: list[int], K: int = 15, threshold: float = 0.3, alpha: float = 0.8
) -> list[tuple[list[int], float]]:
    """The authors' path retrieval (3 hops, undirected), node-index order for sets."""
    result: dict[tuple[int, int], list[list[int]]] = defaultdict(list)
    hop_counts = {1: 0, 2: 0, 3: 0}

    def dfs(current: int, target: int, path: list[int], depth: int) -> None:
        if depth > 3:
            return
        if current == target:
            result[(path[0], target)].append(list(path))
            hop_counts[depth] += 1
            return
        for neighbor in sorted(G.neighbors(current)):
            if neighbor not in path:
                dfs(neighbor, target, path + [neighbor], depth + 1)

    for node1 in source_nodes:
        for node2 in source_nodes:
            if node1 != node2:
                dfs(node1, node2, [node1], 0)

    all_results: list[tuple[list[int], float]] = []
    for node1 in source_nodes:
        for node2 in source_nodes:
            if node1 != node2 and (node1, node2) in result:
                all_results += bfs_weighted_paths(
                    result[(node1, node2)], node1, node2, threshold, alpha
                )
    all_results = sorted(all_results, key=lambda x: x[1], reverse=True)
    seen: set[tuple[int, ...]] = set()
    result_edge = []
    for path, weight in all_results:
        key = tuple(sorted(path))
        if key not in seen:
            seen.add(key)
            result_edge.append((path, weight))
    length = sum(int(hop_counts[h] / 2) for h in (1, 2, 3))
    return result_edge[: min(K, length)]


def bfs_weighted_paths(
    paths: list[list[int]], source: int, target: int, threshold: float, alpha: float
) -> list[tuple[list[int], float]]:
    """``bfs_weighted_paths`` of the authors' code, three explicit levels."""
    edge_weights: dict[tuple[int, int], float] = defaultdict(float)
    follow: dict[int, set[int]] = {}
    for p in paths:
        for i in range(len(p) - 1):
            follow.setdefault(p[i], set()).add(p[i + 1])
    for n1 in sorted(follow[source]):
        edge_weights[(source, n1)] += 1 / len(follow[source])
        if n1 == target:
            continue
        if edge_weights[(source, n1)] > threshold:
            for n2 in sorted(follow[n1]):
                edge_weights[(n1, n2)] += edge_weights[(source, n1)] * alpha / len(follow[n1])
                if n2 == target:
                    continue
                if edge_weights[(n1, n2)] > threshold:
                    for n3 in sorted(follow[n2]):
                        edge_weights[(n2, n3)] += (
                            edge_weights[(n1, n2)] * alpha / len(follow[n2])
                        )
    out = []
    for p in paths:
        w = 0.0
        for i in range(len(p) - 1):
            w += edge_weights.get((p[i], p[i + 1]), 0)
        out.append((p, w / (len(p) - 1)))
    return out


def kg_from_nx(G: nx.Graph) -> KnowledgeGraph:
    """Node ``i`` of ``G`` becomes node index ``i`` (id ``n<i>``); edges point low -> high."""
    g = KnowledgeGraph()
    for i in range(G.number_of_nodes()):
        g.add_node(f"n{i}")
    for u, v in G.edges():
        a, b = sorted((u, v))
        g.add_edge(f"n{a}", f"n{b}", relation="r")
    return g


def random_case(seed: int) -> tuple[nx.Graph, list[int]]:
    rng = random.Random(seed)
    n = rng.randint(30, 120)
    kind = seed % 3
    if kind == 0:
        G = nx.barabasi_albert_graph(n, rng.randint(1, 3), seed=seed)
    elif kind == 1:
        G = nx.gnm_random_graph(n, rng.randint(n, 3 * n), seed=seed)
    else:
        G = nx.watts_strogatz_graph(n, 4, 0.3, seed=seed)
    picked = rng.sample(range(n), rng.randint(4, min(40, n)))
    return G, picked


@pytest.mark.parametrize("seed", range(24))
def test_same_top_k_as_the_authors_algorithm_on_random_graphs(seed):
    G, picked = random_case(seed)
    want = authors_oracle(G, picked)
    r = PathRAGRetriever(kg_from_nx(G), embedder=HashingEmbedder(dim=16))
    res = r.retrieve_from_nodes("q", [f"n{i}" for i in picked])
    got = [(tuple(int(x[1:]) for x in p.ids), p.reliability) for p in res.paths]
    assert [p for p, _ in got] == [tuple(p) for p, _ in want]
    assert [w for _, w in got] == pytest.approx([w for _, w in want], rel=1e-12, abs=1e-12)
    assert len(got) == min(15, res.trace["pool_size"])


@pytest.mark.parametrize("seed", range(6))
def test_oracle_agreement_holds_for_other_thresholds_and_decays(seed):
    G, picked = random_case(100 + seed)
    thr, alpha = (0.1, 0.6) if seed % 2 else (0.05, 1.0)
    want = authors_oracle(G, picked, K=25, threshold=thr, alpha=alpha)
    r = PathRAGRetriever(kg_from_nx(G), embedder=HashingEmbedder(dim=16))
    res = r.retrieve_from_nodes(
        "q", [f"n{i}" for i in picked], top_k=25, flow_threshold=thr, alpha=alpha
    )
    assert [tuple(int(x[1:]) for x in p.ids) for p in res.paths] == [tuple(p) for p, _ in want]
    assert [p.reliability for p in res.paths] == pytest.approx([w for _, w in want])


# ---------------------------------------------------------------- hand-computed cases
def kite() -> KnowledgeGraph:
    """s-a, s-b, a-t, b-t, a-b (indices s=0, a=1, b=2, t=3)."""
    return KnowledgeGraph.from_triples(
        [("s", "r", "a"), ("s", "r", "b"), ("a", "r", "t"), ("b", "r", "t"), ("a", "r", "b")]
    )


KITE_PATHS = [(0, 1, 2, 3), (0, 1, 3), (0, 2, 1, 3), (0, 2, 3)]  # DFS order, s -> t


def test_kite_paths_and_flows_at_the_default_threshold():
    # follow: s:{a,b}, a:{b,t}, b:{a,t}. (s,a) = (s,b) = 1/2 > 0.3, so a and b forward
    # 0.5·0.8/2 = 0.2 on each edge; 0.2 <= 0.3 stops a->b and b->a from forwarding.
    flows = edge_flow_reliability(KITE_PATHS, alpha=0.8, threshold=0.3)
    assert flows == [
        pytest.approx((0.5, 0.2, 0.2)),
        pytest.approx((0.5, 0.2)),
        pytest.approx((0.5, 0.2, 0.2)),
        pytest.approx((0.5, 0.2)),
    ]
    res = PathRAGRetriever(kite(), embedder=HashingEmbedder()).retrieve_from_nodes("q", ["s", "t"])
    # (s,a,t) and (s,b,t) score 0.7/2 = 0.35, the 3-hop paths 0.9/3 = 0.3; (t,...) paths
    # have the same node sets and are dropped; one 3-hop node set {s,a,b,t} survives.
    assert [p.ids for p in res.paths] == [("s", "a", "t"), ("s", "b", "t"), ("s", "a", "b", "t")]
    assert [p.reliability for p in res.paths] == pytest.approx([0.35, 0.35, 0.3])
    assert res.paths[0].resources == pytest.approx((1.0, 0.5, 0.2))
    assert res.trace["candidate_paths"] == 8 and res.trace["node_set_duplicates_removed"] == 5


def test_kite_flows_accumulate_over_routes_below_the_threshold():
    # threshold 0.1: a->b carries 0.2 > 0.1, so b forwards 0.2·0.8/2 = 0.08 to a and t.
    # Then s->b: b->a gets 0.2 more (0.28 > 0.1), a forwards 0.28·0.8/2 = 0.112 to b and t.
    # Final: (a,b) = 0.312, (b,a) = 0.28, (a,t) = 0.2 + 0.112, (b,t) = 0.08 + 0.2.
    flows = edge_flow_reliability(KITE_PATHS, alpha=0.8, threshold=0.1)
    assert flows == [
        pytest.approx((0.5, 0.312, 0.28)),
        pytest.approx((0.5, 0.312)),
        pytest.approx((0.5, 0.28, 0.312)),
        pytest.approx((0.5, 0.28)),
    ]


def test_tiny_graph_under_the_default():
    # A-B, B-C, B-D; retrieved A, B, C. Paths: A-B 1.0, A-B-C (1 + 0.8)/2 = 0.9, B-C 1.0
    # (D is a dead end, off every path), and their reverses (same node sets).
    g = KnowledgeGraph.from_triples([("A", "r1", "B"), ("B", "r2", "C"), ("B", "r3", "D")])
    res = PathRAGRetriever(g, embedder=HashingEmbedder()).retrieve_from_nodes(
        "q", ["A", "B", "C"]
    )
    assert [p.ids for p in res.paths] == [("A", "B"), ("B", "C"), ("A", "B", "C")]
    assert [p.reliability for p in res.paths] == pytest.approx([1.0, 1.0, 0.9])
    assert [e.score for e in res.evidence("native")] == pytest.approx([1.0, 1.0, 0.9])


def test_hub_start_still_emits():
    # a has 30 neighbours, t among them: the literal reading with Eq. (3) at the start finds
    # nothing from a (1/30 < θ = 0.05); the authors' code always lets the start emit.
    g = KnowledgeGraph.from_triples([("a", "r", "t")] + [("a", "r", f"x{i}") for i in range(29)])
    r = PathRAGRetriever(g, embedder=HashingEmbedder())
    res = r.retrieve_from_nodes("q", ["a", "t"])
    # inside the pair's own path subgraph a has one successor, t: flow 1
    assert [(p.ids, p.reliability) for p in res.paths] == [(("a", "t"), 1.0)]
    assert r.retrieve_from_nodes("q", ["a", "t"], **_literal()).empty_reason == "no_path"
    res = r.retrieve_from_nodes("q", ["a", "t"], **_literal(eq3_at_start=False))
    assert res.paths[0].reliability == pytest.approx(1 + 0.8 / 30)  # Eq. (4): S(a) + S(t)


def _literal(**kw: object) -> dict[str, object]:
    return {**{f: getattr(PathRAGConfig.literal_eq4(), f) for f in (
        "reliability", "direction", "max_hops", "eq3_at_start", "min_similarity",
        "min_similarity_z", "keyword_split")}, **kw}


def test_max_hops_bounds_the_paths():
    g = KnowledgeGraph.from_triples([("a", "r", "b"), ("b", "r", "c"), ("c", "r", "d"),
                                     ("d", "r", "e")])
    r = PathRAGRetriever(g, embedder=HashingEmbedder())
    assert r.retrieve_from_nodes("q", ["a", "e"]).empty_reason == "no_path"  # 4 hops > 3
    res = r.retrieve_from_nodes("q", ["a", "e"], max_hops=4)
    assert [p.ids for p in res.paths] == [("a", "b", "c", "d", "e")]
    # directed: only a -> ... -> e, never backwards
    assert r.retrieve_from_nodes("q", ["e", "a"], max_hops=4, direction="directed").paths


# ---------------------------------------------------------------- config and node retrieval
def test_defaults_follow_the_authors_code():
    c = PathRAGConfig()
    assert (c.reliability, c.direction, c.max_hops, c.flow_threshold, c.eq3_at_start) == (
        "edge_flow", "undirected", 3, 0.3, False)
    assert c.keyword_split and c.num_relations == 40


@pytest.mark.parametrize(
    ("field", "value"),
    [("reliability", "eq4"), ("flow_threshold", -0.1), ("flow_threshold", float("nan")),
     ("min_similarity", float("inf")), ("min_similarity", "0.2"),
     ("min_similarity_z", float("nan")), ("eq3_at_start", 1),
     ("keyword_split", "yes"), ("num_relations", -1), ("max_hops", None)],
)
def test_bad_new_fields_raise(field, value):
    with pytest.raises(ConfigError, match=field if field != "max_hops" else "max_hops"):
        PathRAGConfig(**{field: value})


def test_literal_preset_allows_unbounded_hops():
    assert PathRAGConfig.literal_eq4().max_hops is None


def test_similarity_floor_ends_a_keywords_turns():
    kv = [[1.0, 0.0], [0.0, 1.0]]
    nv = [[1.0, 0.0], [0.6, 0.8], [0.0, 1.0], [0.8, -0.6]]
    assert retrieve_nodes(kv, nv, 4) == [
        (0, 0, 1.0), (2, 1, 1.0), (3, 0, pytest.approx(0.8)), (1, 1, pytest.approx(0.8))]
    assert [h[0] for h in retrieve_nodes(kv, nv, 4, 0.7)] == [0, 2, 3, 1]
    assert [h[0] for h in retrieve_nodes(kv, nv, 4, 0.9)] == [0, 2]


def test_n_at_least_v_warns_and_traces():
    g = KnowledgeGraph.from_triples([("a", "r", "b")])
    r = PathRAGRetriever(g, embedder=HashingEmbedder())
    with pytest.warns(UserWarning, match="num_nodes=40 >= 2 graph nodes"):
        res = r.retrieve("a and b")
    assert res.trace["num_nodes_covers_graph"] is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = r.retrieve_from_nodes("q", ["a", "b"])  # N plays no role: no warning
    assert res.trace["num_nodes_covers_graph"] is False


def test_keyword_split_parses_entities_and_concepts():
    kws, high = parse_keyword_split(
        '{"high_level_keywords": ["awards"], "low_level_keywords": ["radium", "Curie"]}')
    assert kws == ["radium", "Curie", "awards"] and high == ["awards"]


def test_keyword_split_nodes_from_entities_relations_after_the_query():
    g = KnowledgeGraph.from_triples(
        [("radium", "discovered by", "Marie Curie"), ("Marie Curie", "won", "Nobel Prize"),
         ("Nobel Prize", "awarded in", "Stockholm")])
    llm = ScriptedLLM(['{"entities": ["radium", "Marie Curie"], "concepts": ["won"]}'] * 2)
    r = PathRAGRetriever(g, embedder=HashingEmbedder(), llm=llm,
                         config=PathRAGConfig.paper(num_nodes=2, min_similarity_z=None))
    res = r.retrieve("Who discovered radium?")
    assert res.keywords == ("radium", "Marie Curie", "won")
    assert res.trace["node_keywords"] == ["radium", "Marie Curie"]
    assert {n.id for n in res.nodes} == {"radium", "Marie Curie"}
    assert res.trace["high_level_keywords"] == ["won"]
    assert len(res.relations) == 3  # every edge; ordered by edge degree, then similarity
    assert res.relations[0].edge.relation == "won"  # degree 2 + 2, the highest
    head = res.prompt.index("Relation 1: Marie Curie won Nobel Prize")
    assert res.prompt.index("Who discovered radium?") < head < res.prompt.index("Path 1:")
    off = r.retrieve("Who discovered radium?", keyword_split=False, num_nodes=3)
    assert off.relations == () and "Relation 1" not in off.prompt


def test_standardised_floor_uses_each_keywords_own_spread():
    # one keyword, cosines to the four nodes: 1, 0.6, 0, 0.8; mean 0.6, std sqrt(0.14) = 0.374
    kv = [[1.0, 0.0]]
    nv = [[1.0, 0.0], [0.6, 0.8], [0.0, 1.0], [0.8, -0.6]]
    assert [h[0] for h in retrieve_nodes(kv, nv, 4, min_z=0.5)] == [0, 3]  # floor 0.787
    assert [h[0] for h in retrieve_nodes(kv, nv, 4, min_z=1.0)] == [0]  # floor 0.974
    assert [h[0] for h in retrieve_nodes(kv, nv, 4, min_similarity=0.9, min_z=-5)] == [0]
