"""The save's swap: files put at the path while the graph is written survive."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from kgpath import KnowledgeGraph, PersistenceError
from kgpath.graph import persistence


def _graph(ids: list[str]) -> KnowledgeGraph:
    return KnowledgeGraph.from_arrays(ids, np.array([0]), np.array([1]), compact=True)


@pytest.mark.parametrize("before", ["graph", "missing", "empty"])
def test_user_files_put_at_the_path_during_a_save_are_kept(tmp_path, monkeypatch, before):
    d = tmp_path / "g"
    if before == "graph":
        _graph(["old", "x"]).save(d)
    elif before == "empty":
        d.mkdir()
    write = persistence._write_graph

    def write_then_user_moves_in(g, tmp):
        write(g, tmp)
        shutil.rmtree(d, ignore_errors=True)  # another program, while the graph is written
        d.mkdir()
        (d / "thesis.tex").write_text("years of work")

    monkeypatch.setattr(persistence, "_write_graph", write_then_user_moves_in)
    with pytest.raises(PersistenceError, match="thesis.tex"):
        _graph(["new", "x"]).save(d)
    assert (d / "thesis.tex").read_text() == "years of work"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g"]  # no temporary left


def test_the_swap_puts_foreign_content_back_instead_of_deleting_it(tmp_path, monkeypatch):
    exchange = persistence._exchange
    (tmp_path / "p").mkdir()
    (tmp_path / "q").mkdir()
    if not exchange(tmp_path / "p", tmp_path / "q"):
        pytest.skip("renameat2(RENAME_EXCHANGE) is unavailable here")
    (tmp_path / "p").rmdir()
    (tmp_path / "q").rmdir()
    d = tmp_path / "g"
    _graph(["old", "x"]).save(d)
    calls = []

    def user_moves_in_then_exchange(a, b):
        if not calls:  # the race: after the last check, before the swap
            shutil.rmtree(d)
            d.mkdir()
            (d / "thesis.tex").write_text("years of work")
        calls.append((a, b))
        return exchange(a, b)

    monkeypatch.setattr(persistence, "_exchange", user_moves_in_then_exchange)
    with pytest.raises(PersistenceError, match="thesis.tex"):
        _graph(["new", "x"]).save(d)
    assert len(calls) == 2 and (d / "thesis.tex").read_text() == "years of work"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g"]
