"""Per-question latency of PathRAG and C2RAG (LLM-free) once the index is built (issue 14).

Graph: ``kgpath.ingest.graph_from_documents`` over the HotpotQA-100 corpus (994 passages, a
passage is ``"<title>. <sentences joined>"``, spaCy offline extraction), node vectors from
the bundled :class:`~kgpath.embeddings.LocalEmbedder`. The graph and its vectors are cached
with ``graph.save`` in ``--cache`` (default ``/work/.cache-speed2/hotpotqa100-kg``); the first
build takes minutes. Passage vectors (C2RAG's textual recovery) and both retrievers are built
before the clock starts: one warm-up question per method.

Printed per method: p50 / p95 / mean milliseconds per question over the first ``--n``
questions (default 50) and the ratio of p50 to one query embedding (``embed_queries`` of one
question, p50 over the same questions, measured in the same run). Target (issue 14): PathRAG
and C2RAG ≤ 200 ms per question.

Measured (busy 2-core machine; 9,611 nodes, 25,404 edges, 1,047 passages; p50 / p95 ms):

=========  =====================  ======================
method     before (main)          after (issue 14)
=========  =====================  ======================
embedding  78.7                   25.5 (machine load differs between runs)
PathRAG    164 / 320  (2.1×)      81 / 116  (3.2×)
C2RAG      4,116 / 7,319 (52×)    211 / 330 (8.3×)
=========  =====================  ======================

C2RAG's time went to its default reranker re-embedding the passages it reranks (Eq. 12)
and triple texts (Eq. 6) every question; now scored from the shared passage vectors and a
memo, with one batched query embedding per hop. What remains is query embeddings (about
5 per question, one per constraint for relations + rerank query and one for Eq. 11).

Run: ``OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_query_latency.py
[--n 50] [--cache DIR] [--profile pathrag|c2rag] [--json FILE]``.
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--profile", choices=("pathrag", "c2rag"))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
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
