"""Runs cookbook/langchain_c2rag_lcel.py end to end with the hashing embedder (fast, offline)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "cookbook" / "langchain_c2rag_lcel.py"


def test_c2rag_lcel_recipe_runs(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("c2rag_lcel_recipe", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # pydantic resolves the recipe's annotations through it
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.modules.pop(spec.name, None)
    mod.main(["--embedder", "hashing"])
    out = capsys.readouterr().out
    assert "Planner: scripted FakeListChatModel" in out
    assert "[Block 1] No Cross, No Crown written during imprisonment in ?prison" in out
    assert "[Block 2] ?prison used as a prison until ?year" in out
    assert "1952" in out  # the recovered sentence reaches the prompt
    assert "Answer: (a real chat model's answer would appear here)" in out
    assert "hop 2 (P2)" in out
    assert "[fallback]" in out and "action fallback_appended" in out
