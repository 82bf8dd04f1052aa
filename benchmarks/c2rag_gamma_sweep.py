"""How often is the C2RAG sufficiency check "confidently wrong"? (the paper's Table 7 shape)

On the hand-written demo KG (``kgpath/data/c2rag_demo.json``: 15 two-hop questions, 30
hops, with spurious edges and missing bridges), run C2RAG with the stored hand-written plans
for γ in {0.5, 1.0, 1.5, 2.0, 2.5} and report per hop:

* Res    - share of hops the check marks Resolved,
* Prec   - among resolved hops, share whose bound value (the dominant candidate's entity) is
           the gold bridge entity (a hop whose gold is ``null`` has no correct entity in the
           KG, so resolving it is always wrong),
* Conf-w - share of all hops that are resolved *and* wrong ("confidently wrong").

A hop whose placeholder never got bound (its previous hop was unresolved) counts as
unresolved. Plans are hand-written (no LLM offline); the reranker is the offline bi-encoder
(cosine of the embedder), not the paper's cross-encoder. A second table varies ε (Eq. 7),
for which the paper gives no value; a third gives the bi-encoder only ``Lin(τ)`` as its
query (``rerank_input="constraint"``, a deviation from Eq. 6) instead of ``q ‖ Lin(τ)``.

Run: ``python benchmarks/c2rag_gamma_sweep.py [--embedder local|hashing] [--verbose]``
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence

import numpy as np

from kgpath import Embedder, HashingEmbedder, LocalEmbedder
from kgpath.demo import table
from kgpath.demo.c2rag import demo_questions, load_demo_kg
from kgpath.embeddings import BaseEmbedder
from kgpath.methods.c2rag import C2RAGConfig, ConstraintCheckedRetriever

GAMMAS = (0.5, 1.0, 1.5, 2.0, 2.5)
EPSILONS = (0.001, 0.01, 0.05)


class CachedEmbedder(BaseEmbedder):
    """Memoises an embedder per (kind, text) so repeated sweeps embed each text once."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.show_progress = False
        self.batch_size = 10_000
        self._cache: dict[tuple[str, str], np.ndarray] = {}

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if (kind, t) not in self._cache))
        if missing:
            fn = self.inner.embed_queries if kind == "query" else self.inner.embed_passages
            for t, v in zip(missing, fn(missing), strict=True):
                self._cache[(kind, t)] = v
        return np.stack([self._cache[(kind, t)] for t in texts])


def evaluate(
    retriever: ConstraintCheckedRetriever,
    gamma: float,
    epsilon: float,
    verbose: bool = False,
    **options: object,
) -> dict[str, float]:
    """Res / Prec / Conf-w (%) over every hop of every demo question."""
    hops = resolved = wrong = 0
    for q in demo_questions():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # γ < 1 warns by design
            res = retriever.retrieve(
                q["query"], plan=q["plan"], gamma=gamma, epsilon=epsilon, **options
            )
        for h in res.hops:
            hops += 1
            if h.state != "resolved":
                continue
            resolved += 1
            gold = q["gold"].get(h.variable)
            bound = h.top[0].entity if h.top else None
            if gold is None or bound != gold:
                wrong += 1
            if verbose:
                mark = "ok " if gold is not None and bound == gold else "WRONG"
                print(f"  γ={gamma} ε={epsilon} {q['id']} {h.variable}: N_eff {h.n_eff:.3f} "
                      f"bound {bound!r} gold {gold!r} {mark}")
    return {
        "hops": hops,
        "res": 100.0 * resolved / hops,
        "prec": 100.0 * (resolved - wrong) / resolved if resolved else float("nan"),
        "confw": 100.0 * wrong / hops,
        "resolved": resolved,
        "wrong": wrong,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Print the γ sweep (Table 7 shape) and the ε sensitivity table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embedder", default="local", choices=["local", "hashing"])
    ap.add_argument("--verbose", action="store_true", help="print every resolved hop")
    args = ap.parse_args(argv)
    inner: Embedder = LocalEmbedder(show_progress=False) if args.embedder == "local" \
        else HashingEmbedder()
    emb = CachedEmbedder(inner)
    retriever = ConstraintCheckedRetriever(load_demo_kg(), embedder=emb, config=C2RAGConfig())
    eps0 = C2RAGConfig().epsilon
    print(f"C2RAG sufficiency check on the hand-written demo KG ({len(demo_questions())} "
          f"questions); embedder {inner!r}; bi-encoder reranker; hand-written plans; "
          f"defaults m=3 E=3 R=8 K_s=3 K'_t=8 K_t=3, ε={eps0}, binding=pool")
    rows = []
    for g in GAMMAS:
        r = evaluate(retriever, g, eps0, args.verbose)
        rows.append([g, f"{r['res']:.1f}", _pct(r["prec"]), f"{r['confw']:.1f}",
                     f"{r['resolved']}/{r['hops']}", r["wrong"]])
    headers = ["gamma", "Res %", "Prec %", "Conf-w %", "resolved/hops", "wrong"]
    print(table(rows, headers))
    print("\nε sensitivity (Conf-w % / Res %):")
    rows = []
    for e in EPSILONS:
        cells: list[object] = [e]
        for g in GAMMAS:
            r = evaluate(retriever, g, e)
            cells.append(f"{r['confw']:.1f} / {r['res']:.1f}")
        rows.append(cells)
    print(table(rows, ["epsilon"] + [f"gamma={g}" for g in GAMMAS]))
    print(f"\nBi-encoder reranker given Lin(τ) only (rerank_input='constraint'), ε={eps0}:")
    rows = []
    for g in GAMMAS:
        r = evaluate(retriever, g, eps0, args.verbose, rerank_input="constraint")
        rows.append([g, f"{r['res']:.1f}", _pct(r["prec"]), f"{r['confw']:.1f}",
                     f"{r['resolved']}/{r['hops']}", r["wrong"]])
    print(table(rows, headers))
    return 0


def _pct(x: float) -> str:
    return "n/a" if x != x else f"{x:.1f}"


if __name__ == "__main__":
    sys.exit(main())
