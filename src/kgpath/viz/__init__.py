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

from kgpath.graph import KnowledgeGraph
from kgpath.viz.build import build_picture
from kgpath.viz.html_page import html_document, render_html
from kgpath.viz.layout import ANCHOR_COLOUR, PATH_COLOURS, REGION_COLOUR, layout
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
    directory: str | os.PathLike[str],
    name: str,
    graph: KnowledgeGraph | None = None,
    *,
    png: bool = True,
    max_region: int = 40,
) -> dict[str, Path]:
    """Write ``<name>.html`` (always) and ``<name>.png`` (when ``png``) into ``directory``."""
    d = Path(directory)
    pic = build_picture(result, graph, max_region=max_region)
    out = {"html": render_html(pic, d / f"{name}.html")}
    if png:
        out["png"] = render_png(pic, d / f"{name}.png")
    return out
