"""LangChain retrievers: concurrent first calls on a cold graph embed its texts once (issue 23).

Every method's retriever, ``invoke`` from 50 threads and ``ainvoke`` from 100 tasks, on a
fresh demo graph each: the passage-side texts (node texts, passages, names, edge texts) are
embedded exactly as often as by the same calls made one after another, all texts at most
5% more often, and the documents are the sequential ones.
"""

from __future__ import annotations

import pytest
from langchain_kgpath import (
    C2RAGRetriever,
    GraphAugmentedRetriever,
    PathConstrainedRetriever,
    PathRAGRetriever,
)

from kgpath import HashingEmbedder
from kgpath.demo.c2rag import demo_questions, load_demo_kg
from kgpath.testing.concurrency import CountingEmbedder, assert_same_work, in_tasks, in_threads

CLASSES = (PathConstrainedRetriever, PathRAGRetriever, C2RAGRetriever, GraphAugmentedRetriever)
QUESTIONS = [q["query"] for q in demo_questions()]


def _fresh(cls):
    emb = CountingEmbedder(HashingEmbedder(), delay=0.01)
    return emb, cls(graph=load_demo_kg(), embedding=emb)


def _ids(docs):
    return [d.metadata["kgpath_id"] for d in docs]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_threads_and_tasks_embed_the_cold_texts_once(cls):
    qs = (QUESTIONS * 100)[:100]
    seq, r = _fresh(cls)
    want = [_ids(r.invoke(q)) for q in qs]
    emb, r = _fresh(cls)
    assert in_threads([lambda q=q: _ids(r.invoke(q)) for q in qs[:50]]) == want[:50]
    assert_same_work(emb, _seq_of(cls, qs[:50]))
    emb, r = _fresh(cls)

    def call(q):
        async def run():
            return _ids(await r.ainvoke(q))
        return run
    assert in_tasks([call(q) for q in qs]) == want
    assert_same_work(emb, seq)


def _seq_of(cls, qs):
    emb, r = _fresh(cls)
    for q in qs:
        r.invoke(q)
    return emb
