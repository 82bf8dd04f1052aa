"""Issue 23, LLM half, through LangChain: chat models and ``BaseLLM`` adapted once.

On main a LangChain ``BaseLLM`` (and a chat model) passed to the core was refused or built
nothing, and a model raising ``RuntimeError`` / ``TimeoutError`` / ``ConnectionError``
escaped raw through the retrievers.
"""

from __future__ import annotations

import asyncio
import json
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.runnables import RunnableLambda
from langchain_kgpath import LangChainLLM, PathRAGRetriever
from langchain_kgpath.llms import wrap_llm

from kgpath import GraphIndex, HashingEmbedder, KnowledgeGraph
from kgpath.errors import BackendError, ConfigError
from kgpath.ingest import LLMExtractor, agraph_from_documents, graph_from_documents
from kgpath.ingest.chunking import TextPassage
from kgpath.llm import LLM_ADAPTERS, CallPolicy, ReliableLLM, as_llm, llm_fingerprint

REPLY = json.dumps({"entities": [{"name": "Curie", "type": "Person"}],
                    "triples": [{"head": "Curie", "relation": "isolated", "tail": "radium"}]})
DOCS = [("d1", "Curie isolated radium.")]
WANT = [("Curie", "isolated", "radium")]


def edges(g: KnowledgeGraph) -> list[tuple[str, str, str]]:
    return [(e.source, e.relation, e.target) for e in g.edges]


def chain() -> KnowledgeGraph:
    return KnowledgeGraph.from_triples([("a", "to", "b"), ("b", "to", "c")])


def test_the_core_wraps_langchain_models_through_the_entry_point() -> None:
    (ep,) = [e for e in entry_points(group=LLM_ADAPTERS) if e.name == "langchain"]
    assert ep.load() is wrap_llm
    for model in (FakeListLLM(responses=[REPLY]), FakeListChatModel(responses=[REPLY]),
                  RunnableLambda(lambda p: REPLY)):
        llm = as_llm(model)
        assert isinstance(llm, LangChainLLM) and llm.model is model
        assert as_llm(llm) is llm
    assert wrap_llm(object()) is None and wrap_llm("gpt") is None


@pytest.mark.parametrize("make", [lambda: FakeListLLM(responses=[REPLY] * 4),
                                  lambda: FakeListChatModel(responses=[REPLY] * 4)],
                         ids=["BaseLLM", "BaseChatModel"])
def test_from_documents_with_a_langchain_model_builds_the_graph(make: Any) -> None:
    assert edges(graph_from_documents(DOCS, llm=make())) == WANT
    assert edges(asyncio.run(agraph_from_documents(DOCS, llm=make()))) == WANT
    assert edges(GraphIndex.from_documents(DOCS, embedder=HashingEmbedder(),
                                           llm=make()).graph) == WANT
    r = PathRAGRetriever.from_documents(DOCS, embedding=HashingEmbedder(), llm=make())
    assert edges(r.core.index.graph) == WANT


def test_fingerprint_is_class_model_and_temperature(tmp_path: Path) -> None:
    class Chat(FakeListChatModel):
        model_name: str = "chat-a"
        temperature: float = 0.0

    a, b = Chat(responses=[REPLY]), Chat(responses=['{"triples": []}'], model_name="chat-b")
    fa, fb = llm_fingerprint(as_llm(a)), llm_fingerprint(as_llm(b))
    assert "Chat:model=chat-a:temperature=0.0" in fa and fa != fb
    ps = [TextPassage("p", "Curie isolated radium.", "p")]
    (first,) = LLMExtractor(a, cache_dir=tmp_path).extract(ps)
    (second,) = LLMExtractor(b, cache_dir=tmp_path).extract(ps)
    assert len(first.relations) == 1 and second.relations == ()


class Broken(FakeListChatModel):
    """A chat model whose every call raises ``error``."""

    error: Any = None

    def _call(self, *args: Any, **kwargs: Any) -> str:
        raise self.error


@pytest.mark.parametrize("exc", [RuntimeError("boom"), TimeoutError("slow"),
                                 ConnectionError("refused")], ids=lambda e: type(e).__name__)
def test_a_failing_langchain_model_is_typed_through_the_adapter(exc: Exception) -> None:
    model = Broken(responses=["x"], error=exc)
    fast = ReliableLLM(model, policy=CallPolicy(max_retries=1, backoff=0.0))
    r = PathRAGRetriever.from_graph(chain(), embedding=HashingEmbedder(), llm=fast)
    assert r.result("Where does a lead?").keyword_source == "offline-fallback"
    assert r.invoke("Where does a lead?") is not None
    with pytest.raises(BackendError, match=f"Broken.*{type(exc).__name__}"):
        graph_from_documents(DOCS, llm=fast)


async def test_async_timeout_of_a_langchain_model_falls_back() -> None:
    class Slow(FakeListChatModel):
        async def _agenerate(self, *args: Any, **kwargs: Any) -> Any:
            raise asyncio.TimeoutError

    fast = ReliableLLM(Slow(responses=["x"]), policy=CallPolicy(max_retries=0))
    r = PathRAGRetriever.from_graph(chain(), embedding=HashingEmbedder(), llm=fast)
    docs = await r.ainvoke("Where does a lead?")
    assert isinstance(docs, list)
    assert (await r.core.aretrieve("Where does a lead?")).keyword_source == "offline-fallback"


def test_llm_string_is_a_config_error_through_the_adapter() -> None:
    with pytest.raises(ConfigError, match="'gpt'"):
        PathRAGRetriever.from_graph(chain(), embedding=HashingEmbedder(), llm="gpt")
