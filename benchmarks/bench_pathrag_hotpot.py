"""PathRAG's passage recall on HotpotQA-100 (offline spaCy graph): the passage rule and levers.

Each row is one :class:`~kgpath.methods.pathrag.PathRAGConfig` variant, run LLM-free through
:class:`~kgpath.methods.pathrag.PathRAGRetriever` on the graph ``kgpath eval kg`` builds and
caches. Printed per half (q0-49 chose the constants, q50-99 is held out): passage R@2 and R@5
(titles, as ``kgpath eval kg``), p50 latency per question and p50 of the path stage, and the
share of 1-hop paths among the returned paths. Dense retrieval over the passage vectors is
the reference row, measured in the same run.

Rows:

* ``paths (before)``: ``passages="paths"``, the passages of the most reliable paths first;
* ``text units``: the default, the authors' text units (``sources.py``);
* ``+ joined/text``: the authors' node query (one vector against the node vectors);
* ``+ no co-occurrence``: co-occurrence edges left out of the paths;
* ``+ similarity order``: an entity's passages by cosine to the question (kgpath extension);
* ``+ question order``: every candidate passage by PCR's rule, 0.7·cosine + 0.3·entity
  similarity (kgpath extension); this last row is ``PathRAGConfig.for_passages()``, what
  ``kgpath eval kg`` runs.

Measured (busy 2-core machine, bundled embedder, LLM-free)::

    variant             R@2 A  R@5 A  R@2 B  R@5 B  p50 ms  paths p50 ms  1-hop %
    dense               74.0   87.0   67.0   87.0   -       -             -
    paths (before)      27.0   35.0   25.0   38.0   99      32            4
    text units          41.0   57.0   41.0   57.0   103     34            4
    + joined/text       63.0   83.0   57.0   72.0   2092    1979          25
    + no co-occurrence  63.0   83.0   57.0   72.0   134     16            53
    + similarity order  72.0   86.0   64.0   77.0   93      16            53

On the graph of the revised extractor (9,557 nodes, 32,544 edges; quieter machine)::

    variant             R@2 A  R@5 A  R@2 B  R@5 B
    dense               73.0   87.0   67.0   87.0
    + similarity order  59.0   75.0   64.0   83.0
    + question order    71.0   84.0   67.0   86.0

Tried on q0-49 and not kept: N in {10, 20, 60} (83-84), the z floor (no change), at most 1-3
passages per entity per turn (58-86), a hub cap on retrieved nodes by passages or degree
(84-86), and node vectors embedding name + node text as the authors' entity store does
(R@5 78, and 389 s to embed 9.6k node texts).

Run: ``.venv/bin/python benchmarks/bench_pathrag_hotpot.py [--cache-dir DIR] [--rows a,b]``
(needs ``../shared/datasets/hotpotqa-100``; a few minutes once the graph is cached).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "hotpotqa-100"
JOINED = {"node_query": "joined", "node_match": "text"}
NO_CO = {**JOINED, "exclude_edge_types": ("cooccurrence",)}
ROWS: dict[str, dict[str, Any]] = {
    "paths (before)": {"passages": "paths"},
    "text units": {},
    "+ joined/text": JOINED,
    "+ no co-occurrence": NO_CO,
    "+ similarity order": {**NO_CO, "unit_order": "similarity"},
    "+ question order": {**NO_CO, "unit_order": "question"},
}


def _recall(run, questions, titles) -> tuple[float, float, list[float]]:
    from kgpath.eval.hotpotqa import passage_recall

    r2, r5, ms = [], [], []
    for q in questions:
        t0 = time.perf_counter()
        got = titles(run(q.question))
        ms.append(1e3 * (time.perf_counter() - t0))
        r2.append(passage_recall(got, q.gold_titles, 2))
        r5.append(passage_recall(got, q.gold_titles, 5))
    return 100 * float(np.mean(r2)), 100 * float(np.mean(r5)), ms


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--cache-dir", default="/work/.cache-kg")
    ap.add_argument("--rows", default=",".join(ROWS))
    args = ap.parse_args()
    from kgpath.embed_cache import CachedEmbedder, default_cache_dir
    from kgpath.embeddings import embedder_by_name
    from kgpath.eval.hotpotqa import load_hotpotqa
    from kgpath.eval.kg_build import doc_of_passage, hotpotqa_graph
    from kgpath.eval.kg_hotpot import _Queries, method_runners
    from kgpath.index.graph_index import GraphIndex
    from kgpath.methods.pathrag import PathRAGRetriever

    data = load_hotpotqa(args.data)
    emb0 = CachedEmbedder(embedder_by_name("local"), default_cache_dir())
    built = hotpotqa_graph(data, emb0, cache_dir=args.cache_dir)
    emb = _Queries(emb0)
    emb.share(built)
    emb.fill([q.question for q in data.questions])
    g = built.graph
    retriever = PathRAGRetriever(GraphIndex(g, emb))

    def titles(pids):
        return list(dict.fromkeys(doc_of_passage(g, p) for p in pids))

    halves = (data.questions[:50], data.questions[50:])
    print("| variant | R@2 q0-49 | R@5 q0-49 | R@2 q50-99 | R@5 q50-99 | p50 ms | "
          "paths p50 ms | 1-hop % |")
    print("|---|---|---|---|---|---|---|---|")
    dense = method_runners(built, emb, ["dense"])["dense"]
    a, b = (_recall(dense, h, titles) for h in halves)
    print(f"| dense | {a[0]:.1f} | {a[1]:.1f} | {b[0]:.1f} | {b[1]:.1f} | "
          f"{np.median(a[2] + b[2]):.0f} | - | - |")
    for name in args.rows.split(","):
        opts, stage, hop1 = ROWS[name], [], []

        def run(q: str, opts=opts, stage=stage, hop1=hop1) -> list[str]:
            res = retriever.retrieve(q, **opts)
            stage.append(res.trace["timings_ms"]["paths_ms"])
            hop1.extend(p.hops == 1 for p in res.paths)
            return [e.id for e in res.evidence() if e.kind == "passage"]

        a, b = (_recall(run, h, titles) for h in halves)
        print(f"| {name} | {a[0]:.1f} | {a[1]:.1f} | {b[0]:.1f} | {b[1]:.1f} | "
              f"{np.median(a[2] + b[2]):.0f} | {np.median(stage):.0f} | "
              f"{100 * np.mean(hop1) if hop1 else 0:.0f} |", flush=True)


if __name__ == "__main__":
    main()
