"""`kgpath demo` section: a C2RAG trace for a two-hop question (the paper's Figure 5 case).

Runs offline on a small hand-written KG shipped as package data
(``kgpath/data/c2rag_demo.json``): the Figure 5 question plus 14 more two-hop questions with
spurious and missing edges. No LLM is available offline, so the demo is explicit about its
planner:

1. a **scripted plan**: the hand-written plan stored with the question, replayed through
   :class:`~kgpath.ScriptedLLM` so it takes the same parsing/validation path an LLM reply
   would (it stands in for an LLM; nothing is generated);
2. the **LLM-free fallback planner** on the same question, which is weaker: one constraint
   anchored on the entities named in the query, no bridge placeholder.

No cross-encoder runs offline, so the check scores candidates with ``S_rel`` (Eq. 5; the
paper's "w/o Rerank (Con)" variant, ``scorer="relation"``, the default without a
reranker) at its calibrated γ; the numbers differ from the paper's figure.
:func:`gamma_sweep` prints the resolved share and precision per γ
(``benchmarks/bench_c2rag_gamma.py``).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from kgpath.demo import DemoContext, table
from kgpath.embeddings import BaseEmbedder, Embedder
from kgpath.graph import KnowledgeGraph
from kgpath.llm import ScriptedLLM
from kgpath.methods.c2rag import C2RAGResult, ConstraintCheckedRetriever, HopTrace

__all__ = [
    "SWEEP_GAMMAS",
    "MemoEmbedder",
    "SweepRow",
    "demo_data",
    "demo_halves",
    "demo_questions",
    "gamma_sweep",
    "judge_hops",
    "load_demo_kg",
    "print_trace",
    "run",
]

SWEEP_GAMMAS: tuple[float, ...] = (1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5)
"""γ grid of :func:`gamma_sweep`: the paper's Appendix B set {1.0, 1.5, 2.0, 2.5} and
the midpoints (γ = 0.5 < 1 resolves nothing, Lemma A.1)."""


def demo_data() -> dict[str, Any]:
    """The raw C2RAG demo data: passages, triples with provenance, questions with plans."""
    text = resources.files("kgpath.data").joinpath("c2rag_demo.json").read_text("utf-8")
    return json.loads(text)


def load_demo_kg() -> KnowledgeGraph:
    """The C2RAG demo graph (entity nodes, relation edges citing passages, passages)."""
    data = demo_data()
    g = KnowledgeGraph()
    for pid, text in data["passages"].items():
        g.add_passage(pid, text)
    for h, _r, t, _prov in data["triples"]:
        for name in (h, t):
            if name not in g:
                g.add_node(name, name=name)
    for h, r, t, prov in data["triples"]:
        g.add_edge(h, t, relation=r, text=f"{h} {r} {t}", provenance=prov)
    return g


def demo_questions() -> list[dict[str, Any]]:
    """Questions with their hand-written plans and gold bindings (``None`` = not in the KG)."""
    return list(demo_data()["questions"])


def demo_halves() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The demo questions split in two fixed halves.

    Positions 0, 2, 4, ... (the *tuning* half, 8 questions, on which
    :data:`~kgpath.methods.c2rag.config.SCORER_DEFAULTS` γ was chosen) and 1, 3, 5, ...
    (the *held-out* half, 7 questions).
    """
    qs = demo_questions()
    return qs[0::2], qs[1::2]


def judge_hops(res: C2RAGResult, gold: Mapping[str, str | None]) -> list[tuple[bool, bool]]:
    """``(resolved, right)`` per constraint hop of ``res``.

    A resolved hop is right when its top candidate's entity (``hop.top[0].entity``, the
    dominant candidate; for a per-entity P2 constraint, that of its most concentrated
    resolved hop) is the gold node; a hop whose gold is ``None`` (not in the KG) is never
    right when resolved. A hop that never ran (placeholder never bound) is unresolved.
    """
    out = []
    for h in res.hops:
        if h.state != "resolved":
            out.append((False, False))
            continue
        g = gold.get(h.variable or "")
        out.append((True, g is not None and bool(h.top) and h.top[0].entity == g))
    return out


@dataclass(frozen=True)
class SweepRow:
    """One γ of :func:`gamma_sweep`."""

    gamma: float
    hops: int
    resolved: int
    right: int

    @property
    def resolved_share(self) -> float:
        """Resolved hops / all hops."""
        return self.resolved / self.hops if self.hops else 0.0

    @property
    def precision(self) -> float:
        """Right / resolved (NaN when nothing resolved)."""
        return self.right / self.resolved if self.resolved else float("nan")


def gamma_sweep(
    retriever: ConstraintCheckedRetriever,
    questions: Sequence[Mapping[str, Any]],
    gammas: Sequence[float] = SWEEP_GAMMAS,
    **options: Any,
) -> list[SweepRow]:
    """Resolved share and precision (:func:`judge_hops`) of ``questions`` for each γ.

    Each question runs with its stored hand-written plan; ``options`` are further
    :class:`~kgpath.methods.c2rag.C2RAGConfig` overrides (e.g. ``scorer``, ``epsilon``).
    """
    rows = []
    for g in gammas:
        hops = resolved = right = 0
        for q in questions:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # γ < 1 warns by design
                res = retriever.retrieve(q["query"], plan=q["plan"], gamma=g, **options)
            for is_res, ok in judge_hops(res, q["gold"]):
                hops, resolved, right = hops + 1, resolved + is_res, right + ok
        rows.append(SweepRow(float(g), hops, resolved, right))
    return rows


class MemoEmbedder(BaseEmbedder):
    """Memoises an embedder per (kind, text), so a sweep embeds every text once."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.show_progress = False
        self.batch_size = 10_000
        self._cache: dict[tuple[str, str], np.ndarray] = {}

    def __repr__(self) -> str:
        return f"MemoEmbedder({self.inner!r})"

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if (kind, t) not in self._cache))
        if missing:
            fn = self.inner.embed_queries if kind == "query" else self.inner.embed_passages
            for t, v in zip(missing, fn(missing), strict=True):
                self._cache[(kind, t)] = v
        return np.stack([self._cache[(kind, t)] for t in texts])


def _cands(hop: HopTrace, which: str) -> list[list[Any]]:
    rows = []
    for c in getattr(hop, which):
        rows.append(
            [c.text, f"{c.s_rel:.3f}" if c.s_rel is not None else "",
             f"{c.z:.3f}" if c.z is not None else "", f"{c.p:.3f}" if c.p is not None else ""]
        )
    return rows


def print_trace(ctx: DemoContext, res: C2RAGResult) -> None:
    """Print a C2RAG result hop by hop: anchors, candidates, N_eff, state, recovery, blocks."""
    g_names = res.binding_names
    for h in res.hops:
        title = h.constraint.linearize() if h.constraint is not None else h.linearized
        ctx.print(f"\nHop {h.step} ({h.kind}): {title}")
        if h.anchors:
            ctx.print("  anchors: " + ", ".join(
                f"{a.name} ({a.via}" + (f", S_tok {a.coverage:.2f})" if a.coverage is not None
                                        else ")") for a in h.anchors))
        if h.pool_size:
            ctx.print(f"  one-hop pool |C| = {h.pool_size}; top-R by relation alignment "
                      "(before rerank):")
            ctx.print(_indent(table(_cands(h, "initial"), ["candidate", "S_rel", "z", ""])))
            ctx.print("  after rerank (top-K_s) with Eq. 7 probabilities:")
            ctx.print(_indent(table(_cands(h, "top"), ["candidate", "S_rel", "z", "p"])))
            ctx.print(f"  N_eff = {h.n_eff:.3f} vs gamma = {h.gamma} -> {h.state.upper()}")
        else:
            ctx.print(f"  {h.state.upper()}: {h.reason}")
        if h.state == "resolved" and h.variable:
            bound = g_names.get(h.variable, ())
            ctx.print(f"  bind {h.variable} = {' / '.join(bound) or '(nothing)'}")
        if h.recovery is not None:
            ctx.print(f"  textual recovery for: {h.recovery.query_text!r} "
                      f"(scope {h.recovery.scope})")
            rows = [[r.passage_id, f"{r.s_txt:.3f}", f"{r.score:.3f}", _short(r.text)]
                    for r in h.recovery.kept]
            ctx.print(_indent(table(rows, ["passage", "S_txt", "rerank", "text"])))
    ctx.print("\nEvidence blocks (Eq. 16) handed to the answer LLM:")
    ctx.print(_indent(res.context))


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def _short(text: str, n: int = 70) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def run(ctx: DemoContext) -> None:
    """Demo section: C2RAG on the Figure 5 question, scripted plan vs LLM-free plan."""
    ctx.heading("C2RAG: constraint-checked retrieval with the N_eff sufficiency check")
    graph = load_demo_kg()
    q = demo_questions()[0]
    ctx.print(f"Hand-written KG {graph!r} (kgpath/data/c2rag_demo.json); embedder "
              f"{ctx.embedder!r}; no reranker: the check scores candidates by relation "
              "alignment S_rel (the paper's 'w/o Rerank (Con)' variant; offline default).")
    ctx.print(f"Question: {q['query']}  (expected answer: {q['answer']})")
    ctx.print(f"Why it is hard: {q['note']}")

    ctx.print("\n-- Planner: SCRIPTED plan (hand-written, replayed through ScriptedLLM; "
              "it stands in for an LLM planner, nothing is generated offline)")
    scripted = ScriptedLLM([json.dumps(q["plan"])])
    r = ConstraintCheckedRetriever(graph, embedder=ctx.embedder, llm=scripted)
    res = r.retrieve(q["query"])
    for i, c in enumerate(res.plan.constraints):
        ctx.print(f"  tau_{i}: {c.linearize()}   variants: {', '.join(c.variants)}")
    print_trace(ctx, res)
    found = any("1952" in e.text for b in res.blocks for e in b.evidence)
    ctx.print(f"\nThe 1952 sentence is {'in' if found else 'NOT in'} the evidence.")

    ctx.print("\n-- Planner: LLM-FREE FALLBACK (no LLM configured; weaker: one constraint "
              "per entity named in the query, no bridge placeholder)")
    fb = ConstraintCheckedRetriever(graph, embedder=ctx.embedder).retrieve(q["query"])
    for i, c in enumerate(fb.plan.constraints):
        ctx.print(f"  tau_{i}: {c.linearize()}")
    rows = [[h.step, h.kind, h.state, "" if h.n_eff is None else f"{h.n_eff:.3f}",
             " / ".join(fb.binding_names.get(h.variable or "", ())) or "-",
             "yes" if h.recovery_used else "no"] for h in fb.hops]
    ctx.print(_indent(table(rows, ["hop", "kind", "state", "N_eff", "binding", "recovery"])))
    found = any("1952" in e.text for b in fb.blocks for e in b.evidence)
    ctx.print(f"The 1952 sentence is {'in' if found else 'NOT in'} the fallback's evidence.")
