"""Entity linking: hand-computed spans on small graphs."""

from __future__ import annotations

import numpy as np
import pytest

from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.index.linking import EntityLinker, LinkerConfig, link_entities


def _graph(*names: str) -> KnowledgeGraph:
    g = KnowledgeGraph()
    for n in names:
        g.add_node(n, name=n)
    return g


def test_longest_match_first_and_spans():
    g = _graph("Marie Curie", "Curie", "Warsaw", "Nobel Prize in Physics")
    q = "Did Marie Curie win the Nobel Prize in Physics in Warsaw?"
    got = [(x.node_id, x.start, x.end, x.surface) for x in EntityLinker(g).link(q)]
    assert got == [
        ("Marie Curie", 4, 15, "Marie Curie"),
        ("Nobel Prize in Physics", 24, 46, "Nobel Prize in Physics"),
        ("Warsaw", 50, 56, "Warsaw"),
    ]


def test_key_normalisation_possessive_case_article():
    g = _graph("The Beatles", "Irène Joliot-Curie")
    q = "Which beatles album did irene joliot curie's Beatles friend like?"
    got = [(x.node_id, x.surface) for x in EntityLinker(g).link(q)]
    # "beatles" (lower case, one word) is skipped; "irene joliot curie's" is three words
    # with no capital either -> skipped; "Beatles" links.
    assert got == [("The Beatles", "Beatles")]
    got2 = [(x.node_id, x.surface) for x in EntityLinker(g).link("Was Irene Joliot Curie's?")]
    assert got2 == [("Irène Joliot-Curie", "Irene Joliot Curie's")]


def test_lowercase_unigram_and_stop_words_skipped():
    g = _graph("film", "The", "Film")
    assert EntityLinker(g).link("which film is the best") == []
    cfg = LinkerConfig(require_capital_unigram=False)
    got = [x.node_id for x in EntityLinker(g, config=cfg).link("which film is the best")]
    assert got == ["Film", "film"]  # both share the key "film"; same span, id order


def test_embedding_fallback_only_without_key_match():
    g = _graph("Alpha", "Beta")
    g.vectors.set(np.array([[1.0, 0.0], [0.0, 1.0]], np.float32))

    class E:
        def embed_queries(self, texts):
            return np.array([[0.6, 0.8]], np.float32)

    got = EntityLinker(g, embedder=E(), config=LinkerConfig(fallback_k=2, fallback_floor=0.7)
                       ).link("something else")
    assert [(x.node_id, x.how, round(x.score, 2)) for x in got] == [("Beta", "embedding", 0.8)]
    assert [x.how for x in EntityLinker(g, embedder=E()).link("is Alpha here")] == ["key"]


def test_bad_config_raises():
    with pytest.raises(ConfigError, match="max_ngram"):
        LinkerConfig(max_ngram=0)
    with pytest.raises(ConfigError, match="bogus"):
        link_entities(_graph("A"), "A", bogus=1)
