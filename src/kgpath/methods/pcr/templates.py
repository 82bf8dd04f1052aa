"""Relation-path templates: rank nodes by the best relation chain reaching them (kgpath extension).

**Not in the PCR paper** (Eq. 2 ranks a reachable node by its own text). ``score="template"``
goes further than :mod:`kgpath.methods.pcr.pathscore`, which scores the *one* BFS-tree path
of each node: a node reached by several relation chains ("John Pilger" both acted in and
wrote a film) must be found through the chain the question asks about, and that chain need
not be its shortest path.

A *template* is a sequence of steps ``(relation, forward)`` from an anchor. Its endpoint set
is computed by set propagation over the adjacency grouped by relation
(:class:`RelationIndex`): walks, so a chain may come back to a node seen before ("films
sharing an actor with X" walks X → actor → film), except to the anchor itself, which no
step's node set contains (the films "directed by the director of X" are the director's
other films, so X's own genres or actors are not among the answers unless another film has
them too).

How a chain is scored (``PCRConfig.template_scorer``):

* ``"aligned"`` (default): each end of the chain against its own part of the question,
  :mod:`kgpath.methods.pcr.chainmatch` (MetaQA dev Hits@1 91.4 / 92.9 / 90.9 on 1/2/3
  hops, from 85.3 / 75.1 / 66.4 with ``"text"``).
* ``"text"``: the chain written as one text with its direction, the anchor by name and
  every other node as :data:`~kgpath.methods.pcr.pathscore.MASK`::

      directed_by backwards, then written_by forwards, from "Timo Tjahjanto":
      "something directed by Timo Tjahjanto, something written by something"

  (each triple in its own direction: a step walked backwards puts the new node first),
  the texts embedded in one call and scored by cosine to the query, plus
  ``template_lexical`` per step whose relation names a word of the query
  (:func:`lexical_matches`) and ``template_node_weight`` times the mean node score (Eq. 2)
  of the chain's endpoints (at most :data:`ENDPOINT_SAMPLE`).

A node's score is its best template's score, ties broken by the node's own score (Eq. 2),
then by template order. The hit's path is one walk of its best template (its ``hops`` is
that template's length, which may exceed the node's shortest distance).

Bounds (both scorers): chains are enumerated by :func:`beam_templates`, at most
``template_beam`` (256) per length; when a length has more, they are scored *before* their
endpoints are computed and only the best are expanded. A frontier's possible steps cost its
distinct (node, relation) pairs and a step's expansion that relation's edges, never a hub's
whole degree; so a question is bounded by the number of distinct relation chains kept
(on a 40,864-node OpenIE graph with 7,008 relation labels, a 3-hop question from its
biggest hub, "American", 3,229 edges: 0.30 s aligned, 0.36 s text, from 148 s and 11.7 s
with the unbounded enumeration). No MetaQA dev question has more than 128 chains of one
length, so there the beam changes nothing (checked: the same chains and endpoints for
all 785 questions). :func:`relation_templates` is the unbounded enumeration (up to
``MAX_TEMPLATES``). ``max_depth=None`` means :data:`DEFAULT_DEPTH`. In-memory graphs only
(it needs the CSR arrays).
"""

from __future__ import annotations

import re
import weakref
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kgpath.backends.base import InProcessGraph, VectorSearch
from kgpath.graph import Direction, Edge, KnowledgeGraph
from kgpath.methods.pcr.pathscore import MASK, humanize_relation

__all__ = [
    "DEFAULT_DEPTH",
    "MAX_EDGES",
    "MAX_TEMPLATES",
    "Template",
    "relation_codes",
    "relation_templates",
    "template_text",
    "template_walk",
]

DEFAULT_DEPTH = 3
MAX_TEMPLATES = 4000
MAX_EDGES = 20_000_000
ENDPOINT_SAMPLE = 100

Step = tuple[str, bool]


@dataclass(frozen=True)
class Template:
    """A relation chain from ``anchor`` (node index) and the nodes at each of its steps.

    ``frontiers[i]`` holds the sorted node indices reached after ``i`` steps (``frontiers[0]``
    is the anchor alone); the last one is the endpoint set.
    """

    anchor: int
    steps: tuple[Step, ...]
    frontiers: tuple[np.ndarray, ...]

    @property
    def endpoints(self) -> np.ndarray:
        """Node indices the whole chain reaches."""
        return self.frontiers[-1]


_CODES: dict[int, tuple[int, weakref.ref[KnowledgeGraph], np.ndarray, list[str]]] = {}


def relation_codes(graph: KnowledgeGraph) -> tuple[np.ndarray, list[str]]:
    """``(code per edge index, label per code)``, cached per graph and version.

    The cache holds the graph weakly (as :func:`~kgpath.methods.pcr.anchors.name_key_index`):
    the codes (4 bytes an edge) are dropped with the graph, never keep it alive.
    """
    hit = _CODES.get(id(graph))
    if hit is not None and hit[1]() is graph and hit[0] == graph.version:
        return hit[2], hit[3]
    labels: dict[str, int] = {}
    codes = np.fromiter((labels.setdefault(e.relation or "", len(labels)) for e in graph.edges),
                        np.int32, graph.num_edges)
    if hit is None or hit[1]() is not graph:
        weakref.finalize(graph, _CODES.pop, id(graph), None)
    _CODES[id(graph)] = (graph.version, weakref.ref(graph), codes, list(labels))
    return codes, list(labels)


def _gather(csr: dict[str, np.ndarray], side: str, nodes: np.ndarray) -> tuple[np.ndarray, ...]:
    """Adjacency entries of ``nodes`` on one side: ``(from node, to node, edge index)``."""
    ip = csr[f"{side}_indptr"]
    return _ranges(ip[nodes], ip[nodes + 1], nodes, csr[f"{side}_indices"],
                   csr[f"{side}_edges"])


def _ranges(lo: np.ndarray, hi: np.ndarray, owner: np.ndarray, *cols: np.ndarray,
            ) -> tuple[np.ndarray, ...]:
    """``(owner per entry, *col[lo:hi] ...)`` over all ranges, concatenated (vectorised)."""
    n = (hi - lo).astype(np.int64)
    total = int(n.sum())
    if not total:
        z = np.zeros(0, np.int64)
        return (z,) * (len(cols) + 1)
    start = np.repeat(lo - np.concatenate(([0], np.cumsum(n)[:-1])), n)
    pos = start + np.arange(total, dtype=np.int64)
    return (np.repeat(owner, n), *(c[pos].astype(np.int64) for c in cols))


@dataclass(frozen=True)
class _GroupedSide:
    """One side's adjacency sorted by ``node·R + relation code`` (R = number of codes)."""

    keys: np.ndarray
    nbr: np.ndarray
    distinct: np.ndarray


@dataclass(frozen=True)
class RelationIndex:
    """The CSR adjacency grouped by relation type, per side (``"out"``, ``"in"``).

    A frontier's possible steps cost the number of distinct ``(node, relation)`` pairs it
    holds (not its nodes' degrees: a hub with 10,000 edges of 20 relations costs 20), and
    one step's next frontier costs the edges of that relation only.
    """

    n_codes: int
    labels: tuple[str, ...]
    sides: dict[str, _GroupedSide]

    def steps(self, frontier: np.ndarray, direction: Direction) -> list[tuple[int, bool]]:
        """``(relation code, forward)`` of every step out of ``frontier`` (out side first)."""
        out: list[tuple[int, bool]] = []
        R = self.n_codes
        for side in _SIDES[direction]:
            d = self.sides[side].distinct
            lo = np.searchsorted(d, frontier * R)
            hi = np.searchsorted(d, (frontier + 1) * R)
            _, keys = _ranges(lo, hi, frontier, d)
            out += [(int(c), side == "out") for c in np.unique(keys % R)]
        return out

    def expand(self, frontier: np.ndarray, code: int, forward: bool) -> np.ndarray:
        """Sorted distinct nodes one ``code`` step (``forward`` or back) from ``frontier``."""
        g = self.sides["out" if forward else "in"]
        k = frontier * self.n_codes + code
        _, nbr = _ranges(np.searchsorted(g.keys, k), np.searchsorted(g.keys, k + 1),
                         frontier, g.nbr)
        return np.unique(nbr)


_SIDES: dict[str, tuple[str, ...]] = {"out": ("out",), "in": ("in",), "both": ("out", "in")}
_GROUPED: dict[int, tuple[int, weakref.ref[KnowledgeGraph], RelationIndex]] = {}


def relation_index(graph: KnowledgeGraph) -> RelationIndex:
    """The graph's :class:`RelationIndex`, built once per graph version (held weakly).

    One stable sort of each side's adjacency (O(E log E)), 16 bytes an adjacency entry.
    """
    hit = _GROUPED.get(id(graph))
    if hit is not None and hit[1]() is graph and hit[0] == graph.version:
        return hit[2]
    codes, labels = relation_codes(graph)
    csr = graph.csr()
    R = max(1, len(labels))
    sides = {}
    for side in ("out", "in"):
        ip = csr[f"{side}_indptr"]
        node = np.repeat(np.arange(len(ip) - 1, dtype=np.int64), np.diff(ip))
        key = node * R + codes[csr[f"{side}_edges"]].astype(np.int64)
        order = np.argsort(key, kind="stable")
        keys = key[order]
        sides[side] = _GroupedSide(keys, csr[f"{side}_indices"][order].astype(np.int64),
                                   np.unique(keys))
    if hit is None or hit[1]() is not graph:
        weakref.finalize(graph, _GROUPED.pop, id(graph), None)
    idx = RelationIndex(R, tuple(labels), sides)
    _GROUPED[id(graph)] = (graph.version, weakref.ref(graph), idx)
    return idx


def relation_templates(
    graph: KnowledgeGraph, anchor: int, *, max_depth: int | None, direction: Direction,
    max_templates: int = MAX_TEMPLATES, max_edges: int = MAX_EDGES,
) -> list[Template]:
    """Every relation chain of 1..``max_depth`` steps from ``anchor`` (breadth first).

    A chain is kept when it reaches at least one node; expansion stops at the bounds of the
    module docstring (the templates found so far are returned). ``max_edges`` bounds the
    frontier entries read (each step's relation only, :class:`RelationIndex`).
    """
    depth = DEFAULT_DEPTH if max_depth is None else max_depth
    idx = relation_index(graph)
    level = [Template(anchor, (), (np.asarray([anchor], np.int64),))]
    found: list[Template] = []
    budget = max_edges
    for _ in range(depth):
        nxt: list[Template] = []
        for t in level:
            for code, fwd in idx.steps(t.frontiers[-1], direction):
                nodes = idx.expand(t.frontiers[-1], code, fwd)
                budget -= len(nodes)
                kept = nodes[nodes != anchor]
                if len(kept):
                    nxt.append(Template(anchor, t.steps + ((idx.labels[code], fwd),),
                                        t.frontiers + (kept,)))
            if budget < 0 or len(found) + len(nxt) >= max_templates:
                return found + nxt[:max(0, max_templates - len(found))]
        found.extend(nxt)
        level = nxt
    return found


def beam_templates(
    graph: KnowledgeGraph, anchor: int, *, max_depth: int | None, direction: Direction,
    score: Any, beam: int,
) -> list[Template]:
    """Relation chains from ``anchor``, at most ``beam`` per length, scored before expanding.

    At each length every one-step extension of the kept chains is listed from the
    :class:`RelationIndex` (no node is visited); when there are more than ``beam``, they
    are scored by ``score(list of chains)`` (step ids ``2·relation code + backwards``,
    first step first) and
    only the best ``beam`` with a non-empty endpoint set are expanded (ties in enumeration
    order). The cost is in the number of
    distinct relation chains and the kept frontiers, not in a hub's degree. With fewer
    than ``beam`` chains per length the result equals :func:`relation_templates`, in its
    order.
    """
    depth = DEFAULT_DEPTH if max_depth is None else max_depth
    idx = relation_index(graph)
    level: list[tuple[Template, tuple[int, ...]]] = [
        (Template(anchor, (), (np.asarray([anchor], np.int64),)), ())]
    found: list[Template] = []
    for _ in range(depth):
        cands = [(pi, step) for pi, (t, _) in enumerate(level)
                 for step in idx.steps(t.frontiers[-1], direction)]
        if not cands:
            break
        chains = [level[pi][1] + (2 * code + (not fwd),) for pi, (code, fwd) in cands]
        order = np.arange(len(cands))
        if len(cands) > beam:  # scored only when the beam bounds
            order = np.lexsort((order, -np.asarray(score(chains), np.float64)))
        kept: list[int] = []
        nodes_of: dict[int, np.ndarray] = {}
        for j in order.tolist():
            pi, (code, fwd) = cands[j]
            nodes = idx.expand(level[pi][0].frontiers[-1], code, fwd)
            nodes = nodes[nodes != anchor]
            if len(nodes):
                kept.append(j)
                nodes_of[j] = nodes
                if len(kept) >= beam:
                    break
        nxt: list[tuple[Template, tuple[int, ...]]] = []
        for j in sorted(kept):  # enumeration order, as relation_templates
            pi, (code, fwd) = cands[j]
            t = level[pi][0]
            nxt.append((Template(anchor, t.steps + ((idx.labels[code], fwd),),
                                 t.frontiers + (nodes_of[j],)), chains[j]))
        found += [t for t, _ in nxt]
        level = nxt
    return found


def template_text(steps: Sequence[Step], anchor_name: str, *, mask_anchor: bool = False) -> str:
    """A template as text: each step's triple in its own direction (module docstring).

    Examples
    --------
    >>> template_text([("directed_by", False), ("written_by", True)], "Timo")
    'something directed by Timo, something written by something'
    >>> template_text([("born_in", True)], "Marie Curie")
    'Marie Curie born in something'
    """
    names = [MASK if mask_anchor else anchor_name] + [MASK] * len(steps)
    parts = []
    for i, (rel, forward) in enumerate(steps):
        a, b = names[i], names[i + 1]
        src, dst = (a, b) if forward else (b, a)
        parts.append(f"{src} {humanize_relation(rel)} {dst}")
    return ", ".join(parts) if parts else anchor_name


def template_walk(graph: KnowledgeGraph, t: Template, node: int,
                  ) -> tuple[tuple[str, ...], tuple[Edge, ...]]:
    """One walk of template ``t`` from its anchor to ``node`` (ids and edges), backwards.

    At each step the first adjacency entry (edge order) that follows the step's relation and
    comes from the previous frontier is taken.
    """
    csr = graph.csr()
    codes, labels = relation_codes(graph)
    ids, edges = [node], []
    cur = node
    for i in range(len(t.steps) - 1, -1, -1):
        rel, forward = t.steps[i]
        side = "in" if forward else "out"  # walk the step backwards
        _, dst, eid = _gather(csr, side, np.asarray([cur], np.int64))
        ok = (codes[eid] == labels.index(rel)) & np.isin(dst, t.frontiers[i])
        j = int(np.flatnonzero(ok)[0])
        cur = int(dst[j])
        ids.append(cur)
        edges.append(graph.edge_at(int(eid[j])))
    return (tuple(graph.node_at(i).id for i in reversed(ids)), tuple(reversed(edges)))


_SUFFIXES = ("ions", "ion", "ing", "ers", "ors", "ed", "er", "or", "es", "en", "s")
_WORDS = re.compile(r"[^\W\d_]+")


def stem(word: str) -> str:
    """A crude stem: lower case, one common suffix off (3 letters kept), at most 4 letters.

    >>> [stem(w) for w in ("directed", "director", "acted", "actors", "written", "writer")]
    ['dire', 'dire', 'act', 'act', 'writ', 'writ']
    """
    w = word.lower()
    for suf in _SUFFIXES:
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            w = w[: -len(suf)]
            break
    return w[:4]


def query_stems(query: str) -> Counter[str]:
    """The :func:`stem` of each query word of 3+ letters that is not a stop word."""
    from kgpath.search.bm25 import STOPWORDS

    return Counter(stem(w) for w in _WORDS.findall(query)
                   if len(w) >= 3 and w.lower() not in STOPWORDS)


def relation_stems(relation: str) -> tuple[str, ...]:
    """The stems a relation label offers to :func:`lexical_matches` (its words, in order)."""
    return tuple(query_stems(humanize_relation(relation)).keys()) if relation else ()


def count_matches(stems: Counter[str], steps: Sequence[Sequence[str]]) -> int:
    """How many steps (each a :func:`relation_stems`) use a still unused query stem."""
    left = Counter(stems)
    n = 0
    for words in steps:
        for s in words:
            if left[s] > 0:
                left[s] -= 1
                n += 1
                break
    return n


def lexical_matches(query: str, steps: Sequence[Step]) -> int:
    """How many steps name a relation word the query uses (each query word used once).

    Words of 3+ letters that are not stop words (:data:`kgpath.search.bm25.STOPWORDS`), as
    :func:`stem`; a step matches when one of its words is still unused in the query.
    """
    return count_matches(query_stems(query), [relation_stems(rel) for rel, _ in steps])


def best_templates(texts_scores: np.ndarray) -> np.ndarray:
    """Template order: best score first, ties in enumeration order (shorter first)."""
    return np.lexsort((np.arange(len(texts_scores)), -np.asarray(texts_scores)))


def rank_by_templates(
    templates: Sequence[Template], tscores: np.ndarray, node_score: Any, k: int,
    *, exclude: set[int],
) -> list[tuple[int, int, float]]:
    """Top-``k`` ``(node index, template index, node score)``: best template, then node score.

    Templates of equal score form one group, so a node's own score breaks ties between
    them (then template order, then endpoint order). ``node_score(indices) -> scores`` is
    called once per group visited (best first) on the nodes it newly reaches; ``exclude``
    (the anchors, unless included) is never returned.
    """
    seen = set(exclude)
    out: list[tuple[int, int, float]] = []
    order = best_templates(tscores)
    cuts = np.flatnonzero(np.diff(np.asarray(tscores)[order])) + 1
    for group in np.split(order, cuts):
        new: list[int] = []
        owner: list[int] = []
        for ti in group.tolist():
            for v in templates[ti].endpoints.tolist():
                if v not in seen:
                    seen.add(v)
                    new.append(v)
                    owner.append(ti)
        if not new:
            continue
        ns = np.asarray(node_score(np.asarray(new, np.int64)), np.float32)
        for j in np.lexsort((np.arange(len(new)), -ns))[:k - len(out)].tolist():
            out.append((new[j], owner[j], float(ns[j])))
        if len(out) >= k:
            break
    return out


def _beam(b: Any, anchor: int, query: str, qv: np.ndarray, cfg: Any, *, final: bool = True,
          ) -> tuple[list[Template], np.ndarray]:
    """:func:`beam_templates` from ``anchor`` and (``final``) each chain's aligned score."""
    from kgpath.methods.pcr.chainmatch import chain_scores, step_table

    graph: KnowledgeGraph = b.capability(InProcessGraph).graph
    idx = relation_index(graph)
    tables: list[Any] = []

    def table() -> Any:  # built on first use: the text scorer's beam may never score
        if not tables:
            tables.append(step_table(graph, b.capability(VectorSearch).embedder, idx.labels,
                                     query, qv, graph.node_at(anchor).name,
                                     examples=cfg.chain_examples))
        return tables[0]

    ts = beam_templates(graph, anchor, max_depth=cfg.max_depth, direction=cfg.direction,
                        score=lambda chains: chain_scores(table(), chains, cfg, prefix=True),
                        beam=cfg.template_beam)
    if not final:
        return ts, np.zeros(0, np.float32)
    code = {label: i for i, label in enumerate(idx.labels)}
    return ts, chain_scores(table(), [[2 * code[r] + (not f) for r, f in t.steps] for t in ts],
                            cfg)


def _text_scores(b: Any, anchors: Sequence[int], query: str, qv: np.ndarray, cfg: Any,
                 ) -> tuple[list[Template], np.ndarray]:
    """``template_scorer="text"``: each chain as one text, embedded and scored.

    The chains are those :func:`beam_templates` keeps with the aligned scorer's score
    (``template_beam`` per length): every chain of :func:`relation_templates` when there
    are fewer (all MetaQA dev questions), so the text embeddings per question are bounded
    on hubs too.
    """
    from kgpath.methods.pcr.pathscore import path_similarity
    from kgpath.methods.pcr.search import node_scores

    graph: KnowledgeGraph = b.capability(InProcessGraph).graph
    templates: list[Template] = []
    texts: list[str] = []
    for a in anchors:
        root = [Template(int(a), (), (np.asarray([a], np.int64),))] if cfg.include_anchor else []
        ts = root + _beam(b, int(a), query, qv, cfg, final=False)[0]
        name = graph.node_at(int(a)).name
        texts += [template_text(t.steps, name, mask_anchor=cfg.path_text == "relations")
                  for t in ts]
        templates += ts
    tscores = path_similarity(b.capability(VectorSearch).embedder, qv, texts)
    if cfg.template_lexical:
        tscores = tscores + cfg.template_lexical * np.asarray(
            [lexical_matches(query, t.steps) for t in templates], np.float32)
    if cfg.template_node_weight:
        tscores = tscores + cfg.template_node_weight * np.asarray(
            [float(np.mean(node_scores(b, query, qv, t.endpoints[:ENDPOINT_SAMPLE], cfg)))
             for t in templates], np.float32)
    return templates, tscores


def _aligned_scores(b: Any, anchors: Sequence[int], query: str, qv: np.ndarray, cfg: Any,
                    ) -> tuple[list[Template], np.ndarray]:
    """``template_scorer="aligned"``: :mod:`kgpath.methods.pcr.chainmatch` over a beam.

    The anchor's own (empty) chain, when included, scores its node score (Eq. 2) times the
    sum of the three cosine weights: on the scale of a chain whose every cosine equals it.
    """
    from kgpath.methods.pcr.search import node_scores

    templates: list[Template] = []
    parts: list[np.ndarray] = []
    for a in anchors:
        ts, scores = _beam(b, int(a), query, qv, cfg)
        parts.append(scores)
        if cfg.include_anchor:
            w = cfg.chain_focus + cfg.chain_anchor + cfg.chain_relations
            own = node_scores(b, query, qv, np.asarray([a], np.int64), cfg)
            parts.append(np.asarray(w * own, np.float32).reshape(1))
            ts = ts + [Template(int(a), (), (np.asarray([a], np.int64),))]
        templates += ts
    return templates, (np.concatenate(parts).astype(np.float32) if parts
                       else np.zeros(0, np.float32))


def llm_choice(llm: Any, query: str, graph: KnowledgeGraph, templates: Sequence[Template],
               tscores: np.ndarray, n: int) -> np.ndarray:
    """The scores with the chain an LLM picks among the best ``n`` lifted above all.

    The chains are written as :func:`template_text` (anchor by name) in the prompt
    :data:`kgpath.prompts.pcr.CHAIN_CHOICE_PROMPT`; the reply's first number in 1..n picks
    one (its score becomes the best plus 1). A reply without one changes nothing (logged).
    """
    import logging

    from kgpath.llm import call_llm
    from kgpath.prompts.pcr import CHAIN_CHOICE_PROMPT

    top = [int(i) for i in best_templates(tscores) if templates[int(i)].steps][:n]
    if len(top) < 2:
        return tscores
    lines = [f"{j}. {template_text(templates[i].steps, graph.node_at(templates[i].anchor).name)}"
             for j, i in enumerate(top, 1)]
    reply = call_llm(llm, CHAIN_CHOICE_PROMPT.format(query=query, chains="\n".join(lines),
                                                     num_chains=len(top)),
                     step="PCR chain choice")
    m = re.search(r"\d+", reply)
    if m is None or not 1 <= int(m.group()) <= len(top):
        logging.getLogger(__name__).info("PCR chain choice: no chain number in %r", reply[:80])
        return tscores
    out = np.asarray(tscores, np.float32).copy()
    out[top[int(m.group()) - 1]] = float(out.max()) + 1.0
    return out


def template_hits(b: Any, anchors: Sequence[int], query: str, qv: np.ndarray,
                  cfg: Any, *, llm: Any = None, llm_chains: int = 10,
                  ) -> tuple[list[Any], int]:
    """``score="template"``: the top-``cfg.k`` hits and the number of templates scored.

    ``b`` is a backend with the :class:`~kgpath.backends.base.InProcessGraph` capability
    (its graph's CSR arrays are walked) and :class:`~kgpath.backends.base.VectorSearch`.
    ``cfg.template_scorer`` chooses the chain scorer: ``"aligned"``
    (:mod:`kgpath.methods.pcr.chainmatch`, chains enumerated by :func:`beam_templates`)
    or ``"text"`` (the whole chain as one text; the texts name the anchor unless
    ``cfg.path_text == "relations"``). With ``llm``, the LLM picks among the best
    ``llm_chains`` chains (:func:`llm_choice`).
    """
    from kgpath.methods.pcr.result import PCRHit
    from kgpath.methods.pcr.search import node_scores

    graph: KnowledgeGraph = b.capability(InProcessGraph).graph
    score = _aligned_scores if cfg.template_scorer == "aligned" else _text_scores
    templates, tscores = score(b, anchors, query, qv, cfg)
    if llm is not None:
        tscores = llm_choice(llm, query, graph, templates, tscores, llm_chains)
    exclude = set() if cfg.include_anchor else {int(a) for a in anchors}
    ranked = rank_by_templates(templates, tscores,
                               lambda idx: node_scores(b, query, qv, idx, cfg), cfg.k,
                               exclude=exclude)
    hits = []
    for v, ti, ns in ranked:
        ids, edges = template_walk(graph, templates[ti], v)
        hits.append(PCRHit(node=graph.node_at(v), score=float(tscores[ti]),
                           hops=len(edges), path=ids, edges=edges, node_score=ns,
                           path_score=float(tscores[ti])))
    return hits, len(templates)
