"""A segment the cache cannot open is skipped and kept, never a raw OSError."""

from __future__ import annotations

import numpy as np

from kgpath.embed_cache import CachedEmbedder


class _Ones:
    dim = 3
    fingerprint = "review-ones"

    def embed_queries(self, texts):
        return np.asarray([[1.0, 2.0, 2.0]] * len(texts), np.float32)

    def embed_passages(self, texts):
        return self.embed_queries(texts)

    async def aembed_queries(self, texts):
        return self.embed_queries(texts)

    async def aembed_passages(self, texts):
        return self.embed_queries(texts)


def test_folder_named_like_a_segment_is_skipped_not_deleted(tmp_path):
    first = CachedEmbedder(_Ones(), tmp_path)
    first.embed_queries(["a"])
    odd = first.path / "query-0-odd.npz"
    odd.mkdir()
    (odd / "user-file.txt").write_text("keep me")
    again = CachedEmbedder(_Ones(), tmp_path)
    got = again.embed_queries(["a", "b"])
    assert got.tolist() == [[1.0, 2.0, 2.0], [1.0, 2.0, 2.0]]
    assert (again.hits, again.misses, again.corrupt) == (1, 1, 0)  # "a" from the good segment
    assert (odd / "user-file.txt").read_text() == "keep me"


def test_truncated_segment_is_still_dropped(tmp_path):
    first = CachedEmbedder(_Ones(), tmp_path)
    first.embed_queries(["a"])
    (seg,) = first.segments("query")
    seg.write_bytes(seg.read_bytes()[:40])
    again = CachedEmbedder(_Ones(), tmp_path)
    again.embed_queries(["a"])
    assert (again.hits, again.misses, again.corrupt) == (0, 1, 1)
    assert not seg.exists() and len(again.segments("query")) == 1


def test_corrupt_segment_that_cannot_be_deleted_is_skipped(tmp_path, monkeypatch):
    first = CachedEmbedder(_Ones(), tmp_path)
    first.embed_queries(["a"])
    (seg,) = first.segments("query")
    seg.write_bytes(seg.read_bytes()[:40])
    real_unlink = type(seg).unlink

    def refuse(self, missing_ok=False):  # a read-only folder
        if self == seg:
            raise PermissionError(13, "Permission denied", str(self))
        return real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(type(seg), "unlink", refuse)
    again = CachedEmbedder(_Ones(), tmp_path)
    assert again.embed_queries(["a"]).tolist() == [[1.0, 2.0, 2.0]]
    assert (again.hits, again.misses, again.corrupt) == (0, 1, 1)
    assert seg.exists()
