"""C2RAG: constraint-checked retrieval with an N_eff sufficiency check.

Reference: Y. Ma, S. Liang, R. Wang, J. Li, Q. Chen, M. Li, K. Qin, "Mitigating KG Quality
Issues: A Robust Multi-Hop GraphRAG Retrieval Framework", 2026
(shared/papers/c2rag-constraint-sufficiency.txt). Section numbers and equations below
refer to that paper.

Steps, named after section 3:

1. **Atomic constraint planning** (3.2, Eq. 1): an LLM writes a plan of triple patterns with
   placeholders and ``m`` relation variants (:mod:`~kgpath.methods.c2rag.plan`); without an
   LLM an honest, weaker heuristic plan is used (:mod:`~kgpath.methods.c2rag.fallback`).
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
9. **Ranked evidence** (Appendix B): :meth:`C2RAGResult.evidence` pools the blocks' evidence,
   deduplicates it and ranks it by a global score (the evidence contract,
   :mod:`kgpath.evidence`).

Modules, in the paper's order: :mod:`~kgpath.methods.c2rag.config`,
:mod:`~kgpath.methods.c2rag.plan` and :mod:`~kgpath.methods.c2rag.fallback` (3.2),
:mod:`~kgpath.methods.c2rag.alignment` (Eq. 2-5), :mod:`~kgpath.methods.c2rag.hops`
(Eq. 5-9 per constraint), :mod:`~kgpath.methods.c2rag.sufficiency` (Eq. 7-10),
:mod:`~kgpath.methods.c2rag.recovery` (Eq. 11-12), :mod:`~kgpath.methods.c2rag.bindings`
(Eq. 13-15), :mod:`~kgpath.methods.c2rag.blocks` (Eq. 16),
:mod:`~kgpath.methods.c2rag.result`, :mod:`~kgpath.methods.c2rag.retriever` (and
:mod:`~kgpath.methods.c2rag.drive`, the sync/async I/O protocol;
:mod:`~kgpath.methods.c2rag.access`, how the pipeline reads its graph;
:mod:`~kgpath.methods.c2rag.cypher`, :class:`CypherC2RAG` over a Cypher database;
:mod:`~kgpath.methods.c2rag.prefetch`, the query texts of a plan's ``P_1`` hops embedded in
one request).

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

from kgpath.methods.c2rag.alignment import (
    Anchor,
    Candidate,
    candidate_pool,
    match_anchors,
    relation_alignment,
    token_coverage,
)
from kgpath.methods.c2rag.bindings import induced_entities, merge_bindings
from kgpath.methods.c2rag.blocks import BlockEvidence, Evidence, EvidenceBlock, format_blocks
from kgpath.methods.c2rag.config import (
    BindingMode,
    C2RAGConfig,
    InvalidPlanPolicy,
    RecoveryScope,
    RerankInput,
    State,
)
from kgpath.methods.c2rag.cypher import CypherC2RAG
from kgpath.methods.c2rag.fallback import anchored_plan, fallback_plan
from kgpath.methods.c2rag.hops import HopTrace
from kgpath.methods.c2rag.plan import PLAN_SCHEMA, Constraint, Plan, parse_plan, tokens
from kgpath.methods.c2rag.recovery import RecoveredPassage, TextualRecovery
from kgpath.methods.c2rag.result import C2RAGResult
from kgpath.methods.c2rag.retriever import ConstraintCheckedRetriever
from kgpath.methods.c2rag.sufficiency import (
    SufficiencyCheck,
    check_sufficiency,
    effective_candidates,
    normalize_scores,
    sufficiency_state,
)
from kgpath.prompts.c2rag import PLANNER_PROMPT

__all__ = [
    "C2RAGConfig",
    "Anchor",
    "Candidate",
    "RecoveredPassage",
    "TextualRecovery",
    "HopTrace",
    "BlockEvidence",
    "Evidence",
    "EvidenceBlock",
    "C2RAGResult",
    "ConstraintCheckedRetriever",
    "CypherC2RAG",
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
    # plans: the schema, the prompt, parsing, the LLM-free and anchored plans
    "PLAN_SCHEMA",
    "PLANNER_PROMPT",
    "Constraint",
    "Plan",
    "anchored_plan",
    "fallback_plan",
    "parse_plan",
    "tokens",
    "State",
    "BindingMode",
    "RecoveryScope",
    "InvalidPlanPolicy",
    "RerankInput",
]
