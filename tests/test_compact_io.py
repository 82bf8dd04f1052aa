"""A compact graph saves as .npy columns and loads back compact (graph/column_io.py)."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from kgpath import KnowledgeGraph, PersistenceError
from kgpath.errors import GraphError
from kgpath.graph.columns import EdgeColumns, NodeColumns
from kgpath.index import find_by_name

IDS = ["a", "Zürich", "東京", "d"]
SRC, DST = [0, 0, 1, 2, 0, 3], [1, 2, 2, 3, 1, 0]  # (a, Zürich, "r") twice: merged
REL = ["r", "s", "r", "r", "r", "t"]
TEXTS = ["", "Bee", "", "dee"]


def compact_graph(**kw) -> KnowledgeGraph:
    kw = {"relations": REL, "texts": TEXTS, **kw}
    g = KnowledgeGraph.from_arrays(IDS, SRC, DST, compact=True, **kw)
    g.add_passage("p1", "a passage", {"src": "x"})
    return g


def manifest(d: Path) -> dict:
    return json.loads((d / "manifest.json").read_text())


def rewrite(d: Path, name: str, data: bytes | np.ndarray) -> None:
    """Replace file ``name`` and fix its checksum, so only the content check can object."""
    if isinstance(data, np.ndarray):
        buf = io.BytesIO()
        np.save(buf, data, allow_pickle=False)
        data = buf.getvalue()
    (d / name).write_bytes(data)
    m = manifest(d)
    m["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    (d / "manifest.json").write_text(json.dumps(m))


@pytest.fixture
def saved(tmp_path):
    g = compact_graph(embeddings=np.arange(12, dtype=np.float32).reshape(4, 3))
    d = tmp_path / "g"
    g.save(d)
    return d, g


def test_round_trip_is_compact_and_equal(saved):
    d, g = saved
    back = KnowledgeGraph.load(d)
    assert back.compact
    assert list(back.nodes) == list(g.nodes) and list(back.edges) == list(g.edges)
    assert back.num_edges == 5 and back.edge_at(4).relation == "t"
    assert back.node("Zürich").text == "Bee" and back.index_of("東京") == 2
    assert back.passages == g.passages
    for key in g.csr():
        np.testing.assert_array_equal(back.csr()[key], g.csr()[key], err_msg=key)
    np.testing.assert_array_equal(back.vectors.matrix,
                                  np.arange(12, dtype=np.float32).reshape(4, 3))
    assert back.vectors.matrix.dtype == np.float32
    assert find_by_name(back, "zürich") == [1]


def test_columns_layout_files_and_manifest(saved):
    d, _ = saved
    assert sorted(p.name for p in d.iterdir()) == [
        "edge_relations.npy", "edge_sources.npy", "edge_targets.npy", "embedding_mask.npy",
        "embeddings.npy", "manifest.json", "node_id_offsets.npy", "node_ids.npy",
        "node_text_offsets.npy", "node_texts.npy", "passages.json", "relations.json",
    ]
    m = manifest(d)
    assert m["layout"] == "columns" and m["format_version"] == 3
    assert (m["num_nodes"], m["num_edges"], m["num_passages"]) == (4, 5, 1)
    for name, entry in m["files"].items():  # the streamed hash is the file's hash
        data = (d / name).read_bytes()
        assert entry == {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    # "Zürich" is 7 UTF-8 bytes, "東京" 6: offsets by hand
    assert np.load(d / "node_id_offsets.npy").tolist() == [0, 1, 8, 14, 15]
    assert np.load(d / "edge_sources.npy").tolist() == [0, 0, 1, 2, 3]
    assert np.load(d / "edge_targets.npy").dtype == np.int32
    assert json.loads((d / "relations.json").read_text()) == ["r", "s", "t"]
    for name in ("node_ids.npy", "edge_relations.npy"):  # never pickled
        assert np.load(d / name, allow_pickle=False).dtype != object


def test_load_makes_no_node_or_edge_objects(saved, monkeypatch):
    d, _ = saved

    def boom(self, j):
        raise AssertionError("a Node/Edge object was made while loading")

    monkeypatch.setattr(NodeColumns, "_at", boom)
    monkeypatch.setattr(EdgeColumns, "_at", boom)
    back = KnowledgeGraph.load(d)
    assert back.compact and len(back) == 4
    assert back.bfs("a", max_depth=1).nodes.tolist() == [0, 1, 2]


def test_no_relations_no_texts_and_empty_graph(tmp_path):
    g = KnowledgeGraph.from_arrays(["x", "y"], [1, 1], [0, 0], compact=True)
    g.save(tmp_path / "g")
    assert sorted(p.name for p in (tmp_path / "g").iterdir()) == [
        "edge_sources.npy", "edge_targets.npy", "manifest.json", "node_id_offsets.npy",
        "node_ids.npy", "passages.json", "relations.json",
    ]
    back = KnowledgeGraph.load(tmp_path / "g")
    assert [(e.source, e.target, e.relation) for e in back.edges] == [("y", "x", "")]
    assert back.node("x").text == "" and back.vectors.dim is None
    empty = KnowledgeGraph.from_arrays(["solo"], [], [], compact=True)
    empty.save(tmp_path / "e")
    back = KnowledgeGraph.load(tmp_path / "e")
    assert back.compact and len(back) == 1 and back.num_edges == 0


def test_choose_the_mode_on_load(saved, tmp_path):
    d, g = saved
    obj = KnowledgeGraph.load(d, compact=False)
    assert not obj.compact and list(obj.nodes) == list(g.nodes)
    assert list(obj.edges) == list(g.edges)
    np.testing.assert_array_equal(obj.vectors.matrix, g.vectors.matrix)
    # an object graph the compact mode can hold loads compact on request
    plain = KnowledgeGraph.from_arrays(IDS, SRC, DST, relations=REL, texts=TEXTS)
    plain.save(tmp_path / "plain")
    assert manifest(tmp_path / "plain")["format_version"] == 2  # object layout as before
    back = KnowledgeGraph.load(tmp_path / "plain", compact=True)
    assert back.compact and list(back.edges) == list(g.edges) and list(back.nodes) == list(g.nodes)
    assert not KnowledgeGraph.load(tmp_path / "plain").compact


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda g: g.add_node("e", type="City"), r"node 'e' has type"),
        (lambda g: g.add_node("e", name="Eee"), r"node 'e' has name"),
        (lambda g: g.add_node("e", metadata={"k": 1}, provenance="p"),
         r"node 'e' has metadata, provenance"),
        (lambda g: g.add_edge("a", "d", weight=0.5), r"edge 'a -> d' has weight"),
    ],
)
def test_compact_load_names_what_compact_cannot_hold(tmp_path, edit, match):
    g = KnowledgeGraph.from_arrays(IDS, SRC, DST)
    edit(g)
    g.save(tmp_path / "g")
    with pytest.raises(GraphError, match=match + r".*compact mode cannot hold"):
        KnowledgeGraph.load(tmp_path / "g", compact=True)


def test_compact_save_refuses_a_directory_of_user_files(tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    (d / "thesis.tex").write_text("years of work")
    (d / "node_ids.npy").write_text("mine")  # a name the layout uses does not make it ours
    with pytest.raises(PersistenceError, match="not a saved kgpath graph"):
        compact_graph().save(d)
    assert (d / "thesis.tex").read_text() == "years of work"
    assert (d / "node_ids.npy").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs"]


def test_layouts_replace_each_other_atomically(tmp_path):
    d = tmp_path / "g"
    KnowledgeGraph.from_arrays(["a", "b", "c"], [0], [1]).save(d)
    compact_graph().save(d)
    assert KnowledgeGraph.load(d).compact and len(KnowledgeGraph.load(d)) == 4
    assert not (d / "nodes.json").exists()
    KnowledgeGraph.from_arrays(["a", "b", "c"], [0], [1]).save(d)
    assert not KnowledgeGraph.load(d).compact and not (d / "node_ids.npy").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g"]


@pytest.mark.parametrize(
    ("name", "data", "match"),
    [
        ("node_id_offsets.npy", np.array([0, 1, 8, 14, 16]), r"node_id_offsets.npy.*offsets"),
        ("node_id_offsets.npy", np.array([0, 1, 1, 14, 15]), r"node_id_offsets.npy.*increase"),
        ("node_id_offsets.npy", np.array([0, 1, 3, 14, 15]), r"splits a UTF-8 character"),
        ("node_id_offsets.npy", np.array([0, 1, 8, 14]), r"node_id_offsets.npy.*5 offsets"),
        ("node_ids.npy", np.frombuffer(b"aZ\xff\xffrich\xe6\x9d\xb1\xe4\xba\xacd", np.uint8),
         r"node_ids.npy is corrupt: not UTF-8"),
        ("node_ids.npy", np.frombuffer("aZürich東京a".encode(), np.uint8), r"'a' appears twice"),
        ("node_ids.npy", np.frombuffer("aZürich東京 ".encode(), np.uint8), r"id 3 is white"),
        ("edge_targets.npy", np.array([1, 2, 2, 4, 0], np.int32), r"edge_targets.npy.*\[0, 4\)"),
        ("edge_sources.npy", np.array([0, 0, 1, 2], np.int32), r"edge_sources.npy.*4 rows"),
        ("edge_relations.npy", np.array([0, 1, 0, 3, 2], np.int32),
         r"edge_relations.npy.*\[0, 3\)"),
        ("edge_sources.npy", np.array([0, 0, 1, 2, 3], np.int64),
         r"edge_sources.npy.*1-D int32 array, got 1-D int64"),
        ("embeddings.npy", np.zeros((3, 3), np.float32), r"embeddings.npy.*3 rows for 4"),
        ("embeddings.npy", np.asfortranarray(np.zeros((4, 3), np.float32)), r"F-order"),
        ("relations.json", b'["r", 1]', r"relations.json is corrupt"),
    ],
)
def test_bad_columns_raise_persistence_error_naming_the_file(saved, name, data, match):
    d, _ = saved
    rewrite(d, name, data)
    with pytest.raises(PersistenceError, match=match):
        KnowledgeGraph.load(d)


def test_pickled_object_array_is_refused(saved):
    d, _ = saved
    buf = io.BytesIO()
    np.save(buf, np.array(["x", None], dtype=object), allow_pickle=True)
    rewrite(d, "node_ids.npy", buf.getvalue())
    with pytest.raises(PersistenceError, match=r"node_ids.npy.*got 1-D object"):
        KnowledgeGraph.load(d)


def test_forged_shape_and_checksum_mismatch(saved):
    d, _ = saved
    raw = (d / "edge_sources.npy").read_bytes()
    forged = raw.replace(b"(5,)", b"(9999999999999,)".ljust(4), 1)
    rewrite(d, "edge_sources.npy", forged)
    with pytest.raises(PersistenceError, match=r"edge_sources.npy.*does not fit the file"):
        KnowledgeGraph.load(d)
    rewrite(d, "edge_sources.npy", raw)
    assert len(KnowledgeGraph.load(d)) == 4
    (d / "edge_sources.npy").write_bytes(raw[:-4] + b"\x01\x00\x00\x00")  # same size
    with pytest.raises(PersistenceError, match="checksum of edge_sources.npy"):
        KnowledgeGraph.load(d)
    (d / "edge_sources.npy").write_bytes(raw[:-4])
    with pytest.raises(PersistenceError, match="edge_sources.npy"):
        KnowledgeGraph.load(d)


def test_manifest_layout_is_checked(saved):
    d, _ = saved
    m = manifest(d)
    for bad in ({"layout": "columns", "format_version": 2}, {"layout": "rows"}):
        (d / "manifest.json").write_text(json.dumps({**m, **bad}))
        with pytest.raises(PersistenceError, match="unknown layout"):
            KnowledgeGraph.load(d)
    files = {k: v for k, v in m["files"].items() if k != "edge_targets.npy"}
    (d / "manifest.json").write_text(json.dumps({**m, "files": files}))
    with pytest.raises(PersistenceError, match="edge_targets.npy"):
        KnowledgeGraph.load(d)


def test_string_column_blocks_decode_ascii_and_unicode_blocks_alike():
    from kgpath.graph.columns import StringColumn

    strings = [f"n{i}" for i in range(70_000)] + ["Zürich", "", "東京"]
    col = StringColumn.build(strings)
    assert list(col) == strings  # block 1 ASCII (sliced), block 2 decoded per string
    assert [a for a, _ in col.blocks()] == [0, 65536]
    assert [col[j] for j in (0, 69_999, 70_000, 70_002)] == ["n0", "n69999", "Zürich", "東京"]


def test_int8_float16_scores_are_float16_exact_only_on_the_short_list():
    """Hand-computed: q = (1, 0); row 1 = (0.6, 0.8) has int8 scale 0.8/127, code 95.

    int8 score 95·0.8/127 = 0.598425, float16 score float16(0.6) = 0.600098. The bound of
    a row is scale·Σ|q|·(1/2 + 127·2^-11) + 1e-4: 0.004525 for rows 0/2/3 (scale 1/127),
    0.003640 for row 1. rescore_top=1: tau = 1 - 0.004525; only row 0 can reach it, so
    row 1 keeps its int8 score. rescore_top=2: tau = 0.598425 - 0.003640; rows 0 and 1
    are re-scored (row 2's upper bound 0.004525 < tau), row 2 and 3 keep int8 scores.
    """
    from kgpath.search.vector import CompactVectorIndex

    rows = np.array([[1, 0], [0.6, 0.8], [0, 1], [-1, 0]], dtype=np.float32)
    q = np.array([1, 0], dtype=np.float32)
    int8_1, f16_1 = 95 * 0.8 / 127, float(np.float16(0.6))
    for top, row1 in ((1, int8_1), (2, f16_1)):
        st = CompactVectorIndex(rows, kind="int8+float16", rescore_top=top)
        np.testing.assert_allclose(st.scores(q), [1.0, row1, 0.0, -1.0], atol=1e-6)
        # among candidates {3, 1} row 1 is the top row, so it is always re-scored
        np.testing.assert_allclose(st.scores(q, np.array([3, 1])), [-1.0, f16_1], atol=1e-6)
    assert abs(int8_1 - f16_1) > 1e-3  # the two cases really differ
