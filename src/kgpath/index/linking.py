r"""Link the entities a question names to graph nodes.

:class:`EntityLinker` indexes every node name by :func:`kgpath.ingest.entity_key` (the key
``graph_from_documents`` merges names by) and matches the question's word n-grams against it,
longest first: a span that is matched is not reused by a shorter n-gram inside it
("Marie Curie" wins over "Curie"). Each link records the character span it matched.

Rules (documented constants, no paper defaults):

* n-grams of 1..``max_ngram`` words (word = ``\w+`` run, apostrophes inside kept); an
  n-gram starting with an article is skipped (the key drops it, so the span without it
  matches the same node);
* an n-gram's key must have at least ``min_key_chars`` characters and must not be a
  stop word (``the``, ``what``, ...);
* a one-word match must be written with a capital letter or a digit in the question
  (``require_capital_unigram``), so "film" in "which film" does not link a node named
  "Film"; longer n-grams need at least one capitalised or numeric word for the same reason;
  with ``exact_unmarked`` such an unmarked span still links a node whose name is written
  exactly so ("radium" links a node named "radium": the graph itself writes it in lower
  case; PCR's anchors, :func:`kgpath.methods.pcr.anchors.link_anchors`);
* when nothing matches by key and an embedder is given (``embedding_fallback``), the
  ``fallback_k`` nodes most similar to the whole question with cosine at least
  ``fallback_floor`` are returned, marked ``how="embedding"`` with the whole question as
  span.

Lookup (:class:`NameLookup`): which nodes have a span's key. :class:`GraphNames` answers
from one key index per graph and version (:func:`name_key_index`, shared by every linker
of the graph); a database backend answers with its own name query (PCR's anchors).

Exact names: :func:`find_by_name` finds the nodes whose name equals a given one up to case
and white space (an anchor named by the caller), from its own index per graph and version.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from kgpath._singleflight import SingleFlight
from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph, Node
from kgpath.graph.columns import HashIndex, NodeColumns
from kgpath.graph.model import norm_name
from kgpath.ingest.extraction import entity_key

__all__ = [
    "STOP_WORDS",
    "EntityLink",
    "EntityLinker",
    "GraphNames",
    "LinkerConfig",
    "NameLookup",
    "find_by_name",
    "link_entities",
    "name_key_index",
]

STOP_WORDS: frozenset[str] = frozenset(
    "a an and are as at be by did do does for from had has have he her his how in is it its "
    "me my of on or she that the their them they this those to was we were what when where "
    "which who whom whose why will with you your".split()
)
_ARTICLES = frozenset({"the", "a", "an"})
_WORD = re.compile(r"\w+(?:['’]\w+)*")


@dataclass(frozen=True, kw_only=True)
class LinkerConfig:
    """Entity linking options (see the module docstring for the rules)."""

    max_ngram: int = 6
    min_key_chars: int = 2
    require_capital_unigram: bool = True
    exact_unmarked: bool = False
    embedding_fallback: bool = True
    fallback_k: int = 3
    fallback_floor: float = 0.5

    def __post_init__(self) -> None:
        for name, low in (("max_ngram", 1), ("min_key_chars", 1), ("fallback_k", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ConfigError(f"{name} must be an int >= {low}, got {v!r}")
        if not isinstance(self.exact_unmarked, bool):
            raise ConfigError(f"exact_unmarked must be a bool, got {self.exact_unmarked!r}")
        f = self.fallback_floor
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not -1 <= f <= 1:
            raise ConfigError(f"fallback_floor must be a number in [-1, 1], got {f!r}")


@dataclass(frozen=True)
class EntityLink:
    """A question span linked to a node: ``query[start:end]`` names ``node_id``."""

    node_id: str
    name: str
    start: int
    end: int
    surface: str
    score: float = 1.0
    how: Literal["key", "embedding"] = "key"


class NameLookup(Protocol):
    """Which nodes have a name key: what :class:`EntityLinker` matches spans against.

    ``candidates(key, span)`` gives the keys (any node key type: an index, a database
    key) of the nodes whose :func:`entity_key` is ``key`` (``span`` is the question text
    it came from), in node order; ``node(k)`` gives the node record of one. The sequence
    may be shared by every linker of the graph (:class:`GraphNames` returns the cached
    index's own list): callers read it and never modify it.
    """

    def candidates(self, key: str, span: str) -> Sequence[Any]:
        """Node keys whose name key is ``key``, in node order."""
        ...

    def node(self, k: Any) -> Node:
        """The node record of a key :meth:`candidates` gave."""
        ...


_FLIGHT = SingleFlight()  # the two name indexes: built once for concurrent first callers
_INDEX_CACHE: dict[int, tuple[int, weakref.ref[KnowledgeGraph], dict[str, list[int]]]] = {}
_NAME_CACHE: dict[
    int, tuple[int, weakref.ref[KnowledgeGraph], dict[str, list[int]] | HashIndex]
] = {}


def name_key_index(graph: KnowledgeGraph) -> dict[str, list[int]]:
    """``entity_key(name) -> node indices``, built once per graph and version.

    Not :func:`find_by_name`'s index: that one only lower-cases and joins spaces, and the
    key also drops accents, punctuation, a possessive and a leading article ("Beatles"
    names "The Beatles"). The cache holds the graph weakly and drops its index when the
    graph is collected, so a large graph's index (one entry per distinct name) lives only
    as long as the graph.
    """
    version = graph.version  # read before the nodes: a change during the build rebuilds
    hit = _INDEX_CACHE.get(id(graph))
    if hit is not None and hit[1]() is graph and hit[0] == version:
        return hit[2]
    return _FLIGHT.do(("keys", id(graph), version), lambda: _build_key_index(graph, version))


def _build_key_index(graph: KnowledgeGraph, version: int) -> dict[str, list[int]]:
    """Build :func:`name_key_index`'s index (once for concurrent callers)."""
    hit = _INDEX_CACHE.get(id(graph))
    if hit is not None and hit[1]() is graph and hit[0] == version:
        return hit[2]  # built by the caller just before this one
    index: dict[str, list[int]] = {}
    for i, n in enumerate(graph.nodes):
        key = entity_key(n.name or n.id)
        if key:
            index.setdefault(key, []).append(i)
    if hit is None or hit[1]() is not graph:
        weakref.finalize(graph, _INDEX_CACHE.pop, id(graph), None)
    _INDEX_CACHE[id(graph)] = (version, weakref.ref(graph), index)
    return index


def find_by_name(graph: KnowledgeGraph, name: str) -> list[int]:
    """Indices of nodes whose name equals ``name`` (case- and space-insensitive).

    The lookup key is :func:`kgpath.graph.model.norm_name` (lower case, runs of white
    space collapsed), nothing more: "tower of london" finds "Tower  of London", "London"
    does not. The index is built once per graph and version and held like
    :func:`name_key_index`'s; a compact graph's is a
    :class:`~kgpath.graph.columns.HashIndex` over its ids (its names are its ids).

    Examples
    --------
    >>> g = KnowledgeGraph()
    >>> _ = g.add_node("t", name="Tower  of London")
    >>> find_by_name(g, " tower of LONDON"), find_by_name(g, "London")
    ([0], [])
    """
    version = graph.version  # read before the nodes: a change during the build rebuilds
    hit = _NAME_CACHE.get(id(graph))
    if hit is not None and hit[1]() is graph and hit[0] == version:
        return list(hit[2].get(norm_name(name), []))
    index = _FLIGHT.do(("names", id(graph), version), lambda: _build_name_index(graph, version))
    return list(index.get(norm_name(name), []))


def _build_name_index(graph: KnowledgeGraph,
                      version: int) -> dict[str, list[int]] | HashIndex:
    """Build :func:`find_by_name`'s index (once for concurrent callers)."""
    hit = _NAME_CACHE.get(id(graph))
    if hit is not None and hit[1]() is graph and hit[0] == version:
        return hit[2]
    nodes = graph.nodes
    index: dict[str, list[int]] | HashIndex
    if isinstance(nodes, NodeColumns):  # the compact mode: names are ids
        index = HashIndex(nodes.ids, key=norm_name)
    else:
        index = {}
        for i, n in enumerate(nodes):
            index.setdefault(norm_name(n.name), []).append(i)
    if hit is None or hit[1]() is not graph:
        weakref.finalize(graph, _NAME_CACHE.pop, id(graph), None)
    _NAME_CACHE[id(graph)] = (version, weakref.ref(graph), index)
    return index


class GraphNames:
    """:class:`NameLookup` over an in-memory graph: :func:`name_key_index`, node indices."""

    def __init__(self, graph: KnowledgeGraph) -> None:
        self.graph = graph

    def candidates(self, key: str, span: str) -> Sequence[int]:
        """Indices of the nodes whose name key is ``key`` (the shared index's list: read only)."""
        return name_key_index(self.graph).get(key, [])  # cached per graph and version there

    def node(self, k: Any) -> Node:
        """The node at index ``k``."""
        return self.graph.node_at(int(k))


def _words(query: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _WORD.finditer(query)]


def _any_marked(query: str, words: Sequence[tuple[int, int]]) -> bool:
    """A word written with a capital letter or containing a digit among ``words``."""
    for s, e in words:
        w = query[s:e]
        if w[:1].isupper() or any(c.isdigit() for c in w):
            return True
    return False


class EntityLinker:
    """Finds the nodes a question names (:meth:`link`, :meth:`match`).

    Parameters
    ----------
    graph
        The graph whose nodes are linked (passage-typed nodes are linked like any other);
        ``None`` with ``names`` (a database), then without the embedding fallback.
    config
        :class:`LinkerConfig`.
    embedder
        Optional embedder for the fallback (uses the graph's stored node vectors).
    names
        Where span keys are looked up (default :class:`GraphNames` of ``graph``).

    Examples
    --------
    >>> g = KnowledgeGraph()
    >>> _ = g.add_node("Marie Curie"); _ = g.add_node("Curie"); _ = g.add_node("Warsaw")
    >>> [(x.node_id, x.start, x.end) for x in EntityLinker(g).link(
    ...     "Was Marie Curie's city Warsaw?")]
    [('Marie Curie', 4, 17), ('Warsaw', 23, 29)]
    """

    def __init__(self, graph: KnowledgeGraph | None, *, config: LinkerConfig | None = None,
                 embedder: Any = None, names: NameLookup | None = None) -> None:
        if names is None:
            if graph is None:
                raise ConfigError("EntityLinker needs a graph or names (a NameLookup), "
                                  "got neither")
            names = GraphNames(graph)
        self.graph = graph
        self.config = config or LinkerConfig()
        self.embedder = embedder
        self.names: NameLookup = names

    def _candidate(self, query: str, words: Sequence[tuple[int, int]], i: int,
                   n: int) -> list[Any]:
        cfg = self.config
        if n > 1 and query[words[i][0]:words[i][1]].lower() in _ARTICLES:
            return []  # the key drops a leading article: the shorter span matches
        span = query[words[i][0]:words[i + n - 1][1]]
        key = entity_key(span)
        if len(key) < cfg.min_key_chars or key in STOP_WORDS:
            return []
        check = cfg.require_capital_unigram  # a capitalised or numeric word
        if check and not cfg.exact_unmarked and not _any_marked(query, words[i:i + n]):
            return []
        keys = self.names.candidates(key, span)
        if not len(keys):
            return []
        if check and cfg.exact_unmarked and not _any_marked(query, words[i:i + n]):
            return [k for k in keys if self.names.node(k).name == span]  # written so
        return list(keys)

    def match(self, query: str) -> list[tuple[int, int, list[Any]]]:
        """Key matches in question order: ``(start, end, node keys in lookup order)``."""
        words = _words(query)
        used = [False] * len(words)
        found: list[tuple[int, int, list[Any]]] = []
        for n in range(min(self.config.max_ngram, len(words)), 0, -1):
            for i in range(len(words) - n + 1):
                if any(used[i:i + n]):
                    continue
                keys = self._candidate(query, words, i, n)
                if keys:
                    used[i:i + n] = [True] * n
                    found.append((words[i][0], words[i + n - 1][1], keys))
        found.sort(key=lambda m: m[0])
        return found

    def link(self, query: str) -> list[EntityLink]:
        """Linked nodes in question order (key matches), else the embedding fallback."""
        found = [EntityLink(node.id, node.name, s, e, query[s:e])
                 for s, e, keys in self.match(query) for node in map(self.names.node, keys)]
        found.sort(key=lambda x: (x.start, x.node_id))
        if not found and self.embedder is not None and self.config.embedding_fallback:
            return self._fallback(query)
        return found

    def _fallback(self, query: str) -> list[EntityLink]:
        cfg, g = self.config, self.graph
        if g is None or g.num_nodes == 0 or g.vectors.missing():
            return []
        q = np.asarray(self.embedder.embed_queries([query])[0], np.float32)
        sims = g.vectors.matrix @ q
        order = np.argsort(-sims, kind="stable")[: cfg.fallback_k]
        return [
            EntityLink(g.node_at(int(i)).id, g.node_at(int(i)).name, 0, len(query), query,
                       float(sims[i]), "embedding")
            for i in order if sims[i] >= cfg.fallback_floor
        ]


def link_entities(graph: KnowledgeGraph, query: str, **options: Any) -> list[EntityLink]:
    """One-off :meth:`EntityLinker.link` (``options``: ``embedder`` and config fields)."""
    embedder = options.pop("embedder", None)
    try:
        cfg = LinkerConfig(**options)
    except TypeError as exc:
        raise ConfigError(f"link_entities: {exc}") from exc
    return EntityLinker(graph, config=cfg, embedder=embedder).link(query)
