from __future__ import annotations

import json

import numpy as np
import pytest

from kgpath import KnowledgeGraph, PersistenceError
from kgpath.graph import FORMAT_VERSION


@pytest.fixture
def saved(tmp_path, chain_graph):
    chain_graph.add_passage("p1", "a passage", {"src": "x"})
    chain_graph.vectors.set(np.eye(6, 4, dtype=np.float32))
    d = tmp_path / "g"
    chain_graph.save(d)
    return d, chain_graph


def test_round_trip_preserves_everything(saved):
    d, g = saved
    back = KnowledgeGraph.load(d)
    assert back.nodes == g.nodes
    assert back.edges == g.edges
    assert back.passages == g.passages
    np.testing.assert_array_equal(back.vectors.matrix, g.vectors.matrix)
    assert back.bfs("a").nodes.tolist() == g.bfs("a").nodes.tolist()
    # only JSON and .npy, nothing pickled
    assert sorted(p.name for p in d.iterdir()) == [
        "edges.json", "embedding_mask.npy", "embeddings.npy", "manifest.json",
        "nodes.json", "passages.json",
    ]


def test_save_replaces_atomically_and_leaves_no_temp(tmp_path, saved):
    d, g = saved
    g.add_node("z", text="new")
    g.save(d)
    assert len(KnowledgeGraph.load(d)) == 7
    assert [p.name for p in tmp_path.iterdir()] == ["g"]


def test_failed_save_leaves_previous_version(tmp_path, saved, monkeypatch):
    d, g = saved
    g.add_node("z")
    import kgpath.graph.persistence as graph_mod

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(graph_mod, "_write_synced", boom)
    with pytest.raises(OSError, match="disk full"):
        g.save(d)
    assert len(KnowledgeGraph.load(d)) == 6  # old copy intact
    assert [p.name for p in tmp_path.iterdir()] == ["g"]


def test_truncated_file_is_detected(saved):
    d, _ = saved
    p = d / "edges.json"
    p.write_bytes(p.read_bytes()[:10])
    with pytest.raises(PersistenceError, match="checksum of edges.json"):
        KnowledgeGraph.load(d)


def test_missing_file_is_detected(saved):
    d, _ = saved
    (d / "embeddings.npy").unlink()
    with pytest.raises(PersistenceError, match="truncated: embeddings.npy"):
        KnowledgeGraph.load(d)


def test_newer_version_is_refused(saved):
    d, _ = saved
    m = json.loads((d / "manifest.json").read_text())
    m["format_version"] = FORMAT_VERSION + 1
    (d / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(PersistenceError, match="newer"):
        KnowledgeGraph.load(d)


def test_corrupt_manifest_and_missing_dir(tmp_path, saved):
    d, _ = saved
    (d / "manifest.json").write_text("{not json")
    with pytest.raises(PersistenceError, match="corrupt"):
        KnowledgeGraph.load(d)
    with pytest.raises(PersistenceError, match="no manifest"):
        KnowledgeGraph.load(tmp_path / "nothing")


def test_npy_written_without_pickle(saved):
    d, _ = saved
    arr = np.load(d / "embeddings.npy", allow_pickle=False)
    assert arr.dtype == np.float32
