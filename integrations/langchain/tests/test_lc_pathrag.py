"""LangChain PathRAG adapters: retriever, PathOrderCompressor, ChatPromptTemplate.

These run under ``PathRAGConfig.literal_eq4()`` (the literal Eq. 4 reading; the core's
default edge-flow reliability is tested against an oracle in ``tests/test_pathrag_edgeflow.py``).
Truth is hand-computed on the chain a -> b -> c -> d (alpha 0.8, theta 0.05): resources
from a chain's start are 1, 0.8, 0.64, 0.512, so Eq. 4 gives 1.8 for 1-hop paths,
(1 + 0.8 + 0.64) / 2 = 1.22 for 2-hop paths and 2.952 / 3 = 0.984 for the 3-hop path.
"""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_kgpath import (
    PATHRAG_CHAT_PROMPT,
    PathOrderCompressor,
    PathRAGRetriever,
    format_paths,
)

from kgpath import ConfigError, HashingEmbedder, KnowledgeGraph, ScriptedLLM
from kgpath.methods.pathrag import PathRAGConfig
from kgpath.methods.pathrag import PathRAGRetriever as CorePathRAG

_LIT = PathRAGConfig.literal_eq4()
LITERAL = {
    f: getattr(_LIT, f)
    for f in ("reliability", "direction", "max_hops", "eq3_at_start", "min_similarity",
              "min_similarity_z", "keyword_split")
}

EXPECTED = [
    (["a", "b"], 1.8),
    (["b", "c"], 1.8),
    (["c", "d"], 1.8),
    (["a", "b", "c"], 1.22),
    (["b", "c", "d"], 1.22),
    (["a", "b", "c", "d"], 0.984),
]
QUERY = "Where does a lead to?"


def chain_graph() -> KnowledgeGraph:
    return KnowledgeGraph.from_triples([("a", "to", "b"), ("b", "to", "c"), ("c", "to", "d")])




@pytest.fixture
def retriever() -> PathRAGRetriever:
    return PathRAGRetriever.from_graph(chain_graph(), embedding=HashingEmbedder(), k=None,
                                       **LITERAL)  # all six paths


def test_documents_carry_path_structure_and_reliability(retriever):
    docs = retriever.invoke(QUERY)  # no passages in this graph: the paths themselves
    assert [d.metadata["kgpath_node_ids"] for d in docs] == [p for p, _ in EXPECTED]
    assert [d.metadata["kgpath_reliability"] for d in docs] == pytest.approx(
        [r for _, r in EXPECTED])
    last = docs[-1]
    assert last.page_content == "a | a to b | b | b to c | c | c to d | d"  # Eq. 5
    assert last.metadata["kgpath_path"] == "a -[to]-> b -[to]-> c -[to]-> d"
    assert last.metadata["kgpath_method"] == "pathrag" and last.id.startswith("pathrag-")
    assert {d.metadata["kgpath_kind"] for d in docs} == {"path"}


def test_native_result_keeps_the_flow(retriever):
    last = retriever.result(QUERY).paths[-1]
    assert list(last.ids) == ["a", "b", "c", "d"]
    assert list(last.resources) == pytest.approx([1.0, 0.8, 0.64, 0.512])


async def test_sync_equals_async_and_per_call_k(retriever):
    sync = retriever.invoke(QUERY, k=4)
    asyn = await retriever.ainvoke(QUERY, k=4)
    assert len(sync) == 4
    assert [(d.id, d.metadata) for d in sync] == [(d.id, d.metadata) for d in asyn]
    assert len(retriever.invoke(QUERY, k=100)) == 6  # K larger than the pool: whole pool


def test_top_k_is_the_papers_k_and_honoured():
    r = PathRAGRetriever.from_graph(chain_graph(), embedding=HashingEmbedder(), top_k=3,
                                    config=PathRAGConfig.paper())
    assert len(r.invoke(QUERY)) == 3


def test_per_call_config_options(retriever):
    paths = retriever.result(QUERY, theta=0.7).paths  # c: 0.64/1 < 0.7 stops the flow from a
    assert ("a", "b", "c", "d") not in [tuple(p.ids) for p in paths]
    assert len(retriever.result(QUERY, top_k=2).paths) == 2
    with pytest.raises(ConfigError, match="alpha"):
        retriever.invoke(QUERY, alpha=1.5)
    with pytest.raises(ConfigError, match=r"\['bogus'\].*accepted:.*'theta'"):
        retriever.invoke(QUERY, bogus=1)


def test_core_prompt_order_is_ascending():
    r = PathRAGRetriever.from_graph(chain_graph(), embedding=HashingEmbedder(), **LITERAL)
    rel = [p.reliability for p in r.result(QUERY).prompt_paths]
    assert rel == sorted(rel) and rel[-1] == pytest.approx(1.8)


def test_langchain_chat_model_extracts_keywords():
    model = FakeListChatModel(responses=['{"entities": ["a", "d"], "concepts": []}'])
    r = PathRAGRetriever.from_graph(chain_graph(), embedding=HashingEmbedder(), llm=model)
    result = r.result(QUERY)
    assert list(result.keywords) == ["a", "d"] and result.keyword_source == "llm"


def test_kgpath_llm_with_malformed_reply_falls_back():
    r = PathRAGRetriever.from_graph(chain_graph(), embedding=HashingEmbedder(),
                                    llm=ScriptedLLM(["{oops"]))
    assert r.result(QUERY).keyword_source == "offline-fallback"


def test_construction_errors():
    core = CorePathRAG(chain_graph(), embedder=HashingEmbedder())
    with pytest.raises(ConfigError, match="k must be"):
        PathRAGRetriever(graph=core, k=0)
    with pytest.raises(ConfigError, match=r"\['order'\]"):
        PathRAGRetriever.from_graph(chain_graph(), order="random")
    with pytest.raises(ConfigError, match="theta"):
        PathRAGRetriever.from_graph(chain_graph(), embedding=HashingEmbedder(), theta=0)
    with pytest.raises(ConfigError, match=r"\['nodes'\].*accepted:.*'num_nodes'"):
        PathRAGRetriever.from_graph(chain_graph(), embedding=HashingEmbedder(), nodes=3)
    with pytest.raises(ConfigError, match="graph must be"):
        PathRAGRetriever.from_graph("g", embedding=HashingEmbedder())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="llm must be"):
        PathRAGRetriever.from_graph(chain_graph(), embedding=HashingEmbedder(), llm=3)


# ---------------------------------------------------------------- compressor
def doc(name: str, **meta: object) -> Document:
    return Document(page_content=name, metadata=dict(meta), id=name)


def test_compressor_reorders_any_scored_documents_ascending():
    docs = [
        doc("x", score=0.2),
        doc("best1", relevance_score=0.9),
        doc("none"),
        doc("m", _similarity_score=0.5),
        doc("best2", reliability=0.9),
    ]
    out = PathOrderCompressor().compress_documents(docs, "q")
    assert [d.id for d in out] == ["none", "x", "m", "best2", "best1"]
    top2 = PathOrderCompressor(top_n=2).compress_documents(docs, "q")
    assert [d.id for d in top2] == ["best2", "best1"]
    own_key = PathOrderCompressor(score_keys=("w",)).compress_documents(
        [doc("p", w=3), doc("q", w=1)], "q"
    )
    assert [d.id for d in own_key] == ["q", "p"]
    with pytest.raises(ConfigError, match="not a number"):
        PathOrderCompressor().compress_documents([doc("p", score="high")], "q")


async def test_compressor_async_and_after_pathrag(retriever):
    docs = retriever.invoke(QUERY)
    out = await PathOrderCompressor().acompress_documents(docs, QUERY)
    assert [d.metadata["kgpath_reliability"] for d in out] == sorted(
        d.metadata["kgpath_reliability"] for d in docs
    )
    assert out[-1].id == docs[0].id  # P_1 last


# ---------------------------------------------------------------- prompt + LCEL
def test_chat_prompt_places_query_first_and_best_path_last(retriever):
    assert set(PATHRAG_CHAT_PROMPT.input_variables) == {"query", "paths"}
    comp = PathOrderCompressor()

    def ordered(x: dict) -> str:
        return format_paths(comp.compress_documents(x["docs"], x["query"]))

    chain = (
        {"docs": retriever, "query": RunnablePassthrough()}
        | RunnablePassthrough.assign(paths=RunnableLambda(ordered))
        | PATHRAG_CHAT_PROMPT
    )
    text = chain.invoke(QUERY).to_string()
    lines = text.splitlines()
    q_line = next(i for i, ln in enumerate(lines) if QUERY in ln)
    paths = [(i, ln) for i, ln in enumerate(lines) if ln.startswith("Path ")]
    assert len(paths) == 6 and q_line < paths[0][0]
    assert paths[0][1] == "Path 1: a | a to b | b | b to c | c | c to d | d"  # least reliable
    assert lines[-1] == "Path 6: a | a to b | b"  # P_1: most reliable, last
