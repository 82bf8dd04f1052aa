"""``kgpath eval pcr --data DIR``: PCR vs vector, BM25 and hybrid on PathRAG-6-format data.

Prints a table in the shape of the PCR paper's Table 1 (Rel@1/5/10, structural consistency
and inconsistency, plus multi-hop consistency and distance penalty), the paper's numbers
beside ours, and a per-domain Rel@10 / consistency table (paper Table 7 shape).

Every method searches the same node embeddings (``Node.search_text``) with the same
embedder; baselines search the whole domain graph, PCR only the nodes reachable from the
query's anchor (unlimited depth, out-edges, anchor included). Metrics: see
:mod:`kgpath.eval.metrics`.

``--metaqa DIR`` instead measures answer Hits@1/Hits@10 per hop count on MetaQA dev (anchor
given, ``answers_reachable`` questions) for PCR variants: node score (Eq. 2) against the
path-aware scores (a kgpath extension), ``max_depth = hops``, edges in both directions,
anchor excluded; see :mod:`kgpath.eval.pcr_metaqa`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kgpath._tables import table
from kgpath.embeddings import Embedder, embedder_by_name
from kgpath.eval.datasets import PathRAG6Query, load_pathrag6_queries, shared_datasets_dir
from kgpath.eval.metrics import (
    graph_distance_penalty,
    multi_hop_consistency,
    relevance_at_k,
    structural_consistency,
)
from kgpath.graph import from_pathrag6
from kgpath.index.graph_index import GraphIndex
from kgpath.methods.pcr import PathConstrainedRetriever, PCRConfig

__all__ = ["METHODS", "PAPER_TABLE1", "PCREvalReport", "evaluate_pcr", "main"]

METHODS = ("PCR", "Vector", "BM25", "Hybrid")
METRICS = ("rel@1", "rel@5", "rel@10", "struct", "inconsistency", "multihop", "dist_penalty")

#: The paper's Table 1 (mean over all queries): Rel@1, Rel@5, Rel@10, structural consistency.
PAPER_TABLE1 = {
    "PCR": (0.60, 0.69, 0.70, 1.00),
    "Vector": (0.33, 0.71, 0.78, 0.32),
    "BM25": (0.27, 0.60, 0.72, 0.24),
    "Hybrid": (0.33, 0.71, 0.80, 0.32),
}


@dataclass
class PCREvalReport:
    """Per-query metric rows: ``rows[method][metric]`` is a list over queries."""

    rows: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    domains: dict[str, dict[str, dict[str, list[float]]]] = field(default_factory=dict)
    retrieved: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    def add(self, domain: str, method: str, query_id: str, metrics: dict[str, float],
            ids: list[str]) -> None:
        """Record one query's metrics for one method."""
        for target in (
            self.rows.setdefault(method, {}),
            self.domains.setdefault(domain, {}).setdefault(method, {}),
        ):
            for m, v in metrics.items():
                target.setdefault(m, []).append(v)
        self.retrieved.setdefault(method, {})[query_id] = ids

    def mean(self, method: str, metric: str, domain: str | None = None) -> float:
        """Mean of a metric over all queries (or one domain's)."""
        src = self.rows if domain is None else self.domains[domain]
        return float(np.mean(src[method][metric]))

    def std(self, method: str, metric: str) -> float:
        """Sample standard deviation over all queries (as the paper's ± values)."""
        vals = self.rows[method][metric]
        return float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0


def _metrics(ids: list[str], q: PathRAG6Query, dist: dict[str, int]) -> dict[str, float]:
    sc = structural_consistency(ids, dist)
    return {
        "rel@1": relevance_at_k(ids, q.relevant, 1),
        "rel@5": relevance_at_k(ids, q.relevant, 5),
        "rel@10": relevance_at_k(ids, q.relevant, 10),
        "struct": sc,
        "inconsistency": 1.0 - sc if ids else 0.0,
        "multihop": multi_hop_consistency(ids, dist),
        "dist_penalty": graph_distance_penalty(ids, dist, 0.1),
    }


def evaluate_pcr(
    data_dir: str | Path,
    embedder: Embedder,
    *,
    k: int = 10,
    alpha: float = 0.7,
    domains: Sequence[str] | None = None,
) -> PCREvalReport:
    """Run the four methods on every query of every domain and collect metrics."""
    data = Path(data_dir)
    queries = load_pathrag6_queries(data)
    report = PCREvalReport()
    for domain, qs in queries.items():
        if domains is not None and domain not in domains:
            continue
        graph = from_pathrag6(data / domain)
        index = GraphIndex(graph, embedder).build()
        pcr = PathConstrainedRetriever(index, config=PCRConfig.paper(k=k, alpha=alpha))
        for q in qs:
            bfs = graph.bfs(q.anchor)
            dist = {graph.node_at(int(n)).id: int(d) for n, d in zip(bfs.nodes, bfs.dist)}
            qv = index.embed_query(q.query)
            runs = {"PCR": pcr.retrieve(q.query, anchor=q.anchor).ids}
            for method, mode in (("Vector", "vector"), ("BM25", "bm25"), ("Hybrid", "hybrid")):
                idx, _ = index.search(q.query, k, mode=mode, alpha=alpha, query_vec=qv)
                runs[method] = [graph.node_at(int(i)).id for i in idx]
            for method, ids in runs.items():
                report.add(domain, method, q.id, _metrics(ids, q, dist), ids)
    return report


def format_report(report: PCREvalReport) -> str:
    """Render the Table 1 and Table 7 shaped tables."""
    n = len(next(iter(report.rows.values()))["rel@10"])
    rows = []
    for m in METHODS:
        cells: list[object] = [m]
        for metric in ("rel@1", "rel@5", "rel@10", "struct", "inconsistency"):
            cells.append(f"{report.mean(m, metric):.2f} ± {report.std(m, metric):.2f}")
        cells.append(f"{report.mean(m, 'multihop'):.2f}")
        cells.append(f"{report.mean(m, 'dist_penalty'):.2f}")
        p = PAPER_TABLE1[m]
        cells.append(f"{p[2]:.2f} / {p[3]:.2f}")
        rows.append(cells)
    out = [f"Overall ({n} queries; mean ± sample std) — PCR paper Table 1 shape"]
    out.append(table(rows, ["method", "Rel@1", "Rel@5", "Rel@10", "Struct.", "Inconsist.",
                            "Multi-hop", "Dist.pen.", "paper Rel@10/Struct."]))
    drows = []
    for d in report.domains:
        cells = [d]
        for m in METHODS:
            cells.append(f"{report.mean(m, 'rel@10', d):.2f} / {report.mean(m, 'struct', d):.2f}")
        drows.append(cells)
    out.append("")
    out.append("Per domain: Rel@10 / structural consistency — paper Table 7 shape")
    out.append(table(drows, ["domain", *METHODS]))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """CLI entry: ``kgpath eval pcr [--data DIR] [--embedder local|hashing] [--k 10]``."""
    ap = argparse.ArgumentParser(prog="kgpath eval pcr", description=__doc__.splitlines()[0])
    default = shared_datasets_dir()
    ap.add_argument("--data", default=str(default / "pathrag6") if default else None,
                    help="PathRAG-6-format folder (default: ../shared/datasets/pathrag6)")
    ap.add_argument("--embedder", default="local", help="local (default), hashing, openai")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--alpha", type=float, default=0.7)
    ap.add_argument("--metaqa", default=None, metavar="DIR",
                    help="MetaQA folder: Hits@1/Hits@10 of PCR node vs path-aware scoring")
    ap.add_argument("--vectors", default=None, metavar="FILE.npy",
                    help="MetaQA: cached node vectors (np.save; written when absent)")
    ap.add_argument("--limit", type=int, default=None, help="MetaQA: questions per hop file")
    ap.add_argument("--hops", default="1,2,3", help="MetaQA: hop counts, e.g. 1,2")
    ap.add_argument("--variants", default=None,
                    help="MetaQA: comma-separated subset of node, path/relations, "
                         "mixed/relations, path/full, mixed/full")
    args = ap.parse_args(argv)
    if args.metaqa:
        from kgpath.eval.pcr_metaqa import run_metaqa

        return run_metaqa(args.metaqa, embedder_by_name(args.embedder), vectors=args.vectors,
                          limit=args.limit, hops=[int(h) for h in args.hops.split(",")],
                          variants=args.variants.split(",") if args.variants else None)
    if not args.data:
        ap.error("--data is required (no ../shared/datasets found)")
    report = evaluate_pcr(args.data, embedder_by_name(args.embedder), k=args.k, alpha=args.alpha)
    print(format_report(report))
    return 0
