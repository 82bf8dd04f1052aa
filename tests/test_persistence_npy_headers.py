""".npy reading: a forged header shape is a PersistenceError, never an allocation."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from kgpath import KnowledgeGraph, PersistenceError


def _forge(d: Path, name: str, descr: str, shape: str, data: bytes = b"") -> None:
    """Replace ``name`` by a v1.0 header claiming ``shape`` + ``data``; fix the manifest."""
    hdr = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}"
    hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
    raw = b"\x93NUMPY\x01\x00" + len(hdr).to_bytes(2, "little") + hdr.encode() + data
    (d / name).write_bytes(raw)
    m = json.loads((d / "manifest.json").read_text())
    m["files"][name] = {"sha256": hashlib.sha256(raw).hexdigest(), "size": len(raw)}
    (d / "manifest.json").write_text(json.dumps(m))


def _saved(tmp_path: Path, compact: bool) -> Path:
    g = KnowledgeGraph.from_arrays(["a", "b"], np.array([0]), np.array([1]), compact=compact,
                                   embeddings=np.ones((2, 2), dtype=np.float32))
    g.save(tmp_path / "g")
    return tmp_path / "g"


@pytest.mark.parametrize("compact", [True, False])
@pytest.mark.parametrize("shape", [
    f"({2**64}, 1)",           # larger than int64: OverflowError before
    "(10000000, 1000000)",     # 36 TiB: MemoryError before (object layout)
    f"({2**32}, {2**32})",     # wraps to 0 in an int64 product
    "(-2, -1)",                # negative dimensions with a positive product
])
def test_forged_embedding_shape_is_refused(tmp_path, compact, shape):
    d = _saved(tmp_path, compact)
    _forge(d, "embeddings.npy", "<f4", shape, b"\0" * 8)
    with pytest.raises(PersistenceError, match="does not fit the file"):
        KnowledgeGraph.load(d)


def test_forged_one_dimensional_column_shape_is_refused(tmp_path):
    d = _saved(tmp_path, True)
    _forge(d, "node_ids.npy", "|u1", f"({2**64},)", b"ab")
    with pytest.raises(PersistenceError, match="does not fit the file"):
        KnowledgeGraph.load(d)


@pytest.mark.parametrize("compact", [True, False])
def test_unterminated_header_is_a_persistence_error(tmp_path, compact):
    """numpy re-tokenises a header that is not a literal: tokenize.TokenError escaped."""
    d = _saved(tmp_path, compact)
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), \n"
    raw = b"\x93NUMPY\x01\x00" + len(hdr).to_bytes(2, "little") + hdr.encode() + b"\0" * 16
    (d / "embeddings.npy").write_bytes(raw)
    m = json.loads((d / "manifest.json").read_text())
    m["files"]["embeddings.npy"] = {"sha256": hashlib.sha256(raw).hexdigest(), "size": len(raw)}
    (d / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(PersistenceError, match="bad .npy header"):
        KnowledgeGraph.load(d)
