"""CachedEmbedder under concurrency, and the cache folders it must not break (issue 23).

Concurrent misses of one text embed it once (threads, asyncio tasks, both mixed); a failure
reaches every caller waiting for that text and is not kept. A valid segment of another
dimension is ignored and kept (never deleted, the good segments served); a lone surrogate is
the wrapped embedder's to refuse (typed); a cache folder that is a file is named.
"""

from __future__ import annotations

import logging
import threading

import numpy as np
import pytest

from kgpath import HashingEmbedder, KnowledgeGraph
from kgpath.embed_cache import CachedEmbedder, SharedEmbedder
from kgpath.errors import ConfigError, EmbeddingError, PersistenceError
from kgpath.index import linking
from kgpath.testing.concurrency import CountingEmbedder, FailsOnce, in_tasks, in_threads, mixed

TEXTS = [f"cold text {i}" for i in range(100)]


def _cache(tmp_path, delay: float = 0.02) -> tuple[CachedEmbedder, CountingEmbedder]:
    inner = CountingEmbedder(HashingEmbedder(), delay=delay)
    return CachedEmbedder(inner, tmp_path), inner


def _want() -> np.ndarray:
    return HashingEmbedder().embed_passages(TEXTS)


def test_fifty_threads_embed_each_cold_text_once(tmp_path):
    c, inner = _cache(tmp_path)
    got = in_threads([lambda: c.embed_passages(TEXTS)] * 50)
    for g in got:
        np.testing.assert_array_equal(g, _want())
    assert inner.counter("passage") == {t: 1 for t in TEXTS}
    assert c.misses == 100 and c.hits == 49 * 100


def test_hundred_tasks_embed_each_cold_text_once(tmp_path):
    c, inner = _cache(tmp_path)

    async def call() -> np.ndarray:
        return await c.aembed_passages(TEXTS)
    for g in in_tasks([call] * 100):
        np.testing.assert_array_equal(g, _want())
    assert inner.counter("passage") == {t: 1 for t in TEXTS} and c.misses == 100


def test_threads_and_tasks_mixed_embed_each_cold_text_once(tmp_path):
    c, inner = _cache(tmp_path)

    async def call() -> np.ndarray:
        return await c.aembed_queries(TEXTS[::-1])
    out = mixed([lambda: c.embed_queries(TEXTS)] * 20, [call] * 20)
    want = HashingEmbedder().embed_queries(TEXTS)
    for g in out[:20]:
        np.testing.assert_array_equal(g, want)
    for g in out[20:]:
        np.testing.assert_array_equal(g, want[::-1])
    assert inner.counter("query") == {t: 1 for t in TEXTS}


def test_overlapping_requests_embed_each_text_once(tmp_path):
    c, inner = _cache(tmp_path)
    parts = [TEXTS[i:i + 30] for i in range(0, 100, 10)] * 4
    in_threads([lambda p=p: c.embed_passages(p) for p in parts])
    assert inner.counter("passage") == {t: 1 for t in TEXTS}


def test_a_failure_reaches_every_waiter_and_the_next_call_embeds(tmp_path):
    inner = FailsOnce(expect=10)
    c = CachedEmbedder(inner, tmp_path)

    def call() -> str:
        inner.came.release()
        try:
            c.embed_passages(TEXTS[:5])
        except ConnectionError as exc:
            return str(exc)
        return "ok"
    assert in_threads([call] * 10) == ["model offline"] * 10 and inner.calls == 1
    assert list(tmp_path.rglob("*.npz")) == []  # nothing of the failure was kept
    inner.expect = 0
    assert call() == "ok" and inner.calls == 2 and c.misses == 5


def test_shared_embedder_embeds_each_cold_passage_once():
    inner = CountingEmbedder(HashingEmbedder(), delay=0.02)
    shared = SharedEmbedder(inner)

    async def call() -> np.ndarray:
        return await shared.aembed_passages(TEXTS)
    mixed([lambda: shared.embed_passages(TEXTS)] * 20, [call] * 20)
    assert inner.counter("passage") == {t: 1 for t in TEXTS} and shared.embedded == 100


def test_name_indexes_are_built_once_for_concurrent_callers(monkeypatch):
    g = KnowledgeGraph.from_triples([(f"Node {i}", "r", f"Node {i + 1}") for i in range(50)])
    keys: list[str] = []
    real = linking.entity_key

    def slow_key(name: str) -> str:
        keys.append(name)
        threading.Event().wait(0.001)
        return real(name)
    monkeypatch.setattr(linking, "entity_key", slow_key)
    found = in_threads([lambda: linking.name_key_index(g).get("node 3")] * 20)
    assert found == [[3]] * 20 and len(keys) == g.num_nodes


# ---------------------------------------------------------------- the cache folder
def test_a_stray_segment_of_another_dimension_is_ignored_and_kept(tmp_path, caplog):
    good = CachedEmbedder(HashingEmbedder(32), tmp_path, cache_key="model")
    want = good.embed_passages(["a", "b"])
    CachedEmbedder(HashingEmbedder(16), tmp_path, cache_key="model").embed_passages(["c"])
    segs = sorted(p.name for p in good.path.glob("*.npz"))
    assert len(segs) == 2
    inner = CountingEmbedder(HashingEmbedder(32))
    again = CachedEmbedder(inner, tmp_path, cache_key="model")
    with caplog.at_level(logging.WARNING, logger="kgpath.embed_cache"):
        np.testing.assert_array_equal(again.embed_passages(["a", "b"]), want)
        again.embed_passages(["c", "d"])
    assert inner.counter() == {"c": 1, "d": 1} and again.corrupt == 0
    assert set(segs) <= {p.name for p in good.path.glob("*.npz")}  # nothing deleted
    assert sum("dimension 16" in r.getMessage() for r in caplog.records) == 1  # warned once


def test_the_first_segment_read_may_be_the_stray_one(tmp_path):
    CachedEmbedder(HashingEmbedder(16), tmp_path, cache_key="m").embed_passages(["x"])
    CachedEmbedder(HashingEmbedder(32), tmp_path, cache_key="m").embed_passages(["a"])

    class Opaque:  # its dimension is unknown until it embeds
        def embed_passages(self, texts):
            return HashingEmbedder(32).embed_passages(texts)
        embed_queries = embed_passages

    c = CachedEmbedder(Opaque(), tmp_path, cache_key="m")
    # "x" is found in the 16-d segment (read first), "a" embedded: 32-d, so the 16-d row is
    # dropped from memory (its segment kept) and "x" embedded too
    got = c.embed_passages(["x", "a"])
    np.testing.assert_array_equal(got, HashingEmbedder(32).embed_passages(["x", "a"]))
    assert len(list(c.path.glob("*.npz"))) == 4 and c.corrupt == 0


def test_a_lone_surrogate_is_the_wrapped_embedders_to_refuse(tmp_path):
    c = CachedEmbedder(HashingEmbedder(), tmp_path)
    with pytest.raises(EmbeddingError, match="lone surrogate"):
        c.embed_queries(["ok", "bad \ud800 text"])

    class Lenient:
        dim = 2

        def embed_queries(self, texts):
            return np.ones((len(texts), 2), np.float32)
        embed_passages = embed_queries
    lenient = CachedEmbedder(Lenient(), tmp_path / "lenient")
    assert lenient.embed_queries(["\ud800", "\udfff"]).shape == (2, 2)
    assert lenient.embed_queries(["\ud800"]).shape == (1, 2) and lenient.hits == 1


def test_a_cache_folder_that_is_a_file_is_named(tmp_path):
    f = tmp_path / "cache"
    f.write_text("user data")
    with pytest.raises(ConfigError, match="cache' exists and is not a folder"):
        CachedEmbedder(HashingEmbedder(), f)
    c = CachedEmbedder(HashingEmbedder(), tmp_path / "later")
    (tmp_path / "later").write_text("user data")  # became a file after construction
    with pytest.raises(PersistenceError, match="later"):
        c.embed_passages(["a"])
    c2 = CachedEmbedder(HashingEmbedder(), tmp_path / "sub")
    c2.path.parent.mkdir()
    c2.path.write_text("user data")  # the model's sub-folder is a file
    with pytest.raises(PersistenceError, match=c2.path.name):
        c2.embed_passages(["a"])
    assert f.read_text() == c2.path.read_text() == "user data"
