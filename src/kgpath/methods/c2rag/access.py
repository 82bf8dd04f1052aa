"""Where C2RAG reads its graph: the seam between the pipeline and the graph's storage.

The pipeline (:class:`~kgpath.methods.c2rag.retriever.ConstraintCheckedRetriever`) reads
the graph only through a :class:`GraphAccess`: the fallback plan's entity names (3.2), the
anchors of a surface form (Eq. 2-3), the one-hop pool of a set of anchors (Eq. 4), node
names (Eq. 15), the relation vocabulary (Eq. 5's ``v_r``), the passages of textual
recovery (Eq. 11) and the graph a result resolves names and passages with (Eq. 16).
Everything else (alignment, rerank, sufficiency, bindings, blocks) is the same code
whatever the storage. Access methods are generators yielding
:class:`~kgpath.methods.c2rag.drive.Req`, so a store's blocking queries
(``Req("store", (function, args))``) run in a worker thread under the async driver.

:class:`MemoryAccess` reads a :class:`~kgpath.KnowledgeGraph` in this process;
:mod:`kgpath.methods.c2rag.cypher` reads a Cypher database.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, MutableMapping, Sequence
from typing import Any, TypeVar

import numpy as np

from kgpath.embeddings import Embedder
from kgpath.graph import KnowledgeGraph
from kgpath.index.passage_vectors import passage_cache
from kgpath.methods.c2rag.alignment import Anchor, Candidate, candidate_pool, match_anchors
from kgpath.methods.c2rag.config import C2RAGConfig
from kgpath.methods.c2rag.drive import Req
from kgpath.methods.c2rag.fallback import fallback_plan
from kgpath.methods.c2rag.hops import HopTrace
from kgpath.methods.c2rag.plan import Plan, tokens
from kgpath.methods.c2rag.recovery import (
    PassageIndex,
    TextualRecovery,
    build_passage_index,
    textual_recovery,
)

__all__ = ["GraphAccess", "MemoryAccess", "now", "store_call"]

T = TypeVar("T")


def now(value: T) -> Generator[Req, Any, T]:
    """A generator that yields nothing and returns ``value`` (an access step without I/O)."""
    return value
    yield  # pragma: no cover - makes this function a generator


def store_call(fn: Callable[..., T], *args: Any) -> Generator[Req, Any, T]:
    """One blocking store call, as a ``Req("store", ...)`` the driver serves."""
    out = yield Req("store", (fn, args))
    return out  # type: ignore[no-any-return]


class GraphAccess(ABC):
    """What the C2RAG pipeline reads from a graph (see the module docstring).

    :meth:`bind` returns the view one retrieval uses (a store keeps its per-question
    caches there).
    """

    whole_graph: bool = True
    """Whether :meth:`evidence_graph` is the whole graph (the propagation re-rank needs it)."""
    rel_cache: MutableMapping[str, np.ndarray]
    """Eq. 5's ``v_r`` by relation string (``embed_queries`` vectors)."""

    def bind(self) -> GraphAccess:
        """The view of one retrieval; default ``self``."""
        return self

    def memo_passages(self) -> PassageIndex | None:
        """Passage vectors the default scorer may read (Eq. 12); default none."""
        return None

    def prepare(self, plan: Plan) -> Generator[Req, Any, None]:
        """Read ahead what the plan's ``P_1`` hops will read; default nothing."""
        return now(None)

    def call_trace(self) -> dict[str, Any]:
        """Trace entries of the bound retrieval (a store's round trips); default none."""
        return {}

    @abstractmethod
    def fallback_plan(self, query: str, note: str) -> Generator[Req, Any, Plan]:
        """The LLM-free plan (:func:`~kgpath.methods.c2rag.fallback.fallback_plan`)."""

    @abstractmethod
    def anchors(self, surface: str, top_e: int) -> Generator[Req, Any, list[Anchor]]:
        """Eq. 3: the top-``E`` nodes by token coverage of ``surface``."""

    @abstractmethod
    def pool(self, anchor_ids: Sequence[str]) -> Generator[Req, Any, list[Candidate]]:
        """Eq. 4: the one-hop pool of the anchors (:func:`candidate_pool`'s order)."""

    @abstractmethod
    def names(self, ids: Sequence[str]) -> Generator[Req, Any, dict[str, str]]:
        """Node id -> name of the given nodes."""

    @abstractmethod
    def graph_relations(self) -> Generator[Req, Any, None]:
        """Put every relation string of the graph in :attr:`rel_cache` (embedded once)."""

    @abstractmethod
    def has_passages(self) -> Generator[Req, Any, bool]:
        """Whether textual recovery has passages to search."""

    @abstractmethod
    def recover(
        self, query: str, lin: str, anchors: Sequence[Anchor], cfg: C2RAGConfig
    ) -> Generator[Req, Any, TextualRecovery]:
        """Eq. 11-12 for ``Lin(τ_u)`` (:func:`~kgpath.methods.c2rag.recovery.textual_recovery`)."""

    @abstractmethod
    def evidence_graph(self, hops: Sequence[HopTrace]) -> Generator[Req, Any, KnowledgeGraph]:
        """A graph holding the nodes and cited passages of ``hops`` (for Eq. 16's blocks)."""


class MemoryAccess(GraphAccess):
    """:class:`GraphAccess` over a :class:`~kgpath.KnowledgeGraph` in this process.

    Eq. 5's relation vectors and Eq. 11's passage vectors are the ones shared by every
    retriever of ``(graph, embedder)`` (:func:`~kgpath.index.passage_vectors.passage_cache`);
    the anchor token index is rebuilt when the graph's version changes.
    """

    def __init__(self, graph: KnowledgeGraph, embedder: Embedder) -> None:
        self.graph = graph
        self.embedder = embedder
        # Eq. 5's v_r: shared by every retriever of this graph and model, saved with the index
        self.rel_cache = passage_cache(graph, embedder).relations
        self._rel_version: int | None = None
        self._tok_index: tuple[int, dict[str, list[int]]] | None = None
        self._passages: PassageIndex | None = None

    def memo_passages(self) -> PassageIndex | None:
        """The shared passage index, once built."""
        return self._passages

    def fallback_plan(self, query: str, note: str) -> Generator[Req, Any, Plan]:
        """:func:`~kgpath.methods.c2rag.fallback.fallback_plan` on the graph."""
        return now(fallback_plan(query, self.graph, note=note))

    def match(self, surface: str, top_e: int) -> list[Anchor]:
        """Eq. 3 through a token index of the node names (built once per graph version)."""
        g = self.graph
        if self._tok_index is None or self._tok_index[0] != g.version:
            idx: dict[str, list[int]] = {}
            for i, n in enumerate(g.nodes):
                for t in set(tokens(n.name)):
                    idx.setdefault(t, []).append(i)
            self._tok_index = (g.version, idx)
        return match_anchors(surface, g, top_e, token_index=self._tok_index[1])

    def anchors(self, surface: str, top_e: int) -> Generator[Req, Any, list[Anchor]]:
        """:meth:`match`."""
        return now(self.match(surface, top_e))

    def pool(self, anchor_ids: Sequence[str]) -> Generator[Req, Any, list[Candidate]]:
        """:func:`~kgpath.methods.c2rag.alignment.candidate_pool`."""
        return now(candidate_pool(self.graph, list(anchor_ids)))

    def names(self, ids: Sequence[str]) -> Generator[Req, Any, dict[str, str]]:
        """Names from the graph."""
        return now({i: self.graph.node(i).name for i in ids})

    def graph_relations(self) -> Generator[Req, Any, None]:
        """Embed every distinct relation string of the graph once per graph version.

        Eq. 5's ``v_r`` for any pool, in one request (``relation_vectors="graph"``).
        """
        if self._rel_version == self.graph.version:
            return
        version = self.graph.version
        rels = sorted({e.relation for e in self.graph.edges if e.relation})
        if any(r not in self.rel_cache for r in rels):  # once for concurrent callers
            yield Req("query_vectors", (self.graph, self.embedder, "relations", rels))
        self._rel_version = version

    def passage_index(self) -> Generator[Req, Any, PassageIndex | None]:
        """The graph's passages embedded for Eq. 11 (shared, rebuilt on a new version)."""
        if self._passages is not None and self._passages.version == self.graph.version:
            return self._passages
        pidx = yield from build_passage_index(self.graph, self.embedder)
        if pidx is not None:
            self._passages = pidx
        return pidx

    def has_passages(self) -> Generator[Req, Any, bool]:
        """Whether the graph has passages (builds the passage index)."""
        pidx = yield from self.passage_index()
        return pidx is not None and bool(pidx.ids)

    def recover(
        self, query: str, lin: str, anchors: Sequence[Anchor], cfg: C2RAGConfig
    ) -> Generator[Req, Any, TextualRecovery]:
        """:func:`~kgpath.methods.c2rag.recovery.textual_recovery` over the graph."""
        pidx = yield from self.passage_index()
        return (yield from textual_recovery(self.graph, pidx, query, lin, anchors, cfg))

    def evidence_graph(self, hops: Sequence[HopTrace]) -> Generator[Req, Any, KnowledgeGraph]:
        """The graph itself."""
        return now(self.graph)
