"""A self-contained interactive HTML page of a :class:`~kgpath.viz.picture.Picture`.

The page needs nothing: it carries its data, CSS and a little JavaScript inline (no CDN), so
it opens offline. Hovering a node shows its text and scores; hovering a path in the side list
highlights it; clicking a node highlights the paths through it.
"""

from __future__ import annotations

import html
import json
import logging
import math
import os
from pathlib import Path
from typing import Any

from kgpath.graph import KnowledgeGraph
from kgpath.viz.build import MAX_PATHS, build_picture
from kgpath.viz.layout import layout, node_colour, path_colour, score_range, short
from kgpath.viz.picture import PicNode, Picture

__all__ = ["html_document", "render_html"]

logger = logging.getLogger(__name__)

Pixels = dict[str, tuple[float, float]]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:0;
color:#222;background:#fafafa}
header{padding:12px 18px;background:#fff;border-bottom:1px solid #ddd}
header h1{font-size:17px;margin:0 0 4px 0}header .anchor{color:#7a5c00;font-size:13px}
main{display:flex;gap:12px;padding:12px}
#canvas{flex:1;background:#fff;border:1px solid #ddd;border-radius:6px;overflow:auto}
aside{width:340px;font-size:12.5px}aside h2{font-size:13px;margin:8px 0 4px}
.path{padding:4px 6px;margin:2px 0;border-left:5px solid #999;background:#fff;cursor:pointer}
.path:hover,.path.on{background:#fff3cd}.note{color:#555;margin:2px 0}
svg text{font-size:11px;pointer-events:none}
.edge{stroke:#bbb;stroke-width:1;fill:none}.edge.onpath{stroke-width:3}
.edge.dim,.node.dim{opacity:.15}.edge.hi{stroke-width:5}
.node circle,.node polygon{stroke:#333;stroke-width:1;cursor:pointer}
.elabel{font-size:9.5px;fill:#555}
#tip{position:fixed;display:none;max-width:360px;background:#222;color:#fff;padding:6px 8px;
border-radius:4px;font-size:12px;pointer-events:none;white-space:pre-wrap}
label.toggle{font-size:12px;display:block;margin:6px 0}
"""

_JS = """
(function(){
const data=JSON.parse(document.getElementById('kgpath-data').textContent);
const tip=document.getElementById('tip');
const nodes=document.querySelectorAll('.node'),edges=document.querySelectorAll('.edge');
function pathsOfNode(id){return data.paths.filter(p=>p.nodes.includes(id)).map(p=>p.index);}
function highlight(idx){
  if(idx===null){nodes.forEach(n=>n.classList.remove('dim'));
    edges.forEach(e=>{e.classList.remove('dim');e.classList.remove('hi');});
    document.querySelectorAll('.path').forEach(p=>p.classList.remove('on'));return;}
  const keep=new Set();idx.forEach(i=>data.paths[i].nodes.forEach(n=>keep.add(n)));
  nodes.forEach(n=>n.classList.toggle('dim',!keep.has(n.dataset.id)));
  edges.forEach(e=>{const ps=(e.dataset.paths||'').split(',').filter(x=>x).map(Number);
    const on=ps.some(p=>idx.includes(p));e.classList.toggle('dim',!on);
    e.classList.toggle('hi',on);});
  document.querySelectorAll('.path').forEach(p=>p.classList.toggle('on',
    idx.includes(Number(p.dataset.index))));
}
let pinned=null;
nodes.forEach(n=>{
  n.addEventListener('mousemove',ev=>{const d=data.nodes[n.dataset.id];
    let s=d.name+' ['+d.role+']';if(d.score!==null)s+='\\nscore '+d.score.toFixed(4);
    if(d.hops!==null)s+='\\nhops '+d.hops;if(d.rank!==null)s+='\\nrank '+d.rank;
    for(const k in d.info){s+='\\n'+k+': '+d.info[k];}
    if(d.text)s+='\\n\\n'+d.text.slice(0,400);
    tip.textContent=s;tip.style.display='block';tip.style.left=(ev.clientX+14)+'px';
    tip.style.top=(ev.clientY+10)+'px';});
  n.addEventListener('mouseleave',()=>{tip.style.display='none';});
  n.addEventListener('click',()=>{const ps=pathsOfNode(n.dataset.id);
    pinned=(pinned&&pinned.id===n.dataset.id)?null:{id:n.dataset.id,ps:ps};
    highlight(pinned&&ps.length?ps:null);});
});
document.querySelectorAll('.path').forEach(p=>{
  p.addEventListener('mouseenter',()=>highlight([Number(p.dataset.index)]));
  p.addEventListener('mouseleave',()=>highlight(pinned&&pinned.ps.length?pinned.ps:null));
});
const t=document.getElementById('toggle-region');
if(t)t.addEventListener('change',()=>{document.querySelectorAll('.role-region').forEach(
  g=>g.style.display=t.checked?'':'none');});
})();
"""


def render_html(
    result: Any,
    path: str | os.PathLike[str],
    graph: KnowledgeGraph | None = None,
    *,
    max_region: int = 40,
    max_paths: int | None = MAX_PATHS,
) -> Path:
    """Write ``result`` (or a :class:`Picture`) as a self-contained interactive HTML page.

    At most ``max_paths`` paths are drawn (``None``: all).
    """
    pic = build_picture(result, graph, max_region=max_region, max_paths=max_paths)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html_document(pic), encoding="utf-8")
    logger.info("wrote %s", out)
    return out


def html_document(pic: Picture) -> str:
    """The HTML text of :func:`render_html` (inline SVG, CSS, JSON data and script)."""
    esc = html.escape
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{esc(pic.title)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{esc(pic.title)}</h1>"
        f"<div class=\"anchor\">{esc(pic.anchor_heading())}</div>"
        "</header><main><div id=\"canvas\">" + _svg(pic) + "</div>"
        + "".join(_sidebar(pic)) + "</main><div id=\"tip\"></div>"
        f'<script type="application/json" id="kgpath-data">{_payload(pic)}</script>'
        f"<script>{_JS}</script></body></html>\n"
    )


def _svg(pic: Picture) -> str:
    """The picture as inline SVG: columns 210 px apart, rows 58 px, 90/50 px margins."""
    pos = layout(pic)
    colw, rowh, mx, my = 210.0, 58.0, 90.0, 50.0
    xs = [p[0] for p in pos.values()] or [0.0]
    ys = [p[1] for p in pos.values()] or [0.0]
    ymax = max(ys)
    px = {nid: (mx + x * colw, my + (ymax - y) * rowh) for nid, (x, y) in pos.items()}
    width = mx * 2 + (max(xs) - min(xs)) * colw
    height = my * 2 + (max(ys) - min(ys)) * rowh
    title = html.escape(pic.title)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{title}">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" '
        'fill="context-stroke"/></marker></defs>',
    ]
    parts.extend(_svg_edges(pic, px))
    lo, hi = score_range(pic)
    parts.extend(_svg_node(n, px[n.id], node_colour(n, lo, hi)) for n in pic.nodes)
    parts.append("</svg>")
    return "".join(parts)


def _svg_edges(pic: Picture, px: Pixels) -> list[str]:
    """One ``<path>`` per edge between drawn nodes, stopping at the node rims; path labels."""
    esc = html.escape
    parts = []
    for e in pic.edges:
        if e.source not in px or e.target not in px:
            continue
        (x0, y0), (x1, y1) = px[e.source], px[e.target]
        colour = path_colour(e.paths[0]) if e.paths else "#bbbbbb"
        cls = "edge onpath" if e.paths else "edge"
        dx, dy = x1 - x0, y1 - y0
        dist = max((dx * dx + dy * dy) ** 0.5, 1e-6)
        r = 14.0  # stop at the node's rim
        sx, sy = x0 + dx / dist * r, y0 + dy / dist * r
        ex, ey = x1 - dx / dist * r, y1 - dy / dist * r
        if abs(x0 - x1) < 1e-6:  # same column: bow out to the side
            cx, cy = (sx + ex) / 2 + 40, (sy + ey) / 2
            d = f"M{sx:.1f},{sy:.1f} Q{cx:.1f},{cy:.1f} {ex:.1f},{ey:.1f}"
        else:
            d = f"M{sx:.1f},{sy:.1f} L{ex:.1f},{ey:.1f}"
        paths_attr = ",".join(str(p) for p in e.paths)
        parts.append(
            f'<path class="{cls}" d="{d}" stroke="{colour}" marker-end="url(#arrow)" '
            f'data-paths="{paths_attr}"><title>{esc(e.label)}</title></path>'
        )
        if e.paths and e.label:
            parts.append(
                f'<text class="elabel" x="{(sx + ex) / 2:.1f}" y="{(sy + ey) / 2 - 4:.1f}" '
                f'text-anchor="middle">{esc(short(e.label, 24))}</text>'
            )
    return parts


def _svg_node(n: PicNode, xy: tuple[float, float], colour: str) -> str:
    """A node's ``<g>``: a star for an anchor, else a circle (larger for a hit), and a label."""
    esc = html.escape
    x, y = xy
    if n.role == "anchor":
        pts = []
        for k in range(10):
            rad = 15 if k % 2 == 0 else 6.5
            ang = math.pi / 2 + k * math.pi / 5
            pts.append(f"{x + rad * math.cos(ang):.1f},{y - rad * math.sin(ang):.1f}")
        shape = f'<polygon points="{" ".join(pts)}" fill="{colour}"/>'
    else:
        radius = 11 if n.role == "hit" else 8
        shape = f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius}" fill="{colour}"/>'
    label = short(n.name)
    if n.role == "hit" and n.rank is not None:
        label = f"#{n.rank} {label}"
    weight = ' font-weight="bold"' if n.role == "anchor" else ""
    return (
        f'<g class="node role-{esc(n.role)}" data-id="{esc(n.id)}">{shape}'
        f'<text x="{x:.1f}" y="{y + 27:.1f}" text-anchor="middle"{weight}>{esc(label)}'
        "</text></g>"
    )


def _payload(pic: Picture) -> str:
    """The picture as JSON for the page's script, safe inside a ``<script>`` element."""
    data = {
        "method": pic.method,
        "query": pic.query,
        "anchors": list(pic.anchors),
        "nodes": {
            n.id: {"name": n.name, "role": n.role, "score": n.score, "hops": n.hops,
                   "rank": n.rank, "text": n.text, "info": {k: str(v) for k, v in n.info.items()}}
            for n in pic.nodes
        },
        "paths": [
            {"index": p.index, "nodes": list(p.node_ids), "label": p.label,
             "reliability": p.reliability}
            for p in pic.paths
        ],
        "hops": [
            {"step": h.step, "label": h.label, "state": h.state, "n_eff": h.n_eff,
             "nodes": list(h.node_ids)}
            for h in pic.hops
        ],
    }
    # no "<", ">" or "&" inside the script element: "</script>" or "<!--" in a node's text
    # cannot end it early (JSON reads the \u escapes back as the same characters)
    return (
        json.dumps(data, ensure_ascii=False)
        .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    )


def _sidebar(pic: Picture) -> list[str]:
    """The side column: region toggle, hops (C2RAG), the path list, the notes."""
    esc = html.escape
    side = ['<aside>']
    if any(n.role == "region" for n in pic.nodes):
        side.append('<label class="toggle"><input type="checkbox" id="toggle-region" checked>'
                    " show the reachable region</label>")
    if pic.hops:
        side.append("<h2>Hops</h2>")
        for h in pic.hops:
            ne = f", N_eff {h.n_eff:.2f}" if h.n_eff is not None else ""
            side.append(f'<div class="note"><b>hop {h.step}</b> [{esc(h.state)}{ne}] '
                        f"{esc(h.label)}</div>")
    if pic.paths:
        side.append("<h2>Paths</h2>")
        for p in pic.paths:
            side.append(f'<div class="path" data-index="{p.index}" '
                        f'style="border-left-color:{path_colour(p.index)}">{esc(p.label)}</div>')
    if pic.notes:
        side.append("<h2>Notes</h2>")
        side.extend(f'<div class="note">{esc(t)}</div>' for t in pic.notes)
    side.append("</aside>")
    return side
