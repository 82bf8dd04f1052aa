"""The PathRAG retriever: sections 4.1-4.3 over a :class:`~kgpath.index.GraphIndex`."""

from __future__ import annotations

import random
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from kgpath._config import with_overrides
from kgpath.errors import ConfigError, short
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex, check_query
from kgpath.index.passage_vectors import atext_vectors, text_vectors
from kgpath.llm import LLM, as_llm
from kgpath.methods.pathrag.config import PathRAGConfig
from kgpath.methods.pathrag.flow import flow_adjacency
from kgpath.methods.pathrag.keywords import (
    KeywordExtraction,
    KeywordPrompt,
    aextract_keywords,
    extract_keywords,
)
from kgpath.methods.pathrag.nodes import (
    RetrievedNode,
    RetrievedRelation,
    node_similarities,
    rank_nodes,
    retrieve_relations,
)
from kgpath.methods.pathrag.paths import CandidatePool
from kgpath.methods.pathrag.prompt import (
    PathOrdering,
    PathRAGPath,
    QAPrompt,
    build_prompt,
    get_ordering,
    materialize_path,
    relation_text,
)
from kgpath.methods.pathrag.reliability import reliability_strategy
from kgpath.methods.pathrag.result import PathRAGResult
from kgpath.methods.pathrag.sources import (
    QUESTION_WEIGHT,
    TextUnit,
    passage_citations,
    prompt_text_units,
    seed_text_units,
)
from kgpath.prompts.pathrag import (
    PATHRAG_KEYWORD_PROMPT,
    PATHRAG_QA_PROMPT,
    PATHRAG_RELATION_BLOCK,
)

__all__ = ["PathRAGRetriever", "node_hits", "node_hits_from", "passage_cosines", "relation_hits"]


class PathRAGRetriever:
    """PathRAG over a :class:`GraphIndex` (sections 4.1-4.3).

    Parameters
    ----------
    graph
        A :class:`GraphIndex`, or a :class:`KnowledgeGraph` (wrapped with ``embedder``).
    embedder
        Used only when ``graph`` is a bare graph.
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
        graph: GraphIndex | KnowledgeGraph,
        *,
        embedder: Any = None,
        llm: LLM | None = None,
        config: PathRAGConfig | None = None,
        keyword_prompt: KeywordPrompt = PATHRAG_KEYWORD_PROMPT,
        qa_prompt: QAPrompt = PATHRAG_QA_PROMPT,
    ) -> None:
        self.index = graph if isinstance(graph, GraphIndex) else GraphIndex(graph, embedder)
        self.llm = None if llm is None else as_llm(llm)  # ConfigError for llm="gpt"
        if config is not None and not isinstance(config, PathRAGConfig):
            raise ConfigError(f"config must be a PathRAGConfig, got {short(config)}")
        self.config = config or PathRAGConfig()
        self.keyword_prompt = keyword_prompt
        self.qa_prompt = qa_prompt
        self._names: tuple[int, np.ndarray] | None = None
        self._edge_vecs: tuple[int, np.ndarray, np.ndarray] | None = None
        """(graph version, edge text vectors, edge degrees): built once per version."""

    @property
    def graph(self) -> KnowledgeGraph:
        """The underlying graph."""
        return self.index.graph

    @property
    def embedder(self) -> Any:
        """The embedder of the keywords (and of the node, edge and passage vectors)."""
        return self.index.embedder

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
            mat = text_vectors(g, self.index.embedder, "node_names",
                               [n.name or n.id for n in g.nodes])
            self._names = (g.version, np.asarray(mat, dtype=np.float32))
        return self._names[1]

    async def _aprepare(self, cfg: PathRAGConfig, high: bool = False) -> None:
        """Build what :meth:`_node_matrix` reads with the embedder's async API (cold start).

        With ``high`` keywords, also the edge texts :meth:`_relations_for` reads. Concurrent
        cold calls embed each text once (:mod:`kgpath._singleflight`).
        """
        g = self.graph
        if high and cfg.num_relations and g.num_edges and (
                self._edge_vecs is None or self._edge_vecs[0] != g.version):
            version = g.version
            texts = [relation_text(g, e) for e in g.edges]
            mat = await atext_vectors(g, self.index.embedder, "edge_texts", texts)
            self._edge_vecs = (version, np.asarray(mat, dtype=np.float32), _edge_degree(g))
        if cfg.node_match == "text":
            await self.index.abuild()
            return
        if self._names is None or self._names[0] != g.version:
            mat = await atext_vectors(g, self.index.embedder, "node_names",
                                      [n.name or n.id for n in g.nodes])
            self._names = (g.version, np.asarray(mat, dtype=np.float32))

    def _nodes_for(
        self, query: str, kws: KeywordExtraction, kv: np.ndarray, cfg: PathRAGConfig
    ) -> list[RetrievedNode]:
        g = self.graph
        return [RetrievedNode(g.node_at(i), i, word, s)
                for i, word, s in node_hits(query, kws, kv, cfg, self._node_matrix(cfg))]

    def _relations_for(
        self, hv: np.ndarray | None, cfg: PathRAGConfig
    ) -> list[RetrievedRelation]:
        """The global half of the keyword split: edges for the high-level keywords."""
        g = self.graph
        if hv is None or cfg.num_relations == 0 or g.num_edges == 0:
            return []  # (relation_hits says the same; this skips embedding the edges)
        edges = self._edge_vecs
        if edges is None or edges[0] != g.version:
            version = g.version
            texts = [relation_text(g, e) for e in g.edges]
            mat = text_vectors(g, self.index.embedder, "edge_texts", texts)
            self._edge_vecs = edges = (version, np.asarray(mat, dtype=np.float32),
                                       _edge_degree(g))
        hits = relation_hits(hv, cfg, edges[1], edges[2])
        return [
            RetrievedRelation(g.edge_at(i), i, sim, relation_text(g, g.edge_at(i)))
            for i, sim in hits
        ]

    def _embed(
        self, query: str, kws: KeywordExtraction, cfg: PathRAGConfig
    ) -> tuple[list[str], list[str]]:
        """The texts to embed: node keywords, and the joined high-level keywords (or none)."""
        high = [", ".join(kws.high_level)] if cfg.keyword_split and kws.high_level else []
        return list(_node_keywords(query, kws, cfg)), high

    def nodes_for_query(
        self, query: str, **overrides: Any
    ) -> tuple[KeywordExtraction, list[RetrievedNode]]:
        """Section 4.1 only: keywords and the retrieved node set ``V_q``."""
        cfg = self.resolve_config(**overrides)
        kws = extract_keywords(query, self.llm, prompt=self.keyword_prompt)
        words, _ = self._embed(query, kws, cfg)
        kv = self.embedder.embed_queries(words)
        return kws, self._nodes_for(query, kws, kv, cfg)

    # ------------------------------------------------------------------ pipeline
    def retrieve(self, query: str, **overrides: Any) -> PathRAGResult:
        """Run PathRAG for ``query``; ``overrides`` are :class:`PathRAGConfig` fields."""
        q = check_query(query)
        cfg = self.resolve_config(**overrides)
        t0 = time.perf_counter()
        kws = extract_keywords(q, self.llm, prompt=self.keyword_prompt)
        words, high = self._embed(q, kws, cfg)
        kv = self.embedder.embed_queries(words + high + _query_row(q, cfg))
        t1 = time.perf_counter()
        return self._after_embedding(q, kws, kv, (len(words), len(high)), cfg, (t1 - t0) * 1e3)

    async def aretrieve(self, query: str, **overrides: Any) -> PathRAGResult:
        """Async :meth:`retrieve` (LLM and keyword embedding awaited)."""
        q = check_query(query)
        cfg = self.resolve_config(**overrides)
        t0 = time.perf_counter()
        kws = await aextract_keywords(q, self.llm, prompt=self.keyword_prompt)
        words, high = self._embed(q, kws, cfg)
        kv = await self.embedder.aembed_queries(words + high + _query_row(q, cfg))
        return await self._aafter_embedding(q, kws, kv, (len(words), len(high)), cfg, t0)

    async def _aafter_embedding(
        self,
        query: str,
        kws: KeywordExtraction,
        kv: np.ndarray,
        rows: tuple[int, int],
        cfg: PathRAGConfig,
        t0: float,
    ) -> PathRAGResult:
        """:meth:`_after_embedding` once the vectors it reads are built asynchronously."""
        if _query_row(query, cfg):  # the passage vectors of unit_order, awaited (not sync)
            await self.index.apassage_vectors()
        await self._aprepare(cfg, bool(rows[1]))
        t1 = time.perf_counter()
        return self._after_embedding(query, kws, kv, rows, cfg, (t1 - t0) * 1e3)

    def _after_embedding(
        self,
        query: str,
        kws: KeywordExtraction,
        kv: np.ndarray,
        rows: tuple[int, int],
        cfg: PathRAGConfig,
        keywords_ms: float,
    ) -> PathRAGResult:
        """Section 4.1 from the keyword vectors.

        ``rows`` = (node keyword rows, high-level rows: 0 or 1); a last row, when present, is
        the question's own vector (:func:`_query_row`).
        """
        t1 = time.perf_counter()
        kv = np.atleast_2d(np.asarray(kv, dtype=np.float32))
        n_words, n_high = rows
        nodes = self._nodes_for(query, kws, kv[:n_words], cfg)
        relations = self._relations_for(kv[n_words] if n_high else None, cfg)
        qv = kv[n_words + n_high] if kv.shape[0] > n_words + n_high else None
        timings = {"keywords_ms": keywords_ms, "nodes_ms": (time.perf_counter() - t1) * 1e3}
        covers = _check_coverage(cfg, self._num_nodes())
        return self._finish(query, kws, nodes, cfg, timings, relations, covers, qv,
                            kv[:n_words])

    def _num_nodes(self) -> int:
        """``|V|``, for the ``N ≥ |V|`` warning."""
        return self.graph.num_nodes

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
        relations: list[RetrievedRelation] | None = None,
        covers: bool = False,
        query_vector: np.ndarray | None = None,
        node_queries: np.ndarray | None = None,
        *,
        graph: KnowledgeGraph | None = None,
        pool: CandidatePool | None = None,
        passage_sims: dict[str, float] | None = None,
    ) -> PathRAGResult:
        """Sections 4.2-4.3 from the retrieved nodes: paths, ordering, prompt, result.

        ``graph``: the graph read (default the whole graph; a database twin passes the part
        it fetched, indexed as ``nodes``). ``pool`` (section 4.2, over ``graph``) and
        ``passage_sims`` (the question's passage cosines): computed here when not given.
        """
        g = self.graph if graph is None else graph
        ordering = get_ordering(cfg.ordering)
        relations = relations or []
        trace = _base_trace(query, kws, nodes, cfg, ordering)
        trace.update(num_nodes_covers_graph=covers, relation_ids=[r.index for r in relations])
        t0 = time.perf_counter()
        pool, top, empty = self._paths(nodes, cfg, trace, g, pool)
        timings["paths_ms"] = (time.perf_counter() - t0) * 1e3
        trace["returned"] = len(top)
        trace["k_shortfall"] = max(0, cfg.top_k - len(top))
        rng = random.Random(cfg.seed)
        arranged = self._arrange(pool, top, ordering, rng, cfg, g)
        head = [PATHRAG_RELATION_BLOCK.format(number=i, text=r.text)
                for i, r in enumerate(relations, 1)]
        prompt_paths, context, prompt, budget = self._fit(query, arranged, ordering, rng, cfg,
                                                          head)
        trace["budget"] = budget
        trace["timings_ms"] = timings
        sims = (self._passage_similarity(query, cfg, query_vector)
                if passage_sims is None else passage_sims)
        units = self._text_units(g, nodes, relations, sims, cfg, node_queries)
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
            relations=tuple(relations),
            text_units=tuple(units),
        )

    def _text_units(
        self, g: KnowledgeGraph, nodes: list[RetrievedNode], relations: list[RetrievedRelation],
        sims: dict[str, float] | None, cfg: PathRAGConfig, node_queries: np.ndarray | None,
    ) -> list[TextUnit]:
        """The prompt's Sources (:mod:`~kgpath.methods.pathrag.sources`), seeds included."""
        units = prompt_text_units(
            g, flow_adjacency(g, "undirected"), nodes, relations, sims,
            QUESTION_WEIGHT if cfg.unit_order == "question" else None)
        if sims is not None and cfg.unit_order == "question" and cfg.seed_passages:
            vecs, cited = self._seed_sources(cfg, g, node_queries is not None)
            units = seed_text_units(  # a kgpath extension (sources.seed_text_units)
                g, units, sims, cfg.seed_passages, QUESTION_WEIGHT, vecs, node_queries, cited)
        return units

    def _seed_sources(
        self, cfg: PathRAGConfig, graph: KnowledgeGraph, with_vectors: bool
    ) -> tuple[np.ndarray | None, dict[str, list[int]]]:
        """What :func:`seed_text_units` reads: node vectors and ``passage -> citing nodes``.

        Both indexed like ``graph`` (here the whole graph; the database twin passes the part
        it fetched). The vectors are section 4.1's matrix, only when node queries exist.
        """
        vecs = self._node_matrix(cfg) if with_vectors else None
        return vecs, passage_citations(self.graph,
                                       getattr(self.index.passage_vectors(), "derived", None))

    def _passage_similarity(
        self, query: str, cfg: PathRAGConfig, qv: np.ndarray | None = None
    ) -> dict[str, float] | None:
        """Cosine of the query to every passage (``unit_order`` "similarity"/"question").

        ``qv``: the query's vector when the keyword request already embedded it (always on
        :meth:`aretrieve`, so the async path makes no sync embedder call).
        """
        if cfg.unit_order == "relation_count":
            return None
        pv = self.index.passage_vectors()
        if pv is None:
            return None
        if qv is None:
            qv = self.index.embedder.embed_queries([query])[0]
        return dict(zip(pv.ids, passage_cosines(pv.matrix, qv).tolist(), strict=True))

    def _paths(
        self, nodes: list[RetrievedNode], cfg: PathRAGConfig, trace: dict[str, Any],
        g: KnowledgeGraph, pool: CandidatePool | None = None,
    ) -> tuple[CandidatePool | None, list[PathRAGPath], str | None]:
        """Section 4.2: the candidate pool (Eqs. 2-4) and its top-``K`` paths ``P_1..P_K``.

        Returns ``(pool, top paths, empty reason)``; the pool's stats go into ``trace``.
        A given ``pool`` (computed elsewhere, over ``g``'s indices) is used as is.
        """
        if len(nodes) < 2:
            trace.update(pool_size=0, pairs_with_path=0)
            return None, [], "fewer_than_two_nodes"
        if pool is None:
            adj = flow_adjacency(g, cfg.direction, cfg.exclude_edge_types)
            pool = reliability_strategy(cfg.reliability).pool(
                adj, [n.index for n in nodes], cfg)
        trace.update(pool.stats)
        top = [materialize_path(g, c, i) for i, c in enumerate(pool.top(cfg.top_k), 1)]
        return pool, top, (None if len(pool) else "no_path")

    def _arrange(
        self,
        pool: CandidatePool | None,
        top: list[PathRAGPath],
        ordering: PathOrdering,
        rng: random.Random,
        cfg: PathRAGConfig,
        g: KnowledgeGraph,
    ) -> list[PathRAGPath]:
        """Section 4.3: the paths the ordering policy puts in the prompt, first to last."""
        if pool is None or not len(pool):
            return []
        by_pos = {i: p for i, p in enumerate(top)}
        return [
            by_pos.get(i) or materialize_path(g, pool[i], i + 1)
            for i in ordering.arrange(pool, cfg.top_k, rng)
        ]

    def _fit(
        self,
        query: str,
        arranged: list[PathRAGPath],
        ordering: PathOrdering,
        rng: random.Random,
        cfg: PathRAGConfig,
        head: Sequence[str] = (),
    ) -> tuple[list[PathRAGPath], str, str, dict[str, Any]]:
        """Render the prompt; with a token budget, drop the least reliable paths until it fits.

        ``head`` (the relation blocks) comes first, right after the query (section 5.1.3).
        """
        state = rng.getstate()

        def render(paths: list[PathRAGPath]) -> tuple[str, str]:
            rng.setstate(state)  # the same shuffle for every attempt
            blocks = [*head, *ordering.render(paths, rng)]
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


def _base_trace(
    query: str,
    kws: KeywordExtraction,
    nodes: list[RetrievedNode],
    cfg: PathRAGConfig,
    ordering: PathOrdering,
) -> dict[str, Any]:
    """The trace entries known before path retrieval: keywords, ``V_q`` and the settings."""
    return {
        "keywords": list(kws.keywords),
        "keyword_source": kws.source,
        "keyword_error": kws.error,
        "retrieved_node_ids": [n.id for n in nodes],
        "node_keywords": list(_node_keywords(query, kws, cfg)),
        "node_query": cfg.node_query,
        "high_level_keywords": list(kws.high_level) if cfg.keyword_split else [],
        "reliability": reliability_strategy(cfg.reliability).name,
        "direction": cfg.direction,
        "max_hops": cfg.max_hops,
        "alpha": cfg.alpha,
        "theta": cfg.theta,
        "flow_threshold": cfg.flow_threshold,
        "top_k": cfg.top_k,
        "ordering": ordering.name or type(ordering).__name__,
    }


def node_hits(
    query: str, kws: KeywordExtraction, kv: np.ndarray, cfg: PathRAGConfig, matrix: np.ndarray
) -> list[tuple[int, str, float]]:
    """Section 4.1 over a node matrix: ``(row, keyword, cosine)`` in retrieval order.

    ``matrix`` holds every node's vector in node order (what ``node_match`` selects);
    :func:`node_hits_from` ranks its :func:`~kgpath.methods.pathrag.nodes.node_similarities`.
    """
    return node_hits_from(query, kws, cfg, node_similarities(kv, matrix))


def node_hits_from(
    query: str, kws: KeywordExtraction, cfg: PathRAGConfig, sims: np.ndarray
) -> list[tuple[int, str, float]]:
    """Section 4.1 from the similarities: ``(row, keyword, cosine)`` in retrieval order.

    ``sims`` (``|K_q| x |V|``, node order) may come from a matrix in memory
    (:func:`node_hits`) or from a vector file streamed chunk by chunk (the database
    retriever): :func:`~kgpath.methods.pathrag.nodes.rank_nodes` ranks them, so every
    retriever retrieves the same ``V_q`` from the same cosines.
    """
    hits = rank_nodes(sims, cfg.num_nodes, cfg.min_similarity, cfg.min_similarity_z)
    words = _node_keywords(query, kws, cfg)
    return [(i, words[k], s) for i, k, s in hits]


def passage_cosines(matrix: np.ndarray, qv: np.ndarray) -> np.ndarray:
    """The question's float32 cosine to each passage row, summed row by row.

    ``np.einsum`` as :func:`~kgpath.methods.pathrag.nodes.node_similarities` (not BLAS): the
    same value whether the rows are held whole, paged or read from a vector file.
    """
    mat = np.asarray(matrix, dtype=np.float32)
    if mat.shape[0] == 0:
        return np.zeros(0, np.float32)
    return np.einsum("ij,j->i", mat, np.ascontiguousarray(np.asarray(qv, np.float32).reshape(-1)))


def relation_hits(
    hv: np.ndarray | None, cfg: PathRAGConfig, edge_vectors: np.ndarray, edge_degree: Any
) -> list[tuple[int, float]]:
    """The relations of the high-level keywords: ``(edge row, cosine)`` in prompt order.

    ``edge_vectors``: every edge's :func:`~kgpath.methods.pathrag.prompt.relation_text`
    vector in edge order; ``edge_degree[row]``: its endpoints' degrees added (read only
    for the edges kept, so a database passes a lazy lookup). See
    :func:`~kgpath.methods.pathrag.nodes.retrieve_relations`.
    """
    if hv is None or cfg.num_relations == 0 or len(edge_vectors) == 0:
        return []
    return retrieve_relations(hv, edge_vectors, edge_degree, cfg.num_relations,
                              cfg.min_similarity, cfg.min_similarity_z)


def _edge_degree(g: KnowledgeGraph) -> np.ndarray:
    """Each edge's endpoint degrees added (in + out), as ``_get_edge_data`` orders them."""
    csr = g.csr()
    deg = np.diff(csr["out_indptr"]) + np.bincount(csr["out_indices"], minlength=g.num_nodes)
    ends = [(g.index_of(e.source), g.index_of(e.target)) for e in g.edges]
    return np.asarray([deg[a] + deg[b] for a, b in ends], dtype=np.int64)


def _query_row(query: str, cfg: PathRAGConfig) -> list[str]:
    """The question itself, embedded with the keywords when ``unit_order`` needs its vector."""
    return [] if cfg.unit_order == "relation_count" else [query]


def _node_keywords(query: str, kws: KeywordExtraction, cfg: PathRAGConfig) -> tuple[str, ...]:
    """The texts matched to nodes (one vector each).

    ``node_query="per_keyword"``: the low-level keywords under the split (all if none is
    low). ``"joined"``: one text, those keywords joined by ``", "`` (``kg_query`` in the
    authors' code); with offline keywords the question itself stands in for that string
    (see :class:`PathRAGConfig`).
    """
    words = kws.low_level if cfg.keyword_split and kws.low_level else kws.keywords
    if cfg.node_query == "per_keyword":
        return words
    if kws.source != "llm":
        return (query,)
    return (", ".join(words),)


def _check_coverage(cfg: PathRAGConfig, num_nodes: int) -> bool:
    """Warn when ``N ≥ |V|``: every node is retrieved, so the question selects nothing."""
    covers = cfg.num_nodes >= num_nodes
    if covers:
        warnings.warn(
            f"PathRAG num_nodes={cfg.num_nodes} >= {num_nodes} graph nodes: every node "
            "above the similarity floor is retrieved, so the question barely selects "
            "the paths (none at all without a floor); lower num_nodes",
            UserWarning,
            stacklevel=5,
        )
    return covers
