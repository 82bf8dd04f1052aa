"""The mention layer (kgpath extension, not in the article): sentence -> named document.

A sentence (a chunk when the graph has no sentence nodes) gets a ``mentions`` edge to every
*other* document whose normalised title (:func:`normalize_title`: casefold, trailing
parenthetical such as ``"(1945 film)"`` removed, whole words only) occurs in its text.
Encyclopedic corpora link their articles by naming them, so these edges recover the
hyperlink structure that multi-hop questions (HotpotQA bridge questions) follow. Matching
is a single left-to-right pass over each text's tokens with one dictionary lookup per
distinct title length (:class:`TitleMatcher`), so building the layer costs
``O(tokens * L)`` time and ``O(title tokens + edges)`` memory (``L`` = distinct title
lengths in tokens), never ``O(titles * texts)``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kgpath.errors import ConfigError, GraphError
from kgpath.graph import KnowledgeGraph
from kgpath.ingest.chunk_graph.config import (
    EDGE_MENTIONS,
    NODE_CHUNK,
    NODE_DOCUMENT,
    NODE_SENTENCE,
    REL_MENTIONS,
)

__all__ = [
    "MentionLayerStats",
    "TitleMatcher",
    "add_mention_edges",
    "normalize_title",
    "title_tokens",
]


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

