"""Construction parameters and the node/edge vocabulary of the semantic chunk graph.

Article section "Knowledge Graph Architecture": 3-sentence windows advancing by 1 (step 1),
the top 10 intra-document and a set number of inter-document similarity edges per chunk
(step 2), 5 themes per document (step 3).
"""

from __future__ import annotations

from dataclasses import dataclass

from kgpath.errors import ConfigError

__all__ = [
    "EDGE_MENTIONS",
    "NODE_CHUNK",
    "NODE_DOCUMENT",
    "NODE_SENTENCE",
    "NODE_THEME",
    "REL_HAS_CHUNK",
    "REL_HAS_SENTENCE",
    "REL_HAS_THEME",
    "REL_MENTIONS",
    "REL_SIMILAR_INTER",
    "REL_SIMILAR_INTRA",
    "REL_THEME_OF",
    "ChunkGraphConfig",
]

NODE_DOCUMENT = "document"
NODE_CHUNK = "chunk"
NODE_SENTENCE = "sentence"
NODE_THEME = "theme"
REL_HAS_CHUNK = "has_chunk"
REL_HAS_SENTENCE = "has_sentence"
REL_SIMILAR_INTRA = "similar_intra"
REL_SIMILAR_INTER = "similar_inter"
REL_HAS_THEME = "has_theme"
REL_THEME_OF = "theme_of"
REL_MENTIONS = "mentions"
#: Edge ``type`` of the mention layer.
EDGE_MENTIONS = "mentions"


# ============================================================================ config
@dataclass(frozen=True, kw_only=True)
class ChunkGraphConfig:
    """Construction parameters; defaults follow the article where it gives a number.

    Attributes
    ----------
    window
        Sentences per chunk (article: 3).
    stride
        Sentences the window advances by (article: 1).
    top_k_intra
        Similarity edges kept per chunk towards chunks of the same document (article: 10).
    top_x_inter
        Similarity edges kept per chunk towards chunks of other documents. The article says
        "a set number" without giving it; 5 is our choice (0 disables cross-document edges).
    num_themes
        Themes per document (article: 5).
    title_prefix
        Embed chunks and sentences as ``"<title>. <text>"`` (the node's ``search_text``) so
        pronoun-only sentences keep their subject. Not in the article; on by default because
        short encyclopedic passages often name their subject only in the title.
    sentence_nodes
        Add sentence nodes (children of their chunks). The traversal algorithms need them.
    theme_nodes
        Add one ``theme`` node per distinct theme with ``has_theme``/``theme_of`` edges;
        themes are always copied into chunk and sentence metadata.
    block_elements
        Similarity scores held at once while computing edges (rows per block =
        ``block_elements // n_chunks``, at least 1). Bounds memory; does not change results.
    llm_max_chars
        Document characters shown to the LLM for theme extraction.
    llm_concurrency
        Concurrent LLM calls in :meth:`ChunkGraphBuilder.abuild`.
    mention_edges
        Add the mention layer (:func:`add_mention_edges`; kgpath extension, not in the
        article): ``mentions`` edges from sentences to the documents whose titles they name.
    embedding
        Which texts are embedded. ``"nodes"`` (default, the article): every node's own
        text, about 10.7 texts per passage on HotpotQA-100. ``"derived_windows"``:
        documents, sentences and themes; a window's vector is the normalised sum of its
        sentences' vectors (8.6 texts per passage; cold build 2.5x the cost of embedding
        each passage once, against ~5x for ``"nodes"``). ``"sentences"``: sentences and
        themes only, documents derived the same way (7.7 texts per passage, 1.5x). Both
        derived modes deviate from the article and cost recall on HotpotQA-100 (R@5: PCR
        -3.5, ``basic_retrieval`` -1.5, the walks up to -9, and with ``"sentences"``
        dense -4); see
        :mod:`kgpath.ingest.chunk_graph.embedding`. ``"late"`` (late chunking, a
        deviation): each document is read once by the encoder and its window and
        sentence vectors are pooled from its token states; themes are embedded as
        texts. Needs an embedder with ``embed_passage_spans`` (the bundled
        :class:`~kgpath.embeddings.LocalEmbedder`, given a C compiler); otherwise it
        falls back to ``"nodes"``. 4.6 reads per passage (the document, its themes);
        cold build 1.06x embedding each passage once (``"nodes"`` ~5.2x), but R@5 of
        the window and sentence rows drops up to 6 points (``basic_retrieval`` -5.5); see
        :mod:`kgpath.ingest.chunk_graph.late`.
    min_title_chars
        Shortest normalised title (characters, spaces excluded) the mention layer matches;
        shorter titles (``"It"``, ``"Up"``) are mostly ordinary words.
    """

    window: int = 3
    stride: int = 1
    top_k_intra: int = 10
    top_x_inter: int = 5
    num_themes: int = 5
    title_prefix: bool = True
    sentence_nodes: bool = True
    theme_nodes: bool = True
    block_elements: int = 1 << 22
    llm_max_chars: int = 4000
    llm_concurrency: int = 8
    mention_edges: bool = True
    min_title_chars: int = 3
    embedding: str = "nodes"

    def __post_init__(self) -> None:
        for name, lo in (
            ("window", 1), ("stride", 1), ("top_k_intra", 0), ("top_x_inter", 0),
            ("num_themes", 0), ("block_elements", 1), ("llm_max_chars", 1),
            ("llm_concurrency", 1), ("min_title_chars", 1),
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ConfigError(f"{name} must be an int >= {lo}, got {v!r}")
        if not isinstance(self.mention_edges, bool):
            raise ConfigError(f"mention_edges must be a bool, got {self.mention_edges!r}")
        if self.embedding not in ("sentences", "derived_windows", "nodes", "late"):
            raise ConfigError(
                "embedding must be 'sentences', 'derived_windows', 'nodes' or 'late', got "
                f"{self.embedding!r}"
            )
        if self.stride > self.window:
            raise ConfigError(
                f"stride ({self.stride}) larger than window ({self.window}) would skip sentences"
            )
