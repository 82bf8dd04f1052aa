"""GraphIndex: a KnowledgeGraph plus the embedder and search structures over its nodes.

Every method (PCR, PathRAG, C2RAG, ...) takes a ``GraphIndex`` so the node embeddings,
the FAISS index and the BM25 index are built once and shared.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from kgpath.embeddings import Embedder, default_embedder
from kgpath.errors import EmbeddingError, EmptyGraphError, QueryError
from kgpath.graph import KnowledgeGraph
from kgpath.index.bm25 import BM25Index
from kgpath.index.hybrid import hybrid_scores
from kgpath.index.passage_vectors import PassageVectors, passage_vectors
from kgpath.index.vector import VectorIndex, top_k

__all__ = ["GraphIndex", "check_query"]

logger = logging.getLogger(__name__)


def check_query(query: object) -> str:
    """Return the stripped query or raise :class:`QueryError`."""
    if not isinstance(query, str):
        raise QueryError(f"query must be a string, got {type(query).__name__}: {query!r}")
    q = query.strip()
    if not q:
        raise QueryError(f"query is empty: {query!r}")
    return q


class GraphIndex:
    """Node-level vector and BM25 search over a :class:`KnowledgeGraph`.

    Parameters
    ----------
    graph
        The graph. Nodes without stored embeddings are embedded (``embed_passages`` over
        :attr:`Node.search_text`) on first use.
    embedder
        Any :class:`~kgpath.embeddings.Embedder`; defaults to the bundled offline model.
    bm25_k1, bm25_b
        BM25 parameters (paper defaults 1.5 / 0.75).
    """

    def __init__(
        self,
        graph: KnowledgeGraph,
        embedder: Embedder | None = None,
        *,
        bm25_k1: float = 1.5,
        bm25_b: float = 0.75,
    ) -> None:
        self.graph = graph
        self.embedder = embedder if embedder is not None else default_embedder()
        self.bm25_k1, self.bm25_b = bm25_k1, bm25_b
        self._vec: VectorIndex | None = None
        self._bm25: BM25Index | None = None
        self._built_version = -1

    # ------------------------------------------------------------------ building
    def _stale(self) -> bool:
        if self._built_version == self.graph.version and self._vec is not None:
            return False
        if len(self.graph) == 0:
            raise EmptyGraphError("cannot search an empty graph")
        return True

    def _store(self, missing: list[int], vecs: np.ndarray) -> None:
        g = self.graph
        if missing:
            if g.embedding_dim is not None and vecs.shape[1] != g.embedding_dim:
                raise EmbeddingError(
                    f"embedder dimension {vecs.shape[1]} does not match the graph's stored "
                    f"embeddings ({g.embedding_dim})"
                )
            g.set_embeddings({g.node_at(i).id: v for i, v in zip(missing, vecs)})
        self._vec = VectorIndex(g.embeddings)
        self._bm25 = None
        self._built_version = g.version

    def _ensure(self) -> None:
        if not self._stale():
            return
        missing = self.graph.missing_embeddings()
        texts = [self.graph.node_at(i).search_text for i in missing]
        logger.info("indexing %r: embedding %d node(s)", self.graph, len(missing))
        self._store(missing, self.embedder.embed_passages(texts) if missing else np.zeros(0))

    async def _aensure(self) -> None:
        if not self._stale():
            return
        missing = self.graph.missing_embeddings()
        texts = [self.graph.node_at(i).search_text for i in missing]
        logger.info("indexing %r: embedding %d node(s) (async)", self.graph, len(missing))
        vecs = await self.embedder.aembed_passages(texts) if missing else np.zeros(0)
        self._store(missing, vecs)

    def build(self) -> GraphIndex:
        """Embed missing nodes and build the vector index now (otherwise lazy)."""
        self._ensure()
        return self

    async def abuild(self) -> GraphIndex:
        """Async :meth:`build`: node embeddings awaited on the embedder's async API."""
        await self._aensure()
        return self

    @property
    def vector_index(self) -> VectorIndex:
        """The FAISS index over node embeddings."""
        self._ensure()
        assert self._vec is not None
        return self._vec

    @property
    def bm25(self) -> BM25Index:
        """The BM25 index over node search texts (built on first use)."""
        self._ensure()
        if self._bm25 is None:
            self._bm25 = BM25Index(
                [n.search_text for n in self.graph.nodes], k1=self.bm25_k1, b=self.bm25_b
            )
        return self._bm25

    def passage_vectors(self) -> PassageVectors | None:
        """The graph's passages embedded by this index's embedder, once per passage and
        shared with every retriever on the same (graph, embedder)
        (:mod:`kgpath.index.passage_vectors`); ``None`` when the graph has no passages."""
        return passage_vectors(self.graph, self.embedder)

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
        """
        if mode == "vector":
            return self.vector_index.scores(query_vec, candidates)
        if mode == "bm25":
            return self.bm25.scores(query, candidates)
        if mode == "hybrid":
            cos = self.vector_index.scores(query_vec, candidates)
            return hybrid_scores(cos, self.bm25.scores(query, candidates), alpha, norm=norm)
        from kgpath.errors import ConfigError

        raise ConfigError(f"mode must be 'vector', 'bm25' or 'hybrid', got {mode!r}")

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
        from kgpath.errors import ConfigError

        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k <= 0:
            raise ConfigError(f"k must be a positive int, got {k!r}")
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
