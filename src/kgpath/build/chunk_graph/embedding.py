"""Node vectors of the chunk graph: every node's text embedded, or each sentence once.

The article embeds every node's own text: each document, each 3-sentence window, each
sentence and each theme (``embedding="nodes"``). On HotpotQA-100 (994 passages) that is
about 10.7 texts per passage, and every sentence is embedded four times: alone, in up to
three windows, and in its document.

``embedding="sentences"`` (kgpath's default; a documented deviation from the article)
embeds each distinct sentence text once (``"<title>. <sentence>"`` with ``title_prefix``)
and each distinct theme once, and derives the rest:

* window vector = normalised sum (equivalently mean) of its sentences' vectors;
* document vector = normalised sum of all its sentences' vectors.

That embeds about 4.2 short texts per passage, whose total length is about that of the
corpus, so a cold build costs about as much as embedding every passage once.
Measured effect on ``kgpath eval traversal`` (HotpotQA-100, bundled embedder): see
:data:`MEASURED` and ``benchmarks/README.md``.

:class:`CachedEmbedder` lives in :mod:`kgpath.embed_cache`; it is re-exported here, where
it was first defined.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kgpath.build.chunk_graph.chunking import SourceDocument
from kgpath.embed_cache import CachedEmbedder
from kgpath.embeddings import normalize_rows
from kgpath.graph.model import Node

__all__ = ["CachedEmbedder", "EMBEDDING_MODES", "MEASURED", "SentencePlan"]

#: Accepted values of ``ChunkGraphConfig.embedding``.
EMBEDDING_MODES = ("sentences", "derived_windows", "nodes")

#: Filled in from the measurement in benchmarks/README.md (passage R@2/R@5 per row).
MEASURED = "see benchmarks/README.md, section 'chunk graph: embed each sentence once'"


def sentence_text(title: str, sentence: str, title_prefix: bool) -> str:
    """The text a sentence node is embedded as (its ``search_text`` with ``title_prefix``)."""
    if title_prefix:
        return Node(id="", name=title, text=sentence).search_text
    return sentence or title


class SentencePlan:
    """The distinct texts to embed in ``"sentences"`` mode and how to assemble node vectors.

    ``texts`` holds every distinct sentence text (in document order) followed by every
    distinct extra text (themes); ``vectors(embedded, ...)`` turns the embedded rows into
    the vectors of documents, windows, sentences and extras.
    """

    def __init__(
        self, docs: Sequence[SourceDocument], extra: Sequence[str], *, title_prefix: bool
    ) -> None:
        index: dict[str, int] = {}
        self.sentence_rows = np.asarray(
            [index.setdefault(sentence_text(d.title, s, title_prefix), len(index))
             for d in docs for s in d.sentences],
            dtype=np.int64,
        )
        self.extra_rows = {t: index.setdefault(t, len(index)) for t in extra}
        self.texts = list(index)
        sizes = [len(d.sentences) for d in docs]
        self.doc_start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    def sums(self, embedded: np.ndarray) -> np.ndarray:
        """Prefix sums over the corpus's sentence vectors (row 0 is zero)."""
        sent = np.asarray(embedded, dtype=np.float64)[self.sentence_rows]
        out = np.zeros((sent.shape[0] + 1, sent.shape[1]), dtype=np.float64)
        np.cumsum(sent, axis=0, out=out[1:])
        return out

    def span_vectors(self, sums: np.ndarray, spans: np.ndarray) -> np.ndarray:
        """Unit vectors of the sentence spans ``[start, end)`` (global sentence indices)."""
        return normalize_rows((sums[spans[:, 1]] - sums[spans[:, 0]]).astype(np.float32))
