"""The structure-store protocol: five required methods, defaults, capabilities asked for.

Truth: a toy backend over a dict implements only the required structure
(:class:`GraphBackend`); everything else comes from the defaults, and PCR over it (with a
toy :class:`VectorSearch`) equals PCR over the in-memory CSR backend on the same graph
(hits, scores, hops, paths, edges). A backend without a capability a method asks for gets
a :class:`CapabilityError` naming it. PathRAG's pushed-down pool over the in-memory
backend's :class:`NeighbourhoodPushDown` equals the in-memory retriever's pool.
"""

from __future__ import annotations

import ast
import random
from pathlib import Path

import numpy as np
import pytest

import kgpath
from kgpath import GraphIndex, HashingEmbedder, KnowledgeGraph, PathConstrainedRetriever
from kgpath.backends import (
    GraphBackend,
    InMemoryBackend,
    InProcessGraph,
    KeyTree,
    NeighbourhoodPushDown,
    PassageSearch,
    VectorSearch,
)
from kgpath.errors import CapabilityError, ConfigError
from kgpath.index.linking import find_by_name
from kgpath.methods.pathrag import PathRAGConfig, PathRAGRetriever
from kgpath.methods.pathrag.cypher import pathrag_pool

BELOW_BACKENDS = {
    "errors", "_config", "_progress", "_parallel", "_tables", "_files", "tokens", "token_engine",
    "graph", "embeddings", "llm", "rerank", "prompts", "embed_cache", "evidence", "search",
    "ingest", "index", "backends",
}


def imported_modules(path: Path) -> list[str]:
    """Every module an AST import names (top-level and lazy, inside functions)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append(node.module)
    return out


def test_backends_import_no_method_and_nothing_above_them():
    root = Path(kgpath.__file__).parent / "backends"
    files = sorted(root.rglob("*.py"))
    assert len(files) >= 10
    for f in files:
        for mod in imported_modules(f):
            parts = mod.split(".")
            if parts[0] != "kgpath":
                continue
            assert len(parts) > 1 and parts[1] in BELOW_BACKENDS, (f.name, mod)


class DictBackend(GraphBackend[str, KeyTree[str]]):
    """Only the five required methods, over a KnowledgeGraph read by id (keys: node ids)."""

    name = "dict"

    def __init__(self, graph: KnowledgeGraph) -> None:
        self.g = graph
        self.calls = 0

    def node_count(self) -> int:
        return len(self.g)

    def node_by_id(self, node_id):
        return node_id if node_id in self.g else None

    def nodes_by_name(self, name):
        return [self.g.node_at(i).id for i in find_by_name(self.g, name)]

    def node(self, key):
        return self.g.node_at(self.g.index_of(key))

    def neighbours(self, key, *, direction):
        self.calls += 1
        edges = [e for e in self.g.edges if (e.source if direction == "out" else e.target) == key]
        if direction == "both":
            return self.neighbours(key, direction="out") + self.neighbours(key, direction="in")
        return [(e.target if direction == "out" else e.source, e) for e in edges]


class DictVectorBackend(DictBackend, VectorSearch[str]):
    """The toy store plus vector search over a GraphIndex's node vectors."""

    modes = ("vector",)

    def __init__(self, index: GraphIndex) -> None:
        super().__init__(index.graph)
        self.index = index

    @property
    def embedder(self):
        return self.index.embedder

    def embed_query(self, query):
        return self.index.embed_query(query)

    async def aembed_query(self, query):
        return self.embed_query(query)

    def check_query_vector(self, query_vec):
        return np.asarray(query_vec, np.float32).reshape(-1)

    def score(self, query, query_vec, candidates, *, mode, alpha):
        rows = [self.g.index_of(k) for k in candidates]
        return self.index.score_candidates(query, query_vec, np.asarray(rows, np.int64),
                                           mode="vector", alpha=1.0)

    def most_similar(self, query_vec):
        idx, _ = self.index.vector_index.search(query_vec, 1)
        return self.g.node_at(int(idx[0])).id

    def global_top(self, query, query_vec, k, *, mode, alpha, exclude=None):
        keys = [n.id for n in self.g.nodes if n.id != exclude]
        sc = self.score(query, query_vec, keys, mode=mode, alpha=alpha)
        top = np.lexsort((np.arange(len(keys)), -sc))[:k]
        return [keys[i] for i in top], sc[top], len(keys)


def random_graph(seed: int, n: int = 25) -> KnowledgeGraph:
    rnd = random.Random(seed)
    g = KnowledgeGraph()
    for i in range(n):
        g.add_node(f"n{i}", name=f"N{i % 4}", text=f"t{i} {rnd.choice('abc')}")
    for _ in range(2 * n):
        g.add_edge(f"n{rnd.randrange(n)}", f"n{rnd.randrange(n)}",
                   relation=rnd.choice(["r", "s"]), text="e")
    return g


def test_a_backend_without_vector_search_gets_a_typed_error_naming_it():
    toy = DictBackend(random_graph(0))
    assert not toy.has(VectorSearch)
    with pytest.raises(CapabilityError, match="VectorSearch") as err:
        PathConstrainedRetriever(toy)
    assert err.value.capability == "VectorSearch"
    assert "'dict'" in str(err.value)
    assert isinstance(err.value, ConfigError)  # one root, and a configuration mistake
    with pytest.raises(CapabilityError, match="PassageSearch"):
        toy.capability(PassageSearch)


def test_capabilities_of_the_shipped_in_memory_backend():
    b = InMemoryBackend(random_graph(1), embedder=HashingEmbedder(dim=8))
    for cap in (VectorSearch, PassageSearch, InProcessGraph, NeighbourhoodPushDown):
        assert b.capability(cap) is b and b.has(cap)


@pytest.mark.parametrize("direction", ["out", "in", "both"])
def test_toy_backend_with_vector_search_is_used_and_equals_in_memory(direction):
    for seed in range(3):
        g = random_graph(seed)
        idx = GraphIndex(g, HashingEmbedder(dim=16))
        toy = DictVectorBackend(idx)
        mem, db = PathConstrainedRetriever(idx), PathConstrainedRetriever(toy)
        assert db.backend is toy
        rnd = random.Random(seed)
        for depth in (1, 2, None):
            kw = dict(anchor=f"n{rnd.randrange(len(g))}", direction=direction,
                      max_depth=depth, k=rnd.randint(1, 8), passage_order="hits")
            before = toy.calls
            a, b = mem.retrieve("t1 a", **kw), db.retrieve("t1 a", **kw)
            assert toy.calls > before  # the default BFS walked the toy's neighbours
            assert (b.anchor, b.reachable_count) == (a.anchor, a.reachable_count)
            assert [h.id for h in b.hits] == [h.id for h in a.hits]
            for x, y in zip(a.hits, b.hits):
                assert (y.hops, y.path, y.edges) == (x.hops, x.path, x.edges)
                assert y.score == pytest.approx(x.score, abs=1e-6)
            assert [e.id for e in b.evidence("native")] == [e.id for e in a.evidence("native")]


def test_toy_backend_defaults_cover_names_and_path_scoring():
    g = random_graph(4)
    idx = GraphIndex(g, HashingEmbedder(dim=16))
    db = PathConstrainedRetriever(DictVectorBackend(idx))
    mem = PathConstrainedRetriever(idx)
    for kw in (dict(anchor_name="N2", k=3), dict(k=4), dict(anchor="n3", score="mixed")):
        a, b = mem.retrieve("N1 t2", **kw), db.retrieve("N1 t2", **kw)
        assert [h.id for h in b.hits] == [h.id for h in a.hits], kw
        assert [h.score for h in b.hits] == pytest.approx([h.score for h in a.hits], abs=1e-6)
    with pytest.raises(CapabilityError, match="InProcessGraph"):
        db.retrieve("q", anchor="n1", score="template")
    with pytest.raises(AttributeError, match="in-memory GraphIndex"):
        _ = db.index


@pytest.mark.parametrize("cfg", [PathRAGConfig(), PathRAGConfig(direction="directed"),
                                 PathRAGConfig.literal_eq4(),
                                 PathRAGConfig.literal_eq4(direction="undirected",
                                                           paths_per_pair=2, max_hops=4)])
def test_pathrag_pool_pushed_down_to_the_in_memory_store_equals_the_retriever(cfg):
    for seed in range(3):
        g = random_graph(seed, 40)
        ids = random.Random(seed).sample([n.id for n in g.nodes], 6)
        ref = PathRAGRetriever(g, embedder=HashingEmbedder(dim=8), config=cfg)
        want = ref.retrieve_from_nodes("q", ids).pool
        got = pathrag_pool(InMemoryBackend(g, embedder=HashingEmbedder(dim=8)), ids, cfg)
        assert list(got.pool) == list(want)
        assert got.pool.stats == want.stats
        assert got.queries == 0  # the in-memory store counts no round trips


def test_pathrag_pool_needs_the_push_down_capability():
    with pytest.raises(CapabilityError, match="NeighbourhoodPushDown"):
        pathrag_pool(DictBackend(random_graph(0)), ["n1", "n2"])
