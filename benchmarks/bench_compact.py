"""Memory and recall of the compact vector store (issue 14): 10^6 nodes, 5·10^6 edges, 384-d.

The graph comes from ``KnowledgeGraph.from_arrays`` (random edges) WITHOUT vectors on it;
the node vectors are random unit vectors from :class:`SeededEmbedder` (node ``"n<i>"`` →
a unit vector seeded by ``i``, so any row can be recomputed exactly in float32). Each mode
in ``--kinds`` builds ``GraphIndex(graph, embedder, vectors=kind)`` (the index embeds in
chunks and keeps only the encoded rows), then runs PCR (``max_depth=--depth``, k = 10) for
``--queries`` random query vectors from random anchors. The float32 reference is PCR's own
definition computed exactly: the same reachable set (Eq. 1), cosines from vectors
recomputed in float32 for just those candidates (Eq. 2), top 10, ties by node index, so no
float32 matrix of the graph ever exists in this process.

Printed per mode: RSS (current, from /proc) after the graph, after the index and after the
queries; the store's own bytes; PCR recall@10 against the float32 reference. One graph in
memory at a time; the modes run one after the other on it, each index dropped before the
next. Peak RSS (``ru_maxrss``) is printed at the end.

Measured (2-core machine shared with other jobs): graph without vectors 1,869 MB RSS (its
Python Node/Edge objects); float16 store 732 MB (RSS +747 MB, total 2,661 MB), recall@10
1.000; int8 store 370 MB (RSS +394 MB, total 2,308 MB), recall@10 0.989; float32 would add
1,465 MB in the graph plus FAISS's own copy. The ≤ 1 GB total of issue 14 needs a compact
graph (edges as arrays) as well: the vectors alone are now within budget.

Run: ``OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_compact.py
[--nodes 1000000 --edges 5000000 --kinds float16,int8 --json FILE]`` (minutes: building
10^6 Python nodes and 5·10^6 edges dominates).
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from kgpath import BaseEmbedder, KnowledgeGraph
from kgpath.index import GraphIndex
from kgpath.index.vector import top_k
from kgpath.methods.pcr import PathConstrainedRetriever, reachable_candidates

DIM = 384
K = 10


class SeededEmbedder(BaseEmbedder):
    """``"n<i>"`` → unit vector from ``default_rng(i)``; ``"q<j>"`` from ``default_rng(-j)``."""

    def __init__(self, dim: int = DIM) -> None:
        self._dim = dim
        self.batch_size = 8192
        self.show_progress = False

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        for r, t in enumerate(texts):
            seed = int(t[1:]) if t[0] == "n" else 2**40 + int(t[1:])
            out[r] = np.random.default_rng(seed).standard_normal(self._dim, dtype=np.float32)
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def build_graph(n: int, m: int, seed: int = 0) -> KnowledgeGraph:
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    g = KnowledgeGraph.from_arrays([f"n{i}" for i in range(n)], src, dst)
    del src, dst
    g.csr()
    return g


def reference_top(g: KnowledgeGraph, emb: SeededEmbedder, qv: np.ndarray, anchor: int,
                  depth: int) -> tuple[list[str], int]:
    """Eq. (1)-(2) in exact float32: reachable set, recomputed vectors, top 10."""
    cand = reachable_candidates(g, anchor, max_depth=depth).nodes.astype(np.int64)
    cand = np.sort(cand)  # ties by node index, as GraphIndex/top_k
    vecs = emb.embed_passages([g.node_at(int(i)).search_text for i in cand])
    pos = top_k(vecs @ qv, min(K, cand.size))
    return [g.node_at(int(cand[p])).id for p in pos], int(cand.size)


def run_mode(g: KnowledgeGraph, emb: SeededEmbedder, kind: str, queries: int,
             depth: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    index = GraphIndex(g, emb, vectors=kind).build()
    built = time.perf_counter() - t0
    row: dict[str, Any] = {"kind": kind, "build_s": built, "rss_index_mb": rss_mb(),
                           "store_mb": getattr(index.vector_index, "nbytes", 0) / 2**20}
    pcr = PathConstrainedRetriever(index)
    rng = np.random.default_rng(7)
    recalls, sizes, lat = [], [], []
    for j in range(queries):
        qv = emb.embed_queries([f"q{j}"])[0]
        anchor = int(rng.integers(0, len(g)))
        ref, size = reference_top(g, emb, qv, anchor, depth)
        t = time.perf_counter()
        got = pcr.retrieve_by_vector(qv, anchor=g.node_at(anchor).id, k=K, max_depth=depth)
        lat.append(time.perf_counter() - t)
        recalls.append(len(set(got.ids) & set(ref)) / max(1, len(ref)))
        sizes.append(size)
    row.update(recall_at_10=float(np.mean(recalls)), mean_candidates=float(np.mean(sizes)),
               pcr_ms_p50=float(np.median(lat) * 1000), rss_after_queries_mb=rss_mb(),
               graph_has_vectors=g.embedding_dim is not None)
    del pcr, index
    gc.collect()
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--edges", type=int, default=5_000_000)
    ap.add_argument("--kinds", default="float16,int8")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    report: dict[str, Any] = {"nodes": args.nodes, "edges": args.edges, "dim": DIM,
                              "rss_start_mb": rss_mb()}
    t0 = time.perf_counter()
    g = build_graph(args.nodes, args.edges)
    report.update(graph_build_s=time.perf_counter() - t0, rss_graph_mb=rss_mb())
    print(f"graph {len(g)} nodes {g.num_edges} edges: RSS {report['rss_graph_mb']:.0f} MB "
          f"(start {report['rss_start_mb']:.0f} MB), built in {report['graph_build_s']:.0f} s",
          flush=True)
    emb = SeededEmbedder()
    report["modes"] = []
    print(f"{'vectors':8s} {'store MB':>9s} {'RSS index':>10s} {'index-graph':>12s} "
          f"{'recall@10':>10s} {'cands':>7s} {'PCR ms':>7s}", flush=True)
    for kind in args.kinds.split(","):
        row = run_mode(g, emb, kind, args.queries, args.depth)
        row["index_over_graph_mb"] = row["rss_index_mb"] - report["rss_graph_mb"]
        report["modes"].append(row)
        print(f"{kind:8s} {row['store_mb']:9.0f} {row['rss_index_mb']:10.0f} "
              f"{row['index_over_graph_mb']:12.0f} {row['recall_at_10']:10.4f} "
              f"{row['mean_candidates']:7.0f} {row['pcr_ms_p50']:7.1f}", flush=True)
    report["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {report['peak_rss_mb']:.0f} MB; graph without vectors "
          f"{report['rss_graph_mb'] - report['rss_start_mb']:.0f} MB of it")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
