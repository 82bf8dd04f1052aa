"""C2RAG's result: Eq. 16's evidence blocks, the plan, the per-hop trace, ranked evidence.

:meth:`C2RAGResult.evidence` is the evidence contract's ranking (Appendix B).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kgpath.evidence import Evidence, check_output, rank_items
from kgpath.graph import KnowledgeGraph, Passage
from kgpath.methods.c2rag.blocks import BlockEvidence, EvidenceBlock, format_blocks
from kgpath.methods.c2rag.config import C2RAGConfig
from kgpath.methods.c2rag.hops import HopTrace
from kgpath.methods.c2rag.plan import Plan
from kgpath.methods.c2rag.sufficiency import normalize_scores

__all__ = ["C2RAGResult"]


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
    graph: KnowledgeGraph | None = field(default=None, repr=False, compare=False)
    """The graph retrieved from (set by the retriever); resolves passage metadata."""
    whole_graph: bool = field(default=True, repr=False, compare=False)
    """Whether :attr:`graph` is the whole graph. ``False`` for a database retrieval
    (:class:`~kgpath.methods.c2rag.cypher.CypherC2RAG`), whose graph holds only the nodes
    and passages the retrieval read: :meth:`evidence` then keeps the method's order (the
    propagation re-rank walks the whole graph)."""
    store_trace: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """A database retrieval's ``backend``, ``queries`` (round trips) and ``seconds``, added
    to :attr:`trace`; empty in memory."""

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

    def ranked_evidence(self) -> list[tuple[EvidenceBlock, BlockEvidence]]:
        """All block evidence, deduplicated by id, interleaved across blocks (round robin).

        Rank 1 of every block comes first, then rank 2, ..., so cutting the list at ``k``
        keeps evidence for as many constraints as possible. This is *not* the evidence
        contract's ranking: :meth:`evidence` ranks by the global score of Appendix B.
        """
        seen: set[str] = set()
        out: list[tuple[EvidenceBlock, BlockEvidence]] = []
        depth = max((len(b.evidence) for b in self.blocks), default=0)
        for r in range(depth):
            for b in self.blocks:
                if r < len(b.evidence) and b.evidence[r].id not in seen:
                    seen.add(b.evidence[r].id)
                    out.append((b, b.evidence[r]))
        return out

    def evidence(self, output: str = "passages", k: int | None = None) -> list[Evidence]:
        """The evidence contract (:mod:`kgpath.evidence`): pooled evidence by global score.

        Appendix B: "We pool and deduplicate evidence candidates retrieved across all
        atomic constraints, rank them by a global score". Every block's evidence is
        pooled, deduplicated by ``(kind, id)`` keeping the best-scoring occurrence (with
        that block's trace), and sorted by score descending; ties keep block order, then
        the in-block rank.

        The global score
            The paper does not define it, and the two kinds of block evidence are scored
            on different scales: structural evidence carries ``p``, the Eq. 7 probability
            of its candidate within ``C_top`` (in ``(0, 1]``), while textual evidence
            carries its raw Eq. 12 reranker score (a cosine in ``[-1, 1]`` for the
            bi-encoder, an unbounded logit for a cross-encoder). Sorting the raw values
            together would let the reranker's units decide between the two kinds. So the
            global score of a textual passage is Eq. 7 applied to the Eq. 12 scores of its
            block's ``K_t`` kept passages (same ε): both kinds are then probabilities
            within their own constraint. A resolved block's dominant candidate has
            ``p >= 1/γ`` (Lemma A.2), so confident structural evidence tends to rank
            first, as the authors' evaluation code does (graph-verified evidence scored
            1.0); a textual passage that dominates its block ranks with it. With
            ``K_t = 1`` every kept passage scores 1.0. The blocks keep the raw scores
            (:attr:`blocks`, :meth:`ranked_evidence`).

        Outputs
            Block evidence is already passage-grained (Eq. 16's ``T_i^txt`` is text):
            ``"passages"`` returns the passage items (with their source text and the
            passage's metadata) plus the triples the graph cites no passage for, kind
            ``triple`` (text ``Lin(c)``); ``"native"`` returns every item as the blocks
            hold it, in the same ranking. The two therefore hold the same items today.

        Trace: ``constraint`` (the block header ``Lin(τ_i)``), ``state``, ``n_eff``,
        ``bindings`` (``"?var=name"``), ``source`` (structural or textual), ``triple``
        (``Lin(c)``, structural only) and ``passage_ids``. With ``config.rerank`` (the
        default ``"propagation"``) the ``"passages"`` list is then re-ranked by graph
        propagation (:mod:`kgpath.methods.augmented.rerank`: scores become its mass, the
        trace gains ``rerank`` and ``method_score``, passages it reaches are added); not
        for a database retrieval (:attr:`whole_graph` false), which keeps this order.

        Raises
        ------
        ConfigError
            If ``output`` is not ``"passages"`` or ``"native"`` or ``k`` is not a
            positive int or ``None``.
        """
        mode = check_output(output)
        items = self._pooled_evidence()
        if mode == "passages":
            items = [e for e in items if e.kind == "passage" or not e.trace["passage_ids"]]
            if self.config.rerank is not None and self.graph is not None and self.whole_graph:
                from kgpath.methods.augmented.rerank import propagation_rerank

                items = propagation_rerank(self.graph, self.query, items, "c2rag")
        return rank_items(items, k)

    def global_scores(self, block: EvidenceBlock) -> list[float]:
        """The global score of each of ``block``'s evidence items (see :meth:`evidence`).

        Structural items keep ``p`` (Eq. 7 over ``C_top``); textual items get Eq. 7 over
        the block's textual scores (Eq. 12), with the configured ε.
        """
        textual = [i for i, e in enumerate(block.evidence) if e.source == "textual"]
        out = [float(e.score) for e in block.evidence]
        if textual:
            p = normalize_scores([block.evidence[i].score for i in textual],
                                 self.config.epsilon_value)
            for i, pi in zip(textual, p, strict=True):
                out[i] = float(pi)
        return out

    def _pooled_evidence(self) -> list[Evidence]:
        store = self.graph.passages if self.graph is not None else {}
        best: dict[tuple[str, str], tuple[tuple[float, int, int], Evidence]] = {}
        for bi, block in enumerate(self.blocks):
            for r, (item, g) in enumerate(
                zip(block.evidence, self.global_scores(block), strict=True)
            ):
                key = (item.kind, item.id)
                order = (-g, bi, r)
                if key not in best or order < best[key][0]:
                    best[key] = (order, _contract_item(block, item, g, store))
        return [ev for _, ev in sorted(best.values(), key=lambda x: x[0])]

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
            **self.store_trace,
        }

    def to_json(self) -> str:
        """Return :attr:`trace` as JSON."""
        return json.dumps(self.trace, ensure_ascii=False)


def _contract_item(
    block: EvidenceBlock, item: BlockEvidence, score: float, store: Mapping[str, Passage]
) -> Evidence:
    """One block evidence item as a contract :class:`~kgpath.evidence.Evidence`."""
    trace: dict[str, Any] = {
        "constraint": block.header,
        "state": block.state,
        "n_eff": block.n_eff,
        "bindings": [f"{v}={n}" for v, names in block.bindings.items() for n in names],
        "source": item.source,
        "passage_ids": [item.id] if item.kind == "passage" else [],
    }
    if item.triple is not None:
        trace["triple"] = item.triple
    passage = store.get(item.id) if item.kind == "passage" else None
    meta: Mapping[str, Any] = passage.metadata if passage is not None else {}
    return Evidence(item.id, item.text, score, item.kind, "c2rag", trace=trace,
                    source_metadata=meta)
