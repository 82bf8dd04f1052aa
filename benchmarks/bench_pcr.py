"""PCR latency and graph memory on synthetic graphs, against a straightforward reference.

Graphs: n nodes, 5n uniformly random directed edges (average out-degree ~5), 384-d unit
embeddings. For each size and depth (1, 2, 3, unlimited) we time, over the same anchors and
query vectors:

* kgpath: ``PathConstrainedRetriever.retrieve_by_vector`` (CSR BFS + restricted top-k), i.e.
  the whole retrieval including result objects and shortest paths, without the embedding
  model call (identical for both sides, so excluded);
* reference A ("gather"): ``networkx.single_source_shortest_path_length`` (cutoff = depth)
  on a ``DiGraph`` + numpy cosine of the reachable rows only + ``argsort`` +
  ``nx.shortest_path`` for the k winners — a careful direct implementation;
* reference B ("mask"): the same BFS and paths, but cosine of *every* node (one numpy
  mat-vec) masked to the reachable set — the structure of the PCR authors' code (score
  all nodes, then filter to the candidates), written in numpy.

All three must return the same node set; the script checks it. Prints p50/p95 in ms, the p50
ratios (reference / kgpath), and the graph's memory: CSR arrays (exact bytes), embeddings,
and the process RSS growth while building the graph (Python objects included).

Usage: ``python benchmarks/bench_pcr.py [--sizes 1000,10000,100000,1000000] [--queries 200]``
Target (issue 2): p50 <= 1 ms at 10^5 nodes for depth <= 3, and >= 20x faster than the reference.
"""

from __future__ import annotations

import argparse
import gc
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


def run(sizes: list[int], queries: int, k: int = 10) -> None:
    import networkx as nx

    from kgpath import GraphIndex, HashingEmbedder, PathConstrainedRetriever, PCRConfig

    print(f"PCR benchmark: avg out-degree 5, 384-d, k={k}, {queries} queries per cell")
    print(f"{'nodes':>8} {'depth':>6} {'reach':>8} {'kgpath p50':>11} {'p95':>8} "
          f"{'refA p50':>9} {'p95':>8} {'A/ours':>7} {'refB p50':>9} {'p95':>8} {'B/ours':>7}")
    mem_rows = []
    for n in sizes:
        g, src, dst, emb, build_s, rss, csr_bytes = build(n)
        mem_rows.append((n, g.num_edges, csr_bytes, emb.nbytes, rss, build_s))
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
        ref_queries = queries if n <= 100_000 else max(20, queries // 10)
        for depth in (1, 2, 3, None):
            # each implementation runs its own loop (no interleaving), so none of them
            # runs right after another one has streamed the embedding matrix through cache
            ours, ref, refb, reach, ours_sets = [], [], [], [], []
            for j in range(queries):
                t0 = time.perf_counter()
                res = pcr.retrieve_by_vector(qvecs[j], anchor=f"n{int(anchors[j])}",
                                             max_depth=depth)
                ours.append(time.perf_counter() - t0)
                reach.append(res.reachable_count)
                ours_sets.append(({int(h.id[1:]) for h in res.hits}, len(res.hits)))
            ref_sets = []
            for j in range(ref_queries):
                a, q = int(anchors[j]), qvecs[j]
                t0 = time.perf_counter()
                lengths = nx.single_source_shortest_path_length(G, a, cutoff=depth)
                cand = np.fromiter(lengths.keys(), dtype=np.int64, count=len(lengths))
                scores = emb[cand] @ q
                top = cand[np.argsort(-scores, kind="stable")[:k]]
                paths = [nx.shortest_path(G, a, int(t)) for t in top]
                ref.append(time.perf_counter() - t0)
                ref_sets.append((set(top.tolist()), len(paths)))
            for j in range(ref_queries):
                a, q = int(anchors[j]), qvecs[j]
                t0 = time.perf_counter()
                lengths = nx.single_source_shortest_path_length(G, a, cutoff=depth)
                masked = np.full(n, -np.inf, dtype=np.float32)
                cand_b = np.fromiter(lengths.keys(), dtype=np.int64, count=len(lengths))
                masked[cand_b] = (emb @ q)[cand_b]
                top_b = np.argsort(-masked, kind="stable")[: min(k, cand_b.size)]
                paths_b = [nx.shortest_path(G, a, int(t)) for t in top_b]
                refb.append(time.perf_counter() - t0)
                got_b = (set(top_b.tolist()), len(paths_b))
                if ref_sets[j] != ours_sets[j] or ref_sets[j] != got_b:
                    raise SystemExit(f"mismatch at n={n} depth={depth} anchor={a}")
            p50 = _pct(ours, 50)
            print(f"{n:>8} {str(depth or 'inf'):>6} {int(np.median(reach)):>8} "
                  f"{p50:>9.3f}ms {_pct(ours, 95):>6.3f}ms "
                  f"{_pct(ref, 50):>7.3f}ms {_pct(ref, 95):>6.3f}ms {_pct(ref, 50) / p50:>6.1f}x "
                  f"{_pct(refb, 50):>7.3f}ms {_pct(refb, 95):>6.3f}ms "
                  f"{_pct(refb, 50) / p50:>6.1f}x", flush=True)
        del g, G, index, pcr, emb
        gc.collect()
    print()
    print("graph memory (CSR = out+in indptr/indices/edge ids + weights; RSS = process growth "
          "while building the KnowledgeGraph incl. Python node/edge records and embeddings)")
    print(f"{'nodes':>8} {'edges':>9} {'CSR MB':>8} {'emb MB':>8} {'RSS MB':>8} {'build s':>8}")
    for n, m, csr_b, emb_b, rss, bs in mem_rows:
        print(f"{n:>8} {m:>9} {csr_b / 2**20:>8.1f} {emb_b / 2**20:>8.1f} {rss:>8.1f} {bs:>8.2f}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000,1000000")
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args(argv)
    run([int(s) for s in args.sizes.split(",")], args.queries)


if __name__ == "__main__":
    main()
