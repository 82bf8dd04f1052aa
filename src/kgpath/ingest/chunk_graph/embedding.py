"""Node vectors of the chunk graph: every node's text embedded, sentences once, or late.

``embedding="nodes"`` (default): the article embeds every node's own text: each document,
each 3-sentence window, each sentence and each theme. On HotpotQA-100 (994 passages) that
is about 10.7 texts per passage, and every sentence is embedded four or five times: alone,
in up to three windows, and in its document. Identical texts are embedded once.

Two documented deviations from the article embed each distinct sentence text once
(``"<title>. <sentence>"`` with ``title_prefix``) and derive the rest:

* ``embedding="derived_windows"``: documents, sentences and themes are embedded; a
  window's vector is the normalised sum (equivalently mean) of its sentences' vectors.
* ``embedding="sentences"``: sentences and themes only; a document's vector is the
  normalised sum of all its sentences' vectors too.

Measured on HotpotQA-100 (``benchmarks/traversal_embedding_modes.py``, all 100 questions,
passage R@2/R@5; ``nodes`` = the README table; loaded 2-core machine for the build times,
``benchmarks/bench_index.py --limit 100``):

=====================  ===========  ===========  ===========  ===========  ===========
mode                   BM25         dense        basic_retr.  PCR          mention_exp.
=====================  ===========  ===========  ===========  ===========  ===========
``nodes``              60.5 / 76.5  70.5 / 86.5  70.0 / 85.5  68.5 / 86.5  86.0 / 97.5
``derived_windows``    60.5 / 76.5  71.0 / 87.0  70.0 / 84.0  69.0 / 83.5  86.0 / 97.5
``sentences``          60.5 / 76.5  69.0 / 83.0  70.0 / 84.0  69.0 / 83.5  85.0 / 95.5
=====================  ===========  ===========  ===========  ===========  ===========

Cold build over all 994 passages divided by embedding each passage once (same run, idle
machine, ``benchmarks/bench_index.py --skip-kg --modes derived_windows,sentences``):
``derived_windows`` 2.49 (213.4 s / 85.6 s), ``sentences`` 1.49 (127.5 s); ``nodes`` about
5.2 (973 s / 188 s, issue 14). Documents and sentences embedded exactly therefore cost
about 2.5x on their own, so a build within 1.5x must derive one of them.

Why derived windows cost the walks (``benchmarks/chunk_graph_derivations.py``): walks
follow the cross-document similarity edges, and edges computed from derived windows keep
45 % of the exact graph's (derived windows are closer to each other: mean pairwise cosine
0.81 against 0.75, so hubs form). Computing only the edges from exact window vectors
brings ``query_traversal`` back from -9 to -1 R@5; corpus centring, a ridge map fitted on
5 % of the windows embedded exactly, and mixing in the document's mean do not (-8 to -11).
Windows are what PCR (all node types compete) and ``basic_retrieval`` rank, hence their
R@5 loss; the document vector is what dense and ``mention_expansion`` rank (sum of
sentences -3/-5 R@5 on the two halves, lead-weighted sum -3/-3). Neither derived mode
keeps every row within one point, so ``"nodes"`` stays the default.

``embedding="late"`` (:mod:`kgpath.ingest.chunk_graph.late`, late chunking): every
document read once by the encoder, windows and sentences pooled from its token states,
themes embedded as texts. Ratio 1.06 on all 994 passages (97.9 s / 92.1 s, same run,
idle machine; 1.17 loaded); dense, BM25, PCR R@5 and ``mention_expansion`` within one point, but the
rows that rank windows or walk sentences lose up to 6 points of R@5 (``basic_retrieval``
85.5 -> 80.0), so it is an option too.

:class:`CachedEmbedder` lives in :mod:`kgpath.embed_cache`; it is re-exported here, where
it was first defined.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kgpath.embed_cache import CachedEmbedder
from kgpath.embeddings import normalize_rows
from kgpath.graph.model import Node
from kgpath.ingest.documents import SourceDocument

__all__ = ["CachedEmbedder", "EMBEDDING_MODES", "SentencePlan", "sentence_text"]

#: Accepted values of ``ChunkGraphConfig.embedding``.
EMBEDDING_MODES = ("nodes", "late", "derived_windows", "sentences")


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
