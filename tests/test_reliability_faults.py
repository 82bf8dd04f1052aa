"""Issue 23, storage faults: a write that fails or stops short is a typed error, never data.

File-system calls are monkeypatched to write short or to fail with ``ENOSPC``; every case
must raise :class:`~kgpath.errors.PersistenceError` (never score, load or resume zeros or a
half-written file as valid) and leave nothing behind that a later read takes for valid.
"""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from kgpath import HashingEmbedder, KnowledgeGraph, PersistenceError
from kgpath._files import write_all
from kgpath.index import GraphIndex
from kgpath.search.rescore import Float16File
from kgpath.search.vector import CompactVectorIndex

REAL_PWRITE = os.pwrite


def short_pwrite(fd: int, data: bytes, offset: int) -> int:
    """A full disk: half the bytes land."""
    return REAL_PWRITE(fd, bytes(data)[: max(1, len(data) // 2)], offset)


def enospc(*args: object) -> int:
    raise OSError(errno.ENOSPC, "No space left on device")


def unit_rows(n: int, d: int, seed: int = 0) -> np.ndarray:
    m = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


# ------------------------------------------------------------------ the float16 file
@pytest.mark.parametrize("fault", [short_pwrite, enospc])
def test_float16_file_short_or_failed_write_raises(monkeypatch, fault):
    f = Float16File(4, 8)
    monkeypatch.setattr(os, "pwrite", fault)
    with pytest.raises(PersistenceError, match="float16 vectors"):
        f.put([0, 1, 2, 3], unit_rows(4, 8))
    with pytest.raises(PersistenceError, match="never written"):
        f.read(np.array([2]))  # not zeros
    monkeypatch.setattr(os, "pwrite", REAL_PWRITE)
    f.put([0, 1, 2, 3], unit_rows(4, 8))  # a later put writes them: readable again
    np.testing.assert_allclose(f.read(np.arange(4)), unit_rows(4, 8), atol=1e-3)


@pytest.mark.parametrize("fault", [short_pwrite, enospc])
def test_compact_store_keeps_its_codes_when_the_file_write_fails(monkeypatch, fault):
    m = unit_rows(50, 16)
    store = CompactVectorIndex(m, kind="int8+float16", rescore_top=5)
    before = store.codes.copy()
    monkeypatch.setattr(os, "pwrite", fault)
    with pytest.raises(PersistenceError):
        store.put([3, 4], unit_rows(2, 16, seed=9))
    np.testing.assert_array_equal(store.codes, before)  # int8 codes untouched
    with pytest.raises(PersistenceError, match="never written"):
        store.search(m[3], 5)  # the short list reaches row 3: an error, not a zero score


@pytest.mark.parametrize("fault", [short_pwrite, enospc])
def test_graph_index_int8_float16_on_a_full_disk_raises(monkeypatch, fault):
    """Issue 23: a full temporary directory scored unwritten rows as zeros, 0/40 right."""
    g = KnowledgeGraph()
    for i in range(40):
        g.add_node(f"n{i}", text=f"topic {i} words {i * 7}")
    monkeypatch.setattr(os, "pwrite", fault)
    with pytest.raises(PersistenceError):
        idx = GraphIndex(g, HashingEmbedder(dim=32), vectors="int8+float16")
        idx.search("topic 3 words 21", k=1)


def test_write_all_checks_the_count(monkeypatch, tmp_path):
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT)
    try:
        monkeypatch.setattr(os, "write", lambda fd, data: 1)
        with pytest.raises(PersistenceError, match="wrote only 1"):
            write_all(fd, b"abcd", what="test bytes")
        monkeypatch.setattr(os, "write", enospc)
        with pytest.raises(PersistenceError, match="test bytes failed"):
            write_all(fd, b"abcd", what="test bytes")
    finally:
        os.close(fd)
