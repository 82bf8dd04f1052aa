"""PathRAG's section 4.2 pushed down to FalkorDB equals the in-memory run (paths, reliabilities).

Truth: a hand-computed edge flow on a three-node chain, and the in-memory retriever's
candidate pool (``PathRAGRetriever.retrieve_from_nodes(...).pool``) on random graphs up to
10^4 nodes, for the default edge-flow configuration and ``PathRAGConfig.literal_eq4()``.
"""

from __future__ import annotations

import random

import pytest

from kgpath import HashingEmbedder, KnowledgeGraph
from kgpath.backends.cypher import CypherBackend, load_graph
from kgpath.methods.pathrag import PathRAGConfig, PathRAGRetriever
from kgpath.methods.pathrag.cypher import pathrag_pool

pytestmark = pytest.mark.falkordb

CONFIGS = {
    "edge_flow": PathRAGConfig(),
    "edge_flow_directed": PathRAGConfig(direction="directed"),
    "literal_eq4": PathRAGConfig.literal_eq4(),
    "literal_eq4_undirected_2pp": PathRAGConfig.literal_eq4(direction="undirected",
                                                            paths_per_pair=2, max_hops=4),
}


def graph(seed, n, deg):
    rnd = random.Random(seed)
    g = KnowledgeGraph()
    for i in range(n):
        g.add_node(f"v{i}", name=f"node {i}")
    for _ in range(int(deg * n)):
        g.add_edge(f"v{rnd.randrange(n)}", f"v{rnd.randrange(n)}", relation="r")
    return g


def store(drv):
    """The database as a backend with the neighbourhood push-down capability."""
    return CypherBackend(drv, embedder=HashingEmbedder(dim=8))


def assert_pool_equal(g, drv, ids, cfg):
    mem = PathRAGRetriever(g, embedder=HashingEmbedder(dim=8), config=cfg)
    ref = mem.retrieve_from_nodes("q", ids).pool
    got = pathrag_pool(store(drv), ids, cfg)
    assert list(got.pool) == list(ref)  # node indices, resources, reliabilities: exact
    assert got.pool.stats == ref.stats
    assert [tuple(g.index_of(i) for i in p) for p in got.ids] == [c.nodes for c in ref]
    return got


def test_hand_computed_chain(falkordb_driver):
    g = KnowledgeGraph()
    for n in "abcd":
        g.add_node(n)
    g.add_edge("a", "b")
    g.add_edge("c", "b")  # undirected by default: a - b - c
    g.add_edge("c", "d")
    load_graph(falkordb_driver, g)
    got = pathrag_pool(store(falkordb_driver), ["a", "c"])
    # a sends 1 to b; b (not the target, flow 1 > 0.3) forwards 1 · 0.8 / |{c}| to c
    assert [(c.nodes, c.resources, c.reliability) for c in got.pool] == [
        ((0, 1, 2), (1.0, 1.0, 0.8), 0.9)]
    assert got.ids == (("a", "b", "c"),)  # c-b-a has the same node set: dropped
    assert got.fetched_nodes == 4  # the ball of radius 1 and nothing else


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_random_graphs_equal_in_memory(falkordb_driver, name):
    cfg = CONFIGS[name]
    for seed in range(4):
        g = graph(seed, 40 + 30 * seed, 1.5)
        load_graph(falkordb_driver, g, replace=True)
        rnd = random.Random(seed)
        for _ in range(3):
            ids = rnd.sample([n.id for n in g.nodes], rnd.randint(2, 12))
            assert_pool_equal(g, falkordb_driver, ids, cfg)


@pytest.mark.parametrize("name", ["edge_flow", "literal_eq4"])
def test_ten_thousand_nodes_equal_in_memory(falkordb_driver, name):
    g = graph(11, 10_000, 2.0)
    load_graph(falkordb_driver, g)
    rnd = random.Random(5)
    ids = rnd.sample([n.id for n in g.nodes], 40)  # N = 40, the paper's default
    got = assert_pool_equal(g, falkordb_driver, ids, CONFIGS[name])
    assert len(got.pool) >= 3  # equal pools, not empty ones
    assert got.queries < 100  # bounded batches: a few round trips per expansion round
    assert got.fetched_nodes < 2_000  # only the neighbourhood crossed the wire
