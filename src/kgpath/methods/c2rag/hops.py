"""One C2RAG hop: a constraint's candidates, ranked and checked (Eq. 5-9, Eq. 13).

:class:`HopTrace` records everything decided for one constraint. The steps are
:func:`rank_candidates` (Eq. 5 relation alignment, keep top-``R``; Eq. 6 contextual
rerank) and :func:`sufficiency_step` (Eq. 7-9 over the top-``K_s``; Eq. 13 induced
entities when resolved). Textual recovery (Eq. 11-12) for an unresolved hop is driven by
the retriever (:mod:`kgpath.methods.c2rag.recovery`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, MutableMapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kgpath.methods.c2rag.alignment import Anchor, Candidate, relation_alignment
from kgpath.methods.c2rag.bindings import induced_entities
from kgpath.methods.c2rag.config import C2RAGConfig, State
from kgpath.methods.c2rag.drive import Req, embed_relations, score
from kgpath.methods.c2rag.plan import Constraint
from kgpath.methods.c2rag.recovery import TextualRecovery
from kgpath.methods.c2rag.sufficiency import (
    effective_candidates,
    normalize_scores,
    sufficiency_state,
)
from kgpath.search.vector import top_k

__all__ = ["HopTrace", "merge_branches", "rank_candidates", "sufficiency_step"]


@dataclass(frozen=True)
class HopTrace:
    """Everything C2RAG decided for one constraint."""

    step: int
    """Execution order, 1-based."""
    constraint_index: int | None
    """Index in the plan (``None`` for the query-only block of an empty plan)."""
    constraint: Constraint | None
    kind: str
    """``"P1"`` (Eq. 2), ``"P2"`` (Eq. 15, grounded through a binding) or ``"query"``."""
    linearized: str
    """``Lin(τ)`` with bound placeholders substituted, as sent to the reranker."""
    variable: str | None
    """The placeholder this hop solves."""
    anchors: tuple[Anchor, ...] = ()
    pool_size: int = 0
    """``|C_i|`` of Eq. 4."""
    initial: tuple[Candidate, ...] = ()
    """``C_init``: top-``R`` by relation alignment (before rerank)."""
    top: tuple[Candidate, ...] = ()
    """``C_top``: top-``K_s`` by the reranker, with probabilities (after rerank)."""
    n_eff: float | None = None
    gamma: float = 1.5
    state: State = "unresolved"
    reason: str = ""
    """Why the hop is unresolved (or how it was resolved)."""
    induced: tuple[str, ...] = ()
    """``E_i(v)`` (Eq. 13) for a resolved hop."""
    recovery: TextualRecovery | None = None
    branches: tuple[HopTrace, ...] = ()
    """Per-entity hops of an Eq. 15 constraint (``propagation="per_entity"``), one per
    bound entity, in binding order; empty otherwise (see :func:`merge_branches`)."""

    @property
    def probabilities(self) -> tuple[float, ...]:
        """Eq. 7 probabilities of ``C_top``, best first."""
        return tuple(float(c.p) for c in self.top if c.p is not None)

    @property
    def recovery_used(self) -> bool:
        """Whether textual recovery ran for this hop."""
        return self.recovery is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {
            "step": self.step,
            "constraint_index": self.constraint_index,
            "constraint": self.constraint.to_dict() if self.constraint else None,
            "kind": self.kind,
            "linearized": self.linearized,
            "variable": self.variable,
            "anchors": [dataclasses.asdict(a) for a in self.anchors],
            "pool_size": self.pool_size,
            "initial": [c.to_dict() for c in self.initial],
            "top": [c.to_dict() for c in self.top],
            "probabilities": list(self.probabilities),
            "n_eff": self.n_eff,
            "gamma": self.gamma,
            "state": self.state,
            "reason": self.reason,
            "induced": list(self.induced),
            "recovery_used": self.recovery_used,
            "recovery": self.recovery.to_dict() if self.recovery else None,
            "branches": [b.to_dict() for b in self.branches],
        }



def rank_candidates(
    pool: list[Candidate],
    c: Constraint,
    query: str,
    lin: str,
    cfg: C2RAGConfig,
    rel_cache: MutableMapping[str, np.ndarray],
) -> Generator[Req, Any, tuple[list[Candidate], np.ndarray]]:
    """Eq. 5-6: keep the top-``R`` of ``pool`` by relation alignment, then score them.

    Returns ``C_init`` (with ``s_rel`` and ``z`` set) and the scores ``z`` in the same
    order. ``z`` is the Eq. 6 reranker score with ``cfg.scorer="reranker"``, and ``S_rel``
    itself with ``"relation"`` (the paper's "w/o Rerank (Con)" variant, Appendix D; no
    reranker call). ``cfg`` must be resolved (:meth:`C2RAGConfig.resolve`).
    """
    rel_set = c.relation_set(cfg.m)
    yield from embed_relations(rel_cache, [x.relation for x in pool] + list(rel_set))
    s_rel = relation_alignment(
        np.stack([rel_cache[x.relation] for x in pool]),
        np.stack([rel_cache[r] for r in rel_set]),
    )
    init_pos = top_k(s_rel, cfg.top_r)
    initial = [dataclasses.replace(pool[int(k)], s_rel=float(s_rel[k])) for k in init_pos]
    if cfg.scorer == "relation":
        z = np.asarray([x.s_rel for x in initial], dtype=np.float64)
    else:  # Eq. 6: contextual rerank on q ‖ Lin(τ) ‖ Lin(c).
        z = yield from score(cfg.rerank_query(query, lin), [x.text for x in initial])
    initial = [dataclasses.replace(x, z=float(s)) for x, s in zip(initial, z, strict=True)]
    return initial, np.asarray(z, dtype=np.float64)


def sufficiency_step(
    hop: HopTrace, pool_size: int, initial: list[Candidate], z: np.ndarray, cfg: C2RAGConfig
) -> HopTrace:
    """Eq. 7-9 over the top-``K_s`` of ``initial``; Eq. 13 ``E_i(v)`` when resolved.

    ``binding="dominant"`` induces only the top candidate's entity (Figure 5).
    """
    top_pos = top_k(z, cfg.k_s)
    p = normalize_scores(z[top_pos], cfg.epsilon_value)
    top = tuple(
        dataclasses.replace(initial[int(k)], p=float(pk))
        for k, pk in zip(top_pos, p, strict=True)
    )
    n_eff = effective_candidates(p)
    gamma = cfg.gamma_value
    state = sufficiency_state(n_eff, gamma)
    hop = dataclasses.replace(
        hop, pool_size=pool_size, initial=tuple(initial), top=top, n_eff=n_eff, state=state
    )
    if state != "resolved":
        return dataclasses.replace(hop, reason=f"N_eff {n_eff:.3f} > gamma {gamma}")
    chosen = top[:1] if cfg.binding == "dominant" else top
    return dataclasses.replace(
        hop, induced=induced_entities(chosen), reason=f"N_eff {n_eff:.3f} <= gamma {gamma}"
    )


def merge_branches(base: HopTrace, branches: tuple[HopTrace, ...]) -> HopTrace:
    """One constraint's trace from its per-entity hops (Eq. 15, ``"per_entity"``).

    As in the authors' code (``pipelines/pipeline1.py``, second pass: ``record["status"] =
    "resolved"`` as soon as one entity's hop resolves), the constraint is Resolved when
    any branch is. Its ``N_eff`` and ``C_top`` come from the resolved branches in binding
    order (the bound entities' rank in the hop that induced them), so ``top[0]`` is the
    dominant candidate of the best-ranked entity whose hop resolved; when none resolved,
    from all branches, lowest ``N_eff`` first. ``induced`` is the
    union of the resolved branches' ``E_i(v)`` (Eq. 14 sees them one by one, see
    :meth:`~kgpath.methods.c2rag.bindings.BindingState.record`).
    """
    resolved = [b for b in branches if b.state == "resolved"]
    chosen = resolved or sorted(
        (b for b in branches if b.n_eff is not None), key=lambda b: b.n_eff or 0.0
    )
    reason = f"{len(resolved)} of {len(branches)} per-entity hops resolved"
    if chosen:
        reason += f" (first: N_eff {chosen[0].n_eff:.3f}, gamma {base.gamma})"
    return dataclasses.replace(
        base,
        anchors=tuple(a for b in branches for a in b.anchors),
        pool_size=sum(b.pool_size for b in branches),
        initial=tuple(c for b in branches for c in b.initial),
        top=tuple(c for b in chosen for c in b.top),
        n_eff=chosen[0].n_eff if chosen else None,
        state="resolved" if resolved else "unresolved",
        reason=reason,
        induced=tuple(dict.fromkeys(e for b in resolved for e in b.induced)),
        branches=branches,
    )
