"""Either framework's LLM works in either adapter (issue 24: LLM support both ways)."""

from __future__ import annotations

import json

import pytest

from kgpath.data import load_demo_graph

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_kgpath")

QUESTION = "Which award did the discoverers of radium receive?"
REPLY = json.dumps({"high_level_keywords": ["award"], "low_level_keywords": ["radium"]})


def test_a_langchain_chat_model_drives_the_llamaindex_adapter() -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from llama_index.retrievers.kgpath import PathRAGRetriever

    chat = FakeListChatModel(responses=[REPLY] * 4)
    retriever = PathRAGRetriever.from_graph(load_demo_graph(), llm=chat)
    nodes = retriever.retrieve(QUESTION)
    assert nodes and chat.i == 1  # the chat model was asked once, for the keywords


def test_a_llamaindex_llm_drives_the_langchain_adapter() -> None:
    from langchain_kgpath import PathRAGRetriever
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback

    class Counting(CustomLLM):
        calls: int = 0

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="counting")

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False,
                     **kw: object) -> CompletionResponse:
            self.calls += 1
            return CompletionResponse(text=REPLY)

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kw: object):  # type: ignore[no-untyped-def]
            yield self.complete(prompt)

    llm = Counting()
    docs = PathRAGRetriever.from_graph(load_demo_graph(), llm=llm).invoke(QUESTION)
    assert docs and llm.calls == 1
