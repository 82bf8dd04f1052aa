"""Pictures of a retrieval result: a static PNG (matplotlib) and a self-contained HTML page.

A result is first turned into a :class:`Picture` - a small, method-neutral description of
what to draw - and then rendered. One job per module:

- :mod:`kgpath.viz.picture`: :class:`Picture` and its parts (:class:`PicNode`, ...);
- :mod:`kgpath.viz.build`: :func:`build_picture` from a PCR, PathRAG or C2RAG result;
- :mod:`kgpath.viz.layout`: the deterministic layered :func:`layout` and the colour rules;
- :mod:`kgpath.viz.png`: :func:`render_png` (needs matplotlib, ``pip install 'kgpath[plot]'``);
- :mod:`kgpath.viz.html_page`: :func:`render_html` / :func:`html_document`, needing nothing:
  the page carries its data, CSS and a little JavaScript inline (no CDN), so it opens
  offline.

:func:`render` writes both. Every name importable from ``kgpath.viz`` before it became a
package is re-exported here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.viz.build import MAX_PATHS, build_picture
from kgpath.viz.html_page import html_document, render_html
from kgpath.viz.layout import (
    ANCHOR_COLOUR,
    ANSWER_COLOUR,
    PATH_COLOURS,
    REGION_COLOUR,
    LegendEntry,
    layout,
    legend_entries,
)
from kgpath.viz.picture import PicEdge, PicHop, PicNode, PicPath, Picture
from kgpath.viz.png import render_png

__all__ = [
    "PicNode",
    "PicEdge",
    "PicPath",
    "PicHop",
    "Picture",
    "build_picture",
    "layout",
    "legend_entries",
    "LegendEntry",
    "MAX_PATHS",
    "ANSWER_COLOUR",
    "render_png",
    "render_html",
    "render",
    "html_document",
    "ANCHOR_COLOUR",
    "PATH_COLOURS",
    "REGION_COLOUR",
]


def render(
    result: Any,
    directory: str | os.PathLike[str] | KnowledgeGraph | None,
    name: str | os.PathLike[str] | None = None,
    graph: KnowledgeGraph | None = None,
    *,
    png: bool = True,
    max_region: int = 40,
    max_paths: int | None = MAX_PATHS,
) -> dict[str, Path]:
    """Write pictures of ``result``; returns ``{"html": path, "png": path}`` (those written).

    Two call forms:

    - ``render(result, directory, name, graph=None, png=True)`` writes ``<name>.html``
      (always) and ``<name>.png`` (when ``png``) into ``directory``;
    - ``render(result, graph, "out.png" | "out.html")`` writes that one file, its format
      chosen by the suffix (the form the README shows).

    At most ``max_paths`` paths are drawn (the most reliable first; ``None`` draws all).

    Raises
    ------
    ConfigError
        For a file name without a ``.png``/``.html`` suffix, or missing arguments.
    """
    if isinstance(directory, KnowledgeGraph) or (directory is None and graph is None):
        return _render_file(result, directory, name, max_region=max_region,
                            max_paths=max_paths)
    if name is None:
        raise ConfigError("render(result, directory, name, graph): name is missing")
    if directory is None:
        raise ConfigError("render(result, directory, name, graph): directory is missing")
    d = Path(directory)
    pic = build_picture(result, graph, max_region=max_region, max_paths=max_paths)
    out = {"html": render_html(pic, d / f"{name}.html")}
    if png:
        out["png"] = render_png(pic, d / f"{name}.png")
    return out


def _render_file(
    result: Any, graph: KnowledgeGraph | None, file: str | os.PathLike[str] | None,
    *, max_region: int, max_paths: int | None,
) -> dict[str, Path]:
    """``render(result, graph, "out.png" | "out.html")``: one file, format by suffix."""
    if file is None:
        raise ConfigError('render(result, graph, file): pass a file such as "out.html"')
    path = Path(file)
    suffix = path.suffix.lower()
    if suffix not in (".png", ".html", ".htm"):
        raise ConfigError(
            f"render(result, graph, file): file must end in .png or .html, got {str(file)!r}"
        )
    pic = build_picture(result, graph, max_region=max_region, max_paths=max_paths)
    if suffix == ".png":
        return {"png": render_png(pic, path)}
    return {"html": render_html(pic, path)}
