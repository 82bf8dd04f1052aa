"""``kgpath eval kg`` on MetaQA-format data: answer Hits@1/@10, anchor given.

Protocol
--------
The KB (``kb.txt``, ``head|relation|tail``) becomes a :class:`KnowledgeGraph` (node id =
entity name); node vectors are the embedder's vectors of the entity names, cached in the
cache folder. Only questions with ``answers_reachable`` are scored (as the data's README
asks). The question text has its anchor's brackets removed. Each method returns a ranked
entity list with the anchor removed; Hits@k = the first k entities contain an answer.

* ``pcr``: anchor given, ``direction="both"``, ``max_depth`` = the question's hop count,
  ``include_anchor=False``, native nodes in hit order (Eq. 2: node text similarity only).
* ``pcr_template``: the same with ``score="template"``, ``path_text="relations"`` (kgpath
  extension, :mod:`kgpath.methods.pcr.templates`: nodes ranked by the best relation chain
  reaching them, each end of a chain matched to its part of the question,
  :mod:`kgpath.methods.pcr.chainmatch`). ``pcr_template_text`` (only when named in
  ``methods``): the previous scorer, the whole chain as one text (``template_scorer="text"``).
* ``pathrag``: the facade's native evidence, LLM-free; entities in the order the
  items' ``node_ids``/``node_id`` traces (a triple: its tail, then its head) first name
  them (it does not take the anchor).
* ``c2rag``: LLM-free, the anchor given through an anchored chain plan (one constraint per
  hop, a kgpath extension: ``anchored_plan``); the final ``?answer`` binding first, then
  the entities of the evidence triples (``edge:<index>`` ids).
* ``walk``: a structural baseline, not a paper's method: the entities within ``hops``
  edges of the anchor (undirected), those exactly ``hops`` away (shortest path) first, each
  group ranked by cosine to the question (an answer of a 3-hop walk can be nearer).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kgpath.embeddings import Embedder, normalize_rows
from kgpath.errors import GraphError
from kgpath.graph import KnowledgeGraph

__all__ = ["MetaQAQuestion", "evaluate_metaqa", "kg_methods", "load_metaqa", "metaqa_graph",
           "metaqa_runner"]

VARIANTS: dict[str, tuple[str, ...]] = {"pcr": ("pcr_template",)}
"""Extra runs of a method with other options, listed right after it."""


def kg_methods() -> tuple[str, ...]:
    """The default runs: the registered methods for MetaQA, then the ``walk`` baseline.

    Those whose spec's :attr:`~kgpath.methods.registry.MethodSpec.benchmarks` names
    ``"metaqa"``, in registry order, each followed by its :data:`VARIANTS`.
    """
    from kgpath.methods.registry import method_names, method_spec

    out: list[str] = []
    for m in method_names():
        if "metaqa" in method_spec(m).benchmarks:
            out += [m, *VARIANTS.get(m, ())]
    return (*out, "walk")


@dataclass(frozen=True)
class MetaQAQuestion:
    """One MetaQA question (anchor given)."""

    id: str
    question: str
    anchor: str
    answers: tuple[str, ...]
    hops: int
    reachable: bool

    @property
    def text(self) -> str:
        """The question without the anchor's brackets."""
        return self.question.replace("[", "").replace("]", "")


def load_metaqa(data_dir: str | Path, *, limit: int | None = None) -> list[MetaQAQuestion]:
    """``dev_{1,2,3}hop.jsonl`` of a MetaQA folder (``limit`` per hop count)."""
    d = Path(data_dir)
    out: list[MetaQAQuestion] = []
    for h in (1, 2, 3):
        f = d / f"dev_{h}hop.jsonl"
        if not f.is_file():
            continue
        rows = [json.loads(x) for x in f.read_text(encoding="utf-8").splitlines() if x.strip()]
        out.extend(MetaQAQuestion(str(r["id"]), r["question"], r["anchor"],
                                  tuple(r["answers"]), int(r["hops"]),
                                  bool(r.get("answers_reachable", True)))
                   for r in rows[:limit])
    if not out:
        raise GraphError(f"{d} has no dev_<n>hop.jsonl files")
    return out


def metaqa_graph(data_dir: str | Path, embedder: Embedder,
                 cache_dir: str | Path | None = None) -> KnowledgeGraph:
    """The KB as a graph with entity-name vectors (cached by KB hash and embedder)."""
    kb = Path(data_dir) / "kb.txt"
    raw = kb.read_bytes()
    lines = raw.decode("utf-8").splitlines()
    triples = [tuple(x.split("|", 2)) for x in lines if x.count("|") >= 2]
    g = KnowledgeGraph.from_triples(triples)
    key = hashlib.sha256(raw + repr(embedder).encode()).hexdigest()[:16]
    f = Path(cache_dir) / f"metaqa-{key}.npy" if cache_dir else None
    if f is not None and f.is_file():
        g.vectors.set(np.load(f))
        return g
    mat = normalize_rows(np.asarray(embedder.embed_passages([n.name for n in g.nodes]),
                                    np.float32))
    if f is not None:
        f.parent.mkdir(parents=True, exist_ok=True)
        np.save(f, mat)
    g.vectors.set(mat)
    return g


def _walk(g: KnowledgeGraph, emb: Embedder) -> Callable[[MetaQAQuestion], list[str]]:
    mat = g.vectors.matrix

    def run(q: MetaQAQuestion) -> list[str]:
        res = g.bfs(q.anchor, max_depth=q.hops, direction="both")
        keep = res.dist >= 1
        nodes, dist = res.nodes[keep], res.dist[keep]
        qv = emb.embed_queries([q.text])[0]
        s = mat[nodes] @ qv
        order = np.lexsort((-s, dist != q.hops))[:10]  # exactly `hops` away first
        return [g.node_at(int(nodes[i])).id for i in order]
    return run


def _pcr(g: KnowledgeGraph, index: Any, **opts: Any) -> Callable[[MetaQAQuestion], list[str]]:
    from kgpath.facade import EvidenceRetriever

    r = EvidenceRetriever("pcr", index, k=10, output="native", direction="both",
                          include_anchor=False, **opts)

    def run(q: MetaQAQuestion) -> list[str]:
        return [e.id for e in r.retrieve(q.text, anchor=q.anchor, max_depth=q.hops)]
    return run


def _native(method: str, index: Any) -> Callable[[MetaQAQuestion], list[str]]:
    from kgpath.facade import EvidenceRetriever

    r = EvidenceRetriever(method, index, k=None, output="native")  # Hits@10 needs them all

    def run(q: MetaQAQuestion) -> list[str]:
        out: list[str] = []
        for e in r.retrieve(q.text):
            if e.kind == "triple":  # id "source|relation|target"
                parts = e.id.split("|")
                ids = [parts[-1], parts[0]] if len(parts) >= 3 else [e.id]
            else:
                ids = list(e.trace.get("node_ids") or []) or [e.trace.get("node_id") or e.id]
            out.extend(x for x in ids if x and x != q.anchor)
        return list(dict.fromkeys(out))
    return run


def _c2rag(g: KnowledgeGraph, emb: Embedder) -> Callable[[MetaQAQuestion], list[str]]:
    """C2RAG with the given anchor: :func:`~kgpath.methods.c2rag.fallback.anchored_plan`.

    One constraint per hop from the given anchor (``top_e = 1``: the anchor is given, so
    Eq. 3 keeps only it); entities ranked as the final binding ``E_b(?answer)`` (Eq. 14),
    then the other ends of the evidence triples in the Appendix B order.
    """
    from kgpath.methods.c2rag import C2RAGConfig, ConstraintCheckedRetriever
    from kgpath.methods.c2rag.fallback import anchored_plan

    r = ConstraintCheckedRetriever(g, embedder=emb, config=C2RAGConfig(top_e=1))

    def run(q: MetaQAQuestion) -> list[str]:
        res = r.retrieve(q.text, plan=anchored_plan(q.text, q.anchor, q.hops))
        inner = {n for v, ids in res.bindings.items() if v != "?answer" for n in ids}
        out = list(res.bindings.get("?answer", ()))
        for e in res.evidence(output="native"):
            if e.kind == "triple" and e.id.startswith("edge:"):
                edge = g.edge_at(int(e.id[5:]))
                out.extend(x for x in (edge.target, edge.source) if x not in inner)
        return [x for x in dict.fromkeys(out) if x != q.anchor]
    return run


@dataclass
class HitsScores:
    """Per-question Hits@1/@10 of one method, with the hop count of each question."""

    name: str
    hops: list[int] = field(default_factory=list)
    h1: list[float] = field(default_factory=list)
    h10: list[float] = field(default_factory=list)
    seconds: float = 0.0
    errors: int = 0
    ms: list[float] = field(default_factory=list)
    """Milliseconds of each question (``kgpath eval kg``'s p50 / p95 / max columns)."""
    setup_s: float = 0.0
    """Seconds to build the method and answer one untimed warm-up question."""

    def metrics(self, hops: int | None = None, half: int | None = None) -> dict[str, float]:
        """Hits@1/@10 (percent) and ``n`` over ``hops`` (all when ``None``).

        ``half`` 0 / 1: the first / second half of those questions in file order (the
        first half chooses constants).
        """
        sel = [i for i, h in enumerate(self.hops) if hops is None or h == hops]
        if half is not None:
            cut = (len(sel) + 1) // 2
            sel = sel[:cut] if half == 0 else sel[cut:]
        if not sel:
            return {"Hits@1": float("nan"), "Hits@10": float("nan"), "n": 0}
        return {"Hits@1": round(100 * float(np.mean([self.h1[i] for i in sel])), 1),
                "Hits@10": round(100 * float(np.mean([self.h10[i] for i in sel])), 1),
                "n": len(sel)}


def metaqa_runner(name: str, graph: KnowledgeGraph, index: Any, embedder: Embedder,
                  ) -> Callable[[MetaQAQuestion], list[str]]:
    """The ``question -> ranked entity ids`` callable of one method (module docstring).

    ``index`` is a :class:`~kgpath.index.graph_index.GraphIndex` over ``graph``; a
    registered method without a runner of its own is run on its native items.
    """
    makers = {"pcr": lambda: _pcr(graph, index),
              "pcr_template": lambda: _pcr(graph, index, score="template",
                                           path_text="relations"),
              "pcr_template_text": lambda: _pcr(graph, index, score="template",
                                                path_text="relations", template_scorer="text"),
              "walk": lambda: _walk(graph, embedder),
              "pathrag": lambda: _native("pathrag", index),
              "c2rag": lambda: _c2rag(graph, embedder)}
    return makers[name]() if name in makers else _native(name, index)


def evaluate_metaqa(
    questions: Sequence[MetaQAQuestion], graph: KnowledgeGraph, embedder: Embedder,
    methods: Sequence[str] | None = None, *,
    progress: Callable[[str], None] | None = None,
) -> dict[str, HitsScores]:
    """Hits@1/@10 per method on the reachable questions (default :func:`kg_methods`).

    A registered method without a runner of its own here is scored on its native items
    (their node ids, through the facade).
    """
    methods = kg_methods() if methods is None else methods
    from kgpath.index.graph_index import GraphIndex

    index = GraphIndex(graph, embedder)
    qs = [q for q in questions if q.reachable and q.anchor in graph]
    out: dict[str, HitsScores] = {}
    for name in methods:
        t0 = time.perf_counter()
        run = metaqa_runner(name, graph, index, embedder)
        sc = out[name] = HitsScores(name)
        if qs:  # one untimed warm-up question: lazy set-up is not a question's time
            try:
                run(qs[0])
            except Exception:  # noqa: BLE001 - counted below, when it is timed
                pass
        sc.setup_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for q in qs:
            tq = time.perf_counter()
            try:
                ranked = run(q)
            except Exception:  # noqa: BLE001 - counted, scored as a miss
                sc.errors += 1
                ranked = []
            sc.ms.append(1e3 * (time.perf_counter() - tq))
            gold = set(q.answers)
            sc.hops.append(q.hops)
            sc.h1.append(float(bool(ranked[:1]) and ranked[0] in gold))
            sc.h10.append(float(any(x in gold for x in ranked[:10])))
        sc.seconds = time.perf_counter() - t0
        if progress:
            progress(f"{name}: " + ", ".join(f"{h}-hop {sc.metrics(h)}" for h in (1, 2, 3))
                     + f" ({sc.seconds:.1f}s, {sc.errors} errors)")
    return out
