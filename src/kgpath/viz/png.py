"""A static PNG of a :class:`~kgpath.viz.picture.Picture` (matplotlib, ``kgpath[plot]``)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgpath.errors import require
from kgpath.graph import KnowledgeGraph
from kgpath.viz.build import build_picture
from kgpath.viz.layout import layout, node_colour, path_colour, score_range, short
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
    dpi: int = 120,
) -> Path:
    """Draw ``result`` (or a :class:`Picture`) to a PNG file and return its path.

    The PNG's text metadata carries the title, the anchor names and the query.
    """
    require("matplotlib", "kgpath[plot]")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    pic = build_picture(result, graph, max_region=max_region)
    pos = layout(pic)
    xs = [p[0] for p in pos.values()] or [0.0]
    ys = [p[1] for p in pos.values()] or [0.0]
    span_x, span_y = max(xs) - min(xs) + 1, max(ys) - min(ys) + 1
    side = 3.6 if pic.paths or pic.notes else 0.0
    fig = Figure(figsize=(min(4 + 2.6 * span_x, 30) + side, min(2.5 + 0.55 * span_y, 30)))
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.02, 0.04, 0.96 - side / fig.get_figwidth(), 0.86))
    ax.set_axis_off()
    _draw_edges(ax, pic, pos)
    _draw_nodes(ax, pic, pos)
    ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
    ax.set_ylim(min(ys) - 0.7, max(ys) + 0.6)
    fig.suptitle(pic.title, fontsize=11, x=0.02, ha="left")
    sub = "anchor: " + ", ".join(pic.anchor_names[:4]) + (" ..." if len(pic.anchors) > 4 else "")
    fig.text(0.02, 0.915, sub, fontsize=9, color="#7a5c00")
    if side:
        _draw_side(fig, pic)
    return _save(fig, pic, Path(path), dpi)


def _draw_edges(ax: Axes, pic: Picture, pos: Positions) -> None:
    """Arrows between drawn nodes: thick and coloured on a path (with its label), else grey."""
    for e in pic.edges:
        if e.source not in pos or e.target not in pos:
            continue
        (x0, y0), (x1, y1) = pos[e.source], pos[e.target]
        on = bool(e.paths)
        colour = path_colour(e.paths[0]) if on else "#bdbdbd"
        rad = 0.25 if x0 == x1 else 0.0
        ax.annotate(
            "", xy=(x1, y1), xytext=(x0, y0),
            arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 2.4 if on else 0.8,
                        "shrinkA": 11, "shrinkB": 11, "connectionstyle": f"arc3,rad={rad}",
                        "alpha": 1.0 if on else 0.7},
            zorder=2 if on else 1,
        )
        if on and e.label:
            ax.text((x0 + x1) / 2, (y0 + y1) / 2 + 0.12, short(e.label, 22), fontsize=7,
                    ha="center", color=colour, zorder=4,
                    bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8})


def _draw_nodes(ax: Axes, pic: Picture, pos: Positions) -> None:
    """Anchors as stars, hits and the rest as dots, each with its name and score."""
    lo, hi = score_range(pic)
    for n in pic.nodes:
        x, y = pos[n.id]
        size = 420 if n.role == "anchor" else 260 if n.role == "hit" else 140
        marker = "*" if n.role == "anchor" else "o"
        ax.scatter([x], [y], s=size * (1.8 if marker == "*" else 1), c=node_colour(n, lo, hi),
                   marker=marker, edgecolors="#333333", linewidths=0.8, zorder=3)
        label = short(n.name)
        if n.rank is not None and n.role == "hit":
            label = f"#{n.rank} {label}"
        ax.text(x, y - 0.28, label, fontsize=8, ha="center", va="top", zorder=4,
                fontweight="bold" if n.role == "anchor" else "normal")
        if n.score is not None and n.role in ("hit", "anchor"):
            ax.text(x, y + (0.3 if n.role == "anchor" else 0.2), f"{n.score:.3f}", fontsize=6.5,
                    ha="center", color="#555555",
                    zorder=4)


def _draw_side(fig: Figure, pic: Picture) -> None:
    """The legend of paths (first 12) and the notes (first 10) on the right."""
    from matplotlib.lines import Line2D

    handles = [
        Line2D([0], [0], color=path_colour(p.index), lw=2.4, label=short(p.label, 60))
        for p in pic.paths[:12]
    ]
    if handles:
        fig.legend(handles=handles, loc="upper right", fontsize=7, frameon=False,
                   title="paths", title_fontsize=8, bbox_to_anchor=(0.995, 0.9))
    if pic.notes:
        fig.text(0.99, 0.03, "\n".join(short(t, 70) for t in pic.notes[:10]), fontsize=7,
                 ha="right", va="bottom", color="#444444")


def _save(fig: Figure, pic: Picture, out: Path, dpi: int) -> Path:
    """Write the PNG with title, anchors and query in its text metadata."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(
        out, dpi=dpi, format="png",
        metadata={
            "Title": pic.title,
            "Description": f"anchor: {'; '.join(pic.anchor_names)}; query: {pic.query}",
            "Software": "kgpath",
        },
    )
    logger.info("wrote %s", out)
    return out
