"""The compact save/load: graphs the columns layout must round-trip exactly."""

from __future__ import annotations

import hashlib
import json

from kgpath import KnowledgeGraph


def test_edgeless_compact_graph_with_an_empty_relation_list_loads_back(tmp_path):
    g = KnowledgeGraph.from_arrays(["x", "ÿ"], [], [], relations=[], compact=True)
    g.save(tmp_path / "g")
    assert json.loads((tmp_path / "g" / "relations.json").read_text()) == [""]
    back = KnowledgeGraph.load(tmp_path / "g")
    assert back.compact and [n.id for n in back.nodes] == ["x", "ÿ"] and back.num_edges == 0


def test_edgeless_object_graph_loaded_compact_saves_and_loads_back(tmp_path):
    g = KnowledgeGraph()
    g.add_node("a")
    g.add_node("b", text="bee")
    g.save(tmp_path / "o")
    c = KnowledgeGraph.load(tmp_path / "o", compact=True)
    c.save(tmp_path / "c")
    back = KnowledgeGraph.load(tmp_path / "c")
    assert back.compact and [(n.id, n.text) for n in back.nodes] == [("a", ""), ("b", "bee")]


def test_a_saved_empty_relation_table_still_loads(tmp_path):
    """A graph saved before the fix wrote ``[]`` for an edgeless graph; it loads."""
    g = KnowledgeGraph.from_arrays(["x"], [], [], compact=True)
    g.save(tmp_path / "g")
    d = tmp_path / "g"
    (d / "relations.json").write_bytes(b"[]")
    m = json.loads((d / "manifest.json").read_text())
    m["files"]["relations.json"] = {"sha256": hashlib.sha256(b"[]").hexdigest(), "size": 2}
    (d / "manifest.json").write_text(json.dumps(m))
    back = KnowledgeGraph.load(d)
    assert back.compact and len(back) == 1 and back.num_edges == 0


def test_unicode_ids_empty_texts_partial_embeddings_round_trip(tmp_path):
    ids = ["é", "日本", "a b", "😀", "x"]
    g = KnowledgeGraph.from_arrays(ids, [0, 1, 3], [1, 2, 4], relations=["r", "ß", ""],
                                   texts=["", "t", "", "ü", ""], compact=True)
    g.vectors.set({"日本": [1.0, 2.0], "😀": [3.0, 4.0]})
    g.save(tmp_path / "g")
    back = KnowledgeGraph.load(tmp_path / "g")
    assert back.compact and list(back.nodes) == list(g.nodes) and list(back.edges) == list(g.edges)
    assert [e.relation for e in back.edges] == ["r", "ß", ""]
    assert back.vectors.missing() == [0, 2, 4]
    assert back._emb[3].tolist() == [3.0, 4.0] and back._emb[0].tolist() == [0.0, 0.0]
