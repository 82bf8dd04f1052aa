"""C2RAG evidence blocks (Eq. 16): one block ``B_i = [Lin(τ_i), T_i^txt]`` per constraint.

A resolved constraint's evidence is structural: the candidates of ``C_top`` consistent
with the final bindings (``Ĉ_top``) and their provenance passages (a triple the graph cites
no passage for is kept as a triple). An unresolved constraint's evidence is textual: the
``K_t`` passages kept by recovery (Eq. 12). :func:`format_blocks` renders the ordered
blocks ``B_q`` for the answer prompt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from kgpath.graph import KnowledgeGraph
from kgpath.methods.c2rag.config import State
from kgpath.methods.c2rag.hops import HopTrace
from kgpath.methods.c2rag.plan import Constraint, Plan

__all__ = [
    "BlockEvidence",
    "Evidence",
    "EvidenceBlock",
    "build_block",
    "format_blocks",
    "structural_evidence",
]


@dataclass(frozen=True)
class BlockEvidence:
    """One evidence item of a block.

    Not the contract's :class:`kgpath.evidence.Evidence`;
    :meth:`~kgpath.methods.c2rag.C2RAGResult.evidence` converts these.
    """

    kind: Literal["passage", "triple"]
    id: str
    """Passage id, or ``edge:<index>`` for a triple without provenance."""
    text: str
    score: float
    """``p`` of the supporting candidate (structural) or the Eq. 12 score (textual)."""
    source: Literal["structural", "textual"]
    triple: str | None = None
    """``Lin(c)`` of the supporting candidate (structural evidence)."""


Evidence = BlockEvidence
"""Backward-compatible alias of :class:`BlockEvidence` (the name collided with
:class:`kgpath.evidence.Evidence`)."""


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
    evidence: tuple[BlockEvidence, ...]
    recovery_used: bool


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


def build_block(
    graph: KnowledgeGraph,
    plan: Plan,
    hop: HopTrace | None,
    ci: int | None,
    final: Mapping[str, tuple[str, ...]],
) -> EvidenceBlock:
    """Eq. 16: the block of plan constraint ``ci`` (``None``: the query-only block)."""
    c = plan.constraints[ci] if ci is not None else None
    header = (
        c.linearize(types=plan.placeholders)
        if c is not None
        else f"(no constraint) {hop.linearized if hop else ''}"
    )
    names = {
        v: tuple(graph.node(n).name for n in final.get(v, ()))
        for v in (c.placeholders if c is not None else ())
    }
    if hop is None:  # cannot happen: every constraint gets a hop
        return EvidenceBlock(ci, header, "unresolved", None, names, (), False)
    ev: list[BlockEvidence] = []
    if hop.state == "resolved" and c is not None:
        ev = structural_evidence(graph, hop, c, final)
    elif hop.recovery is not None:
        ev = [
            BlockEvidence("passage", r.passage_id, r.text, float(r.score or 0.0), "textual")
            for r in hop.recovery.kept
        ]
    return EvidenceBlock(ci, header, hop.state, hop.n_eff, names, tuple(ev), hop.recovery_used)


def structural_evidence(
    graph: KnowledgeGraph, hop: HopTrace, c: Constraint, final: Mapping[str, tuple[str, ...]]
) -> list[BlockEvidence]:
    """Ĉ_top (candidates consistent with E_b) and their provenance passages, T_i^txt.

    Candidates are visited by ``p`` descending; a passage cited by several keeps the first
    (most probable) candidate's ``p`` and ``Lin(c)``.
    """
    passages = graph.passages
    var = hop.variable
    allowed = set(final.get(var, ())) if var else set()
    anchor_var = next((v for v in c.placeholders if v != var), None)
    allowed_anchor = set(final.get(anchor_var, ())) if anchor_var else None
    out: dict[str, BlockEvidence] = {}
    for cand in sorted(hop.top, key=lambda x: -(x.p or 0.0)):
        if cand.entity not in allowed:
            continue
        if allowed_anchor is not None and cand.anchor not in allowed_anchor:
            continue
        p = float(cand.p or 0.0)
        pids = [pid for pid in cand.provenance if pid in passages]
        if not pids:
            key = f"edge:{cand.edge_index}"
            out.setdefault(key, BlockEvidence("triple", key, cand.text, p, "structural",
                                              cand.text))
        for pid in pids:
            out.setdefault(pid, BlockEvidence("passage", pid, passages[pid].text, p,
                                              "structural", cand.text))
    return list(out.values())
