"""C2RAG hyperparameters (section 4.4, Appendix B) and the option types they use."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Literal

from kgpath.errors import ConfigError

__all__ = [
    "BindingMode",
    "C2RAGConfig",
    "InvalidPlanPolicy",
    "RecoveryScope",
    "RerankInput",
    "State",
]

State = Literal["resolved", "unresolved"]
BindingMode = Literal["pool", "dominant"]
RecoveryScope = Literal["all", "anchor"]
InvalidPlanPolicy = Literal["fallback", "error"]
RerankInput = Literal["query_and_constraint", "constraint"]


# ====================================================================== config
@dataclass(frozen=True, kw_only=True)
class C2RAGConfig:
    """C2RAG hyperparameters; defaults follow the paper (section 4.4, Appendix B).

    Attributes
    ----------
    m
        Relation variants per constraint (paper: m = 3). The planner is asked for ``m``;
        ``R_i`` is the relation itself plus up to ``m`` variants.
    top_e
        ``E``: anchor nodes kept per constant by token coverage, Eq. 3 (paper: 3).
    top_r
        ``R``: candidates kept by relation alignment, Eq. 5 (paper: 8).
    k_s
        ``K_s``: candidates kept after contextual rerank, Eq. 6 (paper: 3).
    gamma
        ``γ``: Resolved iff ``N_eff <= γ``, Eq. 9 (paper: 1.5). Must be > 0; values below 1
        are accepted with a warning because ``N_eff >= 1`` (Lemma A.1) makes them resolve
        nothing.
    epsilon
        ``ε > 0`` of Eq. 7. The paper gives no value; 0.01 suits cosine-scale scores (see
        the module notes).
    k_t_pool
        ``K'_t``: passages retrieved by ``S_txt`` for textual recovery, Eq. 11 (paper: 8).
    k_t
        ``K_t``: passages kept after reranking, Eq. 12 (paper: 3). Must be <= ``k_t_pool``.
    binding
        ``"pool"``: Eq. 13 (every entity of ``C_top``); ``"dominant"``: only the top
        candidate's entity, as in Figure 5.
    recovery_scope
        ``"all"``: recovery searches every passage of the graph (the paper's ``U(q)``, since
        its KG is built from the query's passages); ``"anchor"``: only passages linked to the
        constraint's anchors (their provenance, or naming them), the "anchor-filtered
        sentences" of Appendix G, falling back to all when none is linked.
    on_invalid_plan
        ``"fallback"``: an unusable LLM plan (or a failed LLM call) is replaced by the
        LLM-free plan, the reason kept in ``Plan.note``; ``"error"``: raise
        :class:`~kgpath.ParseError` / :class:`~kgpath.BackendError`.
    separator
        The ``‖`` of Eq. 6 and Eq. 12 between the query and ``Lin(τ)``.
    rerank_input
        ``"query_and_constraint"``: the reranker query is ``q ‖ Lin(τ)`` (Eq. 6, Eq. 12);
        ``"constraint"``: ``Lin(τ)`` alone, a deviation that helps bi-encoders, whose single
        query vector is otherwise dominated by the whole question (see
        ``benchmarks/c2rag_gamma_sweep.py``).
    """

    m: int = 3
    top_e: int = 3
    top_r: int = 8
    k_s: int = 3
    gamma: float = 1.5
    epsilon: float = 0.01
    k_t_pool: int = 8
    k_t: int = 3
    binding: BindingMode = "pool"
    recovery_scope: RecoveryScope = "all"
    on_invalid_plan: InvalidPlanPolicy = "fallback"
    separator: str = " | "
    rerank_input: RerankInput = "query_and_constraint"

    def __post_init__(self) -> None:
        for name in ("m", "top_e", "top_r", "k_s", "k_t_pool", "k_t"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ConfigError(f"{name} must be a positive int, got {v!r}")
        if self.k_t > self.k_t_pool:
            raise ConfigError(
                f"k_t ({self.k_t}) must be <= k_t_pool ({self.k_t_pool}): Eq. 12 reranks "
                "the K'_t passages and keeps K_t of them"
            )
        for name in ("gamma", "epsilon"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ConfigError(f"{name} must be a finite number, got {v!r}")
            if v <= 0:
                raise ConfigError(f"{name} must be > 0, got {v!r}")
        if self.gamma < 1:
            warnings.warn(
                f"gamma={self.gamma} < 1: N_eff >= 1 for every distribution (Lemma A.1), so "
                "no constraint will ever be Resolved; every hop uses textual recovery",
                UserWarning,
                stacklevel=3,
            )
        if self.binding not in ("pool", "dominant"):
            raise ConfigError(f"binding must be 'pool' or 'dominant', got {self.binding!r}")
        if self.recovery_scope not in ("all", "anchor"):
            raise ConfigError(
                f"recovery_scope must be 'all' or 'anchor', got {self.recovery_scope!r}"
            )
        if self.on_invalid_plan not in ("fallback", "error"):
            raise ConfigError(
                f"on_invalid_plan must be 'fallback' or 'error', got {self.on_invalid_plan!r}"
            )
        if not isinstance(self.separator, str):
            raise ConfigError(f"separator must be a string, got {self.separator!r}")
        if self.rerank_input not in ("query_and_constraint", "constraint"):
            raise ConfigError(
                "rerank_input must be 'query_and_constraint' or 'constraint', got "
                f"{self.rerank_input!r}"
            )

    def rerank_query(self, query: str, lin: str) -> str:
        """Return the reranker's query text: ``q ‖ Lin(τ)`` (Eq. 6/12) or ``Lin(τ)``."""
        if self.rerank_input == "constraint":
            return lin
        return query + self.separator + lin

