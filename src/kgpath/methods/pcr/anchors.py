"""PCR anchors from the question (a kgpath extension; the paper takes the anchor as given).

:func:`link_anchors` finds the nodes a question names: word n-grams of the query, longest
first, matched exactly against node names normalised by :func:`kgpath.ingest.entity_key`
(case, accents, punctuation, a possessive and a leading article ignored); a span that
matched is not reused by a shorter n-gram inside it ("Marie Curie" wins over "Curie").

Rules (and the stop words, articles and word pattern), those of the entity linker
:mod:`kgpath.ingest.linking`, here over a backend lookup so a database can answer:

* n-grams of 1..``max_ngram`` words; an n-gram starting with an article is skipped (the key
  drops it, so the span without it matches the same node);
* the key has at least 2 characters and is not a stop word;
* at least one word of the n-gram is capitalised or contains a digit, so "film" in "which
  film" does not link a node named "Film"; an unmarked span links only a node whose name is
  written exactly so ("radium" links a node named "radium": the graph itself writes it
  in lower case).

Lookup: in memory a key index over every node name (built once per graph version, held
only as long as the graph); on another backend (a database) one
:meth:`GraphBackend.nodes_by_name` query per candidate span, whose normalisation (lower
case, single spaces) is kept only when the node's ``entity_key`` equals the span's.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kgpath.backends.base import GraphBackend
from kgpath.backends.memory import InMemoryBackend
from kgpath.graph import KnowledgeGraph, Node
from kgpath.index.passage_vectors import PassageVectors
from kgpath.ingest.extraction import entity_key
from kgpath.ingest.linking import _ARTICLES, _WORD, STOP_WORDS

__all__ = [
    "STOP_WORDS",
    "AnchorLink",
    "ashared_passage_vectors",
    "link_anchors",
    "name_key_index",
    "passage_anchors",
    "shared_passage_vectors",
]

MAX_NGRAM = 6

Lookup = Callable[[str, str], Sequence[Any]]


@dataclass(frozen=True)
class AnchorLink:
    """A query span ``query[start:end]`` that names the node ``key``."""

    key: Any
    node: Node
    surface: str
    start: int
    end: int


_INDEX_CACHE: dict[int, tuple[int, weakref.ref[KnowledgeGraph], dict[str, list[int]]]] = {}


def name_key_index(graph: KnowledgeGraph) -> dict[str, list[int]]:
    """``entity_key(name) -> node indices``, built once per graph and version.

    The cache holds the graph weakly and drops its index when the graph is collected, so
    a large graph's index (one entry per distinct name) lives only as long as the graph.
    """
    hit = _INDEX_CACHE.get(id(graph))
    if hit is not None and hit[1]() is graph and hit[0] == graph.version:
        return hit[2]
    index: dict[str, list[int]] = {}
    for i, n in enumerate(graph.nodes):
        key = entity_key(n.name or n.id)
        if key:
            index.setdefault(key, []).append(i)
    if hit is None or hit[1]() is not graph:
        weakref.finalize(graph, _INDEX_CACHE.pop, id(graph), None)
    _INDEX_CACHE[id(graph)] = (graph.version, weakref.ref(graph), index)
    return index


def _lookup(b: GraphBackend[Any, Any]) -> Lookup:
    if isinstance(b, InMemoryBackend):
        index = name_key_index(b.graph)
        return lambda key, span: index.get(key, [])

    def by_name(key: str, span: str) -> list[Any]:
        return [k for k in b.nodes_by_name(span) if entity_key(b.node(k).name or "") == key]

    return by_name


def _marked(word: str) -> bool:
    return word[:1].isupper() or any(c.isdigit() for c in word)


def link_anchors(
    b: GraphBackend[Any, Any], query: str, *, max_ngram: int = MAX_NGRAM
) -> list[AnchorLink]:
    """The nodes ``query`` names, in question order (module docstring for the rules)."""
    words = [(m.start(), m.end()) for m in _WORD.finditer(query)]
    used = [False] * len(words)
    lookup = _lookup(b)
    found: list[AnchorLink] = []
    for n in range(min(max_ngram, len(words)), 0, -1):
        for i in range(len(words) - n + 1):
            if any(used[i:i + n]):
                continue
            s, e = words[i][0], words[i + n - 1][1]
            if n > 1 and query[words[i][0]:words[i][1]].lower() in _ARTICLES:
                continue
            key = entity_key(query[s:e])
            if len(key) < 2 or key in STOP_WORDS:
                continue
            keys = lookup(key, query[s:e])
            if len(keys) and not any(_marked(query[a:z]) for a, z in words[i:i + n]):
                keys = [k for k in keys if b.node(k).name == query[s:e]]
            if len(keys):
                used[i:i + n] = [True] * n
                found.extend(AnchorLink(k, b.node(k), query[s:e], s, e) for k in keys)
    found.sort(key=lambda x: x.start)
    return found


def shared_passage_vectors(b: GraphBackend[Any, Any]) -> PassageVectors | None:
    """The index's shared passage vectors (in memory; ``None`` elsewhere or without passages).

    Embedded once per ``(graph, embedder)`` (:mod:`kgpath.index.passage_vectors`).
    """
    if not isinstance(b, InMemoryBackend) or not b.graph.passages:
        return None
    return b.index.passage_vectors()


async def ashared_passage_vectors(b: GraphBackend[Any, Any]) -> PassageVectors | None:
    """Async :func:`shared_passage_vectors`: missing passages through ``aembed_passages``."""
    if not isinstance(b, InMemoryBackend) or not b.graph.passages:
        return None
    return await b.index.apassage_vectors()


def _cited_by(graph: KnowledgeGraph, vecs: PassageVectors) -> dict[str, list[int]]:
    """``passage id -> indices of the nodes citing it`` (node order), once per version."""
    got = vecs.derived.get("pcr_cited_by")
    if got is None:
        got = {}
        for i, n in enumerate(graph.nodes):
            for p in dict.fromkeys(n.provenance):
                got.setdefault(p, []).append(i)
        vecs.derived["pcr_cited_by"] = got
    return got  # type: ignore[no-any-return]


def passage_anchors(
    b: GraphBackend[Any, Any], query_vec: np.ndarray, limit: int | None = None
) -> list[Any]:
    """``anchor_fallback="passage"``: the nodes citing the passage most similar to the query.

    In node order, at most ``limit``; ``[]`` without shared passage vectors (another
    backend, no passages) or when no node cites that passage.
    """
    vecs = shared_passage_vectors(b)
    if vecs is None or not len(vecs.ids):
        return []
    sims = vecs.matrix @ np.asarray(query_vec, np.float32).reshape(-1)
    top = vecs.ids[int(np.argmax(sims))]
    assert isinstance(b, InMemoryBackend)
    return _cited_by(b.graph, vecs).get(top, [])[:limit]
