"""Query in, sentences out: :class:`TraversalRetriever` runs any algorithm by name.

The retriever embeds the query, keeps one :class:`~kgpath.methods.traversal.view.ChunkGraphView`
of the chunk graph (rebuilt when the graph changes), and dispatches to the article's seven
walks (:mod:`.walks`) or the kgpath ``mention_expansion`` extension (:mod:`.mentions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kgpath._config import with_overrides
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex, check_query
from kgpath.llm import LLM, as_llm
from kgpath.methods.traversal.config import (
    ALGORITHMS,
    EXTENSIONS,
    MentionExpansionConfig,
    TraversalConfig,
)
from kgpath.methods.traversal.mentions import mention_expansion
from kgpath.methods.traversal.policy import TraversalPolicy
from kgpath.methods.traversal.result import TraversalResult
from kgpath.methods.traversal.view import ChunkGraphView
from kgpath.methods.traversal.walks import atraverse, check_algorithm, make_policy, traverse
from kgpath.prompts.traversal import LLM_TRAVERSAL_PROMPT

__all__ = ["TraversalRetriever", "format_traversal"]


class TraversalRetriever:
    """Query-in, sentences-out retriever exposing all seven algorithms by name.

    Parameters
    ----------
    graph
        The chunk graph (wrapped with ``embedder``), or a :class:`GraphIndex` over one.
        Embeddings stored in the graph by the builder are reused.
    embedder
        Query embedder (must be the one the graph was built with).
    llm
        Used by ``llm_guided_traversal`` only.
    config
        :class:`TraversalConfig`; per-call overrides are keyword arguments of
        :meth:`retrieve` (applied with ``dataclasses.replace``).
    algorithm
        Default algorithm (one of :data:`ALGORITHMS`); per call: ``retrieve(algorithm=...)``.
    llm_prompt
        Template of each LLM step (variables as in :data:`LLM_TRAVERSAL_PROMPT`).
    mention_config
        :class:`MentionExpansionConfig` of the ``mention_expansion`` extension
        (:data:`EXTENSIONS`), which is also accepted as ``algorithm``.

    Notes
    -----
    Every result carries the chunk graph (:attr:`TraversalResult.graph`), so
    ``result.evidence()`` returns the documents it reached with their passage text.

    Examples
    --------
    >>> from kgpath import HashingEmbedder
    >>> from kgpath.ingest.chunk_graph import build_chunk_graph
    >>> emb = HashingEmbedder()
    >>> g = build_chunk_graph({"Cats": "Cats purr. Cats hunt mice. Mice fear cats.",
    ...                        "Dogs": "Dogs bark. Dogs chase cats."}, embedder=emb)
    >>> r = TraversalRetriever(g, embedder=emb).retrieve("Why do mice fear cats?")
    >>> r.path_ids[0]
    'chunk:Cats:0'
    >>> r.evidence()[0].id, r.evidence()[0].text
    ('Cats', 'Cats purr. Cats hunt mice. Mice fear cats.')
    """

    def __init__(
        self,
        graph: KnowledgeGraph | GraphIndex,
        *,
        embedder: Any = None,
        llm: LLM | None = None,
        config: TraversalConfig | None = None,
        algorithm: str = "query_traversal",
        llm_prompt: str = LLM_TRAVERSAL_PROMPT,
        mention_config: MentionExpansionConfig | None = None,
    ) -> None:
        self.index = graph if isinstance(graph, GraphIndex) else GraphIndex(graph, embedder)
        check_algorithm(algorithm)  # validate the name early
        self.mention_config = mention_config or MentionExpansionConfig()
        self.llm_prompt = llm_prompt
        self.algorithm = algorithm
        self.config = config or TraversalConfig()
        self.llm = None if llm is None else as_llm(llm)  # ConfigError for llm="gpt"
        self._view: ChunkGraphView | None = None
        self._view_version = -1

    def _policy(self, algorithm: str) -> TraversalPolicy:
        return make_policy(algorithm, llm=self.llm, llm_prompt=self.llm_prompt)

    @property
    def graph(self) -> KnowledgeGraph:
        """The chunk graph."""
        return self.index.graph

    @property
    def view(self) -> ChunkGraphView:
        """The array view (rebuilt if the graph changed)."""
        if self._view is None or self._view_version != self.graph.version:
            self.index.build()
            self._view = ChunkGraphView(self.graph)
            self._view_version = self.graph.version
        return self._view

    def resolve_config(self, **overrides: Any) -> TraversalConfig:
        """The config with per-call ``overrides`` applied (``None`` values are ignored)."""
        return with_overrides(self.config, overrides, label="traversal")

    def retrieve(
        self, query: str, *, algorithm: str | None = None, **overrides: Any
    ) -> TraversalResult:
        """Run one algorithm for ``query``; ``overrides`` are :class:`TraversalConfig` fields."""
        q = check_query(query)
        cfg = self.resolve_config(**overrides)
        name = algorithm or self.algorithm
        if name in EXTENSIONS:
            view = self.view
            return self._extension(view, self.index.embed_query(q), q, cfg)
        policy = self._policy(name)
        view = self.view
        return traverse(view, self.index.embed_query(q), policy, config=cfg, query=q)

    def _extension(
        self, view: ChunkGraphView, qv: np.ndarray, q: str, cfg: TraversalConfig
    ) -> TraversalResult:
        return mention_expansion(view, qv, query=q, config=self.mention_config,
                                 traversal_config=cfg)

    async def aretrieve(
        self, query: str, *, algorithm: str | None = None, **overrides: Any
    ) -> TraversalResult:
        """Async :meth:`retrieve` (query embedding and LLM calls awaited)."""
        q = check_query(query)
        cfg = self.resolve_config(**overrides)
        name = algorithm or self.algorithm
        if name in EXTENSIONS:
            view = self.view
            return self._extension(view, await self.index.aembed_query(q), q, cfg)
        policy = self._policy(name)
        view = self.view
        qv = await self.index.aembed_query(q)
        return await atraverse(view, qv, policy, config=cfg, query=q)

    def retrieve_all(
        self, query: str, algorithms: Sequence[str] = ALGORITHMS, **overrides: Any
    ) -> dict[str, TraversalResult]:
        """Run several algorithms on one query, embedding it once."""
        q = check_query(query)
        cfg = self.resolve_config(**overrides)
        view = self.view
        qv = self.index.embed_query(q)
        return {
            a: self._extension(view, qv, q, cfg) if a in EXTENSIONS
            else traverse(view, qv, self._policy(a), config=cfg, query=q)
            for a in algorithms
        }


def format_traversal(result: TraversalResult, graph: KnowledgeGraph | None = None) -> str:
    """Render the path, e.g. ``Alpha#0 -(0.91)-> Alpha#1 -(0.62)-> Beta#0``.

    A hop that branches from an earlier chunk (``frontier="visited"``) is written
    ``-(0.62 from Alpha#0)-> Beta#0``.
    """

    def label(chunk_id: str) -> str:
        if graph is not None and chunk_id in graph:
            n = graph.node(chunk_id)
            return f"{n.name or n.metadata.get('doc_id', '')}#{n.metadata.get('position', '')}"
        return chunk_id

    parts = []
    prev: str | None = None
    for s in result.path:
        if s.transition_similarity is None:
            parts.append(label(s.chunk_id))
        elif s.origin_id is not None and s.origin_id != prev:
            parts.append(f"-({s.transition_similarity:.2f} from {label(s.origin_id)})-> "
                         f"{label(s.chunk_id)}")
        else:
            parts.append(f"-({s.transition_similarity:.2f})-> {label(s.chunk_id)}")
        prev = s.chunk_id
    return " ".join(parts)
