"""LangChain retriever for the seven semantic-chunk-graph traversal algorithms.

A thin adapter over :class:`kgpath.methods.traversal.TraversalRetriever` (the article's
algorithms 1-7, their stopping rules and the LLM-guided choices live in the core). Each
extracted sentence becomes a :class:`~langchain_core.documents.Document`:
``page_content`` is the sentence, ``id`` its kgpath node id, and ``metadata`` the trace
(plain JSON types): ``score`` (cosine to the query, float), ``algorithm``, ``rank``
(extraction order, 1-based), ``doc_id``, ``title``, ``chunk_id``, ``hop``, ``anchor_id``,
``traversal_path`` (every visited chunk id), ``path_to_sentence`` (visited chunks up to this
sentence's hop), ``stop_reason`` and ``kgpath_method`` (``"traversal"``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

from kgpath.build.chunk_graph import (
    ChunkGraphBuilder,
    ChunkGraphConfig,
    SourceDocument,
    split_sentences,
)
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
from langchain_kgpath._convert import as_kgpath_embedder as _embedder
from langchain_kgpath._convert import as_kgpath_llm as _llm

__all__ = ["KGTraversalRetriever", "traversal_result_to_documents"]

_FIELDS = frozenset(f.name for f in dataclasses.fields(TraversalConfig))
#: Keyword arguments ``BaseRetriever.invoke`` may forward that are not retrieval options.
_CALL_KWARGS = frozenset({"verbose"})


def traversal_result_to_documents(
    result: TraversalResult, graph: KnowledgeGraph, k: int | None = None
) -> list[Document]:
    """One document per extracted sentence, in extraction (traversal) order."""
    path = result.path_ids
    docs = []
    for rank, s in enumerate(result.sentences[:k] if k else result.sentences, 1):
        docs.append(Document(
            id=s.id,
            page_content=s.text,
            metadata={
                "kgpath_method": "traversal",
                "algorithm": result.algorithm,
                "score": float(s.query_similarity),
                "rank": rank,
                "doc_id": s.doc_id,
                "title": graph.node(s.id).name if s.id in graph else "",
                "chunk_id": s.chunk_id,
                "hop": int(s.hop),
                "anchor_id": result.anchor_id,
                "traversal_path": list(path),
                "path_to_sentence": list(path[: s.hop + 1]),
                "stop_reason": result.stop_reason,
            },
        ))
    return docs


class KGTraversalRetriever(BaseRetriever):
    """LangChain retriever running one of kgpath's seven chunk-graph traversals.

    Per-call options (keyword arguments of ``invoke``/``ainvoke``/``batch``, or
    ``.bind(...)``): ``k``, ``algorithm`` and any
    :class:`~kgpath.methods.traversal.TraversalConfig` field (``max_sentences``,
    ``min_sentences``, ``max_hops``, ``frontier``, ...). ``k=None`` returns every sentence the
    walk extracted; a ``k`` above ``max_sentences`` raises the walk's budget to ``k``.

    Examples
    --------
    >>> from kgpath import HashingEmbedder
    >>> r = KGTraversalRetriever.from_texts(
    ...     ["Bees make honey. Honey is sweet.", "Hives house bees. Hives are boxes."],
    ...     embedding=HashingEmbedder(64), k=2)
    >>> [d.metadata["hop"] for d in r.invoke("What do bees make?")]
    [0, 0]
    """

    traversal: TraversalRetriever
    """The core retriever (chunk graph, embedder, base :class:`TraversalConfig`, LLM)."""
    algorithm: str = "query_traversal"
    """A name from :data:`kgpath.methods.traversal.ALGORITHMS` or ``EXTENSIONS``."""
    k: int | None = None
    """Sentences to return (``None``: all that the walk extracted)."""
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    """:class:`TraversalConfig` overrides applied to every call."""

    def __init__(self, **data: Any) -> None:
        # validated before pydantic so errors keep their kgpath type (and True is not 1)
        _check_k(data.get("k"))
        super().__init__(**data)
        check_algorithm(self.algorithm)
        self._options({})

    @classmethod
    def from_graph(
        cls,
        graph: KnowledgeGraph,
        *,
        embedding: Any = None,
        llm: Any = None,
        config: TraversalConfig | None = None,
        **kwargs: Any,
    ) -> KGTraversalRetriever:
        """Wrap a chunk graph built by :mod:`kgpath.build.chunk_graph`."""
        core = TraversalRetriever(graph, embedder=_embedder(embedding), config=config,
                                  llm=_llm(llm))
        return cls(traversal=core, **kwargs)

    @classmethod
    def from_documents(
        cls,
        documents: Sequence[Document],
        *,
        embedding: Any = None,
        llm: Any = None,
        graph_config: ChunkGraphConfig | None = None,
        config: TraversalConfig | None = None,
        cache_dir: str | None = None,
        **kwargs: Any,
    ) -> KGTraversalRetriever:
        """Build the chunk graph from LangChain documents, then wrap it.

        A document's id is ``doc.id`` (else ``doc-<i>``); its title ``metadata["title"]``
        when present. ``llm`` (if given) extracts themes and guides ``llm_guided_traversal``.
        """
        src = [
            SourceDocument(d.id or f"doc-{i}", str(d.metadata.get("title", "")),
                           tuple(split_sentences(d.page_content)), dict(d.metadata))
            for i, d in enumerate(documents)
        ]
        emb, kg_llm = _embedder(embedding), _llm(llm)
        graph = ChunkGraphBuilder(emb, config=graph_config, llm=kg_llm,
                                  cache_dir=cache_dir).build(src)
        core = TraversalRetriever(graph, embedder=emb, config=config, llm=kg_llm)
        return cls(traversal=core, **kwargs)

    @classmethod
    def from_texts(cls, texts: Sequence[str], **kwargs: Any) -> KGTraversalRetriever:
        """:meth:`from_documents` for plain strings (ids ``doc-0``, ``doc-1``, ...)."""
        return cls.from_documents([Document(page_content=t) for t in texts], **kwargs)

    @property
    def graph(self) -> KnowledgeGraph:
        """The chunk graph."""
        return self.traversal.graph

    @property
    def algorithms(self) -> tuple[str, ...]:
        """Every algorithm name this retriever can run."""
        return ALGORITHMS + EXTENSIONS

    def _options(self, kwargs: Mapping[str, Any]) -> tuple[str, int | None, dict[str, Any]]:
        """Merge per-call kwargs over the fields; returns (algorithm, k, config overrides)."""
        kw = {key: v for key, v in kwargs.items() if key not in _CALL_KWARGS}
        algorithm = kw.pop("algorithm", None) or self.algorithm
        check_algorithm(algorithm)
        k = kw.pop("k", self.k)
        _check_k(k)
        if "k" in self.search_kwargs or "algorithm" in self.search_kwargs:
            raise ConfigError("pass k and algorithm as retriever fields, not in search_kwargs")
        overrides = {**self.search_kwargs, **kw}
        unknown = set(overrides) - _FIELDS
        if unknown:
            raise ConfigError(f"unknown traversal option(s): {sorted(unknown)}")
        budget = overrides.get("max_sentences") or self.traversal.config.max_sentences
        if k is not None and k > budget:
            overrides["max_sentences"] = k
        self.traversal.resolve_config(**overrides)  # validates values (ConfigError)
        return algorithm, k, overrides

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        **kwargs: Any,
    ) -> list[Document]:
        """Run the traversal synchronously; ``kwargs`` are per-call options."""
        algorithm, k, overrides = self._options(kwargs)
        result = self.traversal.retrieve(query, algorithm=algorithm, **overrides)
        return traversal_result_to_documents(result, self.graph, k)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        **kwargs: Any,
    ) -> list[Document]:
        """Run the traversal with the embedder's (and LLM's) async API."""
        algorithm, k, overrides = self._options(kwargs)
        result = await self.traversal.aretrieve(query, algorithm=algorithm, **overrides)
        return traversal_result_to_documents(result, self.graph, k)


def _check_k(k: Any) -> None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k <= 0):
        raise ConfigError(f"k must be None or a positive int, got {k!r}")
