"""GraphIndex: a KnowledgeGraph plus the embedder and search structures over its nodes.

Every method (PCR, PathRAG, C2RAG, ...) takes a ``GraphIndex`` so the node embeddings,
the FAISS index and the BM25 index are built once and shared. Documents enter here too:
:meth:`GraphIndex.from_documents` builds the graph (:func:`kgpath.ingest.graph_from_documents`)
and its node vectors (:func:`kgpath.index.graph_vectors.embed_graph`) in one call, and
:meth:`GraphIndex.add_documents` extends it. :meth:`GraphIndex.save` / :meth:`GraphIndex.load`
keep and reopen it with every vector (:mod:`kgpath.index.persist`, no embedding on reopen);
:meth:`GraphIndex.refresh` and :meth:`GraphIndex.use_graph` embed only what a change added.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from kgpath._singleflight import SingleFlight
from kgpath.embeddings import (
    Embedder,
    _remember,
    _same_cheap,
    as_embedder,
    asame_embedder,
    default_embedder,
    embedder_record,
    same_embedder,
)
from kgpath.errors import ConfigError, EmbeddingError, EmptyGraphError, QueryError
from kgpath.graph import KnowledgeGraph
from kgpath.graph.model import short
from kgpath.index.documents import DocumentLifecycle
from kgpath.index.hybrid import hybrid_scores
from kgpath.index.passage_vectors import PassageVectors, apassage_vectors, passage_vectors
from kgpath.index.persist import DurableIndex
from kgpath.search.bm25 import BM25Index
from kgpath.search.vector import COMPACT_KINDS, CompactVectorIndex, VectorIndex, top_k

__all__ = ["GraphIndex", "check_candidates", "check_query"]

logger = logging.getLogger(__name__)


def check_query(query: object) -> str:
    """Return the stripped query or raise :class:`QueryError`."""
    if not isinstance(query, str):
        raise QueryError(f"query must be a string, got {type(query).__name__}: {short(query)}")
    q = query.strip()
    if not q:
        raise QueryError(f"query is empty: {query!r}")
    try:
        q.encode("utf-8")
    except UnicodeEncodeError:
        raise QueryError(f"query contains a lone surrogate: {short(query)}") from None
    return q


def check_candidates(candidates: object, n: int) -> np.ndarray:
    """Candidate node indices as int64, each in ``[0, n)``; else :class:`ConfigError`."""
    arr = np.asarray(candidates)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ConfigError(
            f"candidates must be a 1-D sequence of integer node indices, got dtype "
            f"{arr.dtype} shape {arr.shape}"
        )
    bad = arr[(arr < 0) | (arr >= n)]
    if bad.size:
        raise ConfigError(f"candidate index {int(bad[0])} is out of range [0, {n})")
    return arr.astype(np.int64)


def _remember_record(embedder: Any, record: dict[str, Any]) -> None:
    _remember(embedder, record["probe"], record["fingerprint"])


class GraphIndex(DocumentLifecycle, DurableIndex):
    """Node-level vector and BM25 search over a :class:`KnowledgeGraph`.

    Built over a graph (``GraphIndex(graph, embedder)``) or from raw documents
    (:meth:`from_documents`, :meth:`add_documents`; see
    :class:`~kgpath.index.documents.DocumentLifecycle`).

    Parameters
    ----------
    graph
        The graph. Nodes without stored embeddings are embedded (``embed_passages`` over
        :attr:`Node.search_text`) on first use, once even under concurrent callers. When
        the graph's vectors were made by another embedder (see
        :attr:`kgpath.graph.vectors.NodeVectors.owner`) this index re-embeds every node and
        keeps those vectors to itself; an edited node is re-embedded.
    embedder
        Any :class:`~kgpath.embeddings.Embedder` (a LlamaIndex or LangChain embedding model
        is wrapped; anything else raises :class:`ConfigError`, see
        :func:`~kgpath.embeddings.as_embedder`); defaults to the bundled offline model.
    bm25_k1, bm25_b
        BM25 parameters (paper defaults 1.5 / 0.75).
    vectors
        Node vector storage: ``"float32"`` (default; shares the graph's vectors, FAISS),
        or a compact store (:class:`~kgpath.search.vector.CompactVectorIndex`):
        ``"float16"`` (scores within 5e-4 of float32), ``"int8"`` (approximate) or
        ``"int8+float16"`` (int8 in memory, the top rows re-scored exactly from a
        float16 file read back row by row: float16's ranking at int8's resident memory). A
        compact index never writes vectors into the graph: it takes the graph's vectors
        when its embedder made them, embeds the other nodes itself in chunks of
        ``compact_chunk`` texts and keeps only the encoded rows, so no float32 matrix of
        the graph is kept alive by the index (don't store vectors on the graph to save
        that memory too).
    """

    def __init__(
        self,
        graph: KnowledgeGraph,
        embedder: Embedder | None = None,
        *,
        bm25_k1: float = 1.5,
        bm25_b: float = 0.75,
        vectors: str = "float32",
        compact_chunk: int = 8192,
    ) -> None:
        if vectors not in ("float32", *COMPACT_KINDS):
            raise ConfigError(
                f"vectors must be 'float32' or one of {COMPACT_KINDS}, got {short(vectors)}"
            )
        if not isinstance(graph, KnowledgeGraph):
            raise ConfigError(
                f"graph must be a KnowledgeGraph, got {type(graph).__name__}: {short(graph)}"
            )
        self.graph = graph
        self.embedder = as_embedder(embedder) if embedder is not None else default_embedder()
        self.bm25_k1, self.bm25_b = bm25_k1, bm25_b
        self.vectors = vectors
        self.compact_chunk = max(1, int(compact_chunk))
        self._vec: VectorIndex | CompactVectorIndex | None = None
        # compact mode: hash() of the text each stored row encodes (8 bytes a node, not a
        # str: at 10^6 nodes the texts would cost more than an int8 store's scales)
        self._chash = np.zeros(0, dtype=np.int64)
        self._bm25: BM25Index | None = None
        self._built_version = -1
        self._own: np.ndarray | None = None  # private vectors (another embedder's in graph)
        self._own_texts: list[str] = []
        self._row_ids: list[str] = []  # node ids of the own/compact rows at the last build
        self._flight = SingleFlight()  # building and BM25: once for concurrent callers
        self._note_cited()  # passage-mean graphs: which nodes hold means (see refresh)

    # ------------------------------------------------------------------ building
    # Vectors belong to their model. The graph stores one set of node vectors and records
    # which embedder made them (graph.vectors.owner). An index whose embedder
    # made them (or that finds none, or vectors the caller supplied without an owner)
    # shares them; an index with ANOTHER embedder embeds every node itself and keeps those
    # vectors private (logged once), so two retrievers never score with each other's
    # vectors. An edited node's vector is dropped by the graph and re-embedded here.
    #
    # Building is single-flight (kgpath._singleflight): N concurrent callers on a cold
    # index, threads or asyncio tasks, sync or async, embed each node once and the others
    # wait for that build (async ones without blocking their event loop).

    def _stale(self) -> bool:
        if self._built_version == self.graph.version and self._vec is not None:
            return False
        if len(self.graph) == 0:
            raise EmptyGraphError("cannot search an empty graph")
        return True

    def _plan(self, shared: bool) -> tuple[list[int], list[str]]:
        """Node indices (and their texts) this index must embed now."""
        g = self.graph
        if shared:
            missing = g.vectors.missing()
        else:
            own = self._own_texts
            missing = [i for i, n in enumerate(g.nodes)
                       if i >= len(own) or own[i] != n.search_text]
        return missing, [g.node_at(i).search_text for i in missing]

    def _use_own(self) -> None:
        if self._own is None:
            logger.warning(
                "%r: the graph's node vectors were made by %s, not by this index's %r; "
                "this index embeds the nodes itself and keeps its own vectors",
                self.graph, (self.graph.vectors.owner or {}).get("name"), self.embedder,
            )
            self._own = np.zeros((0, 0), dtype=np.float32)

    def _store(self, shared: bool, missing: list[int], texts: list[str],
               vecs: np.ndarray | None) -> None:
        g = self.graph
        if vecs is not None and len(missing):
            record = embedder_record(self.embedder, texts[0], vecs[0])
            _remember_record(self.embedder, record)
            if shared:
                dim = g.vectors.dim
                if dim is not None and vecs.shape[1] != dim:
                    raise EmbeddingError(
                        f"embedder dimension {vecs.shape[1]} does not match the graph's "
                        f"stored embeddings ({dim})"
                    )
                have = g.vectors.owner  # same model: keep its record (and node_vectors mode)
                g.vectors.set({g.node_at(i).id: v for i, v in zip(missing, vecs)},
                              owner=have if have and _same_cheap(self.embedder, have) else record)
            else:
                self._put_own(missing, texts, vecs)
        own = self._own
        assert shared or own is not None  # _put_own has just stored it
        self._vec = VectorIndex(g.vectors.matrix if shared or own is None else own)
        self._bm25 = None
        self._built_version = g.version
        self._row_ids = [] if own is None else [n.id for n in g.nodes]

    def _put_own(self, missing: list[int], texts: list[str], vecs: np.ndarray) -> None:
        n = len(self.graph)
        own = self._own if self._own is not None and self._own.size else None
        if own is None or own.shape[1] != vecs.shape[1]:
            own = np.zeros((0, vecs.shape[1]), dtype=np.float32)
        if own.shape[0] < n:
            own = np.vstack([own, np.zeros((n - own.shape[0], own.shape[1]), np.float32)])
        own[missing] = vecs
        self._own = own
        self._own_texts += [""] * (n - len(self._own_texts))
        for i, t in zip(missing, texts):
            self._own_texts[i] = t

    def _shared(self) -> bool | None:
        """True/False when decidable without embedding, None when a probe is needed."""
        owner = self.graph.vectors.owner
        if self._own is not None:
            return False
        if owner is None:
            return True
        return _same_cheap(self.embedder, owner)

    def _ensure(self) -> None:
        for _ in range(3):  # a graph changed during a build is built again (a few times)
            if not self._stale():
                return
            self._flight.do("build", self._build_if_stale)

    def _build_if_stale(self) -> None:
        if self._stale():
            self._build_sync()

    def _build_sync(self) -> None:
        self._realign()
        shared = self._shared()
        if shared is None:
            shared = same_embedder(self.embedder, self.graph.vectors.owner or {})
        if self.vectors != "float32":
            todo = self._compact_plan(shared)
            for rows, texts in self._compact_chunks(todo):
                self._compact_put(rows, texts, self.embedder.embed_passages(texts))
            self._compact_done()
            return
        if not shared:
            self._use_own()
        else:  # nodes citing passages get the passage mean a rebuild would give them
            self._refresh_means()
        missing, texts = self._plan(shared)
        logger.info("indexing %r: embedding %d node(s)", self.graph, len(missing))
        vecs = self.embedder.embed_passages(texts) if missing else None
        self._store(shared, missing, texts, vecs)

    # Compact mode (vectors="float16"|"int8"): rows live only in a CompactVectorIndex.
    def _compact_plan(self, shared: bool) -> np.ndarray:
        """Grow the store and return the node rows still to embed (new or edited nodes).

        The graph's vectors are copied in when this embedder made all of them.
        """
        g = self.graph
        n = len(g)
        nodes = g.nodes
        if isinstance(self._vec, CompactVectorIndex):
            self._vec.grow(n)
        else:
            self._vec = None
        if self._chash.size < n:  # hash("") == 0: a new row matches only an empty text
            self._chash = np.concatenate([self._chash, np.zeros(n - self._chash.size, np.int64)])
        now = np.fromiter((hash(nd.search_text) for nd in nodes), dtype=np.int64, count=n)
        stale = np.flatnonzero(now != self._chash[:n])
        del now
        if not (shared and stale.size and g.vectors.dim and not g.vectors.missing()):
            return stale
        emb = g.vectors.matrix  # the graph's own matrix, read in chunks (no copy kept)
        for a in range(0, len(stale), self.compact_chunk):
            rows = stale[a:a + self.compact_chunk]
            self._compact_put(rows, [nodes[i].search_text for i in rows], emb[rows])
        return stale[:0]

    def _compact_chunks(self, todo: np.ndarray) -> Any:
        if todo.size:
            logger.info("indexing %r: embedding %d node(s) into a %s store", self.graph,
                        len(todo), self.vectors)
        nodes = self.graph.nodes
        for a in range(0, len(todo), self.compact_chunk):
            rows = todo[a:a + self.compact_chunk]
            yield rows, [nodes[i].search_text for i in rows]

    def _compact_put(self, rows: Sequence[int] | np.ndarray, texts: list[str],
                     vecs: np.ndarray) -> None:
        vecs = np.asarray(vecs, dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape[0] != len(rows):
            raise EmbeddingError(
                f"embedder returned vectors of shape {vecs.shape} for {len(rows)} texts"
            )
        if self._vec is None:
            self._vec = CompactVectorIndex(kind=self.vectors, n=len(self.graph),
                                           dim=vecs.shape[1])
        store = self._vec
        assert isinstance(store, CompactVectorIndex)
        if vecs.shape[1] != store.dim:
            raise EmbeddingError(
                f"embedder dimension {vecs.shape[1]} does not match the index's {store.dim}"
            )
        if len(rows):
            _remember_record(self.embedder, embedder_record(self.embedder, texts[0], vecs[0]))
        store.put(rows, vecs)
        for i, t in zip(rows, texts):
            self._chash[int(i)] = hash(t)

    def _compact_done(self) -> None:
        self._bm25 = None
        self._built_version = self.graph.version
        self._row_ids = [n.id for n in self.graph.nodes]

    async def _aensure(self) -> None:
        for _ in range(3):
            if not self._stale():
                return
            await self._flight.ado("build", self._abuild_if_stale)

    async def _abuild_if_stale(self) -> None:
        if not self._stale():
            return
        self._realign()
        shared = self._shared()
        if shared is None:
            shared = await asame_embedder(self.embedder, self.graph.vectors.owner or {})
        if self.vectors != "float32":
            todo = self._compact_plan(shared)
            for rows, texts in self._compact_chunks(todo):
                self._compact_put(rows, texts, await self.embedder.aembed_passages(texts))
            self._compact_done()
            return
        if not shared:
            self._use_own()
        elif self._means_due():  # new passages through the async API first
            await self.apassage_vectors()
            self._refresh_means()
        missing, texts = self._plan(shared)
        logger.info("indexing %r: embedding %d node(s) (async)", self.graph, len(missing))
        vecs = await self.embedder.aembed_passages(texts) if missing else None
        self._store(shared, missing, texts, vecs)

    def build(self) -> GraphIndex:
        """Embed missing nodes and build the vector index now (otherwise lazy)."""
        self._ensure()
        return self

    async def abuild(self) -> GraphIndex:
        """Async :meth:`build`: node embeddings awaited on the embedder's async API."""
        await self._aensure()
        return self

    @property
    def vector_index(self) -> VectorIndex | CompactVectorIndex:
        """The index over node embeddings (FAISS float32, or the compact store)."""
        self._ensure()
        assert self._vec is not None
        return self._vec

    @property
    def bm25(self) -> BM25Index:
        """The BM25 index over node search texts (built on first use)."""
        self._ensure()
        bm25 = self._bm25
        while bm25 is None:
            bm25 = self._flight.do("bm25", self._build_bm25)
        return bm25

    def _build_bm25(self) -> BM25Index | None:
        if self._bm25 is None:
            self._bm25 = BM25Index([n.search_text for n in self.graph.nodes],
                                   k1=self.bm25_k1, b=self.bm25_b)
        return self._bm25

    def passage_vectors(self) -> PassageVectors | None:
        """The graph's passages embedded by this index's embedder, once per passage.

        Shared with every retriever of the same graph and model, whatever the embedder
        object (:mod:`kgpath.index.passage_vectors`, keyed by the embedder's
        fingerprint), and saved by :meth:`save`; ``None`` when the graph has no passages.
        """
        return passage_vectors(self.graph, self.embedder)

    async def apassage_vectors(self) -> PassageVectors | None:
        """Async :meth:`passage_vectors` (missing passages through ``aembed_passages``)."""
        return await apassage_vectors(self.graph, self.embedder)

    # ------------------------------------------------------------------ queries
    def embed_query(self, query: str) -> np.ndarray:
        """Embed one query and check it matches the index dimension."""
        q = self.embedder.embed_queries([check_query(query)])[0]
        if q.shape[0] != self.vector_index.dim:
            raise EmbeddingError(
                f"query embedding has dimension {q.shape[0]}, node embeddings have "
                f"{self.vector_index.dim}"
            )
        return q

    async def aembed_query(self, query: str) -> np.ndarray:
        """Async :meth:`embed_query` (also builds the index asynchronously if needed)."""
        await self._aensure()
        q = (await self.embedder.aembed_queries([check_query(query)]))[0]
        if q.shape[0] != self.vector_index.dim:
            raise EmbeddingError(
                f"query embedding has dimension {q.shape[0]}, node embeddings have "
                f"{self.vector_index.dim}"
            )
        return q

    def score_candidates(
        self,
        query: str,
        query_vec: np.ndarray,
        candidates: np.ndarray,
        *,
        mode: str = "vector",
        alpha: float = 0.7,
        norm: str = "max",
    ) -> np.ndarray:
        """Scores for ``candidates`` (node indices) by ``"vector"``, ``"bm25"`` or ``"hybrid"``.

        ``norm`` scales the hybrid BM25 term (:func:`~kgpath.index.hybrid.hybrid_scores`).
        Raises :class:`ConfigError` for an unknown mode or an index outside the graph.
        """
        if mode not in ("vector", "bm25", "hybrid"):
            raise ConfigError(f"mode must be 'vector', 'bm25' or 'hybrid', got {short(mode)}")
        candidates = check_candidates(candidates, len(self.graph))
        if mode == "vector":
            return self.vector_index.scores(query_vec, candidates)
        if mode == "bm25":
            return self.bm25.scores(query, candidates)
        cos = self.vector_index.scores(query_vec, candidates)
        return hybrid_scores(cos, self.bm25.scores(query, candidates), alpha, norm=norm)

    def search(
        self,
        query: str,
        k: int,
        *,
        candidates: Sequence[int] | np.ndarray | None = None,
        mode: str = "vector",
        alpha: float = 0.7,
        query_vec: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` node indices and scores, optionally restricted to ``candidates``."""
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k <= 0:
            raise ConfigError(f"k must be a positive int, got {short(k)}")
        if mode not in ("vector", "bm25", "hybrid"):
            raise ConfigError(f"mode must be 'vector', 'bm25' or 'hybrid', got {short(mode)}")
        if candidates is not None:
            candidates = check_candidates(candidates, len(self.graph))
        qv = self.embed_query(query) if query_vec is None and mode != "bm25" else query_vec
        if mode == "vector" and qv is not None:
            return self.vector_index.search(qv, k, candidates)
        cand = (
            np.arange(len(self.graph), dtype=np.int64)
            if candidates is None
            else np.unique(np.asarray(candidates, dtype=np.int64))
        )
        s = self.score_candidates(
            query, qv if qv is not None else np.zeros(0), cand, mode=mode, alpha=alpha
        )
        pos = top_k(s, min(int(k), cand.size))
        return cand[pos], s[pos]
