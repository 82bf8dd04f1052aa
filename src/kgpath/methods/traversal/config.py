"""Configuration of the semantic-graph traversals: the algorithm names and two configs.

:class:`TraversalConfig` holds the walk's budget and stopping rules (article section
"Knowledge Graph Traversal Algorithms", each algorithm's last step: "10-15 sentences", the
top-5 candidates of Alg. 7; made exact by the article's reference code).
:class:`MentionExpansionConfig` configures the kgpath ``mention_expansion`` extension
(:mod:`.mentions`), which is not in the article.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from kgpath.errors import ConfigError

__all__ = [
    "ALGORITHMS",
    "ARTICLE_MIN_SENTENCES",
    "EXTENSIONS",
    "STOPPING_RULES",
    "Frontier",
    "MentionExpansionConfig",
    "Stopping",
    "TraversalConfig",
]

ALGORITHMS: tuple[str, ...] = (
    "basic_retrieval",
    "query_traversal",
    "kg_traversal",
    "triangulation_average",
    "triangulation_geometric_3d",
    "triangulation_fulldim",
    "llm_guided_traversal",
)

#: kgpath extensions runnable by name next to the article's algorithms (not walk policies).
EXTENSIONS: tuple[str, ...] = ("mention_expansion",)

Frontier = Literal["current", "visited"]


# ============================================================================ config
Stopping = Literal["reference", "article"]

#: The two stopping rule sets (see :class:`TraversalConfig`, field ``stopping``).
STOPPING_RULES: tuple[str, ...] = ("reference", "article")

#: Gate of the ``"article"`` rule set when ``min_sentences`` is ``None``: the lower end of the
#: article's "10-15 relevant sentences".
ARTICLE_MIN_SENTENCES = 10


@dataclass(frozen=True, kw_only=True)
class TraversalConfig:
    """Traversal hyperparameters: the walk's budget, stopping rule set and frontier.

    The article gives its stopping rules in words ("10-15 sentences", "less relevant than
    the sentences already extracted"). Its reference repository
    (github.com/glacier-creative-git/knowledge-graph-traversal-semantic-rag-research,
    ``config.yaml`` section ``retrieval.semantic_traversal`` and ``utils/algos/*.py``) makes
    them exact: :meth:`reference_rules` selects that code's rules and budget. The default
    stays kgpath's reading of the article's prose (``stopping="article"``, 15 sentences),
    because the reference rules stop the walks early enough to cost passage recall: on
    HotpotQA-100 (``kgpath eval traversal``, bundled embedder) ``basic_retrieval`` reaches
    2.2 passages instead of 4.9 and its R@2/R@5 fall from 70.5/85.5 to 69.5/73.0 (questions
    0-49: 72/85 -> 71/74; 50-99: 69/86 -> 68/72); every other walk loses R@5 too. The
    rules themselves are in :mod:`kgpath.methods.traversal` and on each policy.

    Attributes
    ----------
    stopping
        ``"article"`` (default): relevance against the *mean* extracted sentence, Alg. 3
        with ``<``, Alg. 4 against the mean, Alg. 5-6 with Alg. 2's rule.
        ``"reference"``: the reference code's early stops -- relevance against the *best*
        extracted sentence (``max``), Alg. 3's drop rule with ``<=``, Alg. 4-6's
        "sentence termination" and Alg. 4's extracted-triangle rule, no relevance rule for
        Alg. 5-6.
    max_sentences
        Hard sentence budget (article: "10-15 sentences", upper end). The reference code
        uses 10 (``max_results: 10``, ``min_sentence_threshold: 10``: its walks run while
        fewer than 10 sentences are extracted and keep the first 10).
    min_sentences
        No early stop (relevance, drop or termination rule) fires before this many
        sentences are extracted; ``0`` applies them from the first hop. ``None`` (default):
        the rule set's own gate -- for ``"reference"`` the reference code's per-algorithm
        gates (Alg. 1: 5; Alg. 2, Alg. 4's extracted-triangle rule and Alg. 7 without an
        LLM: 8; Alg. 3 and the sentence termination of Alg. 4-6: none), for ``"article"``
        :data:`ARTICLE_MIN_SENTENCES` (10, the article's lower end). The budget, the hop
        cap, dead ends and an LLM's ``stop`` are never gated.
    max_hops
        Safety cap on hops after the anchor (the article suggests "limiting hop count" for
        large graphs; reference ``max_safety_hops: 20``). Each hop adds a sentence, so it
        binds only when it is below ``max_sentences``.
    frontier
        ``"current"`` (article): candidates are the neighbours of the current chunk and a
        walk with no unvisited neighbour stops ("dead end"). ``"visited"`` (our
        extension): a branching walk -- every visited chunk may be the origin ``u`` of the
        next hop; each (visited chunk, unvisited neighbour) pair is scored by the
        algorithm's own rule and the best pair is taken.
    llm_candidates
        Candidates shown to the LLM in Alg. 7 (article: 5).
    preview_chars
        Characters of each candidate/extracted sentence shown to the LLM.
    pca_components
        Dimensions of the PCA space of Alg. 5 (article: 3).
    record_candidates
        Best-scored candidates kept per step in the trace.
    """

    stopping: Stopping = "article"
    max_sentences: int = 15
    min_sentences: int | None = None
    max_hops: int = 30
    frontier: Frontier = "current"
    llm_candidates: int = 5
    preview_chars: int = 200
    pca_components: int = 3
    record_candidates: int = 5

    def __post_init__(self) -> None:
        for name, lo in (
            ("max_sentences", 1), ("max_hops", 0),
            ("llm_candidates", 1), ("preview_chars", 1), ("pca_components", 1),
            ("record_candidates", 0),
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ConfigError(f"{name} must be an int >= {lo}, got {v!r}")
        v = self.min_sentences
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            raise ConfigError(f"min_sentences must be None or an int >= 0, got {v!r}")
        if v is not None and v > self.max_sentences:
            raise ConfigError(
                f"min_sentences ({v}) exceeds max_sentences ({self.max_sentences})"
            )
        if self.stopping not in STOPPING_RULES:
            raise ConfigError(
                f"stopping must be one of {STOPPING_RULES}, got {self.stopping!r}"
            )
        if self.frontier not in ("current", "visited"):
            raise ConfigError(f"frontier must be 'current' or 'visited', got {self.frontier!r}")

    @classmethod
    def reference_rules(cls, **overrides: object) -> TraversalConfig:
        """The reference code's rules and budget; ``overrides`` win.

        ``stopping="reference"``, ``max_sentences=10`` (``max_results``), ``min_sentences=
        None`` (its per-algorithm gates), ``max_hops=20`` (``max_safety_hops``).
        """
        fields: dict[str, object] = {
            "stopping": "reference", "max_sentences": 10, "min_sentences": None,
            "max_hops": 20,
        }
        fields.update(overrides)
        return cls(**fields)  # type: ignore[arg-type]

    @classmethod
    def article_rules(cls, **overrides: object) -> TraversalConfig:
        """The article reading (the defaults, spelled out): mean-based rules, 15 sentences.

        ``stopping="article"``, ``max_sentences=15``, ``min_sentences=None`` (gate 10),
        ``max_hops=30``; ``overrides`` win.
        """
        fields: dict[str, object] = {
            "stopping": "article", "max_sentences": 15, "min_sentences": None, "max_hops": 30,
        }
        fields.update(overrides)
        return cls(**fields)  # type: ignore[arg-type]

    def gate(self, reference_gate: int) -> int:
        """Sentences needed before an early stop may fire (``min_sentences`` resolved).

        ``reference_gate`` is the rule's gate in the reference code, used when
        ``min_sentences`` is ``None`` under ``stopping="reference"``.
        """
        if self.min_sentences is not None:
            return self.min_sentences
        return reference_gate if self.stopping == "reference" else ARTICLE_MIN_SENTENCES


# kgpath extension (not one of the article's seven algorithms): one hop through the mention
# layer of :func:`kgpath.ingest.chunk_graph.add_mention_edges`.
@dataclass(frozen=True, kw_only=True)
class MentionExpansionConfig:
    """Parameters of :func:`mention_expansion` (a kgpath extension; no paper defaults).

    The three scoring values were chosen on HotpotQA-100 questions 0-49 only, from the grid
    ``link_bonus in {0.02, 0.05, 0.1, 0.2}``, ``question_bonus in {0, 0.05, 0.1, 0.2}``,
    ``max_title_df in {0.003, 0.005, 0.01, 0.02, 1}`` (best Recall@5, then Recall@2);
    questions 50-99 were held out (see ``kgpath eval traversal --halves``). Recall@5 on the
    first half was flat (97) for every ``max_title_df`` once ``link_bonus = 0.05``.

    Attributes
    ----------
    link_bonus
        β, added to a pair of documents joined by a mention edge (in cosine units).
    question_bonus
        γ, added to the query similarity of a document whose title the question names
        (comparison questions "X or Y?" name both passages).
    max_title_df
        A document is a link target only if at most this fraction of all documents
        mention its title: titles that are common words ("United") link everything.
    max_documents
        Documents returned (ranked).
    sentences_per_document
        Sentences kept per returned document: the sentences that carry the link evidence
        first, then the most query-similar ones, emitted in document order.
    min_title_chars
        Shortest title matched in the question (as in the graph's mention layer).
    """

    link_bonus: float = 0.05
    question_bonus: float = 0.05
    max_title_df: float = 0.003
    max_documents: int = 5
    sentences_per_document: int = 3
    min_title_chars: int = 3

    def __post_init__(self) -> None:
        for name in ("link_bonus", "question_bonus"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                math.isfinite(v) and v >= 0
            ):
                raise ConfigError(f"{name} must be a finite number >= 0, got {v!r}")
        v = self.max_title_df
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
            raise ConfigError(f"max_title_df must be a number in (0, 1], got {v!r}")
        for name in ("max_documents", "sentences_per_document", "min_title_chars"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"{name} must be an int >= 1, got {v!r}")

