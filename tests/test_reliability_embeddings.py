"""Issue 13, embeddings that belong to their model: edits invalidate vectors, retrievers with
different embedders never share vectors, the saved manifest records the embedder, and a cold
index is built once however many callers arrive at the same time."""

from __future__ import annotations

import asyncio
import json
import threading

import numpy as np
import pytest

from kgpath import ConfigError, HashingEmbedder, KnowledgeGraph
from kgpath.embeddings import BaseEmbedder, as_embedder
from kgpath.index import GraphIndex
from kgpath.methods.pcr import PathConstrainedRetriever


class Counting(HashingEmbedder):
    """Counts every passage text embedded, sync or async, from any thread."""

    def __init__(self, dim: int = 32, *, salt: str = "") -> None:
        super().__init__(dim)
        self.salt = salt
        self.passages = 0
        self.queries = 0
        self._count_lock = threading.Lock()

    def _embed(self, texts, kind):
        with self._count_lock:
            if kind == "passage":
                self.passages += len(texts)
            else:
                self.queries += len(texts)
        return super()._embed([self.salt + t for t in texts], kind)

    async def _aembed(self, texts, kind):
        await asyncio.sleep(0.001)  # let the other callers interleave
        return self._embed(texts, kind)


def small() -> KnowledgeGraph:
    return KnowledgeGraph.from_triples(
        [("honey bee", "makes", "honey"), ("honey", "sweetens", "tea"), ("tea", "from", "china")]
    )


def big(n: int = 3000) -> KnowledgeGraph:
    g = KnowledgeGraph()
    for i in range(n):
        g.add_node(f"n{i}", text=f"node number {i} about topic {i % 17}")
    for i in range(n - 1):
        g.add_edge(f"n{i}", f"n{i + 1}", relation="next")
    return g


# ---------------------------------------------------------------- edits and ownership
def test_editing_a_node_text_re_embeds_that_node():
    g, emb = small(), HashingEmbedder(64)
    index = GraphIndex(g, emb).build()
    g.add_node("tea", text="a volcano erupting lava")
    i = g.index_of("tea")
    assert g.vectors.missing() == [i]  # the stale vector is dropped at once
    want = emb.embed_passages([g.node("tea").search_text])[0]
    np.testing.assert_allclose(index.vector_index.vectors[i], want, atol=1e-6)
    hits, _ = index.search("volcano lava", 1)
    assert g.node_at(int(hits[0])).id == "tea"


def test_re_adding_a_node_with_the_same_text_keeps_its_vector():
    g = small()
    GraphIndex(g, HashingEmbedder(64)).build()
    n = g.node("tea")
    g.add_node("tea", name=n.name, text=n.text, metadata={"x": 1})
    assert g.vectors.missing() == []


def test_two_retrievers_with_different_embedders_do_not_share_vectors():
    g = small()
    a, b = Counting(32, salt="A:"), Counting(32, salt="B:")
    ia = GraphIndex(g, a).build()
    ib = GraphIndex(g, b).build()
    want_b = b.embed_passages([n.search_text for n in g.nodes])
    want_a = a.embed_passages([n.search_text for n in g.nodes])
    np.testing.assert_allclose(ib.vector_index.vectors, want_b, atol=1e-6)
    np.testing.assert_allclose(ia.vector_index.vectors, want_a, atol=1e-6)
    np.testing.assert_allclose(g.vectors.matrix, want_a, atol=1e-6)  # the graph keeps a's


def test_different_dimension_embedder_gets_its_own_vectors():
    g = small()
    GraphIndex(g, HashingEmbedder(64)).build()
    ib = GraphIndex(g, HashingEmbedder(16)).build()
    assert ib.vector_index.dim == 16 and g.vectors.dim == 64


def test_same_embedder_twice_shares_and_embeds_nothing_new():
    g, emb = small(), Counting(32)
    GraphIndex(g, emb).build()
    first = emb.passages
    GraphIndex(g, Counting(32)).build()  # an equal model (same name, same vectors)
    assert emb.passages == first == len(g)


def test_manifest_records_the_embedder_and_load_checks_it(tmp_path):
    g, emb = small(), Counting(32, salt="A:")
    GraphIndex(g, emb).build()
    owner = g.vectors.owner
    assert owner is not None and owner["dim"] == 32 and owner["name"].endswith("Counting")
    g.save(tmp_path / "g")
    manifest = json.loads((tmp_path / "g" / "manifest.json").read_text())
    assert manifest["embedder"] == owner
    back = KnowledgeGraph.load(tmp_path / "g")
    assert back.vectors.owner == owner
    same = Counting(32, salt="A:")
    GraphIndex(back, same).build()
    assert same.passages == 1  # only the one-text probe: the stored vectors are reused
    other = Counting(32, salt="B:")
    io = GraphIndex(back, other).build()
    assert other.passages == 1 + len(back)  # probe, then every node re-embedded
    want = other.embed_passages([n.search_text for n in back.nodes])
    np.testing.assert_allclose(io.vector_index.vectors, want, atol=1e-6)


# ---------------------------------------------------------------- cold index, many callers
def test_100_concurrent_async_retrievals_embed_each_node_once():
    g, emb = big(), Counting(32)
    pcr = PathConstrainedRetriever(g, embedder=emb)

    async def main():
        return await asyncio.gather(
            *(pcr.aretrieve("topic 5", anchor="n2990", k=3) for _ in range(100))
        )

    results = asyncio.run(main())
    assert emb.passages == len(g) == 3000
    assert len({tuple(e.id for e in r.evidence(output="native")) for r in results}) == 1


def test_8_threads_on_a_cold_index_embed_each_node_once():
    g, emb = big(), Counting(32)
    index = GraphIndex(g, emb)
    barrier = threading.Barrier(8)
    out: list[object] = []

    def work():
        barrier.wait()
        out.append(index.search("topic 5", 3)[0].tolist())

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert emb.passages == 3000
    assert len(out) == 8 and all(o == out[0] for o in out)


def test_threads_each_running_an_event_loop_build_once():
    g, emb = big(1000), Counting(32)
    index = GraphIndex(g, emb)

    def work():
        async def many():
            await asyncio.gather(*(index.abuild() for _ in range(10)))

        asyncio.run(many())

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert emb.passages == 1000


def test_sync_access_during_an_async_build_on_the_same_loop_does_not_deadlock():
    g, emb = big(500), Counting(32)
    index = GraphIndex(g, emb)

    async def main():
        build = asyncio.create_task(index.abuild())
        await asyncio.sleep(0)  # the build now holds the lock and awaits its embedder
        hits, _ = index.search("topic 5", 2, mode="bm25")  # sync, same thread, same loop
        await build
        return hits

    hits = asyncio.run(asyncio.wait_for(main(), timeout=60))
    assert len(hits) == 2 and index.vector_index.dim == 32


# ---------------------------------------------------------------- what may be passed
def test_an_embedder_class_is_refused_with_what_to_pass():
    with pytest.raises(ConfigError,
                       match=r"got the class HashingEmbedder; pass HashingEmbedder\(\)"):
        GraphIndex(small(), HashingEmbedder)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"got the class HashingEmbedder"):
        PathConstrainedRetriever(small(), embedder=HashingEmbedder)


def test_a_non_embedder_is_refused_at_construction():
    with pytest.raises(ConfigError, match="embedder must be a kgpath embedder.*got dict"):
        GraphIndex(small(), {"model": "x"})  # type: ignore[arg-type]


def test_framework_embeddings_are_wrapped_by_an_installed_adapter(monkeypatch):
    class LC:  # the LangChain Embeddings interface
        def embed_documents(self, texts):
            return [[float(len(t)), 1.0] for t in texts]

        def embed_query(self, text):
            return [float(len(text)), 1.0]

    class LI:  # the LlamaIndex BaseEmbedding interface
        def get_text_embedding_batch(self, texts):
            return [[1.0, float(len(t))] for t in texts]

        def get_query_embedding(self, text):
            return [1.0, float(len(text))]

    class Wrapped(BaseEmbedder):  # what an adapter's wrapper does, without a framework
        def __init__(self, model):
            self.model = model

        def _embed(self, texts, kind):
            m = self.model
            if kind == "query":
                return np.array([m.embed_query(t) for t in texts], dtype=np.float32)
            return np.array(m.embed_documents(texts), dtype=np.float32)

    def adapt(obj):  # an entry point of group kgpath.embedder_adapters
        return Wrapped(obj) if hasattr(obj, "embed_documents") else None

    monkeypatch.setattr("kgpath.embeddings._embedder_adapters", lambda: (adapt,))
    assert isinstance(as_embedder(LC()), Wrapped)
    assert GraphIndex(small(), LC()).build().vector_index.dim == 2
    # none wraps it: the error names the class and the adapter to install
    with pytest.raises(ConfigError, match=r"LlamaIndex embedding model \(LI\).*"
                                          r"pip install llama-index-retrievers-kgpath"):
        as_embedder(LI())
    monkeypatch.setattr("kgpath.embeddings._embedder_adapters", lambda: ())
    with pytest.raises(ConfigError, match=r"embedder is a LangChain embedding model \(LC\).*"
                                          r"pip install langchain-kgpath"):
        GraphIndex(small(), LC())


def test_graph_index_refuses_a_non_graph():
    with pytest.raises(ConfigError, match="graph must be a KnowledgeGraph"):
        GraphIndex([("a", "r", "b")], HashingEmbedder())  # type: ignore[arg-type]
