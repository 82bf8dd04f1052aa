"""C2RAG hyperparameters (section 4.4, Appendix B) and the option types they use."""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass
from typing import Literal

from kgpath.errors import ConfigError, short

__all__ = [
    "BindingMode",
    "C2RAGConfig",
    "InvalidPlanPolicy",
    "RecoveryScope",
    "Propagation",
    "RelationVectors",
    "Rerank",
    "RerankInput",
    "SCORER_DEFAULTS",
    "Scorer",
    "State",
]

State = Literal["resolved", "unresolved"]
BindingMode = Literal["pool", "dominant"]
RecoveryScope = Literal["all", "anchor"]
InvalidPlanPolicy = Literal["fallback", "error"]
RerankInput = Literal["query_and_constraint", "constraint"]
Scorer = Literal["auto", "reranker", "relation"]
Propagation = Literal["per_entity", "pooled"]
Rerank = Literal["propagation"]
RelationVectors = Literal["graph", "lazy"]

SCORER_DEFAULTS: dict[str, dict[str, float]] = {
    "reranker": {"gamma": 1.5, "epsilon": 0.01},
    "relation": {"gamma": 2.5, "epsilon": 0.03},
}
"""γ and ε used when :class:`C2RAGConfig` leaves them ``None``, per scorer.

``"reranker"``: the paper's γ = 1.5 (section 4.4, Figure 4a) and the ε = 0.01 kgpath has
always used (the paper gives none). ``"relation"``: ε = 0.03, γ = 2.5, chosen on the demo
KG's tuning half (``benchmarks/bench_c2rag_gamma.py``) as the largest resolved share with
precision >= 0.9 over an ε x γ grid (ε 0.003-0.1, γ 1.75-2.75): 12/16 resolved, precision
0.92, on a plateau (γ 2.5-2.6 give the same); the held-out half then resolves 13/14 at
precision 1.00 (ε 0.01, γ 2.0 before: tuning 8/16, held-out 4/14, precision 1.00). See
:class:`C2RAGConfig`.
"""


# ====================================================================== config
@dataclass(frozen=True, kw_only=True)
class C2RAGConfig:
    """C2RAG hyperparameters; defaults follow the paper (section 4.4, Appendix B) except two.

    The two exceptions are measured choices for passage output without an LLM:
    ``fallback_k_t`` and ``rerank``; :meth:`paper` turns both off.

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
    scorer
        The score ``z`` that Eq. 7-9 turn into ``N_eff``. ``"reranker"``: the Eq. 6
        contextual rerank score, as in the paper. ``"relation"``: ``z = S_rel`` (Eq. 5),
        the paper's "w/o Rerank (Con)" ablation (Appendix D, Table 6: "selects structural
        candidates using only dense similarity scores"). ``"auto"`` (default): the
        reranker when one is given to the retriever, else ``"relation"``. See *Offline
        scorer* below.
    gamma
        ``γ``: Resolved iff ``N_eff <= γ``, Eq. 9. ``None`` (default): the scorer's value in
        :data:`SCORER_DEFAULTS` (1.5 for a reranker, the paper's; 2.5 for ``S_rel``).
        Must be > 0; values below 1 are accepted with a warning because ``N_eff >= 1``
        (Lemma A.1) makes them resolve nothing.
    epsilon
        ``ε > 0`` of Eq. 7. ``None`` (default): the scorer's value in
        :data:`SCORER_DEFAULTS`. The paper gives no value (see the module notes).
    k_t_pool
        ``K'_t``: passages retrieved by ``S_txt`` for textual recovery, Eq. 11 (paper: 8).
    k_t
        ``K_t``: passages kept after reranking, Eq. 12 (paper: 3). Must be <= ``k_t_pool``.
    propagation
        How Eq. 15 grounds a two-placeholder constraint on a bound placeholder.
        ``"per_entity"`` (default): one hop per bound entity (the first ``K_s`` of the
        binding, in rank order), each anchored on that entity alone and linearised with its
        name, as the authors' code does (``pipelines/pipeline1.py``,
        ``process_item_stage1``, second pass: ``for hb in h_bind[:top_n]`` runs
        ``run_constraint_retrieval_for_triple`` per entity). The constraint is Resolved
        when any of its hops is; each resolved hop's ``E_i(v)`` enters Eq. 14 as its own
        set (the authors append one set per hop to ``var_to_induced_sets``). Textual
        recovery runs once for the constraint when none resolves. ``"pooled"``: all bound
        entities anchor a single hop (kgpath before issue 12).
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
        ``benchmarks/c2rag_gamma_sweep.py``). Only used by the ``"reranker"`` scorer
        and textual recovery.
    relation_vectors
        When Eq. 5's relation vectors ``v_r`` are embedded. ``"graph"`` (default): every
        distinct relation string of the graph, in one call at the first query of each
        graph version, like the passage vectors (issue 14: the bundled embedder costs
        about one query embedding per text, and novel pool relations were about half of
        the texts a HotpotQA question embedded); the HotpotQA-100 spaCy graph has 2,018
        distinct relations of 25,404 edges. ``"lazy"``: only the relations of each pool,
        when first met (for graphs with very many distinct relation strings).
        Same vectors either way.
    fallback_k_t
        ``K_t`` used instead of ``k_t`` when the plan is the LLM-free fallback plan
        (a kgpath extension; ``None``: ``k_t``). The paper's ``K_t = 3`` is per
        constraint of an LLM plan, which splits a multi-hop question into several
        constraints; the fallback plan has one constraint per entity the question names,
        often a single one, so three passages per constraint left C2RAG fewer passages
        than the five a reader (or R@5) takes. Chosen on HotpotQA-100 q0-49 (offline
        graph, R@5 with ``K_t`` = 3 / 4 / 5 / 6: 82 / 85 / 86 / 86; 5 is the smallest
        best; q50-99: 78 / 82 / 85 / 83). LLM and user plans keep ``k_t``; see
        :meth:`for_plan` for how it combines with ``k_t`` and ``k_t_pool``.
    rerank
        ``"propagation"`` (default): ``evidence(output="passages")`` re-ranks the pooled
        passages by personalised PageRank over the graph's passages and entities, seeded by
        them and the question's entities (:mod:`kgpath.methods.augmented.rerank`, a kgpath
        extension; the paper ranks by its global score, Appendix B). ``None``: the paper's
        pooled ranking (:meth:`C2RAGResult.evidence`). Decided on HotpotQA-100, confirmed on
        2Wiki-100 (offline graph, fallback plan, R@5): 85.5 → 91.0 (q0-49 / q50-99: 90 /
        92) and 66.5 → 76.0 (74.5 / 77.5); dense 87.0 / 66.8. Native output is unchanged.
        Not applied over a database (:class:`~kgpath.methods.c2rag.cypher.CypherC2RAG`):
        the walk needs the whole graph.

    Offline scorer (a deviation, with evidence)
        The paper scores ``C_init`` with a cross-encoder (bge-reranker-v2-m3) whose logits
        separate candidates by several units, so Eq. 7 concentrates on the winner. No
        cross-encoder runs offline here (weights cannot be downloaded), and the bundled
        bi-encoder's cosines of ``q ‖ Lin(τ)`` to the top-3 ``Lin(c)`` sit within
        0.01-0.04 of each other: ``N_eff`` is about 2.4 and 0 of the demo KG's 30 hops
        resolve at γ = 1.5 (issue 12). Without a reranker, ``scorer="auto"`` therefore uses
        ``z = S_rel``, the paper's own "w/o Rerank (Con)" variant, which still keeps the
        check's intent (Prop. A.3: resolve only when one candidate dominates); it is the
        relation alignment that separates a matching relation (cosine ~0.9-1.0) from a
        spurious one. Its ``N_eff`` has a different spread than a cross-encoder's, so γ is
        calibrated for it separately (:data:`SCORER_DEFAULTS`; resolved share and
        precision per γ on both halves of the demo KG: ``benchmarks/bench_c2rag_gamma.py``).
        ε is 0.03 for it: with ``K_s = 3`` the min-shift of Eq. 7 gives the third
        candidate weight ``ε/Σ``, so with ε = 0.01 ``N_eff`` hardly exceeds 2 and γ = 2
        sat at the edge of that range (a γ of 2.02 already cost precision on the tuning
        half); ε = 0.03, about the gap between relation cosines the bi-encoder treats as
        a tie, spreads ``N_eff`` over more of ``[1, 3]`` (see the module notes).
        Candidates sharing a relation string tie under ``S_rel`` and stay ambiguous,
        which is the intended outcome (the relation cannot tell them apart). Give a
        reranker, or ``scorer="reranker"``, for the paper's path; it is unchanged.
    """

    m: int = 3
    top_e: int = 3
    top_r: int = 8
    k_s: int = 3
    scorer: Scorer = "auto"
    gamma: float | None = None
    epsilon: float | None = None
    k_t_pool: int = 8
    k_t: int = 3
    propagation: Propagation = "per_entity"
    binding: BindingMode = "pool"
    recovery_scope: RecoveryScope = "all"
    on_invalid_plan: InvalidPlanPolicy = "fallback"
    separator: str = " | "
    rerank_input: RerankInput = "query_and_constraint"
    relation_vectors: RelationVectors = "graph"
    fallback_k_t: int | None = 5
    rerank: Rerank | None = "propagation"

    @classmethod
    def paper(cls, **overrides: object) -> C2RAGConfig:
        """Return the paper's settings: ``fallback_k_t=None`` (``K_t`` everywhere), no re-rank.

        Examples
        --------
        >>> C2RAGConfig.paper().rerank, C2RAGConfig.paper().fallback_k_t
        (None, None)
        """
        base: dict[str, object] = {"fallback_k_t": None, "rerank": None}
        unknown = set(overrides) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ConfigError(f"unknown C2RAGConfig option(s): {sorted(unknown)}")
        return cls(**{**base, **overrides})  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        for name in ("m", "top_e", "top_r", "k_s", "k_t_pool", "k_t", "fallback_k_t"):
            v = getattr(self, name)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ConfigError(f"{name} must be a positive int, got {short(v)}")
        if self.rerank not in (None, "propagation"):
            raise ConfigError(f"rerank must be None or 'propagation', got {short(self.rerank)}")
        if self.k_t > self.k_t_pool:
            raise ConfigError(
                f"k_t ({self.k_t}) must be <= k_t_pool ({self.k_t_pool}): Eq. 12 reranks "
                "the K'_t passages and keeps K_t of them"
            )
        for name in ("gamma", "epsilon"):
            v = getattr(self, name)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ConfigError(f"{name} must be a finite number, got {short(v)}")
            if v <= 0:
                raise ConfigError(f"{name} must be > 0, got {short(v)}")
        if self.gamma is not None and self.gamma < 1:
            warnings.warn(
                f"gamma={self.gamma} < 1: N_eff >= 1 for every distribution (Lemma A.1), so "
                "no constraint will ever be Resolved; every hop uses textual recovery",
                UserWarning,
                stacklevel=3,
            )
        if self.scorer not in ("auto", "reranker", "relation"):
            raise ConfigError(
                f"scorer must be 'auto', 'reranker' or 'relation', got {short(self.scorer)}"
            )
        if self.propagation not in ("per_entity", "pooled"):
            raise ConfigError(
                f"propagation must be 'per_entity' or 'pooled', got {short(self.propagation)}"
            )
        if self.binding not in ("pool", "dominant"):
            raise ConfigError(f"binding must be 'pool' or 'dominant', got {short(self.binding)}")
        if self.recovery_scope not in ("all", "anchor"):
            raise ConfigError(
                f"recovery_scope must be 'all' or 'anchor', got {short(self.recovery_scope)}"
            )
        if self.on_invalid_plan not in ("fallback", "error"):
            raise ConfigError(
                f"on_invalid_plan must be 'fallback' or 'error', got {short(self.on_invalid_plan)}"
            )
        if not isinstance(self.separator, str):
            raise ConfigError(f"separator must be a string, got {short(self.separator)}")
        if self.relation_vectors not in ("graph", "lazy"):
            raise ConfigError(
                f"relation_vectors must be 'graph' or 'lazy', got {short(self.relation_vectors)}"
            )
        if self.rerank_input not in ("query_and_constraint", "constraint"):
            raise ConfigError(
                "rerank_input must be 'query_and_constraint' or 'constraint', got "
                f"{self.rerank_input!r}"
            )

    def for_plan(self, source: str) -> C2RAGConfig:
        """The config for a plan from ``source``: ``fallback_k_t`` for the fallback plan.

        The fallback plan keeps ``min(max(k_t, fallback_k_t), k_t_pool)`` passages: never
        fewer than ``k_t``, never more than Eq. 12's pool (so ``k_t_pool=4`` alone stays a
        valid config).
        """
        if source != "fallback" or self.fallback_k_t is None:
            return self
        k_t = min(max(self.k_t, self.fallback_k_t), self.k_t_pool)
        return self if k_t == self.k_t else dataclasses.replace(self, k_t=k_t)

    def resolve(self, *, reranker_given: bool) -> C2RAGConfig:
        """Return the config with ``scorer``, ``gamma`` and ``epsilon`` made concrete.

        ``scorer="auto"`` becomes ``"reranker"`` when a reranker was given, else
        ``"relation"``; a ``None`` γ or ε takes the scorer's :data:`SCORER_DEFAULTS`.
        """
        scorer = self.scorer
        if scorer == "auto":
            scorer = "reranker" if reranker_given else "relation"
        d = SCORER_DEFAULTS[scorer]
        gamma = d["gamma"] if self.gamma is None else self.gamma
        epsilon = d["epsilon"] if self.epsilon is None else self.epsilon
        if (scorer, gamma, epsilon) == (self.scorer, self.gamma, self.epsilon):
            return self
        with warnings.catch_warnings():  # a γ < 1 the user set has warned already
            warnings.simplefilter("ignore", UserWarning)
            return dataclasses.replace(self, scorer=scorer, gamma=gamma, epsilon=epsilon)

    @property
    def gamma_value(self) -> float:
        """γ, or the paper's 1.5 when unresolved (use :meth:`resolve` first)."""
        return SCORER_DEFAULTS["reranker"]["gamma"] if self.gamma is None else self.gamma

    @property
    def epsilon_value(self) -> float:
        """ε, or 0.01 when unresolved (use :meth:`resolve` first)."""
        return SCORER_DEFAULTS["reranker"]["epsilon"] if self.epsilon is None else self.epsilon

    def rerank_query(self, query: str, lin: str) -> str:
        """Return the reranker's query text: ``q ‖ Lin(τ)`` (Eq. 6/12) or ``Lin(τ)``."""
        if self.rerank_input == "constraint":
            return lin
        return query + self.separator + lin

