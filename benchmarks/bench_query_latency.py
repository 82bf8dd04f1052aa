"""Per-question latency of every KG method, bounded tail included (issues 14 and 25).

``--graph metaqa`` (default, issue 25): a **16k-node MetaQA KB subgraph** around the dev
anchors, hubs included. Nodes: the dev questions' anchors, their neighbours, and the
neighbours of those of degree ≤ ``--cap`` (30; the genre, language and year hubs enter as
neighbours of the anchors' films, with every edge to the films kept: "Drama" has ~2,000
edges in it). All KB triples between those nodes. Node vectors: the bundled
:class:`~kgpath.embeddings.LocalEmbedder`'s vectors of the names through the embedding
cache (``$KGPATH_CACHE_DIR``; cold, about 5 minutes for 16k names). Questions: the first
``--n`` (20) reachable dev questions of each hop count whose anchor is in the subgraph,
plus two **hub questions** (anchor "Drama", "English"; 3 hops, both directions: the
enumeration that took 103 s on a 16k-node graph before issue 25), run through
:func:`kgpath.eval.kg_metaqa.metaqa_runner` (anchor given, ``max_depth`` = hop count).
Query embeddings are real (the bundled model, no cache: a question is new in use); texts
embedded for passages go through the cache, counted, and a method's *cold set-up* (a new
graph object, its retriever built, one question answered: every lazy structure) is
printed with the texts it embedded and their cold cost estimated from a timed sample of
64 names (the bundled model's passages per second, same run).

Targets (issue 25): every method ≤ 200 ms per question at p50 and ≤ 1 s at the slowest
question; cold set-up ≤ one embedding pass of what it embeds.

``--graph hotpotqa`` (issue 14): PathRAG and C2RAG on the offline HotpotQA-100 document
graph (9,557 nodes; cached in ``--cache``), p50 / p95 / mean over ``--n`` (50) questions.

Measured (busy 2-core machine, 6 helpers running; ms per question):

Issue 25 (16,179 nodes, 65,674 edges; p50 / p95 / max of 60 dev questions, then the slowest
hub question; one query embedding 16.7 ms before, 25.2 ms after: load differs):

=================  ===========================  ========================
method             before (main)                after (issue 25)
=================  ===========================  ========================
PCR template       24 / 42 / 46, hub 54 (text)  67 / 100 / 131, hub 118
PCR template text  (the scorer above)           36 / 70 / 76, hub 92
PathRAG            171 / 233 / 326, hub 709     235 / 389 / 520, hub 515
C2RAG              20 / 41 / 70, hub 85         20 / 38 / 40, hub 49
=================  ===========================  ========================

At the end of issue 25 (defaults = the passage configurations, PCR/C2RAG passages re-ranked
by propagation; PathRAG's DFS filtered to neighbours within reach of a target), one run,
one query embedding 23.9 ms: PCR 28 / 38 / 144, hub 34; PCR template 54 / 82 / 100, hub 90;
template text 26 / 47 / 49, hub 60; walk 24 / 45 / 53, hub 37; **PathRAG 107 / 481 / 599,
hub 321** (cold set-up 0.57 s, no text embedded); C2RAG 23 / 40 / 98, hub 42: every method
within 200 ms at p50 and 1 s at the slowest question.

(all methods and the cold set-up: ``benchmarks/README.md``).

Issue 14 (9,611 nodes, 25,404 edges, 1,047 passages; p50 / p95 ms):

=========  =====================  ======================
method     before (main)          after (issue 14)
=========  =====================  ======================
embedding  78.7                   25.5 (machine load differs between runs)
PathRAG    164 / 320  (2.1×)      81 / 116  (3.2×)
C2RAG      4,116 / 7,319 (52×)    211 / 330 (8.3×)
=========  =====================  ======================

Run: ``OMP_WAIT_POLICY=PASSIVE KGPATH_CACHE_DIR=... .venv/bin/python
benchmarks/bench_query_latency.py [--graph metaqa|hotpotqa] [--n N] [--methods a,b]
[--cache DIR] [--profile pathrag|c2rag] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from kgpath import KnowledgeGraph
from kgpath.embeddings import LocalEmbedder
from kgpath.index import GraphIndex
from kgpath.ingest import graph_from_documents

DATA = Path(os.environ.get("KGPATH_SHARED", "/work/shared")) / "datasets" / "hotpotqa-100"
DEFAULT_CACHE = Path("/work/.cache-speed2/hotpotqa100-kg")


def passages(data_dir: Path) -> list[tuple[str, str]]:
    """``(title, "<title>. <sentences joined>")`` for every corpus entry."""
    corpus = json.loads((data_dir / "corpus.json").read_text(encoding="utf-8"))
    return [(t, f"{t}. {' '.join(s.strip() for s in sents)}") for t, sents in corpus.items()]


def questions(data_dir: Path, n: int) -> list[str]:
    raw = json.loads((data_dir / "questions.json").read_text(encoding="utf-8"))
    return [str(q["question"]) for q in raw[:n]]


def load_or_build(cache: Path, embedder: Any) -> KnowledgeGraph:
    """The cached graph with node vectors, or build, embed and save it (minutes)."""
    if cache.exists():
        try:
            g = KnowledgeGraph.load(cache)
            if not g.vectors.missing():
                return g
        except Exception as exc:  # noqa: BLE001 - rebuild on any stale cache
            print(f"cache unusable ({exc!r}); rebuilding", file=sys.stderr)
    t0 = time.perf_counter()
    g = graph_from_documents(passages(DATA))
    t1 = time.perf_counter()
    GraphIndex(g, embedder).build()
    t2 = time.perf_counter()
    print(f"built graph: {len(g)} nodes, {len(g.passages)} passages; extraction "
          f"{t1 - t0:.0f} s, node embedding {t2 - t1:.0f} s", file=sys.stderr)
    cache.parent.mkdir(parents=True, exist_ok=True)
    g.save(cache)
    return g


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))]


def time_calls(fn: Any, qs: list[str]) -> list[float]:
    out = []
    for q in qs:
        t = time.perf_counter()
        fn(q)
        out.append((time.perf_counter() - t) * 1000)
    return out


def retrievers(index: GraphIndex) -> dict[str, Any]:
    from kgpath.methods.c2rag import ConstraintCheckedRetriever
    from kgpath.methods.pathrag import PathRAGRetriever

    return {"pathrag": PathRAGRetriever(index), "c2rag": ConstraintCheckedRetriever(index)}


METAQA = Path(os.environ.get("KGPATH_SHARED", "/work/shared")) / "datasets" / "metaqa"
HUB_QUESTIONS = (("who directed the films whose actors also appear in Drama films", "Drama"),
                 ("which genres are the films of the writers of English films", "English"))
"""Hub-anchored questions (3 hops, both directions): timed, not scored."""
METHODS = ("pcr", "pcr_template", "pcr_template_text", "walk", "pathrag", "c2rag")


class Counting:
    """An embedder: queries by ``query`` (uncached), passages by ``passage`` (counted)."""

    def __init__(self, query: Any, passage: Any) -> None:
        self.query, self.passage = query, passage
        self.texts = 0

    @property
    def dim(self) -> int:
        return int(self.passage.dim)

    def __repr__(self) -> str:
        return f"Counting({self.passage!r})"

    def embed_queries(self, texts: Any) -> Any:
        return self.query.embed_queries(texts)

    def embed_passages(self, texts: Any) -> Any:
        self.texts += len(texts)
        return self.passage.embed_passages(texts)

    async def aembed_queries(self, texts: Any) -> Any:
        return self.embed_queries(texts)

    async def aembed_passages(self, texts: Any) -> Any:
        return self.embed_passages(texts)


def metaqa_subgraph(cap: int) -> tuple[list[tuple[str, str, str]], list[Any]]:
    """The module docstring's subgraph triples and the dev questions (all hops)."""
    from collections import defaultdict

    from kgpath.eval.kg_metaqa import load_metaqa

    raw = (METAQA / "kb.txt").read_text(encoding="utf-8").splitlines()
    trip = [tuple(x.split("|", 2)) for x in raw if x.count("|") >= 2]
    adj: dict[str, set[str]] = defaultdict(set)
    for h, _, t in trip:
        adj[h].add(t)
        adj[t].add(h)
    qs = load_metaqa(METAQA)
    near = {q.anchor for q in qs if q.anchor in adj}
    near |= {m for a in list(near) for m in adj[a]}
    keep = near | {m for a in near if len(adj[a]) <= cap for m in adj[a]}
    return [t for t in trip if t[0] in keep and t[2] in keep], qs  # type: ignore[misc]


def metaqa_graph16k(cap: int, cached: Any) -> tuple[list[Any], Any]:
    """``(triples, node vectors by id)``: the subgraph and its name vectors (cached)."""
    triples, _ = metaqa_subgraph(cap)
    g = KnowledgeGraph.from_triples(triples)
    names = [n.name for n in g.nodes]
    vecs = cached.embed_passages(names)
    return triples, vecs


def sample_rate(embedder: Any, texts: list[str]) -> float:
    """Seconds per passage text of the bundled model (a timed sample, uncached)."""
    t = time.perf_counter()
    embedder.embed_passages(texts)
    return (time.perf_counter() - t) / max(1, len(texts))


def run_metaqa(args: argparse.Namespace) -> dict[str, Any]:
    """Time every method on the 16k subgraph; print the table; return the report."""
    from kgpath.embed_cache import CachedEmbedder, default_cache_dir
    from kgpath.eval import kg_metaqa as km

    local = LocalEmbedder(show_progress=False)
    cached = CachedEmbedder(local, default_cache_dir())
    triples, vecs = metaqa_graph16k(args.cap, cached)
    g0 = KnowledgeGraph.from_triples(triples)
    _, allq = metaqa_subgraph(args.cap)
    qs = [q for h in (1, 2, 3) for q in [x for x in allq if x.hops == h and x.reachable
                                         and x.anchor in g0][:args.n]]
    qs += [km.MetaQAQuestion(f"hub-{a}", t, a, (), 3, True) for t, a in HUB_QUESTIONS]
    hub = {q.id for q in qs if q.id.startswith("hub-")}
    both = g0.degree("both")
    deg = {a: int(both[g0.index_of(a)]) for _, a in HUB_QUESTIONS}
    per_text = sample_rate(local, [n.name for n in g0.nodes][:64])
    emb_ms = time_calls(lambda q: local.embed_queries([q]), [q.text for q in qs[:20]])
    print(f"graph: MetaQA subgraph, {g0.num_nodes} nodes, {g0.num_edges} edges (cap "
          f"{args.cap}); {len(qs)} questions "
          f"({len(hub)} hub, degree {deg}); one query embedding p50 "
          f"{statistics.median(emb_ms):.1f} ms; "
          f"bundled model {1e3 * per_text:.1f} ms per name")
    report: dict[str, Any] = {"nodes": g0.num_nodes, "edges": g0.num_edges,
                              "query_embedding_ms_p50": statistics.median(emb_ms)}
    rows = []
    for name in args.methods.split(","):
        g = KnowledgeGraph.from_triples(triples)  # a new graph: nothing cached for it
        g.vectors.set(np.asarray(vecs, np.float32))
        emb = Counting(local, cached)
        t0 = time.perf_counter()
        runner = getattr(km, "metaqa_runner", None)
        run = (runner(name, g, GraphIndex(g, emb), emb) if runner
               else _main_runner(km, name, g, emb))  # main before issue 25
        try:
            run(qs[0])
        except Exception as exc:  # noqa: BLE001 - a method the checkout lacks
            print(f"{name}: skipped ({type(exc).__name__}: {exc})")
            continue
        setup, setup_texts = time.perf_counter() - t0, emb.texts
        ms = {q.id: t for q, t in zip(qs, time_calls(run, qs))}
        plain = [t for i, t in ms.items() if i not in hub]
        row = {"p50_ms": statistics.median(plain), "p95_ms": pct(plain, 95),
               "max_ms": max(plain), "hub_ms": max(ms[i] for i in hub), "setup_s": setup,
               "setup_texts": setup_texts, "setup_texts_cold_s": setup_texts * per_text,
               "question_texts": emb.texts - setup_texts}
        report[name] = row
        rows.append([name, f"{row['p50_ms']:.0f}", f"{row['p95_ms']:.0f}",
                     f"{row['max_ms']:.0f}", f"{row['hub_ms']:.0f}",
                     f"{max(row['max_ms'], row['hub_ms']) <= 1000 and row['p50_ms'] <= 200}",
                     f"{setup:.2f}", setup_texts, f"{setup_texts * per_text:.1f}",
                     emb.texts - setup_texts])
    from kgpath._tables import table

    print(table(rows, ["method", "p50 ms", "p95 ms", "max ms", "hub max ms", "≤200/≤1000",
                       "cold set-up s", "set-up texts", "their cold embedding s",
                       "texts in questions"]))
    return report


def _main_runner(km: Any, name: str, g: KnowledgeGraph, emb: Any) -> Any:
    """The runner on a checkout without ``metaqa_runner`` (main before issue 25)."""
    index = GraphIndex(g, emb)
    if name == "pcr":
        return km._pcr(g, index)
    if name == "pcr_template":
        return km._pcr(g, index, score="template", path_text="relations")
    if name == "walk":
        return km._walk(g, emb)
    if name == "c2rag":
        return km._c2rag(g, emb)
    if name == "pathrag":
        return km._native("pathrag", index)
    raise KeyError(name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", choices=("metaqa", "hotpotqa"), default="metaqa")
    ap.add_argument("--cap", type=int, default=30, help="metaqa: degree cap of the 2nd ring")
    ap.add_argument("--methods", default=",".join(METHODS), help="metaqa: comma list")
    ap.add_argument("--n", type=int, default=None,
                    help="questions (metaqa: per hop count, default 20; hotpotqa: 50)")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--profile", choices=("pathrag", "c2rag"))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if args.graph == "metaqa":
        args.n = args.n or 20
        report = run_metaqa(args)
        if args.json:
            args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        return 0
    args.n = args.n or 50
    embedder = LocalEmbedder()
    graph = load_or_build(args.cache, embedder)
    if args.build_only:
        return 0
    index = GraphIndex(graph, embedder).build()
    qs = questions(DATA, args.n)
    rets = retrievers(index)
    for r in rets.values():  # warm-up: passage vectors, CSR, BM25, first-call imports
        r.retrieve(qs[0])
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        for q in qs:
            rets[args.profile].retrieve(q)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(35)
        return 0
    emb = time_calls(lambda q: embedder.embed_queries([q]), qs)
    e50 = statistics.median(emb)
    report: dict[str, Any] = {
        "graph": {"nodes": len(graph), "edges": graph.num_edges,
                  "passages": len(graph.passages)},
        "query_embedding_ms_p50": e50,
    }
    print(f"graph: {len(graph)} nodes, {graph.num_edges} edges, {len(graph.passages)} passages")
    print(f"one query embedding: p50 {e50:.1f} ms")
    print(f"{'method':10s} {'p50 ms':>8s} {'p95 ms':>8s} {'mean ms':>8s} {'p50/embed':>10s}")
    for name, r in rets.items():
        ts = time_calls(r.retrieve, qs)
        row = {"p50_ms": statistics.median(ts), "p95_ms": pct(ts, 95),
               "mean_ms": statistics.fmean(ts)}
        row["ratio_to_embed"] = row["p50_ms"] / e50
        report[name] = row
        print(f"{name:10s} {row['p50_ms']:8.1f} {row['p95_ms']:8.1f} {row['mean_ms']:8.1f} "
              f"{row['ratio_to_embed']:10.1f}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
