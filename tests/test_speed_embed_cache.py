"""kgpath.embed_cache: content-addressed embedding cache shared across runs and processes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from kgpath.embed_cache import CachedEmbedder, default_cache_dir, embedder_fingerprint
from kgpath.embeddings import HashingEmbedder
from kgpath.errors import ConfigError, EmbeddingError


class Counting(HashingEmbedder):
    def __init__(self, dim: int = 32) -> None:
        super().__init__(dim)
        self.calls: list[tuple[str, list[str]]] = []

    def _embed(self, texts, kind):
        self.calls.append((kind, list(texts)))
        return super()._embed(texts, kind)

    def embedded(self) -> int:
        return sum(len(t) for _, t in self.calls)


def test_hits_and_misses_per_kind(tmp_path):
    c = CachedEmbedder(Counting(), tmp_path)
    ref = HashingEmbedder(32)
    p = c.embed_passages(["a", "b", "a"])
    assert (c.hits, c.misses) == (0, 2)
    np.testing.assert_array_equal(p, ref.embed_passages(["a", "b", "a"]))
    c.embed_passages(["b", "c"])
    assert (c.hits, c.misses) == (1, 3)
    # queries are a separate kind: the same text is a miss the first time
    c.embed_queries(["a"])
    assert (c.hits, c.misses) == (1, 4)
    c.embed_queries(["a", "a"])
    assert (c.hits, c.misses) == (3, 4)
    assert c.embedder.calls == [("passage", ["a", "b"]), ("passage", ["c"]), ("query", ["a"])]
    assert c.embed_passages([]).shape == (0, 32)
    with pytest.raises(EmbeddingError, match="single str"):
        c.embed_passages("abc")


def test_shared_across_instances_and_async(tmp_path):
    first = CachedEmbedder(Counting(), tmp_path)
    want = asyncio.run(first.aembed_passages(["x", "y"]))
    asyncio.run(first.aembed_queries(["q"]))
    again = CachedEmbedder(Counting(), tmp_path)
    np.testing.assert_array_equal(asyncio.run(again.aembed_passages(["y", "x"])), want[[1, 0]])
    again.embed_queries(["q"])
    assert again.embedder.embedded() == 0 and again.hits == 3 and again.misses == 0
    # another embedder (other fingerprint) has its own folder
    other = CachedEmbedder(Counting(16), tmp_path)
    assert other.embed_passages(["x"]).shape == (1, 16) and other.misses == 1
    assert other.path != first.path
    # cache_key overrides the fingerprint: the same folder, whose vectors of another
    # dimension are ignored (and kept), never served
    keyed = CachedEmbedder(Counting(16), tmp_path, cache_key=first.fingerprint)
    assert keyed.path == first.path
    np.testing.assert_array_equal(keyed.embed_passages(["x"]), other.embed_passages(["x"]))
    np.testing.assert_array_equal(CachedEmbedder(Counting(), tmp_path).embed_passages(["x"]),
                                  want[[0]])


_CHILD = textwrap.dedent("""
    import sys
    from kgpath.embed_cache import CachedEmbedder
    from kgpath.embeddings import HashingEmbedder
    c = CachedEmbedder(HashingEmbedder(32), sys.argv[1], save_every=3)
    c.embed_passages([f"text {i}" for i in range(int(sys.argv[2]), int(sys.argv[3]))])
    print(c.misses)
""")


def test_two_processes_share_one_cache(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path), lo, hi],
                         stdout=subprocess.PIPE, text=True, env=env)
        for lo, hi in (("0", "20"), ("10", "30"))
    ]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    misses = [int(o) for o in outs]
    # each embedded at most its 20 texts; the 10 shared ones at most twice (whoever wrote
    # first saves the other the work, depending on timing); all 30 at least once
    assert all(10 <= m <= 20 for m in misses) and 30 <= sum(misses) <= 40
    # Counting is another class than the children's HashingEmbedder: borrow their key
    c = CachedEmbedder(Counting(), tmp_path, cache_key=embedder_fingerprint(HashingEmbedder(32)))
    texts = [f"text {i}" for i in range(30)]
    want = HashingEmbedder(32).embed_passages(texts)
    np.testing.assert_array_equal(c.embed_passages(texts), want)
    assert c.embedder.embedded() == 0 and c.hits == 30
    assert not list(c.path.glob(".tmp-*"))  # no temporary file left behind


def test_segments_written_by_another_process_are_picked_up(tmp_path):
    a = CachedEmbedder(Counting(), tmp_path)
    b = CachedEmbedder(Counting(), tmp_path)
    a.embed_passages(["one"])
    b.embed_passages(["two"])  # b loads "one" lazily, later
    a.embed_passages(["two"])  # a misses in memory, rescans the folder, finds b's segment
    assert a.embedder.embedded() == 1 and a.hits == 1


@pytest.mark.parametrize("damage", ["garbage", "truncated", "wrong_shape"])
def test_corrupt_segment_is_ignored_and_rewritten(tmp_path, damage):
    c = CachedEmbedder(Counting(), tmp_path)
    want = c.embed_passages(["p", "q"])
    (seg,) = c.segments("passage")
    if damage == "garbage":
        seg.write_bytes(b"\x00not an npz at all")
    elif damage == "truncated":
        seg.write_bytes(seg.read_bytes()[:100])
    else:
        with open(seg, "wb") as fh:
            np.savez(fh, keys=np.array(["k"], dtype="U64"), vectors=np.zeros((2, 32), np.float32))
    fresh = CachedEmbedder(Counting(), tmp_path)
    np.testing.assert_array_equal(fresh.embed_passages(["p", "q"]), want)
    assert fresh.corrupt == 1 and fresh.misses == 2 and fresh.embedder.embedded() == 2
    (new,) = fresh.segments("passage")
    assert new != seg and not seg.exists()
    # the rewritten segment serves the next reader
    last = CachedEmbedder(Counting(), tmp_path)
    last.embed_passages(["p", "q"])
    assert last.corrupt == 0 and last.embedder.embedded() == 0


def test_pickled_segment_is_refused(tmp_path):
    c = CachedEmbedder(Counting(), tmp_path)
    c.embed_passages(["p"])
    (seg,) = c.segments("passage")
    with open(seg, "wb") as fh:
        np.savez(fh, keys=np.array([object()], dtype=object), vectors=np.zeros((1, 32)))
    fresh = CachedEmbedder(Counting(), tmp_path)
    fresh.embed_passages(["p"])
    assert fresh.corrupt == 1 and fresh.embedder.embedded() == 1


def test_compaction_merges_segments(tmp_path):
    c = CachedEmbedder(Counting(), tmp_path, compact_at=3)
    for t in "abcd":
        c.embed_queries([t])
    assert len(c.segments("query")) == 1  # 4 segments > 3: merged into one
    fresh = CachedEmbedder(Counting(), tmp_path)
    np.testing.assert_array_equal(fresh.embed_queries(list("dcba")),
                                  HashingEmbedder(32).embed_queries(list("dcba")))
    assert fresh.embedder.embedded() == 0


def test_segments_of_another_dimension_are_ignored_and_kept(tmp_path):
    CachedEmbedder(Counting(32), tmp_path, cache_key="same").embed_passages(["a"])
    c = CachedEmbedder(Counting(16), tmp_path, cache_key="same")
    assert c.embed_passages(["a"]).shape == (1, 16)  # the 32-d row is not served
    assert (c.hits, c.misses, c.corrupt) == (0, 1, 0) and len(c.segments("passage")) == 2
    back = CachedEmbedder(Counting(32), tmp_path, cache_key="same")
    assert back.embed_passages(["a"]).shape == (1, 32) and back.embedder.embedded() == 0


class _Shrinking:
    """Returns 32-d vectors, then 16-d ones (a misconfigured model behind one name)."""

    fingerprint = "shrinking"

    def __init__(self, dim: int) -> None:
        self.dim = dim

    def embed_passages(self, texts):
        out = np.ones((len(texts), self.dim), np.float32)
        self.dim = 16
        return out

    embed_queries = embed_passages


def test_dimension_change_mid_run_is_an_error(tmp_path):
    c = CachedEmbedder(_Shrinking(32), tmp_path)
    c.embed_passages(["a"])
    with pytest.raises(EmbeddingError, match="dimension 16"):
        c.embed_passages(["b"])


def test_config_and_fingerprints(tmp_path, monkeypatch):
    for bad in (0, True, "2"):
        with pytest.raises(ConfigError, match="save_every"):
            CachedEmbedder(Counting(), tmp_path, save_every=bad)
        with pytest.raises(ConfigError, match="compact_at"):
            CachedEmbedder(Counting(), tmp_path, compact_at=bad)
    assert embedder_fingerprint(HashingEmbedder(32)).endswith("|HashingEmbedder(dim=32)")

    class Remote:  # default repr: the fingerprint is built from plain attributes
        def __init__(self, model: str) -> None:
            self.model = model
            self.api_key = "sk-secret"
            self._kwargs = {"base_url": "http://x", "api_key": "sk-secret"}

    fp = embedder_fingerprint(Remote("m1"))
    assert "m1" in fp and "http://x" in fp and "secret" not in fp
    assert fp == embedder_fingerprint(Remote("m1")) != embedder_fingerprint(Remote("m2"))
    monkeypatch.setenv("KGPATH_CACHE_DIR", str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("KGPATH_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert default_cache_dir() == tmp_path / "x" / "kgpath" / "embeddings"
