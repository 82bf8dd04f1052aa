"""LlamaIndex retriever for Path-Constrained Retrieval (PCR).

A thin adapter: every decision is made by :class:`kgpath.methods.pcr.PathConstrainedRetriever`
(reachability by BFS, Eq. 1; top-k among reachable nodes, Eq. 2 or the hybrid score of
section 3.4; the fallback of section 3.5). This module converts LlamaIndex queries into
kgpath calls and kgpath results into ``NodeWithScore`` objects carrying the trace.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any

from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, QueryType
from llama_index.core.utils import print_text
from llama_index.retrievers.kgpath._convert import (
    LLM_METADATA_KEYS,
    KgpathQueryBundle,
    pcr_result_to_nodes,
    query_call_args,
    to_kgpath_embedder,
)

from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex
from kgpath.methods.pcr import PathConstrainedRetriever as KgPathConstrainedRetriever
from kgpath.methods.pcr import PCRConfig, PCRResult

__all__ = ["PathConstrainedRetriever", "KgpathQueryBundle", "to_kgpath_embedder"]

_PCR_FIELDS = frozenset(f.name for f in dataclasses.fields(PCRConfig))


class PathConstrainedRetriever(BaseRetriever):
    """LlamaIndex retriever running kgpath's Path-Constrained Retrieval.

    Returns the top-``k`` graph nodes reachable from an anchor node (Eq. 1 and Eq. 2 of
    the PCR paper), each as a ``NodeWithScore`` whose node id is the kgpath node id, whose
    text is the node's name and description, and whose metadata holds the trace:
    ``kgpath_node_id``, ``name``, ``type``, ``provenance`` (passage ids), ``hops``, ``path``
    (node ids from the anchor), ``path_relations``, ``path_text``, ``anchor_id``,
    ``anchor_name``, ``anchor_resolution``, ``fallback_used``, ``reachable_count``, ``rank``,
    ``score``, ``score_mode`` and ``kgpath_method``. The node's own kgpath metadata is merged
    in (trace keys win on a name clash). Trace keys are excluded from embedding text; only
    ``llm_metadata_keys`` of them reach the LLM prompt.

    Parameters
    ----------
    retriever
        A :class:`kgpath.methods.pcr.PathConstrainedRetriever` (its ``GraphIndex`` and node
        embeddings are shared, never copied). Use :meth:`from_graph` to start from a graph.
    anchor, anchor_name
        Default anchor by node id, or by node name. With neither, PCR anchors at the node
        most similar to the query (recorded as ``anchor_resolution="similarity"``).
    similarity_top_k
        LlamaIndex-style alias of ``k``.
    llm_metadata_keys
        Trace keys visible to the LLM (default: ``type`` and ``path_text``).
    callback_manager, verbose
        Passed to ``BaseRetriever``: callback handlers receive ``RETRIEVE`` events and the
        instrumentation dispatcher sees retrieval spans, as for any LlamaIndex retriever.
    **config_fields
        Any :class:`kgpath.PCRConfig` field (``k``, ``max_depth``, ``direction``, ``mode``,
        ``alpha``, ``fallback``, ``include_anchor``, ``unknown_anchor``), applied on top of
        the kgpath retriever's config and validated now (:class:`kgpath.ConfigError`).

    Per-call options
    ----------------
    ``retrieve(str)`` uses the defaults. To change the anchor, ``k`` or any config field
    for one call, pass a :class:`KgpathQueryBundle` (works through ``RetrieverQueryEngine``
    too) or use :meth:`retrieve_with` / :meth:`aretrieve_with`.

    Errors
    ------
    kgpath's typed errors propagate unchanged: unknown anchor ->
    :class:`kgpath.NodeNotFoundError` (unless ``unknown_anchor="similar"``), ``k <= 0`` or a
    bad option -> :class:`kgpath.ConfigError`, empty query -> :class:`kgpath.QueryError`.

    Notes
    -----
    As in LlamaIndex's ``VectorIndexRetriever``, a bundle's precomputed ``embedding`` is used
    when present (it must come from the same model as the node embeddings; a dimension
    mismatch raises :class:`kgpath.EmbeddingError`); otherwise ``query_str`` is embedded.
    ``custom_embedding_strs`` are not used.

    Examples
    --------
    >>> from kgpath import HashingEmbedder, KnowledgeGraph
    >>> g = KnowledgeGraph.from_triples([("a", "to", "b"), ("b", "to", "c"), ("x", "to", "y")])
    >>> r = PathConstrainedRetriever.from_graph(g, embedder=HashingEmbedder(), anchor="a")
    >>> sorted(n.node.node_id for n in r.retrieve("c"))
    ['a', 'b', 'c']
    """

    def __init__(
        self,
        retriever: KgPathConstrainedRetriever,
        *,
        anchor: str | None = None,
        anchor_name: str | None = None,
        similarity_top_k: int | None = None,
        llm_metadata_keys: Sequence[str] = LLM_METADATA_KEYS,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **config_fields: Any,
    ) -> None:
        if not isinstance(retriever, KgPathConstrainedRetriever):
            raise ConfigError(
                "retriever must be a kgpath.methods.pcr.PathConstrainedRetriever, got "
                f"{type(retriever).__name__}; to start from a graph use "
                "PathConstrainedRetriever.from_graph(graph, embedder=...)"
            )
        unknown = set(config_fields) - _PCR_FIELDS
        if unknown:
            raise ConfigError(
                f"unknown PCR option(s) {sorted(unknown)}; valid: {sorted(_PCR_FIELDS)}"
            )
        if similarity_top_k is not None:
            if "k" in config_fields and config_fields["k"] != similarity_top_k:
                raise ConfigError(
                    f"k={config_fields['k']!r} and similarity_top_k={similarity_top_k!r} "
                    "disagree; pass only one"
                )
            config_fields["k"] = similarity_top_k
        if config_fields:
            # A shallow copy shares the GraphIndex (embeddings, FAISS, BM25) but not the
            # config, so the caller's kgpath retriever is left untouched.
            retriever = copy.copy(retriever)
            retriever.config = dataclasses.replace(retriever.config, **config_fields)
        super().__init__(callback_manager=callback_manager, verbose=verbose)
        self._pcr = retriever
        self._anchor = anchor
        self._anchor_name = anchor_name
        self._llm_metadata_keys = tuple(llm_metadata_keys)

    @classmethod
    def from_graph(
        cls,
        graph: KnowledgeGraph | GraphIndex,
        *,
        embedder: Any = None,
        config: PCRConfig | None = None,
        anchor: str | None = None,
        anchor_name: str | None = None,
        similarity_top_k: int | None = None,
        llm_metadata_keys: Sequence[str] = LLM_METADATA_KEYS,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **config_fields: Any,
    ) -> PathConstrainedRetriever:
        """Build the retriever from a kgpath graph (or an already built ``GraphIndex``).

        Parameters
        ----------
        graph
            A :class:`kgpath.KnowledgeGraph` (its nodes are embedded lazily on first
            retrieval) or a :class:`kgpath.GraphIndex` (reused as is).
        embedder
            ``None`` (kgpath's offline ``LocalEmbedder``), a kgpath embedder, or a LlamaIndex
            ``BaseEmbedding`` (wrapped with :class:`kgpath.LlamaIndexEmbedder`). Not allowed
            with a ``GraphIndex``, which already has one. ``Settings.embed_model`` is never
            consulted.
        config
            A :class:`kgpath.PCRConfig`; ``config_fields`` override its fields.
        anchor, anchor_name, similarity_top_k, llm_metadata_keys, callback_manager, verbose
            As in the constructor.
        **config_fields
            :class:`kgpath.PCRConfig` fields.
        """
        if isinstance(graph, GraphIndex):
            if embedder is not None:
                raise ConfigError(
                    "embedder given together with a GraphIndex, which already has "
                    f"{graph.embedder!r}; pass the KnowledgeGraph instead"
                )
            index: GraphIndex | KnowledgeGraph = graph
        elif isinstance(graph, KnowledgeGraph):
            index = graph
        else:
            raise ConfigError(
                f"graph must be a kgpath KnowledgeGraph or GraphIndex, got {type(graph).__name__}"
            )
        core = KgPathConstrainedRetriever(
            index, embedder=to_kgpath_embedder(embedder), config=config
        )
        return cls(
            core,
            anchor=anchor,
            anchor_name=anchor_name,
            similarity_top_k=similarity_top_k,
            llm_metadata_keys=llm_metadata_keys,
            callback_manager=callback_manager,
            verbose=verbose,
            **config_fields,
        )

    # ------------------------------------------------------------------ properties
    @property
    def kgpath_retriever(self) -> KgPathConstrainedRetriever:
        """The wrapped kgpath retriever (call it directly for a full :class:`PCRResult`)."""
        return self._pcr

    @property
    def config(self) -> PCRConfig:
        """The effective :class:`kgpath.PCRConfig` (before per-call overrides)."""
        return self._pcr.config

    @property
    def similarity_top_k(self) -> int:
        """Default number of results (``config.k``)."""
        return self._pcr.config.k

    @property
    def anchor(self) -> str | None:
        """Default anchor node id."""
        return self._anchor

    @property
    def anchor_name(self) -> str | None:
        """Default anchor node name."""
        return self._anchor_name

    @property
    def graph(self) -> KnowledgeGraph:
        """The kgpath graph being searched."""
        return self._pcr.graph

    # ------------------------------------------------------------------ retrieval
    def _call_args(self, query_bundle: QueryBundle) -> tuple[str, dict[str, Any]]:
        return query_call_args(query_bundle, anchor=self._anchor, anchor_name=self._anchor_name)

    def _to_nodes(self, result: PCRResult) -> list[NodeWithScore]:
        if self._verbose:
            print_text(
                f"PCR anchor {result.anchor.id!r} ({result.anchor_resolution}), "
                f"{result.reachable_count} reachable, {len(result.hits)} returned"
                f"{', global fallback used' if result.fallback_used else ''}\n",
                color="llama_lavender",
            )
        return pcr_result_to_nodes(
            result, self._pcr.graph, llm_metadata_keys=self._llm_metadata_keys
        )

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Run PCR synchronously (Eq. 1 then Eq. 2) and convert the hits."""
        query, kwargs = self._call_args(query_bundle)
        if query_bundle.embedding is not None:  # precomputed (e.g. HyDE) embedding wins
            return self._to_nodes(
                self._pcr.retrieve_by_vector(query_bundle.embedding, query=query, **kwargs)
            )
        return self._to_nodes(self._pcr.retrieve(query, **kwargs))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Run PCR with the query embedding awaited on the embedder's async API."""
        query, kwargs = self._call_args(query_bundle)
        if query_bundle.embedding is not None:
            await self._pcr.index.abuild()
            return self._to_nodes(
                self._pcr.retrieve_by_vector(query_bundle.embedding, query=query, **kwargs)
            )
        return self._to_nodes(await self._pcr.aretrieve(query, **kwargs))

    def _bundle(
        self,
        query: QueryType,
        anchor: str | None,
        anchor_name: str | None,
        k: int | None,
        options: dict[str, Any],
    ) -> KgpathQueryBundle:
        query_str = query.query_str if isinstance(query, QueryBundle) else query
        return KgpathQueryBundle(
            query_str=query_str, anchor=anchor, anchor_name=anchor_name, k=k, options=options
        )

    def retrieve_with(
        self,
        query: QueryType,
        *,
        anchor: str | None = None,
        anchor_name: str | None = None,
        k: int | None = None,
        **options: Any,
    ) -> list[NodeWithScore]:
        """``retrieve`` with a per-call anchor, ``k`` and/or :class:`~kgpath.PCRConfig` fields.

        Goes through ``BaseRetriever.retrieve``, so callbacks and instrumentation fire.
        """
        return self.retrieve(self._bundle(query, anchor, anchor_name, k, options))

    async def aretrieve_with(
        self,
        query: QueryType,
        *,
        anchor: str | None = None,
        anchor_name: str | None = None,
        k: int | None = None,
        **options: Any,
    ) -> list[NodeWithScore]:
        """Async :meth:`retrieve_with`."""
        return await self.aretrieve(self._bundle(query, anchor, anchor_name, k, options))
