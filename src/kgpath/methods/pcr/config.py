"""PCR configuration (:class:`PCRConfig`): measured defaults, the paper one preset away."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Literal

from kgpath.errors import ConfigError
from kgpath.graph import Direction
from kgpath.index.hybrid import HYBRID_NORMS, HybridNorm

if TYPE_CHECKING:
    from kgpath.methods.pcr.scoring import ScoreStrategy

__all__ = [
    "PASSAGE_WEIGHT",
    "AnchorFallback",
    "AnchorPolicy",
    "Fallback",
    "PCRConfig",
    "PassageOrder",
    "Rerank",
    "PathText",
    "TemplateScorer",
    "ScoreMode",
    "SearchMode",
]

SearchMode = Literal["vector", "hybrid", "bm25"]
Fallback = Literal["none", "global"]
AnchorPolicy = Literal["error", "similar"]
AnchorFallback = Literal["none", "similar", "passage"]
ScoreMode = Literal["node", "path", "mixed", "template"]
PathText = Literal["full", "relations"]
PassageOrder = Literal["question", "hits"]
TemplateScorer = Literal["aligned", "text"]
Rerank = Literal["propagation"]

PASSAGE_WEIGHT = 0.7
"""Default ``passage_weight`` (:mod:`kgpath.methods.pcr.passages`)."""


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"{name} must be one of {allowed}, got {value!r}")


def _positive(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{name} must be a positive int, got {value!r}")


@dataclass(frozen=True, kw_only=True)
class PCRConfig:
    """PCR hyperparameters.

    The defaults are the configuration measured best for passage output (the adapters'
    default): both edge directions, depth 1 (see :meth:`for_passages`). Everything else
    follows the paper (Appendix A.2). :meth:`paper` is the paper's reachability
    (``direction="out"``, unlimited depth, section 3.2), one named preset away.

    Attributes
    ----------
    k
        Number of results (paper: 10).
    max_depth
        ``d_max`` in section 3.2; ``None`` = unlimited (the paper's, :meth:`paper`).
        Default 1 (:meth:`for_passages`).
    direction
        Edge direction for reachability: ``"both"`` (default, :meth:`for_passages`),
        ``"out"`` (the paper's, :meth:`paper`) or ``"in"``.
    mode
        ``"vector"`` (Eq. 2), ``"hybrid"`` (section 3.4) or ``"bm25"`` (ablation).
    alpha
        Hybrid weight of the vector score (paper: 0.7).
    hybrid_norm
        How the BM25 term of the hybrid score is scaled (:mod:`kgpath.index.hybrid`):
        ``"max"`` (default, BM25 / its maximum over the scored candidates), ``"raw"`` (the
        paper's section 3.4 formula read literally: unscaled BM25), ``"minmax"`` (both terms
        min-max scaled over the candidates, as the authors' ``HybridRetriever`` baseline).
    fallback
        ``"none"`` or ``"global"``: what to do when nothing but the anchor is reachable
        (section 3.5). Global search defeats the structural constraint, so it is off by
        default and always recorded in :attr:`PCRResult.fallback_used`.
    include_anchor
        Whether the anchor itself is a candidate (path of length 0). The PathRAG-6 ground
        truth lists anchors as relevant, so the default is ``True``.
    unknown_anchor
        ``"error"`` raises :class:`NodeNotFoundError` for an unknown id/name;
        ``"similar"`` falls back to the node most similar to the query (recorded).
    link_anchors
        With no ``anchor``/``anchor_name`` given, link the entities the query names to
        nodes (:mod:`kgpath.methods.pcr.anchors`) and search from all of them (the union
        of their reachable sets, each node keeping the path from its nearest anchor).
        A kgpath extension: the paper takes the anchor as given.
    anchor_fallback
        With no anchor given and none linked: ``"similar"`` (default) anchors at the node
        most similar to the query, recorded as ``anchor_resolution="similarity"``, in the
        trace (``anchor_fallback``) and in a log line; ``"none"`` raises
        :class:`NodeNotFoundError`, as the paper would (its PCR always starts from a given
        anchor, section 3.1; section 6: "the method requires appropriate anchor node
        selection"). The default is not the paper's: a retriever dropped into a LlamaIndex
        or LangChain pipeline with default arguments must answer a question that names no
        node rather than raise; the fallback is never silent. ``"passage"`` (a kgpath
        extension) anchors at the nodes cited by the passage most similar to the query
        (the index's shared passage vectors, in memory; up to ``max_anchors``), recorded
        as ``anchor_resolution="passage"``; without passage vectors it acts as
        ``"similar"``.
    max_anchors
        At most this many linked anchors (question order) or ``"passage"`` fallback
        anchors; ``None``: all.
    score
        How reachable nodes are ranked. ``"node"`` (default, Eq. 2): the node's own score
        (``mode``). ``"path"`` and ``"mixed"`` are a **kgpath extension** (not in the
        paper): the query's cosine to the textualised path from the node's anchor
        (:mod:`kgpath.methods.pcr.pathscore`), alone or as
        ``path_weight·path + (1 − path_weight)·node``. ``"template"`` (also a kgpath
        extension, in-memory graphs): every relation chain of up to ``max_depth`` steps
        from the anchor (3 when ``None``) is written as text with its direction and scored
        against the query; a node takes its best chain's score, ties by its own score
        (:mod:`kgpath.methods.pcr.templates`). Each name is a strategy object
        (:data:`kgpath.methods.pcr.scoring.SCORES`); a
        :class:`~kgpath.methods.pcr.scoring.ScoreStrategy` is accepted too.
    path_weight
        Weight of the path score in ``score="mixed"``. 0.7, chosen on the first half of
        the reachable MetaQA dev questions (``kgpath eval pcr --metaqa``; best mean Hits@1
        over 1-3 hops of 0.3/0.5/0.7 with ``path_text="relations"``).
    path_text
        ``"full"``: every name and relation on the path (``"Marie Curie born in Warsaw"``);
        ``"relations"``: the relation labels only, every name masked, so paths with the same
        relation chain share one text (embedded once; far cheaper on dense graphs). With
        ``score="template"``: ``"full"`` names the anchor in each chain's text,
        ``"relations"`` masks it too.
    template_lexical
        ``score="template"`` only: added to a chain's cosine per step whose relation names
        a word of the query (:func:`~kgpath.methods.pcr.templates.lexical_matches`). 0.1
        outweighs any cosine gap seen, so chains are ranked by matched steps first; 0 turns
        it off. Chosen on the first half of the reachable MetaQA dev questions.
    template_node_weight
        ``score="template"`` only: weight of the mean node score (Eq. 2's own score, over
        at most 100 of the chain's endpoints) added to the chain's score, so a chain
        whose endpoints look like what the question asks for ("what types" → genres, not
        actors) wins among chains with the same text evidence. 0.6 of {0, 0.3, 0.6, 1}
        on the first half of the reachable MetaQA dev questions (mean Hits@1 over 1-3
        hops 71.3 / 72.9 / 74.5 / 73.4).
    template_scorer
        ``score="template"`` only: how a relation chain is scored. ``"aligned"`` (default):
        each end of the chain against its own part of the question (the wh-phrase against
        the last step, the words next to the anchor against the first), the question
        against every step, relation words and a per-step prior; a relation is written as
        its label and its most frequent objects (:mod:`kgpath.methods.pcr.chainmatch`,
        ``chain_*`` fields). ``"text"``: the whole chain written as one text and embedded
        (the default before issue 25, with ``template_lexical`` and
        ``template_node_weight``). MetaQA dev, anchor given, Hits@1 1/2/3-hop: ``"text"``
        85.3 / 75.1 / 66.4, ``"aligned"`` 91.4 / 92.9 / 90.9 (first half 90.7 / 92.9 /
        91.3, second half 92.1 / 92.9 / 90.5); with the hop count unknown
        (``max_depth=None``, chains up to 3 steps for every question) 26.2 / 51.4 / 66.4
        and 76.7 / 64.8 / 83.8.
    template_beam
        Chains kept (and expanded) per length, best first by their aligned score so far,
        when a length has more (:func:`~kgpath.methods.pcr.templates.beam_templates`; both
        scorers). 256: no MetaQA dev question has more than 128 chains of one length, so
        the beam only bounds hubs (the cost is in distinct relation chains, never in a
        node's degree).
    chain_focus, chain_anchor, chain_relations, chain_lexical, chain_length, chain_length_open
        ``template_scorer="aligned"``: weights of the focus / last-step cosine, the anchor
        context / first-step cosine, the mean question / step cosine, the relation words the
        question uses (per step) and the per-step prior
        (:func:`~kgpath.methods.pcr.chainmatch.chain_scores`). 1, 1, 1, 0.1, 0.025 (the
        same ranking as 0.5, 0.5, 0.5, 0.05, 0.0125): the best mean Hits@1 over 1-3 hops
        on the first half of the reachable MetaQA dev questions (91.7; second half 91.8) in
        a grid of focus and anchor weights {0.5, 1, 2}, question {0, 0.5, 1}, lexical
        {0, 0.025, 0.05}, length {0, 0.0125} (ties to the first in grid order), with
        ``chain_examples=5``. ``chain_length`` is the per-step prior when ``max_depth`` is
        given (the caller knows how far the answer is: a chain that uses every hop wins
        ties with its prefix); ``chain_length_open`` when ``max_depth`` is ``None``:
        -0.025, the best of {-0.1, -0.05, -0.025, 0, 0.025} on the first half with every
        question searched to 3 steps (mean Hits@1 74.9; +0.025 there gives 43.4, chains
        ending by walking back over their own relation win).
    chain_examples
        ``template_scorer="aligned"``: how many of a relation's most frequent objects its
        text names (``"has tags: bd-r, ..."``; a step walked backwards: its most frequent
        subjects, against the focus, :func:`~kgpath.methods.pcr.chainmatch.relation_texts`);
        0: the label alone. 5 of {0, 3, 5} on the first half (mean Hits@1 over 1-3 hops
        90.4 / 91.4 / 91.7 with one text per relation, best weights each): a label alone
        does not say that "what words describe X" asks for tags.
    passage_order
        How ``evidence(output="passages")`` orders passages
        (:mod:`kgpath.methods.pcr.passages`; the paper ranks nodes, so this is a kgpath
        choice). ``"question"`` (default): the passages cited by the hits and anchors, by
        ``passage_weight·cos(q, passage) + (1 − passage_weight)·best citing hit score``,
        with the index's shared passage vectors (in memory; other backends use hit
        order). ``"hits"``: hit order, then each hit's provenance.
    passage_weight
        The cosine's weight in ``passage_order="question"``; 0.7 chosen on HotpotQA-100
        questions 0-49.
    passage_hits
        With ``passage_order="question"``: the passages of this many hits are candidates
        (at least ``k``; the extra hits are not in :attr:`PCRResult.hits`).
    rerank
        ``"propagation"`` (default): ``evidence(output="passages")`` re-ranks those
        passages by personalised PageRank over the graph's passages and entities, seeded by
        them and the question's entities (:mod:`kgpath.methods.augmented.rerank`, a kgpath
        extension; in-memory graphs); ``None``: as ordered above (:meth:`paper`). R@5 with
        both directions, depth 1: HotpotQA-100 89.5 → 92.5 (q0-49 / q50-99: 93 / 92),
        2Wiki-100 69.0 → 84.2 (87.5 / 81); dense 87.0 / 66.8.
    """

    k: int = 10
    max_depth: int | None = 1
    direction: Direction = "both"
    mode: SearchMode = "vector"
    alpha: float = 0.7
    hybrid_norm: HybridNorm = "max"
    fallback: Fallback = "none"
    include_anchor: bool = True
    unknown_anchor: AnchorPolicy = "error"
    link_anchors: bool = True
    anchor_fallback: AnchorFallback = "similar"
    score: ScoreMode | ScoreStrategy = "node"
    path_weight: float = 0.7
    path_text: PathText = "full"
    template_lexical: float = 0.1
    template_node_weight: float = 0.6
    template_scorer: TemplateScorer = "aligned"
    template_beam: int = 256
    chain_focus: float = 1.0
    chain_anchor: float = 1.0
    chain_relations: float = 1.0
    chain_lexical: float = 0.1
    chain_length: float = 0.025
    chain_length_open: float = -0.025
    chain_examples: int = 5
    passage_order: PassageOrder = "question"
    passage_weight: float = PASSAGE_WEIGHT
    passage_hits: int = 20
    max_anchors: int | None = None
    rerank: Rerank | None = "propagation"

    @classmethod
    def paper(cls, **overrides: Any) -> PCRConfig:
        """Return the paper's settings: out-edges, unlimited depth, no passage re-rank.

        Section 3.1-3.2: the reachable set ``R(a)`` of the anchor follows edge direction
        with ``d_max`` unlimited by default; the other options are already the paper's
        (Appendix A.2: ``k = 10``, ``alpha = 0.7``, Eq. 2 node scores). The paper
        reproductions and tests that pin the paper's behaviour use this preset.

        Examples
        --------
        >>> PCRConfig.paper().direction, PCRConfig.paper().max_depth
        ('out', None)
        """
        return _preset(cls, {"direction": "out", "max_depth": None, "rerank": None}, overrides)

    @classmethod
    def for_passages(cls, **overrides: Any) -> PCRConfig:
        """Return the configuration measured best for passages.

        Both directions, depth 1, passages re-ranked by graph propagation (``rerank``).

        The defaults (``PCRConfig() == PCRConfig.for_passages()``); kept as a name so a
        caller can say what it means.

        R@5 (offline graph, bundled embedder, ``kgpath eval kg --halves``), without the
        re-rank: HotpotQA-100 89.5 (q0-49 / q50-99: 89 / 90) against 86.5 with
        :meth:`paper`; 2Wiki-100 69.0 (71 / 67) against 63.0; dense 87.0 and 66.8; the
        re-rank then gives 92.5 and 84.2 (``rerank``). Depth 1 / 2 / 3 with both directions
        were compared on 2Wiki-100 q0-49 (R@5 71 / 66.5 / -) and HotpotQA-100 (89.5 / 88.5
        / 87.5 over all questions).
        """
        return _preset(cls, {"direction": "both", "max_depth": 1, "rerank": "propagation"},
                       overrides)

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k <= 0:
            raise ConfigError(f"k must be a positive int, got {self.k!r}")
        if self.max_depth is not None and (
            isinstance(self.max_depth, bool)
            or not isinstance(self.max_depth, int)
            or self.max_depth < 0
        ):
            raise ConfigError(f"max_depth must be None or an int >= 0, got {self.max_depth!r}")
        if self.direction not in ("out", "in", "both"):
            raise ConfigError(f"direction must be 'out', 'in' or 'both', got {self.direction!r}")
        if self.mode not in ("vector", "hybrid", "bm25"):
            raise ConfigError(f"mode must be 'vector', 'hybrid' or 'bm25', got {self.mode!r}")
        for name in ("alpha", "path_weight", "template_lexical", "template_node_weight",
                     "passage_weight"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
                raise ConfigError(f"{name} must be in [0, 1], got {v!r}")
        if self.fallback not in ("none", "global"):
            raise ConfigError(f"fallback must be 'none' or 'global', got {self.fallback!r}")
        if self.unknown_anchor not in ("error", "similar"):
            raise ConfigError(
                f"unknown_anchor must be 'error' or 'similar', got {self.unknown_anchor!r}"
            )
        _choice("hybrid_norm", self.hybrid_norm, HYBRID_NORMS)
        _choice("anchor_fallback", self.anchor_fallback, ("none", "similar", "passage"))
        _choice("passage_order", self.passage_order, ("question", "hits"))
        _positive("passage_hits", self.passage_hits)
        _positive("template_beam", self.template_beam)
        if isinstance(self.chain_examples, bool) or not isinstance(self.chain_examples, int) \
                or self.chain_examples < 0:
            raise ConfigError(f"chain_examples must be an int >= 0, got {self.chain_examples!r}")
        _choice("template_scorer", self.template_scorer, ("aligned", "text"))
        for name in ("chain_focus", "chain_anchor", "chain_relations", "chain_lexical",
                     "chain_length", "chain_length_open"):
            v = getattr(self, name)
            lo = -1.0 if name.startswith("chain_length") else 0.0
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= 10.0:
                raise ConfigError(f"{name} must be in [{lo:g}, 10], got {v!r}")
        if self.max_anchors is not None:
            _positive("max_anchors", self.max_anchors)
        if self.rerank is not None:
            _choice("rerank", self.rerank, ("propagation",))
        from kgpath.methods.pcr.scoring import score_strategy  # the name -> strategy table

        score_strategy(self.score)
        _choice("path_text", self.path_text, ("full", "relations"))
        if not isinstance(self.link_anchors, bool):
            raise ConfigError(f"link_anchors must be a bool, got {self.link_anchors!r}")


def _preset(cls: type[PCRConfig], base: dict[str, Any],
            overrides: dict[str, Any]) -> PCRConfig:
    """``cls(**base, **overrides)``; an unknown override name is a :class:`ConfigError`."""
    unknown = set(overrides) - {f.name for f in fields(cls)}
    if unknown:
        raise ConfigError(f"unknown PCRConfig option(s): {sorted(unknown)}")
    return cls(**{**base, **overrides})
