"""Issue 14, the compact vector store: ``GraphIndex(graph, embedder, vectors="float16"|"int8")``
keeps only encoded rows (never a float32 copy, never vectors written into the graph) and
scores within the documented tolerance of float32."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from kgpath import ConfigError, EmbeddingError, HashingEmbedder, KnowledgeGraph
from kgpath.index import GraphIndex
from kgpath.methods.pcr import PathConstrainedRetriever
from kgpath.search.vector import CompactVectorIndex


class Counting(HashingEmbedder):
    def __init__(self, dim: int = 32) -> None:
        super().__init__(dim)
        self.batches: list[int] = []

    def embed_passages(self, texts):
        self.batches.append(len(texts))
        return super().embed_passages(texts)


def chain(n: int = 7) -> KnowledgeGraph:
    g = KnowledgeGraph()
    for i in range(n):
        g.add_node(f"n{i}", text=f"node {i} about topic {i % 3}")
    for i in range(n - 1):
        g.add_edge(f"n{i}", f"n{i + 1}", relation="next")
    return g


def unit_rows(n: int, d: int, seed: int = 0) -> np.ndarray:
    m = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_int8_codes_and_scores_by_hand():
    store = CompactVectorIndex(np.array([[0.6, 0.8, 0.0], [0.0, 0.0, 1.0]]), kind="int8")
    # row 0: scale 0.8/127, codes round(0.6·127/0.8)=round(95.25)=95, 127, 0
    assert store.codes[0].tolist() == [95, 127, 0]
    assert store.scale[0] == pytest.approx(0.8 / 127)
    assert store.scores(np.array([1.0, 0.0, 0.0])).tolist() == pytest.approx(
        [95 * 0.8 / 127, 0.0], abs=1e-7)
    assert store.nbytes == 2 * 3 + 2 * 4


def test_float16_scores_within_documented_bound_and_search_exact_on_stored_rows():
    m = unit_rows(3000, 384)
    q = unit_rows(1, 384, seed=1)[0]
    store = CompactVectorIndex(m, kind="float16")
    assert store.codes.dtype == np.float16 and store.nbytes == 3000 * 384 * 2
    exact = m @ q
    assert np.abs(store.scores(q) - exact).max() <= 5e-4
    cand = np.random.default_rng(2).choice(3000, 700, replace=False)
    rows, s = store.search(q, 10, cand)
    stored = m.astype(np.float16).astype(np.float32)
    brute = np.unique(cand)[np.argsort(-(stored[np.unique(cand)] @ q), kind="stable")[:10]]
    assert rows.tolist() == brute.tolist()
    np.testing.assert_allclose(s, exact[rows], atol=5e-4)
    full, _ = store.search(q, 5)
    assert full.tolist() == np.argsort(-(stored @ q), kind="stable")[:5].tolist()


def test_int8_scores_within_documented_bound():
    m = unit_rows(2000, 384)
    q = unit_rows(1, 384, seed=3)[0]
    store = CompactVectorIndex(m, kind="int8")
    bound = store.scale / 2 * np.abs(q).sum()
    assert (np.abs(store.scores(q) - m @ q) <= bound + 1e-6).all()


def test_compact_index_never_writes_float32_vectors_into_the_graph():
    g, emb = chain(), Counting(32)
    index = GraphIndex(g, emb, vectors="float16", compact_chunk=3).build()
    assert g.vectors.dim is None and len(g.vectors.missing()) == len(g)
    assert emb.batches == [3, 3, 1]  # embedded in chunks, each chunk encoded at once
    store = index.vector_index
    assert isinstance(store, CompactVectorIndex) and store.codes.dtype == np.float16
    want = emb.embed_passages([n.search_text for n in g.nodes])
    np.testing.assert_allclose(store.vectors, want, atol=1e-3)


def test_compact_index_takes_the_graphs_own_vectors_without_embedding():
    g, emb = chain(), Counting(32)
    GraphIndex(g, emb).build()  # float32: vectors stored on the graph
    emb.batches.clear()
    index = GraphIndex(g, emb, vectors="int8").build()
    assert emb.batches == []
    np.testing.assert_allclose(index.vector_index.vectors, g.vectors.matrix, atol=5e-3)


def test_compact_index_re_embeds_an_edited_node_and_a_new_one():
    g, emb = chain(), Counting(32)
    index = GraphIndex(g, emb, vectors="float16").build()
    g.add_node("n3", text="a volcano erupting lava")
    g.add_node("n9", text="glacier ice")
    emb.batches.clear()
    hits, _ = index.search("volcano lava", 1)
    assert emb.batches == [2] and g.node_at(int(hits[0])).id == "n3"
    assert len(index.vector_index) == len(g)


@pytest.mark.parametrize("kind", ["float16", "int8"])
def test_pcr_over_compact_index_matches_float32(kind):
    g = chain(12)
    emb = HashingEmbedder(64)
    want = PathConstrainedRetriever(GraphIndex(g, emb)).retrieve("topic 1", anchor="n2", k=4)
    g2 = chain(12)
    got = PathConstrainedRetriever(GraphIndex(g2, emb, vectors=kind)).retrieve(
        "topic 1", anchor="n2", k=4)
    assert got.ids == want.ids
    assert g2.vectors.dim is None


def test_compact_async_build():
    g, emb = chain(), Counting(32)
    index = asyncio.run(GraphIndex(g, emb, vectors="int8", compact_chunk=4).abuild())
    assert emb.batches == []  # async path: aembed_passages, not embed_passages
    assert len(index.vector_index) == len(g) and g.vectors.dim is None


def test_bad_vectors_kind_is_named():
    with pytest.raises(ConfigError, match="bfloat16"):
        GraphIndex(chain(), HashingEmbedder(8), vectors="bfloat16")
    with pytest.raises(ConfigError, match="kind"):
        CompactVectorIndex(kind="float64")
    with pytest.raises(EmbeddingError, match="row 1"):
        CompactVectorIndex(np.array([[1.0, 0.0], [np.nan, 0.0]]), kind="int8")
