"""Semantic chunk graph: documents -> sentences -> sliding-window chunks -> similarity edges.

Reference: "Novel Knowledge Graph Traversal Algorithms: Enhancing Accuracy in Semantic
Retrieval-Augmented Generation Systems" (shared/papers/kg-traversal-algorithms-article.txt),
section "Knowledge Graph Architecture". The article has no numbered equations; the steps
below are named after its three construction steps.

Step 1, chunking with overlap (:func:`~kgpath.ingest.chunking.split_sentences`,
:func:`~kgpath.ingest.chunking.sliding_windows`, in the one chunker of :mod:`kgpath.ingest`):
    every document is split into sentences and covered by windows of ``window = 3``
    consecutive sentences that advance by ``stride = 1``.
Step 2, similarity edges (:func:`similarity_edges`):
    cosine similarity between chunk embeddings; for each chunk only the ``top_k_intra = 10``
    most similar chunks of the *same* document and the ``top_x_inter`` most similar chunks
    of *other* documents are kept as edges. The full ``n x n`` matrix is never held: rows
    are processed in blocks of ``B = block_elements // n`` rows, so peak extra memory is
    ``O(block_elements + n*(k+x))`` instead of ``O(n^2)``.
Step 3, hierarchical attributes (:class:`KeywordThemes`, :class:`LLMThemes`):
    each document gets ``num_themes = 5`` themes (from an LLM when one is configured,
    otherwise TF-IDF keyphrases: the documented, weaker offline path), inherited by its
    chunks and sentences; sentences are children of the chunks that contain them.

The output is a plain :class:`~kgpath.graph.KnowledgeGraph` with node types
``document``/``chunk``/``sentence``/``theme`` and one passage per document, so PCR,
PathRAG and every other method in kgpath run on it unchanged.

Node ids: ``doc:<doc_id>``, ``chunk:<doc_id>:<i>``, ``sent:<doc_id>:<i>``, ``theme:<phrase>``.
Edge relations (directed; similarity edges point from a chunk to one of its top lists):

========================  ==========================  ==============
relation                  source -> target            type
========================  ==========================  ==============
``has_chunk``             document -> chunk           ``structure``
``has_sentence``          chunk -> sentence           ``structure``
``similar_intra``         chunk -> chunk (same doc)   ``similarity``
``similar_inter``         chunk -> chunk (other doc)  ``similarity``
``has_theme``             document -> theme           ``theme``
``theme_of``              theme -> document           ``theme``
``mentions``              sentence -> document        ``mentions``
========================  ==========================  ==============

Mention layer (kgpath extension, not in the article; :func:`add_mention_edges`): a sentence
(a chunk when the graph has no sentence nodes) gets a ``mentions`` edge to every *other*
document whose normalised title (:func:`normalize_title`: casefold, trailing parenthetical
such as ``"(1945 film)"`` removed, whole words only) occurs in its text. Encyclopedic
corpora link their articles by naming them, so these edges recover the hyperlink structure
that multi-hop questions (HotpotQA bridge questions) follow. Matching is a single
left-to-right pass over each text's tokens with one dictionary lookup per distinct title
length (:class:`TitleMatcher`), so building the layer costs ``O(tokens * L)`` time and
``O(title tokens + edges)`` memory (``L`` = distinct title lengths in tokens), never
``O(titles * texts)``.

Similarity edge weights are ``max(cos, 0)`` (graph weights are non-negative); the raw cosine
is kept in the edge metadata under ``"similarity"``.

Documents are read by the one coercer (:func:`kgpath.ingest.documents.coerce_documents`)
and split by the one chunker (:mod:`kgpath.ingest.chunking`); this package holds steps 1-3
from the windows on.

Package layout:

================  =====================================================================
module            contents
================  =====================================================================
``config``        :class:`ChunkGraphConfig`, the ``NODE_*``/``REL_*`` vocabulary
``similarity``    step 2: :func:`similarity_edges`
``themes``        step 3: :class:`ThemeExtractor`, :class:`KeywordThemes`, :class:`LLMThemes`
``embedding``     node vectors per ``ChunkGraphConfig.embedding`` (``"nodes"``, the
                  article; or sentences embedded once, windows/documents derived);
                  re-exports :class:`kgpath.embed_cache.CachedEmbedder`
``mentions``      the mention layer (kgpath extension): :class:`TitleMatcher`,
                  :func:`add_mention_edges`
``builder``       :class:`ChunkGraphBuilder`, :func:`build_chunk_graph`,
                  :func:`chunk_graph_from_documents` (what the adapters call), save/load
================  =====================================================================

This package imports nothing from :mod:`kgpath.index` or above (``ingest`` sits below them).
"""

from __future__ import annotations

from kgpath.ingest.chunk_graph.builder import (
    ChunkGraphBuilder,
    ChunkGraphStats,
    abuild_chunk_graph,
    build_chunk_graph,
    chunk_graph_from_documents,
    load_chunk_graph,
    save_chunk_graph,
)
from kgpath.ingest.chunk_graph.config import (
    EDGE_MENTIONS,
    NODE_CHUNK,
    NODE_DOCUMENT,
    NODE_SENTENCE,
    NODE_THEME,
    REL_HAS_CHUNK,
    REL_HAS_SENTENCE,
    REL_HAS_THEME,
    REL_MENTIONS,
    REL_SIMILAR_INTER,
    REL_SIMILAR_INTRA,
    REL_THEME_OF,
    ChunkGraphConfig,
)
from kgpath.ingest.chunk_graph.embedding import CachedEmbedder
from kgpath.ingest.chunk_graph.mentions import (
    MentionLayerStats,
    TitleMatcher,
    add_mention_edges,
    normalize_title,
    title_tokens,
)
from kgpath.ingest.chunk_graph.similarity import similarity_edges
from kgpath.ingest.chunk_graph.themes import KeywordThemes, LLMThemes, ThemeExtractor

__all__ = [
    "ChunkGraphConfig",
    "ChunkGraphBuilder",
    "ChunkGraphStats",
    "CachedEmbedder",
    "ThemeExtractor",
    "KeywordThemes",
    "LLMThemes",
    "build_chunk_graph",
    "abuild_chunk_graph",
    "chunk_graph_from_documents",
    "load_chunk_graph",
    "save_chunk_graph",
    "similarity_edges",
    "NODE_DOCUMENT",
    "NODE_CHUNK",
    "NODE_SENTENCE",
    "NODE_THEME",
    "REL_HAS_CHUNK",
    "REL_HAS_SENTENCE",
    "REL_SIMILAR_INTRA",
    "REL_SIMILAR_INTER",
    "REL_HAS_THEME",
    "REL_THEME_OF",
    "REL_MENTIONS",
    "EDGE_MENTIONS",
    "MentionLayerStats",
    "TitleMatcher",
    "normalize_title",
    "title_tokens",
    "add_mention_edges",
]
