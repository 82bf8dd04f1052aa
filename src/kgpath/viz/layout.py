"""Where and in which colour to draw: the layered layout and the colour rules.

Shared by the PNG (:mod:`kgpath.viz.png`) and HTML (:mod:`kgpath.viz.html_page`) renderers,
so both pictures of one result agree.
"""

from __future__ import annotations

from kgpath.viz.picture import ROLE_ORDER, PicNode, Picture

__all__ = [
    "ANCHOR_COLOUR",
    "PATH_COLOURS",
    "REGION_COLOUR",
    "layout",
    "node_colour",
    "path_colour",
    "score_range",
    "short",
]

#: Colours of paths P1, P2, ... (cycled), chosen to stay distinct on white.
PATH_COLOURS = (
    "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e",
    "#17becf", "#e377c2", "#8c564b", "#bcbd22", "#7f7f7f",
)
ANCHOR_COLOUR = "#f2a900"
REGION_COLOUR = "#d9d9d9"


def layout(pic: Picture) -> dict[str, tuple[float, float]]:
    """Deterministic layered layout: column = layer, rows ordered by role, rank, name.

    Returns ``{node id: (x, y)}`` with columns one unit apart and rows centred on 0.
    """
    columns: dict[int, list[PicNode]] = {}
    for n in pic.nodes:
        columns.setdefault(n.layer, []).append(n)
    pos: dict[str, tuple[float, float]] = {}
    for col, layer in enumerate(sorted(columns)):
        members = sorted(
            columns[layer],
            key=lambda n: (ROLE_ORDER.get(n.role, 9), n.rank if n.rank is not None else 1 << 30,
                           n.name, n.id),
        )
        m = len(members)
        for i, n in enumerate(members):
            pos[n.id] = (float(col), (m - 1) / 2.0 - i)
    return pos


def _score_colour(score: float | None, lo: float, hi: float) -> str:
    """Light to dark blue by score (min-max over the drawn hits)."""
    if score is None:
        return "#9ecae1"
    t = 0.5 if hi <= lo else (score - lo) / (hi - lo)
    t = min(1.0, max(0.0, t))
    a, b = (0xc6, 0xdb, 0xef), (0x08, 0x30, 0x6b)
    rgb = tuple(round(x + (y - x) * t) for x, y in zip(a, b))
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def node_colour(n: PicNode, lo: float, hi: float) -> str:
    """Fill colour of a node: anchor gold, hits blue by score, path orange, region grey."""
    if n.role == "anchor":
        return ANCHOR_COLOUR
    if n.role == "hit":
        return _score_colour(n.score, lo, hi)
    if n.role == "path":
        return "#fdd0a2"
    return REGION_COLOUR


def score_range(pic: Picture) -> tuple[float, float]:
    """``(min, max)`` score over the drawn hits (``(0, 1)`` when there are none)."""
    s = [n.score for n in pic.nodes if n.role == "hit" and n.score is not None]
    return (min(s), max(s)) if s else (0.0, 1.0)


def short(s: str, n: int = 28) -> str:
    """``s`` cut to ``n`` characters, an ellipsis marking the cut."""
    return s if len(s) <= n else s[: n - 1] + "\u2026"


def path_colour(index: int) -> str:
    """Colour of path number ``index`` (cycling through :data:`PATH_COLOURS`)."""
    return PATH_COLOURS[index % len(PATH_COLOURS)]
