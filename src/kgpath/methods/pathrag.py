"""PathRAG: keyword node retrieval, flow-based path pruning, reliability-ordered prompts.

Reference: B. Chen, Z. Guo, Z. Yang, Y. Chen, J. Chen, Z. Liu, C. Shi, C. Yang,
"PathRAG: Pruning Graph-based Retrieval Augmented Generation with Relational Paths", 2025
(shared/papers/pathrag-flow-pruned-paths.txt).

Steps, named after the paper's sections:

1. **Node retrieval (4.1).** :func:`extract_keywords` asks an LLM for keywords ``K_q`` (JSON;
   repaired with :func:`~kgpath.llm.parse_json_response`, else the offline extractor
   :func:`offline_keywords` is used and the fallback recorded). :func:`retrieve_nodes`
   embeds the keywords and the node identifiers (names) and iterates over the keywords,
   taking each keyword's next most similar node in turn, until ``N`` distinct nodes form
   ``V_q``.
2. **Path retrieval (4.2).** For each retrieved start node, :func:`propagate_resources`
   runs the resource flow of Eq. (2) (``S(v_start) = 1``; a node passes
   ``α·S(v)/|N(v,·)|`` to each of its distinct out-neighbours) with the early stop of
   Eq. (3) (a node whose per-neighbour share ``S(v)/|N(v,·)|`` is below ``θ`` does not
   propagate) and updates every node's resource at most once. The edges the resource
   actually flowed along form a layered DAG; every start-to-end path in it is a candidate,
   scored by the reliability of Eq. (4), :func:`path_reliability`.
   :func:`prune_paths` keeps the ``paths_per_pair`` most reliable paths per ordered pair
   and the global top ``K``.
3. **Answer generation (4.3).** :func:`textual_path` concatenates node and edge texts along
   a path (Eq. 5); :func:`build_prompt` puts the query first and the paths after it in the
   order chosen by a :class:`PathOrdering` policy, by default ascending reliability so the
   most reliable path is last (Eq. 6). Ablation policies of section 5.4 / Appendix D:
   descending, random, hop-first, and the flat node/edge format.

How "updated at most once" is read. Propagation is level-synchronous (breadth first): a
node's resource is set once, in the step in which the flow first reaches it, to the sum
of Eq. (2) over the emitting nodes of the previous step that point to it. Flow arriving
later (by a longer route or around a cycle) is ignored. Consequently every candidate path
between a pair has the same hop count, the BFS distance through emitting nodes, and the
most reliable ones are found exactly by dynamic programming over the DAG instead of
enumerating paths (:func:`best_paths_from`).

Other reading choices, each documented where it is implemented: ``|N(v,·)|`` counts
*distinct* neighbours (parallel edges with different relations count once, and the
textual path lists all of them); Eq. (3) is applied to every node including the start
(a start node with more than ``1/θ`` neighbours emits nothing); ties are broken by the
lexicographic order of the node-index sequence, so results are deterministic.

Complexity (section 4.4): at most ``1/((1-α)·θ)`` nodes emit per start node, so path
retrieval is ``O(N² / ((1-α)·θ))`` plus the out-edges of emitting nodes, independent of
``|V|``; each step is a handful of numpy operations on the CSR arrays.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import random
import re
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from kgpath._config import with_overrides
from kgpath.errors import ConfigError, KgpathError, NodeNotFoundError, ParseError
from kgpath.graph import Edge, KnowledgeGraph, Node
from kgpath.index.graph_index import GraphIndex, check_query
from kgpath.llm import LLM, parse_json_response
from kgpath.prompts.pathrag import (
    PATHRAG_FLAT_BLOCK,
    PATHRAG_KEYWORD_PROMPT,
    PATHRAG_PATH_BLOCK,
    PATHRAG_QA_PROMPT,
)

__all__ = [
    "PathRAGConfig",
    "PATHRAG_LT",
    "PathOrdering",
    "AscendingReliability",
    "DescendingReliability",
    "RandomOrdering",
    "HopFirstOrdering",
    "FlatFormat",
    "ORDERINGS",
    "get_ordering",
    "KeywordExtraction",
    "offline_keywords",
    "parse_keywords",
    "extract_keywords",
    "aextract_keywords",
    "RetrievedNode",
    "retrieve_nodes",
    "FlowAdjacency",
    "flow_adjacency",
    "Propagation",
    "propagate_resources",
    "path_reliability",
    "PathCandidate",
    "best_paths_from",
    "CandidatePool",
    "prune_paths",
    "PathRAGPath",
    "materialize_path",
    "textual_path",
    "build_prompt",
    "PathRAGResult",
    "PathRAGRetriever",
]

logger = logging.getLogger(__name__)

PathDirection = Literal["directed", "undirected"]
NodeMatch = Literal["name", "text"]
_DIRECTIONS = ("directed", "undirected")


# ====================================================================== config
@dataclass(frozen=True, kw_only=True)
class PathRAGConfig:
    """PathRAG hyperparameters; defaults follow the paper (section 5.1, Figure 3).

    Attributes
    ----------
    num_nodes
        ``N``, nodes retrieved in section 4.1 (paper: 40). Must be at least 2.
    top_k
        ``K``, paths kept for the prompt (paper: 15). When fewer candidate paths exist,
        all of them are returned (``trace["pool_size"] < K``); this is not an error.
    alpha
        ``α``, decay rate of Eq. (2), in ``(0, 1]`` (paper: 0.8; 1.0 disables the decay).
    theta
        ``θ``, early-stopping threshold of Eq. (3), ``> 0`` (paper: 0.05).
    paths_per_pair
        How many of the most reliable paths of each ordered pair enter the candidate pool
        (section 4.2 keeps "the most reliable relational paths"; default 1).
    direction
        ``"directed"`` follows edges forward, as the paper's notation ``N(v,·)`` does;
        ``"undirected"`` lets resource flow both ways (the authors' released code builds an
        undirected graph). In undirected mode a path and its exact reverse are one
        candidate: only the more reliable orientation is kept.
    max_hops
        Optional hard cap on path length. ``None`` (paper) relies on Eq. (3) alone; the
        authors' code enumerates paths of at most 3 hops.
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
        identifiers as the paper does; ``"text"`` reuses the index's embeddings of the
        node texts (no extra embedding pass).
    """

    num_nodes: int = 40
    top_k: int = 15
    alpha: float = 0.8
    theta: float = 0.05
    paths_per_pair: int = 1
    direction: PathDirection = "directed"
    max_hops: int | None = None
    ordering: str | PathOrdering = "ascending"
    seed: int = 0
    token_budget: int | None = None
    encoding: str = "cl100k_base"
    node_match: NodeMatch = "name"

    def __post_init__(self) -> None:
        _check_int(self.num_nodes, "num_nodes", 2)
        _check_int(self.top_k, "top_k", 1)
        _check_int(self.paths_per_pair, "paths_per_pair", 1)
        if (
            isinstance(self.alpha, bool)
            or not isinstance(self.alpha, (int, float))
            or not (0.0 < float(self.alpha) <= 1.0)
        ):
            raise ConfigError(
                f"alpha (decay rate α of Eq. 2) must be in (0, 1], got {self.alpha!r}"
            )
        if (
            isinstance(self.theta, bool)
            or not isinstance(self.theta, (int, float))
            or not math.isfinite(float(self.theta))
            or float(self.theta) <= 0.0
        ):
            raise ConfigError(
                f"theta (pruning threshold θ of Eq. 3) must be a finite number > 0, "
                f"got {self.theta!r}"
            )
        if self.direction not in _DIRECTIONS:
            raise ConfigError(f"direction must be one of {_DIRECTIONS}, got {self.direction!r}")
        if self.max_hops is not None:
            _check_int(self.max_hops, "max_hops", 1)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ConfigError(f"seed must be an int, got {self.seed!r}")
        if self.token_budget is not None:
            _check_int(self.token_budget, "token_budget", 1)
        if not isinstance(self.encoding, str) or not self.encoding:
            raise ConfigError(f"encoding must be a tiktoken encoding name, got {self.encoding!r}")
        if self.node_match not in ("name", "text"):
            raise ConfigError(f"node_match must be 'name' or 'text', got {self.node_match!r}")
        get_ordering(self.ordering)  # validates the name

    @classmethod
    def lite(cls, **overrides: Any) -> PathRAGConfig:
        """Return the ``PathRAG-lt`` preset of section 5.5: ``N = 20``, ``K = 5``."""
        return cls(**{"num_nodes": 20, "top_k": 5, **overrides})


def _check_int(value: object, name: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ConfigError(f"{name} must be an int >= {minimum}, got {value!r}")


# ====================================================================== orderings
class PathOrdering(ABC):
    """Prompt policy of section 4.3 / Appendix D: which paths, in which order, how rendered.

    Subclasses implement :meth:`arrange`; :meth:`render` defaults to one numbered block
    per path (Eq. 5 text) and is overridden by :class:`FlatFormat`.
    """

    name: ClassVar[str] = ""

    @abstractmethod
    def arrange(self, pool: Sequence[PathCandidate], k: int, rng: random.Random) -> list[int]:
        """Positions into ``pool`` (ranked most reliable first) in prompt order, first to last."""

    def render(self, paths: Sequence[PathRAGPath], rng: random.Random) -> list[str]:
        """Context blocks for ``paths`` (already in prompt order)."""
        return [PATHRAG_PATH_BLOCK.format(number=i, text=p.text) for i, p in enumerate(paths, 1)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self).__name__)


class AscendingReliability(PathOrdering):
    """Eq. (6): the top-K paths by reliability, least reliable first, most reliable last."""

    name = "ascending"

    def arrange(self, pool: Sequence[PathCandidate], k: int, rng: random.Random) -> list[int]:
        """Top-``k`` positions reversed (``P_K, ..., P_1``)."""
        return list(range(min(k, len(pool))))[::-1]


class DescendingReliability(PathOrdering):
    """Ablation: the top-K paths with the most reliable first."""

    name = "descending"

    def arrange(self, pool: Sequence[PathCandidate], k: int, rng: random.Random) -> list[int]:
        """Top-``k`` positions in rank order (``P_1, ..., P_K``)."""
        return list(range(min(k, len(pool))))


class RandomOrdering(PathOrdering):
    """Ablation (Appendix D.1, "random"): the top-K paths in a seeded random order.

    Appendix D.1 says "randomly select K paths"; the ablation studies ordering, so this
    policy permutes the K retrieved paths rather than sampling the candidate pool.
    """

    name = "random"

    def arrange(self, pool: Sequence[PathCandidate], k: int, rng: random.Random) -> list[int]:
        """Shuffle the top-``k`` positions."""
        idx = list(range(min(k, len(pool))))
        rng.shuffle(idx)
        return idx


class HopFirstOrdering(PathOrdering):
    """Ablation (Appendix D.1, "hop-first"): fewest hops are most important.

    The whole candidate pool is sorted by hop count (random order within a hop count),
    the first ``K`` are selected and placed so that the fewest-hop paths come last.
    """

    name = "hop_first"

    def arrange(self, pool: Sequence[PathCandidate], k: int, rng: random.Random) -> list[int]:
        """``k`` fewest-hop positions, most important last."""
        keys = [(c.hops, rng.random(), i) for i, c in enumerate(pool)]
        keys.sort()
        chosen = [i for _, _, i in keys[:k]]
        return chosen[::-1]


class FlatFormat(AscendingReliability):
    """Ablation (Appendix D.2, "flat"): nodes and edges listed without path structure.

    The top-K paths are split into their distinct node and edge texts, which are listed in
    a seeded random order.
    """

    name = "flat"

    def render(self, paths: Sequence[PathRAGPath], rng: random.Random) -> list[str]:
        """One block per distinct node or edge text, shuffled."""
        items: dict[str, None] = {}
        for p in paths:
            for n in p.nodes:
                items.setdefault(_node_text(n), None)
            for group, a, b in zip(p.hop_edges, p.nodes, p.nodes[1:], strict=False):
                for e in group:
                    items.setdefault(_edge_text(e, a, b), None)
        texts = list(items)
        rng.shuffle(texts)
        return [PATHRAG_FLAT_BLOCK.format(text=t) for t in texts]


#: Built-in ordering policies by name.
ORDERINGS: dict[str, type[PathOrdering]] = {
    c.name: c
    for c in (
        AscendingReliability,
        DescendingReliability,
        RandomOrdering,
        HopFirstOrdering,
        FlatFormat,
    )
}


def get_ordering(ordering: str | PathOrdering) -> PathOrdering:
    """Return the policy for a name in :data:`ORDERINGS` or a :class:`PathOrdering`."""
    if isinstance(ordering, PathOrdering):
        return ordering
    if isinstance(ordering, str) and ordering in ORDERINGS:
        return ORDERINGS[ordering]()
    raise ConfigError(
        f"ordering must be one of {sorted(ORDERINGS)} or a PathOrdering, got {ordering!r}"
    )


#: The lightweight preset of section 5.5 (``N = 20``, ``K = 5``).
PATHRAG_LT = PathRAGConfig.lite()


# ====================================================================== 4.1 node retrieval
@dataclass(frozen=True)
class KeywordExtraction:
    """Keywords ``K_q`` of section 4.1 and where they came from."""

    keywords: tuple[str, ...]
    source: str
    """``"llm"``, ``"offline"`` (no LLM configured) or ``"offline-fallback"``."""
    raw_reply: str | None = None
    error: str | None = None
    """Why the LLM reply was not used (for ``"offline-fallback"``)."""


_STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom whose why will with
    would you your yours yourself yourselves did does done tell give list describe explain
    name named many much whether please know""".split()
)
_WORD = re.compile(r"[^\W_][\w'’-]*", re.UNICODE)
_QUOTED = re.compile(r"[\"“”']([^\"“”']{2,80})[\"“”']")


def offline_keywords(query: str, *, max_keywords: int = 12) -> list[str]:
    """LLM-free keyword extraction for section 4.1 (weaker than an LLM; documented).

    Heuristics, in output order: quoted phrases; runs of capitalised words (names, e.g.
    ``"Marie Curie"``; a question word at the start is skipped); then the remaining
    content words after stopword removal, each followed by its bigram with the next
    content word when adjacent. It cannot paraphrase, infer entities the question only
    implies, or produce the high-level concepts an LLM would, so node retrieval is less
    precise than with :func:`extract_keywords` and an LLM. Returns ``[query]`` if nothing
    survives.
    """
    q = check_query(query)
    out: dict[str, None] = {}

    def add(kw: str) -> None:
        kw = kw.strip(" \t\n.,;:!?'\"“”’")
        if kw and kw.casefold() not in {k.casefold() for k in out}:
            out[kw] = None

    for m in _QUOTED.finditer(q):
        add(m.group(1))
    words = [(m.group(0), m.start()) for m in _WORD.finditer(q)]
    run: list[str] = []
    for i, (w, _) in enumerate(words):
        cap = w[:1].isupper() and not (i == 0 and w.casefold() in _STOPWORDS)
        if cap and w.casefold() not in _STOPWORDS | {"i"}:
            run.append(w)
            continue
        if (
            run
            and w.casefold() in {"of", "de", "von", "van", "du", "la", "le"}
            and i + 1 < len(words)
            and words[i + 1][0][:1].isupper()
        ):
            run.append(w)
            continue
        if run:
            add(" ".join(run))
        run = []
    if run:
        add(" ".join(run))
    content = [
        (w, i) for i, (w, _) in enumerate(words) if w.casefold() not in _STOPWORDS and len(w) > 2
    ]
    for j, (w, i) in enumerate(content):
        add(w.lower() if not w[:1].isupper() else w)
        if j + 1 < len(content) and content[j + 1][1] == i + 1:
            add(f"{w} {content[j + 1][0]}")
    kws = list(out)[:max_keywords]
    return kws or [q]


_KEYWORD_KEYS = ("entities", "low_level_keywords", "keywords", "concepts", "high_level_keywords")


def parse_keywords(reply: str) -> list[str]:
    """Keywords from an LLM reply to :data:`~kgpath.prompts.pathrag.PATHRAG_KEYWORD_PROMPT`.

    Accepts ``{"entities": [...], "concepts": [...]}``, the LightRAG/PathRAG shape
    ``{"high_level_keywords": [...], "low_level_keywords": [...]}``, ``{"keywords": [...]}``,
    any other string lists in an object, or a bare JSON list; JSON damage is repaired by
    :func:`~kgpath.llm.parse_json_response`. Raises :class:`ParseError` if nothing usable
    is found.
    """
    data = parse_json_response(reply)
    lists: list[Any] = []
    if isinstance(data, dict):
        keys = [k for k in _KEYWORD_KEYS if k in data] + [k for k in data if k not in _KEYWORD_KEYS]
        for k in keys:
            v = data[k]
            lists.append(v if isinstance(v, list) else [v])
    else:
        lists.append(data)
    out: dict[str, None] = {}
    for lst in lists:
        for item in lst:
            if isinstance(item, str) and item.strip():
                kw = " ".join(item.split())
                if kw.casefold() not in {k.casefold() for k in out}:
                    out[kw] = None
    if not out:
        snippet = reply if len(reply) < 200 else reply[:200] + "..."
        raise ParseError(f"LLM reply contains no keyword strings: {snippet!r}")
    return list(out)


KeywordPrompt = str | Callable[[str], str]


def _keyword_prompt_text(prompt: KeywordPrompt, query: str) -> str:
    return prompt(query) if callable(prompt) else prompt.format(query=query)


def _from_reply(query: str, reply: Any) -> KeywordExtraction:
    try:
        kws = parse_keywords(reply)
    except ParseError as exc:
        logger.warning("PathRAG keyword reply unusable, offline keywords used: %s", exc)
        return KeywordExtraction(
            tuple(offline_keywords(query)),
            "offline-fallback",
            raw_reply=reply if isinstance(reply, str) else repr(reply),
            error=str(exc),
        )
    return KeywordExtraction(tuple(kws), "llm", raw_reply=reply)


def extract_keywords(
    query: str, llm: LLM | None = None, *, prompt: KeywordPrompt = PATHRAG_KEYWORD_PROMPT
) -> KeywordExtraction:
    """Section 4.1: keywords ``K_q`` of the query, by LLM (JSON) or offline.

    A malformed or empty LLM reply never raises: the offline extractor is used and the
    reason recorded in :attr:`KeywordExtraction.error`. Errors of the LLM backend itself
    (:class:`~kgpath.errors.BackendError`) propagate.
    """
    q = check_query(query)
    if llm is None:
        return KeywordExtraction(tuple(offline_keywords(q)), "offline")
    return _from_reply(q, llm.complete(_keyword_prompt_text(prompt, q)))


async def aextract_keywords(
    query: str, llm: LLM | None = None, *, prompt: KeywordPrompt = PATHRAG_KEYWORD_PROMPT
) -> KeywordExtraction:
    """Async :func:`extract_keywords` (awaits ``llm.acomplete``)."""
    q = check_query(query)
    if llm is None:
        return KeywordExtraction(tuple(offline_keywords(q)), "offline")
    return _from_reply(q, await llm.acomplete(_keyword_prompt_text(prompt, q)))


@dataclass(frozen=True)
class RetrievedNode:
    """A node of ``V_q`` with the keyword that retrieved it and their cosine similarity."""

    node: Node
    index: int
    keyword: str
    similarity: float

    @property
    def id(self) -> str:
        """Node id."""
        return self.node.id


def retrieve_nodes(
    keyword_vectors: np.ndarray, node_vectors: np.ndarray, n: int
) -> list[tuple[int, int, float]]:
    """Section 4.1: iterate over the keywords, collecting similar nodes until ``n`` are found.

    Each keyword ranks all nodes by cosine similarity (rows are unit vectors). Keywords
    take turns, each contributing its best node not yet collected, until ``n`` distinct
    nodes (or all nodes) are collected. Returns ``(node index, keyword position,
    similarity)`` in collection order. Ties rank the lower node index first.
    """
    kv = np.atleast_2d(np.asarray(keyword_vectors, dtype=np.float32))
    nv = np.asarray(node_vectors, dtype=np.float32)
    total = nv.shape[0]
    if kv.shape[0] == 0 or total == 0:
        return []
    n = min(int(n), total)
    sims = kv @ nv.T  # (|K_q|, |V|)
    depth = min(n, total)
    if depth < total:
        part = np.argpartition(-sims, depth - 1, axis=1)[:, :depth]
    else:
        part = np.broadcast_to(np.arange(total), sims.shape)
    psims = np.take_along_axis(sims, part, axis=1)
    ranked = np.take_along_axis(part, np.lexsort((part, -psims), axis=-1), axis=1)
    seen: set[int] = set()
    out: list[tuple[int, int, float]] = []
    for r in range(depth):
        for k in range(kv.shape[0]):
            node = int(ranked[k, r])
            if node not in seen:
                seen.add(node)
                out.append((node, k, float(sims[k, node])))
                if len(out) == n:
                    return out
    return out


# ====================================================================== 4.2 path retrieval
@dataclass(frozen=True)
class FlowAdjacency:
    """Distinct-neighbour CSR for Eq. (2): ``indices[indptr[v]:indptr[v+1]]`` is ``N(v,·)``.

    Parallel edges with different relations are one neighbour (``|N(v,·)|`` is a set
    size); in undirected mode ``N(v,·)`` is the union of out- and in-neighbours.
    Neighbours are sorted by node index.
    """

    indptr: np.ndarray
    indices: np.ndarray
    degree: np.ndarray
    direction: PathDirection
    graph_version: int = -1

    @property
    def num_nodes(self) -> int:
        """Number of nodes."""
        return int(self.degree.shape[0])

    @classmethod
    def from_edges(
        cls, num_nodes: int, src: np.ndarray, dst: np.ndarray, direction: PathDirection
    ) -> FlowAdjacency:
        """Build from parallel arrays of edge endpoints (node indices)."""
        if direction not in _DIRECTIONS:
            raise ConfigError(f"direction must be one of {_DIRECTIONS}, got {direction!r}")
        s = np.asarray(src, dtype=np.int64)
        d = np.asarray(dst, dtype=np.int64)
        if direction == "undirected":
            s, d = np.concatenate([s, d]), np.concatenate([d, s])
        n = int(num_nodes)
        keys = np.unique(s * max(n, 1) + d)
        us, ud = keys // max(n, 1), keys % max(n, 1)
        counts = np.bincount(us, minlength=n).astype(np.int64) if n else np.zeros(0, np.int64)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return cls(indptr, ud.astype(np.int64), counts, direction)


_ADJ_CACHE: weakref.WeakKeyDictionary[KnowledgeGraph, dict[str, FlowAdjacency]] = (
    weakref.WeakKeyDictionary()
)


def flow_adjacency(graph: KnowledgeGraph, direction: PathDirection = "directed") -> FlowAdjacency:
    """Return the :class:`FlowAdjacency` of ``graph`` (cached until the graph changes)."""
    if direction not in _DIRECTIONS:
        raise ConfigError(f"direction must be one of {_DIRECTIONS}, got {direction!r}")
    per = _ADJ_CACHE.setdefault(graph, {})
    adj = per.get(direction)
    if adj is not None and adj.graph_version == graph.version:
        return adj
    csr = graph.csr()
    n = graph.num_nodes
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(csr["out_indptr"]))
    built = FlowAdjacency.from_edges(n, src, csr["out_indices"], direction)
    adj = dataclasses.replace(built, graph_version=graph.version)
    per[direction] = adj
    return adj


@dataclass(frozen=True)
class Propagation:
    """Resource flow (Eqs. 2-3) from one or several start nodes, computed together.

    Every array is indexed by *state*: a (start, node) pair the flow reached. States are
    ordered level by level (level 0 holds the starts, in ``starts`` order), within a level
    by start slot and node index. ``slot[i]`` is the position of the state's start in
    ``starts``. ``flow_src``/``flow_dst`` are the DAG edges the resource flowed along (state
    indices); ``flow_level_ptr[l]:flow_level_ptr[l+1]`` are the edges into level ``l + 1``.
    Flows from different starts never mix.
    """

    starts: tuple[int, ...]
    slot: np.ndarray
    nodes: np.ndarray
    level: np.ndarray
    resource: np.ndarray
    emitted: np.ndarray
    """True if the node passed its resource on (not stopped by Eq. 3, not a sink, below
    ``max_hops``)."""
    early_stopped: np.ndarray
    """True if Eq. (3) stopped the node: ``S(v)/|N(v,·)| < θ``."""
    flow_src: np.ndarray
    flow_dst: np.ndarray
    flow_level_ptr: np.ndarray

    @property
    def start(self) -> int:
        """The start node (single-start propagations)."""
        return self.starts[0]

    def resources(self, slot: int = 0) -> dict[int, float]:
        """``{node index: S(v)}`` for every node reached from ``starts[slot]``."""
        sel = self.slot == slot
        return dict(zip(self.nodes[sel].tolist(), self.resource[sel].tolist(), strict=False))

    def levels(self, slot: int = 0) -> dict[int, int]:
        """``{node index: hop level}`` for every node reached from ``starts[slot]``."""
        sel = self.slot == slot
        return dict(zip(self.nodes[sel].tolist(), self.level[sel].tolist(), strict=False))

    def stopped_nodes(self, slot: int = 0) -> set[int]:
        """Node indices stopped by Eq. (3) in the flow from ``starts[slot]``."""
        return set(self.nodes[(self.slot == slot) & self.early_stopped].tolist())

    def emitting_nodes(self, slot: int = 0) -> set[int]:
        """Node indices that passed resource on in the flow from ``starts[slot]``."""
        return set(self.nodes[(self.slot == slot) & self.emitted].tolist())


def propagate_resources(
    adj: FlowAdjacency,
    start: int | Sequence[int],
    *,
    alpha: float = 0.8,
    theta: float = 0.05,
    max_hops: int | None = None,
) -> Propagation:
    """Eq. (2) resource flow from ``start`` (or from each of several starts) with Eq. (3).

    ``S(start) = 1``. In step ``l`` every node of level ``l - 1`` that is not stopped
    sends ``α · S(v_j) / |N(v_j,·)|`` to each distinct neighbour; a node reached for the
    first time sums what it receives in that step (Eq. 2) and is never updated again.
    A node with ``S(v)/|N(v,·)| < θ`` (Eq. 3) keeps its resource but sends nothing;
    neither does a node without neighbours or at ``max_hops``.

    Several starts are propagated side by side, each with its own resources, so one pass
    of about twenty numpy calls per level serves all ``N`` start nodes of a query.
    """
    n = adj.num_nodes
    starts = [start] if isinstance(start, (int, np.integer)) else list(start)
    for s in starts:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or not 0 <= s < n:
            raise NodeNotFoundError(f"start node index {s!r} out of range [0, {n})", key=str(s))
    if len(set(starts)) != len(starts):
        raise ConfigError(f"start nodes must be distinct, got {starts!r}")
    indptr, indices, degree = adj.indptr, adj.indices, adj.degree
    k = len(starts)
    f_slot: np.ndarray = np.arange(k, dtype=np.int64)
    f_node: np.ndarray = np.asarray(starts, dtype=np.int64)
    f_res: np.ndarray = np.ones(k)
    f_state: np.ndarray = np.arange(k, dtype=np.int64)
    seen = np.sort(f_slot * n + f_node)  # keys slot·n + node of every state so far
    slots: list[np.ndarray] = [f_slot]
    nodes: list[np.ndarray] = [f_node]
    levels: list[np.ndarray] = [np.zeros(k, np.int64)]
    res: list[np.ndarray] = [f_res]
    emits: list[np.ndarray] = []
    stops: list[np.ndarray] = []
    fsrc: list[np.ndarray] = []
    fdst: list[np.ndarray] = []
    fptr = [0]
    count = k
    depth = 0
    while True:
        deg = degree[f_node]
        share = f_res / np.maximum(deg, 1)  # S(v)/|N(v,·)|; sinks (degree 0) never emit
        has_nb = deg > 0
        stopped = has_nb & (share < theta)  # Eq. (3)
        emit = has_nb & ~stopped
        if max_hops is not None and depth >= max_hops:
            emit = np.zeros_like(emit)
        emits.append(emit)
        stops.append(stopped)
        if not emit.any():
            break
        cnt = deg[emit]
        total = int(cnt.sum())
        offs = np.repeat(indptr[f_node[emit]] - np.cumsum(cnt) + cnt, cnt)
        nb = indices[offs + np.arange(total)]
        e_slot = np.repeat(f_slot[emit], cnt)
        par = np.repeat(f_state[emit], cnt)
        contrib = np.repeat(alpha * share[emit], cnt)  # Eq. (2) term α·S(v_j)/|N(v_j,·)|
        key = e_slot * n + nb
        at = np.minimum(np.searchsorted(seen, key), seen.size - 1)
        fresh = seen[at] != key  # each node's resource is set at most once
        if not fresh.any():
            break
        key, par, contrib = key[fresh], par[fresh], contrib[fresh]
        ukey, inv = np.unique(key, return_inverse=True)
        new_res = np.bincount(inv, weights=contrib, minlength=ukey.size)  # Eq. (2) sum
        new_state = np.arange(count, count + ukey.size, dtype=np.int64)
        count += ukey.size
        depth += 1
        f_slot, f_node = ukey // n, ukey % n
        f_res, f_state = new_res, new_state
        seen = np.sort(np.concatenate([seen, ukey]))  # ukey holds only fresh keys
        fsrc.append(par)
        fdst.append(new_state[inv])
        fptr.append(fptr[-1] + par.size)
        slots.append(f_slot)
        nodes.append(f_node)
        levels.append(np.full(ukey.size, depth, dtype=np.int64))
        res.append(new_res)
    empty = np.zeros(0, dtype=np.int64)
    return Propagation(
        starts=tuple(int(x) for x in starts),
        slot=np.concatenate(slots),
        nodes=np.concatenate(nodes),
        level=np.concatenate(levels),
        resource=np.concatenate(res),
        emitted=np.concatenate(emits),
        early_stopped=np.concatenate(stops),
        flow_src=np.concatenate(fsrc) if fsrc else empty,
        flow_dst=np.concatenate(fdst) if fdst else empty,
        flow_level_ptr=np.asarray(fptr, dtype=np.int64),
    )


def path_reliability(resources: Sequence[float]) -> float:
    """Eq. (4): ``S(P) = (1/|E_P|) · Σ_{v ∈ V_P} S(v)`` for the node resources along ``P``.

    ``resources`` lists ``S(v_0), ..., S(v_h)`` (``h + 1`` values for ``h`` edges), summed
    left to right. A path needs at least one edge.
    """
    if len(resources) < 2:
        raise ConfigError(f"a path needs at least one edge, got {len(resources)} node(s)")
    total = 0.0
    for r in resources:
        total += float(r)
    return total / (len(resources) - 1)


@dataclass(frozen=True)
class PathCandidate:
    """A compact candidate path: node indices, their resources, Eq. (4) reliability."""

    nodes: tuple[int, ...]
    resources: tuple[float, ...]
    reliability: float

    @property
    def hops(self) -> int:
        """``|E_P|``."""
        return len(self.nodes) - 1

    @property
    def key(self) -> tuple[float, tuple[int, ...]]:
        """Sort key: most reliable first, ties by node-index sequence."""
        return (-self.reliability, self.nodes)


def best_paths_from(
    prop: Propagation, targets: Sequence[int] | np.ndarray, m: int = 1
) -> list[PathCandidate]:
    """Find the ``m`` most reliable flow paths from each start of ``prop`` to each target.

    ``targets`` are node indices or a boolean mask over all node indices; a start is never
    its own target. All flow-DAG paths from a start to a target have ``level(target)``
    edges, so Eq. (4) ranks them by their resource sum; dynamic programming over the
    levels finds the best ``m`` exactly, breaking ties by the lexicographic order of the
    node sequence. Output: per (start, reached target) state in state order, best first.
    """
    nodes, res = prop.nodes, prop.resource
    if isinstance(targets, np.ndarray) and targets.dtype == bool:
        hit = targets[nodes]
    else:
        hit = np.isin(nodes, np.asarray(list(targets), dtype=np.int64))
    hit &= prop.level > 0
    tstates = np.flatnonzero(hit).tolist()
    if not tstates:
        return []
    out: list[PathCandidate] = []
    if m == 1:
        pred = _best_predecessors(prop).tolist()
        for p in tstates:
            seq = [p]
            while pred[seq[-1]] >= 0:
                seq.append(pred[seq[-1]])
            seq.reverse()
            out.append(_candidate(nodes, res, seq))
        return out
    tops = _m_best(prop, m)
    for p in tstates:
        for states in tops[p]:
            out.append(_candidate(nodes, res, list(states)))
    return out


def _candidate(nodes: np.ndarray, res: np.ndarray, states: list[int]) -> PathCandidate:
    r = tuple(res[states].tolist())
    return PathCandidate(tuple(nodes[states].tolist()), r, path_reliability(r))


def _best_predecessors(prop: Propagation) -> np.ndarray:
    """Vectorised single-best DP: for each state, the predecessor state on its best path.

    ``best[v] = S(v) + max_u best[u]`` over flow edges ``u -> v``; among equal sums the
    predecessor whose best prefix is lexicographically smallest wins. ``lexrank`` ranks
    the best prefixes of one level by (start slot, predecessor's rank, node index).
    """
    size = prop.nodes.size
    best = prop.resource.copy()
    pred = np.full(size, -1, dtype=np.int64)
    lexrank = np.zeros(size, dtype=np.int64)
    ptr = prop.flow_level_ptr
    for lo, hi in zip(ptr[:-1].tolist(), ptr[1:].tolist(), strict=False):
        src, dst = prop.flow_src[lo:hi], prop.flow_dst[lo:hi]
        val = best[src] + prop.resource[dst]
        order = np.lexsort((lexrank[src], -val, dst))
        ds = dst[order]
        first = np.ones(ds.size, dtype=bool)
        first[1:] = ds[1:] != ds[:-1]
        chosen = order[first]
        dn = dst[chosen]
        best[dn] = val[chosen]
        pred[dn] = src[chosen]
        o2 = np.lexsort((prop.nodes[dn], lexrank[src[chosen]], prop.slot[dn]))
        lexrank[dn[o2]] = np.arange(dn.size)
    return pred


def _m_best(prop: Propagation, m: int) -> list[list[tuple[int, ...]]]:
    """``m``-best DP (Python): top-``m`` state sequences per state, best first."""
    size = prop.nodes.size
    nodes, res = prop.nodes.tolist(), prop.resource.tolist()
    tops: list[list[tuple[float, tuple[int, ...], tuple[int, ...]]]] = [
        [(res[i], (nodes[i],), (i,))] if lvl == 0 else []
        for i, lvl in enumerate(prop.level.tolist())
    ]
    ptr = prop.flow_level_ptr.tolist()
    src_all, dst_all = prop.flow_src.tolist(), prop.flow_dst.tolist()
    for lo, hi in zip(ptr[:-1], ptr[1:], strict=False):
        cand: dict[int, list[tuple[float, tuple[int, ...], tuple[int, ...]]]] = {}
        for s, d in zip(src_all[lo:hi], dst_all[lo:hi], strict=False):
            lst = cand.setdefault(d, [])
            for total, seq, sseq in tops[s]:
                lst.append((total + res[d], seq + (nodes[d],), sseq + (d,)))
        for d, lst in cand.items():
            lst.sort(key=lambda t: (-t[0], t[1]))
            tops[d] = lst[:m]
    assert len(tops) == size
    return [[p for _, _, p in t] for t in tops]


class CandidatePool(Sequence[PathCandidate]):
    """All candidate paths after per-pair pruning, most reliable first (ties by sequence)."""

    def __init__(self, candidates: list[PathCandidate], stats: dict[str, Any]) -> None:
        self._c = candidates
        self.stats = stats

    def __len__(self) -> int:
        return len(self._c)

    def __getitem__(self, i: Any) -> Any:
        return self._c[i]

    def top(self, k: int) -> list[PathCandidate]:
        """Return the ``k`` most reliable candidates (all of them if fewer)."""
        return self._c[:k]


def prune_paths(
    adj: FlowAdjacency,
    nodes: Sequence[int] | np.ndarray,
    *,
    alpha: float = 0.8,
    theta: float = 0.05,
    paths_per_pair: int = 1,
    max_hops: int | None = None,
) -> CandidatePool:
    """Section 4.2 for all ordered pairs of ``nodes``: the ranked candidate pool.

    One propagation per start node (Eqs. 2-3; all starts in one batched pass) serves all
    its end nodes; each ordered pair contributes its ``paths_per_pair`` most reliable flow
    paths (Eq. 4). In undirected mode a path whose exact reverse is also a candidate is
    kept once, in its more reliable orientation. The pool is sorted by reliability
    (descending), ties by the node-index sequence.
    """
    starts = list(dict.fromkeys(int(x) for x in nodes))
    if not starts:
        return CandidatePool(
            [],
            {
                "retrieved_nodes": 0,
                "ordered_pairs": 0,
                "pairs_with_path": 0,
                "pool_size": 0,
                "reverse_duplicates_removed": 0,
                "propagations": [],
            },
        )
    prop = propagate_resources(adj, starts, alpha=alpha, theta=theta, max_hops=max_hops)
    is_target = np.zeros(adj.num_nodes, dtype=bool)
    is_target[starts] = True
    cands = best_paths_from(prop, is_target, paths_per_pair)
    pairs_with_path = len({(c.nodes[0], c.nodes[-1]) for c in cands})
    k = len(starts)
    reached = np.bincount(prop.slot, minlength=k)
    emitted = np.bincount(prop.slot, weights=prop.emitted, minlength=k)
    stopped = np.bincount(prop.slot, weights=prop.early_stopped, minlength=k)
    depth = np.zeros(k, dtype=np.int64)
    np.maximum.at(depth, prop.slot, prop.level)
    per_start = [
        {
            "start": s,
            "reached": int(r),
            "emitted": int(e),
            "early_stopped": int(x),
            "max_level": int(d),
        }
        for s, r, e, x, d in zip(starts, reached, emitted, stopped, depth, strict=False)
    ]
    deduped = 0
    if adj.direction == "undirected" and cands:
        best: dict[tuple[int, ...], PathCandidate] = {}
        for c in cands:
            canon = min(c.nodes, c.nodes[::-1])
            old = best.get(canon)
            if old is None or c.key < old.key:
                best[canon] = c
        deduped = len(cands) - len(best)
        cands = list(best.values())
    cands.sort(key=lambda c: c.key)
    stats = {
        "retrieved_nodes": k,
        "ordered_pairs": k * (k - 1),
        "pairs_with_path": pairs_with_path,
        "pool_size": len(cands),
        "reverse_duplicates_removed": deduped,
        "propagations": per_start,
    }
    return CandidatePool(cands, stats)


# ====================================================================== 4.3 prompting
@dataclass(frozen=True)
class PathRAGPath:
    """A retrieved relational path with everything that explains its score.

    ``edges[i]`` is the graph edge used for hop ``i`` (``nodes[i] -> nodes[i+1]``; in
    undirected mode it may point backwards, see ``reversed_hops``); ``hop_edges[i]``
    lists every edge between the two nodes (parallel relations), all of which appear in
    the textual path. ``resources[i]`` is ``S(nodes[i])`` from the start node's
    propagation (Eq. 2) and ``reliability`` is Eq. (4). ``rank`` 1 is ``P_1``, the most
    reliable path.
    """

    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    hop_edges: tuple[tuple[Edge, ...], ...]
    reversed_hops: tuple[bool, ...]
    resources: tuple[float, ...]
    reliability: float
    rank: int
    text: str

    @property
    def ids(self) -> tuple[str, ...]:
        """Node ids along the path."""
        return tuple(n.id for n in self.nodes)

    @property
    def hops(self) -> int:
        """``|E_P|``."""
        return len(self.edges)

    @property
    def provenance(self) -> tuple[str, ...]:
        """Passage ids cited by the path's nodes, then its edges (first-seen order)."""
        prov: dict[str, None] = {}
        for n in self.nodes:
            prov.update(dict.fromkeys(n.provenance))
        for group in self.hop_edges:
            for e in group:
                prov.update(dict.fromkeys(e.provenance))
        return tuple(prov)

    @property
    def stable_id(self) -> str:
        """A short id derived from the node ids (same path -> same id across runs)."""
        digest = hashlib.sha1("\x1f".join(self.ids).encode("utf-8")).hexdigest()[:16]
        return f"pathrag-{digest}"

    @property
    def start(self) -> Node:
        """First node."""
        return self.nodes[0]

    @property
    def end(self) -> Node:
        """Last node."""
        return self.nodes[-1]

    def describe(self) -> str:
        """Compact rendering such as ``A -[rel]-> B <-[rel2]- C``."""
        out = self.nodes[0].name
        for e, rev, nxt in zip(self.edges, self.reversed_hops, self.nodes[1:], strict=False):
            label = e.relation
            if rev:
                out += f" <-[{label}]- " if label else " <- "
            else:
                out += f" -[{label}]-> " if label else " -> "
            out += nxt.name
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly structure (used by the adapters' metadata)."""
        return {
            "path_node_ids": list(self.ids),
            "path_node_names": [n.name for n in self.nodes],
            "path_edges": [
                {"source": e.source, "target": e.target, "relation": e.relation} for e in self.edges
            ],
            "reversed_hops": list(self.reversed_hops),
            "resources": list(self.resources),
            "reliability": self.reliability,
            "hops": self.hops,
            "rank": self.rank,
            "path": self.describe(),
        }


def _node_text(node: Node) -> str:
    return " ".join(node.search_text.split())


def _edge_text(edge: Edge, a: Node, b: Node) -> str:
    if edge.text:
        return " ".join(edge.text.split())
    src, dst = (a, b) if edge.source == a.id else (b, a)
    if edge.relation:
        return f"{src.name} {edge.relation} {dst.name}"
    return f"{src.name} is linked to {dst.name}"


def textual_path(
    path_nodes: Sequence[Node], hop_edges: Sequence[Sequence[Edge]], sep: str = " | "
) -> str:
    """Eq. (5): ``t_P = concat([t_v0; t_e0; t_v1; ...])`` joined by ``sep``.

    Node text is :attr:`Node.search_text` (its name prefixed when the text lacks it); edge
    text is :attr:`Edge.text`, else ``"<source> <relation> <target>"``. Parallel edges of
    one hop are joined with ``"; "``.
    """
    parts = [_node_text(path_nodes[0])]
    for group, a, b in zip(hop_edges, path_nodes, path_nodes[1:], strict=False):
        parts.append("; ".join(_edge_text(e, a, b) for e in group))
        parts.append(_node_text(b))
    return sep.join(parts)


def materialize_path(graph: KnowledgeGraph, cand: PathCandidate, rank: int) -> PathRAGPath:
    """Turn a compact candidate into a :class:`PathRAGPath` with nodes, edges and Eq. (5) text."""
    csr = graph.csr()
    nodes = tuple(graph.node_at(i) for i in cand.nodes)
    edges: list[Edge] = []
    groups: list[tuple[Edge, ...]] = []
    revs: list[bool] = []
    for u, v in zip(cand.nodes, cand.nodes[1:], strict=False):
        fwd = _edges_between(csr, u, v)
        back = _edges_between(csr, v, u)
        if fwd:
            group = [graph.edge_at(e) for e in fwd + back]
            rev = False
        elif back:
            group = [graph.edge_at(e) for e in back]
            rev = True
        else:  # pragma: no cover - candidates come from the adjacency
            raise KgpathError(f"no edge between node indices {u} and {v}")
        edges.append(group[0])
        groups.append(tuple(group))
        revs.append(rev)
    return PathRAGPath(
        nodes=nodes,
        edges=tuple(edges),
        hop_edges=tuple(groups),
        reversed_hops=tuple(revs),
        resources=cand.resources,
        reliability=cand.reliability,
        rank=rank,
        text=textual_path(nodes, groups),
    )


def _edges_between(csr: dict[str, np.ndarray], u: int, v: int) -> list[int]:
    lo, hi = int(csr["out_indptr"][u]), int(csr["out_indptr"][u + 1])
    sel = csr["out_indices"][lo:hi] == v
    return [int(e) for e in np.sort(csr["out_edges"][lo:hi][sel])]


QAPrompt = str | Callable[[str, str], str]


def build_prompt(query: str, blocks: Sequence[str], template: QAPrompt = PATHRAG_QA_PROMPT) -> str:
    """Eq. (6): ``concat([q; t_PK; ...; t_P1])`` through the QA template.

    ``blocks`` are already in prompt order (see :class:`PathOrdering`); ``template`` is a
    format string with ``{query}`` and ``{paths}`` or a callable ``(query, paths) -> str``.
    """
    paths = "\n".join(blocks) if blocks else "(no relational paths were found)"
    if callable(template):
        return template(query, paths)
    return template.format(query=query, paths=paths)


# ====================================================================== result + retriever
@dataclass(frozen=True)
class PathRAGResult:
    """PathRAG output: the paths, the prompt, and everything needed to explain them.

    ``paths`` are the top-``K`` paths by reliability, most reliable first (``P_1 ... P_K``);
    ``prompt_paths`` are the paths the ordering policy put in the prompt, in prompt order,
    after any token-budget drops. ``empty_reason`` is ``None`` or one of
    ``"fewer_than_two_nodes"`` (fewer than 2 nodes retrieved) and ``"no_path"`` (no flow
    path between any ordered pair); then ``paths`` is empty and the prompt carries the
    query only.
    """

    query: str
    keywords: tuple[str, ...]
    keyword_source: str
    nodes: tuple[RetrievedNode, ...]
    paths: tuple[PathRAGPath, ...]
    prompt_paths: tuple[PathRAGPath, ...]
    context: str
    prompt: str
    config: PathRAGConfig
    empty_reason: str | None = None
    trace: dict[str, Any] = field(default_factory=dict)
    pool: CandidatePool | None = field(default=None, repr=False, compare=False)
    graph: KnowledgeGraph | None = field(default=None, repr=False, compare=False)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)

    def candidates(self) -> list[PathRAGPath]:
        """Every candidate path of the pool (materialised on demand), most reliable first."""
        if self.pool is None or self.graph is None:
            return list(self.paths)
        return [materialize_path(self.graph, c, i) for i, c in enumerate(self.pool, 1)]

    def token_count(self, encoding: str | None = None) -> int:
        """Tokens in :attr:`prompt` (tiktoken, offline encodings only)."""
        from kgpath.tokens import count_tokens

        return count_tokens(self.prompt, encoding or self.config.encoding)


class PathRAGRetriever:
    """PathRAG over a :class:`GraphIndex` (sections 4.1-4.3).

    Parameters
    ----------
    index
        A :class:`GraphIndex`, or a :class:`KnowledgeGraph` (wrapped with ``embedder``).
    embedder
        Used only when ``index`` is a bare graph.
    llm
        Any :class:`~kgpath.llm.LLM` for keyword extraction; ``None`` uses
        :func:`offline_keywords` (weaker, documented).
    config
        :class:`PathRAGConfig` (paper defaults); per-call overrides are keyword arguments
        of :meth:`retrieve`, applied with ``dataclasses.replace``.
    keyword_prompt
        Keyword template with ``{query}`` (or callable ``query -> prompt``).
    qa_prompt
        Answer template with ``{query}`` and ``{paths}`` (or callable).

    Examples
    --------
    >>> from kgpath import KnowledgeGraph, HashingEmbedder
    >>> g = KnowledgeGraph.from_triples([("a", "to", "b"), ("b", "to", "c")])
    >>> r = PathRAGRetriever(g, embedder=HashingEmbedder())
    >>> [p.ids for p in r.retrieve_from_nodes("a to c?", ["a", "c"]).paths]
    [('a', 'b', 'c')]
    """

    def __init__(
        self,
        index: GraphIndex | KnowledgeGraph,
        *,
        embedder: Any = None,
        llm: LLM | None = None,
        config: PathRAGConfig | None = None,
        keyword_prompt: KeywordPrompt = PATHRAG_KEYWORD_PROMPT,
        qa_prompt: QAPrompt = PATHRAG_QA_PROMPT,
    ) -> None:
        self.index = index if isinstance(index, GraphIndex) else GraphIndex(index, embedder)
        self.llm = llm
        self.config = config or PathRAGConfig()
        self.keyword_prompt = keyword_prompt
        self.qa_prompt = qa_prompt
        self._names: tuple[int, np.ndarray] | None = None

    @property
    def graph(self) -> KnowledgeGraph:
        """The underlying graph."""
        return self.index.graph

    def resolve_config(self, **overrides: Any) -> PathRAGConfig:
        """Return this retriever's config with per-call ``overrides`` applied and validated.

        Raises :class:`ConfigError` for unknown option names or invalid values.
        """
        return with_overrides(self.config, overrides, label="PathRAG", none_is_value=True)

    # ------------------------------------------------------------------ 4.1
    def _node_matrix(self, cfg: PathRAGConfig) -> np.ndarray:
        if cfg.node_match == "text":
            return self.index.vector_index.vectors
        g = self.graph
        if self._names is None or self._names[0] != g.version:
            mat = self.index.embedder.embed_passages([n.name or n.id for n in g.nodes])
            self._names = (g.version, np.asarray(mat, dtype=np.float32))
        return self._names[1]

    def _nodes_for(
        self, kws: KeywordExtraction, kv: np.ndarray, cfg: PathRAGConfig
    ) -> list[RetrievedNode]:
        mat = self._node_matrix(cfg)
        hits = retrieve_nodes(kv, mat, cfg.num_nodes)
        g = self.graph
        return [RetrievedNode(g.node_at(i), i, kws.keywords[k], s) for i, k, s in hits]

    def nodes_for_query(
        self, query: str, **overrides: Any
    ) -> tuple[KeywordExtraction, list[RetrievedNode]]:
        """Section 4.1 only: keywords and the retrieved node set ``V_q``."""
        cfg = self.resolve_config(**overrides)
        kws = extract_keywords(query, self.llm, prompt=self.keyword_prompt)
        kv = self.index.embedder.embed_queries(list(kws.keywords))
        return kws, self._nodes_for(kws, kv, cfg)

    # ------------------------------------------------------------------ pipeline
    def retrieve(self, query: str, **overrides: Any) -> PathRAGResult:
        """Run PathRAG for ``query``; ``overrides`` are :class:`PathRAGConfig` fields."""
        q = check_query(query)
        cfg = self.resolve_config(**overrides)
        t0 = time.perf_counter()
        kws = extract_keywords(q, self.llm, prompt=self.keyword_prompt)
        kv = self.index.embedder.embed_queries(list(kws.keywords))
        t1 = time.perf_counter()
        nodes = self._nodes_for(kws, kv, cfg)
        return self._finish(
            q,
            kws,
            nodes,
            cfg,
            {"keywords_ms": (t1 - t0) * 1e3, "nodes_ms": (time.perf_counter() - t1) * 1e3},
        )

    async def aretrieve(self, query: str, **overrides: Any) -> PathRAGResult:
        """Async :meth:`retrieve` (LLM and keyword embedding awaited)."""
        q = check_query(query)
        cfg = self.resolve_config(**overrides)
        t0 = time.perf_counter()
        kws = await aextract_keywords(q, self.llm, prompt=self.keyword_prompt)
        kv = await self.index.embedder.aembed_queries(list(kws.keywords))
        t1 = time.perf_counter()
        nodes = self._nodes_for(kws, kv, cfg)
        return self._finish(
            q,
            kws,
            nodes,
            cfg,
            {"keywords_ms": (t1 - t0) * 1e3, "nodes_ms": (time.perf_counter() - t1) * 1e3},
        )

    def retrieve_from_nodes(
        self, query: str, node_ids: Sequence[str], **overrides: Any
    ) -> PathRAGResult:
        """Sections 4.2-4.3 from a given node set (skips keyword retrieval).

        Unknown ids raise :class:`NodeNotFoundError`; duplicates are ignored.
        """
        q = check_query(query)
        cfg = self.resolve_config(**overrides)
        g = self.graph
        nodes = [
            RetrievedNode(g.node_at(i), i, "(given)", float("nan"))
            for i in dict.fromkeys(g.index_of(n) for n in node_ids)
        ]
        return self._finish(q, KeywordExtraction((), "given"), nodes, cfg, {})

    def _finish(
        self,
        query: str,
        kws: KeywordExtraction,
        nodes: list[RetrievedNode],
        cfg: PathRAGConfig,
        timings: dict[str, float],
    ) -> PathRAGResult:
        g = self.graph
        ordering = get_ordering(cfg.ordering)
        trace: dict[str, Any] = {
            "keywords": list(kws.keywords),
            "keyword_source": kws.source,
            "keyword_error": kws.error,
            "retrieved_node_ids": [n.id for n in nodes],
            "direction": cfg.direction,
            "alpha": cfg.alpha,
            "theta": cfg.theta,
            "top_k": cfg.top_k,
            "ordering": ordering.name or type(ordering).__name__,
        }
        t0 = time.perf_counter()
        pool: CandidatePool | None = None
        empty: str | None = None
        if len(nodes) < 2:
            empty = "fewer_than_two_nodes"
            top: list[PathRAGPath] = []
            trace.update(pool_size=0, pairs_with_path=0)
        else:
            adj = flow_adjacency(g, cfg.direction)
            pool = prune_paths(
                adj,
                [n.index for n in nodes],
                alpha=float(cfg.alpha),
                theta=float(cfg.theta),
                paths_per_pair=cfg.paths_per_pair,
                max_hops=cfg.max_hops,
            )
            trace.update(pool.stats)
            top = [materialize_path(g, c, i) for i, c in enumerate(pool.top(cfg.top_k), 1)]
            if not len(pool):
                empty = "no_path"
        timings["paths_ms"] = (time.perf_counter() - t0) * 1e3
        trace["returned"] = len(top)
        trace["k_shortfall"] = max(0, cfg.top_k - len(top))
        rng = random.Random(cfg.seed)
        arranged: list[PathRAGPath] = []
        if pool is not None and len(pool):
            by_pos = {i: p for i, p in enumerate(top)}
            for i in ordering.arrange(pool, cfg.top_k, rng):
                arranged.append(by_pos.get(i) or materialize_path(g, pool[i], i + 1))
        prompt_paths, context, prompt, budget = self._fit(query, arranged, ordering, rng, cfg)
        trace["budget"] = budget
        trace["timings_ms"] = timings
        return PathRAGResult(
            query=query,
            keywords=kws.keywords,
            keyword_source=kws.source,
            nodes=tuple(nodes),
            paths=tuple(top),
            prompt_paths=tuple(prompt_paths),
            context=context,
            prompt=prompt,
            config=cfg,
            empty_reason=empty,
            trace=trace,
            pool=pool,
            graph=g,
        )

    def _fit(
        self,
        query: str,
        arranged: list[PathRAGPath],
        ordering: PathOrdering,
        rng: random.Random,
        cfg: PathRAGConfig,
    ) -> tuple[list[PathRAGPath], str, str, dict[str, Any]]:
        """Render the prompt; with a token budget, drop the least reliable paths until it fits."""
        state = rng.getstate()

        def render(paths: list[PathRAGPath]) -> tuple[str, str]:
            rng.setstate(state)  # the same shuffle for every attempt
            blocks = ordering.render(paths, rng)
            return "\n".join(blocks), build_prompt(query, blocks, self.qa_prompt)

        kept = list(arranged)
        context, prompt = render(kept)
        if cfg.token_budget is None:
            return kept, context, prompt, {"token_budget": None}
        from kgpath.tokens import count_tokens

        dropped: list[str] = []
        tokens = count_tokens(prompt, cfg.encoding)
        while tokens > cfg.token_budget and kept:
            worst = max(range(len(kept)), key=lambda i: (-kept[i].reliability, kept[i].rank))
            dropped.append(kept.pop(worst).describe())
            context, prompt = render(kept)
            tokens = count_tokens(prompt, cfg.encoding)
        return (
            kept,
            context,
            prompt,
            {
                "token_budget": cfg.token_budget,
                "prompt_tokens": tokens,
                "dropped_paths": dropped,
                "over_budget": tokens > cfg.token_budget,
            },
        )
