"""Issue 23, LLM half: one call path for every LLM step (typed errors, retries, timeout).

Each probe of the issue's "LLM and provider failures escape untyped" class: a model raising
``RuntimeError``, ``TimeoutError``, ``ConnectionError`` (sync) or ``asyncio.TimeoutError``
(async) in extraction, PathRAG keywords, schema decomposition and C2RAG planning; a model
that never answers; ``llm="gpt"``. On main these raised raw (or hung, or ``AttributeError``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from kgpath import GraphIndex, HashingEmbedder, KnowledgeGraph, ScriptedLLM
from kgpath.errors import BackendError, ConfigError
from kgpath.ingest import LLMExtractor, SchemaExtractor, graph_from_documents
from kgpath.ingest.chunking import TextPassage
from kgpath.ingest.schema import EntityType, RelationType, Schema
from kgpath.llm import (
    CallPolicy,
    ReliableLLM,
    acall_llm,
    as_llm,
    backoff_delay,
    call_llm,
    llm_fingerprint,
)
from kgpath.methods.c2rag import ConstraintCheckedRetriever
from kgpath.methods.pathrag import PathRAGRetriever
from kgpath.methods.pathrag.keywords import aextract_keywords, extract_keywords
from kgpath.methods.schema import SchemaDecomposer, SchemaGuidedRetriever

FAST = CallPolicy(max_retries=2, timeout=5.0, backoff=0.0)
GOOD = json.dumps({"entities": [{"name": "Curie", "type": "Person"}],
                   "triples": [{"head": "Curie", "relation": "isolated", "tail": "radium"}]})
SYNC_ERRORS = (RuntimeError("boom"), TimeoutError("read timed out"),
               ConnectionError("connection refused"))


class Failing:
    """A kgpath LLM that raises ``exc`` on every call and counts the calls."""

    def __init__(self, exc: BaseException, model: str = "m1") -> None:
        self.exc, self.model, self.calls = exc, model, 0

    def complete(self, prompt: str) -> str:
        self.calls += 1
        raise self.exc

    async def acomplete(self, prompt: str) -> str:
        self.calls += 1
        raise self.exc


class Flaky:
    """Fails ``fails`` times, then answers ``reply``."""

    def __init__(self, fails: int, reply: str = GOOD) -> None:
        self.fails, self.reply, self.calls = fails, reply, 0

    def complete(self, prompt: str) -> str:
        self.calls += 1
        if self.calls <= self.fails:
            raise ConnectionError(f"reset #{self.calls}")
        return self.reply

    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)


class Hanging:
    """Answers only once released (the test releases it at teardown)."""

    def __init__(self, reply: str = GOOD) -> None:
        self.reply, self.release = reply, threading.Event()

    def complete(self, prompt: str) -> str:
        self.release.wait(10)
        return self.reply

    async def acomplete(self, prompt: str) -> str:
        await asyncio.sleep(10)
        return self.reply


@pytest.fixture
def hanging() -> Iterator[Hanging]:
    h = Hanging()
    yield h
    h.release.set()


def schema() -> Schema:
    return Schema(entities=[EntityType(name="Person"), EntityType(name="Element")],
                  relations=[RelationType(name="discovered", head=("Person",),
                                          tail=("Element",))])


def graph() -> KnowledgeGraph:
    return KnowledgeGraph.from_triples([("Curie", "discovered", "radium"),
                                        ("radium", "is a", "element")])


# ---------------------------------------------------------------- the call path itself
@pytest.mark.parametrize("exc", SYNC_ERRORS, ids=lambda e: type(e).__name__)
def test_any_model_exception_is_retried_then_one_backend_error(exc: Exception) -> None:
    llm = Failing(exc, model="gpt-x")
    with pytest.raises(BackendError) as info:
        call_llm(llm, "p", step="PathRAG keyword extraction", policy=FAST)
    assert llm.calls == 3  # 1 + max_retries
    msg = str(info.value)
    assert "Failing:model=gpt-x" in msg and "PathRAG keyword extraction" in msg
    assert f"{type(exc).__name__}: {exc}" in msg and "3 attempt(s)" in msg
    assert info.value.__cause__ is exc


async def test_async_timeout_error_is_retried_then_one_backend_error() -> None:
    llm = Failing(asyncio.TimeoutError(), model="m")
    with pytest.raises(BackendError, match="schema question decomposition"):
        await acall_llm(llm, "p", step="schema question decomposition", policy=FAST)
    assert llm.calls == 3


def test_a_flaky_model_succeeds_on_retry_sync_and_async() -> None:
    assert call_llm(Flaky(2), "p", step="s", policy=FAST) == GOOD
    assert asyncio.run(acall_llm(Flaky(2), "p", step="s", policy=FAST)) == GOOD
    with pytest.raises(BackendError):
        call_llm(Flaky(3), "p", step="s", policy=FAST)


def test_caller_mistakes_pass_through_unretried() -> None:
    llm = ScriptedLLM([])  # asking more than scripted is a ConfigError: fail loudly
    with pytest.raises(ConfigError, match="ran out"):
        call_llm(llm, "p", step="s", policy=FAST)
    assert len(llm.prompts) == 1


def test_a_reply_that_is_no_string_is_a_backend_error_naming_its_type() -> None:
    class Response:  # e.g. a framework response object given without its adapter
        text = GOOD

    class Raw:
        def complete(self, prompt: str) -> Any:
            return Response()

        async def acomplete(self, prompt: str) -> Any:
            return Response()

    with pytest.raises(BackendError, match="returned Response, not a string, in step x"):
        call_llm(Raw(), "p", step="step x", policy=FAST)


def test_timeout_bounds_a_sync_call(hanging: Hanging) -> None:
    pol = CallPolicy(max_retries=1, timeout=0.05, backoff=0.0)
    with pytest.raises(BackendError, match=r"2 attempt\(s\): TimeoutError: no reply within"):
        call_llm(hanging, "p", step="s", policy=pol)


async def test_timeout_bounds_an_async_call(hanging: Hanging) -> None:
    pol = CallPolicy(max_retries=0, timeout=0.05, backoff=0.0)
    with pytest.raises(BackendError, match="TimeoutError"):
        await acall_llm(hanging, "p", step="s", policy=pol)


def test_sync_call_keeps_the_callers_context_vars() -> None:
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("trace", default="unset")
    var.set("request-7")
    got = call_llm(ScriptedLLM(lambda p: var.get()), "p", step="s", policy=FAST)
    assert got == "request-7"


def test_backoff_is_exponential_with_jitter_and_capped() -> None:
    pol = CallPolicy(backoff=0.5, max_backoff=4.0)
    rng = random.Random(0)
    for retry, d in enumerate([0.5, 1.0, 2.0, 4.0, 4.0, 4.0]):
        got = [backoff_delay(retry, pol, rng) for _ in range(200)]
        assert all(d / 2 <= x <= d for x in got)
        assert max(got) - min(got) > d / 4  # jittered, not a constant
    assert backoff_delay(10_000, pol, rng) <= 4.0  # no overflow


@pytest.mark.parametrize("bad", [
    {"max_retries": -1}, {"max_retries": 1.5}, {"max_retries": True}, {"timeout": 0},
    {"timeout": -1}, {"timeout": float("nan")}, {"timeout": float("inf")},
    {"backoff": -0.1}, {"max_backoff": "1"},
])
def test_call_policy_is_validated_naming_the_value(bad: dict[str, Any]) -> None:
    (name, value), = bad.items()
    with pytest.raises(ConfigError, match=f"CallPolicy.{name}"):
        CallPolicy(**bad)


def test_reliable_llm_carries_its_policy_to_every_step() -> None:
    inner = Failing(RuntimeError("x"))
    llm = ReliableLLM(inner, policy=CallPolicy(max_retries=4, backoff=0.0))
    kws = extract_keywords("Who discovered radium?", llm)
    assert kws.source == "offline-fallback" and inner.calls == 5
    assert llm_fingerprint(llm) == llm_fingerprint(inner)
    with pytest.raises(BackendError, match="5 attempt"):
        llm.complete("p")


# ---------------------------------------------------------------- llm="gpt" and friends
@pytest.mark.parametrize("bad", ["gpt", b"gpt", ScriptedLLM, 42, object(), [GOOD]],
                         ids=["str", "bytes", "class", "int", "object", "list"])
def test_non_llm_values_are_config_errors_at_construction(bad: Any) -> None:
    g = graph()
    makers = [
        lambda: PathRAGRetriever(g, embedder=HashingEmbedder(), llm=bad),
        lambda: ConstraintCheckedRetriever(g, embedder=HashingEmbedder(), llm=bad),
        lambda: SchemaDecomposer(schema(), bad),
        lambda: SchemaGuidedRetriever(g, schema=schema(), embedder=HashingEmbedder(), llm=bad),
        lambda: LLMExtractor(bad),
        lambda: SchemaExtractor(schema(), bad),
        lambda: graph_from_documents([("p", "Curie isolated radium.")], llm=bad),
    ]
    for make in makers:
        with pytest.raises(ConfigError) as info:
            make()
        assert "llm" in str(info.value)
    with pytest.raises(ConfigError, match="the string 'gpt'.*OpenAILLM"):
        as_llm("gpt")
    with pytest.raises(ConfigError, match="got the class ScriptedLLM"):
        as_llm(ScriptedLLM)


def test_facade_refuses_llm_string_with_a_config_error() -> None:
    from kgpath import EvidenceRetriever

    with pytest.raises(ConfigError, match="'gpt'"):
        EvidenceRetriever("pathrag", graph(), embedder=HashingEmbedder(), llm="gpt")


# ---------------------------------------------------------------- each step's fallback
@pytest.mark.parametrize("exc", SYNC_ERRORS, ids=lambda e: type(e).__name__)
def test_pathrag_keywords_fall_back_offline_when_the_model_fails(exc: Exception) -> None:
    llm = ReliableLLM(Failing(exc), policy=FAST)
    kws = extract_keywords("Who discovered radium?", llm)
    assert kws.source == "offline-fallback" and "radium" in kws.keywords
    assert type(exc).__name__ in (kws.error or "")
    r = PathRAGRetriever(graph(), embedder=HashingEmbedder(), llm=llm)
    res = r.retrieve("Who discovered radium?")
    assert res.keyword_source == "offline-fallback"


async def test_pathrag_async_keywords_fall_back_on_asyncio_timeout() -> None:
    llm = ReliableLLM(Failing(asyncio.TimeoutError()), policy=FAST)
    kws = await aextract_keywords("Who discovered radium?", llm)
    assert kws.source == "offline-fallback" and "TimeoutError" in (kws.error or "")
    r = PathRAGRetriever(graph(), embedder=HashingEmbedder(), llm=llm)
    assert (await r.aretrieve("Who discovered radium?")).keyword_source == "offline-fallback"


def test_pathrag_keywords_fall_back_when_the_model_never_answers(hanging: Hanging) -> None:
    llm = ReliableLLM(hanging, policy=CallPolicy(max_retries=0, timeout=0.05))
    kws = extract_keywords("Who discovered radium?", llm)
    assert kws.source == "offline-fallback" and "no reply within" in (kws.error or "")


@pytest.mark.parametrize("exc", [*SYNC_ERRORS, asyncio.TimeoutError()],
                         ids=lambda e: type(e).__name__)
def test_schema_decomposition_falls_back_when_the_model_fails(exc: Exception) -> None:
    d = SchemaDecomposer(schema(), ReliableLLM(Failing(exc), policy=FAST))
    with pytest.warns(UserWarning, match="decomposition LLM failed"):
        plan = d.decompose("Who discovered radium?")
    assert plan.source == "fallback" and "LLM call failed" in plan.notes[0]
    with pytest.warns(UserWarning):
        aplan = asyncio.run(d.adecompose("Who discovered radium?"))
    assert aplan.source == "fallback"


@pytest.mark.parametrize("exc", [*SYNC_ERRORS, asyncio.TimeoutError()],
                         ids=lambda e: type(e).__name__)
def test_c2rag_plan_falls_back_through_the_call_path(exc: Exception) -> None:
    inner = Failing(exc)
    r = ConstraintCheckedRetriever(graph(), embedder=HashingEmbedder(),
                                   llm=ReliableLLM(inner, policy=FAST))
    assert r.plan("Who discovered radium?").source == "fallback"
    assert asyncio.run(r.aplan("Who discovered radium?")).source == "fallback"
    assert inner.calls == 6  # retried on both paths


# ---------------------------------------------------------------- extraction
@pytest.mark.parametrize("exc", [*SYNC_ERRORS, asyncio.TimeoutError()],
                         ids=lambda e: type(e).__name__)
def test_from_documents_with_a_dead_model_raises_backend_error(exc: Exception) -> None:
    llm = ReliableLLM(Failing(exc, model="dead"), policy=FAST)
    docs = [("d1", "Curie isolated radium."), ("d2", "Polonium was found.")]
    with pytest.raises(BackendError, match=r"failed on every passage.*dead.*extraction"):
        graph_from_documents(docs, llm=llm)
    with pytest.raises(BackendError, match="failed on every passage"):
        GraphIndex.from_documents(docs, embedder=HashingEmbedder(), llm=llm)
    from kgpath.ingest import agraph_from_documents

    with pytest.raises(BackendError, match="failed on every passage"):
        asyncio.run(agraph_from_documents(docs, llm=llm))
    with pytest.raises(BackendError, match="failed on every passage"):
        SchemaExtractor(schema(), llm).extract({"p1": "Curie discovered radium."})


def test_one_failing_passage_is_skipped_with_its_reason(caplog: Any) -> None:
    def reply(prompt: str) -> str:
        if "Polonium" in prompt:
            raise ConnectionError("reset by peer")
        return GOOD

    llm = ReliableLLM(ScriptedLLM(reply), policy=FAST)
    from kgpath.ingest import ingest_documents

    g = KnowledgeGraph()
    with caplog.at_level(logging.WARNING):
        report = ingest_documents(g, [("d1", "Curie isolated radium."),
                                      ("d2", "Polonium was found.")], llm=llm)
    assert [(e.source, e.target) for e in g.edges] == [("Curie", "radium")]
    [note] = [n for n in report.notes if "reset by peer" in n]
    assert note.startswith("d2") and "skipped: LLM call failed" in note
    assert "d2" in caplog.text and "reset by peer" in caplog.text


def test_flaky_extraction_is_retried_by_the_call_path() -> None:
    llm = Flaky(2)
    (ex,) = LLMExtractor(llm, policy=FAST).extract([TextPassage("p", "Curie.", "p")])
    assert llm.calls == 3 and [(r.head, r.tail) for r in ex.relations] == [("Curie", "radium")]


def test_extraction_timeout_skips_instead_of_hanging(hanging: Hanging) -> None:
    ps = [TextPassage("p", "Curie.", "p"), TextPassage("q", "Radium.", "q")]
    class HangsOnCurie:  # (ScriptedLLM serialises its calls: no good here)
        def complete(self, prompt: str) -> str:
            return GOOD if "Radium" in prompt else hanging.complete(prompt)

        async def acomplete(self, prompt: str) -> str:
            return self.complete(prompt)

    ex = LLMExtractor(HangsOnCurie(), policy=CallPolicy(max_retries=0, timeout=0.05))
    p, q = ex.extract(ps)
    assert "no reply within" in p.notes[-1] and len(q.relations) == 1


# ---------------------------------------------------------------- the other LLM steps
def _chunk_star() -> KnowledgeGraph:
    """Chunks A, Q, K (one sentence each), A linked to Q and K; cos with (1, 0, 0):
    A 0.6, Q 0.5, K 0.0 -- the walk starts at A and the most similar candidate is Q."""
    import numpy as np

    vecs = {"A": [0.6, 0.8, 0.0], "Q": [0.5, 0.0, 0.75 ** 0.5], "K": [0.0, 1.0, 0.0]}
    g = KnowledgeGraph()
    for n in vecs:
        g.add_node(f"chunk:{n}", name=n, text=f"chunk {n}", type="chunk",
                   metadata={"doc_id": n, "position": 0}, provenance=(n,))
    for n in vecs:
        g.add_node(f"sent:{n}", name=n, text=f"sentence {n}.", type="sentence",
                   metadata={"doc_id": n}, provenance=(n,))
        g.add_edge(f"chunk:{n}", f"sent:{n}", "has_sentence")
    for b in ("Q", "K"):
        g.add_edge("chunk:A", f"chunk:{b}", "similar_inter", type="similarity")
    g.vectors.set(np.asarray([*vecs.values(), *vecs.values()], dtype=np.float32))
    return g


def test_llm_guided_traversal_falls_back_to_the_most_similar_when_the_model_fails() -> None:
    import numpy as np

    from kgpath.methods.traversal import (
        TraversalConfig,
        TraversalRetriever,
        allm_guided_traversal,
        llm_guided_traversal,
    )

    q = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    cfg = TraversalConfig(max_sentences=20, min_sentences=20)
    for exc in (*SYNC_ERRORS, asyncio.TimeoutError()):
        llm = ReliableLLM(Failing(exc), policy=FAST)
        for r in (llm_guided_traversal(_chunk_star(), q, llm=llm, config=cfg),
                  asyncio.run(allm_guided_traversal(_chunk_star(), q, llm=llm, config=cfg))):
            assert r.path_ids == ["chunk:A", "chunk:Q"]  # the most similar candidate
            assert r.path[1].reason.startswith("llm_fallback: LLM ")
            assert type(exc).__name__ in r.path[1].reason and r.trace["llm_fallbacks"] == 1
    with pytest.raises(ConfigError, match="'gpt'"):
        TraversalRetriever(_chunk_star(), embedder=HashingEmbedder(8), llm="gpt")


def test_chunk_graph_themes_fall_back_to_keywords_when_the_model_fails() -> None:
    from kgpath.ingest.chunk_graph import ChunkGraphBuilder

    def reply(prompt: str) -> str:
        if "Gamma" in prompt:
            raise ConnectionError("refused")
        return '["bee biology"]'

    b = ChunkGraphBuilder(HashingEmbedder(32), llm=ReliableLLM(ScriptedLLM(reply), policy=FAST))
    docs = {"Beta": ["Beta studies honey bees."], "Gamma": ["Gamma sells red cars."]}
    g = b.build(docs)
    assert g.node("doc:Beta").metadata["theme_source"] == "llm"
    assert g.node("doc:Gamma").metadata["theme_source"] == "keywords (llm reply unusable)"
    ga = asyncio.run(b.abuild(docs))
    assert ga.node("doc:Gamma").metadata["theme_source"] == "keywords (llm reply unusable)"


def test_community_summaries_fall_back_to_keywords_when_the_model_fails() -> None:
    from kgpath.ingest.hierarchy import build_hierarchy

    g = KnowledgeGraph()
    for grp, words in (("a", "radium salts"), ("b", "electron orbit")):
        for i in range(1, 4):
            g.add_node(f"{grp}{i}", name=f"{grp.upper()}{i}", text=words, type="T")
        for i in range(1, 4):
            for j in range(1, 4):
                if i != j:
                    g.add_edge(f"{grp}{i}", f"{grp}{j}", relation="related")
    inner = Failing(RuntimeError("x"))
    h = build_hierarchy(g, llm=ReliableLLM(inner, policy=FAST))
    assert inner.calls == 3 * len(h.communities)  # asked (and retried) per community
    assert h.communities and all(c.summary_source == "keywords" for c in h.communities)


def test_reliable_llm_takes_policy_fields_as_keywords() -> None:
    llm = ReliableLLM(ScriptedLLM([GOOD]), timeout=7.5, max_retries=0)
    assert llm.policy == CallPolicy(timeout=7.5, max_retries=0)
    base = CallPolicy(backoff=0.0)
    assert ReliableLLM(ScriptedLLM([]), policy=base, max_retries=5).policy == CallPolicy(
        backoff=0.0, max_retries=5)
    with pytest.raises(ConfigError, match=r"unknown option\(s\) \['retries'\]"):
        ReliableLLM(ScriptedLLM([]), retries=3)
    with pytest.raises(ConfigError, match="CallPolicy.timeout"):
        ReliableLLM(ScriptedLLM([]), timeout=-1)


def test_a_model_with_complete_only_gets_a_threaded_async_twin() -> None:
    class SyncOnly:
        model = "sync-1"

        def complete(self, prompt: str) -> str:
            return GOOD

    llm = as_llm(SyncOnly())
    assert asyncio.run(llm.acomplete("p")) == GOOD and llm.complete("p") == GOOD
    assert "SyncOnly:model=sync-1" in llm_fingerprint(llm)
    ps = [TextPassage("p", "Curie.", "p")]
    ex = LLMExtractor(SyncOnly())
    assert asyncio.run(ex.aextract(ps)) == ex.extract(ps)
    assert len(ex.extract(ps)[0].relations) == 1
