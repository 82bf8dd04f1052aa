"""The layers of ARCHITECTURE.md, checked on the source text with ``ast``.

Every import statement counts, also one inside a function or under ``if TYPE_CHECKING``:
a lazy import is still a dependency. For the framework rule only statements that run at
import time count (module and class bodies, not function bodies, not ``if TYPE_CHECKING``).

- each top-level package of ``kgpath`` imports only its own layer and the layers below
  (:data:`LAYERS`, lowest first, the same list as ARCHITECTURE.md);
- no two top-level packages import each other, directly or through others (no cycle);
- ``kgpath.eval`` imports neither ``kgpath.cli`` nor ``kgpath.demo``, and only ``kgpath.demo``
  and ``kgpath.cli`` import ``kgpath.demo``;
- no module imports ``llama_index`` or ``langchain*`` when it is imported, and no class in
  ``src/kgpath`` wraps a framework object (those live in the adapters).
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



#: Top-level packages and modules of ``kgpath`` by layer, lowest first. A package may import
#: its own layer and the layers below it, never one above (ARCHITECTURE.md draws the same).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "_config", "_files", "_plugins", "_progress", "_parallel", "_singleflight",
     "_tables", "tokens", "token_engine"),
    ("graph",),
    ("embeddings", "llm", "rerank", "prompts", "embed_cache", "data"),
    ("evidence",),
    ("search",),
    ("ingest",),
    ("index",),
    ("backends",),
    ("methods",),
    ("policies",),
    ("facade", "recipes"),
    ("testing", "eval", "viz"),
    ("demo", "cli"),
)
LAYER_OF = {name: i for i, names in enumerate(LAYERS) for name in names}


def _top(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "kgpath" else None


def _top_level_names() -> set[str]:
    return {p.stem if p.suffix == ".py" else p.name for p in PKG.iterdir()
            if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()}


def _package_edges(imports: list[Import]) -> dict[tuple[str, str], Import]:
    """``(importer, imported)`` top-level package pairs, each with one statement as witness."""
    tops = _top_level_names()
    edges: dict[tuple[str, str], Import] = {}
    for i in imports:
        a, b = _top(i.module), _top(i.target)
        if a and b and a != b and b in tops:
            edges.setdefault((a, b), i)
    return edges


def test_every_top_level_package_has_a_layer() -> None:
    missing = sorted(_top_level_names() - set(LAYER_OF))
    assert missing == [], f"add these to LAYERS and ARCHITECTURE.md: {missing}"


def test_no_package_imports_a_layer_above_it(imports: list[Import]) -> None:
    bad = [str(w) for (a, b), w in _package_edges(imports).items()
           if a in LAYER_OF and b in LAYER_OF and LAYER_OF[b] > LAYER_OF[a]]
    assert sorted(bad) == []


def _cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components with more than one package (Tarjan, iterative)."""
    graph: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph[w])))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_cycle_finder_on_a_hand_made_graph() -> None:
    edges = {("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "d"), ("f", "a")}
    assert sorted(_cycles(edges)) == [["a", "b", "c"], ["d", "e"]]
    assert _cycles({("a", "b"), ("b", "c")}) == []


def test_no_two_top_level_packages_import_each_other(imports: list[Import]) -> None:
    edges = _package_edges(imports)
    cycles = _cycles(set(edges))
    witnesses = [str(w) for (a, b), w in edges.items()
                 if any(a in c and b in c for c in cycles)]
    assert cycles == [], f"import cycles {cycles}; statements: {sorted(witnesses)}"


def test_graph_imports_nothing_above_it(imports: list[Import]) -> None:
    above = tuple(f"kgpath.{n}" for n, layer in LAYER_OF.items() if layer > LAYER_OF["graph"])
    assert _violations(imports, "kgpath.graph", above) == []


def test_backends_import_no_method(imports: list[Import]) -> None:
    assert _violations(imports, "kgpath.backends", ("kgpath.methods",)) == []


def test_eval_imports_neither_cli_nor_demo(imports: list[Import]) -> None:
    assert _violations(imports, "kgpath.eval", ("kgpath.cli", "kgpath.demo")) == []


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


def test_no_framework_wrapper_class_in_the_core() -> None:
    """No class of ``src/kgpath`` is named after a framework or imports one in its body."""
    bad = []
    for f in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name.startswith(("LangChain", "LlamaIndex")):
                bad.append(f"{f.relative_to(SRC)}:{node.lineno} class {node.name}")
    assert bad == []


def test_no_compatibility_packages() -> None:
    for gone in ("build", "stores", "adapter_support", "methods/c2rag_plan"):
        assert not (PKG / gone).exists() and not (PKG / f"{gone}.py").exists(), gone
