"""Result of the graph-augmented retriever and its evidence (passages)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kgpath.evidence import Evidence, check_output, rank_items
from kgpath.methods.augmented.config import AugmentedConfig

if TYPE_CHECKING:  # pragma: no cover
    from kgpath.graph import KnowledgeGraph
    from kgpath.index.linking import EntityLink

__all__ = ["AugmentedHit", "AugmentedResult"]

METHOD = "augmented"


@dataclass(frozen=True)
class AugmentedHit:
    """One ranked passage with the chain that ranked it.

    ``base_score`` is ``s(d)``, ``seed_score`` ``s'(d)`` (with the question bonus),
    ``score`` the chain score; ``partner`` the seed passage of the chain (``None`` when the
    passage stands alone) and ``via`` the entity ids linking the two (empty when the chain
    is unlinked).
    """

    passage_id: str
    score: float
    base_score: float
    seed_score: float
    partner: str | None = None
    via: tuple[str, ...] = ()
    question_entity: bool = False


@dataclass(frozen=True)
class AugmentedResult:
    """Ranked passages, the seeds and the question's linked entities."""

    query: str
    hits: tuple[AugmentedHit, ...]
    seeds: tuple[str, ...]
    query_links: tuple[EntityLink, ...]
    config: AugmentedConfig
    graph: KnowledgeGraph | None = field(default=None, repr=False, compare=False)

    @property
    def passage_ids(self) -> list[str]:
        """Passage ids, best first."""
        return [h.passage_id for h in self.hits]

    def evidence(self, output: str = "passages", k: int | None = None) -> list[Evidence]:
        """The evidence contract (:mod:`kgpath.evidence`).

        The native unit is the passage, so ``"native"`` and ``"passages"`` agree: hits in
        chain-score order. Trace: ``query_similarity`` (``s(d)``), ``supporting`` (the
        chain's seed passage), ``node_ids`` (the linking entities), ``anchor_id`` (the
        first linking entity) and ``fallback`` (``True`` when no link moved the passage).
        """
        check_output(output)
        return rank_items((self._item(h) for h in self.hits), k)

    def _item(self, hit: AugmentedHit) -> Evidence:
        trace: dict[str, Any] = {
            "query_similarity": hit.base_score,
            "supporting": [hit.partner] if hit.partner else [],
            "node_ids": list(hit.via),
            "fallback": not hit.via and not hit.question_entity,
        }
        if hit.via:
            trace["anchor_id"] = hit.via[0]
        g = self.graph
        p = g.passages.get(hit.passage_id) if g is not None else None
        text = p.text if p is not None else hit.passage_id
        meta = p.metadata if p is not None else {}
        return Evidence(hit.passage_id, text, hit.score, "passage", METHOD, trace=trace,
                        source_metadata=meta)
