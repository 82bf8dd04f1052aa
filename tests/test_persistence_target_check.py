"""Save's target check: an existing directory's manifest is read safely."""

from __future__ import annotations

import os

import numpy as np
import pytest

from kgpath import KnowledgeGraph, PersistenceError


def _graph() -> KnowledgeGraph:
    return KnowledgeGraph.from_arrays(["a", "b"], np.array([0]), np.array([1]), compact=True)


def test_save_refuses_a_directory_whose_manifest_is_a_symlink(tmp_path):
    _graph().save(tmp_path / "real")
    d = tmp_path / "d"
    d.mkdir()
    os.symlink(tmp_path / "real" / "manifest.json", d / "manifest.json")
    with pytest.raises(PersistenceError, match="no valid manifest.json"):
        _graph().save(d)
    assert os.path.islink(d / "manifest.json") and os.listdir(d) == ["manifest.json"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_save_refuses_a_manifest_fifo_without_blocking(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    os.mkfifo(d / "manifest.json")  # reading it would block for ever
    with pytest.raises(PersistenceError, match="no valid manifest.json"):
        _graph().save(d)


def test_save_refuses_an_oversized_manifest(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "manifest.json").write_bytes(b'{"format": "kgpath.KnowledgeGraph", "pad": "'
                                      + b"x" * (1 << 20) + b'"}')
    with pytest.raises(PersistenceError, match="no valid manifest.json"):
        _graph().save(d)
    assert os.listdir(d) == ["manifest.json"]
