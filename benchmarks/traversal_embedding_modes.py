"""``kgpath eval traversal`` on HotpotQA-100 with the chunk graph built in each embedding mode.

``ChunkGraphConfig(embedding="sentences")`` (each sentence embedded once, window and
document vectors derived) against ``embedding="nodes"`` (the article: every node's text
embedded). Prints both tables, the recall difference per row, and each build's stats.

``--modes late`` measures late chunking (``embedding="late"``); ``--json FILE`` also
writes each row's recall on both halves of the questions.

Usage::

    python benchmarks/traversal_embedding_modes.py [--data DIR] [--cache-dir DIR]
        [--modes sentences,nodes] [--limit N]

With ``--cache-dir`` the two builds share the sentence and theme vectors (same texts).
Not a ``bench_*`` script: a cold run embeds ~10,600 texts (minutes to a quarter hour).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from kgpath.embeddings import LocalEmbedder
from kgpath.eval.hotpotqa import load_hotpotqa
from kgpath.eval.traversal_eval import (
    build_hotpotqa_graph,
    evaluate_traversal,
    format_halves,
    format_report,
)
from kgpath.ingest.chunk_graph import ChunkGraphConfig


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="/work/shared/datasets/hotpotqa-100")
    p.add_argument("--cache-dir", default=None)
    p.add_argument("--modes", default="sentences,nodes")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--json", default=None, help="write recall per mode, row and half here")
    args = p.parse_args(argv)
    data = load_hotpotqa(args.data, limit=args.limit)
    embedder = LocalEmbedder()
    recall: dict[str, dict[str, tuple[float, float]]] = {}
    halves: dict[str, dict[str, list[float]]] = {}
    for mode in args.modes.split(","):
        t0 = time.perf_counter()
        graph, stats = build_hotpotqa_graph(
            data, embedder, config=ChunkGraphConfig(embedding=mode), cache_dir=args.cache_dir
        )
        build_s = time.perf_counter() - t0
        report = evaluate_traversal(data, graph, embedder,
                                    progress=lambda m: print(m, flush=True))
        print(f"\n=== embedding={mode!r}: build {build_s:.1f} s, "
              f"{stats['texts_embedded']} texts, {stats['cache_hits']} cache hits, "
              f"stage seconds {stats['seconds']}")
        print(format_report(report), flush=True)
        recall[mode] = {m.name: (100 * float(np.mean(m.r2)), 100 * float(np.mean(m.r5)))
                        for m in report.methods if m.r2}
        halves[mode] = _halves(report)
        print(format_halves(report), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(
                {"recall": recall, "halves": halves, "build_s": {mode: build_s},
                 "stats": {mode: stats}}, indent=2, default=str))
    if len(recall) == 2:
        a, b = list(recall)
        print(f"\nrow: R@2 {a} / {b} (diff), R@5 {a} / {b} (diff)")
        for name in recall[a]:
            (x2, x5), (y2, y5) = recall[a][name], recall[b].get(name, (float("nan"),) * 2)
            print(f"{name:28s} {x2:5.1f} / {y2:5.1f} ({x2 - y2:+.1f})   "
                  f"{x5:5.1f} / {y5:5.1f} ({x5 - y5:+.1f})")
    return 0


def _halves(report: Any) -> dict[str, list[float]]:
    """R@2 and R@5 of each row on q0-49 (half A) and the rest (half B), in percent."""
    out = {}
    for m in report.methods:
        if not m.r2:
            continue
        h = len(m.r2) // 2
        out[m.name] = [100 * float(np.mean(x)) for x in (m.r2[:h], m.r5[:h], m.r2[h:], m.r5[h:])]
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
