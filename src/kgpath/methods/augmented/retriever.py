"""GraphAugmentedRetriever: a base passage retriever, re-ranked by chains through the graph.

Steps (see :mod:`kgpath.methods.augmented.fusion` for the rule and its constants):

1. base scores ``s(d)``: the base retriever (dense cosine over the graph's passages by
   default, vectors from :func:`kgpath.index.graph_vectors.embed_graph`, computed once);
2. anchors: the entities of the top ``m`` passages and the entities the question names
   (:class:`kgpath.index.linking.EntityLinker`);
3. expansion along the graph (shared entities, optionally graph neighbours);
4. fusion by the best two-passage chain (``scorer="chain"``), or, with
   ``scorer="propagation"``, personalised PageRank over passages and entities seeded by the
   base scores and the question's entities (:mod:`kgpath.methods.augmented.propagation`,
   the HippoRAG 2 idea).

A custom ``base`` is any callable ``base(query, n) -> [(passage_id, score), ...]``
(best first; an ``async def`` works with :meth:`aretrieve`). Its scores replace the dense
scores of the passages it returns; the others keep their dense score (when an embedder is
given) or are scored ``-inf``, so they rise only through a link. Base scores should be in
cosine units for the default ``β``/``γ`` to mean the same.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kgpath._config import with_overrides
from kgpath.errors import ConfigError, GraphError
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import check_query
from kgpath.index.graph_vectors import GraphVectors, aembed_graph, embed_graph
from kgpath.index.linking import EntityLinker
from kgpath.methods.augmented.config import AugmentedConfig
from kgpath.methods.augmented.fusion import (
    PassageEntityIndex,
    chain_scores,
    seed_scores,
)
from kgpath.methods.augmented.propagation import (
    PropagationGraph,
    propagate,
    propagation_graph,
)
from kgpath.methods.augmented.result import AugmentedHit, AugmentedResult

__all__ = ["BaseRetriever", "GraphAugmentedRetriever", "evidence_base"]

BaseRetriever = Callable[[str, int], Any]


def evidence_base(retriever: Any) -> BaseRetriever:
    """Any method's passages as a base: ``retriever.retrieve(query, output="passages")``.

    ``retriever`` is e.g. an :class:`kgpath.EvidenceRetriever`; its passage items and
    scores become ``base(query, n)``. With ``scorer="propagation"`` and no embedder, this
    makes the propagation a passage re-ranker of that method's candidates (the seeds are
    the method's passages, z-scored among themselves, so its score units do not matter).

    Examples
    --------
    >>> class Two:
    ...     def retrieve(self, query, output):
    ...         from kgpath.evidence import Evidence
    ...         return [Evidence("p", "text", 0.5, "passage", "pcr")]
    >>> evidence_base(Two())("q", 5)
    [('p', 0.5)]
    """
    def base(query: str, n: int) -> list[tuple[str, float]]:
        return [(e.id, float(e.score)) for e in retriever.retrieve(query, output="passages")
                if e.kind == "passage"]
    return base


class GraphAugmentedRetriever:
    """Graph-augmented passage retrieval over a document graph (kgpath extension).

    Parameters
    ----------
    graph
        A :class:`KnowledgeGraph` with passages whose entity nodes cite them (e.g.
        ``kgpath.ingest.graph_from_documents``), or a ``GraphIndex`` (its graph and embedder).
    embedder
        Embeds the question (and, once, the passages) for the default dense base.
    llm
        Unused (the method is LLM-free); accepted so every method has one constructor shape.
    config
        :class:`AugmentedConfig`.
    base
        Optional base retriever (see the module docstring).
    vectors
        :class:`~kgpath.index.graph_vectors.GraphVectors` already computed for ``graph`` (the
        passages are then not embedded again).
    linker
        An :class:`EntityLinker` (default: key matching over the graph's node names).

    Raises
    ------
    GraphError
        If the graph has no passages.
    ConfigError
        If neither an embedder nor a base retriever is given.
    """

    def __init__(self, graph: Any, *, embedder: Any = None, llm: Any = None,
                 config: AugmentedConfig | None = None, base: BaseRetriever | None = None,
                 vectors: GraphVectors | None = None,
                 linker: EntityLinker | None = None) -> None:
        if not isinstance(graph, KnowledgeGraph):  # a GraphIndex
            embedder = embedder if embedder is not None else getattr(graph, "embedder", None)
            graph = graph.graph
        if not graph.passages:
            raise GraphError("graph-augmented retrieval needs a graph with passages")
        if embedder is None and base is None:
            raise ConfigError("give an embedder (dense base) or a base retriever")
        self.graph: KnowledgeGraph = graph
        self.embedder = embedder
        self.config = config or AugmentedConfig()
        self.base = base
        self.vectors = vectors
        self.linker = linker or EntityLinker(graph)
        self._index: PassageEntityIndex | None = None
        self._walks: dict[tuple[float, float], PropagationGraph] = {}

    # ------------------------------------------------------------------ preparation
    def _entity_index(self) -> PassageEntityIndex:
        ids = tuple(self.graph.passages)
        idx = self._index
        if idx is None or idx.version != self.graph.version or tuple(idx.passage_ids) != ids:
            self._index = idx = PassageEntityIndex(self.graph, ids)
        return idx

    def _need_vectors(self) -> bool:
        v = self.vectors
        return self.embedder is not None and (
            v is None or v.passage_ids != tuple(self.graph.passages))

    def prepare(self) -> GraphAugmentedRetriever:
        """Embed the passages once (node vectors stored when the graph lacks them)."""
        if self._need_vectors():
            store = bool(self.graph.vectors.missing())
            self.vectors = embed_graph(self.graph, self.embedder, store=store)
        self._entity_index()
        return self

    async def aprepare(self) -> GraphAugmentedRetriever:
        """Async :meth:`prepare`."""
        if self._need_vectors():
            store = bool(self.graph.vectors.missing())
            self.vectors = await aembed_graph(self.graph, self.embedder, store=store)
        self._entity_index()
        return self

    # ------------------------------------------------------------------ steps
    def _base_scores(self, qv: np.ndarray | None, given: Sequence[Any]) -> np.ndarray:
        """Step 1: ``s(d)`` for every passage (dense, then the base's own scores)."""
        ids = tuple(self.graph.passages)
        if qv is not None and self.vectors is not None:
            s = (self.vectors.passage_vectors @ qv).astype(np.float64)
        else:
            s = np.full(len(ids), -np.inf)
        pos = {p: i for i, p in enumerate(ids)}
        for pid, score in given:
            if pid not in pos:
                raise GraphError(f"base retriever returned unknown passage {pid!r}")
            s[pos[pid]] = float(score)
        return s

    def _walk_graph(self, idx: PassageEntityIndex, cfg: AugmentedConfig) -> PropagationGraph:
        key = (float(cfg.lead_weight), float(cfg.relation_weight))
        pg = self._walks.get(key)
        if pg is None or pg.version != idx.version or pg.n_passages != len(idx.passage_ids):
            pg = self._walks[key] = propagation_graph(
                idx, lead_weight=cfg.lead_weight, relation_weight=cfg.relation_weight)
        return pg

    def _propagate(self, query: str, s: np.ndarray, cfg: AugmentedConfig) -> AugmentedResult:
        """Step 4 with ``scorer="propagation"``: personalised PageRank, passages by mass."""
        idx = self._entity_index()
        pg = self._walk_graph(idx, cfg)
        links_q = self.linker.link(query) if cfg.use_query_entities else []
        q_ents = {self.graph.index_of(x.node_id) for x in links_q}
        if cfg.link_rule == "lead":
            leads = {idx.lead(p) for p in range(len(idx.passage_ids))}
            q_ents &= leads
        x, seed = propagate(idx, pg, s, q_ents, damping=cfg.damping,
                            sharpness=cfg.seed_sharpness, entity_weight=cfg.entity_seed_weight)
        ents = set(q_ents)
        ranked = np.lexsort((np.arange(x.size), -seed, -x))
        ids, hits = idx.passage_ids, []
        for d in ranked[: cfg.k].tolist():
            if x[d] <= 0:
                break
            via = tuple(self.graph.node_at(e).id for e in idx.entities_of(d) if e in ents)
            hits.append(AugmentedHit(ids[d], float(x[d]), float(s[d]), float(seed[d]),
                                     None, via, bool(via)))
        seeds = [int(i) for i in np.argsort(-seed, kind="stable")[: cfg.seeds] if seed[i] > 0]
        return AugmentedResult(query, tuple(hits), tuple(ids[a] for a in seeds),
                               tuple(links_q), cfg, graph=self.graph)

    def _fuse(self, query: str, s: np.ndarray, cfg: AugmentedConfig) -> AugmentedResult:
        """Steps 2-4: anchors, links, chain scores, hits."""
        if cfg.scorer == "propagation":
            return self._propagate(query, s, cfg)
        idx = self._entity_index()
        cap = cfg.max_entity_passages
        links_q = self.linker.link(query) if cfg.use_query_entities else []
        q_ents = {self.graph.index_of(x.node_id) for x in links_q}
        lead = cfg.link_rule == "lead"
        mentioned = sorted({p for e in q_ents if idx.df(e) <= cap for p in idx.passages_of(e)
                            if not lead or idx.lead(p) == e})
        s2 = seed_scores(s, mentioned, cfg.question_bonus)
        finite = np.isfinite(s2)
        order = [int(i) for i in np.lexsort((np.arange(s2.size), -s2)) if finite[i]]
        seeds = list(dict.fromkeys(order[: cfg.seeds] + mentioned))
        links = [] if cfg.expansion == "none" else idx.links(
            seeds, neighbours=cfg.expansion == "neighbours", cap=cap, lead=lead)
        score, partner = chain_scores(s2, seeds, links, cfg.link_bonus)
        via: dict[tuple[int, int], list[int]] = {}
        for lk in links:
            via.setdefault((lk.seed, lk.target), []).append(lk.entity)
        ranked = np.lexsort((np.arange(score.size), -s2, -score))
        ids = idx.passage_ids
        hits = []
        for d in ranked[: cfg.k].tolist():
            if not np.isfinite(score[d]):
                break
            a = int(partner[d])
            ents = via.get((a, d), []) if a >= 0 else []
            hits.append(AugmentedHit(
                ids[d], float(score[d]), float(s[d]), float(s2[d]),
                ids[a] if a >= 0 else None,
                tuple(self.graph.node_at(e).id for e in ents), d in set(mentioned)))
        return AugmentedResult(query, tuple(hits), tuple(ids[a] for a in seeds),
                               tuple(links_q), cfg, graph=self.graph)

    def _config(self, overrides: dict[str, Any]) -> AugmentedConfig:
        return with_overrides(self.config, overrides, label="augmented")

    # ------------------------------------------------------------------ public
    def retrieve(self, query: str, **overrides: Any) -> AugmentedResult:
        """Ranked passages for ``query``; ``overrides`` are config fields for this call."""
        q = check_query(query)
        cfg = self._config(overrides)
        self.prepare()
        qv = None if self.embedder is None else np.asarray(
            self.embedder.embed_queries([q])[0], np.float32)
        given = self.base(q, max(cfg.seeds, cfg.k)) if self.base is not None else []
        return self._fuse(q, self._base_scores(qv, given), cfg)

    async def aretrieve(self, query: str, **overrides: Any) -> AugmentedResult:
        """Async :meth:`retrieve` (async embedder; an async base is awaited)."""
        q = check_query(query)
        cfg = self._config(overrides)
        await self.aprepare()
        qv = None if self.embedder is None else np.asarray(
            (await self.embedder.aembed_queries([q]))[0], np.float32)
        given: Any = []
        if self.base is not None:
            given = self.base(q, max(cfg.seeds, cfg.k))
            if inspect.isawaitable(given):
                given = await given
        return self._fuse(q, self._base_scores(qv, given), cfg)

