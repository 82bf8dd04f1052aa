"""The documentation site's sources (issue 24), checked without building it.

``make docs`` runs ``mkdocs build --strict``; these checks are the fast part of it: every page
the navigation of ``mkdocs.yml`` names exists (and no page is left out of it), every
``::: identifier`` of mkdocstrings imports, and every directive of ``docs/hooks.py`` finds
the README/ARCHITECTURE text it names.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
NAV_PAGE = re.compile(r"^\s*-\s*(?:[^:]+:\s*)?(\S+\.md)\s*$")
AUTODOC = re.compile(r"^::: (\S+)\s*$", re.MULTILINE)


def _nav_pages() -> list[str]:
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text.split("\nnav:\n", 1)[1]
    return [m.group(1) for line in nav.splitlines() if (m := NAV_PAGE.match(line))]


def _hooks():
    spec = importlib.util.spec_from_file_location("kgpath_docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _resolve(identifier: str) -> object:
    """Import the longest importable module prefix, then walk the attributes."""
    parts = identifier.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(identifier)


def test_nav_names_every_page_and_each_exists() -> None:
    pages = _nav_pages()
    assert "index.md" in pages and "methods/pcr.md" in pages and "api/langchain.md" in pages
    assert len(pages) == len(set(pages))
    missing = [p for p in pages if not (DOCS / p).is_file()]
    assert missing == []
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert on_disk == set(pages)


def test_every_method_has_a_page() -> None:
    from kgpath.methods.registry import SPEC_MODULES

    pages = set(_nav_pages())
    assert {f"methods/{m}.md" for m in SPEC_MODULES} <= pages


IDENTIFIERS = sorted({i for p in DOCS.rglob("*.md")
                      for i in AUTODOC.findall(p.read_text(encoding="utf-8"))})


def test_the_api_reference_covers_the_brief() -> None:
    wanted = {"kgpath", "kgpath.index", "kgpath.ingest", "kgpath.backends",
              "llama_index.retrievers.kgpath", "langchain_kgpath",
              *(f"kgpath.methods.{m}" for m in
                ("pcr", "pathrag", "c2rag", "schema", "traversal", "augmented"))}
    assert wanted <= set(IDENTIFIERS)


@pytest.mark.parametrize("identifier", IDENTIFIERS)
def test_autodoc_identifier_imports(identifier: str) -> None:
    assert _resolve(identifier) is not None


def test_method_pages_document_their_config() -> None:
    for method, configs in {"pcr": ["PCRConfig"], "pathrag": ["PathRAGConfig"],
                            "c2rag": ["C2RAGConfig"], "schema": ["SchemaRetrieverConfig"],
                            "traversal": ["TraversalConfig", "MentionExpansionConfig"],
                            "augmented": ["AugmentedConfig"]}.items():
        text = (DOCS / "methods" / f"{method}.md").read_text(encoding="utf-8")
        for config in configs:
            assert f"::: kgpath.methods.{method}.{config}\n" in text


@pytest.mark.parametrize("page", sorted(p.relative_to(DOCS).as_posix()
                                        for p in DOCS.rglob("*.md")))
def test_every_directive_expands(page: str) -> None:
    hooks = _hooks()
    text = (DOCS / page).read_text(encoding="utf-8")
    out = hooks.expand(text)
    assert "<!-- kgpath:" not in out


def test_section_is_the_readme_text_verbatim() -> None:
    hooks = _hooks()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    body = hooks.section(readme, "Quick start: LangChain (raw text in, offline)")
    assert "store = KgpathGraphStore.load(\"kg_index\")" in body  # the update example
    assert body in readme
    assert "## Methods" not in body


def test_rows_keep_the_header_and_the_matching_rows() -> None:
    hooks = _hooks()
    table = "intro\n\n| m | x |\n|---|---|\n| PCR a | 1 |\n| PathRAG | 2 |\n| **PCR** b | 3 |\n"
    assert hooks.table_rows(table, ["PCR"], prefix=True) == (
        "| m | x |\n|---|---|\n| PCR a | 1 |\n| **PCR** b | 3 |")
    assert hooks.table_rows(table, ["rag"], prefix=False) == "| m | x |\n|---|---|\n| PathRAG | 2 |"


def test_a_wrong_directive_names_the_missing_section() -> None:
    hooks = _hooks()
    with pytest.raises(ValueError, match="no section '## Nope'"):
        hooks.expand("<!-- kgpath:section README.md | Nope -->")
    with pytest.raises(ValueError, match="no file 'NOPE.md'"):
        hooks.expand("<!-- kgpath:file NOPE.md -->")


def test_relative_links_become_code_spans() -> None:
    hooks = _hooks()
    out = hooks.expand("<!-- kgpath:section README.md | Layout -->")
    assert "](ARCHITECTURE.md)" not in out and "`ARCHITECTURE.md`" in out
