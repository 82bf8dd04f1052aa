"""The default Eq. 6 / Eq. 12 scorer without re-embedding what is already embedded.

With no reranker given, C2RAG scores with :class:`~kgpath.rerank.EmbeddingReranker`: the
cosine of ``embed_queries([q])`` to ``embed_passages(texts)``. Textual recovery (Eq. 12)
reranks graph passages, whose ``embed_passages`` vectors the shared passage cache
(:mod:`kgpath.index.passage_vectors`) already holds, and Eq. 6 reranks triple texts
``Lin(c)`` that recur across questions. Re-embedding them was ~95 % of a question's time
on a 1,047-passage graph (issue 14). :class:`MemoScorer` computes the same scores (same
embedder, same calls per text) from those vectors and a bounded memo of the triple
texts, embedding only texts it has never seen, in one call per request.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from kgpath.embeddings import Embedder
from kgpath.methods.c2rag.recovery import PassageIndex

__all__ = ["MemoScorer", "passage_rows"]

MEMO_LIMIT = 50_000
"""Triple-text vectors kept per retriever (cleared when full)."""


class MemoScorer:
    """``EmbeddingReranker.score`` over vectors embedded once per text."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._memo: dict[str, np.ndarray] = {}
        self.queries: dict[str, np.ndarray] = {}
        """Query texts embedded ahead (:meth:`remember_queries`), by text."""
        self._lock = threading.Lock()

    def remember_queries(self, texts: Sequence[str], vecs: np.ndarray) -> None:
        """Keep ``embed_queries`` vectors of ``texts`` (bounded like the passage memo)."""
        with self._lock:
            if len(self.queries) + len(texts) > MEMO_LIMIT:
                self.queries.clear()
            self.queries.update(zip(texts, np.asarray(vecs, dtype=np.float32), strict=True))

    def remember_passages(self, texts: Sequence[str], vecs: np.ndarray) -> None:
        """Keep ``embed_passages`` vectors of ``texts`` (a store's stored passage vectors)."""
        with self._lock:
            if len(self._memo) + len(texts) > MEMO_LIMIT:
                self._memo.clear()
            self._memo.update(zip(texts, np.asarray(vecs, dtype=np.float32), strict=True))

    def query_vector(self, query: str) -> np.ndarray | None:
        """The remembered ``embed_queries`` vector of ``query``, if any."""
        with self._lock:
            return self.queries.get(query)

    def _known(self, texts: Sequence[str], passages: PassageIndex | None
               ) -> tuple[dict[str, np.ndarray], list[str]]:
        """Vectors already at hand, and the distinct texts still to embed."""
        rows = passage_rows(passages)
        known: dict[str, np.ndarray] = {}
        with self._lock:
            for t in texts:
                v = self._memo.get(t)
                if v is None and rows is not None and (r := rows.get(t)) is not None:
                    v = passages.index.vectors[r]  # type: ignore[union-attr]
                if v is not None:
                    known[t] = v
        return known, list(dict.fromkeys(t for t in texts if t not in known))

    def _scores(self, q: np.ndarray, texts: Sequence[str], known: dict[str, np.ndarray],
                missing: list[str], new: np.ndarray | None) -> np.ndarray:
        if missing:
            vecs = np.asarray(new, dtype=np.float32)
            known.update(zip(missing, vecs, strict=True))
            with self._lock:
                if len(self._memo) + len(missing) > MEMO_LIMIT:
                    self._memo.clear()
                self._memo.update(zip(missing, vecs, strict=True))
        mat = np.stack([known[t] for t in texts]).astype(np.float32, copy=False)
        return (mat @ np.asarray(q, dtype=np.float32).reshape(-1)).astype(np.float32)

    def score(self, query: str, texts: Sequence[str], passages: PassageIndex | None
              ) -> np.ndarray:
        """Cosine of ``query`` to each text (as ``EmbeddingReranker.score``)."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        q = self.query_vector(query)
        if q is None:
            q = self.embedder.embed_queries([query])[0]
        known, missing = self._known(texts, passages)
        new = self.embedder.embed_passages(missing) if missing else None
        return self._scores(q, texts, known, missing, new)

    async def ascore(self, query: str, texts: Sequence[str], passages: PassageIndex | None
                     ) -> np.ndarray:
        """Async :meth:`score`."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        q = self.query_vector(query)
        if q is None:
            q = (await self.embedder.aembed_queries([query]))[0]
        known, missing = self._known(texts, passages)
        new = await self.embedder.aembed_passages(missing) if missing else None
        return self._scores(q, texts, known, missing, new)


def passage_rows(passages: PassageIndex | None) -> dict[str, int] | None:
    """Passage text -> row of the shared passage index (built once per index)."""
    if passages is None:
        return None
    if passages.text_rows is None:
        rows: dict[str, int] = {}
        for r, t in enumerate(passages.texts):
            rows.setdefault(t, r)
        passages.text_rows = rows
    return passages.text_rows
