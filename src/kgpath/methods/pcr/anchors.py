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

Lookup: the backend's :meth:`~kgpath.backends.base.GraphBackend.names`. In memory the
linker's key index over every node name (:func:`~kgpath.index.linking.name_key_index`,
built once per graph version, held only as long as the graph, shared with every other
linker of the graph); on another backend (a database) by default one
:meth:`GraphBackend.nodes_by_name` query per candidate span, whose normalisation (lower
case, single spaces) is kept only when the node's ``entity_key`` equals the span's.

Passage anchors and passage ordering ask the backend for the
:class:`~kgpath.backends.base.PassageSearch` capability (the shared passage vectors);
without it they are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from kgpath.backends.base import GraphBackend, PassageSearch
from kgpath.graph import Node
from kgpath.index.linking import (
    STOP_WORDS,
    EntityLinker,
    LinkerConfig,
    name_key_index,
)
from kgpath.index.passage_vectors import PassageVectors

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


def link_anchors(
    b: GraphBackend[Any, Any], query: str, *, max_ngram: int = MAX_NGRAM
) -> list[AnchorLink]:
    """The nodes ``query`` names, in question order (module docstring for the rules)."""
    cfg = _CONFIG if max_ngram == MAX_NGRAM else replace(_CONFIG, max_ngram=max_ngram)
    names = b.names()
    return [AnchorLink(k, names.node(k), query[s:e], s, e)
            for s, e, keys in EntityLinker(None, config=cfg, names=names).match(query)
            for k in keys]


def shared_passage_vectors(b: GraphBackend[Any, Any]) -> PassageVectors | None:
    """The backend's shared passage vectors, or ``None``.

    ``None`` without the :class:`~kgpath.backends.base.PassageSearch` capability or without
    passages. Embedded once per ``(graph, embedder)`` (:mod:`kgpath.index.passage_vectors`).
    """
    return b.capability(PassageSearch).passage_vectors() if b.has(PassageSearch) else None


async def ashared_passage_vectors(b: GraphBackend[Any, Any]) -> PassageVectors | None:
    """Async :func:`shared_passage_vectors`: missing passages through ``aembed_passages``."""
    if not b.has(PassageSearch):
        return None
    return await b.capability(PassageSearch).apassage_vectors()


def passage_anchors(
    b: GraphBackend[Any, Any], query_vec: np.ndarray, limit: int | None = None
) -> list[Any]:
    """``anchor_fallback="passage"``: the nodes citing the passage most similar to the query.

    In node order, at most ``limit``; ``[]`` without shared passage vectors (no
    :class:`~kgpath.backends.base.PassageSearch` capability, no passages) or when no node
    cites that passage.
    """
    vecs = shared_passage_vectors(b)
    if vecs is None or not len(vecs.ids):
        return []
    sims = vecs.matrix @ np.asarray(query_vec, np.float32).reshape(-1)
    top = vecs.ids[int(np.argmax(sims))]
    return b.capability(PassageSearch).nodes_citing(top, vecs)[:limit]
