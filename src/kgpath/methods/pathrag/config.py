"""PathRAG configuration: :class:`PathRAGConfig` (paper defaults) and the ``PathRAG-lt`` preset.

Defaults follow section 5.1 and Figure 3 of the paper (``N = 40``, ``K = 15``, ``α = 0.8``,
``θ = 0.05``) and, where the paper is ambiguous, the authors' released code
(``BUPT-GAMMA/PathRAG``, ``PathRAG/operate.py``): edge-flow reliability, simple paths of at
most 3 hops, an undirected graph, no Eq. (3) test at the start node, the LightRAG keyword
split. Five defaults are the measured best for passage retrieval instead (the output the
adapters return by default; :meth:`PathRAGConfig.for_passages` explains them), and
:meth:`PathRAGConfig.paper` is one call away with the paper's section 4.1 and the authors'
text-unit order. :meth:`PathRAGConfig.literal_eq4` restores the literal reading of
Eqs. (2)-(4); :data:`PATHRAG_LT` is the lightweight preset of section 5.5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from kgpath.errors import ConfigError, short
from kgpath.methods.pathrag.prompt import PathOrdering, get_ordering

if TYPE_CHECKING:
    from kgpath.methods.pathrag.reliability import ReliabilityStrategy

__all__ = [
    "DEFAULT_MIN_SIMILARITY_Z",
    "PATHRAG_LT",
    "NodeMatch",
    "NodeQuery",
    "PassageRule",
    "PathDirection",
    "PathRAGConfig",
    "Reliability",
    "UnitOrder",
]

PathDirection = Literal["directed", "undirected"]
NodeMatch = Literal["name", "text"]
PassageRule = Literal["text_units", "paths"]
NodeQuery = Literal["per_keyword", "joined"]
UnitOrder = Literal["relation_count", "similarity", "question"]
Reliability = Literal["edge_flow", "literal_eq4"]
_DIRECTIONS = ("directed", "undirected")

#: Default standardised similarity floor of section 4.1 node retrieval (``min_similarity_z``),
#: chosen on the even-numbered half of the PathRAG-6 questions
#: (``benchmarks/bench_pathrag_oracle.py --floor``); see :class:`PathRAGConfig`.
DEFAULT_MIN_SIMILARITY_Z = 1.5


@dataclass(frozen=True, kw_only=True)
class PathRAGConfig:
    """PathRAG hyperparameters; paper defaults (section 5.1, Figure 3), else the authors' code.

    Attributes
    ----------
    num_nodes
        ``N``, nodes retrieved in section 4.1 (paper: 40). Must be at least 2. When
        ``N ≥ |V|`` every node is retrieved and the question no longer selects anything: the
        retriever warns (``warnings.warn``) and sets ``trace["num_nodes_covers_graph"]``.
    top_k
        ``K``, paths kept for the prompt (paper: 15). When fewer candidate paths exist,
        all of them are returned (``trace["pool_size"] < K``); this is not an error.
    reliability
        How Eq. (4) scores a path. ``"edge_flow"`` (default) is the authors' code
        (``bfs_weighted_paths`` in ``PathRAG/operate.py``): the mean resource flowing
        through the path's *edges* inside the pair's own path subgraph; see
        :mod:`kgpath.methods.pathrag.edgeflow`. ``"literal_eq4"`` is the paper's formula
        read literally, ``S(P) = Σ_{v ∈ P} S(v) / |E_P|`` over the node resources of one
        whole-graph flow (Eqs. 2-3). Note: that reading gives every 1-hop path
        ``1 + α/deg ≥ 1`` and no longer path more than about 1.2, so it ranks by hop count
        (the hop-first ablation of Table 2); on Barabási–Albert graphs it returns fewer than
        ``K`` paths, mostly 1-hop (``benchmarks/bench_pathrag_oracle.py``). Each name is a
        strategy object (:data:`kgpath.methods.pathrag.reliability.RELIABILITIES`); a
        :class:`~kgpath.methods.pathrag.reliability.ReliabilityStrategy` is accepted too.
    alpha
        ``α``, decay rate of Eq. (2), in ``(0, 1]`` (paper and code: 0.8).
    theta
        ``θ``, early-stopping threshold of Eq. (3) on ``S(v)/|N(v,·)|``, ``> 0`` (paper:
        0.05). Used by ``reliability="literal_eq4"``.
    flow_threshold
        The code's form of Eq. (3) for ``"edge_flow"``: a node forwards only if the flow on
        the edge that reached it exceeds this (``threshold = 0.3`` in
        ``_find_most_related_edges_from_entities3``; the code compares a different quantity
        than the paper's ``θ``, so the paper's 0.05 does not carry over). ``≥ 0``.
    eq3_at_start
        Apply Eq. (3) to the start node too (``"literal_eq4"`` only). The authors' code never
        does (the start always sends ``1/deg`` along each edge); the literal reading did, so a
        start with more than ``1/θ = 20`` neighbours emitted nothing. Default ``False``.
    paths_per_pair
        ``"literal_eq4"`` only: how many of the most reliable flow paths of each ordered pair
        enter the pool (section 4.2 keeps "the most reliable relational paths"; default 1).
        ``"edge_flow"`` keeps every path of every pair, as the code does.
    direction
        ``"undirected"`` (default; the code builds an ``nx.Graph``) or ``"directed"``
        (follow edges forward, as the paper's notation ``N(v,·)`` suggests). In undirected
        ``"literal_eq4"`` mode a path and its exact reverse are one candidate; in
        ``"edge_flow"`` mode paths with the same node set are one candidate, as in the code.
    max_hops
        Longest path, in hops (default 3: the code's ``if depth > 3: return``). Required
        (an int) for ``"edge_flow"``; ``None`` is allowed for ``"literal_eq4"`` and relies
        on Eq. (3) alone, as the paper does.
    min_similarity
        Section 4.1 absolute cosine floor: a keyword's match below it is not retrieved (the
        code's vector store keeps only matches above ``cosine_better_than_threshold = 0.2``,
        a value for OpenAI embeddings). Default ``None``: cosine scales differ too much
        between embedders (the bundled e5 model puts every pair above 0.8).
    min_similarity_z
        Section 4.1 floor in units of each keyword's own spread: a match counts only if its
        cosine is at least ``mean + z · std`` of that keyword's cosines to all nodes (a
        kgpath extension standing in for the code's absolute floor). ``None`` disables it.
        Default :data:`DEFAULT_MIN_SIMILARITY_Z`, chosen on the even-numbered half of the
        PathRAG-6 questions and reported on the other half
        (``benchmarks/bench_pathrag_oracle.py --floor``). Both floors also apply to the
        relations of the keyword split.
    keyword_split
        The LightRAG split PathRAG's code inherits (``kg_query``): low-level (entity)
        keywords retrieve nodes; high-level keywords retrieve relations, placed right after
        the query (section 5.1.3: "retrieved edges that correspond to global keywords of
        LightRAG are placed after the query"). ``False`` matches all keywords to nodes as
        section 4.1 reads. Offline keywords are all low-level (no high-level themes).
    num_relations
        Relations retrieved for the high-level keywords (the code's ``top_k = 40``); 0
        disables them.
    ordering
        Prompt policy: ``"ascending"`` (Eq. 6, default), ``"descending"``, ``"random"``,
        ``"hop_first"``, ``"flat"`` (section 5.4, Appendix D), or a
        :class:`PathOrdering` instance.
    seed
        Seed for the random parts of the ``random``, ``hop_first`` and ``flat`` policies.
    token_budget
        Optional cap on the prompt's token count (tiktoken ``encoding``); the least
        reliable paths are dropped first until the prompt fits.
    encoding
        tiktoken encoding for ``token_budget`` (offline: ``cl100k_base``, ``o200k_base``).
    node_match
        What keywords are matched against in section 4.1: ``"name"`` embeds node
        identifiers as the paper does (:meth:`paper`); ``"text"`` (default) reuses the
        index's embeddings of the node texts (no extra embedding pass).
    node_query
        How section 4.1 queries the nodes. ``"per_keyword"`` (:meth:`paper`, the paper's text:
        "iterate over X_q ... until a predefined number N of nodes is reached"): one vector
        per keyword, the keywords taking turns. ``"joined"`` (default; the authors' code:
        ``kg_query`` joins the low-level keywords with ``", "`` and ``_get_node_data`` runs
        one ``entities_vdb.query(..., top_k=40)``): one vector, the ``N`` most similar nodes
        above the floors, most similar first. Without an LLM the question itself stands in
        for the joined keyword string (a kgpath choice: the heuristic keywords drop the
        question's relational words; on HotpotQA-100 q0-49 the joined heuristic keywords
        gave R@5 66, the question 83). The authors' entity vectors embed name and
        description, i.e. ``node_match="text"``.
    exclude_edge_types
        Edge types (:attr:`~kgpath.graph.Edge.type`) left out of path enumeration and the
        flow (section 4.2). The text units' relation counts still see every edge, as the
        code's ``get_node_edges`` does. Default ``("cooccurrence",)`` (:meth:`paper`:
        ``()``). The
        offline spaCy graph adds sentence co-occurrence edges (type ``"cooccurrence"``,
        78 % of the HotpotQA-100 graph's edges) beside the parsed relations; the authors'
        graph holds only LLM-extracted relations, so ``("cooccurrence",)`` is the closer
        match there (a kgpath option, measured in ``benchmarks/bench_pathrag_hotpot.py``).
        A type no edge of the graph has excludes nothing (so the preset suits graphs
        without co-occurrence edges); it is named in a log line (``kgpath.methods.pathrag``,
        INFO) once per graph version. A bare string is refused (``"cooccurrence"`` would
        otherwise read as its letters): pass ``("cooccurrence",)``.
    unit_order
        How the passages of one retrieved entity are ordered among the text units.
        ``"relation_count"`` (:meth:`paper`, the authors' code): by how many of the entity's
        neighbours cite the same passage. ``"similarity"`` (a kgpath extension): by the
        passage's cosine to the question (the index's passage vectors); chosen on
        HotpotQA-100 q0-49, where an entity citing many passages otherwise fills the top
        ranks with the ones the question does not ask about (R@5 83 -> 86 there).
        ``"question"`` (default, a kgpath extension): entity order no longer comes first; every
        candidate passage ranks by ``0.7·cos(q, passage) + 0.3·similarity of the first
        entity citing it``, the passage rule PCR uses (``sources.QUESTION_WEIGHT``).
    seed_passages
        ``unit_order="question"`` only (a kgpath extension; other orders ignore it): the
        question's this many most similar passages join the candidate passages when no
        retrieved entity cites them, scored by the same rule with the similarity of their
        best citing node (:func:`~kgpath.methods.pathrag.sources.seed_text_units`). The
        authors' Sources hold only passages of ``V_q``; on the offline graphs every gold
        passage dense retrieval found in its top 5 and these defaults without seeds lost was
        one no retrieved entity cited. Default 5, chosen on HotpotQA-100 q0-49 (R@5 88 ->
        89), confirmed on 2Wiki-100 (R@5 66.5 -> 68.8, dense 66.8); ``0`` (:meth:`paper`)
        turns it off. An int ``>= 0``.
    passages
        What ``evidence(output="passages")`` returns. ``"text_units"`` (default): the
        prompt's Sources as the authors' code selects them (``combine_contexts`` over
        ``_find_related_text_unit_from_relationships`` and
        ``_find_most_related_text_unit_from_entities`` in ``PathRAG/operate.py``; see
        :mod:`kgpath.methods.pathrag.sources`), then the paths' provenance. ``"paths"``:
        the paths' provenance only, most reliable path first (kgpath before issue 12; on
        HotpotQA-100 it ranks passages by hub paths, R@5 36.5 against 87.0 dense).
    """

    num_nodes: int = 40
    top_k: int = 15
    reliability: Reliability | ReliabilityStrategy = "edge_flow"
    alpha: float = 0.8
    theta: float = 0.05
    flow_threshold: float = 0.3
    eq3_at_start: bool = False
    paths_per_pair: int = 1
    direction: PathDirection = "undirected"
    max_hops: int | None = 3
    min_similarity: float | None = None
    min_similarity_z: float | None = DEFAULT_MIN_SIMILARITY_Z
    keyword_split: bool = True
    num_relations: int = 40
    ordering: str | PathOrdering = "ascending"
    seed: int = 0
    token_budget: int | None = None
    encoding: str = "cl100k_base"
    node_match: NodeMatch = "text"
    node_query: NodeQuery = "joined"
    exclude_edge_types: tuple[str, ...] = ("cooccurrence",)
    unit_order: UnitOrder = "question"
    seed_passages: int = 5
    passages: PassageRule = "text_units"

    def __post_init__(self) -> None:
        _check_int(self.num_nodes, "num_nodes", 2)
        _check_int(self.top_k, "top_k", 1)
        _check_int(self.paths_per_pair, "paths_per_pair", 1)
        _check_int(self.num_relations, "num_relations", 0)
        _check_int(self.seed_passages, "seed_passages", 0)
        from kgpath.methods.pathrag.reliability import reliability_strategy  # name -> strategy

        reliability_strategy(self.reliability)
        if (
            isinstance(self.alpha, bool)
            or not isinstance(self.alpha, (int, float))
            or not (0.0 < float(self.alpha) <= 1.0)
        ):
            raise ConfigError(
                f"alpha (decay rate α of Eq. 2) must be in (0, 1], got {short(self.alpha)}"
            )
        if not _finite(self.theta) or float(self.theta) <= 0.0:
            raise ConfigError(
                f"theta (pruning threshold θ of Eq. 3) must be a finite number > 0, "
                f"got {short(self.theta)}"
            )
        if not _finite(self.flow_threshold) or float(self.flow_threshold) < 0.0:
            raise ConfigError(
                f"flow_threshold must be a finite number >= 0, got {short(self.flow_threshold)}"
            )
        for name in ("min_similarity", "min_similarity_z"):
            value = getattr(self, name)
            if value is not None and not _finite(value):
                raise ConfigError(f"{name} must be a finite number or None, got {short(value)}")
        for flag in ("eq3_at_start", "keyword_split"):
            if not isinstance(getattr(self, flag), bool):
                raise ConfigError(f"{flag} must be a bool, got {getattr(self, flag)!r}")
        self._check_rest()

    def _check_rest(self) -> None:
        if self.direction not in _DIRECTIONS:
            raise ConfigError(
                f"direction must be one of {_DIRECTIONS}, got {short(self.direction)}")
        if self.max_hops is not None:
            _check_int(self.max_hops, "max_hops", 1)
        else:  # edge_flow needs a bound
            from kgpath.methods.pathrag.reliability import reliability_strategy

            reliability_strategy(self.reliability).check(self)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ConfigError(f"seed must be an int, got {short(self.seed)}")
        if self.token_budget is not None:
            _check_int(self.token_budget, "token_budget", 1)
        if not isinstance(self.encoding, str) or not self.encoding:
            raise ConfigError(
                f"encoding must be a tiktoken encoding name, got {short(self.encoding)}")
        if self.node_match not in ("name", "text"):
            raise ConfigError(f"node_match must be 'name' or 'text', got {short(self.node_match)}")
        if not isinstance(self.exclude_edge_types, tuple) or not all(
            isinstance(t, str) and t.strip() for t in self.exclude_edge_types
        ):
            raise ConfigError("exclude_edge_types must be a tuple of non-empty str, got "
                              f"{short(self.exclude_edge_types)}")
        if self.unit_order not in ("relation_count", "similarity", "question"):
            raise ConfigError("unit_order must be 'relation_count', 'similarity' or 'question', "
                              f"got {short(self.unit_order)}")
        if self.node_query not in ("per_keyword", "joined"):
            raise ConfigError(
                f"node_query must be 'per_keyword' or 'joined', got {short(self.node_query)}")
        if self.passages not in ("text_units", "paths"):
            raise ConfigError(
                f"passages must be 'text_units' or 'paths', got {short(self.passages)}")
        get_ordering(self.ordering)  # validates the name

    @classmethod
    def lite(cls, **overrides: Any) -> PathRAGConfig:
        """Return the ``PathRAG-lt`` preset of section 5.5: ``N = 20``, ``K = 5``."""
        return _preset(cls, {"num_nodes": 20, "top_k": 5}, overrides)

    @classmethod
    def literal_eq4(cls, **overrides: Any) -> PathRAGConfig:
        """Return the literal reading of sections 4.1-4.2 (kgpath's default before issue 12).

        Eq. (4) over node resources (``reliability="literal_eq4"``), directed edges, no hop
        cap, Eq. (3) applied to the start node too, no similarity floor, all keywords matched
        to nodes, section 4.1's node retrieval (:meth:`paper`). See ``reliability`` for why
        this ranks by hop count.
        """
        base: dict[str, Any] = {
            **_PAPER_NODES,
            "reliability": "literal_eq4",
            "direction": "directed",
            "max_hops": None,
            "eq3_at_start": True,
            "min_similarity": None,
            "min_similarity_z": None,
            "keyword_split": False,
        }
        return _preset(cls, base, overrides)

    @classmethod
    def paper(cls, **overrides: Any) -> PathRAGConfig:
        """Return the paper's section 4.1 node retrieval and the authors' text-unit order.

        One vector per keyword over node names (``node_query="per_keyword"``,
        ``node_match="name"``), every edge in paths and flow, text units by relation count
        and none but those of ``V_q`` (``seed_passages=0``): the defaults before issue 25.
        For passages it ranks far below dense retrieval (HotpotQA-100 R@5 57, see
        :meth:`for_passages`).
        """
        return _preset(cls, dict(_PAPER_NODES), overrides)

    @classmethod
    def for_passages(cls, **overrides: Any) -> PathRAGConfig:
        """Return the configuration measured for passage retrieval: the defaults.

        The authors' code (``PathRAG/operate.py``) queries the entity store once with the
        joined keywords and matches entity name plus description: ``node_query="joined"``,
        ``node_match="text"`` (offline, the question stands in for the joined keywords).
        Three kgpath choices on top, each decided on HotpotQA-100 q0-49
        (``benchmarks/bench_pathrag_hotpot.py``, ``kgpath eval kg --halves``): the weaker
        ``co-occurs with`` edges of the offline extractor are left out of paths and flow
        (``exclude_edge_types``); the candidate passages rank by PCR's passage rule
        (``unit_order="question"``; its weight is PCR's, not re-tuned); and the question's five
        most similar passages join the candidates (``seed_passages``). R@5 on HotpotQA-100
        (offline graph, q0-49 / q50-99): 57 / 57 with the paper's section 4.1, 75 / 83 with
        entity order and similarity within an entity, 88 / 88 with the passage rule, 89 / 88
        with the seeds; dense 87 / 87. 2Wiki-100 (the confirmation, run once): R@2/R@5
        59.2/66.5 without seeds, 62.0/68.8 with them, dense 62.5/66.8. Since issue 25 these
        are the defaults (the adapters return passages by default); :meth:`paper` restores
        the paper's section 4.1 (one node query per keyword, over names) and the authors'
        text-unit order and candidates.
        """
        base: dict[str, Any] = {
            "node_query": "joined",
            "node_match": "text",
            "exclude_edge_types": ("cooccurrence",),
            "unit_order": "question",
            "seed_passages": 5,
        }
        return _preset(cls, base, overrides)


_PAPER_NODES: dict[str, Any] = {
    "node_query": "per_keyword",
    "node_match": "name",
    "exclude_edge_types": (),
    "unit_order": "relation_count",
    "seed_passages": 0,
}
"""Section 4.1's node retrieval and the authors' text-unit order (:meth:`PathRAGConfig.paper`)."""


def _preset(cls: type[PathRAGConfig], base: dict[str, Any],
            overrides: dict[str, Any]) -> PathRAGConfig:
    """``cls(**base, **overrides)``; an unknown override name is a :class:`ConfigError`."""
    unknown = set(overrides) - {f.name for f in fields(cls)}
    if unknown:
        raise ConfigError(f"unknown PathRAGConfig option(s): {sorted(unknown)}")
    return cls(**{**base, **overrides})


def _finite(value: object) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, (int, float))
        and math.isfinite(float(value))
    )


def _check_int(value: object, name: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ConfigError(f"{name} must be an int >= {minimum}, got {short(value)}")


#: The lightweight preset of section 5.5 (``N = 20``, ``K = 5``).
PATHRAG_LT = PathRAGConfig.lite()
