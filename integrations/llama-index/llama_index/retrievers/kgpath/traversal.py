"""LlamaIndex retriever for the seven semantic-chunk-graph traversal algorithms.

A thin adapter over :class:`kgpath.methods.traversal.TraversalRetriever`: the walk, its
stopping rules and the LLM-guided choices all happen in the core. This module converts a
``QueryBundle`` into a core call and each extracted sentence into a ``NodeWithScore`` whose
metadata carries the traversal trace (STYLE habit 6).

Metadata of every returned node (plain JSON types)
--------------------------------------------------
``kgpath_method`` (``"traversal"``), ``algorithm``, ``rank`` (extraction order, 1-based),
``doc_id`` (passage id), ``title``, ``chunk_id`` (the chunk the sentence was read from),
``hop`` (0 = anchor chunk), ``query_similarity``, ``anchor_id``, ``traversal_path`` (every
visited chunk id, in order), ``path_to_sentence`` (the visited chunks up to this sentence's
hop), ``stop_reason``. All of them are hidden from embeddings; only ``title`` reaches the
LLM prompt.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle, TextNode
from llama_index.retrievers.kgpath._convert import to_kgpath_embedder as _embedder
from llama_index.retrievers.kgpath._convert import to_kgpath_llm as _llm

from kgpath.build.chunk_graph import ChunkGraphBuilder, ChunkGraphConfig, SourceDocument
from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.methods.traversal import (
    ALGORITHMS,
    EXTENSIONS,
    TraversalConfig,
    TraversalResult,
    TraversalRetriever,
    check_algorithm,
)

__all__ = ["KGTraversalRetriever", "traversal_result_to_nodes"]

_TRACE_KEYS = (
    "kgpath_method", "algorithm", "rank", "doc_id", "title", "chunk_id", "hop",
    "query_similarity", "anchor_id", "traversal_path", "path_to_sentence", "stop_reason",
)


def traversal_result_to_nodes(
    result: TraversalResult, graph: KnowledgeGraph, top_k: int | None = None
) -> list[NodeWithScore]:
    """Convert a core result into ``NodeWithScore`` objects, in extraction order.

    The score is the sentence's cosine similarity to the query (a Python ``float``); the
    order is the traversal's, not the score's, because the walk order is the ranking.
    """
    path = result.path_ids
    out: list[NodeWithScore] = []
    for rank, s in enumerate(result.sentences[:top_k] if top_k else result.sentences, 1):
        title = graph.node(s.id).name if s.id in graph else ""
        meta: dict[str, Any] = {
            "kgpath_method": "traversal",
            "algorithm": result.algorithm,
            "rank": rank,
            "doc_id": s.doc_id,
            "title": title,
            "chunk_id": s.chunk_id,
            "hop": int(s.hop),
            "query_similarity": float(s.query_similarity),
            "anchor_id": result.anchor_id,
            "traversal_path": list(path),
            "path_to_sentence": list(path[: s.hop + 1]),
            "stop_reason": result.stop_reason,
        }
        node = TextNode(
            id_=s.id,
            text=s.text,
            metadata=meta,
            excluded_embed_metadata_keys=list(_TRACE_KEYS),
            excluded_llm_metadata_keys=[k for k in _TRACE_KEYS if k != "title"],
        )
        out.append(NodeWithScore(node=node, score=float(s.query_similarity)))
    return out


class KGTraversalRetriever(BaseRetriever):
    """LlamaIndex retriever running one of kgpath's seven chunk-graph traversals.

    Parameters
    ----------
    retriever
        A :class:`kgpath.methods.traversal.TraversalRetriever` (graph, embeddings and query
        embedder are shared, never copied). See :meth:`from_graph` / :meth:`from_documents`.
    algorithm
        One of :data:`kgpath.methods.traversal.ALGORITHMS` or ``EXTENSIONS``
        (``mention_expansion``); :meth:`with_algorithm` returns a
        copy using another one.
    similarity_top_k
        Return at most this many sentences (``None``: all the walk extracted). A value above
        the config's ``max_sentences`` raises the walk's budget to it.
    options
        Extra :class:`~kgpath.methods.traversal.TraversalConfig` fields for every call.
    """

    def __init__(
        self,
        retriever: TraversalRetriever,
        *,
        algorithm: str | None = None,
        similarity_top_k: int | None = None,
        options: dict[str, Any] | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if not isinstance(retriever, TraversalRetriever):
            raise ConfigError(
                f"retriever must be a kgpath TraversalRetriever, got {type(retriever).__name__}"
            )
        self._core = retriever
        self.algorithm = algorithm or retriever.algorithm
        check_algorithm(self.algorithm)  # validates the name
        if similarity_top_k is not None and (
            isinstance(similarity_top_k, bool)
            or not isinstance(similarity_top_k, int)
            or similarity_top_k < 1
        ):
            raise ConfigError(f"similarity_top_k must be a positive int, got {similarity_top_k!r}")
        self.similarity_top_k = similarity_top_k
        self.options = dict(options or {})
        self._overrides()  # validates option names and values now
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_graph(
        cls,
        graph: KnowledgeGraph,
        *,
        embed_model: Any = None,
        llm: Any = None,
        algorithm: str = "query_traversal",
        config: TraversalConfig | None = None,
        **kwargs: Any,
    ) -> KGTraversalRetriever:
        """Wrap a chunk graph built by :mod:`kgpath.build.chunk_graph`."""
        core = TraversalRetriever(graph, embedder=_embedder(embed_model), algorithm=algorithm,
                                  config=config, llm=_llm(llm))
        return cls(core, **kwargs)

    @classmethod
    def from_documents(
        cls,
        documents: Sequence[BaseNode],
        *,
        embed_model: Any = None,
        llm: Any = None,
        graph_config: ChunkGraphConfig | None = None,
        algorithm: str = "query_traversal",
        config: TraversalConfig | None = None,
        cache_dir: str | None = None,
        **kwargs: Any,
    ) -> KGTraversalRetriever:
        """Build the chunk graph from LlamaIndex documents, then wrap it.

        A document's id is its ``doc_id``/``node_id``; its title ``metadata["title"]`` when
        present. ``llm`` (if given) extracts the document themes and guides
        ``llm_guided_traversal``.
        """
        emb = _embedder(embed_model)
        kg_llm = _llm(llm)
        docs = [
            SourceDocument(d.node_id, str(d.metadata.get("title", "")),
                           tuple(_split(d.get_content())), dict(d.metadata))
            for d in documents
        ]
        graph = ChunkGraphBuilder(emb, config=graph_config, llm=kg_llm,
                                  cache_dir=cache_dir).build(docs)
        core = TraversalRetriever(graph, embedder=emb, algorithm=algorithm, config=config,
                                  llm=kg_llm)
        return cls(core, **kwargs)

    def with_algorithm(self, algorithm: str) -> KGTraversalRetriever:
        """A copy of this retriever that runs ``algorithm`` (the core is shared)."""
        check_algorithm(algorithm)
        clone = copy.copy(self)
        clone.algorithm = algorithm
        return clone

    # ------------------------------------------------------------------ properties
    @property
    def core(self) -> TraversalRetriever:
        """The wrapped kgpath retriever."""
        return self._core

    @property
    def algorithms(self) -> tuple[str, ...]:
        """Every algorithm name this retriever can run."""
        return ALGORITHMS + EXTENSIONS

    def _overrides(self) -> dict[str, Any]:
        """Per-call config fields: ``options``, with the budget raised to ``similarity_top_k``."""
        opts = dict(self.options)
        k = self.similarity_top_k
        budget = opts.get("max_sentences") or self._core.config.max_sentences
        if k is not None and k > budget:
            opts["max_sentences"] = k
        self._core.resolve_config(**opts)
        return opts

    # ------------------------------------------------------------------ prompts
    def _get_prompts(self) -> PromptDictType:
        """The LLM-guided traversal prompt (core constant, wrapped as a PromptTemplate)."""
        return {"llm_traversal_prompt": PromptTemplate(self._core.llm_prompt)}

    def _update_prompts(self, prompts_dict: PromptDictType) -> None:
        tmpl = prompts_dict.get("llm_traversal_prompt")
        if tmpl is None:
            return
        if not isinstance(tmpl, BasePromptTemplate):
            raise ConfigError(f"llm_traversal_prompt must be a PromptTemplate, got {tmpl!r}")
        self._core.llm_prompt = tmpl.get_template()

    # ------------------------------------------------------------------ retrieval
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self._core.retrieve(
            query_bundle.query_str, algorithm=self.algorithm, **self._overrides()
        )
        return traversal_result_to_nodes(result, self._core.graph, self.similarity_top_k)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = await self._core.aretrieve(
            query_bundle.query_str, algorithm=self.algorithm, **self._overrides()
        )
        return traversal_result_to_nodes(result, self._core.graph, self.similarity_top_k)


def _split(text: str) -> list[str]:
    from kgpath.build.chunk_graph import split_sentences

    return split_sentences(text)
