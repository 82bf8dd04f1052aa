"""How PCR ranks the reachable nodes: one strategy object per ``PCRConfig.score`` name.

``score="node"`` is the paper's Eq. (2): a reachable node is ranked by its own similarity to
the query. ``"path"``, ``"mixed"`` and ``"template"`` are kgpath extensions (not in the
paper): the query against the textualised BFS-tree path from the anchor
(:mod:`kgpath.methods.pcr.pathscore`), that score mixed with the node's own
(``path_weight·path + (1 − path_weight)·node``), or the best relation-chain template
reaching the node (:mod:`kgpath.methods.pcr.templates`, in-process graphs only; chains
scored by :mod:`kgpath.methods.pcr.chainmatch` or as one text, ``template_scorer``).

Each is a :class:`ScoreStrategy` with one hook, :meth:`ScoreStrategy.rank`, called the same
way on every backend; :data:`SCORES` maps the names :class:`PCRConfig` accepts to them, and
:func:`score_strategy` resolves a name (or passes a strategy object through). Nothing else
compares the name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from kgpath.backends.base import GraphBackend, InProcessGraph, VectorSearch
from kgpath.errors import CapabilityError, ConfigError
from kgpath.methods.pcr.pathscore import mix_scores, path_similarity, tree_path_texts
from kgpath.methods.pcr.search import Region, make_hits, node_scores, take
from kgpath.search.vector import top_k

if TYPE_CHECKING:
    from kgpath.methods.pcr.config import PCRConfig
    from kgpath.methods.pcr.result import PCRHit

__all__ = [
    "SCORES",
    "MixedScore",
    "NodeScore",
    "PathScore",
    "ScoreStrategy",
    "TemplateScore",
    "score_strategy",
]


class ScoreStrategy(ABC):
    """How reachable nodes are ranked (``PCRConfig.score``); one hook, :meth:`rank`."""

    name: ClassVar[str] = ""
    """The name :class:`PCRConfig` accepts for it (recorded in the trace)."""
    embeds_texts: ClassVar[bool] = True
    """Embeds path or template texts per query with the sync embedder: async retrieval
    runs it in a worker thread, and the trace records ``score`` and ``path_text``."""

    def check(self, backend: GraphBackend[Any, Any]) -> None:  # noqa: B027 - optional hook
        """Raise :class:`~kgpath.errors.CapabilityError` if ``backend`` cannot serve it."""

    @abstractmethod
    def rank(
        self, b: GraphBackend[Any, Any], region: Region, anchors: list[Any], query: str,
        qv: np.ndarray, cfg: PCRConfig,
    ) -> tuple[list[PCRHit], int]:
        """The top-``cfg.k`` hits over ``region`` (best first) and the number scored."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class NodeScore(ScoreStrategy):
    """Eq. (2): a node's own score (``mode``: vector, hybrid or BM25)."""

    name = "node"
    embeds_texts = False

    def combine(self, path: np.ndarray, node: np.ndarray, cfg: PCRConfig) -> np.ndarray:
        """The ranking score from the path and node scores (here: unused path)."""
        return node

    def rank(
        self, b: GraphBackend[Any, Any], region: Region, anchors: list[Any], query: str,
        qv: np.ndarray, cfg: PCRConfig,
    ) -> tuple[list[PCRHit], int]:
        """Eq. (2) over ``C_reachable``."""
        return search_region(b, region, query, qv, cfg, None)


class PathScore(NodeScore):
    """The query's cosine to the textualised path (kgpath extension)."""

    name = "path"
    embeds_texts = True

    def combine(self, path: np.ndarray, node: np.ndarray, cfg: PCRConfig) -> np.ndarray:
        """The path score alone."""
        return path

    def rank(
        self, b: GraphBackend[Any, Any], region: Region, anchors: list[Any], query: str,
        qv: np.ndarray, cfg: PCRConfig,
    ) -> tuple[list[PCRHit], int]:
        """Path-aware scores over ``C_reachable`` (node scores kept on each hit)."""
        return search_region(b, region, query, qv, cfg, self)


class MixedScore(PathScore):
    """``path_weight·path + (1 − path_weight)·node`` (kgpath extension)."""

    name = "mixed"

    def combine(self, path: np.ndarray, node: np.ndarray, cfg: PCRConfig) -> np.ndarray:
        """:func:`~kgpath.methods.pcr.pathscore.mix_scores`."""
        return mix_scores(path, node, cfg.path_weight)


class TemplateScore(ScoreStrategy):
    """The best relation-chain template reaching a node (kgpath extension, in process).

    Parameters
    ----------
    llm
        Optional: an LLM (any kgpath :class:`~kgpath.llm.LLM`, an OpenAI-compatible
        :class:`~kgpath.llm.OpenAILLM`, or a LangChain / LlamaIndex model through the
        adapters, :func:`~kgpath.llm.as_llm`) that picks, once per question, the chain the
        question asks for among the LLM-free scorer's best ``llm_chains``
        (:func:`~kgpath.methods.pcr.templates.llm_choice`). ``None`` (``score="template"``):
        LLM-free.
    llm_chains
        How many chains the LLM is shown.

    Examples
    --------
    >>> from kgpath.llm import ScriptedLLM
    >>> TemplateScore(ScriptedLLM(["1"]), llm_chains=5).llm_chains
    5
    """

    name = "template"

    def __init__(self, llm: Any = None, *, llm_chains: int = 10) -> None:
        from kgpath.llm import as_llm

        if isinstance(llm_chains, bool) or not isinstance(llm_chains, int) or llm_chains < 2:
            raise ConfigError(f"llm_chains must be an int >= 2, got {llm_chains!r}")
        self.llm = None if llm is None else as_llm(llm)
        self.llm_chains = llm_chains

    def __repr__(self) -> str:
        return "TemplateScore()" if self.llm is None else f"TemplateScore(llm={self.llm!r})"

    def check(self, backend: GraphBackend[Any, Any]) -> None:
        """Needs :class:`~kgpath.backends.base.InProcessGraph` (it walks the CSR arrays)."""
        if not backend.has(InProcessGraph):
            raise CapabilityError(
                f"score='template' needs the in-memory backend, not {backend.name!r} (it "
                "walks the CSR arrays: the InProcessGraph capability)",
                capability="InProcessGraph")

    def rank(
        self, b: GraphBackend[Any, Any], region: Region, anchors: list[Any], query: str,
        qv: np.ndarray, cfg: PCRConfig,
    ) -> tuple[list[PCRHit], int]:
        """:func:`~kgpath.methods.pcr.templates.template_hits` from the anchors."""
        from kgpath.methods.pcr.templates import template_hits

        self.check(b)
        return template_hits(b, anchors, query, qv, cfg, llm=self.llm,
                             llm_chains=self.llm_chains)


SCORES: dict[str, ScoreStrategy] = {
    s.name: s for s in (NodeScore(), PathScore(), MixedScore(), TemplateScore())
}
"""The names ``PCRConfig.score`` accepts and their strategies."""


def score_strategy(score: str | ScoreStrategy) -> ScoreStrategy:
    """The strategy named ``score`` (a :class:`ScoreStrategy` is returned as is)."""
    if isinstance(score, ScoreStrategy):
        return score
    try:
        return SCORES[score]
    except (KeyError, TypeError):
        raise ConfigError(
            f"score must be one of {tuple(SCORES)} or a ScoreStrategy, got {score!r}"
        ) from None


def search_region(
    b: GraphBackend[Any, Any], region: Region, query: str, qv: np.ndarray, cfg: PCRConfig,
    paths: NodeScore | None,
) -> tuple[list[PCRHit], int]:
    """Eq. (2) over ``C_reachable``, or a path-aware score: ``(hits, number scored)``.

    ``paths`` combines path and node scores (``None``: node scores only). Candidates are
    in region order (the anchors first, when included), so ties go to the node reached
    first.
    """
    sel = np.flatnonzero(region.dist > 0) if not cfg.include_anchor else None
    if sel is None:
        cand, tree_of, pos = region.keys, region.tree_of, region.pos
    else:
        cand, tree_of, pos = take(region.keys, sel), region.tree_of[sel], region.pos[sel]
    if not len(cand):
        return [], 0
    node = node_scores(b, query, qv, cand, cfg)
    path: np.ndarray | None = None
    scores = node
    if paths is not None:
        path = path_scores(b, region, tree_of, pos, qv, cfg)
        scores = paths.combine(path, node, cfg)
    top = top_k(scores, min(cfg.k, len(cand)))
    hits = make_hits(b, region, top if sel is None else sel[top], scores[top],
                     None if path is None else node[top], None if path is None else path[top])
    return hits, len(cand)


def path_scores(
    b: GraphBackend[Any, Any], region: Region, tree_of: np.ndarray, pos: np.ndarray,
    qv: np.ndarray, cfg: PCRConfig,
) -> np.ndarray:
    """Path-aware scores (:mod:`kgpath.methods.pcr.pathscore`).

    Every candidate's path text, embedded in one call by the backend's embedder.
    """
    texts: list[str] = [""] * len(pos)
    for t, tree in enumerate(region.trees):
        sel = np.flatnonzero(tree_of == t)
        for j, text in zip(sel, tree_path_texts(b, tree, pos[sel],
                                                 mask=cfg.path_text == "relations")):
            texts[int(j)] = text
    return path_similarity(b.capability(VectorSearch).embedder, qv, texts)
