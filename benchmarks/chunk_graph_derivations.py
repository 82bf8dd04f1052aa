"""Why derived window vectors cost the walks recall: a study for issue 14 (not a ``bench_*``).

Issue 14 asks for a chunk graph built in at most 1.5x the time of embedding every passage
once, with every ``kgpath eval traversal`` row within one point of the article's
construction (``embedding="nodes"``). Keeping the document and sentence vectors exact
already costs 2.49x (``bench_index.py --modes derived_windows``), so windows must be
derived, and ``embedding="sentences"`` (1.49x) derives the documents too. This script
measures what each derivation does, on HotpotQA-100, against the exact vectors:

* geometry: cosine of each derived window to its exact vector, mean pairwise cosine of the
  windows (a high mean makes hubs), and how many of the exact graph's cross-document
  similarity edges (top ``top_x_inter`` per window) the derived vectors keep;
* recall: every ``kgpath eval traversal`` row for each variant, per half of the questions.

Variants (documents exact unless named ``sentences``; the last column of the output is
what each costs on top of ``derived_windows``):

``derived``            windows = normalised sum of their sentences (``derived_windows``)
``exact_edges``        the same window vectors, but the similarity edges are computed from
                       the exact window vectors (a diagnostic: it needs every window
                       embedded, so it is not a construction within budget)
``centred``            edges from sums of corpus-centred sentence vectors
``ridge``              windows mapped by a ridge regression fitted on 5 % of the windows,
                       embedded exactly (toward the identity)
``context``            window sum + 0.5 x its document's sentence mean
``sentences``          ``embedding="sentences"``: documents = normalised sum of sentences
``sentences_lead``     documents weighted 0.7^i by sentence position (lead-heavy)

Every text is embedded through a :class:`~kgpath.embed_cache.CachedEmbedder`, so only the
first run embeds (~10,600 texts, minutes); later runs take about a minute.

Usage::

    python benchmarks/chunk_graph_derivations.py [--data DIR] [--cache-dir DIR]
        [--variants derived,exact_edges,...] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from kgpath.embed_cache import CachedEmbedder, default_cache_dir
from kgpath.embeddings import LocalEmbedder, normalize_rows
from kgpath.eval.hotpotqa import load_hotpotqa
from kgpath.eval.traversal_eval import evaluate_traversal, format_halves
from kgpath.ingest.chunk_graph import ChunkGraphBuilder, ChunkGraphConfig
from kgpath.ingest.chunk_graph.similarity import similarity_edges
from kgpath.ingest.documents import SourceDocument

VARIANTS = ("derived", "exact_edges", "centred", "ridge", "context", "sentences",
            "sentences_lead")


class _Study(ChunkGraphBuilder):
    """``derived_windows`` / ``sentences`` with one variant's window/document vectors."""

    def __init__(self, embedder: Any, variant: str) -> None:
        mode = "sentences" if variant.startswith("sentences") else "derived_windows"
        super().__init__(embedder, config=ChunkGraphConfig(embedding=mode))
        self.variant = variant
        self.edge_vectors: dict[int, np.ndarray] = {}
        self.windows: list[tuple[int, np.ndarray, np.ndarray]] = []  # (node, exact-ish, sum)

    def _derived_vectors(self, g, plan, sp, vecs):  # type: ignore[no-untyped-def]
        out = super()._derived_vectors(g, plan, sp, vecs)
        sent = np.asarray(vecs, dtype=np.float64)[sp.sentence_rows]
        mu = sent.mean(0)
        rows, sums, centred = [], [], []
        for d, start, ranges in zip(plan.docs, sp.doc_start[:-1].tolist(), plan.chunk_ranges,
                                    strict=True):
            doc = sent[start:start + len(d.sentences)]
            if self.variant == "sentences_lead":
                w = 0.7 ** np.arange(len(doc))
                out[g.index_of(f"doc:{d.id}")] = _unit(w @ doc)
            for ci, (s, e) in enumerate(ranges):
                i = g.index_of(f"chunk:{d.id}:{ci}")
                v = doc[s:e].sum(0)
                if self.variant == "context":
                    out[i] = _unit(_unit(v) + 0.5 * _unit(doc.sum(0)))
                rows.append(i)
                sums.append(_unit(v))
                centred.append(_unit(v - (e - s) * mu))
        rows_a = np.asarray(rows)
        if self.variant == "centred":
            self.edge_vectors = dict(zip(rows, centred, strict=True))
        elif self.variant in ("exact_edges", "ridge"):
            exact = self._exact(g, rows_a)
            if self.variant == "exact_edges":
                self.edge_vectors = dict(zip(rows, exact, strict=True))
            else:
                out[rows_a] = _ridge(np.asarray(sums), exact, frac=0.05)
        return out

    def _exact(self, g, rows: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
        texts = [g.node_at(int(i)).search_text for i in rows]
        return np.asarray(self.embedder.embed_passages(texts), dtype=np.float64)

    def _similarity(self, g, plan):  # type: ignore[no-untyped-def]
        if not self.edge_vectors:
            return super()._similarity(g, plan)
        keep = g.vectors.matrix.copy()
        swapped = keep.copy()
        for i, v in self.edge_vectors.items():
            swapped[i] = v
        g.vectors.set(swapped)
        try:
            return super()._similarity(g, plan)
        finally:
            g.vectors.set(keep)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / (np.linalg.norm(v) + 1e-12)


def _ridge(derived: np.ndarray, exact: np.ndarray, *, frac: float, lam: float = 1.0
           ) -> np.ndarray:
    """Fit ``derived @ W ~ exact`` on a random ``frac`` of rows (ridge toward ``W = I``);
    the fitted rows keep their exact vectors (they were embedded), the rest are mapped."""
    pick = np.random.default_rng(0).random(len(derived)) < frac
    x, d = derived[pick], derived.shape[1]
    w = np.linalg.solve(x.T @ x + lam * np.eye(d), x.T @ exact[pick] + lam * np.eye(d))
    out = normalize_rows((derived @ w).astype(np.float32))
    out[pick] = exact[pick]
    return out


def geometry(exact_g: Any, builder: _Study, g: Any) -> dict[str, float]:
    """Derived vs exact windows: cosine, mean pairwise cosine, cross-document edges kept."""
    idx = np.array([i for i, n in enumerate(g.nodes) if n.type == "chunk"])
    doc_of = np.array([g.node_at(int(i)).id.rsplit(":", 1)[0] for i in idx])
    _, doc_idx = np.unique(doc_of, return_inverse=True)
    ex = exact_g.vectors.matrix[[exact_g.index_of(g.node_at(int(i)).id) for i in idx]]
    dv = g.vectors.matrix[idx].copy()
    for i, v in builder.edge_vectors.items():
        dv[int(np.searchsorted(idx, i))] = v
    k = builder.config.top_x_inter

    def inter(m: np.ndarray) -> set[tuple[int, int]]:
        s, t, _, intra = similarity_edges(m.astype(np.float32), doc_idx, top_k_intra=10,
                                          top_x_inter=k, block_elements=1 << 22)
        return set(zip(s[~intra].tolist(), t[~intra].tolist(), strict=True))

    e_ex, e_dv = inter(ex), inter(dv)
    mean_dv, mean_ex = dv.mean(0), ex.mean(0)  # |mean|^2 = mean pairwise cosine
    return {"cos_to_exact_median": float(np.median(np.einsum("ij,ij->i", ex, dv))),
            "mean_pairwise_cos": float(mean_dv @ mean_dv),
            "mean_pairwise_cos_exact": float(mean_ex @ mean_ex),
            "inter_edges_kept": len(e_ex & e_dv) / max(len(e_ex), 1)}


def _halves(report: Any) -> dict[str, list[float]]:
    h = report.questions // 2
    return {m.name: [100 * float(np.mean(x)) for x in (m.r5[:h], m.r5[h:])]
            for m in report.methods if m.r2}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="../shared/datasets/hotpotqa-100")
    p.add_argument("--cache-dir", default=None)
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    data = load_hotpotqa(args.data)
    emb = CachedEmbedder(LocalEmbedder(), args.cache_dir or default_cache_dir())
    docs = [SourceDocument(t, t, s) for t, s in data.corpus.items()]
    exact = ChunkGraphBuilder(emb, config=ChunkGraphConfig(embedding="nodes")).build(docs)
    results = {"nodes": {"r5_halves": _halves(evaluate_traversal(data, exact, emb))}}
    for variant in args.variants.split(","):
        b = _Study(emb, variant)
        g = b.build(docs)
        rep = evaluate_traversal(data, g, emb)
        results[variant] = {"geometry": geometry(exact, b, g), "r5_halves": _halves(rep)}
        print(f"\n=== {variant}: {results[variant]['geometry']}")
        print(format_halves(rep), flush=True)
    _print_delta(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


def _print_delta(results: dict[str, Any]) -> None:
    from kgpath._tables import table

    base = results["nodes"]["r5_halves"]
    variants = [v for v in results if v != "nodes"]
    rows = [[name, f"{a:.0f}/{b:.0f}"]
            + [f"{results[v]['r5_halves'][name][0] - a:+.0f}/"
               f"{results[v]['r5_halves'][name][1] - b:+.0f}" for v in variants]
            for name, (a, b) in base.items()]
    print("\nR@5 q0-49/q50-99: 'nodes', then each variant's change (no constant was tuned)")
    print(table(rows, ["row", "nodes", *variants]))
    keys = ["cos_to_exact_median", "mean_pairwise_cos", "inter_edges_kept"]
    print(table([[v] + [f"{results[v]['geometry'][k]:.3f}" for k in keys] for v in variants],
                ["variant", "edge vectors: cos to exact (median)",
                 "mean pairwise cos (exact 0.746)", "cross-doc edges kept"]))

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
