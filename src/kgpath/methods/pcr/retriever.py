"""The PCR retriever: section 3.3's pipeline over any graph backend."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from kgpath._config import with_overrides
from kgpath.backends.base import (
    GraphBackend,
    InProcessGraph,
    PassageEntityStore,
    PassageSearch,
    VectorSearch,
)
from kgpath.backends.memory import InMemoryBackend
from kgpath.errors import (
    CapabilityError,
    ConfigError,
    EmbeddingError,
    NodeNotFoundError,
    short,
)
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex, check_query
from kgpath.llm import LLM
from kgpath.methods.pcr.anchors import (
    ashared_passage_vectors,
    link_anchors,
    passage_anchors,
    shared_passage_vectors,
)
from kgpath.methods.pcr.config import PCRConfig
from kgpath.methods.pcr.passages import PassageContext, stored_passage_vectors
from kgpath.methods.pcr.result import PCRHit, PCRResult
from kgpath.methods.pcr.scoring import score_strategy
from kgpath.methods.pcr.search import Region, global_fallback, make_hit, merge_regions

__all__ = ["PathConstrainedRetriever"]

logger = logging.getLogger("kgpath.methods.pcr")

AnchorsArg = Sequence[str] | None


def _several(anchors: AnchorsArg) -> list[str]:
    if anchors is None:
        return []
    if isinstance(anchors, (str, bytes)) or not isinstance(anchors, Sequence):
        raise ConfigError(f"anchors must be a list of node ids, got {short(anchors)}")
    for i, a in enumerate(anchors):
        if a is None:  # would otherwise mean "not given" and anchor by similarity, silently
            raise ConfigError(f"anchors[{i}] is None in {short(anchors)}; pass node ids")
    return list(anchors)


def _query_vector(query_vec: Any) -> np.ndarray:
    """A caller's query vector as 1-D float32, or :class:`EmbeddingError` naming what is wrong.

    Any shape with at most one axis longer than 1 is accepted (a row ``(1, d)`` as
    ``embed_queries([q])`` returns, a column ``(d, 1)``); several rows, non-numbers and
    NaN/inf are refused before any backend sees them.
    """
    try:
        qv = np.asarray(query_vec, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"query vector must be numbers, got {short(query_vec)}") from exc
    if qv.ndim != 1:
        if qv.ndim == 0 or sum(n > 1 for n in qv.shape) > 1:
            raise EmbeddingError(
                f"query vector must be 1-D (or one row), got shape {qv.shape}: "
                f"{short(query_vec)}")
        qv = qv.reshape(-1)
    finite = np.isfinite(qv)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        raise EmbeddingError(
            f"query vector has {bad.size} non-finite value(s), first {qv[bad[0]]} at "
            f"position {int(bad[0])}")
    return qv


class PathConstrainedRetriever:
    """Retrieve the top-k nodes reachable from an anchor (PCR), on any graph backend.

    Parameters
    ----------
    graph
        A :class:`GraphIndex`, a :class:`KnowledgeGraph` (wrapped with ``embedder``), or a
        :class:`~kgpath.backends.base.GraphBackend` with the
        :class:`~kgpath.backends.base.VectorSearch` capability (e.g. a
        :class:`~kgpath.backends.cypher.CypherBackend`; :class:`~kgpath.methods.pcr.CypherPCR`
        builds one for you).
    embedder
        Used only when ``graph`` is a bare graph.
    llm
        Not used: PCR makes no LLM call (the paper has none). Accepted so every method
        has one constructor shape; kept as :attr:`llm`.
    config
        :class:`PCRConfig`; per-call overrides go through keyword arguments of
        :meth:`retrieve` (applied with ``dataclasses.replace``).

    Raises
    ------
    CapabilityError
        When the backend has no :class:`~kgpath.backends.base.VectorSearch` (or lacks
        what ``config.score`` needs).

    Examples
    --------
    >>> from kgpath import KnowledgeGraph, HashingEmbedder
    >>> g = KnowledgeGraph.from_triples([("a", "to", "b"), ("b", "to", "c"), ("x", "to", "y")])
    >>> pcr = PathConstrainedRetriever(g, embedder=HashingEmbedder())
    >>> sorted(pcr.retrieve("c", anchor="a").ids)
    ['a', 'b', 'c']
    """

    def __init__(
        self,
        graph: GraphIndex | KnowledgeGraph | GraphBackend[Any, Any],
        *,
        embedder: Any = None,
        llm: LLM | None = None,
        config: PCRConfig | None = None,
    ) -> None:
        if isinstance(graph, (GraphIndex, KnowledgeGraph)):
            self.backend: GraphBackend[Any, Any] = InMemoryBackend(graph, embedder=embedder)
        elif isinstance(graph, GraphBackend):
            self.backend = graph
        else:
            raise ConfigError(
                "PCR needs a GraphIndex, a KnowledgeGraph or a kgpath.backends.GraphBackend, "
                f"got {type(graph).__name__!r}"
            )
        self.backend.capability(VectorSearch)  # Eq. (2) needs it: fail here, not per call
        self.llm = llm
        if config is not None and not isinstance(config, PCRConfig):
            raise ConfigError(f"config must be a PCRConfig, got {short(config)}")
        self.config = config or PCRConfig()
        self._check_mode(self.config)
        self._configs_base = self.config
        self._configs: dict[tuple[Any, ...], PCRConfig] = {}

    @property
    def index(self) -> GraphIndex:
        """The :class:`GraphIndex` of an in-process backend (:class:`InProcessGraph`)."""
        try:
            return self.backend.capability(InProcessGraph).index
        except CapabilityError:
            raise AttributeError(
                f"the {self.backend.name} backend has no in-memory GraphIndex") from None

    @property
    def graph(self) -> KnowledgeGraph:
        """The underlying graph (in-memory backend)."""
        return self.index.graph

    def _config(self, overrides: dict[str, Any]) -> PCRConfig:
        # None means "not given", except max_depth where None explicitly means unlimited.
        # The validated config of each hashable override set is remembered (a handful per
        # retriever in practice; ``dataclasses.replace`` + validation was ~10 us per call).
        if self._configs_base is not self.config:  # the config was replaced: start over
            self._configs_base, self._configs = self.config, {}
        try:
            # the type too: 1 == True == 1.0 hash alike but validate differently
            key = tuple(sorted((k, type(v), v) for k, v in overrides.items()))
            cached = self._configs.get(key)
        except TypeError:  # an unhashable override value: no caching
            key, cached = None, None
        if cached is not None:
            return cached
        cfg = with_overrides(self.config, overrides, label="PCR",
                             none_is_value={"max_depth", "rerank"})
        self._check_mode(cfg)
        if key is not None and len(self._configs) < 64:
            self._configs[key] = cfg
        return cfg

    def _check_mode(self, cfg: PCRConfig) -> None:
        score_strategy(cfg.score).check(self.backend)
        modes = self.backend.capability(VectorSearch).modes
        needed = {cfg.mode} | ({"vector", "bm25"} if cfg.mode == "hybrid"
                                and cfg.hybrid_norm != "max" else set())
        if not needed <= set(modes):
            raise ConfigError(
                f"{type(self).__name__} on the {self.backend.name} backend supports mode in "
                f"{modes} only, got mode={cfg.mode!r}: BM25 and hybrid scores "
                "need corpus-wide term statistics; use the in-memory PathConstrainedRetriever"
            )

    # ------------------------------------------------------------------ anchor
    def resolve_anchor(
        self,
        query_vec: np.ndarray,
        *,
        anchor: str | None,
        anchor_name: str | None,
        config: PCRConfig,
        backend: GraphBackend[Any, Any] | None = None,
    ) -> tuple[Any, str]:
        """Return ``(anchor key, how it was resolved)`` (in memory the key is the node index).

        By id, by name (ties between equal names broken by similarity to the query, then
        node order), or, when neither is given, the node most similar to the query.
        """
        b = backend or self.backend
        vs: VectorSearch[Any] = b.capability(VectorSearch)
        if anchor is not None:
            key = b.node_by_id(anchor)
            if key is not None:
                return key, "id"
            if config.unknown_anchor == "error":
                raise NodeNotFoundError(f"unknown anchor id {anchor!r}", key=anchor)
            return vs.most_similar(query_vec), f"similarity (unknown id {anchor!r})"
        if anchor_name is not None:
            matches = b.nodes_by_name(anchor_name)
            if len(matches) == 1:
                return matches[0], "name"
            if len(matches):
                sc = vs.score("", query_vec, matches, mode="vector", alpha=1.0)
                best = matches[int(np.argmax(sc))]
                return best, f"name ({len(matches)} matches, most similar chosen)"
            if config.unknown_anchor == "error":
                raise NodeNotFoundError(f"no node named {anchor_name!r}", key=anchor_name)
            return vs.most_similar(query_vec), f"similarity (unknown name {anchor_name!r})"
        return vs.most_similar(query_vec), "similarity"

    def resolve_anchors(
        self, query: str, query_vec: np.ndarray, *, anchor: str | None,
        anchor_name: str | None, anchors: AnchorsArg = None, config: PCRConfig,
        backend: GraphBackend[Any, Any] | None = None,
    ) -> tuple[list[Any], str]:
        """All anchors of one retrieval and how they were found.

        Given an id, several ids (``anchors``) or a name: :meth:`resolve_anchor` on each
        (resolutions joined by ``"; "`` when they differ). None given: the
        nodes the query names (``link_anchors``, resolution ``"linked"``, at most
        ``max_anchors``); none linked: with ``anchor_fallback="passage"`` the nodes citing
        the most similar passage (resolution ``"passage"``), with ``"similar"`` (or
        ``"passage"`` when that finds none) the most similar node (resolution
        ``"similarity"``), else :class:`NodeNotFoundError`.
        """
        b = backend or self.backend
        ids = ([anchor] if anchor is not None else []) + _several(anchors)
        names = [anchor_name] if anchor_name is not None else []
        if ids or names:
            got = [self.resolve_anchor(query_vec, anchor=i, anchor_name=None, config=config,
                                       backend=b) for i in ids]
            got += [self.resolve_anchor(query_vec, anchor=None, anchor_name=n, config=config,
                                        backend=b) for n in names]
            return _unique([k for k, _ in got]), got[0][1] if len(got) == 1 else "; ".join(
                dict.fromkeys(h for _, h in got))
        if config.link_anchors and query:
            links = link_anchors(b, query)
            if links:
                return _unique([x.key for x in links])[:config.max_anchors], "linked"
        if config.anchor_fallback == "passage":
            cited = passage_anchors(b, query_vec, config.max_anchors)
            if cited:
                logger.info("PCR: no anchor given or linked for %r; anchoring at the nodes "
                            "of the most similar passage (anchor_fallback='passage')", query)
                return cited, "passage"
        if config.anchor_fallback in ("similar", "passage"):
            logger.info("PCR: no anchor given or linked for %r; anchoring at the most "
                        "similar node (anchor_fallback='similar')", query)
            return [b.capability(VectorSearch).most_similar(query_vec)], "similarity"
        raise NodeNotFoundError(
            f"no anchor for query {query!r}: pass anchor= or anchor_name=, name a node in "
            "the query, or set anchor_fallback='similar' (most similar node)", key=query)

    # ------------------------------------------------------------------ retrieval
    def retrieve(
        self,
        query: str,
        *,
        anchor: str | None = None,
        anchor_name: str | None = None,
        anchors: AnchorsArg = None,
        **overrides: Any,
    ) -> PCRResult:
        """Run PCR for ``query`` from its anchor(s).

        An id, several ids (``anchors``), a name, or the entities the query names.

        ``overrides`` are :class:`PCRConfig` fields for this call only (e.g. ``k=5``).
        """
        q = check_query(query)
        cfg = self._config(overrides)
        qv = self.backend.capability(VectorSearch).embed_query(q)
        return self._retrieve(q, qv, (anchor, anchor_name, anchors), cfg)

    def retrieve_by_vector(
        self,
        query_vec: np.ndarray | Sequence[float],
        *,
        query: str = "",
        anchor: str | None = None,
        anchor_name: str | None = None,
        anchors: AnchorsArg = None,
        **overrides: Any,
    ) -> PCRResult:
        """PCR with a precomputed query embedding.

        The ``query`` text is needed for hybrid/BM25 and for linking anchors. ``query_vec``
        is 1-D or a single row (as ``embed_queries([q])`` returns); non-numbers, several
        rows, NaN or inf raise :class:`~kgpath.errors.EmbeddingError` naming them.

        Useful when the query was embedded elsewhere, and for benchmarks that measure the
        retrieval itself without the embedding model.
        """
        cfg = self._config(overrides)
        if cfg.mode != "vector":
            query = check_query(query)
        qv = self.backend.capability(VectorSearch).check_query_vector(_query_vector(query_vec))
        return self._retrieve(query, qv, (anchor, anchor_name, anchors), cfg)

    async def aretrieve(
        self,
        query: str,
        *,
        anchor: str | None = None,
        anchor_name: str | None = None,
        anchors: AnchorsArg = None,
        **overrides: Any,
    ) -> PCRResult:
        """Async :meth:`retrieve`.

        The query embedding is awaited on the embedder's async API; a blocking backend (a
        database), and path-aware scoring (``score`` other than ``"node"``, which embeds
        path or template texts with the sync API), run in a worker thread.
        """
        q = check_query(query)
        cfg = self._config(overrides)
        qv = await self.backend.capability(VectorSearch).aembed_query(q)
        if cfg.passage_order == "question" or cfg.anchor_fallback == "passage":
            await ashared_passage_vectors(self.backend)  # the corpus, once per (graph, embedder)
        if self.backend.blocking or score_strategy(cfg.score).embeds_texts:
            return await asyncio.to_thread(self._retrieve, q, qv, (anchor, anchor_name, anchors),
                                           cfg)
        return self._retrieve(q, qv, (anchor, anchor_name, anchors), cfg)

    def _retrieve(
        self, query: str, qv: np.ndarray,
        given: tuple[str | None, str | None, AnchorsArg], cfg: PCRConfig,
    ) -> PCRResult:
        """Section 3.3: anchor(s), Eq. (1) reachable set, Eq. (2) search, hits with paths."""
        b = self.backend.bind()
        keys, how = self.resolve_anchors(query, qv, anchor=given[0], anchor_name=given[1],
                                         anchors=given[2], config=cfg, backend=b)
        region = merge_regions([b.reachable(a, max_depth=cfg.max_depth,
                                            direction=cfg.direction) for a in keys])
        anchors = tuple(b.node(a) for a in keys)
        fallback = len(region) <= len(keys) and cfg.fallback == "global"
        vecs = shared_passage_vectors(b) if cfg.passage_order == "question" else None
        stored = (vecs is None and cfg.passage_order == "question"
                  and not b.has(PassageSearch) and b.has(PassageEntityStore))
        wide = (replace(cfg, k=max(cfg.k, cfg.passage_hits)) if vecs is not None or stored
                else cfg)
        if fallback:
            logger.warning(
                "PCR: nothing reachable from anchor %r; global fallback search (section 3.5)",
                anchors[0].id,
            )
            hits, scored = _fallback_hits(b, region, keys[0], query, qv, wide)
        else:  # Eq. (2), or a kgpath extension (path, mixed, template): the score strategy
            hits, scored = score_strategy(cfg.score).rank(b, region, keys, query, qv, wide)
        logger.debug("PCR anchors=%r (%s) reachable=%d scored=%d", [a.id for a in anchors],
                     how, len(region), scored)
        graph = _evidence_graph(b, region, anchors, hits)
        if stored:
            vecs = stored_passage_vectors(b.capability(PassageEntityStore), graph, anchors, hits)
        ctx = None if vecs is None else PassageContext(qv, vecs, tuple(hits[cfg.k:]),
                                                       whole_graph=not stored)
        return PCRResult(
            query=query, anchor=anchors[0], anchor_resolution=how, hits=tuple(hits[:cfg.k]),
            reachable_count=len(region), fallback_used=bool(fallback), config=cfg,
            graph=graph, anchors=anchors, passages=ctx,
            trace=_trace(b, region, anchors, how, scored, cfg, fallback),
        )


def _unique(keys: list[Any]) -> list[Any]:
    out: list[Any] = []
    for k in keys:
        if not any(_same(k, o) for o in out):
            out.append(k)
    return out


def _same(a: Any, b: Any) -> bool:
    return bool(a == b)


def _trace(b: GraphBackend[Any, Any], region: Region, anchors: tuple[Any, ...], how: str,
           scored: int, cfg: PCRConfig, fallback: bool) -> dict[str, Any]:
    trace = {
        "anchor_id": anchors[0].id,
        "anchor_resolution": how,
        "reachable_count": len(region),
        "max_reached_depth": int(region.dist.max()) if region.dist.size else 0,
        "candidates_scored": scored,
        "mode": cfg.mode,
        "direction": cfg.direction,
        "max_depth": cfg.max_depth,
        "fallback": "global" if fallback else None,
        **b.call_trace(),
    }
    if len(anchors) > 1:
        trace["anchor_ids"] = [a.id for a in anchors]
    if how == "similarity":
        trace["anchor_fallback"] = "similar"
    if cfg.mode == "hybrid":
        trace["hybrid_norm"] = cfg.hybrid_norm
    strategy = score_strategy(cfg.score)
    if strategy.embeds_texts:
        trace["score"] = strategy.name
        trace["path_text"] = cfg.path_text
    return trace


def _fallback_hits(
    b: GraphBackend[Any, Any], region: Region, anchor: Any, query: str, qv: np.ndarray,
    cfg: PCRConfig,
) -> tuple[list[PCRHit], int]:
    """Section 3.5: top-k of all nodes; a hit keeps its path when it is reachable."""
    keys, scores, scored = global_fallback(b, anchor, query, qv, cfg)
    tree = region.trees[0]
    return [make_hit(b, tree, k, tree.position_of(k), float(s))
            for k, s in zip(keys, scores)], scored


def _evidence_graph(
    b: GraphBackend[Any, Any], region: Region, anchors: tuple[Any, ...], hits: list[PCRHit],
) -> KnowledgeGraph:
    """The backend's evidence graph; with several anchors, one per tree, merged."""
    if len(region.trees) == 1:
        return b.evidence_graph(region.trees[0], anchors[0], hits)
    graphs = [
        b.evidence_graph(tree, a, [h for h in hits if h.anchor_id == a.id])
        for tree, a in zip(region.trees, anchors)
    ]
    if all(g is graphs[0] for g in graphs):
        return graphs[0]
    return _merge_graphs(graphs)


def _merge_graphs(graphs: list[KnowledgeGraph]) -> KnowledgeGraph:
    out = KnowledgeGraph()
    seen: set[tuple[str, str, str | None]] = set()
    for g in graphs:
        for n in g.nodes:
            if n.id not in out:
                out.add_node(n.id, n.name, n.text, type=n.type, metadata=n.metadata,
                             provenance=n.provenance)
        for e in g.edges:
            if (e.source, e.target, e.relation) in seen:
                continue
            seen.add((e.source, e.target, e.relation))
            out.add_edge(e.source, e.target, e.relation, e.text, type=e.type, weight=e.weight,
                         provenance=e.provenance, metadata=e.metadata)
        for pid, p in g.passages.items():
            if pid not in out.passages:
                out.add_passage(pid, p.text, p.metadata)
    return out
