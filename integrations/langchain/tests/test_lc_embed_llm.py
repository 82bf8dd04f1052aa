"""LangChain models inside kgpath: ``Embeddings`` via the adapter's ``LangChainEmbedder`` (also
when passed straight to the core, through the adapter's entry point) and helpers of its
document policies (offline: DeterministicFakeEmbedding, FakeListChatModel)."""

from __future__ import annotations

from importlib.metadata import entry_points

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_kgpath import LangChainEmbedder, LangChainLLM
from langchain_kgpath.compressors import first_score
from langchain_kgpath.embeddings import wrap_embeddings

from kgpath import GraphIndex, KnowledgeGraph
from kgpath.embeddings import EMBEDDER_ADAPTERS, as_embedder
from kgpath.llm import LLM


def test_the_core_wraps_embeddings_through_the_entry_point() -> None:
    (ep,) = [e for e in entry_points(group=EMBEDDER_ADAPTERS) if e.name == "langchain"]
    assert ep.load() is wrap_embeddings
    model = DeterministicFakeEmbedding(size=8)
    emb = as_embedder(model)
    assert isinstance(emb, LangChainEmbedder) and emb.embeddings is model
    assert wrap_embeddings(object()) is None and wrap_embeddings("text") is None
    g = KnowledgeGraph.from_triples([("a", "r", "b")])
    index = GraphIndex(g, model).build()
    assert index.vector_index.dim == 8
    want = np.asarray(model.embed_documents([g.node("a").search_text]), dtype=np.float32)[0]
    np.testing.assert_allclose(emb.embed_passages([g.node("a").search_text])[0],
                               want / np.linalg.norm(want), atol=1e-6)


async def test_langchain_llm_reads_text_and_content_blocks() -> None:
    llm = LangChainLLM(FakeListChatModel(responses=["one", "two"]))
    assert isinstance(llm, LLM)
    assert llm.complete("q") == "one" and await llm.acomplete("q") == "two"

    class Blocks:
        content = [{"type": "text", "text": "a"}, "b", {"type": "image"}]

    assert LangChainLLM._text(Blocks()) == "ab"


def test_first_score_skips_non_numbers() -> None:
    meta = {"score": "high", "relevance_score": True, "x": 2, "y": 0.5}
    assert first_score(meta, ("score", "relevance_score", "x", "y")) == 2.0
    assert first_score(meta, ("missing",)) is None
    assert first_score({"s": np.float32(0.25)}, ("s",)) == pytest.approx(0.25)
