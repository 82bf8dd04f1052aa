"""Plain-text tables for reports (``kgpath eval``, ``kgpath demo``, cookbook, benchmarks).

The lowest layer: imports nothing from kgpath, so ``eval`` and ``demo`` both use it without
one importing the other. ``kgpath.demo.table`` re-exports :func:`table`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["table"]


def table(rows: list[list[Any]], headers: list[str]) -> str:
    """Plain-text table with columns padded to their widest cell (floats to 3 decimals).

    >>> print(table([["a", 1.5]], ["name", "score"]))
    name  score
    ----  -----
    a     1.500
    """
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    line = "  ".join("-" * w for w in widths)
    out = ["  ".join(c.ljust(w) for c, w in zip(cells[0], widths)), line]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cells[1:]]
    return "\n".join(out)


def _fmt(c: Any) -> str:
    return f"{c:.3f}" if isinstance(c, float) else str(c)
