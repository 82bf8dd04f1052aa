"""LlamaIndex models inside kgpath: ``BaseEmbedding`` via the adapter's ``LlamaIndexEmbedder``
and ``LLM`` via its ``LlamaIndexLLM`` (both offline: MockEmbedding, MockLLM, a keyword model);
a ``BaseEmbedding`` passed to the core is wrapped through the adapter's entry point.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.retrievers.kgpath import (
    LlamaIndexEmbedder,
    LlamaIndexLLM,
    PathConstrainedRetriever,
)
from llama_index.retrievers.kgpath._base import to_kgpath_embedder
from llama_index.retrievers.kgpath.embeddings import wrap_embed_model
from pydantic import PrivateAttr

from kgpath import GraphIndex, KnowledgeGraph
from kgpath.embeddings import EMBEDDER_ADAPTERS, as_embedder

VOCAB = ("radium", "ore", "prize", "atom")


class KeywordEmbedding(BaseEmbedding):
    """A LlamaIndex embedding with hand-computable vectors: word counts over ``VOCAB``.

    Records which LlamaIndex entry point was used, so tests can tell sync from async.
    """

    _calls: list[tuple[str, str]] = PrivateAttr(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "KeywordEmbedding"

    @staticmethod
    def _vec(text: str) -> list[float]:
        words = text.lower().replace(".", " ").split()
        return [float(words.count(w)) for w in VOCAB]

    def _get_query_embedding(self, query: str) -> list[float]:
        self._calls.append(("sync", "query"))
        return self._vec(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        self._calls.append(("async", "query"))
        return self._vec(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        self._calls.append(("sync", "text"))
        return self._vec(text)


def _graph() -> KnowledgeGraph:
    g = KnowledgeGraph()
    g.add_node("curie", "Curie", "Curie studied radium")           # (1,0,0,0)
    g.add_node("pitch", "pitchblende", "radium ore ore")           # (1,2,0,0)
    g.add_node("nobel", "Nobel", "prize for radium")               # (1,0,1,0)
    g.add_node("bohr", "Bohr", "atom atom prize")                  # (0,0,1,2) unreachable
    g.add_edge("curie", "pitch", "found_in")
    g.add_edge("curie", "nobel", "received")
    return g


def test_to_kgpath_embedder_wraps_base_embedding() -> None:
    emb = to_kgpath_embedder(MockEmbedding(embed_dim=4))
    assert isinstance(emb, LlamaIndexEmbedder)
    assert to_kgpath_embedder(None) is None
    assert to_kgpath_embedder(emb) is emb


async def test_mock_embedding_through_from_graph() -> None:
    # MockEmbedding returns the same constant vector for every text: every cosine is 1.0,
    # so PCR returns the reachable nodes in BFS order (ties keep candidate order).
    r = PathConstrainedRetriever.from_graph(
        _graph(), embed_model=MockEmbedding(embed_dim=8), anchor="curie", k=10,
        output="native",
    )
    nodes = r.retrieve("anything")
    assert [n.node.node_id for n in nodes] == ["curie", "pitch", "nobel"]
    assert [n.score for n in nodes] == pytest.approx([1.0, 1.0, 1.0])
    anodes = await r.aretrieve("anything")
    assert [n.node.node_id for n in anodes] == ["curie", "pitch", "nobel"]


async def test_keyword_embedding_gives_hand_computed_scores() -> None:
    model = KeywordEmbedding()
    r = PathConstrainedRetriever.from_graph(_graph(), embed_model=model, anchor="curie", k=10,
                                            output="native")
    # query "radium ore" -> (1,1,0,0)/sqrt2. Cosines: pitch (1,2,0,0)/sqrt5 -> 3/sqrt10,
    # curie (1,0,0,0) -> 1/sqrt2, nobel (1,0,1,0)/sqrt2 -> 1/2; bohr is not reachable.
    nodes = r.retrieve("radium ore")
    assert [n.node.node_id for n in nodes] == ["pitch", "curie", "nobel"]
    want = [3 / np.sqrt(10), 1 / np.sqrt(2), 0.5]
    assert [n.score for n in nodes] == pytest.approx(want, abs=1e-6)
    # one query embedding and the four nodes embedded once, through the sync API
    assert sorted(model._calls) == [("sync", "query")] + [("sync", "text")] * 4
    model._calls.clear()
    anodes = await r.aretrieve("radium ore")
    assert model._calls == [("async", "query")]  # the async path awaited the model's async API
    assert [n.score for n in anodes] == [n.score for n in nodes]


def test_llamaindex_embedder_normalises_and_checks_dimensions() -> None:
    emb = LlamaIndexEmbedder(KeywordEmbedding())
    m = emb.embed_passages(["radium ore ore", "prize"])
    assert m.dtype == np.float32 and m.shape == (2, 4)
    np.testing.assert_allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(m[0], np.array([1, 2, 0, 0]) / np.sqrt(5), atol=1e-6)
    assert emb.dim == 4


async def test_mock_llm_through_llamaindex_llm() -> None:
    llm = LlamaIndexLLM(MockLLM())
    assert llm.complete("Which ore held radium?") == "Which ore held radium?"  # MockLLM echoes
    assert await llm.acomplete("pitchblende") == "pitchblende"
    capped = LlamaIndexLLM(MockLLM(max_tokens=3))
    assert capped.complete("ignored") == "text text text"


def test_llamaindex_llm_satisfies_the_kgpath_protocol() -> None:
    from kgpath.llm import LLM

    wrapped: Any = LlamaIndexLLM(MockLLM())
    assert isinstance(wrapped, LLM)


def test_the_core_wraps_a_base_embedding_through_the_entry_point() -> None:
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group=EMBEDDER_ADAPTERS) if e.name == "llama_index"]
    assert ep.load() is wrap_embed_model
    model = KeywordEmbedding()
    emb = as_embedder(model)
    assert isinstance(emb, LlamaIndexEmbedder) and emb.embed_model is model
    assert wrap_embed_model(object()) is None and wrap_embed_model("text") is None
    # what PCR above scores by hand: the node vectors come from the wrapped model
    index = GraphIndex(_graph(), model).build()
    assert index.vector_index.dim == 4
