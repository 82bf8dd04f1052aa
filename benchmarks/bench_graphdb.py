"""PCR pushed down into an embedded graph database vs the in-memory PCR, on the same graph.

Builds a random directed graph (default 10^4 nodes, 2 edges per node, 64-d unit embeddings),
loads it into a fresh embedded Cypher database (Ladybug, else Kùzu) in a temporary
directory, then runs the same queries (random anchors with at least one out-edge, random query
texts embedded by the same ``HashingEmbedder``) through

* ``kgpath.PathConstrainedRetriever`` (CSR arrays in memory), and
* ``kgpath.stores.CypherPCR`` (reachability as a variable-length shortest-path match, the
  region's edges by one-hop expansion, node rows by id: 4 queries per retrieval),

for several depth bounds ``d_max``. Prints the load time, p50/p95 latency of each side, the
mean reachable-set size, and checks that every result is equal (ids, hops, paths; scores to
1e-6, see ``tests/test_stores.py``). Exit status 1 if any result differs.

Usage: ``python benchmarks/bench_graphdb.py [--nodes 10000] [--queries 30] [--depths 1,2,3,4]``
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def build(n: int, out_degree: float, dim: int, seed: int):  # type: ignore[no-untyped-def]
    from kgpath import KnowledgeGraph

    rnd = random.Random(seed)
    g = KnowledgeGraph()
    for i in range(n):
        g.add_node(f"n{i}", name=f"node {i}", text=f"text of node {i}")
    for _ in range(int(out_degree * n)):
        g.add_edge(f"n{rnd.randrange(n)}", f"n{rnd.randrange(n)}",
                   relation=rnd.choice(["part of", "cites", "near"]))
    emb = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    g.set_embeddings(emb / np.linalg.norm(emb, axis=1, keepdims=True))
    return g


def same(a, b) -> bool:  # type: ignore[no-untyped-def]
    if [h.id for h in a.hits] != [h.id for h in b.hits] or a.reachable_count != b.reachable_count:
        return False
    return all(
        x.hops == y.hops and x.path == y.path and x.edges == y.edges
        and abs(x.score - y.score) <= 1e-6
        for x, y in zip(a.hits, b.hits)
    )


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000.0, p))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--out-degree", type=float, default=2.0)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--depths", default="1,2,3,4")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv or [])

    from kgpath import GraphIndex, HashingEmbedder, PathConstrainedRetriever
    from kgpath.stores import CypherPCR, EmbeddedCypherDriver, load_graph

    emb = HashingEmbedder(dim=args.dim)
    t0 = time.perf_counter()
    g = build(args.nodes, args.out_degree, args.dim, args.seed)
    index = GraphIndex(g, emb).build()
    print(f"graph: {g!r}, {args.dim}-d embeddings, built in {time.perf_counter() - t0:.2f} s")
    with tempfile.TemporaryDirectory(prefix="kgpath-bench-") as tmp:
        drv = EmbeddedCypherDriver.open(Path(tmp) / "db")
        try:
            t0 = time.perf_counter()
            schema = load_graph(drv, index)
            count = drv.run(f"MATCH (n:{schema.n}) RETURN count(n) AS c")[0]["c"]
            print(f"loaded {count} nodes and {g.num_edges} edges into {drv.engine} "
                  f"in {time.perf_counter() - t0:.2f} s")
            mem = PathConstrainedRetriever(index)
            db = CypherPCR(drv, embedder=emb, schema=schema)
            rnd = random.Random(args.seed + 1)
            busy = np.flatnonzero(g.out_degree() > 0)
            anchors = [g.node_at(int(busy[rnd.randrange(busy.size)])).id
                       for _ in range(args.queries)]
            queries = [f"query {rnd.randrange(10**6)} about node {rnd.randrange(args.nodes)}"
                       for _ in range(args.queries)]
            mem.retrieve(queries[0], anchor=anchors[0])  # warm-up (FAISS, CSR, caches)
            db.retrieve(queries[0], anchor=anchors[0])
            header = (f"{'d_max':>6} {'|C| mean':>9} {'memory p50':>11} {'p95':>7} "
                      f"{'push-down p50':>14} {'p95':>8} {'ratio':>7} {'equal':>7}")
            print(header)
            print("-" * len(header))
            all_equal = True
            for depth_s in args.depths.split(","):
                depth = None if depth_s.strip() in ("none", "None", "") else int(depth_s)
                tm, td, sizes, ok = [], [], [], 0
                for q, a in zip(queries, anchors):
                    t = time.perf_counter()
                    r1 = mem.retrieve(q, anchor=a, max_depth=depth, k=args.k)
                    tm.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    r2 = db.retrieve(q, anchor=a, max_depth=depth, k=args.k)
                    td.append(time.perf_counter() - t)
                    sizes.append(r1.reachable_count)
                    ok += same(r1, r2)
                all_equal &= ok == len(queries)
                print(f"{depth_s:>6} {np.mean(sizes):>9.1f} {pct(tm, 50):>9.2f}ms "
                      f"{pct(tm, 95):>5.2f}ms {pct(td, 50):>12.2f}ms {pct(td, 95):>6.1f}ms "
                      f"{pct(td, 50) / max(pct(tm, 50), 1e-9):>6.0f}x "
                      f"{ok:>3}/{len(queries)}")
        finally:
            drv.close()
    print("push-down results " + ("EQUAL to in-memory PCR on every query" if all_equal
                                  else "DIFFER from in-memory PCR (see above)"))
    print("(ratio = push-down p50 / in-memory p50: the database answers 4 round trips per "
          "query through its Python binding; its advantage is that the graph need not fit "
          "in this process)")
    return 0 if all_equal else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
