"""Configuration of the graph-augmented retriever (a kgpath extension; no paper defaults)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from kgpath.errors import ConfigError

__all__ = ["EXPANSIONS", "LINK_RULES", "SCORERS", "AugmentedConfig", "Expansion", "LinkRule",
           "Scorer"]

Expansion = Literal["entities", "neighbours", "none"]
LinkRule = Literal["lead", "shared"]
Scorer = Literal["chain", "propagation"]
LINK_RULES: tuple[str, ...] = ("lead", "shared")
EXPANSIONS: tuple[str, ...] = ("entities", "neighbours", "none")
SCORERS: tuple[str, ...] = ("chain", "propagation")


def _number(name: str, v: object, low: float) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
        math.isfinite(v) and v >= low
    ):
        raise ConfigError(f"{name} must be a finite number >= {low}, got {v!r}")


def _int(name: str, v: object, low: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise ConfigError(f"{name} must be an int >= {low}, got {v!r}")


@dataclass(frozen=True, kw_only=True)
class AugmentedConfig:
    """Parameters of :class:`~kgpath.methods.augmented.GraphAugmentedRetriever`.

    The fusion rule (see :mod:`kgpath.methods.augmented.fusion`) ranks every passage by its
    best two-passage chain ``s'(d) + max(s'(a) + β·link(a, d))`` over the seed passages
    ``a``. The constants were chosen on HotpotQA-100 questions 0-49 only (offline spaCy
    graph, bundled embedder; best Recall@5, then Recall@2) from ``link_bonus`` in
    {0.02, 0.05, 0.1, 0.15, 0.2}, ``question_bonus`` in {0, 0.05, 0.1},
    ``max_entity_passages`` in {2, 3, 4, 5, 10, 20}, ``seeds`` in {5, 10} and both link
    rules; questions 50-99 were held out (``kgpath eval kg --halves``). First-half Recall@5
    stayed within 92-94 for ``link_bonus`` 0.05-0.15 and caps 2-5 with the lead rule
    (dense: 87); the shared-entity rule peaked at 91.

    The propagation constants (``scorer="propagation"``) were chosen the same way, on
    HotpotQA-100 q0-49 only: ``damping`` in {0.3, 0.5, 0.7}, ``seed_sharpness`` in
    {1.5, 2.5, 4}, ``entity_seed_weight`` in {0, 0.2, 0.5}, ``lead_weight`` in {1, 3, 10},
    relation edges on or off (first-half R@5 84-93; chosen: 92, R@2 78). Held out: HotpotQA
    q50-99 R@5 96 (dense 87); 2Wiki-100 83.2 (dense 66.8). The chain scorer measures higher
    on both (96.5 and 88.2), so it stays the default.

    Attributes
    ----------
    k
        Passages returned.
    seeds
        ``m``: the base retriever's top passages whose entities are anchors (and whose
        scores start chains).
    link_bonus
        ``β``, added to a chain whose two passages are linked through the graph (in the
        base score's units, cosine by default).
    question_bonus
        ``γ``, added to ``s(d)`` when passage ``d`` cites an entity linked in the question.
    max_entity_passages
        An entity links passages only if at most this many passages cite it (entities
        named everywhere, e.g. "United States", link everything and carry no signal).
    expansion
        ``"entities"``: ``a`` and ``d`` are linked when they cite a common anchor entity;
        ``"neighbours"``: also when ``d`` cites a graph neighbour of an entity of ``a``;
        ``"none"``: no graph links (the base ranking plus the question bonus).
    link_rule
        ``"lead"``: the linking entity must be the lead entity (first named) of one of the
        two passages, and the question bonus goes to passages whose lead entity the
        question names; ``"shared"``: any common entity (see
        :mod:`kgpath.methods.augmented.fusion`).
    use_query_entities
        Link the question's entities (:class:`kgpath.index.linking.EntityLinker`) as
        anchors (``"chain"``) or entity seeds (``"propagation"``) as well.
    scorer
        ``"chain"``: the best two-passage chain (:mod:`kgpath.methods.augmented.fusion`);
        ``"propagation"``: personalised PageRank over passages and entities, the HippoRAG 2
        idea (:mod:`kgpath.methods.augmented.propagation`).
    damping
        ``d`` of the propagation: the probability of following an edge rather than
        restarting at the seeds (HippoRAG 2: 0.5).
    seed_sharpness
        ``β`` of the passage seeds, a softmax of the z-scored base scores.
    entity_seed_weight
        Total restart mass on the question's entities (the passages' is 1); with
        ``link_rule="lead"`` only entities that lead some passage are seeded.
    lead_weight
        Weight of the edge between a passage and its lead entity (others weigh 1).
    relation_weight
        Weight of each entity–entity relation edge (0: passage–entity edges only).
    """

    k: int = 10
    seeds: int = 5
    link_bonus: float = 0.1
    question_bonus: float = 0.1
    max_entity_passages: int = 4
    expansion: Expansion = "entities"
    link_rule: LinkRule = "lead"
    use_query_entities: bool = True
    scorer: Scorer = "chain"
    damping: float = 0.7
    seed_sharpness: float = 1.5
    entity_seed_weight: float = 0.2
    lead_weight: float = 3.0
    relation_weight: float = 1.0

    def __post_init__(self) -> None:
        self._check_propagation()
        _int("k", self.k, 1)
        _int("seeds", self.seeds, 1)
        _int("max_entity_passages", self.max_entity_passages, 1)
        _number("link_bonus", self.link_bonus, 0.0)
        _number("question_bonus", self.question_bonus, 0.0)
        if self.expansion not in EXPANSIONS:
            raise ConfigError(f"expansion must be one of {EXPANSIONS}, got {self.expansion!r}")
        if self.link_rule not in LINK_RULES:
            raise ConfigError(f"link_rule must be one of {LINK_RULES}, got {self.link_rule!r}")
        if self.scorer not in SCORERS:
            raise ConfigError(f"scorer must be one of {SCORERS}, got {self.scorer!r}")
        if not isinstance(self.use_query_entities, bool):
            raise ConfigError(
                f"use_query_entities must be a bool, got {self.use_query_entities!r}")

    def _check_propagation(self) -> None:
        d = self.damping
        if isinstance(d, bool) or not isinstance(d, (int, float)) or not 0 <= d < 1:
            raise ConfigError(f"damping must be a number in [0, 1), got {d!r}")
        for name in ("seed_sharpness", "entity_seed_weight", "relation_weight"):
            _number(name, getattr(self, name), 0.0)
        _number("lead_weight", self.lead_weight, 1e-12)
