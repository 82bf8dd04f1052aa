"""OpenAI-compatible backends against fake clients with the SDK's response shape."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from kgpath import BackendError, OpenAIEmbedder, OpenAILLM
from kgpath.rerank import CallableReranker, CrossEncoderReranker, EmbeddingReranker


class FakeEmbeddings:
    def __init__(self):
        self.calls = []

    def create(self, **kw):
        self.calls.append(kw)
        if kw["input"] == ["boom"]:
            raise RuntimeError("server said no")
        return SimpleNamespace(
            data=[SimpleNamespace(embedding=[float(len(t)), 1.0, 0.0]) for t in kw["input"]]
        )


class AsyncFakeEmbeddings(FakeEmbeddings):
    async def create(self, **kw):  # type: ignore[override]
        return FakeEmbeddings.create(self, **kw)


def test_openai_embedder_sync_and_async_use_native_clients():
    sync_api, async_api = FakeEmbeddings(), AsyncFakeEmbeddings()
    e = OpenAIEmbedder(
        "my-model", dimensions=3, batch_size=2,
        client=SimpleNamespace(embeddings=sync_api),
        async_client=SimpleNamespace(embeddings=async_api),
    )
    out = e.embed_passages(["ab", "abcd", "x"])
    assert out.shape == (3, 3)
    np.testing.assert_allclose(out[0], np.array([2, 1, 0]) / np.sqrt(5), rtol=1e-6)
    assert [c["input"] for c in sync_api.calls] == [["ab", "abcd"], ["x"]]  # batched
    assert sync_api.calls[0]["model"] == "my-model" and sync_api.calls[0]["dimensions"] == 3
    import asyncio

    a = asyncio.run(e.aembed_queries(["ab"]))
    np.testing.assert_allclose(a, out[:1], rtol=1e-6)
    assert async_api.calls and not any(c["input"] == ["ab"] for c in sync_api.calls[2:])


def test_openai_embedder_failure_is_typed():
    e = OpenAIEmbedder(client=SimpleNamespace(embeddings=FakeEmbeddings()))
    with pytest.raises(BackendError, match="server said no"):
        e.embed_queries(["boom"])


class FakeCompletions:
    def __init__(self, reply):
        self.reply, self.calls = reply, []

    def create(self, **kw):
        self.calls.append(kw)
        msg = SimpleNamespace(content=self.reply)
        return SimpleNamespace(choices=[SimpleNamespace(message=msg)])


async def test_openai_llm_sync_async_and_base_url_params():
    comp = FakeCompletions("hello")

    class AsyncComp(FakeCompletions):
        async def create(self, **kw):  # type: ignore[override]
            return FakeCompletions.create(self, **kw)

    acomp = AsyncComp("async hello")
    llm = OpenAILLM(
        "m", temperature=0.2, max_tokens=5,
        client=SimpleNamespace(chat=SimpleNamespace(completions=comp)),
        async_client=SimpleNamespace(chat=SimpleNamespace(completions=acomp)),
    )
    assert llm.complete("hi") == "hello"
    assert await llm.acomplete("hi") == "async hello"
    assert comp.calls[0]["messages"] == [{"role": "user", "content": "hi"}]
    assert comp.calls[0]["max_tokens"] == 5 and comp.calls[0]["temperature"] == 0.2


def test_openai_llm_builds_client_with_base_url(monkeypatch):
    pytest.importorskip("openai")
    import openai

    seen = {}

    class Client:
        def __init__(self, **kw):
            seen.update(kw)
            self.chat = SimpleNamespace(completions=FakeCompletions("ok"))

    monkeypatch.setattr(openai, "OpenAI", Client)
    llm = OpenAILLM("local-model", base_url="http://127.0.0.1:8000/v1", api_key="x")
    assert llm.complete("q") == "ok"
    assert seen == {"api_key": "x", "base_url": "http://127.0.0.1:8000/v1"}


def test_rerankers():
    from kgpath import HashingEmbedder

    r = EmbeddingReranker(HashingEmbedder(dim=64))
    s = r.score("tower of london", ["the tower of london", "a bicycle"])
    assert s[0] > s[1]
    c = CallableReranker(lambda q, ts: [len(t) for t in ts])
    assert c.score("q", ["a", "abc"]).tolist() == [1.0, 3.0]
    with pytest.raises(BackendError, match="1 scores for 2"):
        CallableReranker(lambda q, ts: [1.0]).score("q", ["a", "b"])

    class FakeCE:
        def predict(self, pairs):
            return [float(p[1] == "yes") for p in pairs]

    assert CrossEncoderReranker(FakeCE()).score("q", ["no", "yes"]).tolist() == [0.0, 1.0]
