r"""Link the entities a question names to graph nodes.

:class:`EntityLinker` indexes every node name by :func:`kgpath.ingest.entity_key` (the key
``from_documents`` merges names by) and matches the question's word n-grams against it,
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
* when nothing matches by key and an embedder is given (``embedding_fallback``), the
  ``fallback_k`` nodes most similar to the whole question with cosine at least
  ``fallback_floor`` are returned, marked ``how="embedding"`` with the whole question as
  span.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.ingest.extraction import entity_key

__all__ = ["STOP_WORDS", "EntityLink", "EntityLinker", "LinkerConfig", "link_entities"]

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
    embedding_fallback: bool = True
    fallback_k: int = 3
    fallback_floor: float = 0.5

    def __post_init__(self) -> None:
        for name, low in (("max_ngram", 1), ("min_key_chars", 1), ("fallback_k", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ConfigError(f"{name} must be an int >= {low}, got {v!r}")
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


def _words(query: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _WORD.finditer(query)]


def _marked(query: str, span: tuple[int, int]) -> bool:
    """A word written with a capital letter or containing a digit."""
    w = query[span[0]:span[1]]
    return w[:1].isupper() or any(c.isdigit() for c in w)


class EntityLinker:
    """Key-index of a graph's node names; :meth:`link` finds them in a question.

    Parameters
    ----------
    graph
        The graph whose nodes are linked (passage-typed nodes are linked like any other).
    config
        :class:`LinkerConfig`.
    embedder
        Optional embedder for the fallback (uses the graph's stored node vectors).

    Examples
    --------
    >>> g = KnowledgeGraph()
    >>> _ = g.add_node("Marie Curie"); _ = g.add_node("Curie"); _ = g.add_node("Warsaw")
    >>> [(x.node_id, x.start, x.end) for x in EntityLinker(g).link(
    ...     "Was Marie Curie's city Warsaw?")]
    [('Marie Curie', 4, 17), ('Warsaw', 23, 29)]
    """

    def __init__(self, graph: KnowledgeGraph, *, config: LinkerConfig | None = None,
                 embedder: Any = None) -> None:
        self.graph = graph
        self.config = config or LinkerConfig()
        self.embedder = embedder
        self._keys: dict[str, list[str]] = {}
        self._version = -1

    def _index(self) -> dict[str, list[str]]:
        if self._version != self.graph.version or not self._keys:
            keys: dict[str, list[str]] = {}
            for n in self.graph.nodes:
                k = entity_key(n.name or n.id)
                if k:
                    keys.setdefault(k, []).append(n.id)
            self._keys, self._version = keys, self.graph.version
        return self._keys

    def _candidate(self, query: str, words: Sequence[tuple[int, int]], i: int,
                   n: int) -> tuple[str, list[str]] | None:
        cfg = self.config
        if n > 1 and query[words[i][0]:words[i][1]].lower() in _ARTICLES:
            return None  # the key drops a leading article: the shorter span matches
        key = entity_key(query[words[i][0]:words[i + n - 1][1]])
        if len(key) < cfg.min_key_chars or key in STOP_WORDS:
            return None
        if cfg.require_capital_unigram and not any(
            _marked(query, words[j]) for j in range(i, i + n)
        ):
            return None
        ids = self._index().get(key)
        return (key, ids) if ids else None

    def link(self, query: str) -> list[EntityLink]:
        """Linked nodes in question order (key matches), else the embedding fallback."""
        words = _words(query)
        used = [False] * len(words)
        found: list[EntityLink] = []
        for n in range(min(self.config.max_ngram, len(words)), 0, -1):
            for i in range(len(words) - n + 1):
                if any(used[i:i + n]):
                    continue
                hit = self._candidate(query, words, i, n)
                if hit is None:
                    continue
                s, e = words[i][0], words[i + n - 1][1]
                used[i:i + n] = [True] * n
                found.extend(EntityLink(nid, self.graph.node(nid).name, s, e, query[s:e])
                             for nid in hit[1])
        found.sort(key=lambda x: (x.start, x.node_id))
        if not found and self.embedder is not None and self.config.embedding_fallback:
            return self._fallback(query)
        return found

    def _fallback(self, query: str) -> list[EntityLink]:
        cfg, g = self.config, self.graph
        if g.num_nodes == 0 or g.missing_embeddings():
            return []
        q = np.asarray(self.embedder.embed_queries([query])[0], np.float32)
        sims = g.embeddings @ q
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
