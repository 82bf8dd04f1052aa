"""Where and in which colour to draw: the layered layout and the colour rules.

Shared by the PNG (:mod:`kgpath.viz.png`) and HTML (:mod:`kgpath.viz.html_page`) renderers,
so both pictures of one result agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgpath.viz.picture import ROLE_ORDER, PicNode, Picture

__all__ = [
    "ANCHOR_COLOUR",
    "ANSWER_COLOUR",
    "PASSAGE_COLOUR",
    "LegendEntry",
    "legend_entries",
    "PATH_COLOURS",
    "REGION_COLOUR",
    "layout",
    "node_colour",
    "path_colour",
    "score_range",
    "short",
]

#: Colours of paths P1, P2, ... (cycled): matplotlib's qualitative ``tab10``, distinct on
#: white; a picture draws at most 5 paths by default, so no two share a colour.
PATH_COLOURS = (
    "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e",
    "#17becf", "#e377c2", "#8c564b", "#bcbd22", "#7f7f7f",
)
ANCHOR_COLOUR = "#f2a900"
REGION_COLOUR = "#d9d9d9"
PATH_NODE_COLOUR = "#fdd0a2"
PASSAGE_COLOUR = "#c7e9c0"
ANSWER_COLOUR = "#31a354"


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
    """Fill colour: anchor gold, hits blue by score, path orange, passages green, region grey.

    The answer passage (rank 1 of the evidence) is dark green, the other passages light green.
    """
    if n.role == "anchor":
        return ANCHOR_COLOUR
    if n.role == "hit":
        return _score_colour(n.score, lo, hi)
    if n.role == "path":
        return PATH_NODE_COLOUR
    if n.role == "passage":
        return ANSWER_COLOUR if n.rank == 1 else PASSAGE_COLOUR
    return REGION_COLOUR


@dataclass(frozen=True)
class LegendEntry:
    """One legend line: ``kind`` is a node role, ``"answer"`` or ``"path"``.

    ``marker`` is a matplotlib marker (``"*"``, ``"o"``, ``"s"``) or ``"line"`` for a path.
    """

    kind: str
    label: str
    colour: str
    marker: str
    path: int | None = None


_ROLE_LEGEND = {
    "hit": ("o", "#6baed6", "retrieved hit (#rank; darker = higher score)"),
    "path": ("o", PATH_NODE_COLOUR, "node on a path"),
    "region": ("o", REGION_COLOUR, "reachable, not retrieved"),
    "passage": ("s", PASSAGE_COLOUR, "evidence passage"),
}


def legend_entries(pic: Picture, *, width: int = 60) -> tuple[LegendEntry, ...]:
    """The complete legend of ``pic``: each drawn kind of node, then each path.

    The star comes first and says what it is (``"anchor: radium"``, ``"retrieved nodes:
    ..."``); the C2RAG answer passage and every drawn path (with its label, which carries
    the path's reliability, score or probability) follow in drawing colours.
    """
    roles = {n.role for n in pic.nodes}
    out: list[LegendEntry] = []
    if "anchor" in roles or pic.anchors:
        out.append(LegendEntry("anchor", short(pic.anchor_heading(3), width), ANCHOR_COLOUR,
                               "*"))
    for role, (marker, colour, label) in _ROLE_LEGEND.items():
        if role in roles:
            out.append(LegendEntry(role, label, colour, marker))
    if pic.answer is not None:
        n = pic.node(pic.answer)
        out.append(LegendEntry("answer", short(f"top evidence (rank 1): {n.name}", width),
                               ANSWER_COLOUR, "s"))
    for p in pic.paths:
        out.append(LegendEntry("path", short(p.label, width), path_colour(p.index), "line",
                               p.index))
    return tuple(out)


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
