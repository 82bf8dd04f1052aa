"""PCR on MetaQA: answer Hits@1/Hits@10 per hop count, node score vs path-aware scores.

Data (``../shared/datasets/metaqa``): ``kb.txt`` (``head|relation|tail``) and
``dev_{1,2,3}hop.jsonl`` with the anchor given; only ``answers_reachable`` questions count.
The brackets around the anchor in the question are removed.

Every variant runs PCR from the given anchor with ``max_depth = hops``, edges followed in
both directions (MetaQA questions walk relations backwards: "films directed by X") and the
anchor excluded (it is never an answer). Variants: ``node`` (Eq. 2, the paper), ``path``
and ``mixed`` (the kgpath path-aware extension), each with ``path_text`` ``full`` or
``relations``, and ``template/relations`` (relation-chain templates, also a kgpath
extension: :mod:`kgpath.methods.pcr.templates`). Questions are split in two halves (file
order); constants are chosen on the first half (``A``) and both halves are reported.

Node vectors of the 43k entities take minutes to compute: ``vectors=FILE.npy`` caches them
(written when absent). Path texts are embedded per query through a text cache shared by the
variants, so the ``mixed`` runs reuse the ``path`` runs' embeddings. ``path_text="full"``
is not run on 3-hop questions: with both directions a 3-hop region holds 10^4 nodes, each
with its own text (use ``"relations"``, whose texts are shared by a relation chain).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kgpath._tables import table
from kgpath.embeddings import BaseEmbedder, Embedder
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex
from kgpath.methods.pcr import PathConstrainedRetriever

__all__ = ["VARIANTS", "CachedEmbedder", "load_metaqa", "evaluate_metaqa", "run_metaqa"]

#: name -> PCRConfig overrides (besides max_depth, direction, include_anchor, k)
VARIANTS: dict[str, dict[str, Any]] = {
    "node": {"score": "node"},
    "path/relations": {"score": "path", "path_text": "relations"},
    "mixed/relations": {"score": "mixed", "path_text": "relations"},
    "path/full": {"score": "path", "path_text": "full"},
    "mixed/full": {"score": "mixed", "path_text": "full"},
    "template/relations": {"score": "template", "path_text": "relations"},
}


class CachedEmbedder(BaseEmbedder):
    """An embedder wrapper that remembers every passage text it embedded (eval only)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.batch_size = 1 << 30
        self.show_progress = False
        self._cache: dict[str, dict[str, np.ndarray]] = {}
        self._dim = None

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        cache = self._cache.setdefault(kind, {})
        todo = [t for t in dict.fromkeys(texts) if t not in cache]
        if todo:
            fn = self.inner.embed_queries if kind == "query" else self.inner.embed_passages
            for t, v in zip(todo, np.asarray(fn(todo), np.float32)):
                cache[t] = v
        return np.stack([cache[t] for t in texts])


def load_metaqa(data: str | Path) -> tuple[KnowledgeGraph, dict[int, list[dict[str, Any]]]]:
    """The KB as a graph and the reachable dev questions per hop count."""
    d = Path(data)
    with open(d / "kb.txt", encoding="utf-8") as f:
        triples = [p for p in (line.rstrip("\n").split("|") for line in f) if len(p) == 3]
    graph = KnowledgeGraph.from_triples(triples)
    questions: dict[int, list[dict[str, Any]]] = {}
    for hops in (1, 2, 3):
        rows = [json.loads(x) for x in open(d / f"dev_{hops}hop.jsonl", encoding="utf-8")]
        questions[hops] = [r for r in rows if r.get("answers_reachable")]
    return graph, questions


def _index(graph: KnowledgeGraph, embedder: Embedder, vectors: str | None) -> GraphIndex:
    if vectors and Path(vectors).exists():
        graph.vectors.set(np.load(vectors))
    index = GraphIndex(graph, embedder).build()
    if vectors and not Path(vectors).exists():
        np.save(vectors, graph.vectors.matrix)
    return index


def evaluate_metaqa(
    graph: KnowledgeGraph, questions: dict[int, list[dict[str, Any]]], embedder: Embedder,
    *, variants: dict[str, dict[str, Any]] | None = None,
    path_weights: Sequence[float] = (0.3, 0.5, 0.7),
    vectors: str | None = None,
) -> dict[str, dict[int, np.ndarray]]:
    """``hits[variant][hops]``: one row per question, columns Hits@1 and Hits@10."""
    cached = CachedEmbedder(embedder)
    pcr = PathConstrainedRetriever(_index(graph, cached, vectors))
    runs = _expand(variants or VARIANTS, path_weights)
    out: dict[str, dict[int, np.ndarray]] = {name: {} for name in runs}
    sizes: list[int] = []
    for hops, qs in questions.items():
        for name, over in runs.items():
            if hops >= 3 and over.get("path_text") == "full":
                continue
            t0, rows = time.perf_counter(), []
            for q in qs:
                text = q["question"].replace("[", "").replace("]", "")
                res = pcr.retrieve(text, anchor=q["anchor"], max_depth=hops, direction="both",
                                   include_anchor=False, k=10, **over)
                sizes.append(res.reachable_count)
                gold = set(q["answers"])
                rows.append((float(res.ids[:1] != [] and res.ids[0] in gold),
                             float(bool(gold & set(res.ids)))))
            out[name][hops] = np.asarray(rows).reshape(-1, 2)
            print(f"  {hops}-hop {name}: {time.perf_counter() - t0:.1f}s, median reachable "
                  f"{int(np.median(sizes))}", flush=True)
            sizes.clear()
    return out


def _expand(variants: dict[str, dict[str, Any]],
            weights: Sequence[float]) -> dict[str, dict[str, Any]]:
    runs: dict[str, dict[str, Any]] = {}
    for name, over in variants.items():
        if over.get("score") == "mixed":
            for w in weights:
                runs[f"{name} w={w:g}"] = {**over, "path_weight": w}
        else:
            runs[name] = over
    return runs


def format_metaqa(hits: dict[str, dict[int, np.ndarray]]) -> str:
    """Hits@1 / Hits@10 (%) per variant and hop count, on half A, half B and all."""
    rows = []
    hops_list = sorted({h for per_hop in hits.values() for h in per_hop})
    for name, per_hop in hits.items():
        cells: list[object] = [name]
        for hops in hops_list:
            if hops not in per_hop:
                cells += ["-"] * 3
                continue
            h = per_hop[hops]
            half = (len(h) + 1) // 2
            for part in (h[:half], h[half:], h):
                cells.append(f"{100 * part[:, 0].mean():.1f} / {100 * part[:, 1].mean():.1f}")
        rows.append(cells)
    head = ["variant"] + [f"{h}-hop {p}" for h in hops_list for p in ("A", "B", "all")]
    return "Hits@1 / Hits@10 (%), A = first half (constants chosen), B = second half\n" + \
        table(rows, head)


def run_metaqa(data: str, embedder: Embedder, *, vectors: str | None = None,
               limit: int | None = None, hops: Sequence[int] = (1, 2, 3),
               variants: Sequence[str] | None = None) -> int:
    """CLI body of ``kgpath eval pcr --metaqa DIR``."""
    graph, questions = load_metaqa(data)
    questions = {h: qs for h, qs in questions.items() if h in hops}
    if limit:
        questions = {h: qs[:limit] for h, qs in questions.items()}
    print(f"MetaQA: {len(graph)} nodes, {graph.num_edges} edges; questions "
          + ", ".join(f"{h}-hop {len(q)}" for h, q in questions.items()), flush=True)
    chosen = {v: VARIANTS[v] for v in variants} if variants else None
    print(format_metaqa(evaluate_metaqa(graph, questions, embedder, variants=chosen,
                                        vectors=vectors)))
    return 0
