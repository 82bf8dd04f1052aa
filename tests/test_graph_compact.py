"""The compact (column) mode of KnowledgeGraph.from_arrays: same content as the object mode."""

from __future__ import annotations

import numpy as np
import pytest

from kgpath import KnowledgeGraph
from kgpath.errors import EmbeddingError, GraphError, NodeNotFoundError
from kgpath.graph.columns import HashIndex, StringColumn
from kgpath.index import find_by_name


def _both(ids, src, dst, **kw):
    return (KnowledgeGraph.from_arrays(ids, src, dst, **kw),
            KnowledgeGraph.from_arrays(ids, src, dst, compact=True, **kw))


def test_string_column_round_trips_unicode_and_empty():
    col = StringColumn.build(["a", "", "Zürich", "東京", "x" * 70000])
    assert len(col) == 5
    assert [col[i] for i in range(5)] == ["a", "", "Zürich", "東京", "x" * 70000]
    assert col[-2] == "東京" and col[1:3] == ["", "Zürich"]
    with pytest.raises(IndexError):
        col[5]
    # blob: 1 + 0 + 7 (ü is 2 bytes) + 6 + 70000 bytes; offsets 6 int64
    assert col.nbytes == 70014 + 48


def test_hash_index_finds_every_row_and_duplicates():
    col = StringColumn.build(["Ann", "bob", "ANN", "Carl"])
    by_id = HashIndex(col)
    assert by_id.rows("Ann") == [0] and by_id.rows("ANN") == [2] and by_id.rows("ann") == []
    assert by_id.first_duplicate() is None
    by_name = HashIndex(col, key=lambda s: s.lower())
    assert by_name.rows("ann") == [0, 2]
    assert by_name.first_duplicate() == "Ann"


def test_compact_equals_object_mode():
    ids = ["a", "b", "c", "d"]
    src, dst = [0, 0, 1, 2, 0, 3], [1, 2, 2, 3, 1, 0]  # (a, b, "r") twice: merged
    rel = ["r", "s", "r", "r", "r", "t"]
    obj, com = _both(ids, src, dst, relations=rel, texts=["", "Bee", "", "dee"])
    assert com.compact and not obj.compact
    assert len(com) == 4 and com.num_edges == 5
    assert list(com.nodes) == list(obj.nodes)
    assert list(com.edges) == list(obj.edges)
    assert com.node("b") == obj.node("b") and com.node("b").text == "Bee"
    assert com.edge_at(4) == obj.edge_at(4)
    assert com.edge_at(4).relation == "t" and com.edge_at(4).source == "d"
    for key in obj.csr():
        np.testing.assert_array_equal(com.csr()[key], obj.csr()[key], err_msg=key)
    assert com.bfs("a", max_depth=2).nodes.tolist() == obj.bfs("a", max_depth=2).nodes.tolist()
    assert [e.relation for e in com.edges_between("a", "b")] == ["r"]
    assert "c" in com and "z" not in com and 3 not in com
    assert com.index_of("d") == 3
    with pytest.raises(NodeNotFoundError):
        com.node("z")


def test_compact_without_relations_merges_exact_duplicates_in_first_order():
    obj, com = _both(["x", "y", "z"], np.array([2, 0, 2, 1, 0]), np.array([0, 1, 0, 2, 1]))
    assert [(e.source, e.target) for e in com.edges] == [("z", "x"), ("x", "y"), ("y", "z")]
    assert list(com.edges) == list(obj.edges)


def test_compact_find_by_name_matches_object_mode():
    ids = ["Paris", "paris", "Rome"]
    obj, com = _both(ids, [0], [2])
    assert find_by_name(com, "  PARIS ") == find_by_name(obj, "  PARIS ") == [0, 1]
    assert find_by_name(com, "Oslo") == []


@pytest.mark.parametrize(
    ("ids", "src", "dst", "match"),
    [
        (["a", "a"], [0], [1], "duplicates"),
        (["a", ""], [0], [1], r"node_ids\[1\]"),
        (["a", "b"], [0], [2], "out of range"),
        (["a", "b"], [0.0], [1], "integer"),
        (["a", "b"], [0, 1], [1], "differ in length"),
    ],
)
def test_compact_rejects_what_the_object_mode_rejects(ids, src, dst, match):
    for compact in (False, True):
        with pytest.raises(GraphError, match=match):
            KnowledgeGraph.from_arrays(ids, src, dst, compact=compact)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"texts": [None, None]}, r"texts\[0\] must be a string"),  # all falsy: still checked
        ({"texts": ["", 0]}, r"texts\[1\] must be a string"),
        ({"relations": [None]}, r"relations\[0\] must be a string"),  # object mode too
    ],
)
def test_both_modes_reject_non_string_texts_and_relations(kw, match):
    for compact in (False, True):
        with pytest.raises(GraphError, match=match):
            KnowledgeGraph.from_arrays(["a", "b"], [0], [1], compact=compact, **kw)


def test_all_empty_texts_keep_no_text_column():
    obj, com = _both(["a", "b"], [0], [1], texts=["", ""])
    assert com.nodes.texts is None
    assert [n.text for n in com.nodes] == [n.text for n in obj.nodes] == ["", ""]


def test_mutation_converts_to_object_mode():
    g = KnowledgeGraph.from_arrays(["a", "b"], [0], [1], compact=True)
    v0 = g.version
    assert g.add_edge("a", "b") == 0  # duplicate: merged into the existing edge
    assert not g.compact and g.version == v0
    assert g.add_node("c", name="Cee") == 2
    assert g.add_edge("b", "c", relation="r") == 1
    assert find_by_name(g, "cee") == [2]
    assert g.bfs("a").nodes.tolist() == [0, 1, 2]


def test_compact_embeddings_and_persistence(tmp_path):
    g = KnowledgeGraph.from_arrays(["a", "b", "c"], [0, 1], [1, 2], compact=True,
                                   embeddings=np.eye(3, dtype=np.float32))
    assert g.vectors.dim == 3 and g.compact
    g.save(tmp_path / "g")
    back = KnowledgeGraph.load(tmp_path / "g")
    assert list(back.nodes) == list(g.nodes) and list(back.edges) == list(g.edges)
    np.testing.assert_array_equal(back.vectors.matrix, np.eye(3, dtype=np.float32))
    bad = np.eye(3, dtype=np.float32)
    bad[1, 0] = np.nan
    with pytest.raises(EmbeddingError, match="'b'"):
        g.vectors.set(bad)


def test_pcr_and_index_on_compact_graph_equal_object_mode():
    from kgpath import HashingEmbedder
    from kgpath.index import GraphIndex
    from kgpath.methods.pcr import PathConstrainedRetriever

    rng = np.random.default_rng(3)
    n, m = 60, 240
    ids = [f"e{i}" for i in range(n)]
    texts = [f"entity {i} of kind {i % 4} near {i % 9}" for i in range(n)]
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    rel = [("likes", "knows", "near")[k % 3] for k in range(m)]
    out = []
    for g in _both(ids, src, dst, relations=rel, texts=texts):
        pcr = PathConstrainedRetriever(GraphIndex(g, HashingEmbedder(48)))
        res = pcr.retrieve("kind 2 near 5", anchor="e7", k=6, max_depth=3)
        out.append([(h.node, round(h.score, 6), h.path, h.edges, h.path_text(g))
                    for h in res.hits])
    assert out[0] == out[1] and len(out[0]) == 6
    assert any(len(h[3]) >= 2 for h in out[1])  # multi-hop paths with their edges
