"""The command line as a new user tries it (issue 24): each evaluation's own ``--help``,
unknown demo sections and evaluations exit non-zero naming the valid ones, and the demo
triggers none of the library's own warnings."""

from __future__ import annotations

import warnings

import pytest

from kgpath.cli import main
from kgpath.demo import SECTIONS


@pytest.mark.parametrize("name", ["kg", "pcr", "traversal"])
def test_eval_help_shows_the_evaluations_options(name: str, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["eval", name, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: kgpath eval {name}") and "--data" in out


def test_eval_without_a_name_lists_the_evaluations(capsys) -> None:
    assert main(["eval", "--help"]) == 0
    out = capsys.readouterr().out
    assert "kgpath eval NAME" in out and all(n in out for n in ("pcr", "traversal", "kg"))
    assert main(["eval"]) == 2
    assert "evaluations:" in capsys.readouterr().err


def test_unknown_evaluation_suggests_the_closest(capsys) -> None:
    assert main(["eval", "kgg"]) == 2
    assert "did you mean 'kg'?" in capsys.readouterr().err


@pytest.mark.parametrize("sections", ["bogus", "pcr,pathrg", ","])
def test_unknown_demo_sections_exit_2_naming_the_valid_ones(sections: str, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--embedder", "hashing", "--sections", sections])
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert "valid sections: " + ", ".join(SECTIONS) in captured.err
    assert captured.out == ""  # nothing ran, no header printed
    if sections == "pcr,pathrg":
        assert "did you mean 'pathrag'?" in captured.err


def test_the_demo_triggers_no_warning_of_its_own(tmp_path, capsys) -> None:
    pytest.importorskip("matplotlib", reason="--plot pictures need kgpath[plot]")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the run
        assert main(["demo", "--embedder", "hashing", "--sections",
                     "pcr,pathrag,c2rag,plots", "--plot", "--out", str(tmp_path)]) == 0
    assert "PathRAG: flow-pruned relational paths (N=30" in capsys.readouterr().out
