"""Layering of the core (issue 10 item 5), checked on the source text with ``ast``.

Layers, lowest first: errors/evidence/graph/embeddings/... -> build -> methods -> eval ->
cli/demo. A module may import its own layer and those below, never above:

- ``kgpath.eval`` imports neither ``kgpath.cli`` nor ``kgpath.demo``;
- ``kgpath.build`` imports neither ``kgpath.methods`` nor ``kgpath.eval``;
- only ``kgpath.demo`` and ``kgpath.cli`` import ``kgpath.demo`` (the core stays importable
  and runnable without the demo; ``kgpath demo`` still reaches it through the CLI);
- no module imports ``llama_index`` or ``langchain*`` when it is imported (the core knows
  no framework; adapters live in their own distributions).

Every import statement counts for the layer rules, also one inside a function or under
``if TYPE_CHECKING``: a lazy import is still a dependency. For the framework rule only
statements that run at import time count (module and class bodies, not function bodies,
not ``if TYPE_CHECKING`` blocks).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "kgpath"


@dataclass(frozen=True)
class Import:
    """One imported module name, where it is imported, and whether at import time."""

    module: str  # importing module, e.g. "kgpath.eval.pcr_eval"
    target: str  # imported module, e.g. "kgpath.demo"
    line: int
    at_import_time: bool

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.target}"


def _module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """Absolute name of the module an ``ImportFrom`` reads from (relative ones resolved)."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports_of(path: Path, src: Path = SRC) -> list[Import]:
    """Every import statement of one source file under ``src``."""
    module = _module_name(path, src)
    is_package = path.name == "__init__.py"
    found: list[Import] = []

    def visit(node: ast.AST, runtime: bool) -> None:
        if isinstance(node, ast.Import):
            found.extend(Import(module, a.name, node.lineno, runtime) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            src = _resolve(node, module, is_package)
            found.append(Import(module, src, node.lineno, runtime))
            # "from kgpath import demo" imports the submodule kgpath.demo
            found.extend(
                Import(module, f"{src}.{a.name}", node.lineno, runtime)
                for a in node.names if a.name != "*"
            )
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            runtime = False
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, False)
            for child in node.orelse:
                visit(child, runtime)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, runtime)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), True)
    return found


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


@pytest.fixture(scope="module")
def imports() -> list[Import]:
    files = sorted(PKG.rglob("*.py"))
    assert len(files) > 20, f"expected the kgpath sources under {PKG}"
    return [imp for f in files for imp in _imports_of(f)]


def _report(bad: list[Import]) -> list[str]:
    """One line per offending statement (its shortest target: the module, not the name)."""
    first: dict[tuple[str, int], Import] = {}
    for i in bad:
        key = (i.module, i.line)
        if key not in first or len(i.target) < len(first[key].target):
            first[key] = i
    return sorted(str(i) for i in first.values())


def _violations(imports: list[Import], layer: str, forbidden: tuple[str, ...]) -> list[str]:
    return _report([
        i for i in imports
        if _within(i.module, layer) and any(_within(i.target, f) for f in forbidden)
    ])


def test_parser_sees_lazy_relative_and_type_checking_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "src" / "kgpath" / "eval"
    pkg.mkdir(parents=True)
    f = pkg / "x.py"
    f.write_text(
        "from typing import TYPE_CHECKING\n"
        "from .. import demo\n"
        "if TYPE_CHECKING:\n    import langchain_core\n"
        "def f():\n    from kgpath.cli import main\n    import llama_index.core\n"
        "class C:\n    import langchain\n"
    )
    got = {(i.target, i.line, i.at_import_time) for i in _imports_of(f, tmp_path / "src")}
    assert ("kgpath.demo", 2, True) in got
    assert ("langchain_core", 4, False) in got
    assert ("kgpath.cli", 6, False) in got and ("llama_index.core", 7, False) in got
    assert ("langchain", 9, True) in got


def test_eval_imports_neither_cli_nor_demo(imports: list[Import]) -> None:
    assert _violations(imports, "kgpath.eval", ("kgpath.cli", "kgpath.demo")) == []


def test_build_imports_neither_methods_nor_eval(imports: list[Import]) -> None:
    bad = _violations(imports, "kgpath.build", ("kgpath.methods", "kgpath.eval"))
    # build/chunk_graph and build/extract are being split on other branches; until those
    # are merged their imports of kgpath.methods are known, and only theirs are tolerated
    owned_elsewhere = ("kgpath.ingest.chunk_graph", "kgpath.ingest.extract")
    if bad and all(v.split(":")[0].startswith(owned_elsewhere) for v in bad):
        pytest.xfail("known until the build/ branches are merged: " + "; ".join(bad))
    assert bad == []


def test_only_demo_and_cli_import_demo(imports: list[Import]) -> None:
    bad = _report([
        i for i in imports
        if _within(i.target, "kgpath.demo")
        and not (_within(i.module, "kgpath.demo") or _within(i.module, "kgpath.cli"))
    ])
    assert bad == []


def test_no_framework_import_at_import_time(imports: list[Import]) -> None:
    bad = _report([
        i for i in imports
        if i.at_import_time
        and (_within(i.target, "llama_index") or i.target.split(".")[0].startswith("langchain"))
    ])
    assert bad == []
