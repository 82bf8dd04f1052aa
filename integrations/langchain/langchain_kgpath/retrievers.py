"""LangChain retriever for Path-Constrained Retrieval (PCR).

A thin adapter (STYLE habit 1): :class:`PathConstrainedRetriever` converts LangChain call
conventions into a call of :class:`kgpath.methods.pcr.PathConstrainedRetriever` and the
result into :class:`~langchain_core.documents.Document` objects; the method itself
(Eq. 1 reachability, Eq. 2 constrained top-k, section 3.4 hybrid score, section 3.5
fallback; Oladokun 2025) lives in the core and is not repeated here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

from kgpath.errors import ConfigError, NodeNotFoundError
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex
from kgpath.methods.pcr import PathConstrainedRetriever as CorePCR
from kgpath.methods.pcr import PCRConfig, PCRResult
from langchain_kgpath._convert import as_kgpath_embedder, pcr_result_to_documents

__all__ = ["PathConstrainedRetriever", "as_kgpath_embedder"]

#: PCRConfig fields that may be overridden through ``search_kwargs`` or per call.
_PCR_FIELDS = frozenset(f.name for f in dataclasses.fields(PCRConfig))
#: Keyword arguments ``BaseRetriever.invoke`` forwards that are not retrieval options.
_LANGCHAIN_CALL_KWARGS = frozenset({"verbose"})


class PathConstrainedRetriever(BaseRetriever):
    """LangChain retriever returning the top-``k`` graph nodes reachable from an anchor.

    Each document is one node: ``page_content`` is the node's searchable text (name and
    text), ``id`` the kgpath node id, and ``metadata`` the PCR trace - ``score`` (float),
    ``hops``, ``path`` (node ids from the anchor), ``path_text``, ``path_edges``,
    ``anchor``, ``anchor_name``, ``anchor_resolution``, ``fallback_used``,
    ``reachable_count``, ``mode``, ``type``, ``provenance`` (see
    :func:`langchain_kgpath._convert.pcr_hit_to_document`).

    Per-call options (keyword arguments of ``invoke``/``ainvoke``/``batch``, or
    ``.bind(...)``): ``k``, ``anchor``, ``anchor_name`` and any
    :class:`~kgpath.methods.pcr.PCRConfig` field (``max_depth``, ``direction``, ``mode``,
    ``alpha``, ``fallback``, ``include_anchor``, ``unknown_anchor``). If a call gives
    ``anchor`` or ``anchor_name``, that pair replaces the retriever's anchor entirely
    (so ``anchor_name=None, anchor=None`` asks for the most query-similar node). ``k=None``
    means the retriever's own ``k``.

    Examples
    --------
    >>> from kgpath import HashingEmbedder, KnowledgeGraph
    >>> g = KnowledgeGraph.from_triples([("a", "to", "b"), ("b", "to", "c"), ("x", "to", "y")])
    >>> r = PathConstrainedRetriever.from_graph(g, HashingEmbedder(), anchor="a")
    >>> sorted(d.id for d in r.invoke("c"))
    ['a', 'b', 'c']
    >>> [d.id for d in r.invoke("c", k=1)]
    ['c']
    """

    pcr: CorePCR
    """The core kgpath retriever (graph index, embedder and base :class:`PCRConfig`)."""
    k: int = 10
    """Number of documents to return (PCR's ``k``, paper default 10)."""
    anchor: str | None = None
    """Anchor node id. ``None`` with no ``anchor_name`` = most query-similar node."""
    anchor_name: str | None = None
    """Anchor node name (used when ``anchor`` is ``None``)."""
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    """:class:`PCRConfig` overrides applied to every call (e.g. ``{"max_depth": 2}``)."""

    def __init__(self, **data: Any) -> None:
        # Validated here rather than in pydantic validators, so that errors keep their
        # kgpath type instead of being wrapped in a ValidationError (and True is not 1).
        k = data.get("k", 10)
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            raise ConfigError(f"k must be a positive int, got {k!r}")
        super().__init__(**data)
        if "k" in self.search_kwargs:
            raise ConfigError("pass k as the retriever's k field, not in search_kwargs")
        if "anchor" in self.search_kwargs or "anchor_name" in self.search_kwargs:
            raise ConfigError(
                "pass anchor/anchor_name as retriever fields, not in search_kwargs"
            )
        cfg = self._effective_config({**self.search_kwargs, "k": self.k})
        self._check_anchor(self.anchor, self.anchor_name, cfg)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_graph(
        cls,
        graph: KnowledgeGraph | GraphIndex,
        embedder: Any = None,
        *,
        k: int = 10,
        anchor: str | None = None,
        anchor_name: str | None = None,
        **options: Any,
    ) -> PathConstrainedRetriever:
        """Build the core PCR retriever over ``graph`` and wrap it.

        Parameters
        ----------
        graph
            A :class:`~kgpath.KnowledgeGraph`, or a prebuilt :class:`~kgpath.GraphIndex`
            (reuses its embeddings; then ``embedder`` must be ``None``).
        embedder
            ``None`` (offline ``LocalEmbedder``), a kgpath embedder, or a LangChain
            ``Embeddings`` (wrapped with :class:`kgpath.LangChainEmbedder`).
        k, anchor, anchor_name
            Retriever defaults, overridable per call.
        **options
            :class:`PCRConfig` fields (``max_depth``, ``direction``, ``mode``, ...) become
            the core retriever's config; other keywords (``tags``, ``metadata``,
            ``callbacks``) go to the LangChain retriever.
        """
        pcr_opts = {key: v for key, v in options.items() if key in _PCR_FIELDS}
        lc_opts = {key: v for key, v in options.items() if key not in _PCR_FIELDS}
        unknown = set(lc_opts) - set(cls.model_fields)
        if unknown:
            raise ConfigError(
                f"unknown option(s) {sorted(unknown)}; PCR options are {sorted(_PCR_FIELDS)}"
            )
        config = PCRConfig(k=k, **pcr_opts)
        if isinstance(graph, GraphIndex):
            if embedder is not None:
                raise ConfigError("pass embedder=None with a GraphIndex (it has its own)")
            core = CorePCR(graph, config=config)
        elif isinstance(graph, KnowledgeGraph):
            core = CorePCR(graph, embedder=as_kgpath_embedder(embedder), config=config)
        else:
            raise ConfigError(
                f"graph must be a KnowledgeGraph or GraphIndex, got {type(graph).__name__}"
            )
        return cls(pcr=core, k=k, anchor=anchor, anchor_name=anchor_name, **lc_opts)

    @property
    def graph(self) -> KnowledgeGraph:
        """The underlying knowledge graph."""
        return self.pcr.graph

    # ------------------------------------------------------------------ options
    def _effective_config(self, overrides: Mapping[str, Any]) -> PCRConfig:
        unknown = set(overrides) - _PCR_FIELDS
        if unknown:
            raise ConfigError(
                f"unknown PCR option(s) {sorted(unknown)}; valid: {sorted(_PCR_FIELDS)}"
            )
        return dataclasses.replace(self.pcr.config, **overrides)

    def _check_anchor(self, anchor: str | None, anchor_name: str | None, cfg: PCRConfig) -> None:
        """Fail early on an anchor the graph does not have (unless policy is "similar")."""
        if cfg.unknown_anchor != "error":
            return
        g = self.graph
        if anchor is not None and anchor not in g:
            raise NodeNotFoundError(f"unknown anchor id {anchor!r}", key=anchor)
        if anchor is None and anchor_name is not None and not g.find_by_name(anchor_name):
            raise NodeNotFoundError(f"no node named {anchor_name!r}", key=anchor_name)

    def _call_options(
        self, kwargs: Mapping[str, Any]
    ) -> tuple[str | None, str | None, dict[str, Any]]:
        """Merge per-call kwargs over the retriever's fields.

        Returns ``(anchor, anchor_name, PCRConfig overrides)``; raises
        :class:`ConfigError` naming unknown options and invalid values.
        """
        kw = {key: v for key, v in kwargs.items() if key not in _LANGCHAIN_CALL_KWARGS}
        if "anchor" in kw or "anchor_name" in kw:
            anchor, anchor_name = kw.pop("anchor", None), kw.pop("anchor_name", None)
        else:
            anchor, anchor_name = self.anchor, self.anchor_name
        k = kw.pop("k", None)
        overrides = {**self.search_kwargs, **kw, "k": self.k if k is None else k}
        self._effective_config(overrides)  # validates names and values (ConfigError)
        return anchor, anchor_name, overrides

    # ------------------------------------------------------------------ retrieval
    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        **kwargs: Any,
    ) -> list[Document]:
        """Run core PCR synchronously; ``kwargs`` are the per-call options."""
        anchor, anchor_name, overrides = self._call_options(kwargs)
        result = self.pcr.retrieve(query, anchor=anchor, anchor_name=anchor_name, **overrides)
        return self._to_documents(result)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        **kwargs: Any,
    ) -> list[Document]:
        """Run core PCR with the embedder's async API (``PathConstrainedRetriever.aretrieve``)."""
        anchor, anchor_name, overrides = self._call_options(kwargs)
        result = await self.pcr.aretrieve(
            query, anchor=anchor, anchor_name=anchor_name, **overrides
        )
        return self._to_documents(result)

    def _to_documents(self, result: PCRResult) -> list[Document]:
        return pcr_result_to_documents(result, self.graph)
