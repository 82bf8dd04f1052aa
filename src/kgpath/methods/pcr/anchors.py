"""PCR anchors from the question (a kgpath extension; the paper takes the anchor as given).

:func:`link_anchors` finds the nodes a question names: word n-grams of the query, longest
first, matched exactly against node names normalised by :func:`kgpath.ingest.entity_key`
(case, accents, punctuation, a possessive and a leading article ignored); a span that
matched is not reused by a shorter n-gram inside it ("Marie Curie" wins over "Curie").

The linking is the entity linker's (:class:`kgpath.index.linking.EntityLinker`,
:meth:`~kgpath.index.linking.EntityLinker.match`: its rules, stop words, articles and word
pattern) with ``exact_unmarked``: a span with no capitalised or numeric word links only a
node whose name is written exactly so ("radium" links a node named "radium": the graph
itself writes it in lower case), and no embedding fallback (PCR has its own,
``anchor_fallback``).

Lookup: in memory the linker's key index over every node name
(:func:`~kgpath.index.linking.name_key_index`, built once per graph version, held only as
long as the graph, shared with every other linker of the graph); on another backend (a
database) one :meth:`GraphBackend.nodes_by_name` query per candidate span, whose
normalisation (lower case, single spaces) is kept only when the node's ``entity_key``
equals the span's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from kgpath.backends.base import GraphBackend
from kgpath.backends.memory import InMemoryBackend
from kgpath.graph import KnowledgeGraph, Node
from kgpath.index.linking import (
    STOP_WORDS,
    EntityLinker,
    GraphNames,
    LinkerConfig,
    NameLookup,
    name_key_index,
)
from kgpath.index.passage_vectors import PassageVectors
from kgpath.ingest.extraction import entity_key

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

_CONFIG = LinkerConfig(max_ngram=MAX_NGRAM, exact_unmarked=True, embedding_fallback=False)


@dataclass(frozen=True)
class AnchorLink:
    """A query span ``query[start:end]`` that names the node ``key``."""

    key: Any
    node: Node
    surface: str
    start: int
    end: int


class _BackendNames:
    """:class:`NameLookup` of another backend: its name query, kept when the keys agree."""

    def __init__(self, b: GraphBackend[Any, Any]) -> None:
        self.b = b

    def candidates(self, key: str, span: str) -> list[Any]:
        """The nodes named ``span`` (lower case, single spaces) whose key is ``key``."""
        b = self.b
        return [k for k in b.nodes_by_name(span) if entity_key(b.node(k).name or "") == key]

    def node(self, k: Any) -> Node:
        """The backend's node record."""
        return self.b.node(k)


def _names(b: GraphBackend[Any, Any]) -> NameLookup:
    return GraphNames(b.graph) if isinstance(b, InMemoryBackend) else _BackendNames(b)


def link_anchors(
    b: GraphBackend[Any, Any], query: str, *, max_ngram: int = MAX_NGRAM
) -> list[AnchorLink]:
    """The nodes ``query`` names, in question order (module docstring for the rules)."""
    cfg = _CONFIG if max_ngram == MAX_NGRAM else replace(_CONFIG, max_ngram=max_ngram)
    names = _names(b)
    return [AnchorLink(k, names.node(k), query[s:e], s, e)
            for s, e, keys in EntityLinker(None, config=cfg, names=names).match(query)
            for k in keys]


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
