"""Interrupted-save recovery: leftovers with a bad ``saved_ns``."""

from __future__ import annotations

import json
import shutil

import numpy as np

from kgpath import KnowledgeGraph


def _graph(ids: list[str]) -> KnowledgeGraph:
    return KnowledgeGraph.from_arrays(ids, np.array([0]), np.array([1]), compact=True)


def test_a_leftover_with_a_non_integer_saved_ns_counts_as_oldest(tmp_path):
    _graph(["old", "x"]).save(tmp_path / "a")
    _graph(["new", "x"]).save(tmp_path / "b")
    shutil.move(tmp_path / "a", tmp_path / ".g.tmp-aaaaaaaa")
    shutil.move(tmp_path / "b", tmp_path / ".g.old-bbbbbbbb")
    path = tmp_path / ".g.tmp-aaaaaaaa" / "manifest.json"
    m = json.loads(path.read_text())
    m["saved_ns"] = "9" * 30  # a string: compared with an int it raised TypeError
    path.write_text(json.dumps(m))
    back = KnowledgeGraph.load(tmp_path / "g")  # g is missing: the newest complete leftover
    assert [n.id for n in back.nodes] == ["new", "x"]
    _graph(["third", "x"]).save(tmp_path / "g")  # promotes, then replaces; leftovers removed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g"]
    assert [n.id for n in KnowledgeGraph.load(tmp_path / "g").nodes] == ["third", "x"]


def test_a_folder_named_like_a_leftover_but_holding_user_files_is_kept(tmp_path):
    _graph(["a", "b"]).save(tmp_path / "g")
    user = tmp_path / ".g.tmp-userdata"
    user.mkdir()
    (user / "thesis.tex").write_text("keep me")
    _graph(["c", "d"]).save(tmp_path / "g")  # the save's clean-up runs over the leftovers
    assert (user / "thesis.tex").read_text() == "keep me"
    assert [n.id for n in KnowledgeGraph.load(tmp_path / "g").nodes] == ["c", "d"]
