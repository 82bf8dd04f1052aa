"""Sizes a reader can hold beside the paper (STYLE.md): modules, functions, the graph's surface."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = (
    ROOT / "src" / "kgpath",
    ROOT / "integrations" / "langchain" / "langchain_kgpath",
    ROOT / "integrations" / "llama-index" / "llama_index",
)
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60
MAX_GRAPH_MEMBERS = 25


def _sources() -> list[Path]:
    return sorted(p for d in SOURCES for p in d.rglob("*.py"))


def test_modules_are_at_most_600_lines() -> None:
    long = {str(p.relative_to(ROOT)): n for p in _sources()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def test_functions_are_at_most_60_lines() -> None:
    long = []
    for p in _sources():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{p.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)")
    assert long == []


def test_knowledge_graph_keeps_a_small_surface() -> None:
    from kgpath import KnowledgeGraph

    public = sorted(n for n in dir(KnowledgeGraph) if not n.startswith("_"))
    assert len(public) <= MAX_GRAPH_MEMBERS, public
