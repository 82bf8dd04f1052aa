"""C2RAG γ sweep on the demo KG, per scorer, on both halves; and passage-vector sharing.

For each γ: resolved share and precision of the 2 hops of every demo question
(:func:`kgpath.demo.c2rag.gamma_sweep`; a resolved hop is right when its top candidate is
the gold node), on the tuning half (questions 1, 3, 5, ...) where the ``S_rel`` defaults ε =
0.03, γ = 2.5 were chosen (largest resolved share with precision >= 0.9 over the ε x γ grid
printed first, tuning half only) and on the held-out half (2, 4, ...). Then the same for the
offline bi-encoder reranker at its paper γ, and the time of a fresh retriever's first question
with the corpus re-embedded (before issue 12) and with the shared passage vectors.

Run: ``python benchmarks/bench_c2rag_gamma.py [--embedder local|hashing]``
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from kgpath import HashingEmbedder, LocalEmbedder
from kgpath.demo import table
from kgpath.demo.c2rag import (
    MemoEmbedder,
    demo_halves,
    demo_questions,
    gamma_sweep,
    load_demo_kg,
)
from kgpath.methods.c2rag import C2RAGConfig, ConstraintCheckedRetriever
from kgpath.methods.c2rag.drive import drive
from kgpath.methods.c2rag.recovery import build_passage_index
from kgpath.rerank import EmbeddingReranker


def sweep_table(r: ConstraintCheckedRetriever, **options: object) -> str:
    """One row per γ: resolved share and precision on each half."""
    tune, held = demo_halves()
    a, b = gamma_sweep(r, tune, **options), gamma_sweep(r, held, **options)
    rows = []
    for x, y in zip(a, b, strict=True):
        rows.append([x.gamma, f"{x.resolved}/{x.hops}", f"{x.resolved_share:.2f}",
                     _p(x.precision), f"{y.resolved}/{y.hops}", f"{y.resolved_share:.2f}",
                     _p(y.precision)])
    return table(rows, ["gamma", "tune res", "share", "prec", "held res", "share", "prec"])


EPS_GRID = (0.003, 0.01, 0.02, 0.03, 0.05, 0.1)
GAMMA_GRID = (1.75, 2.0, 2.25, 2.4, 2.5, 2.6, 2.75)


def selection_table(r: ConstraintCheckedRetriever) -> str:
    """Tuning half only: resolved/hops and precision per (ε, γ) for the S_rel scorer."""
    tune, _ = demo_halves()
    rows = []
    for eps in EPS_GRID:
        cells: list[object] = [eps]
        for x in gamma_sweep(r, tune, GAMMA_GRID, epsilon=eps):
            cells.append(f"{x.resolved}/{x.hops} {_p(x.precision)}")
        rows.append(cells)
    return table(rows, ["epsilon"] + [f"g={g}" for g in GAMMA_GRID])


def timings(inner: object) -> str:
    """First question of a fresh retriever: corpus re-embedded vs shared vectors."""
    g, q = load_demo_kg(), demo_questions()[0]
    rows = []
    emb = inner
    t = time.perf_counter()
    drive(build_passage_index(g), lambda req: emb.embed_passages(*req.args))  # type: ignore[attr-defined]
    rows.append(["before: every retriever embeds the corpus", f"{time.perf_counter() - t:.2f}"])
    for label in ("after: first retriever (fills the shared cache)",
                  "after: second retriever (shared vectors)"):
        r = ConstraintCheckedRetriever(g, embedder=emb)  # type: ignore[arg-type]
        t = time.perf_counter()
        r.retrieve(q["query"], plan=q["plan"], gamma=1.0)  # γ < 1.5: recovery runs
        rows.append([label, f"{time.perf_counter() - t:.2f}"])
    return table(rows, ["passage embeddings for Eq. 11", "seconds"])


def main(argv: Sequence[str] | None = None) -> int:
    """Print the sweeps and the timings."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embedder", default="local", choices=["local", "hashing"])
    args = ap.parse_args(argv)
    inner = LocalEmbedder(show_progress=False) if args.embedder == "local" \
        else HashingEmbedder()
    emb = MemoEmbedder(inner)
    g = load_demo_kg()
    d = C2RAGConfig().resolve(reranker_given=False)
    print(f"C2RAG on the demo KG, embedder {inner!r}, hand-written plans; tuning half = "
          f"questions 1,3,...,15, held-out half = 2,4,...,14")
    print("\nSelection, tuning half only: S_rel, resolved/hops and precision per (eps, gamma):")
    print(selection_table(ConstraintCheckedRetriever(g, embedder=emb)))
    print(f"\nScorer S_rel (offline default, 'w/o Rerank (Con)'), eps={d.epsilon}, "
          f"default gamma={d.gamma}, per-entity propagation:")
    print(sweep_table(ConstraintCheckedRetriever(g, embedder=emb)))
    print("\nScorer S_rel at the previous eps=0.01 (default gamma was 2.0):")
    print(sweep_table(ConstraintCheckedRetriever(g, embedder=emb), epsilon=0.01))
    print("\nScorer S_rel, pooled propagation (before issue 12):")
    print(sweep_table(ConstraintCheckedRetriever(g, embedder=emb), propagation="pooled"))
    print("\nScorer: offline bi-encoder reranker (cosine of q | Lin(tau) to Lin(c)), eps=0.01:")
    print(sweep_table(ConstraintCheckedRetriever(g, embedder=emb,
                                                 reranker=EmbeddingReranker(emb))))
    print()
    print(timings(inner))
    return 0


def _p(x: float) -> str:
    return "n/a" if x != x else f"{x:.2f}"


if __name__ == "__main__":
    sys.exit(main())
