"""Pictures of a retrieval result: a static PNG (matplotlib) and a self-contained HTML page.

A result is first turned into a :class:`Picture` - a small, method-neutral description of
what to draw - and then rendered:

* **PCR** (:class:`~kgpath.methods.pcr.PCRResult`): the anchor, the reachable region
  ``C_reachable`` of Eq. (1) (nodes in columns by hop distance, the closest ``max_region``
  shown), the top-k hits coloured by their Eq. (2) score, and the shortest path to each hit.
* **PathRAG** (:class:`~kgpath.methods.pathrag.PathRAGResult`): the retrieved nodes and the
  top-K relational paths, each labelled with its Eq. (4) reliability.
* **C2RAG** (:class:`~kgpath.methods.c2rag.C2RAGResult`): one column pair per hop - the
  anchors matched by Eq. (3) and the entities induced by the kept candidates (Eq. 13) - with
  each candidate triple labelled by its Eq. (7) probability, and the hop's state and N_eff.

:func:`render_png` needs matplotlib (``pip install 'kgpath[plot]'``); :func:`render_html`
needs nothing: the page carries its data, CSS and a little JavaScript inline (no CDN), so it
opens offline. Hovering a node shows its text and scores; hovering a path in the side list
highlights it; clicking a node highlights the paths through it.
"""

from __future__ import annotations

import html
import json
import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgpath.errors import ConfigError, require
from kgpath.graph import Edge, KnowledgeGraph

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
]

logger = logging.getLogger(__name__)

#: Colours of paths P1, P2, ... (cycled), chosen to stay distinct on white.
PATH_COLOURS = (
    "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e",
    "#17becf", "#e377c2", "#8c564b", "#bcbd22", "#7f7f7f",
)
ANCHOR_COLOUR = "#f2a900"
REGION_COLOUR = "#d9d9d9"
_ROLE_ORDER = {"anchor": 0, "hit": 1, "path": 2, "region": 3}


@dataclass(frozen=True)
class PicNode:
    """A node to draw. ``role``: ``"anchor"``, ``"hit"``, ``"path"`` or ``"region"``."""

    id: str
    name: str
    role: str
    layer: int
    text: str = ""
    score: float | None = None
    hops: int | None = None
    rank: int | None = None
    info: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PicEdge:
    """A directed edge; ``paths`` lists the indices of the :class:`PicPath` using it."""

    source: str
    target: str
    label: str = ""
    paths: tuple[int, ...] = ()
    info: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PicPath:
    """A highlighted path (a PCR shortest path, a PathRAG path, a C2RAG candidate)."""

    index: int
    node_ids: tuple[str, ...]
    label: str
    reliability: float | None = None


@dataclass(frozen=True)
class PicHop:
    """One C2RAG hop: its constraint text, state and the nodes it touched."""

    step: int
    label: str
    state: str
    n_eff: float | None
    node_ids: tuple[str, ...]


@dataclass(frozen=True)
class Picture:
    """Everything needed to draw one retrieval result, independent of the method."""

    method: str
    query: str
    anchors: tuple[str, ...]
    nodes: tuple[PicNode, ...]
    edges: tuple[PicEdge, ...]
    paths: tuple[PicPath, ...] = ()
    hops: tuple[PicHop, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def title(self) -> str:
        """``"<METHOD>: <query>"`` (query shortened)."""
        q = self.query if len(self.query) <= 90 else self.query[:87] + "..."
        return f"{self.method.upper()}: {q}"

    def node(self, node_id: str) -> PicNode:
        """The drawn node with this id."""
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(node_id)

    @property
    def anchor_names(self) -> tuple[str, ...]:
        """Names of the anchor nodes."""
        by = {n.id: n.name for n in self.nodes}
        return tuple(by.get(a, a) for a in self.anchors)


# ---------------------------------------------------------------------- building
def build_picture(
    result: Any, graph: KnowledgeGraph | None = None, *, max_region: int = 40
) -> Picture:
    """Turn a PCR, PathRAG or C2RAG result into a :class:`Picture`.

    ``graph`` adds context: the reachable region and the edges among drawn nodes for PCR,
    node texts for C2RAG. PathRAG results carry their graph. Without it only what the result
    itself holds is drawn.
    """
    if isinstance(result, Picture):
        return result
    if isinstance(max_region, bool) or not isinstance(max_region, int) or max_region < 0:
        raise ConfigError(f"max_region must be an int >= 0, got {max_region!r}")
    kind = type(result).__name__
    if kind == "PCRResult":
        return _from_pcr(result, graph, max_region)
    if kind == "PathRAGResult":
        return _from_pathrag(result, graph or getattr(result, "graph", None))
    if kind == "C2RAGResult":
        return _from_c2rag(result, graph)
    raise ConfigError(
        f"cannot draw a {kind}: expected a PCRResult, PathRAGResult or C2RAGResult"
    )


def _edge_label(e: Edge) -> str:
    return e.relation or e.text


def _from_pcr(res: Any, graph: KnowledgeGraph | None, max_region: int) -> Picture:
    anchor = res.anchor
    nodes: dict[str, PicNode] = {
        anchor.id: PicNode(anchor.id, anchor.name, "anchor", 0, anchor.text, hops=0)
    }
    edges: dict[tuple[str, str, str], PicEdge] = {}
    paths: list[PicPath] = []
    for rank, hit in enumerate(res.hits, 1):
        role = "anchor" if hit.id == anchor.id else "hit"
        layer = hit.hops if hit.hops is not None else -1
        nodes[hit.id] = PicNode(
            hit.id, hit.node.name, role, layer, hit.node.text, score=hit.score, hops=hit.hops,
            rank=rank,
        )
        if len(hit.path) > 1:
            pi = len(paths)
            paths.append(
                PicPath(pi, tuple(hit.path), f"#{rank} {hit.node.name} (score {hit.score:.3f}, "
                        f"{hit.hops} hop{'s' if hit.hops != 1 else ''})")
            )
            for depth, (nid, e) in enumerate(zip(hit.path[1:], hit.edges), 1):
                if nid not in nodes:
                    node = graph.node(nid) if graph is not None and nid in graph else None
                    nodes[nid] = PicNode(
                        nid, node.name if node else nid, "path", depth,
                        node.text if node else "", hops=depth,
                    )
                key = (e.source, e.target, e.relation)
                old = edges.get(key)
                edges[key] = PicEdge(
                    e.source, e.target, _edge_label(e), (old.paths if old else ()) + (pi,)
                )
    notes = [f"{res.reachable_count} reachable node(s) (Eq. 1)"]
    if graph is not None and anchor.id in graph:
        cfg = res.config
        bfs = graph.bfs(anchor.id, max_depth=cfg.max_depth, direction=cfg.direction)
        shown = 0
        for idx, d in zip(bfs.nodes.tolist(), bfs.dist.tolist()):
            if shown >= max_region:
                break
            n = graph.node_at(int(idx))
            if n.id not in nodes:
                nodes[n.id] = PicNode(n.id, n.name, "region", int(d), n.text, hops=int(d))
                shown += 1
        hidden = int(bfs.nodes.size) - len([n for n in nodes.values() if n.layer >= 0])
        if hidden > 0:
            notes.append(f"{hidden} more reachable node(s) not drawn")
        drawn = set(nodes)
        for e in graph.edges:
            if e.source in drawn and e.target in drawn:
                edges.setdefault((e.source, e.target, e.relation),
                                 PicEdge(e.source, e.target, _edge_label(e)))
    if res.fallback_used:
        notes.append("global fallback used: hits may be unreachable (drawn in the last column)")
    _place_unreached(nodes)
    return Picture("pcr", res.query, (anchor.id,), tuple(nodes.values()), tuple(edges.values()),
                   tuple(paths), (), tuple(notes))


def _place_unreached(nodes: dict[str, PicNode]) -> None:
    last = max((n.layer for n in nodes.values()), default=0) + 1
    for k, n in list(nodes.items()):
        if n.layer < 0:
            nodes[k] = PicNode(n.id, n.name, n.role, last, n.text, n.score, n.hops, n.rank,
                               n.info)


def _from_pathrag(res: Any, graph: KnowledgeGraph | None) -> Picture:
    """Nodes on the top-K paths, in columns by their earliest position along a path.

    Path ends that were retrieved (keyword matches) are drawn as anchors.
    """
    retrieved = {rn.node.id: (rank, rn) for rank, rn in enumerate(res.nodes, 1)}
    nodes: dict[str, PicNode] = {}
    edges: dict[tuple[str, str, str], PicEdge] = {}
    paths = []
    starts: list[str] = []
    for pi, p in enumerate(res.paths):
        paths.append(PicPath(pi, p.ids, f"P{p.rank} reliability {p.reliability:.4f}: "
                             + " -> ".join(n.name for n in p.nodes), float(p.reliability)))
        for pos, n in enumerate(p.nodes):
            end = pos in (0, len(p.nodes) - 1)
            if end and n.id in retrieved:
                rank, rn = retrieved[n.id]
                layer = min(pos, nodes[n.id].layer) if n.id in nodes else pos
                nodes[n.id] = PicNode(n.id, n.name, "anchor", layer, n.text, score=rn.similarity,
                                      rank=rank, info={"keyword": rn.keyword})
                if pos == 0:
                    starts.append(n.id)
            elif n.id not in nodes:
                nodes[n.id] = PicNode(n.id, n.name, "path", pos, n.text,
                                      info={"S(v) on first path": f"{p.resources[pos]:.4f}"})
            elif pos < nodes[n.id].layer:
                prev = nodes[n.id]
                nodes[n.id] = PicNode(prev.id, prev.name, prev.role, pos, prev.text, prev.score,
                                      prev.hops, prev.rank, prev.info)
        for e in p.edges:
            key = (e.source, e.target, e.relation)
            old = edges.get(key)
            edges[key] = PicEdge(e.source, e.target, _edge_label(e),
                                 (old.paths if old else ()) + (pi,))
    notes = [f"keywords ({res.keyword_source}): {', '.join(res.keywords)}"] if res.keywords else []
    notes.append(f"{len(res.nodes)} node(s) retrieved, {len(res.paths)} path(s) kept (Eq. 4)")
    if res.empty_reason:
        notes.append(f"no paths: {res.empty_reason}")
    return Picture("pathrag", res.query, tuple(dict.fromkeys(starts)), tuple(nodes.values()),
                   tuple(edges.values()), tuple(paths), (), tuple(notes))


def _from_c2rag(res: Any, graph: KnowledgeGraph | None) -> Picture:
    nodes: dict[str, PicNode] = {}
    edges: dict[tuple[str, str, str], PicEdge] = {}
    paths: list[PicPath] = []
    hops = []

    def put(nid: str, name: str, role: str, layer: int, **kw: Any) -> None:
        text = ""
        if graph is not None and nid in graph:
            n = graph.node(nid)
            name, text = n.name, n.text
        old = nodes.get(nid)
        if old is not None:
            keep_role = min(old.role, role, key=lambda r: _ROLE_ORDER[r])
            nodes[nid] = PicNode(nid, old.name, keep_role, min(old.layer, layer), old.text,
                                 old.score if old.score is not None else kw.get("score"),
                                 info={**old.info, **kw.get("info", {})})
        else:
            nodes[nid] = PicNode(nid, name, role, layer, text, kw.get("score"),
                                 info=kw.get("info", {}))

    anchors: list[str] = []
    for h in res.hops:
        base = 2 * (h.step - 1)
        touched: list[str] = []
        for a in h.anchors:
            put(a.node_id, a.name, "anchor", base, info={f"hop {h.step}": f"anchor via {a.via}"})
            anchors.append(a.node_id)
            touched.append(a.node_id)
        induced = set(h.induced)
        for c in h.top:
            other = c.entity
            role = "hit" if other in induced else "path"
            put(c.anchor, c.anchor, "anchor", base)
            put(other, other, role, base + 1, score=c.p)
            touched.append(other)
            pi = len(paths)
            prob = f"p={c.p:.3f}" if c.p is not None else "p=n/a"
            paths.append(PicPath(pi, (c.anchor, other), f"hop {h.step}: {c.text} ({prob})",
                                 c.p))
            key = (c.source, c.target, c.relation)
            old = edges.get(key)
            edges[key] = PicEdge(c.source, c.target, c.relation,
                                 (old.paths if old else ()) + (pi,), {"hop": h.step})
        label = h.linearized or (h.constraint.to_dict().get("text", "") if h.constraint else "")
        hops.append(PicHop(h.step, label, str(h.state), h.n_eff, tuple(dict.fromkeys(touched))))
    notes = [
        f"hop {hp.step} [{hp.state}"
        + (f", N_eff {hp.n_eff:.2f}" if hp.n_eff is not None else "")
        + f"]: {hp.label}"
        for hp in hops
    ]
    for var, ids in res.bindings.items():
        names = res.binding_names.get(var, ids)
        notes.append(f"{var} = {' / '.join(names)}")
    return Picture("c2rag", res.query, tuple(dict.fromkeys(anchors)), tuple(nodes.values()),
                   tuple(edges.values()), tuple(paths), tuple(hops), tuple(notes))


# ---------------------------------------------------------------------- layout
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
            key=lambda n: (_ROLE_ORDER.get(n.role, 9), n.rank if n.rank is not None else 1 << 30,
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


def _node_colour(n: PicNode, lo: float, hi: float) -> str:
    if n.role == "anchor":
        return ANCHOR_COLOUR
    if n.role == "hit":
        return _score_colour(n.score, lo, hi)
    if n.role == "path":
        return "#fdd0a2"
    return REGION_COLOUR


def _score_range(pic: Picture) -> tuple[float, float]:
    s = [n.score for n in pic.nodes if n.role == "hit" and n.score is not None]
    return (min(s), max(s)) if s else (0.0, 1.0)


def _short(s: str, n: int = 28) -> str:
    return s if len(s) <= n else s[: n - 1] + "\u2026"


# ---------------------------------------------------------------------- PNG
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
    from matplotlib.lines import Line2D

    pic = build_picture(result, graph, max_region=max_region)
    pos = layout(pic)
    xs0 = [p[0] for p in pos.values()] or [0.0]
    ys0 = [p[1] for p in pos.values()] or [0.0]
    span_x, span_y = max(xs0) - min(xs0) + 1, max(ys0) - min(ys0) + 1
    side = 3.6 if pic.paths or pic.notes else 0.0
    fig = Figure(figsize=(min(4 + 2.6 * span_x, 30) + side, min(2.5 + 0.55 * span_y, 30)))
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.02, 0.04, 0.96 - side / fig.get_figwidth(), 0.86))
    ax.set_axis_off()
    lo, hi = _score_range(pic)
    for e in pic.edges:
        if e.source not in pos or e.target not in pos:
            continue
        (x0, y0), (x1, y1) = pos[e.source], pos[e.target]
        on = bool(e.paths)
        colour = PATH_COLOURS[e.paths[0] % len(PATH_COLOURS)] if on else "#bdbdbd"
        rad = 0.25 if x0 == x1 else 0.0
        ax.annotate(
            "", xy=(x1, y1), xytext=(x0, y0),
            arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 2.4 if on else 0.8,
                        "shrinkA": 11, "shrinkB": 11, "connectionstyle": f"arc3,rad={rad}",
                        "alpha": 1.0 if on else 0.7},
            zorder=2 if on else 1,
        )
        if on and e.label:
            ax.text((x0 + x1) / 2, (y0 + y1) / 2 + 0.12, _short(e.label, 22), fontsize=7,
                    ha="center", color=colour, zorder=4,
                    bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8})
    for n in pic.nodes:
        x, y = pos[n.id]
        size = 420 if n.role == "anchor" else 260 if n.role == "hit" else 140
        marker = "*" if n.role == "anchor" else "o"
        ax.scatter([x], [y], s=size * (1.8 if marker == "*" else 1), c=_node_colour(n, lo, hi),
                   marker=marker, edgecolors="#333333", linewidths=0.8, zorder=3)
        label = _short(n.name)
        if n.rank is not None and n.role == "hit":
            label = f"#{n.rank} {label}"
        ax.text(x, y - 0.28, label, fontsize=8, ha="center", va="top", zorder=4,
                fontweight="bold" if n.role == "anchor" else "normal")
        if n.score is not None and n.role in ("hit", "anchor"):
            ax.text(x, y + (0.3 if n.role == "anchor" else 0.2), f"{n.score:.3f}", fontsize=6.5,
                    ha="center", color="#555555",
                    zorder=4)
    xs = [p[0] for p in pos.values()] or [0.0]
    ys = [p[1] for p in pos.values()] or [0.0]
    ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
    ax.set_ylim(min(ys) - 0.7, max(ys) + 0.6)
    fig.suptitle(pic.title, fontsize=11, x=0.02, ha="left")
    sub = "anchor: " + ", ".join(pic.anchor_names[:4]) + (" ..." if len(pic.anchors) > 4 else "")
    fig.text(0.02, 0.915, sub, fontsize=9, color="#7a5c00")
    if side:
        handles = [
            Line2D([0], [0], color=PATH_COLOURS[p.index % len(PATH_COLOURS)], lw=2.4,
                   label=_short(p.label, 60))
            for p in pic.paths[:12]
        ]
        if handles:
            fig.legend(handles=handles, loc="upper right", fontsize=7, frameon=False,
                       title="paths", title_fontsize=8, bbox_to_anchor=(0.995, 0.9))
        if pic.notes:
            fig.text(0.99, 0.03, "\n".join(_short(t, 70) for t in pic.notes[:10]), fontsize=7,
                     ha="right", va="bottom", color="#444444")
    out = Path(path)
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


# ---------------------------------------------------------------------- HTML
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
) -> Path:
    """Write ``result`` (or a :class:`Picture`) as a self-contained interactive HTML page."""
    pic = build_picture(result, graph, max_region=max_region)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html_document(pic), encoding="utf-8")
    logger.info("wrote %s", out)
    return out


def html_document(pic: Picture) -> str:
    """The HTML text of :func:`render_html` (inline SVG, CSS, JSON data and script)."""
    pos = layout(pic)
    colw, rowh, mx, my = 210.0, 58.0, 90.0, 50.0
    xs = [p[0] for p in pos.values()] or [0.0]
    ys = [p[1] for p in pos.values()] or [0.0]
    ymax = max(ys)

    def px(nid: str) -> tuple[float, float]:
        x, y = pos[nid]
        return mx + x * colw, my + (ymax - y) * rowh

    width = mx * 2 + (max(xs) - min(xs)) * colw
    height = my * 2 + (max(ys) - min(ys)) * rowh
    lo, hi = _score_range(pic)
    esc = html.escape
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{esc(pic.title)}">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" '
        'fill="context-stroke"/></marker></defs>',
    ]
    for e in pic.edges:
        if e.source not in pos or e.target not in pos:
            continue
        (x0, y0), (x1, y1) = px(e.source), px(e.target)
        colour = PATH_COLOURS[e.paths[0] % len(PATH_COLOURS)] if e.paths else "#bbbbbb"
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
                f'text-anchor="middle">{esc(_short(e.label, 24))}</text>'
            )
    for n in pic.nodes:
        x, y = px(n.id)
        colour = _node_colour(n, lo, hi)
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
        label = _short(n.name)
        if n.role == "hit" and n.rank is not None:
            label = f"#{n.rank} {label}"
        weight = ' font-weight="bold"' if n.role == "anchor" else ""
        parts.append(
            f'<g class="node role-{esc(n.role)}" data-id="{esc(n.id)}">{shape}'
            f'<text x="{x:.1f}" y="{y + 27:.1f}" text-anchor="middle"{weight}>{esc(label)}'
            "</text></g>"
        )
    parts.append("</svg>")
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
    payload = (
        json.dumps(data, ensure_ascii=False)
        .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    )
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
            colour = PATH_COLOURS[p.index % len(PATH_COLOURS)]
            side.append(f'<div class="path" data-index="{p.index}" '
                        f'style="border-left-color:{colour}">{esc(p.label)}</div>')
    if pic.notes:
        side.append("<h2>Notes</h2>")
        side.extend(f'<div class="note">{esc(t)}</div>' for t in pic.notes)
    side.append("</aside>")
    anchors = ", ".join(esc(a) for a in pic.anchor_names)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{esc(pic.title)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{esc(pic.title)}</h1><div class=\"anchor\">anchor: {anchors}</div>"
        "</header><main><div id=\"canvas\">" + "".join(parts) + "</div>"
        + "".join(side) + "</main><div id=\"tip\"></div>"
        f'<script type="application/json" id="kgpath-data">{payload}</script>'
        f"<script>{_JS}</script></body></html>\n"
    )


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
