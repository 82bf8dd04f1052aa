"""Keyword and community layers over a base graph, and routing through communities.

Reference: N. Balic, "Schema-Guided Graph Retrieval for Multi-Hop Reasoning", 2026
(shared/papers/schema-guided-graph-retrieval-pattern.txt), solution step 3 and guidance
item 5 ("add keyword/community layers only after the base graph works").

The pattern names the layers but no algorithm; the choices here:

* **Keyword layer** - node texts are tokenised as for BM25 (:func:`kgpath.search.bm25.tokenize`,
  tokens of fewer than 3 characters and pure numbers dropped). With ``N`` base nodes and
  ``df(w)`` the number of nodes whose text contains ``w``, a node's keywords are its top
  ``keywords_per_node`` terms by ``tf(w, v) · log(N / df(w))`` among terms with
  ``min_keyword_df <= df(w) <= max(min_keyword_df, max_keyword_df · N)``. A keyword node
  links to every node containing the term.
* **Community layer** - networkx ``louvain_communities`` (seeded, so reproducible) on the
  undirected projection of the base graph (parallel edges summed, self-loops ignored);
  ``"leiden"`` dispatches to ``networkx.community.leiden_communities`` when a backend provides
  it. A community node links to its members with ``has_member`` edges. Its summary is written
  by an LLM when one is given, otherwise it lists the community's top keywords (summed
  tf-idf over members) and its best-connected members.
* **Routing** (:class:`CommunityRouter`) - community summaries (plus member names) are
  embedded; a query goes to the ``top`` most similar communities and search continues among
  their members only. This trades recall for a smaller candidate set on large graphs.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from kgpath._files import atomic_write, user_path
from kgpath._progress import progress
from kgpath.embeddings import Embedder
from kgpath.errors import (
    BackendError,
    ConfigError,
    EmptyGraphError,
    KgpathError,
    PersistenceError,
)
from kgpath.graph import KnowledgeGraph
from kgpath.llm import LLM, call_llm
from kgpath.prompts.schema import SCHEMA_COMMUNITY_SUMMARY_PROMPT
from kgpath.search.bm25 import tokenize
from kgpath.search.vector import VectorIndex

__all__ = [
    "COMMUNITY_TYPE",
    "KEYWORD_TYPE",
    "LAYER_KEY",
    "Community",
    "CommunityRouter",
    "Hierarchy",
    "HierarchyConfig",
    "build_hierarchy",
    "detect_communities",
    "is_layer_node",
    "keyword_layer",
    "summarize_community",
]

#: ``Node.metadata`` key marking a node of a hierarchy layer (value ``"keyword"``/``"community"``).
LAYER_KEY = "layer"
COMMUNITY_TYPE = "Community"
KEYWORD_TYPE = "Keyword"
HIERARCHY_FORMAT_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class HierarchyConfig:
    """Hierarchy settings (the pattern gives no values; these are documented choices).

    Attributes
    ----------
    algorithm
        ``"louvain"`` (default, networkx) or ``"leiden"`` (needs a networkx backend).
    resolution
        Louvain/Leiden resolution; > 1 gives smaller communities (default 1.0).
    seed
        Random seed of the community algorithm (default 0).
    min_community_size
        Communities smaller than this get no community node (default 1: every node is in one,
        so routing can reach every node).
    keywords_per_node, keywords_per_community
        Top terms kept per node (default 3) and per community (default 5).
    min_keyword_df, max_keyword_df
        A keyword must occur in at least ``min_keyword_df`` nodes (default 2) and at most a
        ``max_keyword_df`` fraction of them (default 0.5).
    summary_members
        Members named in a summary or in the summary prompt (best-connected first; default 12).
    """

    algorithm: Literal["louvain", "leiden"] = "louvain"
    resolution: float = 1.0
    seed: int = 0
    min_community_size: int = 1
    keywords_per_node: int = 3
    keywords_per_community: int = 5
    min_keyword_df: int = 2
    max_keyword_df: float = 0.5
    summary_members: int = 12

    def __post_init__(self) -> None:
        if self.algorithm not in ("louvain", "leiden"):
            raise ConfigError(f"algorithm must be 'louvain' or 'leiden', got {self.algorithm!r}")
        if not isinstance(self.resolution, (int, float)) or self.resolution <= 0:
            raise ConfigError(f"resolution must be > 0, got {self.resolution!r}")
        for name in ("min_community_size", "keywords_per_node", "keywords_per_community",
                     "min_keyword_df", "summary_members"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"{name} must be an int >= 1, got {v!r}")
        if not isinstance(self.max_keyword_df, (int, float)) or not 0 < self.max_keyword_df <= 1:
            raise ConfigError(f"max_keyword_df must be in (0, 1], got {self.max_keyword_df!r}")


@dataclass(frozen=True)
class Community:
    """One community: its node id, member node ids, keywords and summary."""

    id: str
    members: tuple[str, ...]
    keywords: tuple[str, ...]
    summary: str
    summary_source: Literal["llm", "keywords"]
    names: tuple[str, ...] = ()
    """Names of the best-connected members (at most ``summary_members``)."""

    @property
    def routing_text(self) -> str:
        """Text embedded for routing: the summary plus the leading member names."""
        if not self.names:
            return self.summary
        return f"{self.summary} Members: {', '.join(self.names)}."


def is_layer_node(metadata: Mapping[str, Any]) -> bool:
    """Whether a node's metadata marks it as a keyword/community layer node."""
    return metadata.get(LAYER_KEY) in ("keyword", "community")


def _base_indices(graph: KnowledgeGraph) -> list[int]:
    return [i for i, n in enumerate(graph.nodes) if not is_layer_node(n.metadata)]


# ---------------------------------------------------------------------- keywords
def _node_terms(graph: KnowledgeGraph, idx: Sequence[int]) -> list[Counter[str]]:
    out = []
    for i in idx:
        text = graph.node_at(i).search_text
        toks = [t for t in tokenize(text) if len(t) >= 3 and not t.isdigit()]
        out.append(Counter(toks))
    return out


def _tfidf(
    terms: list[Counter[str]], cfg: HierarchyConfig
) -> tuple[list[dict[str, float]], Counter[str]]:
    n = len(terms)
    df: Counter[str] = Counter()
    for c in terms:
        df.update(c.keys())
    hi = max(cfg.min_keyword_df, cfg.max_keyword_df * n)
    weights = []
    for c in terms:
        weights.append({
            w: tf * math.log(n / df[w]) for w, tf in c.items() if cfg.min_keyword_df <= df[w] <= hi
        })
    return weights, df


def keyword_layer(
    graph: KnowledgeGraph, config: HierarchyConfig | None = None
) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """Keyword layer: ``(keyword -> node ids containing it, node id -> its top keywords)``.

    See the module docstring for the tf-idf rule. Layer nodes are ignored.
    """
    cfg = config or HierarchyConfig()
    idx = _base_indices(graph)
    terms = _node_terms(graph, idx)
    weights, _ = _tfidf(terms, cfg)
    node_kw: dict[str, tuple[str, ...]] = {}
    chosen: set[str] = set()
    for i, w in zip(idx, weights, strict=True):
        top = sorted(w.items(), key=lambda kv: (-kv[1], kv[0]))[: cfg.keywords_per_node]
        node_kw[graph.node_at(i).id] = tuple(t for t, _ in top)
        chosen.update(t for t, _ in top)
    kw_nodes: dict[str, list[str]] = {t: [] for t in sorted(chosen)}
    for i, c in zip(idx, terms, strict=True):
        for t in c:
            if t in kw_nodes:
                kw_nodes[t].append(graph.node_at(i).id)
    return {t: tuple(v) for t, v in kw_nodes.items()}, node_kw


# ---------------------------------------------------------------------- communities
def detect_communities(
    graph: KnowledgeGraph, config: HierarchyConfig | None = None
) -> list[tuple[str, ...]]:
    """Communities of base nodes (member ids), largest first, then by first member index.

    Louvain/Leiden on the undirected projection: the weight between two nodes is the sum of
    the weights of the edges joining them in either direction; self-loops are ignored.
    """
    import networkx as nx

    cfg = config or HierarchyConfig()
    idx = _base_indices(graph)
    if not idx:
        raise EmptyGraphError("cannot build communities: the graph has no base nodes")
    base = set(idx)
    ug = nx.Graph()
    ug.add_nodes_from(idx)
    for e in graph.edges:
        a, b = graph.index_of(e.source), graph.index_of(e.target)
        if a == b or a not in base or b not in base:
            continue
        w = ug.get_edge_data(a, b, {}).get("weight", 0.0)
        ug.add_edge(a, b, weight=w + float(e.weight))
    if cfg.algorithm == "louvain":
        comms = nx.community.louvain_communities(
            ug, weight="weight", resolution=cfg.resolution, seed=cfg.seed
        )
    else:
        try:
            comms = nx.community.leiden_communities(
                ug, weight="weight", resolution=cfg.resolution, seed=cfg.seed
            )
        except NotImplementedError as exc:
            raise ConfigError(
                "algorithm='leiden' needs a networkx backend that implements it "
                f"(e.g. graspologic/cugraph): {exc}; use algorithm='louvain'"
            ) from exc
    groups = [sorted(int(i) for i in c) for c in comms]
    groups.sort(key=lambda g: (-len(g), g[0]))
    return [tuple(graph.node_at(i).id for i in g) for g in groups]


def _ranked_members(graph: KnowledgeGraph, members: Sequence[str]) -> list[str]:
    """Members by number of edges inside the community (desc), then name."""
    inside = set(members)
    deg: Counter[str] = Counter()
    for e in graph.edges:
        if e.source in inside and e.target in inside and e.source != e.target:
            deg[e.source] += 1
            deg[e.target] += 1
    return sorted(members, key=lambda m: (-deg[m], graph.node(m).name.lower()))


def summarize_community(
    graph: KnowledgeGraph,
    members: Sequence[str],
    keywords: Sequence[str],
    *,
    llm: LLM | None = None,
    max_members: int = 12,
    prompt: str = SCHEMA_COMMUNITY_SUMMARY_PROMPT,
) -> tuple[str, Literal["llm", "keywords"]]:
    """Summary text of a community: by ``llm`` when given, else from keywords and names.

    The keyword summary reads ``"<n> nodes about k1, k2, ...; main members: a, b, ..."``.
    An LLM reply that is empty falls back to the keyword summary.
    """
    ranked = _ranked_members(graph, members)[:max_members]
    if llm is not None:
        inside = set(members)
        lines = []
        for m in ranked:
            n = graph.node(m)
            typ = f" ({n.type})" if n.type else ""
            lines.append(f"- {n.name}{typ}: {n.text}" if n.text else f"- {n.name}{typ}")
        rels = [
            f"- {graph.node(e.source).name} -[{e.relation}]-> {graph.node(e.target).name}"
            for e in graph.edges if e.source in inside and e.target in inside
        ][:30]
        try:  # the one call path; a model that keeps failing: the keyword summary
            reply = call_llm(llm, prompt.format(members="\n".join(lines),
                                                relations="\n".join(rels) or "(none)"),
                             step="community summary").strip()
        except BackendError:
            reply = ""
        if reply:
            return reply, "llm"
    names = ", ".join(graph.node(m).name for m in ranked)
    about = f" about {', '.join(keywords)}" if keywords else ""
    return f"{len(members)} nodes{about}; main members: {names}", "keywords"


# ---------------------------------------------------------------------- hierarchy
@dataclass(frozen=True)
class Hierarchy:
    """Keyword and community layers of one graph."""

    communities: tuple[Community, ...]
    keywords: Mapping[str, tuple[str, ...]]
    """keyword -> ids of the nodes containing it."""
    node_keywords: Mapping[str, tuple[str, ...]]
    """node id -> its top keywords."""
    config: HierarchyConfig
    trace: dict[str, Any] = field(default_factory=dict)

    def community(self, community_id: str) -> Community:
        """Return the community with this id (``NodeNotFoundError`` if unknown)."""
        for c in self.communities:
            if c.id == community_id:
                return c
        from kgpath.errors import NodeNotFoundError

        raise NodeNotFoundError(f"unknown community id {community_id!r}", key=community_id)

    def communities_of(self, node_id: str) -> list[str]:
        """Ids of the communities containing ``node_id``."""
        return [c.id for c in self.communities if node_id in c.members]

    def attach(self, graph: KnowledgeGraph) -> KnowledgeGraph:
        """Add the layer nodes and edges to ``graph`` in place and return it.

        Community nodes (type ``Community``, ``metadata["layer"] = "community"``, text = the
        summary) get ``has_member`` edges to their members; keyword nodes (type ``Keyword``)
        get ``has_keyword`` edges from the nodes containing the term. Typed retrieval skips
        layer nodes unless asked to include them.
        """
        for c in self.communities:
            graph.add_node(
                c.id, name=f"Community {c.id.split(':', 1)[-1]}", text=c.routing_text,
                type=COMMUNITY_TYPE,
                metadata={LAYER_KEY: "community", "members": len(c.members),
                          "keywords": list(c.keywords), "summary_source": c.summary_source},
            )
            for m in c.members:
                graph.add_edge(c.id, m, relation="has_member", metadata={LAYER_KEY: "community"})
        for kw, nodes in self.keywords.items():
            kid = f"keyword:{kw}"
            graph.add_node(kid, name=kw, text=kw, type=KEYWORD_TYPE,
                           metadata={LAYER_KEY: "keyword", "nodes": len(nodes)})
            for n in nodes:
                graph.add_edge(n, kid, relation="has_keyword", metadata={LAYER_KEY: "keyword"})
        return graph

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "format": "kgpath.Hierarchy", "format_version": HIERARCHY_FORMAT_VERSION,
            "config": {k: getattr(self.config, k) for k in self.config.__dataclass_fields__},
            "communities": [
                {"id": c.id, "members": list(c.members), "keywords": list(c.keywords),
                 "summary": c.summary, "summary_source": c.summary_source, "names": list(c.names)}
                for c in self.communities
            ],
            "keywords": {k: list(v) for k, v in self.keywords.items()},
            "node_keywords": {k: list(v) for k, v in self.node_keywords.items()},
            "trace": self.trace,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Hierarchy:
        """Inverse of :meth:`to_dict`."""
        try:
            if int(data.get("format_version", 0)) > HIERARCHY_FORMAT_VERSION:
                raise PersistenceError(
                    f"hierarchy format_version {data['format_version']} is newer than supported"
                )
            return cls(
                communities=tuple(
                    Community(c["id"], tuple(c["members"]), tuple(c["keywords"]), c["summary"],
                              c["summary_source"], tuple(c.get("names", ())))
                    for c in data["communities"]
                ),
                keywords={k: tuple(v) for k, v in data["keywords"].items()},
                node_keywords={k: tuple(v) for k, v in data["node_keywords"].items()},
                config=HierarchyConfig(**data.get("config", {})),
                trace=dict(data.get("trace") or {}),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise PersistenceError(f"not a saved kgpath hierarchy: {exc!r}") from exc

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write JSON atomically."""
        atomic_write(user_path(path, "hierarchy path"),
                     json.dumps(self.to_dict(), ensure_ascii=False), what="a hierarchy")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Hierarchy:
        """Read a hierarchy written by :meth:`save`."""
        p = user_path(path, "hierarchy path")
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise PersistenceError(f"hierarchy file {str(p)!r} does not exist") from exc
        except ValueError as exc:
            raise PersistenceError(f"hierarchy file {str(p)!r} is not valid JSON: {exc}") from exc
        except OSError as exc:  # a directory, no permission, ...
            raise PersistenceError(f"hierarchy file {str(p)!r} cannot be read: {exc}") from exc
        return cls.from_dict(data)


def build_hierarchy(
    graph: KnowledgeGraph,
    *,
    config: HierarchyConfig | None = None,
    llm: LLM | None = None,
) -> Hierarchy:
    """Build the keyword layer and the community layer (with summaries) of ``graph``.

    The graph itself is not changed; call :meth:`Hierarchy.attach` to add the layer nodes.
    """
    cfg = config or HierarchyConfig()
    kw, node_kw = keyword_layer(graph, cfg)
    groups = detect_communities(graph, cfg)
    idx = _base_indices(graph)
    weights, _ = _tfidf(_node_terms(graph, idx), cfg)
    w_by_id = {graph.node_at(i).id: w for i, w in zip(idx, weights, strict=True)}
    comms: list[Community] = []
    skipped = 0
    failures: list[str] = []
    for members in progress(groups, desc="summarising communities", unit="community",
                            enabled=llm is not None, threshold=16):
        if len(members) < cfg.min_community_size:
            skipped += 1
            continue
        score: Counter[str] = Counter()
        for m in members:
            score.update(w_by_id.get(m, {}))
        top = [t for t, _ in sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))]
        keywords = tuple(top[: cfg.keywords_per_community])
        cid = f"community:{len(comms)}"
        try:
            summary, source = summarize_community(
                graph, members, keywords, llm=llm, max_members=cfg.summary_members
            )
        except KgpathError as exc:  # a failing LLM backend: keep going, but say so
            failures.append(f"{cid}: {exc}")
            summary, source = summarize_community(
                graph, members, keywords, llm=None, max_members=cfg.summary_members
            )
        names = tuple(graph.node(m).name
                      for m in _ranked_members(graph, members)[: cfg.summary_members])
        comms.append(Community(cid, tuple(members), keywords, summary, source, names))
    return Hierarchy(
        communities=tuple(comms), keywords=kw, node_keywords=node_kw, config=cfg,
        trace={
            "algorithm": cfg.algorithm, "seed": cfg.seed, "communities": len(comms),
            "skipped_small_communities": skipped, "keywords": len(kw),
            "summary_failures": failures,
            "summaries_by": "llm" if llm is not None else "keywords",
        },
    )


class CommunityRouter:
    """Route a query to its most similar communities and return their members.

    Parameters
    ----------
    hierarchy
        The hierarchy whose communities route.
    graph
        The graph the member ids belong to (for node indices).
    embedder
        Embeds the communities' :attr:`Community.routing_text` (as passages).
    """

    def __init__(self, hierarchy: Hierarchy, graph: KnowledgeGraph, embedder: Embedder) -> None:
        if not hierarchy.communities:
            raise EmptyGraphError("the hierarchy has no communities to route through")
        self.hierarchy = hierarchy
        self.graph = graph
        self.index = VectorIndex(
            embedder.embed_passages([c.routing_text for c in hierarchy.communities])
        )
        self._members = [np.fromiter((graph.index_of(m) for m in c.members), dtype=np.int32)
                         for c in hierarchy.communities]

    def route(self, query_vec: np.ndarray, top: int) -> list[tuple[Community, float]]:
        """Return the ``top`` communities most similar to the query, best first, with cosines."""
        if isinstance(top, bool) or not isinstance(top, int) or top < 1:
            raise ConfigError(f"top must be an int >= 1, got {top!r}")
        pos, scores = self.index.search(query_vec, min(top, len(self._members)))
        comms = self.hierarchy.communities
        return [(comms[int(p)], float(s)) for p, s in zip(pos, scores, strict=True)]

    def candidates(
        self, query_vec: np.ndarray, top: int
    ) -> tuple[np.ndarray, list[tuple[str, float]]]:
        """Sorted node indices of the members of the routed communities, and the routing."""
        routed = self.route(query_vec, top)
        pos = {c.id: i for i, c in enumerate(self.hierarchy.communities)}
        parts = [self._members[pos[c.id]] for c, _ in routed]
        cand = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int32)
        return cand.astype(np.int64), [(c.id, s) for c, s in routed]
