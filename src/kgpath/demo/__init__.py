"""`kgpath demo`: offline walkthrough of every method on the bundled demo corpus.

Each method contributes one section module ``kgpath.demo.<name>`` exposing
``run(ctx: DemoContext) -> None``. Sections listed in :data:`SECTIONS` whose module is not
present are skipped, so a method can be added without touching this file twice.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kgpath._tables import table
from kgpath.embeddings import Embedder
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex

__all__ = ["DemoContext", "SECTIONS", "run_demo", "table"]

#: Demo sections in display order (module names under ``kgpath.demo``).
SECTIONS = ["documents", "pcr", "pathrag", "c2rag", "schema", "traversal", "plots"]


@dataclass
class DemoContext:
    """Shared state handed to every demo section."""

    embedder: Embedder
    graph: KnowledgeGraph
    index: GraphIndex
    out: TextIO | None = None
    """Output stream; ``None`` means the current ``sys.stdout``."""
    plot_dir: Path | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    def print(self, *args: Any) -> None:
        """Print to the demo's output stream."""
        print(*args, file=self.out if self.out is not None else sys.stdout)

    def heading(self, title: str) -> None:
        """Print a section heading."""
        self.print()
        self.print("=" * len(title))
        self.print(title)
        self.print("=" * len(title))


def run_demo(
    ctx: DemoContext,
    sections: list[str] | None = None,
    *,
    on_missing: Callable[[str], None] | None = None,
) -> list[str]:
    """Run the demo sections that are installed; return the names that ran."""
    ran = []
    for name in sections or SECTIONS:
        try:
            mod = importlib.import_module(f"kgpath.demo.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"kgpath.demo.{name}":
                raise
            if on_missing:
                on_missing(name)
            continue
        mod.run(ctx)
        ran.append(name)
    return ran
