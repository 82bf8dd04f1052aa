"""Semantic chunk graph: documents -> sentences -> sliding-window chunks -> similarity edges.

Reference: "Novel Knowledge Graph Traversal Algorithms: Enhancing Accuracy in Semantic
Retrieval-Augmented Generation Systems" (shared/papers/kg-traversal-algorithms-article.txt),
section "Knowledge Graph Architecture". The article has no numbered equations; the steps
below are named after its three construction steps.

Step 1, chunking with overlap (:func:`split_sentences`, :func:`sliding_windows`):
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
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import os
import re
import tempfile
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kgpath.embeddings import Embedder, default_embedder
from kgpath.errors import ConfigError, EmbeddingError, GraphError, ParseError, PersistenceError
from kgpath.graph import KnowledgeGraph
from kgpath.llm import LLM, parse_json_response
from kgpath.prompts.traversal import THEME_EXTRACTION_PROMPT

__all__ = [
    "ChunkGraphConfig",
    "ChunkGraphBuilder",
    "ChunkGraphStats",
    "CachedEmbedder",
    "SourceDocument",
    "ThemeExtractor",
    "KeywordThemes",
    "LLMThemes",
    "build_chunk_graph",
    "abuild_chunk_graph",
    "load_chunk_graph",
    "save_chunk_graph",
    "split_sentences",
    "sliding_windows",
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

log = logging.getLogger(__name__)

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
        if self.stride > self.window:
            raise ConfigError(
                f"stride ({self.stride}) larger than window ({self.window}) would skip sentences"
            )


@dataclass(frozen=True)
class SourceDocument:
    """One input document: an id, an optional title and its sentences."""

    id: str
    title: str
    sentences: tuple[str, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The sentences joined with single spaces."""
        return " ".join(self.sentences)


@dataclass
class ChunkGraphStats:
    """What a build produced and how long each stage took (seconds)."""

    documents: int = 0
    skipped_documents: list[str] = field(default_factory=list)
    sentences: int = 0
    chunks: int = 0
    themes: int = 0
    similarity_edges: int = 0
    mention_edges: int = 0
    edges: int = 0
    texts_embedded: int = 0
    cache_hits: int = 0
    theme_source: Counter[str] = field(default_factory=Counter)
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """Plain-dict view for printing/JSON."""
        return {
            "documents": self.documents,
            "skipped_documents": list(self.skipped_documents),
            "sentences": self.sentences,
            "chunks": self.chunks,
            "themes": self.themes,
            "similarity_edges": self.similarity_edges,
            "mention_edges": self.mention_edges,
            "edges": self.edges,
            "texts_embedded": self.texts_embedded,
            "cache_hits": self.cache_hits,
            "theme_source": dict(self.theme_source),
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
        }


# ============================================================================ step 1
_ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st mt ft vs etc e.g i.e cf al no nos vol vols fig figs ed eds
    inc ltd co corp bros dept est approx gen col lt sgt capt cmdr gov sen rep rev hon pres
    jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k u.n a.m p.m ca c""".split()
)
_BOUNDARY = re.compile(r"([.!?]+[\"')\]\u201d\u2019]*)\s+(?=[\"'(\[\u201c\u2018]?[A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Split text into sentences at ``. ! ?`` followed by space and a capital or digit.

    A full stop does not end a sentence after a known abbreviation (``Dr.``, ``e.g.``,
    ``U.S.``) or a single-letter initial (``J. K. Rowling``). Newline-separated blank lines
    also end a sentence. Deterministic and offline; pass pre-split sentences to the builder
    when a corpus already has them (HotpotQA does).
    """
    if not isinstance(text, str):
        raise GraphError(f"document text must be a string, got {type(text).__name__}")
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        para = " ".join(para.split())
        if not para:
            continue
        start = 0
        for m in _BOUNDARY.finditer(para):
            end = m.end(1)
            before = para[start : m.start(1)].rsplit(" ", 1)[-1].lower().lstrip("(\"'")
            if m.group(1).startswith(".") and (
                before in _ABBREVIATIONS or (len(before) == 1 and before.isalpha())
            ):
                continue
            piece = para[start:end].strip()
            if piece:
                out.append(piece)
            start = m.end()
        tail = para[start:].strip()
        if tail:
            out.append(tail)
    return out


def sliding_windows(n: int, window: int = 3, stride: int = 1) -> list[tuple[int, int]]:
    """Half-open sentence ranges ``[start, end)`` of the overlapping chunks.

    Windows of ``window`` sentences start every ``stride`` sentences; a document shorter
    than ``window`` is one chunk; when the stride does not land on the end, a final window
    ending at the last sentence is added so every sentence is covered.

    >>> sliding_windows(5, 3, 1)
    [(0, 3), (1, 4), (2, 5)]
    >>> sliding_windows(2, 3, 1)
    [(0, 2)]
    """
    if n <= 0:
        return []
    if n <= window:
        return [(0, n)]
    out = [(s, s + window) for s in range(0, n - window + 1, stride)]
    if out[-1][1] != n:
        out.append((n - window, n))
    return out


# ============================================================================ step 2
def similarity_edges(
    embeddings: np.ndarray,
    groups: np.ndarray,
    *,
    top_k_intra: int = 10,
    top_x_inter: int = 5,
    block_elements: int = 1 << 22,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-row top lists of cosine similarity within and across groups, blockwise.

    Parameters
    ----------
    embeddings
        ``(n, d)`` unit rows (chunk embeddings).
    groups
        ``(n,)`` int group (document) of every row; rows of one group must be contiguous.
    top_k_intra, top_x_inter
        List lengths inside the row's group and outside it (article step 2).
    block_elements
        Scores materialised at once; ``B = max(1, block_elements // n)`` rows per block.

    Returns
    -------
    (source, target, similarity, intra)
        Edge arrays (int64, int64, float32, bool), sources ascending, each source's intra
        edges then inter edges in descending similarity (ties by ascending target).

    Notes
    -----
    Cost O(n^2 d) time, O(B n + n (k + x)) memory. Within a block the intra list of a row
    is a slice of its group's contiguous column range; the inter list is an
    ``argpartition`` over the block after masking that range.
    """
    emb = np.ascontiguousarray(np.asarray(embeddings, dtype=np.float32))
    grp = np.asarray(groups, dtype=np.int64)
    n = emb.shape[0]
    if emb.ndim != 2 or grp.shape != (n,):
        raise GraphError(f"embeddings {emb.shape} and groups {grp.shape} do not match")
    if n == 0:
        e = np.zeros(0, np.int64)
        return e, e.copy(), np.zeros(0, np.float32), np.zeros(0, bool)
    change = np.flatnonzero(np.diff(grp)) + 1
    if change.size + 1 != np.unique(grp).size:
        raise GraphError("rows of one group (document) must be contiguous")
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [n]])
    gid = np.repeat(np.arange(starts.size), ends - starts)
    row_start, row_end = starts[gid], ends[gid]
    rows_per_block = max(1, min(n, block_elements // max(n, 1)))
    src_parts: list[np.ndarray] = []
    dst_parts: list[np.ndarray] = []
    sim_parts: list[np.ndarray] = []
    intra_parts: list[np.ndarray] = []
    for r0 in range(0, n, rows_per_block):
        r1 = min(n, r0 + rows_per_block)
        block = emb[r0:r1] @ emb.T  # (B, n): the only dense score array
        for i in range(r0, r1):
            row = block[i - r0]
            lo, hi = int(row_start[i]), int(row_end[i])
            if top_k_intra > 0 and hi - lo > 1:
                cols = np.arange(lo, hi)
                cols = cols[cols != i]
                vals = row[cols]
                kk = min(top_k_intra, cols.size)
                order = np.lexsort((cols, -vals))[:kk]
                src_parts.append(np.full(kk, i, np.int64))
                dst_parts.append(cols[order].astype(np.int64))
                sim_parts.append(vals[order].astype(np.float32))
                intra_parts.append(np.ones(kk, bool))
            if top_x_inter > 0 and n - (hi - lo) > 0:
                row[lo:hi] = -np.inf  # mask the row's own document (block is scratch)
                xx = min(top_x_inter, n - (hi - lo))
                if xx < n:
                    part = np.argpartition(-row, xx - 1)[:xx]
                else:
                    part = np.arange(n)
                kth = row[part].min()
                tied = np.flatnonzero(row >= kth)
                order = np.lexsort((tied, -row[tied]))[:xx]
                cols = tied[order]
                src_parts.append(np.full(xx, i, np.int64))
                dst_parts.append(cols.astype(np.int64))
                sim_parts.append(row[cols].astype(np.float32))
                intra_parts.append(np.zeros(xx, bool))
        del block
    if not src_parts:
        e = np.zeros(0, np.int64)
        return e, e.copy(), np.zeros(0, np.float32), np.zeros(0, bool)
    return (
        np.concatenate(src_parts),
        np.concatenate(dst_parts),
        np.concatenate(sim_parts),
        np.concatenate(intra_parts),
    )


# ============================================================================ step 3
_THEME_STOP = frozenset(
    """a about above after again against all also although am among an and another any are
    as at be became because been before being below between both but by can could did do
    does doing during each early either else first for former from further had has have
    having he her here hers him his how however i if in include included including into is
    it its itself known later latter less many may me more most much must my near neither
    no nor not now of off often on once one only or other our out over own part per same
    second several she should since so some such than that the their them then there these
    they third this those though three through thus to too two under until up upon us used
    using very via was we well were what when where whether which while who whom whose why
    will with within without would year years you your also named called based became""".split()
)
_WORD = re.compile(r"[^\W\d_][\w'-]*", re.UNICODE)


class ThemeExtractor(ABC):
    """Policy hook: produce up to ``num_themes`` themes for every document."""

    #: Label recorded in ``document`` node metadata (``theme_source``).
    name: str = "themes"

    @abstractmethod
    def extract(
        self, docs: Sequence[SourceDocument], num_themes: int
    ) -> list[tuple[list[str], str]]:
        """Return ``(themes, source_label)`` per document, in input order."""

    async def aextract(
        self, docs: Sequence[SourceDocument], num_themes: int
    ) -> list[tuple[list[str], str]]:
        """Async :meth:`extract` (default: run the sync version in a thread)."""
        return await asyncio.to_thread(self.extract, docs, num_themes)


class KeywordThemes(ThemeExtractor):
    """Offline themes: the top TF-IDF unigrams and bigrams of each document.

    ``score(t, d) = tf(t, d) * (log((1 + N) / (1 + df(t))) + 1)`` over lower-cased words
    (stop words and numbers dropped); bigrams are adjacent kept words. A candidate whose
    words are all inside an already chosen theme (or vice versa) is skipped. This is the
    documented, weaker LLM-free path: keyphrases, not abstractive topics.
    """

    name = "keywords"

    @staticmethod
    def _terms(doc: SourceDocument) -> list[str]:
        terms: list[str] = []
        for part in ([doc.title] if doc.title else []) + list(doc.sentences):
            words = [w.lower().strip("'-") for w in _WORD.findall(part)]
            prev: str | None = None
            for w in words:
                if len(w) < 3 or w in _THEME_STOP:
                    prev = None
                    continue
                terms.append(w)
                if prev is not None:
                    terms.append(f"{prev} {w}")
                prev = w
        return terms

    def extract(
        self, docs: Sequence[SourceDocument], num_themes: int
    ) -> list[tuple[list[str], str]]:
        """TF-IDF keyphrases per document (see the class docstring)."""
        per_doc = [Counter(self._terms(d)) for d in docs]
        df: Counter[str] = Counter()
        for c in per_doc:
            df.update(c.keys())
        n = len(docs)
        out: list[tuple[list[str], str]] = []
        for c in per_doc:
            first = {t: i for i, t in enumerate(c)}  # Counter keeps first-seen order
            scored = sorted(
                c.items(),
                key=lambda kv: (
                    -kv[1] * (math.log((1 + n) / (1 + df[kv[0]])) + 1.0),
                    first[kv[0]],
                ),
            )
            chosen: list[str] = []
            for term, _ in scored:
                words = set(term.split())
                if any(words <= set(t.split()) or set(t.split()) <= words for t in chosen):
                    continue
                chosen.append(term)
                if len(chosen) == num_themes:
                    break
            out.append((chosen, self.name))
        return out


class LLMThemes(ThemeExtractor):
    """Themes from an LLM (article step 3), one call per document.

    A reply that does not parse to a list of strings falls back to :class:`KeywordThemes`
    for that document; the fallback is recorded as ``"keywords (llm reply unusable)"``.
    """

    name = "llm"

    def __init__(self, llm: LLM, *, max_chars: int = 4000, concurrency: int = 8) -> None:
        self.llm = llm
        self.max_chars = max_chars
        self.concurrency = concurrency
        self._fallback = KeywordThemes()

    def prompt(self, doc: SourceDocument, num_themes: int) -> str:
        """Fill :data:`THEME_EXTRACTION_PROMPT` for one document."""
        return THEME_EXTRACTION_PROMPT.format(
            num_themes=num_themes, title=doc.title or doc.id, text=doc.text[: self.max_chars]
        )

    @staticmethod
    def _parse(reply: str, num_themes: int) -> list[str] | None:
        try:
            val = parse_json_response(reply, expect=(list, dict))
        except ParseError:
            return None
        if isinstance(val, dict):
            val = val.get("themes")
        if not isinstance(val, list):
            return None
        themes = []
        for t in val:
            if isinstance(t, str) and " ".join(t.split()):
                themes.append(" ".join(t.lower().split()))
        themes = list(dict.fromkeys(themes))[:num_themes]
        return themes or None

    def _finish(
        self, docs: Sequence[SourceDocument], replies: list[str], num_themes: int
    ) -> list[tuple[list[str], str]]:
        fallback: list[tuple[list[str], str]] | None = None
        out: list[tuple[list[str], str]] = []
        for i, reply in enumerate(replies):
            themes = self._parse(reply, num_themes)
            if themes is None:
                if fallback is None:
                    fallback = self._fallback.extract(docs, num_themes)
                out.append((fallback[i][0], "keywords (llm reply unusable)"))
            else:
                out.append((themes, self.name))
        return out

    def extract(
        self, docs: Sequence[SourceDocument], num_themes: int
    ) -> list[tuple[list[str], str]]:
        """One sync LLM call per document."""
        replies = [self.llm.complete(self.prompt(d, num_themes)) for d in docs]
        return self._finish(docs, replies, num_themes)

    async def aextract(
        self, docs: Sequence[SourceDocument], num_themes: int
    ) -> list[tuple[list[str], str]]:
        """Concurrent async LLM calls (at most ``concurrency`` in flight)."""
        sem = asyncio.Semaphore(self.concurrency)

        async def one(d: SourceDocument) -> str:
            async with sem:
                return await self.llm.acomplete(self.prompt(d, num_themes))

        replies = list(await asyncio.gather(*(one(d) for d in docs)))
        return self._finish(docs, replies, num_themes)


# ============================================================================ cache
class CachedEmbedder:
    """Wrap an embedder with a content-addressed on-disk cache of passage embeddings.

    Vectors are stored in ``<cache_dir>/<key>.npz`` (``keys``: SHA-256 hex of each text,
    ``vectors``: float32), rewritten atomically after each call that embedded new texts,
    loaded with ``allow_pickle=False``. ``key`` identifies the model: by default a hash of
    ``repr(embedder)`` (give ``cache_key`` when the repr is not stable across runs).
    Queries are never cached. New texts are embedded and saved in slices of ``save_every``
    so an interrupted run keeps what it finished. Progress bars come from the wrapped
    embedder (one per slice).
    """

    def __init__(
        self,
        embedder: Embedder,
        cache_dir: str | os.PathLike[str],
        *,
        cache_key: str | None = None,
        save_every: int = 2048,
    ) -> None:
        if isinstance(save_every, bool) or not isinstance(save_every, int) or save_every < 1:
            raise ConfigError(f"save_every must be an int >= 1, got {save_every!r}")
        self.save_every = save_every
        self.embedder = embedder
        self.cache_dir = Path(cache_dir)
        ident = cache_key if cache_key is not None else repr(embedder)
        digest = hashlib.sha256(ident.encode("utf-8")).hexdigest()[:16]
        self.path = self.cache_dir / f"embeddings-{digest}.npz"
        self._rows: dict[str, int] | None = None
        self._vectors: np.ndarray | None = None
        self.hits = 0
        self.misses = 0

    @property
    def dim(self) -> int:
        """Dimension of the wrapped embedder."""
        return self.embedder.dim

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.embedder!r}, cache={str(self.path)!r})"

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def _load(self) -> None:
        if self._rows is not None:
            return
        self._rows, self._vectors = {}, None
        if not self.path.is_file():
            return
        try:
            with np.load(self.path, allow_pickle=False) as z:
                keys, vecs = z["keys"], z["vectors"]
        except (OSError, ValueError, KeyError) as exc:
            raise PersistenceError(f"embedding cache {self.path} is corrupt: {exc!r}") from exc
        if keys.shape[0] != vecs.shape[0]:
            raise PersistenceError(f"embedding cache {self.path}: keys/vectors length differ")
        self._rows = {str(k): i for i, k in enumerate(keys.tolist())}
        self._vectors = np.asarray(vecs, dtype=np.float32)

    def _save(self) -> None:
        assert self._rows is not None and self._vectors is not None
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        keys = np.array(sorted(self._rows, key=self._rows.__getitem__), dtype="U64")
        fd, tmp = tempfile.mkstemp(prefix=".emb-", suffix=".npz", dir=self.cache_dir)
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, keys=keys, vectors=self._vectors)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _lookup(self, texts: Sequence[str]) -> tuple[list[str], list[str]]:
        self._load()
        assert self._rows is not None
        keys = [self._key(t) for t in texts]
        missing: dict[str, str] = {}
        for k, t in zip(keys, texts, strict=True):
            if k not in self._rows and k not in missing:
                missing[k] = t
        self.hits += len(texts) - sum(1 for k in keys if k in missing)
        self.misses += len(missing)
        return keys, list(missing.values())

    def _store(self, new_texts: list[str], vecs: np.ndarray) -> None:
        assert self._rows is not None
        if not new_texts:
            return
        vecs = np.asarray(vecs, dtype=np.float32)
        base = 0 if self._vectors is None else self._vectors.shape[0]
        if self._vectors is not None and vecs.shape[1] != self._vectors.shape[1]:
            raise EmbeddingError(
                f"embedder returned dimension {vecs.shape[1]}, cache {self.path} holds "
                f"{self._vectors.shape[1]}"
            )
        self._vectors = vecs if self._vectors is None else np.vstack([self._vectors, vecs])
        for i, t in enumerate(new_texts):
            self._rows[self._key(t)] = base + i
        self._save()

    def _gather(self, keys: list[str]) -> np.ndarray:
        assert self._rows is not None and self._vectors is not None
        return self._vectors[[self._rows[k] for k in keys]]

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages, reading and extending the cache."""
        keys, missing = self._lookup(texts)
        for i in range(0, len(missing), self.save_every):
            part = missing[i : i + self.save_every]
            self._store(part, self.embedder.embed_passages(part))
        if not keys:
            return np.zeros((0, self.dim), np.float32)
        return self._gather(keys)

    async def aembed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Async :meth:`embed_passages`."""
        keys, missing = self._lookup(texts)
        for i in range(0, len(missing), self.save_every):
            part = missing[i : i + self.save_every]
            self._store(part, await self.embedder.aembed_passages(part))
        if not keys:
            return np.zeros((0, self.dim), np.float32)
        return self._gather(keys)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Pass-through (queries are not cached)."""
        return self.embedder.embed_queries(texts)

    async def aembed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Pass-through (queries are not cached)."""
        return await self.embedder.aembed_queries(texts)


# ============================================================================ mention layer
_TITLE_TOKEN = re.compile(r"\w+", re.UNICODE)
_TRAILING_PAREN = re.compile(r"\s*\([^()]*\)\s*$")


def title_tokens(title: str) -> tuple[str, ...]:
    """Word tokens of a normalised title (see :func:`normalize_title`).

    >>> title_tokens("The Hukilau Song (1948 song)")
    ('the', 'hukilau', 'song')
    """
    if not isinstance(title, str):
        raise GraphError(f"title must be a string, got {type(title).__name__}")
    stripped = _TRAILING_PAREN.sub("", title)
    if not _TITLE_TOKEN.search(stripped):  # "(album)" alone: keep what is inside
        stripped = title
    return tuple(_TITLE_TOKEN.findall(stripped.casefold()))


def normalize_title(title: str) -> str:
    """Casefold, drop one trailing parenthetical, keep word tokens joined by single spaces.

    Used by the mention layer so that ``"Pick Me Up (magazine)"`` matches the text
    ``"... the magazine Pick Me Up, ..."``. Punctuation inside a title becomes a word
    break (``"Woman's Viewpoint"`` -> ``"woman s viewpoint"``), the same way the text is
    tokenised, so both sides agree.

    >>> normalize_title("Alexandria International Airport (Louisiana)")
    'alexandria international airport'
    >>> normalize_title("  AC/DC ")
    'ac dc'
    """
    return " ".join(title_tokens(title))


class TitleMatcher:
    """Find document titles named in a text: whole words, casefolded, leftmost-longest.

    Titles are indexed by their token tuple (:func:`title_tokens`); a text is scanned once,
    left to right, and at each token position the longest title starting there is taken
    (one dictionary lookup per distinct title length), then the scan resumes after it.
    Cost per text ``O(tokens * L)`` with ``L`` the number of distinct title lengths in
    tokens; memory ``O(total title tokens)``. No regular expression with one alternative
    per title is compiled, so the cost does not grow with the number of titles.

    Parameters
    ----------
    titles
        ``{document id: title}``. Documents whose normalised titles coincide (``"Lilu
        (mythology)"``, ``"Lilu (ancient China)"``) are all returned for one match.
    min_chars
        Titles with fewer characters (spaces excluded) after normalisation, or with no
        letter at all (``"1999"``), are not matched; they are listed in :attr:`skipped`.
    """

    def __init__(self, titles: Mapping[str, str], *, min_chars: int = 3) -> None:
        if isinstance(min_chars, bool) or not isinstance(min_chars, int) or min_chars < 1:
            raise ConfigError(f"min_chars must be an int >= 1, got {min_chars!r}")
        self._docs: dict[tuple[str, ...], list[str]] = {}
        self.skipped: list[str] = []
        for doc_id, title in titles.items():
            toks = title_tokens(title)
            if sum(len(t) for t in toks) < min_chars or not any(
                c.isalpha() for t in toks for c in t
            ):
                self.skipped.append(doc_id)
                continue
            self._docs.setdefault(toks, []).append(doc_id)
        self._lengths = sorted({len(k) for k in self._docs}, reverse=True)

    def __len__(self) -> int:
        return len(self._docs)

    def matches(self, text: str) -> list[tuple[str, tuple[str, ...]]]:
        """``(normalised title, document ids)`` for every match, in text order."""
        toks = _TITLE_TOKEN.findall(text.casefold())
        out: list[tuple[str, tuple[str, ...]]] = []
        i, n = 0, len(toks)
        while i < n:
            for length in self._lengths:
                if i + length > n:
                    continue
                key = tuple(toks[i : i + length])
                docs = self._docs.get(key)
                if docs is not None:
                    out.append((" ".join(key), tuple(docs)))
                    i += length
                    break
            else:
                i += 1
        return out

    def find(self, text: str) -> list[str]:
        """Distinct document ids whose titles the text names, in first-match order."""
        return list(dict.fromkeys(d for _, ds in self.matches(text) for d in ds))


@dataclass
class MentionLayerStats:
    """What :func:`add_mention_edges` did."""

    titles: int = 0
    skipped_titles: list[str] = field(default_factory=list)
    sources: int = 0
    edges: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """Plain-dict view for printing/JSON."""
        return {
            "titles": self.titles,
            "skipped_titles": len(self.skipped_titles),
            "sources": self.sources,
            "edges": self.edges,
            "seconds": round(self.seconds, 3),
        }


def add_mention_edges(graph: KnowledgeGraph, *, min_title_chars: int = 3) -> MentionLayerStats:
    """Add the mention layer to a chunk graph in place (kgpath extension, not the article).

    For every sentence node (every chunk node when the graph has none) and every *other*
    document whose title :class:`TitleMatcher` finds in the node's text, add the edge
    ``sentence -mentions-> doc:<id>`` (type ``"mentions"``, weight 1, provenance = the two
    documents, metadata ``{"title": <normalised title>}``). Idempotent: re-running merges
    exact duplicates. Works on graphs loaded from disk, so a prebuilt graph gains the
    layer without re-embedding anything.

    Returns
    -------
    MentionLayerStats
        Titles indexed/skipped, nodes scanned, edges added, seconds.
    """
    t0 = time.perf_counter()
    doc_node: dict[str, str] = {}
    titles: dict[str, str] = {}
    for n in graph.nodes:
        if n.type == NODE_DOCUMENT:
            doc_id = str(n.metadata.get("doc_id", n.id.removeprefix("doc:")))
            doc_node[doc_id] = n.id
            titles[doc_id] = n.name or doc_id
    if not doc_node:
        raise GraphError(f"graph has no '{NODE_DOCUMENT}' nodes; not a chunk graph")
    matcher = TitleMatcher(titles, min_chars=min_title_chars)
    kind = NODE_SENTENCE if any(n.type == NODE_SENTENCE for n in graph.nodes) else NODE_CHUNK
    stats = MentionLayerStats(titles=len(matcher), skipped_titles=list(matcher.skipped))
    before = graph.num_edges
    for n in graph.nodes:
        if n.type != kind:
            continue
        stats.sources += 1
        own = str(n.metadata.get("doc_id", n.provenance[0] if n.provenance else ""))
        for key, docs in matcher.matches(n.text):
            for d in docs:
                if d == own:
                    continue
                graph.add_edge(
                    n.id, doc_node[d], REL_MENTIONS, titles[d], type=EDGE_MENTIONS,
                    weight=1.0, provenance=tuple(dict.fromkeys((own, d))),
                    metadata={"title": key},
                )
    stats.edges = graph.num_edges - before
    stats.seconds = time.perf_counter() - t0
    return stats


# ============================================================================ builder
def _as_documents(documents: Any) -> list[SourceDocument]:
    """Normalise the accepted input forms to :class:`SourceDocument` (see the builder)."""
    if isinstance(documents, (str, bytes)):
        raise GraphError("documents must be a collection of documents, not a single string")
    items: list[tuple[str, str, Any, Mapping[str, Any]]] = []
    if isinstance(documents, Mapping):
        for title, body in documents.items():
            items.append((str(title), str(title), body, {}))
    else:
        for i, d in enumerate(documents):
            if isinstance(d, SourceDocument):
                items.append((d.id, d.title, list(d.sentences), d.metadata))
            elif isinstance(d, str):
                items.append((f"doc-{i}", "", d, {}))
            elif isinstance(d, (tuple, list)) and len(d) == 2:
                items.append((str(d[0]), str(d[0]), d[1], {}))
            else:
                raise GraphError(
                    f"document #{i} must be a str, (title, text|sentences) or "
                    f"SourceDocument, got {type(d).__name__}"
                )
    out: list[SourceDocument] = []
    seen: set[str] = set()
    for doc_id, title, body, meta in items:
        if not doc_id:
            raise GraphError("document ids/titles must be non-empty strings")
        if doc_id in seen:
            raise GraphError(f"duplicate document id {doc_id!r}")
        seen.add(doc_id)
        if isinstance(body, str):
            sents = split_sentences(body)
        elif isinstance(body, Sequence):
            sents = []
            for s in body:
                if not isinstance(s, str):
                    raise GraphError(f"document {doc_id!r} has a non-string sentence {s!r}")
                s = " ".join(s.split())
                if s:
                    sents.append(s)
        else:
            raise GraphError(
                f"document {doc_id!r} body must be text or a list of sentences, "
                f"got {type(body).__name__}"
            )
        out.append(SourceDocument(doc_id, title, tuple(sents), dict(meta)))
    return out


@dataclass
class _Plan:
    """Everything but embeddings and themes: nodes and structural edges to add."""

    docs: list[SourceDocument]
    chunk_ranges: list[list[tuple[int, int]]]
    chunk_doc: np.ndarray


class ChunkGraphBuilder:
    """Build the semantic chunk graph of the article from raw documents.

    Parameters
    ----------
    embedder
        Any :class:`~kgpath.embeddings.Embedder` (default: the bundled offline model).
        Texts are embedded in one batched, de-duplicated call (progress bar from
        :class:`~kgpath.embeddings.BaseEmbedder`).
    config
        :class:`ChunkGraphConfig`.
    llm
        When given, themes come from the LLM (:class:`LLMThemes`); otherwise from
        :class:`KeywordThemes`. ``themes=`` overrides both with any :class:`ThemeExtractor`.
    cache_dir
        Optional folder for a :class:`CachedEmbedder` cache of passage embeddings.

    Examples
    --------
    >>> from kgpath import HashingEmbedder
    >>> g = ChunkGraphBuilder(HashingEmbedder()).build(
    ...     {"Cats": "Cats purr. Cats hunt mice. Mice fear cats. Cats sleep a lot."})
    >>> sorted({n.type for n in g.nodes})
    ['chunk', 'document', 'sentence', 'theme']
    """

    def __init__(
        self,
        embedder: Embedder | None = None,
        *,
        config: ChunkGraphConfig | None = None,
        llm: LLM | None = None,
        themes: ThemeExtractor | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        cache_key: str | None = None,
    ) -> None:
        self.config = config or ChunkGraphConfig()
        base = embedder if embedder is not None else default_embedder()
        self.embedder: Embedder = (
            CachedEmbedder(base, cache_dir, cache_key=cache_key) if cache_dir is not None else base
        )
        if themes is not None:
            self.themes = themes
        elif llm is not None:
            self.themes = LLMThemes(
                llm, max_chars=self.config.llm_max_chars, concurrency=self.config.llm_concurrency
            )
        else:
            self.themes = KeywordThemes()
        self.stats = ChunkGraphStats()

    # ------------------------------------------------------------------ stages
    def _plan(self, documents: Any) -> _Plan:
        cfg = self.config
        docs_all = _as_documents(documents)
        docs = [d for d in docs_all if d.sentences]
        self.stats = ChunkGraphStats(documents=len(docs))
        self.stats.skipped_documents = [d.id for d in docs_all if not d.sentences]
        for d in self.stats.skipped_documents:
            log.warning("chunk graph: document %r has no sentences; skipped", d)
        if not docs:
            raise GraphError("no document with at least one sentence to build a graph from")
        ranges = [sliding_windows(len(d.sentences), cfg.window, cfg.stride) for d in docs]
        chunk_doc = np.repeat(np.arange(len(docs)), [len(r) for r in ranges])
        return _Plan(docs, ranges, chunk_doc)

    def _graph(self, plan: _Plan, themes: list[tuple[list[str], str]]) -> KnowledgeGraph:
        """Nodes and structural/theme edges, in a fixed order (documents, chunks, ...)."""
        cfg = self.config
        g = KnowledgeGraph()
        for d in plan.docs:
            g.add_passage(d.id, d.text, {"title": d.title, **dict(d.metadata)})
        for d, (th, src) in zip(plan.docs, themes, strict=True):
            g.add_node(
                f"doc:{d.id}", name=d.title, text=d.text, type=NODE_DOCUMENT,
                metadata={"doc_id": d.id, "themes": th, "theme_source": src,
                          "num_sentences": len(d.sentences)},
                provenance=(d.id,),
            )
            self.stats.theme_source[src] += 1
        for d, ranges, (th, _) in zip(plan.docs, plan.chunk_ranges, themes, strict=True):
            for ci, (s, e) in enumerate(ranges):
                g.add_node(
                    f"chunk:{d.id}:{ci}", name=d.title, text=" ".join(d.sentences[s:e]),
                    type=NODE_CHUNK,
                    metadata={"doc_id": d.id, "position": ci, "start": s, "end": e,
                              "themes": th},
                    provenance=(d.id,),
                )
        if cfg.sentence_nodes:
            for d, (th, _) in zip(plan.docs, themes, strict=True):
                for si, sent in enumerate(d.sentences):
                    g.add_node(
                        f"sent:{d.id}:{si}", name=d.title, text=sent, type=NODE_SENTENCE,
                        metadata={"doc_id": d.id, "position": si, "themes": th},
                        provenance=(d.id,),
                    )
        if cfg.theme_nodes:
            theme_docs: dict[str, list[str]] = {}
            for d, (th, _) in zip(plan.docs, themes, strict=True):
                for t in th:
                    theme_docs.setdefault(t, []).append(d.id)
            for t, ds in theme_docs.items():
                g.add_node(f"theme:{t}", name=t, text=t, type=NODE_THEME,
                           metadata={"documents": ds}, provenance=ds)
            self.stats.themes = len(theme_docs)
        for d, ranges, (th, _) in zip(plan.docs, plan.chunk_ranges, themes, strict=True):
            for ci, (s, e) in enumerate(ranges):
                g.add_edge(f"doc:{d.id}", f"chunk:{d.id}:{ci}", REL_HAS_CHUNK,
                           type="structure", provenance=(d.id,))
                if cfg.sentence_nodes:
                    for si in range(s, e):
                        g.add_edge(f"chunk:{d.id}:{ci}", f"sent:{d.id}:{si}",
                                   REL_HAS_SENTENCE, type="structure", provenance=(d.id,))
            if cfg.theme_nodes:
                for t in th:
                    g.add_edge(f"doc:{d.id}", f"theme:{t}", REL_HAS_THEME, type="theme",
                               provenance=(d.id,))
                    g.add_edge(f"theme:{t}", f"doc:{d.id}", REL_THEME_OF, type="theme",
                               provenance=(d.id,))
        self.stats.sentences = sum(len(d.sentences) for d in plan.docs)
        self.stats.chunks = int(plan.chunk_doc.size)
        return g

    def _embed_texts(self, g: KnowledgeGraph) -> tuple[list[str], list[int]]:
        """Collect the unique texts to embed and, per node, the row of its text."""
        cfg = self.config
        texts: dict[str, int] = {}
        rows: list[int] = []
        for n in g.nodes:
            t = n.search_text if (cfg.title_prefix or n.type in (NODE_DOCUMENT, NODE_THEME)) \
                else (n.text or n.name)
            rows.append(texts.setdefault(t, len(texts)))
        return list(texts), rows

    def _similarity(self, g: KnowledgeGraph, plan: _Plan) -> None:
        cfg = self.config
        t0 = time.perf_counter()
        chunk_idx = np.array([i for i, n in enumerate(g.nodes) if n.type == NODE_CHUNK])
        emb = g.embeddings[chunk_idx]
        src, dst, sim, intra = similarity_edges(
            emb, plan.chunk_doc, top_k_intra=cfg.top_k_intra, top_x_inter=cfg.top_x_inter,
            block_elements=cfg.block_elements,
        )
        ids = [g.node_at(int(i)).id for i in chunk_idx]
        docs = [plan.docs[int(k)].id for k in plan.chunk_doc]
        edges = zip(src.tolist(), dst.tolist(), sim.tolist(), intra.tolist(), strict=True)
        for s, t, v, same in edges:
            g.add_edge(
                ids[s], ids[t], REL_SIMILAR_INTRA if same else REL_SIMILAR_INTER,
                type="similarity", weight=max(float(v), 0.0),
                provenance=tuple(dict.fromkeys((docs[s], docs[t]))),
                metadata={"similarity": round(float(v), 6)},
            )
        self.stats.similarity_edges = int(src.size)
        self.stats.edges = g.num_edges
        self.stats.seconds["similarity_edges"] = time.perf_counter() - t0

    def _mentions(self, g: KnowledgeGraph) -> None:
        if not self.config.mention_edges:
            return
        ms = add_mention_edges(g, min_title_chars=self.config.min_title_chars)
        self.stats.mention_edges = ms.edges
        self.stats.edges = g.num_edges
        self.stats.seconds["mention_edges"] = ms.seconds

    def _count_cache(self) -> None:
        if isinstance(self.embedder, CachedEmbedder):
            self.stats.cache_hits = self.embedder.hits

    # ------------------------------------------------------------------ public
    def build(self, documents: Any) -> KnowledgeGraph:
        """Build the graph (sync).

        ``documents`` may be a mapping ``{title: text or [sentences]}`` (the title is the
        document id), an iterable of ``(title, text or [sentences])`` pairs, of raw strings
        (ids ``doc-0``, ``doc-1``, ... and no title), or of :class:`SourceDocument`.
        Pre-split sentences are kept as given; text is split with :func:`split_sentences`.
        """
        t_all = time.perf_counter()
        t0 = time.perf_counter()
        plan = self._plan(documents)
        self.stats.seconds["chunking"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        themes = self.themes.extract(plan.docs, self.config.num_themes)
        self.stats.seconds["themes"] = time.perf_counter() - t0
        g = self._graph(plan, themes)
        t0 = time.perf_counter()
        texts, rows = self._embed_texts(g)
        vecs = self.embedder.embed_passages(texts)
        self._set_embeddings(g, vecs, rows, len(texts))
        self.stats.seconds["embedding"] = time.perf_counter() - t0
        self._similarity(g, plan)
        self._mentions(g)
        self._count_cache()
        self.stats.seconds["total"] = time.perf_counter() - t_all
        return g

    async def abuild(self, documents: Any) -> KnowledgeGraph:
        """Async :meth:`build`: LLM theme calls run concurrently, embeddings are awaited."""
        t_all = time.perf_counter()
        plan = self._plan(documents)
        t0 = time.perf_counter()
        themes = await self.themes.aextract(plan.docs, self.config.num_themes)
        self.stats.seconds["themes"] = time.perf_counter() - t0
        g = self._graph(plan, themes)
        t0 = time.perf_counter()
        texts, rows = self._embed_texts(g)
        vecs = await self.embedder.aembed_passages(texts)
        self._set_embeddings(g, vecs, rows, len(texts))
        self.stats.seconds["embedding"] = time.perf_counter() - t0
        await asyncio.to_thread(self._similarity, g, plan)
        await asyncio.to_thread(self._mentions, g)
        self._count_cache()
        self.stats.seconds["total"] = time.perf_counter() - t_all
        return g

    def _set_embeddings(
        self, g: KnowledgeGraph, vecs: np.ndarray, rows: list[int], n_texts: int
    ) -> None:
        vecs = np.asarray(vecs, dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape[0] != n_texts:
            raise EmbeddingError(f"embedder returned shape {vecs.shape} for {n_texts} texts")
        g.set_embeddings(vecs[np.asarray(rows, dtype=np.int64)])
        self.stats.texts_embedded = n_texts


def build_chunk_graph(
    documents: Any,
    *,
    embedder: Embedder | None = None,
    config: ChunkGraphConfig | None = None,
    llm: LLM | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> KnowledgeGraph:
    """Shortcut for ``ChunkGraphBuilder(...).build(documents)``."""
    return ChunkGraphBuilder(embedder, config=config, llm=llm, cache_dir=cache_dir).build(
        documents
    )


async def abuild_chunk_graph(
    documents: Any,
    *,
    embedder: Embedder | None = None,
    config: ChunkGraphConfig | None = None,
    llm: LLM | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> KnowledgeGraph:
    """Async :func:`build_chunk_graph`."""
    builder = ChunkGraphBuilder(embedder, config=config, llm=llm, cache_dir=cache_dir)
    return await builder.abuild(documents)


def save_chunk_graph(graph: KnowledgeGraph, directory: str | os.PathLike[str]) -> None:
    """Persist a chunk graph (JSON + ``.npy``, atomic; see :meth:`KnowledgeGraph.save`)."""
    _check_chunk_graph(graph, str(directory))
    graph.save(directory)


def load_chunk_graph(directory: str | os.PathLike[str]) -> KnowledgeGraph:
    """Load a graph saved by :func:`save_chunk_graph` and check it is a chunk graph."""
    g = KnowledgeGraph.load(directory)
    _check_chunk_graph(g, str(directory))
    if g.missing_embeddings():
        raise PersistenceError(f"{directory}: chunk graph saved without embeddings")
    return g


def _check_chunk_graph(graph: KnowledgeGraph, where: str) -> None:
    if not any(n.type == NODE_CHUNK for n in graph.nodes):
        raise GraphError(f"{where}: graph has no '{NODE_CHUNK}' nodes; not a chunk graph")
