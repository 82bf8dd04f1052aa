"""PCR latency and graph memory on synthetic graphs, against a straightforward reference.

Graphs: n nodes, 5n uniformly random directed edges (average out-degree ~5), 384-d unit
embeddings. For each size and depth (1, 2, 3, unlimited) we time, over the same anchors and
query vectors:

* kgpath: ``PathConstrainedRetriever.retrieve_by_vector`` (CSR BFS + restricted top-k), i.e.
  the whole retrieval including the result objects, without the embedding model call
  (identical for both sides, so excluded). Hits resolve their shortest path on first read
  (issue 14), so this column is what a caller who reads ids and scores pays;
* kgpath+paths: the same, then every hit's ``path`` read — the same output as reference A
  (top-k ids, scores and shortest paths), so ``A/+paths`` is the like-for-like ratio;
* reference A ("gather"): ``networkx.single_source_shortest_path_length`` (cutoff = depth)
  on a ``DiGraph`` + numpy cosine of the reachable rows only + ``argsort`` +
  ``nx.shortest_path`` for the k winners — a careful direct implementation;
* reference B ("mask"): the same BFS and paths, but cosine of *every* node (one numpy
  mat-vec) masked to the reachable set — the structure of the PCR authors' code (score
  all nodes, then filter to the candidates), written in numpy.

All must return the same node set; the script checks it. Every implementation runs its own
loop over the queries in the same process, so ratios (reference p50 / kgpath p50) compare
like with like even on a loaded machine. Prints p50/p95 in ms, the ratios, and the graph's
memory: CSR arrays (exact bytes), embeddings, and the process RSS growth while building the
graph (Python objects included). ``--json FILE`` writes every cell (p50/p95 in ms, ratios).

Usage: ``python benchmarks/bench_pcr.py [--sizes 1000,10000,100000,1000000] [--queries 200]
[--depths 1,2,3,inf] [--json FILE]``

Target (issue 14): >= 3x reference A at depth 1-3 on 10^5 nodes. At depth <= 2 reference A
is already the minimal work (a Python dict BFS over ~6-30 nodes, a gather-and-dot of those
rows, k shortest paths): a few tens of microseconds in which kgpath's API layer (anchor
resolution, validated scoring, the result and its trace) is itself a large share; see
benchmarks/README.md for the profile.
"""

from __future__ import annotations

import argparse
import gc
import json
import time

import numpy as np


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000, p))


def build(n: int, seed: int = 0, dim: int = 384):  # type: ignore[no-untyped-def]
    from kgpath import KnowledgeGraph

    rng = np.random.default_rng(seed)
    m = 5 * n
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    emb = rng.standard_normal((n, dim), dtype=np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    gc.collect()
    before = _rss_mb()
    t0 = time.perf_counter()
    g = KnowledgeGraph.from_arrays([f"n{i}" for i in range(n)], src, dst, embeddings=emb)
    csr = g.csr()
    build_s = time.perf_counter() - t0
    rss = _rss_mb() - before
    csr_bytes = sum(a.nbytes for a in csr.values())
    return g, src, dst, emb, build_s, rss, csr_bytes


def _time_kgpath(pcr, anchors, qvecs, depth, read_paths: bool):  # type: ignore[no-untyped-def]
    """kgpath per query: (seconds, reachable counts, (hit id set, #hits) per query)."""
    times, reach, sets = [], [], []
    for j in range(len(anchors)):
        t0 = time.perf_counter()
        res = pcr.retrieve_by_vector(qvecs[j], anchor=f"n{int(anchors[j])}", max_depth=depth)
        if read_paths:
            for h in res.hits:
                h.path  # noqa: B018 - materialise, as reference A builds its paths
        times.append(time.perf_counter() - t0)
        reach.append(res.reachable_count)
        sets.append(({int(h.id[1:]) for h in res.hits}, len(res.hits)))
    return times, reach, sets


def _time_reference(G, emb, anchors, qvecs, depth, k, mask: bool):  # type: ignore[no-untyped-def]
    """Reference A (gather, ``mask=False``) or B (mask): (seconds, result sets)."""
    import networkx as nx

    times, sets = [], []
    n = emb.shape[0]
    for j in range(len(anchors)):
        a, q = int(anchors[j]), qvecs[j]
        t0 = time.perf_counter()
        lengths = nx.single_source_shortest_path_length(G, a, cutoff=depth)
        cand = np.fromiter(lengths.keys(), dtype=np.int64, count=len(lengths))
        if mask:
            masked = np.full(n, -np.inf, dtype=np.float32)
            masked[cand] = (emb @ q)[cand]
            top = np.argsort(-masked, kind="stable")[: min(k, cand.size)]
        else:
            scores = emb[cand] @ q
            top = cand[np.argsort(-scores, kind="stable")[:k]]
        paths = [nx.shortest_path(G, a, int(t)) for t in top]
        times.append(time.perf_counter() - t0)
        sets.append((set(top.tolist()), len(paths)))
    return times, sets


HEADER = (f"{'nodes':>8} {'depth':>6} {'reach':>7} {'kgpath p50':>11} {'p95':>8} "
          f"{'+paths p50':>11} {'refA p50':>9} {'p95':>8} {'refB p50':>9} "
          f"{'A/ours':>7} {'A/+paths':>8} {'B/ours':>7}")


def _cell(n, depth, pcr, G, emb, anchors, qvecs, k):  # type: ignore[no-untyped-def]
    """One (size, depth) cell: every implementation in its own loop, results checked equal."""
    nref = len(anchors) if n <= 100_000 else max(20, len(anchors) // 10)
    ours, reach, ours_sets = _time_kgpath(pcr, anchors, qvecs, depth, read_paths=False)
    withp, _, _ = _time_kgpath(pcr, anchors, qvecs, depth, read_paths=True)
    ref_a, sets_a = _time_reference(G, emb, anchors[:nref], qvecs, depth, k, mask=False)
    ref_b, sets_b = _time_reference(G, emb, anchors[:nref], qvecs, depth, k, mask=True)
    if sets_a != ours_sets[:nref] or sets_b != sets_a:
        raise SystemExit(f"mismatch at n={n} depth={depth}")
    p = {name: (_pct(xs, 50), _pct(xs, 95))
         for name, xs in (("kgpath", ours), ("kgpath_paths", withp), ("ref_a", ref_a),
                          ("ref_b", ref_b))}
    row = {"nodes": n, "depth": depth, "reach_p50": int(np.median(reach)),
           **{f"{name}_p50_ms": v[0] for name, v in p.items()},
           **{f"{name}_p95_ms": v[1] for name, v in p.items()},
           "ratio_a": p["ref_a"][0] / p["kgpath"][0],
           "ratio_a_with_paths": p["ref_a"][0] / p["kgpath_paths"][0],
           "ratio_b": p["ref_b"][0] / p["kgpath"][0]}
    print(f"{n:>8} {str(depth or 'inf'):>6} {row['reach_p50']:>7} "
          f"{p['kgpath'][0]:>9.3f}ms {p['kgpath'][1]:>6.3f}ms {p['kgpath_paths'][0]:>9.3f}ms "
          f"{p['ref_a'][0]:>7.3f}ms {p['ref_a'][1]:>6.3f}ms {p['ref_b'][0]:>7.3f}ms "
          f"{row['ratio_a']:>6.2f}x {row['ratio_a_with_paths']:>7.2f}x {row['ratio_b']:>6.1f}x",
          flush=True)
    return row


def run(sizes: list[int], queries: int, depths: list[int | None], k: int = 10) -> dict:
    import networkx as nx

    from kgpath import GraphIndex, HashingEmbedder, PathConstrainedRetriever, PCRConfig

    print(f"PCR benchmark: avg out-degree 5, 384-d, k={k}, {queries} queries per cell; "
          "ratios = reference p50 / kgpath p50, same run")
    print(HEADER)
    rows, mem_rows = [], []
    for n in sizes:
        g, src, dst, emb, build_s, rss, csr_bytes = build(n)
        mem_rows.append({"nodes": n, "edges": g.num_edges, "csr_mb": csr_bytes / 2**20,
                         "emb_mb": emb.nbytes / 2**20, "rss_mb": rss, "build_s": build_s})
        index = GraphIndex(g, HashingEmbedder(dim=384))  # embeddings are stored; never called
        pcr = PathConstrainedRetriever(index, config=PCRConfig(k=k))
        index.build()
        G = nx.DiGraph()
        G.add_nodes_from(range(n))
        G.add_edges_from(zip(src.tolist(), dst.tolist()))
        rng = np.random.default_rng(1)
        anchors = rng.integers(0, n, queries)
        qvecs = rng.standard_normal((queries, emb.shape[1]), dtype=np.float32)
        qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
        for depth in depths:
            rows.append(_cell(n, depth, pcr, G, emb, anchors, qvecs, k))
        del g, G, index, pcr, emb
        gc.collect()
    _print_memory(mem_rows)
    return {"k": k, "queries": queries, "cells": rows, "memory": mem_rows}


def _print_memory(mem_rows: list[dict]) -> None:
    print()
    print("graph memory (CSR = out+in indptr/indices/edge ids + weights; RSS = process growth "
          "while building the KnowledgeGraph incl. Python node/edge records and embeddings)")
    print(f"{'nodes':>8} {'edges':>9} {'CSR MB':>8} {'emb MB':>8} {'RSS MB':>8} {'build s':>8}")
    for r in mem_rows:
        print(f"{r['nodes']:>8} {r['edges']:>9} {r['csr_mb']:>8.1f} {r['emb_mb']:>8.1f} "
              f"{r['rss_mb']:>8.1f} {r['build_s']:>8.2f}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000,1000000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--depths", default="1,2,3,inf", help="comma-separated; inf = unlimited")
    ap.add_argument("--json", metavar="FILE", help="write every cell and the memory table")
    args = ap.parse_args(argv)
    depths = [None if d == "inf" else int(d) for d in args.depths.split(",")]
    out = run([int(s) for s in args.sizes.split(",")], args.queries, depths)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()
