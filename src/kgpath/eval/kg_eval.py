"""``kgpath eval kg``: every method on an offline document graph or a knowledge base.

``--data`` with ``questions.json`` + ``corpus.json`` (HotpotQA layout): the graph is built
with ``kgpath.ingest.graph_from_documents`` (offline spaCy extractor) and the passages embedded
once (:func:`kgpath.index.graph_vectors.embed_graph`), both cached under ``--cache-dir``; passage
R@2/R@5 of dense, BM25 and every registered method whose spec lists ``"hotpotqa"`` (PCR,
PathRAG, C2RAG LLM-free, the traversal default, the graph-augmented retriever) are printed
(protocol: :mod:`kgpath.eval.kg_hotpot`). ``--triples FILE`` evaluates a supplied graph
instead (e.g. LLM-extracted; JSON Lines format in :mod:`kgpath.eval.kg_triples`), same
passages and vectors.
``--vectors`` also compares the node vectors (passage mean vs embedded node texts): the
seconds each costs and PCR's recall with each.

``--data`` with ``kb.txt`` + ``dev_<n>hop.jsonl`` (MetaQA layout): answer Hits@1/Hits@10
per method (every registered method whose spec lists ``"metaqa"``, with variants, and a
walk baseline) and hop count on the reachable questions, anchor given
(:mod:`kgpath.eval.kg_metaqa`). ``--methods`` takes any registered method name too.

``--json FILE`` writes ``{"dataset", "methods": {name: {metric: value}}}`` (keys ``R@2``,
``R@5``, or ``Hits@1``, ``Hits@10`` per hop as ``"<h>hop"`` sub-dicts plus the overall
values and ``p50_ms``, ``p95_ms``, ``max_ms``). Both tables give each method's
milliseconds per question: p50, p95 and the slowest question (:func:`latency`; MetaQA:
per hop count and over all questions, and ``set-up s``: building the method and one
untimed warm-up question, which pays any lazy set-up). ``--halves`` prints questions
``0..n/2-1`` and ``n/2..n-1`` separately (the
graph-augmented constants were chosen on the first half only); on MetaQA, each hop's
reachable questions in file order, the first half taking the odd one.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kgpath._tables import table
from kgpath.embeddings import Embedder, embedder_by_name

__all__ = ["latency", "main", "percentiles", "run_hotpotqa", "run_metaqa"]


def _say(msg: str) -> None:
    print(msg, flush=True)


LATENCY_HEADERS = ["p50 ms", "p95 ms", "max ms"]


def percentiles(ms: Sequence[float]) -> tuple[float, float, float] | None:
    """``(p50, p95, max)`` of per-question milliseconds (``None`` when there are none).

    Nearest-rank percentiles (the smallest value with at least p % of the questions at
    or below it), so each is a time some question took.

    Examples
    --------
    >>> percentiles([10.0, 30.0, 20.0, 400.0])
    (20.0, 400.0, 400.0)
    """
    if not len(ms):
        return None
    xs = sorted(float(x) for x in ms)

    def rank(p: float) -> float:
        return xs[max(0, math.ceil(p / 100 * len(xs)) - 1)]
    return rank(50), rank(95), xs[-1]


def latency(ms: Sequence[float]) -> list[str]:
    """:func:`percentiles` as table cells: whole milliseconds, one decimal below 10.

    Examples
    --------
    >>> latency([10.0, 30.0, 20.0, 400.0])
    ['20', '400', '400']
    >>> latency([0.25, 3.0])
    ['0.2', '3.0', '3.0']
    >>> latency([])
    ['-', '-', '-']
    """
    p = percentiles(ms)
    return ["-"] * 3 if p is None else [f"{x:.1f}" if x < 10 else f"{x:.0f}" for x in p]


def run_hotpotqa(args: argparse.Namespace, embedder: Embedder) -> dict[str, Any]:
    """Evaluate the passage methods; print the table(s); return the JSON document."""
    from kgpath.eval.hotpotqa import load_hotpotqa
    from kgpath.eval.kg_build import hotpotqa_graph
    from kgpath.eval.kg_hotpot import evaluate_passages, passage_methods

    data = load_hotpotqa(args.data, limit=args.limit)
    t0 = time.perf_counter()
    if getattr(args, "triples", None):  # a supplied graph (kgpath.eval.kg_triples)
        from kgpath.eval.kg_triples import triples_graph

        built = triples_graph(data, embedder, args.triples, cache_dir=args.cache_dir)
    else:
        built = hotpotqa_graph(data, embedder, cache_dir=args.cache_dir)
    st = built.stats
    _say(f"document graph: {st.get('passages')} passages, {st.get('nodes')} nodes, "
         f"{st.get('edges')} edges (loaded/built in {time.perf_counter() - t0:.1f}s; build: "
         f"extract {st.get('extract_s', 0):.1f}s, embed passages "
         f"{st.get('embed_passages_s', 0):.1f}s, node vectors {st.get('node_vectors_s', 0):.2f}s)")
    methods = args.methods.split(",") if args.methods else list(passage_methods())
    scores = evaluate_passages(data, built, embedder, methods, progress=_say)
    n = len(data.questions)
    rows = [[m, *(f"{v:.1f}" for v in s.metrics().values()), f"{1e3 * s.seconds / n:.0f}",
             *latency(getattr(s, "ms", ())), s.errors] for m, s in scores.items()]
    _say("\n" + table(rows, ["method", "R@2", "R@5", "ms/q", *LATENCY_HEADERS, "errors"]))
    if args.halves:
        h = n // 2
        rows = [[m, *s.metrics(0, h).values(), *s.metrics(h, n).values()]
                for m, s in scores.items()]
        _say("\n" + table(rows, ["method", f"R@2 q0-{h - 1}", f"R@5 q0-{h - 1}",
                                 f"R@2 q{h}-{n - 1}", f"R@5 q{h}-{n - 1}"]))
    if args.vectors:
        _vectors_report(data, built, embedder)
    return {"dataset": Path(args.data).name,
            "methods": {m: s.metrics() for m, s in scores.items()}}


def _vectors_report(data: Any, built: Any, embedder: Embedder) -> None:
    """Passage-mean vs node-text vectors: cost, and PCR recall with each."""
    import numpy as np

    from kgpath.eval.kg_build import node_text_vectors
    from kgpath.eval.kg_hotpot import evaluate_passages

    mean = built.graph.vectors.matrix.copy()
    text, secs = node_text_vectors(built, embedder)
    st = built.stats
    _say(f"\nnode vectors: passage mean {st.get('node_vectors_s', 0):.2f}s vs node texts "
         f"{secs:.1f}s ({built.graph.num_nodes} texts); embedding the passages once took "
         f"{st.get('embed_passages_s', 0):.1f}s")
    res = {"passage_mean": evaluate_passages(data, built, embedder, ["pcr"])["pcr"]}
    built.graph.vectors.set(np.asarray(text, np.float32))
    try:
        res["node_text"] = evaluate_passages(data, built, embedder, ["pcr"])["pcr"]
    finally:
        built.graph.vectors.set(mean)
    for k, s in res.items():
        _say(f"PCR with {k} node vectors: {s.metrics()}")


def run_metaqa(args: argparse.Namespace, embedder: Embedder) -> dict[str, Any]:
    """Evaluate the KG methods on MetaQA; print per hop; return the JSON document."""
    from kgpath.eval.kg_metaqa import evaluate_metaqa, kg_methods, load_metaqa, metaqa_graph

    qs = load_metaqa(args.data, limit=args.limit)
    t0 = time.perf_counter()
    g = metaqa_graph(args.data, embedder, cache_dir=args.cache_dir)
    _say(f"KB graph: {g.num_nodes} nodes, {g.num_edges} edges "
         f"({time.perf_counter() - t0:.1f}s); "
         f"{sum(q.reachable for q in qs)} reachable of {len(qs)} questions")
    methods = args.methods.split(",") if args.methods else list(kg_methods())
    scores = evaluate_metaqa(qs, g, embedder, methods, progress=_say)
    rows = []
    for m, s in scores.items():
        for h in (1, 2, 3):
            r = s.metrics(h)
            ms = [t for t, hh in zip(s.ms, s.hops) if hh == h]
            rows.append([m, f"{h}-hop", r["n"], r["Hits@1"], r["Hits@10"], *latency(ms), ""])
        r = s.metrics()
        rows.append([m, "all", r["n"], r["Hits@1"], r["Hits@10"], *latency(s.ms),
                     f"{s.setup_s:.1f}"])
    _say("\n" + table(rows, ["method", "hops", "n", "Hits@1", "Hits@10", *LATENCY_HEADERS,
                              "set-up s"]))
    if args.halves:
        rows = [[m, f"{h}-hop", *(s.metrics(h, half)[k] for half in (0, 1)
                                  for k in ("Hits@1", "Hits@10"))]
                for m, s in scores.items() for h in (1, 2, 3)]
        _say("\n" + table(rows, ["method", "hops", "H@1 1st half", "H@10 1st half",
                                  "H@1 2nd half", "H@10 2nd half"]))
    doc: dict[str, Any] = {}
    for m, s in scores.items():
        d: dict[str, Any] = {k: v for k, v in s.metrics().items() if k != "n"}
        d.update({f"{h}hop": s.metrics(h) for h in (1, 2, 3)})
        d.update(zip(("p50_ms", "p95_ms", "max_ms"), percentiles(s.ms) or ()))
        doc[m] = d
    return {"dataset": Path(args.data).name, "methods": doc}


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``kgpath eval kg``."""
    p = argparse.ArgumentParser(prog="kgpath eval kg", description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="HotpotQA- or MetaQA-layout folder")
    p.add_argument("--embedder", default="local", choices=["local", "hashing"])
    p.add_argument("--cache-dir", default=".kgpath-cache",
                   help="graph and vector cache (default .kgpath-cache)")
    p.add_argument("--limit", type=int, default=None,
                   help="first N questions (MetaQA: per hop count)")
    p.add_argument("--methods", default=None, help="comma list (default: all)")
    p.add_argument("--json", default=None, help="write the metrics to this file")
    p.add_argument("--halves", action="store_true", help="also print each half of the questions")
    p.add_argument("--vectors", action="store_true",
                   help="HotpotQA: compare passage-mean and node-text node vectors")
    p.add_argument("--triples", default=None,
                   help="HotpotQA layout: the graph from this JSON Lines triple file instead "
                        "of the offline extractor (format: kgpath.eval.kg_triples)")
    p.add_argument("--no-cache", action="store_true",
                   help="no embedding cache (default: kgpath.embed_cache.default_cache_dir())")
    args = p.parse_args(argv)
    embedder = embedder_by_name(args.embedder)
    if not args.no_cache:  # on by default for the command line
        from kgpath.embed_cache import CachedEmbedder, default_cache_dir

        embedder = CachedEmbedder(embedder, default_cache_dir())
    d = Path(args.data)
    if (d / "kb.txt").is_file():
        doc = run_metaqa(args, embedder)
    else:
        doc = run_hotpotqa(args, embedder)
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return 0
