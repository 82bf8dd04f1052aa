"""C2RAG: constraint-checked retrieval with an N_eff sufficiency check.

Reference: Y. Ma, S. Liang, R. Wang, J. Li, Q. Chen, M. Li, K. Qin, "Mitigating KG Quality
Issues: A Robust Multi-Hop GraphRAG Retrieval Framework", 2026
(shared/papers/c2rag-constraint-sufficiency.txt). Section numbers and equations below
refer to that paper.

Steps, named after section 3:

1. **Atomic constraint planning** (3.2, Eq. 1): an LLM writes a plan of triple patterns with
   placeholders and ``m`` relation variants (:mod:`kgpath.methods.c2rag_plan`); without an
   LLM an honest, weaker heuristic plan is used.
2. **Anchor matching** (Eq. 2-4): :func:`token_coverage` (Eq. 3) maps the constant end of a
   single-placeholder constraint to the top-``E`` nodes; :func:`candidate_pool` (Eq. 4)
   collects the one-hop neighbourhood in both directions.
3. **Relation alignment** (Eq. 5): :func:`relation_alignment`, max cosine between the KG
   relation and the variants ``R_i``; keep top-``R``.
4. **Contextual rerank** (Eq. 6): a :class:`~kgpath.rerank.Reranker` scores
   ``q ‖ Lin(τ_i)`` against ``Lin(c)``; keep top-``K_s``.
5. **Sufficiency** (Eq. 7-10): :func:`normalize_scores` (min-shift + ε),
   :func:`effective_candidates` (``N_eff = 1/Σp²``), :func:`sufficiency_state`
   (Resolved iff ``N_eff <= γ``).
6. **Textual recovery** (Eq. 11-12) for unresolved constraints: top-``K'_t`` passages by
   cosine to ``Lin(τ_u)``, reranked, keep ``K_t``.
7. **Binding and propagation** (Eq. 13-15): :func:`induced_entities` (Eq. 13),
   :func:`merge_bindings` (Eq. 14, intersection, union when empty); resolved pools are
   filtered to the bindings and their provenance passages collected; two-placeholder
   constraints are grounded once one end is bound and re-run through steps 2-6, until no
   constraint makes progress.
8. **Evidence blocks** (Eq. 16): one block ``[Lin(τ_i), T_i^txt]`` per constraint, in plan
   order (:func:`format_blocks`).

Every hop is recorded in a :class:`HopTrace` (anchors, candidates before/after rerank,
probabilities, N_eff, state, bindings, recovery).

Notes on reading the paper
--------------------------
* Eq. 4 admits candidates in both directions, so Eq. 13's "tail of (h, r, t)" is read as
  "the end of the candidate triple that is not the anchor" (identical when the KG edge has
  the constraint's orientation).
* Eq. 13 induces *all* entities of ``C_top`` (``binding="pool"``, the default). Figure 5
  binds only the dominant candidate; ``binding="dominant"`` does that (Prop. A.3 guarantees
  its probability is at least ``1/γ`` when the hop is resolved).
* Figure 5 prints ``N_eff 0.65`` for weights ``[0.79, 0.12, 0.09]``; 0.65 is ``Σp²``, and
  Eq. 8 gives ``1/0.6466 = 1.547 > γ = 1.5``. This module follows Eq. 8.
* ``N_eff >= 1`` always (Lemma A.1), so ``γ < 1`` resolves nothing; it is accepted (the
  paper sweeps γ = 0.5) with a warning.
* The paper gives no value for ε. Eq. 7 is not scale-free: ε is the score gap (in reranker
  units) below which candidates count as tied. The default 0.01 suits cosine scores of the
  offline bi-encoder (range [-1, 1]); raise it (about 0.5-1) for cross-encoder logits.
  The min-shift gives the lowest of the ``K_s`` candidates weight ``ε/Σ``, so as ε -> 0
  ``N_eff`` ranges over ``[1, K_s - 1]`` rather than ``[1, K_s]``; with ``K_s = 3`` a
  small ε makes any ``γ >= 2`` accept almost every hop.
* Figure 5 binds ``?year = 1952`` after textual recovery; recovery yields passages, not
  graph entities, so here the value is left to the reader (the LLM) and the placeholder
  stays unbound.

Complexity per constraint: anchor matching uses a token inverted index (O(Σ postings));
the pool is one CSR slice per anchor; embeddings of relation strings are cached; the
reranker sees at most ``R`` candidates and ``K'_t`` passages.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import warnings
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from kgpath._config import with_overrides
from kgpath.embeddings import Embedder, default_embedder
from kgpath.errors import BackendError, ConfigError, ParseError
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex, check_query
from kgpath.index.vector import VectorIndex, top_k
from kgpath.llm import LLM
from kgpath.methods.c2rag_plan import (
    PLAN_SCHEMA,
    Constraint,
    Plan,
    fallback_plan,
    parse_plan,
    tokens,
)
from kgpath.prompts.c2rag import PLANNER_PROMPT
from kgpath.rerank import EmbeddingReranker, Reranker

__all__ = [
    "C2RAGConfig",
    "Anchor",
    "Candidate",
    "RecoveredPassage",
    "TextualRecovery",
    "HopTrace",
    "Evidence",
    "EvidenceBlock",
    "C2RAGResult",
    "ConstraintCheckedRetriever",
    "token_coverage",
    "match_anchors",
    "candidate_pool",
    "relation_alignment",
    "normalize_scores",
    "effective_candidates",
    "sufficiency_state",
    "induced_entities",
    "merge_bindings",
    "format_blocks",
    "SufficiencyCheck",
    "check_sufficiency",
]

log = logging.getLogger(__name__)

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


# ====================================================================== equations
def token_coverage(surface: str, name: str) -> float:
    """Eq. 3: ``S_tok = |Tok(surface) ∩ Tok(name)| / |Tok(surface)|`` (0 for no tokens).

    >>> token_coverage("Tower of London", "London")
    0.3333333333333333
    """
    s = set(tokens(surface))
    if not s:
        return 0.0
    return len(s & set(tokens(name))) / len(s)


@dataclass(frozen=True)
class Anchor:
    """An anchor node of a constraint: matched by name (Eq. 3) or bound by a placeholder."""

    node_id: str
    name: str
    coverage: float | None
    """``S_tok`` of Eq. 3 (``None`` when the anchor comes from a binding)."""
    via: str
    """``"name"`` or ``"binding ?var"``."""


def match_anchors(
    surface: str,
    graph: KnowledgeGraph,
    top_e: int = 3,
    *,
    token_index: Mapping[str, Sequence[int]] | None = None,
) -> list[Anchor]:
    """Eq. 3: the top-``E`` nodes by token coverage of ``surface`` (coverage > 0 only).

    Ties (the paper does not break them) go to the name with the larger Jaccard overlap,
    so an exact name beats a longer one, then to the lower node index.

    ``token_index`` (token -> node indices) avoids a scan of every node name.
    """
    s = set(tokens(surface))
    if not s:
        return []
    counts: dict[int, int] = {}
    if token_index is not None:
        for t in s:
            for i in token_index.get(t, ()):
                counts[i] = counts.get(i, 0) + 1
    else:
        for i, n in enumerate(graph.nodes):
            k = len(s & set(tokens(n.name)))
            if k:
                counts[i] = k
    ranked = []
    for i, k in counts.items():
        name_toks = set(tokens(graph.node_at(i).name))
        jac = k / len(s | name_toks)
        ranked.append((-k / len(s), -jac, i))
    ranked.sort()
    out = []
    for neg_cov, _, i in ranked[:top_e]:
        n = graph.node_at(i)
        out.append(Anchor(n.id, n.name, -neg_cov, "name"))
    return out


@dataclass(frozen=True)
class Candidate:
    """A candidate triple ``c = (e_s, r_kg, e_o)`` of a constraint with its scores."""

    edge_index: int
    source: str
    relation: str
    target: str
    text: str
    """``Lin(c)``: ``"<source name> <relation> <target name>"``."""
    anchor: str
    """Id of the anchor end of the triple."""
    entity: str
    """Id of the other end: the entity this candidate induces for the placeholder (Eq. 13)."""
    provenance: tuple[str, ...] = ()
    s_rel: float | None = None
    """Eq. 5 relation alignment score."""
    z: float | None = None
    """Eq. 6 reranker score."""
    p: float | None = None
    """Eq. 7 normalised probability (``C_top`` only)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return dataclasses.asdict(self) | {"provenance": list(self.provenance)}


def candidate_pool(
    graph: KnowledgeGraph, anchors: Sequence[str], *, relation_text: bool = True
) -> list[Candidate]:
    """Eq. 4: every triple with an anchor at either end, each edge once.

    An edge joining two anchors is kept once, from the side of the earlier (better) anchor.
    """
    csr = graph.csr()
    seen: set[int] = set()
    out: list[Candidate] = []
    for aid in anchors:
        a = graph.index_of(aid)
        for d in ("out", "in"):
            ip = csr[f"{d}_indptr"]
            for e in csr[f"{d}_edges"][ip[a] : ip[a + 1]]:
                ei = int(e)
                if ei in seen:
                    continue
                seen.add(ei)
                edge = graph.edge_at(ei)
                other = edge.target if d == "out" else edge.source
                rel = edge.relation or (edge.text if relation_text else "")
                src, tgt = graph.node(edge.source).name, graph.node(edge.target).name
                out.append(
                    Candidate(
                        edge_index=ei,
                        source=edge.source,
                        relation=rel,
                        target=edge.target,
                        text=f"{src} {rel} {tgt}",
                        anchor=aid,
                        entity=other,
                        provenance=tuple(edge.provenance),
                    )
                )
    return out


def relation_alignment(relation_vecs: np.ndarray, variant_vecs: np.ndarray) -> np.ndarray:
    """Eq. 5: ``S_rel(r_kg, R_i) = max_{r' in R_i} cos(v_{r_kg}, v_{r'})`` for every row.

    Both inputs are unit-row matrices (kgpath embedders return unit rows).
    """
    r = np.asarray(relation_vecs, dtype=np.float32)
    v = np.asarray(variant_vecs, dtype=np.float32)
    if r.shape[0] == 0:
        return np.zeros(0, dtype=np.float32)
    if v.shape[0] == 0:
        raise ConfigError("relation alignment needs at least one relation variant")
    return (r @ v.T).max(axis=1)


def normalize_scores(z: Sequence[float] | np.ndarray, epsilon: float) -> np.ndarray:
    """Eq. 7: ``p_c = (z_c - min z + ε) / Σ_c' (z_c' - min z + ε)`` (float64).

    Equal scores give the uniform distribution; ε > 0 keeps the lowest candidate's weight
    above zero.
    """
    arr = np.asarray(z, dtype=np.float64).reshape(-1)
    if arr.size == 0:
        return arr
    if not np.isfinite(arr).all():
        raise BackendError(f"reranker scores must be finite, got {arr.tolist()}")
    if not epsilon > 0:
        raise ConfigError(f"epsilon must be > 0, got {epsilon!r}")
    shifted = arr - arr.min() + epsilon
    return shifted / shifted.sum()


def effective_candidates(p: Sequence[float] | np.ndarray) -> float:
    """Eq. 8 / Eq. 17: ``N_eff = 1 / Σ_c p_c²``.

    ``1 <= N_eff <= n`` (Lemma A.1): 1 for a point mass, ``n`` for the uniform
    distribution; and ``max_c p_c >= 1 / N_eff`` (Lemma A.2).

    >>> effective_candidates([0.25, 0.25, 0.25, 0.25])
    4.0
    """
    arr = np.asarray(p, dtype=np.float64).reshape(-1)
    if arr.size == 0:
        raise ConfigError("N_eff is undefined for an empty candidate set")
    if (arr < 0).any() or not np.isfinite(arr).all():
        raise ConfigError(f"probabilities must be finite and >= 0, got {arr.tolist()}")
    if not math.isclose(float(arr.sum()), 1.0, rel_tol=1e-6, abs_tol=1e-9):
        raise ConfigError(f"probabilities must sum to 1, got sum {float(arr.sum())!r}")
    return float(1.0 / np.square(arr).sum())


def sufficiency_state(n_eff: float | None, gamma: float) -> State:
    """Eq. 9: ``"resolved"`` iff ``N_eff <= γ`` (an empty pool, ``None``, is unresolved)."""
    if n_eff is None:
        return "unresolved"
    return "resolved" if n_eff <= gamma else "unresolved"


def induced_entities(candidates: Sequence[Candidate]) -> tuple[str, ...]:
    """Eq. 13: ``E_i(v)``, the placeholder-side entities of the candidates, in rank order.

    The placeholder side is the end that is not the anchor (Eq. 4 admits both directions).
    """
    return tuple(dict.fromkeys(c.entity for c in candidates))


def merge_bindings(
    sets: Sequence[Sequence[str]],
) -> tuple[tuple[str, ...], Literal["single", "intersection", "union", "empty"]]:
    """Eq. 14: ``E_b(v)`` = ∩ of the induced sets if non-empty, else their ∪.

    Returns the binding (order of first appearance) and which case applied.
    """
    if not sets:
        return (), "empty"
    if len(sets) == 1:
        return tuple(dict.fromkeys(sets[0])), "single"
    common = set(sets[0]).intersection(*map(set, sets[1:]))
    ordered = list(dict.fromkeys(x for s in sets for x in s))
    if common:
        return tuple(x for x in ordered if x in common), "intersection"
    return tuple(ordered), "union"


@dataclass(frozen=True)
class SufficiencyCheck:
    """Eq. 7-9 applied to an arbitrary scored list (see :func:`check_sufficiency`)."""

    state: State
    n_eff: float | None
    """``None`` when no item had a usable score."""
    top: tuple[int, ...]
    """Positions (in the input) of the ``k_s`` best-scored items, best first."""
    probabilities: tuple[float, ...]
    """Eq. 7 probabilities of :attr:`top`."""
    gamma: float

    def probability_of(self, position: int) -> float | None:
        """Eq. 7 probability of input item ``position`` (``None`` if not in the top)."""
        for pos, p in zip(self.top, self.probabilities, strict=True):
            if pos == position:
                return p
        return None


def check_sufficiency(
    scores: Sequence[float | None],
    *,
    gamma: float = 1.5,
    epsilon: float = 0.01,
    k_s: int = 3,
) -> SufficiencyCheck:
    """C2RAG's sufficiency check on any scored list (Eq. 7-9 over its top-``K_s``).

    Items whose score is ``None`` or not finite are ignored; with no usable score the
    list is unresolved and ``n_eff`` is ``None``. This is what the LlamaIndex and LangChain
    "sufficiency fallback" adapters apply to other retrievers' results.

    >>> check_sufficiency([0.29, 0.9, None, 0.3]).top
    (1, 3, 0)
    """
    if isinstance(k_s, bool) or not isinstance(k_s, int) or k_s <= 0:
        raise ConfigError(f"k_s must be a positive int, got {k_s!r}")
    if not isinstance(gamma, (int, float)) or not math.isfinite(gamma) or gamma <= 0:
        raise ConfigError(f"gamma must be a finite number > 0, got {gamma!r}")
    usable = [
        (i, float(s)) for i, s in enumerate(scores)
        if s is not None and not isinstance(s, bool) and math.isfinite(float(s))
    ]
    if not usable:
        return SufficiencyCheck("unresolved", None, (), (), float(gamma))
    usable.sort(key=lambda x: (-x[1], x[0]))
    top = usable[:k_s]
    p = normalize_scores([s for _, s in top], epsilon)
    n_eff = effective_candidates(p)
    return SufficiencyCheck(
        sufficiency_state(n_eff, gamma), n_eff, tuple(i for i, _ in top),
        tuple(float(x) for x in p), float(gamma),
    )


# ====================================================================== trace types
@dataclass(frozen=True)
class RecoveredPassage:
    """A passage found by textual recovery."""

    passage_id: str
    text: str
    s_txt: float
    """Eq. 11 cosine to ``Lin(τ_u)``."""
    score: float | None = None
    """Eq. 12 reranker score (``None`` if cut before reranking)."""


@dataclass(frozen=True)
class TextualRecovery:
    """Eq. 11-12 for one unresolved constraint."""

    query_text: str
    """``Lin(τ_u)``, the text embedded for Eq. 11."""
    scope: str
    """``"all"`` passages, ``"anchor"``-linked passages, or why recovery found nothing."""
    pool: tuple[RecoveredPassage, ...]
    """``Û_u``: top-``K'_t`` by ``S_txt``."""
    kept: tuple[RecoveredPassage, ...]
    """``T_u^txt``: top-``K_t`` after reranking."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (passage texts omitted from the pool)."""
        return {
            "query_text": self.query_text,
            "scope": self.scope,
            "pool": [{"passage_id": r.passage_id, "s_txt": r.s_txt} for r in self.pool],
            "kept": [dataclasses.asdict(r) for r in self.kept],
        }


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
        }


@dataclass(frozen=True)
class Evidence:
    """One evidence item of a block."""

    kind: Literal["passage", "triple"]
    id: str
    """Passage id, or ``edge:<index>`` for a triple without provenance."""
    text: str
    score: float
    """``p`` of the supporting candidate (structural) or the Eq. 12 score (textual)."""
    source: Literal["structural", "textual"]
    triple: str | None = None
    """``Lin(c)`` of the supporting candidate (structural evidence)."""


@dataclass(frozen=True)
class EvidenceBlock:
    """Eq. 16: ``B_i = [Lin(τ_i), T_i^txt]``."""

    constraint_index: int | None
    header: str
    """``Lin(τ_i)`` of the plan's constraint (placeholders kept)."""
    state: State
    n_eff: float | None
    bindings: Mapping[str, tuple[str, ...]]
    """Names bound to this constraint's placeholders."""
    evidence: tuple[Evidence, ...]
    recovery_used: bool


@dataclass(frozen=True)
class C2RAGResult:
    """C2RAG output: evidence blocks plus the plan and a full per-hop trace."""

    query: str
    plan: Plan
    hops: tuple[HopTrace, ...]
    bindings: Mapping[str, tuple[str, ...]]
    """Final ``E_b(v)`` per placeholder (node ids), Eq. 14."""
    binding_cases: Mapping[str, str]
    """Which case of Eq. 14 produced each binding."""
    blocks: tuple[EvidenceBlock, ...]
    config: C2RAGConfig
    binding_names: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def unbound(self) -> tuple[str, ...]:
        """Placeholders left without a binding."""
        return tuple(v for v in self.plan.placeholders if not self.bindings.get(v))

    def hop(self, constraint_index: int) -> HopTrace:
        """Return the hop that handled plan constraint ``constraint_index``."""
        for h in self.hops:
            if h.constraint_index == constraint_index:
                return h
        raise KeyError(f"no hop for constraint index {constraint_index!r}")

    def ranked_evidence(self) -> list[tuple[EvidenceBlock, Evidence]]:
        """All evidence, deduplicated by id, interleaved across blocks (round robin).

        Rank 1 of every block comes first, then rank 2, ..., so cutting the list at ``k``
        keeps evidence for as many constraints as possible.
        """
        seen: set[str] = set()
        out: list[tuple[EvidenceBlock, Evidence]] = []
        depth = max((len(b.evidence) for b in self.blocks), default=0)
        for r in range(depth):
            for b in self.blocks:
                if r < len(b.evidence) and b.evidence[r].id not in seen:
                    seen.add(b.evidence[r].id)
                    out.append((b, b.evidence[r]))
        return out

    @property
    def context(self) -> str:
        """The evidence blocks rendered for the answer prompt (:func:`format_blocks`)."""
        return format_blocks(self.blocks)

    @property
    def trace(self) -> dict[str, Any]:
        """JSON-friendly summary: plan, per-hop trace, bindings."""
        return {
            "method": "c2rag",
            "query": self.query,
            "plan": self.plan.to_dict(),
            "hops": [h.to_dict() for h in self.hops],
            "bindings": {k: list(v) for k, v in self.bindings.items()},
            "binding_names": {k: list(v) for k, v in self.binding_names.items()},
            "binding_cases": dict(self.binding_cases),
            "unbound": list(self.unbound),
            "gamma": self.config.gamma,
            "epsilon": self.config.epsilon,
        }

    def to_json(self) -> str:
        """Return :attr:`trace` as JSON."""
        return json.dumps(self.trace, ensure_ascii=False)


def format_blocks(blocks: Sequence[EvidenceBlock]) -> str:
    """Render Eq. 16's ordered blocks ``B_q`` as plain text for the answer prompt."""
    out = []
    for n, b in enumerate(blocks, 1):
        lines = [f"[Block {n}] {b.header}"]
        ne = "n/a" if b.n_eff is None else f"{b.n_eff:.2f}"
        status = f"state: {b.state.upper()} (N_eff {ne})"
        bound = "; ".join(f"{v} = {' / '.join(ns)}" for v, ns in b.bindings.items() if ns)
        if bound:
            status += f"; {bound}"
        if b.recovery_used:
            status += "; evidence from textual recovery"
        lines.append(status)
        if not b.evidence:
            lines.append("- (no evidence found)")
        for e in b.evidence:
            lines.append(f"- [{e.id}] {e.text}")
        out.append("\n".join(lines))
    return "\n\n".join(out)


# ====================================================================== retriever
@dataclass(frozen=True)
class _Req:
    """An I/O request yielded by the pipeline generator (sync and async drivers serve it)."""

    op: Literal["embed_queries", "embed_passages", "score", "complete"]
    args: tuple[Any, ...]


@dataclass
class _PassageIndex:
    version: int
    ids: list[str]
    texts: list[str]
    tokens: list[set[str]]
    index: VectorIndex


class ConstraintCheckedRetriever:
    """C2RAG retrieval over a :class:`~kgpath.KnowledgeGraph` and its passages.

    Parameters
    ----------
    graph
        The graph (nodes, edges with ``provenance`` passage ids, passages), or a
        :class:`~kgpath.GraphIndex` (its graph and embedder are used).
    embedder
        For relation alignment (Eq. 5) and passage search (Eq. 11). Defaults to the
        ``GraphIndex``'s embedder, else the bundled offline :class:`~kgpath.LocalEmbedder`.
    llm
        Planner (:class:`~kgpath.llm.LLM`). ``None`` uses the LLM-free fallback plan, which
        is weaker (see :func:`~kgpath.methods.c2rag_plan.fallback_plan`).
    reranker
        The Eq. 6 / Eq. 12 scorer. Default :class:`~kgpath.EmbeddingReranker` over the
        embedder (offline bi-encoder, weaker than the paper's cross-encoder); pass a
        :class:`~kgpath.CrossEncoderReranker` or :class:`~kgpath.CallableReranker` to use
        your own model.
    config
        :class:`C2RAGConfig`; per-call overrides are keyword arguments of :meth:`retrieve`.
    planner_prompt
        ``str.format`` template with ``{query}``, ``{m}``, ``{schema}``.

    Examples
    --------
    >>> from kgpath import HashingEmbedder, KnowledgeGraph
    >>> g = KnowledgeGraph.from_triples(
    ...     [("Ada", "born in", "London"), ("London", "capital of", "England")],
    ...     passages={"p": "Ada was born in London."}, provenance=[["p"], ["p"]])
    >>> r = ConstraintCheckedRetriever(g, embedder=HashingEmbedder())
    >>> res = r.retrieve("Where was Ada born?", plan={"constraints": [
    ...     {"head": "Ada", "relation": "born in", "tail": "?place", "variants": []}]})
    >>> res.hops[0].state, res.binding_names["?place"]
    ('resolved', ('London',))
    """

    def __init__(
        self,
        graph: KnowledgeGraph | GraphIndex,
        *,
        embedder: Embedder | None = None,
        llm: LLM | None = None,
        reranker: Reranker | None = None,
        config: C2RAGConfig | None = None,
        planner_prompt: str = PLANNER_PROMPT,
    ) -> None:
        if isinstance(graph, GraphIndex):
            self.graph = graph.graph
            embedder = embedder if embedder is not None else graph.embedder
        elif isinstance(graph, KnowledgeGraph):
            self.graph = graph
        else:
            raise ConfigError(
                f"graph must be a KnowledgeGraph or GraphIndex, got {type(graph).__name__}"
            )
        self.embedder: Embedder = embedder if embedder is not None else default_embedder()
        self.llm = llm
        self.reranker: Reranker = (
            reranker if reranker is not None else EmbeddingReranker(self.embedder)
        )
        if not callable(getattr(self.reranker, "score", None)):
            raise ConfigError(
                f"reranker must implement score(query, texts), got {type(reranker).__name__}"
            )
        self.config = config or C2RAGConfig()
        self.planner_prompt = planner_prompt
        self._check_prompt(planner_prompt)
        self._rel_cache: dict[str, np.ndarray] = {}
        self._tok_index: tuple[int, dict[str, list[int]]] | None = None
        self._passages: _PassageIndex | None = None

    @staticmethod
    def _check_prompt(template: str) -> None:
        try:
            template.format(query="q", m=3, schema="{}")
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(
                f"planner_prompt must be a str.format template using only {{query}}, {{m}}, "
                f"{{schema}} (literal braces doubled): {exc!r}"
            ) from exc

    # ------------------------------------------------------------------ public API
    def retrieve(
        self,
        query: str,
        *,
        plan: Plan | Mapping[str, Any] | Sequence[Any] | str | None = None,
        **overrides: Any,
    ) -> C2RAGResult:
        """Run C2RAG for ``query``.

        ``plan`` skips the planner (a :class:`Plan`, plan JSON text, or parsed JSON; it is
        validated like an LLM plan, and an unusable one raises :class:`~kgpath.ParseError`).
        ``overrides`` are :class:`C2RAGConfig` fields for this call only.
        """
        q = check_query(query)
        cfg = self._config(overrides)
        return self._drive(self._pipeline(q, plan, cfg))

    async def aretrieve(
        self,
        query: str,
        *,
        plan: Plan | Mapping[str, Any] | Sequence[Any] | str | None = None,
        **overrides: Any,
    ) -> C2RAGResult:
        """Async :meth:`retrieve` (LLM, embedder and reranker awaited natively)."""
        q = check_query(query)
        cfg = self._config(overrides)
        return await self._adrive(self._pipeline(q, plan, cfg))

    def plan(self, query: str, **overrides: Any) -> Plan:
        """Only the planning step (Eq. 1): the LLM plan, or the fallback plan."""
        q = check_query(query)
        return self._drive(self._plan(q, None, self._config(overrides)))

    async def aplan(self, query: str, **overrides: Any) -> Plan:
        """Async :meth:`plan`."""
        q = check_query(query)
        return await self._adrive(self._plan(q, None, self._config(overrides)))

    def planner_input(self, query: str, **overrides: Any) -> str:
        """Return the exact prompt the planner LLM receives for ``query``."""
        cfg = self._config(overrides)
        return self.planner_prompt.format(
            query=check_query(query), m=cfg.m, schema=json.dumps(PLAN_SCHEMA)
        )

    def _config(self, overrides: Mapping[str, Any]) -> C2RAGConfig:
        return with_overrides(self.config, overrides, label="C2RAG")

    # ------------------------------------------------------------------ drivers
    def _serve(self, req: _Req) -> Any:
        if req.op == "embed_queries":
            return self.embedder.embed_queries(*req.args)
        if req.op == "embed_passages":
            return self.embedder.embed_passages(*req.args)
        if req.op == "score":
            return self.reranker.score(*req.args)
        assert self.llm is not None
        return self.llm.complete(*req.args)

    async def _aserve(self, req: _Req) -> Any:
        if req.op == "embed_queries":
            return await self.embedder.aembed_queries(*req.args)
        if req.op == "embed_passages":
            return await self.embedder.aembed_passages(*req.args)
        if req.op == "score":
            ascore = getattr(self.reranker, "ascore", None)
            if ascore is None:
                return self.reranker.score(*req.args)
            return await ascore(*req.args)
        assert self.llm is not None
        return await self.llm.acomplete(*req.args)

    def _drive(self, gen: Generator[_Req, Any, Any]) -> Any:
        result: Any = None
        error: BaseException | None = None
        while True:
            try:
                req = gen.send(result) if error is None else gen.throw(error)
            except StopIteration as stop:
                return stop.value
            try:
                result, error = self._serve(req), None
            except Exception as exc:  # noqa: BLE001 - handed back to the pipeline
                result, error = None, exc

    async def _adrive(self, gen: Generator[_Req, Any, Any]) -> Any:
        result: Any = None
        error: BaseException | None = None
        while True:
            try:
                req = gen.send(result) if error is None else gen.throw(error)
            except StopIteration as stop:
                return stop.value
            try:
                result, error = await self._aserve(req), None
            except Exception as exc:  # noqa: BLE001 - handed back to the pipeline
                result, error = None, exc

    # ------------------------------------------------------------------ planning
    def _plan(
        self,
        query: str,
        given: Plan | Mapping[str, Any] | Sequence[Any] | str | None,
        cfg: C2RAGConfig,
    ) -> Generator[_Req, Any, Plan]:
        if given is not None:
            if isinstance(given, Plan) and given.source == "fallback":
                return given
            src = given.source if isinstance(given, Plan) else "user"
            return parse_plan(given, m=cfg.m, source=src)
        if self.llm is None:
            return fallback_plan(query, self.graph, note="no LLM planner configured")
        prompt = self.planner_prompt.format(
            query=query, m=cfg.m, schema=json.dumps(PLAN_SCHEMA)
        )
        reply: str | None = None
        try:
            reply = yield _Req("complete", (prompt,))
        except Exception as exc:  # noqa: BLE001 - any backend failure is reported
            reason = f"LLM call failed: {exc!r}"
            if cfg.on_invalid_plan == "error":
                raise BackendError(reason) from exc
        else:
            try:
                return parse_plan(reply if isinstance(reply, str) else str(reply), m=cfg.m)
            except ParseError as exc:
                reason = str(exc)
                if cfg.on_invalid_plan == "error":
                    raise
        log.warning("C2RAG planner: %s; using the LLM-free fallback plan", reason)
        log.warning("C2RAG: LLM plan unusable (%s); LLM-free fallback plan used", reason)
        fb = fallback_plan(query, self.graph, note=f"LLM plan unusable: {reason}")
        return dataclasses.replace(fb, raw=reply)

    # ------------------------------------------------------------------ pipeline
    def _pipeline(
        self,
        query: str,
        given: Plan | Mapping[str, Any] | Sequence[Any] | str | None,
        cfg: C2RAGConfig,
    ) -> Generator[_Req, Any, C2RAGResult]:
        plan = yield from self._plan(query, given, cfg)
        hops: dict[int, HopTrace] = {}
        induced: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
        order: list[HopTrace] = []

        def bindings() -> dict[str, tuple[str, ...]]:
            return {v: merge_bindings([s for _, s in sets])[0] for v, sets in induced.items()}

        def record(h: HopTrace) -> None:
            order.append(h)
            if h.constraint_index is not None:
                hops[h.constraint_index] = h
            if h.state == "resolved" and h.variable is not None:
                induced.setdefault(h.variable, []).append((h.constraint_index or 0, h.induced))

        if not plan.constraints:
            rec = yield from self._recover(query, query, (), cfg)
            order.append(
                HopTrace(
                    step=1, constraint_index=None, constraint=None, kind="query",
                    linearized=query, variable=None, gamma=cfg.gamma,
                    reason="empty plan: textual recovery over the query", recovery=rec,
                )
            )
        # P_1 (Eq. 2): anchored on the constant end.
        for i in plan.p1:
            c = plan.constraints[i]
            var = c.placeholders[0]
            surface = c.tail if c.head_is_var else c.head
            anchors = self._anchors(surface, cfg)
            lin = c.linearize(types=plan.placeholders)
            h = yield from self._hop(query, plan, i, c, "P1", anchors, var, lin, cfg,
                                     len(order) + 1, f"no graph node matches {surface!r}")
            record(h)
        # P_2 (Eq. 15): grounded once one end has a binding, until no progress.
        pending = list(plan.p2)
        progress = True
        while pending and progress:
            progress = False
            for i in list(pending):
                c = plan.constraints[i]
                bound = bindings()
                ends = [v for v in (c.head, c.tail) if bound.get(v)]
                if not ends:
                    continue
                pending.remove(i)
                progress = True
                a_var = ends[0]
                var = c.tail if a_var == c.head else c.head
                anchors = [
                    Anchor(nid, self.graph.node(nid).name, None, f"binding {a_var}")
                    for nid in bound[a_var]
                ]
                anchor_names = {a_var: [a.name for a in anchors]}
                lin = c.linearize(anchor_names, plan.placeholders)
                h = yield from self._hop(query, plan, i, c, "P2", anchors, var, lin, cfg,
                                         len(order) + 1, "")
                record(h)
        for i in pending:  # never grounded: a placeholder was never bound
            c = plan.constraints[i]
            lin = c.linearize(types=plan.placeholders)
            rec = yield from self._recover(query, lin, (), cfg)
            record(
                HopTrace(
                    step=len(order) + 1, constraint_index=i, constraint=c, kind="P2",
                    linearized=lin, variable=None, gamma=cfg.gamma,
                    reason=f"placeholder never bound: {' and '.join(c.placeholders)}",
                    recovery=rec,
                )
            )
        final = bindings()
        cases = {v: merge_bindings([s for _, s in sets])[1] for v, sets in induced.items()}
        blocks = tuple(self._block(plan, hops.get(i), i, final) for i in
                       range(len(plan.constraints)))
        if not plan.constraints:
            blocks = (self._block(plan, order[0], None, final),)
        names = {v: tuple(self.graph.node(n).name for n in ids) for v, ids in final.items()}
        return C2RAGResult(
            query=query,
            plan=plan,
            hops=tuple(order),
            bindings=final,
            binding_cases=cases,
            blocks=blocks,
            config=cfg,
            binding_names=names,
        )

    def _anchors(self, surface: str, cfg: C2RAGConfig) -> list[Anchor]:
        g = self.graph
        if self._tok_index is None or self._tok_index[0] != g.version:
            idx: dict[str, list[int]] = {}
            for i, n in enumerate(g.nodes):
                for t in set(tokens(n.name)):
                    idx.setdefault(t, []).append(i)
            self._tok_index = (g.version, idx)
        return match_anchors(surface, g, cfg.top_e, token_index=self._tok_index[1])

    def _hop(
        self,
        query: str,
        plan: Plan,
        ci: int,
        c: Constraint,
        kind: str,
        anchors: Sequence[Anchor],
        var: str,
        lin: str,
        cfg: C2RAGConfig,
        step: int,
        no_anchor_reason: str,
    ) -> Generator[_Req, Any, HopTrace]:
        base = HopTrace(
            step=step, constraint_index=ci, constraint=c, kind=kind, linearized=lin,
            variable=var, anchors=tuple(anchors), gamma=cfg.gamma,
        )
        if not anchors:
            rec = yield from self._recover(query, lin, (), cfg)
            return dataclasses.replace(base, reason=no_anchor_reason, recovery=rec)
        pool = candidate_pool(self.graph, [a.node_id for a in anchors])
        if not pool:
            rec = yield from self._recover(query, lin, anchors, cfg)
            names = ", ".join(repr(a.name) for a in anchors)
            return dataclasses.replace(
                base, reason=f"empty neighbourhood around {names}", recovery=rec
            )
        # Eq. 5: relation alignment, keep top-R.
        rel_set = c.relation_set(cfg.m)
        yield from self._embed_relations([x.relation for x in pool] + list(rel_set))
        s_rel = relation_alignment(
            np.stack([self._rel_cache[x.relation] for x in pool]),
            np.stack([self._rel_cache[r] for r in rel_set]),
        )
        init_pos = top_k(s_rel, cfg.top_r)
        initial = [dataclasses.replace(pool[int(k)], s_rel=float(s_rel[k])) for k in init_pos]
        # Eq. 6: contextual rerank on q ‖ Lin(τ) ‖ Lin(c), keep top-K_s.
        z = yield from self._score(cfg.rerank_query(query, lin), [x.text for x in initial])
        initial = [dataclasses.replace(x, z=float(s)) for x, s in zip(initial, z, strict=True)]
        top_pos = top_k(np.asarray(z, dtype=np.float64), cfg.k_s)
        # Eq. 7-9: sufficiency.
        p = normalize_scores(np.asarray(z, dtype=np.float64)[top_pos], cfg.epsilon)
        top = tuple(
            dataclasses.replace(initial[int(k)], p=float(pk))
            for k, pk in zip(top_pos, p, strict=True)
        )
        n_eff = effective_candidates(p)
        state = sufficiency_state(n_eff, cfg.gamma)
        hop = dataclasses.replace(
            base, pool_size=len(pool), initial=tuple(initial), top=top, n_eff=n_eff,
            state=state,
        )
        if state == "resolved":
            chosen = top[:1] if cfg.binding == "dominant" else top
            return dataclasses.replace(
                hop,
                induced=induced_entities(chosen),
                reason=f"N_eff {n_eff:.3f} <= gamma {cfg.gamma}",
            )
        rec = yield from self._recover(query, lin, anchors, cfg)
        return dataclasses.replace(
            hop, reason=f"N_eff {n_eff:.3f} > gamma {cfg.gamma}", recovery=rec
        )

    def _embed_relations(self, texts: Sequence[str]) -> Generator[_Req, Any, None]:
        missing = list(dict.fromkeys(t for t in texts if t not in self._rel_cache))
        if missing:
            vecs = yield _Req("embed_queries", (missing,))
            vecs = np.asarray(vecs, dtype=np.float32)
            if vecs.shape[0] != len(missing):
                raise BackendError(
                    f"embedder returned {vecs.shape[0]} vectors for {len(missing)} relations"
                )
            for t, v in zip(missing, vecs, strict=True):
                self._rel_cache[t] = v

    def _score(self, query: str, texts: Sequence[str]) -> Generator[_Req, Any, np.ndarray]:
        if not texts:
            return np.zeros(0, dtype=np.float64)
        out = yield _Req("score", (query, list(texts)))
        arr = np.asarray(out, dtype=np.float64).reshape(-1)
        if arr.size != len(texts):
            raise BackendError(f"reranker returned {arr.size} scores for {len(texts)} texts")
        if not np.isfinite(arr).all():
            raise BackendError(f"reranker returned non-finite scores: {arr.tolist()}")
        return arr

    # ------------------------------------------------------------------ recovery
    def _passage_index(self) -> Generator[_Req, Any, _PassageIndex | None]:
        g = self.graph
        if self._passages is not None and self._passages.version == g.version:
            return self._passages
        ps = list(g.passages.values())
        if not ps:
            return None
        texts = [p.text for p in ps]
        vecs = yield _Req("embed_passages", (texts,))
        self._passages = _PassageIndex(
            version=g.version,
            ids=[p.id for p in ps],
            texts=texts,
            tokens=[set(tokens(t)) for t in texts],
            index=VectorIndex(np.asarray(vecs, dtype=np.float32)),
        )
        return self._passages

    def _scope(self, pidx: _PassageIndex, anchors: Sequence[Anchor]) -> np.ndarray:
        g = self.graph
        linked: set[str] = set()
        for a in anchors:
            node = g.node(a.node_id)
            linked.update(node.provenance)
            for cand in candidate_pool(g, [a.node_id]):
                linked.update(cand.provenance)
        rows = []
        for r, (pid, toks) in enumerate(zip(pidx.ids, pidx.tokens, strict=True)):
            named = any(set(tokens(a.name)) <= toks for a in anchors if tokens(a.name))
            if pid in linked or named:
                rows.append(r)
        return np.asarray(rows, dtype=np.int64)

    def _recover(
        self, query: str, lin: str, anchors: Sequence[Anchor], cfg: C2RAGConfig
    ) -> Generator[_Req, Any, TextualRecovery]:
        """Eq. 11-12: passages by cosine to ``Lin(τ_u)``, top-K'_t, reranked, keep K_t."""
        pidx = yield from self._passage_index()
        if pidx is None:
            return TextualRecovery(lin, "none: the graph has no passages", (), ())
        scope = "all"
        cand: np.ndarray | None = None
        if cfg.recovery_scope == "anchor" and anchors:
            rows = self._scope(pidx, anchors)
            if rows.size:
                cand, scope = rows, "anchor"
            else:
                scope = "all (no passage linked to the anchors)"
        qv = yield _Req("embed_queries", ([lin],))
        rows_, s_txt = pidx.index.search(np.asarray(qv)[0], cfg.k_t_pool, cand)
        pool = [
            RecoveredPassage(pidx.ids[int(r)], pidx.texts[int(r)], float(s))
            for r, s in zip(rows_, s_txt, strict=True)
        ]
        scores = yield from self._score(cfg.rerank_query(query, lin), [x.text for x in pool])
        pool = [dataclasses.replace(x, score=float(s)) for x, s in zip(pool, scores, strict=True)]
        keep = top_k(np.asarray(scores, dtype=np.float64), cfg.k_t)
        return TextualRecovery(lin, scope, tuple(pool), tuple(pool[int(k)] for k in keep))

    # ------------------------------------------------------------------ blocks
    def _block(
        self,
        plan: Plan,
        hop: HopTrace | None,
        ci: int | None,
        final: Mapping[str, tuple[str, ...]],
    ) -> EvidenceBlock:
        g = self.graph
        c = plan.constraints[ci] if ci is not None else None
        header = (
            c.linearize(types=plan.placeholders)
            if c is not None
            else f"(no constraint) {hop.linearized if hop else ''}"
        )
        names = {
            v: tuple(g.node(n).name for n in final.get(v, ()))
            for v in (c.placeholders if c is not None else ())
        }
        if hop is None:  # cannot happen: every constraint gets a hop
            return EvidenceBlock(ci, header, "unresolved", None, names, (), False)
        ev: list[Evidence] = []
        if hop.state == "resolved" and c is not None:
            ev = self._structural_evidence(hop, c, final)
        elif hop.recovery is not None:
            ev = [
                Evidence("passage", r.passage_id, r.text, float(r.score or 0.0), "textual")
                for r in hop.recovery.kept
            ]
        return EvidenceBlock(ci, header, hop.state, hop.n_eff, names, tuple(ev),
                             hop.recovery_used)

    def _structural_evidence(
        self, hop: HopTrace, c: Constraint, final: Mapping[str, tuple[str, ...]]
    ) -> list[Evidence]:
        """Ĉ_top (candidates consistent with E_b) and their provenance passages, T_i^txt."""
        passages = self.graph.passages
        var = hop.variable
        allowed = set(final.get(var, ())) if var else set()
        anchor_var = next((v for v in c.placeholders if v != var), None)
        allowed_anchor = set(final.get(anchor_var, ())) if anchor_var else None
        out: dict[str, Evidence] = {}
        for cand in sorted(hop.top, key=lambda x: -(x.p or 0.0)):
            if cand.entity not in allowed:
                continue
            if allowed_anchor is not None and cand.anchor not in allowed_anchor:
                continue
            pids = [p for p in cand.provenance if p in passages]
            if not pids:
                key = f"edge:{cand.edge_index}"
                out.setdefault(
                    key, Evidence("triple", key, cand.text, float(cand.p or 0.0),
                                  "structural", cand.text)
                )
            for pid in pids:
                out.setdefault(
                    pid, Evidence("passage", pid, passages[pid].text, float(cand.p or 0.0),
                                  "structural", cand.text)
                )
        return list(out.values())

