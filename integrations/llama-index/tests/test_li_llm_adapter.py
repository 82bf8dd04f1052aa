"""Issue 23, LLM half, through LlamaIndex: a LlamaIndex ``LLM`` is adapted once (entry point).

On main a LlamaIndex LLM passed to the core built an empty graph (its ``CompletionResponse``
is no string, every passage was skipped), two LlamaIndex LLMs shared one extraction cache
(the key was the wrapper's class name), and a model raising ``RuntimeError`` /
``TimeoutError`` / ``ConnectionError`` escaped raw through the retrievers.
"""

from __future__ import annotations

import asyncio
import json
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms.custom import CustomLLM
from llama_index.retrievers.kgpath import LlamaIndexLLM, PathRAGRetriever, SchemaGuidedRetriever
from llama_index.retrievers.kgpath.llms import wrap_llm

from kgpath import GraphIndex, HashingEmbedder, KnowledgeGraph
from kgpath.errors import BackendError, ConfigError
from kgpath.ingest import LLMExtractor, graph_from_documents
from kgpath.ingest.chunking import TextPassage
from kgpath.llm import LLM_ADAPTERS, CallPolicy, ReliableLLM, as_llm, llm_fingerprint

REPLY = json.dumps({"entities": [{"name": "Curie", "type": "Person"}],
                    "triples": [{"head": "Curie", "relation": "isolated", "tail": "radium"}]})


class JsonLLM(CustomLLM):
    """A LlamaIndex LLM answering ``reply`` (or raising ``error``), counting its calls."""

    reply: str = REPLY
    model: str = "json-1"
    temperature: float = 0.0
    error: Any = None
    calls: int = 0

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name=self.model)

    def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return CompletionResponse(text=self.reply)

    def stream_complete(self, prompt: str, formatted: bool = False,
                        **kw: Any) -> CompletionResponseGen:
        raise NotImplementedError


def chain() -> KnowledgeGraph:
    return KnowledgeGraph.from_triples([("a", "to", "b"), ("b", "to", "c")],
                                       passages={"p1": "a to b to c"},
                                       provenance=[["p1"], ["p1"]])


def test_the_core_wraps_a_llamaindex_llm_through_the_entry_point() -> None:
    (ep,) = [e for e in entry_points(group=LLM_ADAPTERS) if e.name == "llama_index"]
    assert ep.load() is wrap_llm
    model = JsonLLM()
    llm = as_llm(model)
    assert isinstance(llm, LlamaIndexLLM) and llm.llm is model
    assert as_llm(llm) is llm and wrap_llm(object()) is None and wrap_llm("gpt") is None


def test_from_documents_with_a_llamaindex_llm_builds_the_graph() -> None:
    docs = [("d1", "Curie isolated radium.")]
    g = graph_from_documents(docs, llm=JsonLLM())
    assert [(e.source, e.relation, e.target) for e in g.edges] == [("Curie", "isolated", "radium")]
    index = GraphIndex.from_documents(docs, embedder=HashingEmbedder(), llm=JsonLLM())
    assert len(index.graph.edges) == 1
    r = PathRAGRetriever.from_documents(docs, embed_model=MockEmbedding(embed_dim=8),
                                        llm=JsonLLM())
    assert len(r.kgpath_retriever.index.graph.edges) == 1


def test_two_llamaindex_llms_do_not_share_the_extraction_cache(tmp_path: Path) -> None:
    a, b = JsonLLM(model="model-a"), JsonLLM(model="model-b", reply='{"triples": []}')
    assert llm_fingerprint(as_llm(a)) != llm_fingerprint(as_llm(b))
    assert llm_fingerprint(as_llm(a)) != llm_fingerprint(as_llm(JsonLLM(model="model-a",
                                                                        temperature=0.7)))
    assert "model=model-a" in llm_fingerprint(as_llm(a)) and "JsonLLM" in llm_fingerprint(a)
    ps = [TextPassage("p", "Curie isolated radium.", "p")]
    (first,) = LLMExtractor(a, cache_dir=tmp_path).extract(ps)
    (second,) = LLMExtractor(b, cache_dir=tmp_path).extract(ps)
    assert len(first.relations) == 1 and second.relations == ()  # B asked, not served A's
    assert a.calls == 1 and b.calls == 1
    LLMExtractor(a, cache_dir=tmp_path).extract(ps)
    assert a.calls == 1  # A's own reply is cached


@pytest.mark.parametrize("exc", [RuntimeError("boom"), TimeoutError("slow"),
                                 ConnectionError("refused")], ids=lambda e: type(e).__name__)
def test_a_failing_llamaindex_llm_is_typed_through_the_adapter(exc: Exception) -> None:
    model = JsonLLM(error=exc)
    fast = ReliableLLM(model, policy=CallPolicy(max_retries=1, backoff=0.0))
    r = PathRAGRetriever.from_graph(chain(), embed_model=MockEmbedding(embed_dim=8), llm=fast)
    assert r.kgpath_retriever.retrieve("Where does a lead?").keyword_source == "offline-fallback"
    assert model.calls == 2
    with pytest.raises(BackendError, match=f"JsonLLM:model=json-1.*{type(exc).__name__}"):
        graph_from_documents([("d1", "Curie isolated radium.")], llm=fast)


def test_async_timeout_of_a_llamaindex_llm_falls_back() -> None:
    class SlowLLM(JsonLLM):
        async def acomplete(self, prompt: str, formatted: bool = False,
                            **kw: Any) -> CompletionResponse:
            raise asyncio.TimeoutError

    fast = ReliableLLM(SlowLLM(), policy=CallPolicy(max_retries=0))
    r = PathRAGRetriever.from_graph(chain(), embed_model=MockEmbedding(embed_dim=8), llm=fast)
    core = asyncio.run(r.kgpath_retriever.aretrieve("Where does a lead?"))
    assert core.keyword_source == "offline-fallback"
    nodes = asyncio.run(r.aretrieve("Where does a lead?"))  # the adapter's async path
    assert nodes and all(isinstance(n.score, float) for n in nodes)


def test_llm_string_is_a_config_error_through_the_adapter() -> None:
    with pytest.raises(ConfigError, match="'gpt'"):
        PathRAGRetriever.from_graph(chain(), embed_model=MockEmbedding(embed_dim=8), llm="gpt")
    from kgpath.ingest.schema import EntityType, Schema

    with pytest.raises(ConfigError, match="'gpt'"):
        SchemaGuidedRetriever.from_graph(chain(), schema=Schema(entities=[EntityType(name="T")]),
                                   embed_model=MockEmbedding(embed_dim=8), llm="gpt")
