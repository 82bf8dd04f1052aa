"""A picture of the chunk-graph traversals (:mod:`kgpath.methods.traversal`), one panel each.

Every chunk is a dot placed by the first two principal components of its embedding (nearby
dots are semantically similar chunks), coloured by its passage. The chunks an algorithm
visited are numbered 1, 2, 3 ... in visit order (1 is the anchor, a star), each number with
the chunk's ``passage#window`` name, and joined by arrows. What to draw is computed first
(:func:`traversal_steps`), so the numbering is testable without rendering.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kgpath.errors import require
from kgpath.graph import KnowledgeGraph
from kgpath.methods.traversal import ALGORITHMS, ChunkGraphView, TraversalResult

__all__ = ["CAPTION", "TraversalStep", "plot_traversals", "traversal_steps"]

#: What the layout means; printed under the panels.
CAPTION = (
    "Each dot is a chunk, placed by the first two principal components (PCA 1, PCA 2) of "
    "its embedding: nearby dots are semantically similar. Colour: the chunk's passage. "
    "Numbers: visit order (1 = the anchor, a star), with the chunk's passage#window; "
    "arrows: hops."
)


@dataclass(frozen=True)
class TraversalStep:
    """One visited chunk: ``step`` (1 = anchor) in visit order and its drawn ``label``."""

    step: int
    chunk_id: str
    name: str

    @property
    def label(self) -> str:
        """``"<step> <passage#window>"``, e.g. ``"2 p10#0"``."""
        return f"{self.step} {self.name}"


def _chunk_name(graph: KnowledgeGraph | None, chunk_id: str) -> str:
    """``passage#window`` of a chunk (as :func:`~kgpath.methods.traversal.format_traversal`)."""
    if graph is not None and chunk_id in graph:
        n = graph.node(chunk_id)
        return f"{n.name or n.metadata.get('doc_id', '')}#{n.metadata.get('position', '')}"
    return chunk_id


def traversal_steps(
    result: TraversalResult, graph: KnowledgeGraph | None = None
) -> tuple[TraversalStep, ...]:
    """The visited chunks of ``result`` numbered 1, 2, 3 ... in visit order (anchor first)."""
    return tuple(
        TraversalStep(i, cid, _chunk_name(graph, cid))
        for i, cid in enumerate(result.path_ids, 1)
    )


def plot_traversals(
    graph: KnowledgeGraph,
    results: Mapping[str, TraversalResult],
    path: str | os.PathLike[str],
    *,
    query_vec: np.ndarray | None = None,
    highlight: Sequence[str] = (),
) -> str:
    """Draw each algorithm's path on a 2-D PCA map of the chunk embeddings; save a PNG.

    One panel per algorithm (see the module docstring for the layout); ``query_vec``
    (optional) is projected as a red cross and the chunks of the documents in ``highlight``
    (e.g. gold passages) are ringed in green. Returns the written path.
    """
    require("matplotlib", "kgpath[plot]")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    view = ChunkGraphView(graph)
    mean, basis = view.pca(2)
    xy = (view.chunk_emb.astype(np.float64) - mean) @ basis
    docs = sorted(set(view.chunk_doc))
    hl = np.isin(np.asarray(view.chunk_doc, dtype=object), list(highlight))
    palette = _palette(len(docs))
    colour = {d: palette[i] for i, d in enumerate(docs)}
    names = [a for a in ALGORITHMS if a in results] + [a for a in results if a not in ALGORITHMS]
    cols = min(4, max(1, len(names)))
    rows = (len(names) + cols - 1) // cols
    fig = Figure(figsize=(4.4 * cols, 4.0 * rows + 1.2))
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax in axes.flat[len(names):]:
        ax.axis("off")
    qxy = None if query_vec is None else (np.asarray(query_vec, np.float64) - mean) @ basis
    dot_colours = [colour[d] for d in view.chunk_doc]
    for ax, name in zip(axes.flat, names, strict=False):
        _draw_panel(ax, name, results[name], graph, view, xy, dot_colours, hl, qxy)
    handles = [Line2D([0], [0], marker="*", lw=0, color="gold", markeredgecolor="black",
                      markersize=12, label="1 = anchor")]
    handles += [Line2D([0], [0], marker="o", lw=0, color=colour[d], label=f"passage {d}")
                for d in docs]
    if hl.any():
        handles.append(Line2D([0], [0], marker="o", lw=0, markerfacecolor="none",
                              markeredgecolor="green", label="highlighted passages"))
    if qxy is not None:
        handles.append(Line2D([0], [0], marker="X", lw=0, color="red", label="query"))
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 8), fontsize=7,
               frameon=False, bbox_to_anchor=(0.5, 0.035))
    fig.text(0.5, 0.008, CAPTION, ha="center", va="bottom", fontsize=7.5, wrap=True)
    fig.suptitle(f"Traversal paths for: {next(iter(results.values())).query}", fontsize=10)
    fig.tight_layout(rect=(0, 0.09, 1, 0.97))
    out = os.fspath(path)
    fig.savefig(out, dpi=110)
    return out


def _palette(n: int) -> list[Any]:
    """``n`` qualitative colours (``tab10``, then ``tab20``'s light halves)."""
    from matplotlib import colormaps

    tab10 = [colormaps["tab10"](i) for i in range(10)]
    light = [colormaps["tab20"](2 * i + 1) for i in range(10)]
    both = tab10 + light
    return [both[i % len(both)] for i in range(n)]


def _draw_panel(
    ax: Any,
    name: str,
    r: TraversalResult,
    graph: KnowledgeGraph,
    view: ChunkGraphView,
    xy: np.ndarray,
    dot_colours: list[Any],
    hl: np.ndarray,
    qxy: np.ndarray | None,
) -> None:
    """One algorithm's panel: all chunks, the highlighted ones, the numbered path, query."""
    ax.scatter(xy[:, 0], xy[:, 1], s=22, c=dot_colours, alpha=0.55)
    if hl.any():
        ax.scatter(xy[hl, 0], xy[hl, 1], s=80, facecolors="none", edgecolors="green",
                   linewidths=1.5, zorder=2)
    steps = traversal_steps(r, graph)
    pts = np.asarray([xy[view.chunk_position(s.chunk_id)] for s in steps])
    for (x0, y0), (x1, y1) in zip(pts[:-1], pts[1:], strict=True):
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                    arrowprops={"arrowstyle": "->", "color": "black", "lw": 1.2})
    ax.scatter(pts[1:, 0], pts[1:, 1], s=34, c="black", zorder=3)
    ax.scatter(pts[:1, 0], pts[:1, 1], s=170, marker="*", c="gold", edgecolors="black",
               zorder=4)
    for k, (s, (x, y)) in enumerate(zip(steps, pts, strict=True)):
        ax.annotate(s.label, (x, y), textcoords="offset points",
                    xytext=(6, 6 if k % 2 == 0 else -12), fontsize=7, fontweight="bold",
                    zorder=5, bbox={"boxstyle": "round,pad=0.15", "fc": "white",
                                    "ec": "#999999", "alpha": 0.9})
    if qxy is not None:
        ax.scatter([qxy[0]], [qxy[1]], s=90, marker="X", c="red", zorder=4)
    ax.set_title(f"{name}\n{len(r.path)} chunks, {len(r.documents)} passages", fontsize=9)
    ax.set_xlabel("PCA 1 of chunk embeddings", fontsize=7)
    ax.set_ylabel("PCA 2", fontsize=7)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.margins(0.12)
