"""PCR hits resolve their path on first read, and look exactly like eager hits (issue 14)."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from kgpath import HashingEmbedder, KnowledgeGraph, PathConstrainedRetriever, PCRConfig
from kgpath.errors import ConfigError
from kgpath.methods.pcr import PCRHit
from kgpath.methods.pcr.result import LAZY


def _pcr() -> PathConstrainedRetriever:
    g = KnowledgeGraph.from_triples([("a", "to", "b"), ("b", "to", "c"), ("x", "to", "y")])
    return PathConstrainedRetriever(g, embedder=HashingEmbedder(), config=PCRConfig.paper())


def test_path_resolved_once_on_first_read() -> None:
    calls = []

    def resolve():  # type: ignore[no-untyped-def]
        calls.append(1)
        return ("a", "b"), ()

    node = _pcr().graph.node("b")
    hit = PCRHit.lazy(node, 0.5, 1, resolve)
    assert calls == []
    assert hit.path == ("a", "b") and hit.anchor_id == "a" and hit.edges == ()
    assert hit.path == ("a", "b")
    assert calls == [1]
    assert hit.resolve is None  # the resolver (and the BFS tree it holds) is released


def test_lazy_hit_equals_eager_hit() -> None:
    pcr = _pcr()
    hit = {h.id: h for h in pcr.retrieve("c", anchor="a").hits}["c"]
    assert hit.__dict__["path"] is LAZY
    g = pcr.graph
    eager = PCRHit(node=g.node("c"), score=hit.score, hops=2, path=("a", "b", "c"),
                   edges=(g.edges_between("a", "b")[0], g.edges_between("b", "c")[0]))
    assert hit == eager and repr(hit) == repr(eager)
    fresh = {h.id: h for h in pcr.retrieve("c", anchor="a").hits}["c"]
    assert pickle.loads(pickle.dumps(fresh)) == eager
    fresh = {h.id: h for h in pcr.retrieve("c", anchor="a").hits}["c"]
    assert copy.deepcopy(fresh) == eager
    assert dataclasses.replace(fresh, score=1.0).path == ("a", "b", "c")
    with pytest.raises(dataclasses.FrozenInstanceError):
        hit.path = ()  # type: ignore[misc]


def test_unreachable_hit_defaults() -> None:
    hit = PCRHit(node=_pcr().graph.node("x"), score=0.1, hops=None)
    assert hit.path == () and hit.edges == () and hit.anchor_id is None


def test_override_cache_keeps_validation() -> None:
    pcr = _pcr()
    assert pcr.retrieve("c", anchor="a", max_depth=1).config.max_depth == 1
    with pytest.raises(ConfigError):
        pcr.retrieve("c", anchor="a", max_depth=True)
    assert pcr.retrieve("c", anchor="a", max_depth=1).config.max_depth == 1
    pcr.config = PCRConfig.paper(k=1)
    res = pcr.retrieve("c", anchor="a", max_depth=1)
    assert res.config.k == 1 and len(res.hits) == 1
