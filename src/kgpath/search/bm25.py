r"""BM25 (Okapi, rank-bm25) that can score only a candidate set.

Tokenisation: lower-case ``\\w+`` tokens minus a short English stop-word list. The same
tokeniser is applied to documents and queries. Defaults ``k1 = 1.5``, ``b = 0.75`` (the PCR
paper's Appendix A.2).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from kgpath.errors import ConfigError

__all__ = ["BM25Index", "tokenize", "STOPWORDS"]

STOPWORDS = frozenset(
    """a an and are as at be by for from has have how in into is it its of on or that the
    their this to was were what when where which who whom why will with do does did can
    """.split()
)
_TOKEN = re.compile(r"\w+", re.UNICODE)


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens without stop words."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


class BM25Index:
    """Okapi BM25 over a fixed list of texts."""

    def __init__(self, texts: Sequence[str], *, k1: float = 1.5, b: float = 0.75) -> None:
        if k1 < 0:
            raise ConfigError(f"BM25 k1 must be >= 0, got {k1}")
        if not 0 <= b <= 1:
            raise ConfigError(f"BM25 b must be in [0, 1], got {b}")
        from rank_bm25 import BM25Okapi

        self.k1, self.b = k1, b
        self._n = len(texts)
        tokens = [tokenize(t) for t in texts]
        # rank-bm25 divides by the average length; an all-empty corpus would divide by 0
        self._bm25 = BM25Okapi([t or ["\x00"] for t in tokens], k1=k1, b=b) if texts else None

    def __len__(self) -> int:
        return self._n

    def scores(
        self, query: str, candidates: Sequence[int] | np.ndarray | None = None
    ) -> np.ndarray:
        """BM25 score of ``query`` for every text, or only for ``candidates`` (in order)."""
        if self._bm25 is None:
            return np.zeros(0 if candidates is None else len(candidates), dtype=np.float32)
        q = tokenize(query)
        if candidates is None:
            return np.asarray(self._bm25.get_scores(q), dtype=np.float32)
        cand = [int(c) for c in candidates]
        if not cand:
            return np.zeros(0, dtype=np.float32)
        return np.asarray(self._bm25.get_batch_scores(q, cand), dtype=np.float32)
