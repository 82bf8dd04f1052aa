"""From a method's result to a :class:`~kgpath.viz.picture.Picture`.

* **PCR** (:class:`~kgpath.methods.pcr.PCRResult`): the anchor, the reachable region
  ``C_reachable`` of Eq. (1) (nodes in columns by hop distance, the closest ``max_region``
  shown), the top-k hits coloured by their Eq. (2) score, and the shortest path to each hit.
* **PathRAG** (:class:`~kgpath.methods.pathrag.PathRAGResult`): the retrieved nodes (not
  anchors: PathRAG has none) and the most reliable relational paths, each labelled with its
  Eq. (4) reliability; the first ``max_paths`` (default 5) so each keeps its own colour.
* **C2RAG** (:class:`~kgpath.methods.c2rag.C2RAGResult`): one column pair per hop - the
  anchors matched by Eq. (3) and the entities induced by the kept candidates (Eq. 13) - with
  each candidate triple labelled by its Eq. (7) probability, and the hop's state and N_eff;
  then the evidence passages (Eq. 16's blocks, ranked as :meth:`C2RAGResult.evidence` ranks
  them), the first - the passage the evidence ranks first - highlighted as :attr:`Picture.answer`.

Results are recognised by class name, so this module imports no method.
"""

from __future__ import annotations

from typing import Any

from kgpath.errors import ConfigError
from kgpath.graph import Edge, KnowledgeGraph
from kgpath.viz.picture import ROLE_ORDER, PicEdge, PicHop, PicNode, PicPath, Picture

__all__ = ["build_picture"]


#: Paths drawn by default (PathRAG): few enough that each has its own colour and label.
MAX_PATHS = 5
#: Evidence passages drawn after the last C2RAG hop.
MAX_PASSAGES = 3


def build_picture(
    result: Any,
    graph: KnowledgeGraph | None = None,
    *,
    max_region: int = 40,
    max_paths: int | None = MAX_PATHS,
) -> Picture:
    """Turn a PCR, PathRAG or C2RAG result into a :class:`Picture`.

    ``graph`` adds context: the reachable region and the edges among drawn nodes for PCR,
    node texts for C2RAG. PathRAG results carry their graph. Without it only what the result
    itself holds is drawn. ``max_paths`` caps the PathRAG paths drawn (the most reliable
    first; ``None`` draws all); the rest are counted in :attr:`Picture.hidden_paths`.

    Raises
    ------
    ConfigError
        For a result of another type, or ``max_region`` / ``max_paths`` not an int >= 0
        (``max_paths`` >= 1, or ``None``).
    """
    if isinstance(result, Picture):
        return result
    if isinstance(max_region, bool) or not isinstance(max_region, int) or max_region < 0:
        raise ConfigError(f"max_region must be an int >= 0, got {max_region!r}")
    if max_paths is not None and (
        isinstance(max_paths, bool) or not isinstance(max_paths, int) or max_paths < 1
    ):
        raise ConfigError(f"max_paths must be an int >= 1 or None, got {max_paths!r}")
    kind = type(result).__name__
    if kind == "PCRResult":
        return _from_pcr(result, graph, max_region)
    if kind == "PathRAGResult":
        return _from_pathrag(result, graph or getattr(result, "graph", None), max_paths)
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


def _from_pathrag(res: Any, graph: KnowledgeGraph | None, max_paths: int | None) -> Picture:
    """Nodes on the first ``max_paths`` paths, in columns by earliest position along a path.

    Path ends that were retrieved (keyword matches) are drawn as stars, named "retrieved
    node" (:attr:`Picture.anchor_kind`): PathRAG retrieves nodes, it has no anchor.
    """
    retrieved = {rn.node.id: (rank, rn) for rank, rn in enumerate(res.nodes, 1)}
    nodes: dict[str, PicNode] = {}
    edges: dict[tuple[str, str, str], PicEdge] = {}
    paths = []
    starts: list[str] = []
    shown = list(res.paths) if max_paths is None else list(res.paths)[:max_paths]
    for pi, p in enumerate(shown):
        paths.append(PicPath(pi, p.ids, f"P{p.rank} reliability {p.reliability:.4f}: "
                             + " -> ".join(n.name for n in p.nodes), float(p.reliability)))
        for pos, n in enumerate(p.nodes):
            end = pos in (0, len(p.nodes) - 1)
            if end and n.id in retrieved:
                rank, rn = retrieved[n.id]
                layer = min(pos, nodes[n.id].layer) if n.id in nodes else pos
                nodes[n.id] = PicNode(n.id, n.name, "anchor", layer, n.text, score=rn.similarity,
                                      rank=rank, info={"keyword": rn.keyword})
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
    hidden = len(res.paths) - len(shown)
    if hidden:
        notes.append(f"the {len(shown)} most reliable drawn; {hidden} more not drawn "
                     "(max_paths=None draws all)")
    if res.empty_reason:
        notes.append(f"no paths: {res.empty_reason}")
    return Picture("pathrag", res.query, tuple(dict.fromkeys(starts)), tuple(nodes.values()),
                   tuple(edges.values()), tuple(paths), (), tuple(notes),
                   anchor_kind="retrieved node", hidden_paths=hidden)


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
            keep_role = min(old.role, role, key=lambda r: ROLE_ORDER[r])
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
    answer = _c2rag_passages(res, nodes, edges, 2 * len(res.hops), notes)
    return Picture("c2rag", res.query, tuple(dict.fromkeys(anchors)), tuple(nodes.values()),
                   tuple(edges.values()), tuple(paths), tuple(hops), tuple(notes),
                   answer=answer)


def _c2rag_passages(
    res: Any, nodes: dict[str, PicNode], edges: dict[tuple[str, str, str], PicEdge], layer: int,
    notes: list[str],
) -> str | None:
    """Add the first :data:`MAX_PASSAGES` evidence items after the last hop; the first's id.

    The first passage's text is added to ``notes``.

    Each passage is joined to one node of the hop whose constraint's block holds it (the
    first of its candidates' entities, else of its anchors, else of an earlier hop's, that
    the passage names; else the first): the reader follows the hops to the evidence.
    Ranked as :meth:`C2RAGResult.evidence` ranks (Appendix B).
    """
    items = res.evidence()[:MAX_PASSAGES]
    block_of: dict[str, Any] = {}
    for b in res.blocks:
        for item in b.evidence:
            block_of.setdefault(item.id, b.constraint_index)
    by_constraint = {h.constraint_index: i for i, h in enumerate(res.hops)}
    for rank, ev in enumerate(items, 1):
        pid = f"passage:{ev.id}"
        nodes[pid] = PicNode(pid, f"[{ev.id}] {ev.text}", "passage", layer, ev.text,
                             score=float(ev.score), rank=rank,
                             info={"constraint": ev.trace.get("constraint", "")})
        start = by_constraint.get(block_of.get(ev.id), len(res.hops) - 1)
        sources: list[str] = []
        for h in reversed(res.hops[: start + 1]):
            sources = [c.entity for c in h.top] or [a.node_id for a in h.anchors]
            sources = [s for s in dict.fromkeys(sources) if s in nodes]
            if sources:
                break
        text = ev.text.lower()
        named = [src for src in sources if nodes[src].name.lower() in text]
        for src in (named or sources)[:1]:
            edges[(src, pid, "evidence")] = PicEdge(src, pid, f"evidence #{rank}", (),
                                                    {"rank": rank})
    if not items:
        return None
    notes.append(f"top evidence (rank 1): {items[0].text}")
    return f"passage:{items[0].id}"
