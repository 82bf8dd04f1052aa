"""A static PNG of a :class:`~kgpath.viz.picture.Picture` (matplotlib, ``kgpath[plot]``)."""

from __future__ import annotations

import logging
import os
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgpath.errors import require
from kgpath.graph import KnowledgeGraph
from kgpath.viz.build import MAX_PATHS, build_picture
from kgpath.viz.layout import (
    ANSWER_COLOUR,
    layout,
    legend_entries,
    node_colour,
    path_colour,
    score_range,
    short,
)
from kgpath.viz.picture import Picture

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["render_png"]

logger = logging.getLogger(__name__)

Positions = dict[str, tuple[float, float]]


def render_png(
    result: Any,
    path: str | os.PathLike[str],
    graph: KnowledgeGraph | None = None,
    *,
    max_region: int = 40,
    max_paths: int | None = MAX_PATHS,
    dpi: int = 120,
) -> Path:
    """Draw ``result`` (or a :class:`Picture`) to a PNG file and return its path.

    At most ``max_paths`` paths are drawn (``None``: all), each in its own colour. The PNG's
    text metadata carries the title, the anchor (or retrieved node) names and the query.
    """
    require("matplotlib", "kgpath[plot]")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    pic = build_picture(result, graph, max_region=max_region, max_paths=max_paths)
    pos = layout(pic)
    xs = [p[0] for p in pos.values()] or [0.0]
    ys = [p[1] for p in pos.values()] or [0.0]
    span_x, span_y = max(xs) - min(xs) + 1, max(ys) - min(ys) + 1
    side = 4.6
    fig = Figure(figsize=(min(4 + 2.6 * span_x, 30) + side, min(2.5 + 0.55 * span_y, 30)))
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.02, 0.04, 0.96 - side / fig.get_figwidth(), 0.86))
    ax.set_axis_off()
    _draw_edges(ax, pic, pos)
    _draw_nodes(ax, pic, pos)
    ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
    ax.set_ylim(min(ys) - 0.7, max(ys) + 0.6)
    fig.suptitle(pic.title, fontsize=11, x=0.02, ha="left")
    fig.text(0.02, 0.915, pic.anchor_heading(4), fontsize=9, color="#7a5c00")
    _draw_side(fig, pic)
    return _save(fig, pic, Path(path), dpi)


def _draw_edges(ax: Axes, pic: Picture, pos: Positions) -> None:
    """Arrows between drawn nodes: thick and coloured on a path (with its label), else grey.

    The arrow into the answer passage is thick green. Labels sit at the first point along
    their edge (of five) clear of the labels already placed, so they do not overlap.
    """
    placed: list[tuple[float, float]] = [(x, y - 0.3) for x, y in pos.values()]
    for e in pic.edges:
        if e.source not in pos or e.target not in pos:
            continue
        (x0, y0), (x1, y1) = pos[e.source], pos[e.target]
        answer = e.info.get("rank") == 1
        on = bool(e.paths) or answer
        colour = path_colour(e.paths[0]) if e.paths else ANSWER_COLOUR if answer else "#bdbdbd"
        rad = 0.25 if x0 == x1 else 0.0
        ax.annotate(
            "", xy=(x1, y1), xytext=(x0, y0),
            arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 2.4 if on else 0.8,
                        "shrinkA": 11, "shrinkB": 11, "connectionstyle": f"arc3,rad={rad}",
                        "alpha": 1.0 if on else 0.7},
            zorder=2 if on else 1,
        )
        if on and e.label:
            lx, ly = _label_spot(placed, (x0, y0), (x1, y1))
            ax.text(lx, ly, short(e.label, 20), fontsize=7, ha="center", va="center",
                    color=colour, zorder=4,
                    bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85})


def _label_spot(
    placed: list[tuple[float, float]], a: tuple[float, float], b: tuple[float, float]
) -> tuple[float, float]:
    """The point along ``a -> b`` (t = .5, .35, .65, .25, .75) farthest from ``placed``.

    Distances weigh y four times (labels are wide, not tall); the point chosen is recorded.
    """
    best, best_d = (0.0, 0.0), -1.0
    for t in (0.5, 0.35, 0.65, 0.25, 0.75):
        x, y = a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t + 0.1
        d = min((((x - px) / 4) ** 2 + (y - py) ** 2 for px, py in placed), default=9.0)
        if d > best_d:
            best, best_d = (x, y), d
        if d >= 0.25 ** 2:
            break
    placed.append(best)
    return best


def _draw_nodes(ax: Axes, pic: Picture, pos: Positions) -> None:
    """Anchors as stars, hits and the rest as dots, each with its name and score."""
    lo, hi = score_range(pic)
    for n in pic.nodes:
        x, y = pos[n.id]
        answer = n.id == pic.answer
        size = 420 if n.role == "anchor" or answer else 260 if n.role == "hit" else 140
        marker = "*" if n.role == "anchor" else "s" if n.role == "passage" else "o"
        ax.scatter([x], [y], s=size * (1.8 if marker == "*" else 1), c=node_colour(n, lo, hi),
                   marker=marker, edgecolors="#333333", linewidths=2.2 if answer else 0.8,
                   zorder=3)
        label = short(n.name, 34 if n.role == "passage" else 28)
        if n.rank is not None and n.role == "hit":
            label = f"#{n.rank} {label}"
        if answer:
            label = "TOP EVIDENCE " + label
        ax.text(x, y - 0.28, label, fontsize=8, ha="center", va="top", zorder=4,
                fontweight="bold" if n.role == "anchor" or answer else "normal",
                color=ANSWER_COLOUR if answer else "black")
        if n.score is not None and n.role in ("hit", "anchor"):
            ax.text(x, y + (0.3 if n.role == "anchor" else 0.2), f"{n.score:.3f}", fontsize=6.5,
                    ha="center", color="#555555",
                    zorder=4)


def _draw_side(fig: Figure, pic: Picture) -> None:
    """The complete legend (:func:`legend_entries`) and the notes, on the right."""
    from matplotlib.lines import Line2D

    handles = []
    for entry in legend_entries(pic, width=58):
        if entry.marker == "line":
            handles.append(Line2D([0], [0], color=entry.colour, lw=2.4, label=entry.label))
        else:
            handles.append(Line2D([0], [0], marker=entry.marker, lw=0, color=entry.colour,
                                  markeredgecolor="#333333", label=entry.label,
                                  markersize=12 if entry.marker == "*" else 8))
    if handles:
        fig.legend(handles=handles, loc="upper right", fontsize=7, frameon=False,
                   title="legend", title_fontsize=8, bbox_to_anchor=(0.995, 0.9))
    lines = [w for t in pic.notes[:10] for w in textwrap.wrap(t, 64)[:3]]
    if lines:
        fig.text(0.99, 0.03, "\n".join(lines), fontsize=7, ha="right", va="bottom",
                 color="#444444")


def _save(fig: Figure, pic: Picture, out: Path, dpi: int) -> Path:
    """Write the PNG with title, anchors and query in its text metadata."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(
        out, dpi=dpi, format="png",
        metadata={
            "Title": pic.title,
            "Description": f"{pic.anchor_heading()}; query: {pic.query}",
            "Software": "kgpath",
        },
    )
    logger.info("wrote %s", out)
    return out
