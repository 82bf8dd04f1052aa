"""PathRAG rankings on random graphs: the edge-flow default, the literal Eq. 4 reading, the oracle.

For random Barabási–Albert graphs and N random retrieved nodes, prints for kgpath's default
(``reliability="edge_flow"``, the authors' computation), the literal reading
(``PathRAGConfig.literal_eq4()``) and the oracle (``authors_oracle`` in
``tests/test_pathrag_edgeflow.py``, transcribed from the authors' ``PathRAG/operate.py``):

* paths returned against ``K``;
* share of 1-hop paths;
* share of path pairs out of hop order: among the pairs of returned paths with different hop
  counts, those where the longer path ranks higher (0 % = ranked by hop count), for the
  top K and for the whole ranked candidate pool;
* top-K agreement with the oracle: share of queries with identical ids and order, and the
  mean overlap ``|top ∩ oracle| / |oracle|``.

``--floor`` instead chooses ``min_similarity_z`` (the node-retrieval floor) on the
even-numbered questions of each PathRAG-6 domain and reports the odd-numbered ones too:
Relevance@10 (``kgpath.eval.metrics.relevance_at_k``) of the nodes along the returned paths,
most reliable path first, with the bundled offline embedder and offline keywords.

Run: ``.venv/bin/python benchmarks/bench_pathrag_oracle.py [--floor]`` (about a minute).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import warnings
from pathlib import Path
from typing import Any

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_pathrag_edgeflow import authors_oracle, kg_from_nx  # noqa: E402

from kgpath import HashingEmbedder  # noqa: E402
from kgpath.methods.pathrag import PathRAGConfig, PathRAGRetriever  # noqa: E402

K = 15


def _hop_stats(paths: list[tuple[int, ...]]) -> tuple[int, int, int]:
    """(1-hop paths, pairs with different hop counts, of those: longer one ranked higher).

    ``paths`` are in rank order; counted in one pass with per-length tallies.
    """
    one = sum(1 for p in paths if len(p) == 2)
    seen: dict[int, int] = {}
    diff = out = 0
    for i, p in enumerate(paths):
        h = len(p)
        diff += i - seen.get(h, 0)
        out += sum(c for hh, c in seen.items() if hh > h)
        seen[h] = seen.get(h, 0) + 1
    return one, diff, out


def run_graphs(cases: list[tuple[int, int, int, int]]) -> dict[str, dict[str, Any]]:
    """Run the three rankings on BA graphs ``(seed, n, m, N)``; aggregate the counts."""
    names = ("edge_flow (default)", "literal_eq4", "oracle")
    agg: dict[str, dict[str, Any]] = {
        k: {"ret": [], "one": 0, "tot": 0, "diff": 0, "out": 0, "same": 0, "overlap": [],
            "pdiff": 0, "pout": 0}
        for k in names
    }
    for seed, n, m, big_n in cases:
        G = nx.barabasi_albert_graph(n, m, seed=seed)
        picked = random.Random(seed).sample(range(n), big_n)
        ids = [f"n{i}" for i in picked]
        r = PathRAGRetriever(kg_from_nx(G), embedder=HashingEmbedder(dim=16))
        full = [tuple(p) for p, _ in authors_oracle(G, picked, K=10**9)]
        oracle = full[:K]
        runs = {
            names[0]: r.retrieve_from_nodes("q", ids),
            names[1]: r.retrieve_from_nodes("q", ids, **_fields(PathRAGConfig.literal_eq4())),
        }
        got = {k: [tuple(int(x[1:]) for x in p.ids) for p in v.paths] for k, v in runs.items()}
        pools = {k: [c.nodes for c in v.pool or []] for k, v in runs.items()}
        got[names[2]], pools[names[2]] = oracle, full
        for k, paths in got.items():
            a = agg[k]
            _, pdiff, pout = _hop_stats(pools[k])
            a["pdiff"] += pdiff
            a["pout"] += pout
            one, diff, out = _hop_stats(paths)
            a["ret"].append(len(paths))
            a["one"] += one
            a["tot"] += len(paths)
            a["diff"] += diff
            a["out"] += out
            a["same"] += paths == oracle
            canon = {frozenset(p) for p in oracle}
            a["overlap"].append(
                len(canon & {frozenset(p) for p in paths}) / len(canon) if canon else 1.0
            )
    return agg


def _fields(cfg: PathRAGConfig) -> dict[str, Any]:
    keys = ("reliability", "direction", "max_hops", "eq3_at_start")
    return {k: getattr(cfg, k) for k in keys}


def print_graphs(cases: list[tuple[int, int, int, int]]) -> None:
    agg = run_graphs(cases)
    print(f"{len(cases)} Barabási–Albert graphs (n = {sorted({c[1] for c in cases})}, "
          f"m = {sorted({c[2] for c in cases})}), N = {sorted({c[3] for c in cases})} random "
          f"retrieved nodes, K = {K}")
    print(f"{'ranking':<22}{'returned/K':>12}{'1-hop':>8}{'top-K out of hop order':>26}"
          f"{'whole pool out of hop order':>34}{'= oracle':>10}{'overlap':>9}")
    for k, a in agg.items():
        ret = statistics.mean(a["ret"])
        one = a["one"] / max(a["tot"], 1)
        ooo = f"{a['out']}/{a['diff']} = {a['out'] / max(a['diff'], 1):.1%}"
        pool = f"{a['pout']}/{a['pdiff']} = {a['pout'] / max(a['pdiff'], 1):.1%}"
        print(f"{k:<22}{ret:>7.1f}/{K:<4}{one:>8.1%}{ooo:>26}{pool:>34}"
              f"{a['same'] / len(cases):>10.0%}{statistics.mean(a['overlap']):>9.2f}")


def floor_sweep(grid: list[float | None]) -> None:
    """Choose ``min_similarity_z`` on the even-numbered PathRAG-6 questions."""
    from kgpath import LocalEmbedder
    from kgpath.eval.datasets import load_pathrag6_queries, shared_datasets_dir
    from kgpath.eval.metrics import relevance_at_k
    from kgpath.graph import from_pathrag6

    data = Path(shared_datasets_dir() or ROOT.parent / "shared" / "datasets") / "pathrag6"
    queries = load_pathrag6_queries(data)
    emb = LocalEmbedder()
    scores: dict[Any, dict[str, list[float]]] = {z: {"tune": [], "held": []} for z in grid}
    for domain, qs in queries.items():
        r = PathRAGRetriever(from_pathrag6(data / domain), embedder=emb)
        for i, q in enumerate(qs):
            for z in grid:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # N = 40 >= |V| = 30 on these graphs
                    res = r.retrieve(q.query, min_similarity_z=z)
                ids: dict[str, None] = {}
                for e in res.evidence("native"):
                    ids.update(dict.fromkeys(e.trace.get("node_ids", [e.trace.get("node_id")])))
                rel = relevance_at_k(list(ids), q.relevant, 10)
                scores[z]["tune" if i % 2 == 0 else "held"].append(rel)
    n_t, n_h = len(scores[grid[0]]["tune"]), len(scores[grid[0]]["held"])
    print(f"min_similarity_z on PathRAG-6 (bundled e5 embedder, offline keywords): "
          f"Rel@10 of the path nodes; tune = {n_t} even-numbered, held out = {n_h} odd")
    print(f"{'z':>6}{'tune':>8}{'held':>8}")
    for z in grid:
        t, h = statistics.mean(scores[z]["tune"]), statistics.mean(scores[z]["held"])
        print(f"{'None' if z is None else z:>6}{t:>8.3f}{h:>8.3f}")
    best = max(grid, key=lambda z: (statistics.mean(scores[z]["tune"]), -(z or 0)))
    print(f"best on the tune half: {best}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--floor", action="store_true", help="choose min_similarity_z on PathRAG-6")
    args = ap.parse_args(argv)
    if args.floor:
        floor_sweep([None, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0])
        return
    cases = [(s, n, m, 40) for s in range(6) for n, m in ((200, 2), (500, 2), (300, 3))]
    print_graphs(cases)


if __name__ == "__main__":
    main()
