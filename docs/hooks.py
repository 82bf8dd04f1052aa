"""MkDocs hooks: pages take their shared text from README.md and ARCHITECTURE.md.

A page writes a directive in an HTML comment and the hook puts the text in its place, so the
site and the READMEs never drift apart:

- ``<!-- kgpath:section README.md | Heading -->``: the body of that ``##`` section, verbatim;
- ``<!-- kgpath:file ARCHITECTURE.md -->``: the whole file;
- ``<!-- kgpath:rows ARCHITECTURE.md | Heading | PCR -->``: every table of that section,
  keeping the header and the rows whose first cell starts with ``PCR``;
- ``<!-- kgpath:rows README.md | Evaluation | PCR, mention -->``: the same for the tables of
  README's Evaluation section, rows whose first cell *contains* one of the terms.

Links to repository files that are not part of the site become code spans (the site is built
with ``--strict``, and a link outside ``docs/`` would be a broken link).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj):(<code>)~?")
DIRECTIVE = re.compile(r"<!-- kgpath:(section|file|rows) ([^>]*?) -->")
LINK = re.compile(r"\[([^\]]+)\]\((?!https?://|#)([^)]+)\)")


class DirectiveError(ValueError):
    """A directive names a file, a section or a row filter that does not exist."""


def _read(name: str) -> str:
    path = ROOT / name.strip()
    if not path.is_file():
        raise DirectiveError(f"kgpath docs: no file {name.strip()!r} at the repository root")
    return path.read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """Return the body of the ``## heading`` section of ``text`` (without its heading line)."""
    lines = text.splitlines()
    start = None
    for i, line in enumerate(lines):
        if line.startswith("## ") and line[3:].strip() == heading.strip():
            start = i + 1
            break
    if start is None:
        raise DirectiveError(f"kgpath docs: no section '## {heading.strip()}'")
    end = next((j for j in range(start, len(lines)) if lines[j].startswith("## ")), len(lines))
    return "\n".join(lines[start:end]).strip("\n")


def table_rows(text: str, terms: list[str], prefix: bool) -> str:
    """Keep each table's header and the rows whose first cell matches one of ``terms``."""
    out: list[str] = []
    block: list[str] = []

    def flush() -> None:
        if len(block) > 2:
            keep = [
                row
                for row in block[2:]
                if any(_matches(row.split("|")[1], t, prefix) for t in terms)
            ]
            if keep:
                out.extend([*block[:2], *keep, ""])
        block.clear()

    for line in text.splitlines():
        if line.startswith("|"):
            block.append(line)
        else:
            flush()
    flush()
    if not out:
        raise DirectiveError(f"kgpath docs: no table row matches {terms}")
    return "\n".join(out).rstrip("\n")


def _matches(cell: str, term: str, prefix: bool) -> bool:
    cell = cell.strip().strip("*").strip()
    return cell.startswith(term) if prefix else term.lower() in cell.lower()


def _code_links(text: str) -> str:
    return LINK.sub(lambda m: f"{m.group(1)} (`{m.group(2)}`)"
                    if not m.group(1).startswith("`") else f"{m.group(1)}", text)


def expand(markdown: str) -> str:
    """Replace every directive of ``markdown`` by the text it names."""

    def one(match: re.Match[str]) -> str:
        kind, args = match.group(1), [a.strip() for a in match.group(2).split("|")]
        if kind == "file":
            body = _read(args[0])
        elif kind == "section":
            body = section(_read(args[0]), args[1])
        else:
            terms = [t.strip() for t in args[2].split(",")]
            body = table_rows(section(_read(args[0]), args[1]), terms,
                              prefix=args[0] == "ARCHITECTURE.md")
        return _code_links(body)

    return DIRECTIVE.sub(one, markdown)


def on_page_markdown(markdown: str, **_: object) -> str:
    """MkDocs hook: expand the page's directives."""
    return expand(markdown)


def on_post_page(output: str, **_: object) -> str:
    """MkDocs hook: drop the Sphinx roles (``:class:`` ...) the docstrings write before code."""
    return ROLE.sub(r"\1", output)
