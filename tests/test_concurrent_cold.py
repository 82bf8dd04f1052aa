"""Concurrent first calls on a cold index do the cold work once (issue 23).

Each method runs the same questions one after another on a fresh graph, then concurrently on
another fresh graph (50 threads, 100 asyncio tasks, threads and tasks mixed): every passage
side text (node texts, passages, node names, edge texts) must be embedded exactly as often as
sequentially (once), every text at most 5% more often in total, and the results must equal
the sequential ones. A counting embedder with a small delay makes the calls meet on the cold
paths.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kgpath import EvidenceRetriever, HashingEmbedder
from kgpath.demo.c2rag import demo_questions, load_demo_kg
from kgpath.index import GraphIndex
from kgpath.index.passage_vectors import (
    apassage_vectors,
    atext_vectors,
    passage_vectors,
    text_vectors,
)
from kgpath.testing.concurrency import (
    CountingEmbedder,
    FailsOnce,
    assert_same_work,
    in_tasks,
    in_threads,
    mixed,
)

METHODS = ("pcr", "pathrag", "c2rag", "augmented")
QUESTIONS = [q["query"] for q in demo_questions()]
DELAY = 0.01


def _fresh(method: str) -> tuple[CountingEmbedder, EvidenceRetriever]:
    emb = CountingEmbedder(HashingEmbedder(), delay=DELAY)
    return emb, EvidenceRetriever(method, load_demo_kg(), embedder=emb)


def _ids(found: list[Any]) -> list[str]:
    return [e.id for e in found]


def _sequential(method: str, questions: list[str]) -> tuple[CountingEmbedder, list[list[str]]]:
    emb, r = _fresh(method)
    return emb, [_ids(r.retrieve(q)) for q in questions]


@pytest.mark.parametrize("method", METHODS)
def test_fifty_threads_embed_the_cold_texts_once(method: str) -> None:
    qs = (QUESTIONS * 50)[:50]
    seq, want = _sequential(method, qs)
    emb, r = _fresh(method)
    got = in_threads([lambda q=q: _ids(r.retrieve(q)) for q in qs])
    assert got == want
    assert_same_work(emb, seq)


@pytest.mark.parametrize("method", METHODS)
def test_hundred_tasks_embed_the_cold_texts_once(method: str) -> None:
    qs = (QUESTIONS * 100)[:100]
    seq, want = _sequential(method, qs)
    emb, r = _fresh(method)

    def call(q: str) -> Callable[[], Any]:
        async def run() -> list[str]:
            return _ids(await r.aretrieve(q))
        return run
    assert in_tasks([call(q) for q in qs]) == want
    assert_same_work(emb, seq)


@pytest.mark.parametrize("method", METHODS)
def test_sync_and_async_calls_mixed_embed_the_cold_texts_once(method: str) -> None:
    qs = (QUESTIONS * 40)[:40]
    seq, want = _sequential(method, qs)
    emb, r = _fresh(method)

    def call(q: str) -> Callable[[], Any]:
        async def run() -> list[str]:
            return _ids(await r.aretrieve(q))
        return run
    got = mixed([lambda q=q: _ids(r.retrieve(q)) for q in qs[:20]], [call(q) for q in qs[20:]])
    assert got == want
    assert_same_work(emb, seq)


def test_index_build_passages_and_text_sets_once_for_threads_and_tasks() -> None:
    g = load_demo_kg()
    emb = CountingEmbedder(HashingEmbedder(), delay=DELAY)
    index = GraphIndex(g, emb)
    names = [n.name for n in g.nodes]

    async def build() -> None:
        await index.abuild()
        await apassage_vectors(g, emb)
        await atext_vectors(g, emb, "node_names", names)

    def build_sync() -> None:
        index.build()
        passage_vectors(g, emb)
        text_vectors(g, emb, "node_names", names)
    mixed([build_sync] * 25, [build] * 25)
    want = [n.search_text for n in g.nodes] + [p.text for p in g.passages.values()] + names
    assert sorted(emb.counter("passage").elements()) == sorted(want)


def test_a_failed_cold_build_reaches_every_caller_and_the_next_call_builds() -> None:
    g = load_demo_kg()
    inner = FailsOnce(expect=20)
    index = GraphIndex(g, inner)

    def build() -> str:
        inner.came.release()
        try:
            index.build()
        except ConnectionError as exc:
            return str(exc)
        return "built"
    assert in_threads([build] * 20) == ["model offline"] * 20
    assert inner.calls == 1
    inner.expect = 0
    assert build() == "built" and inner.calls == 2 and not g.vectors.missing()
