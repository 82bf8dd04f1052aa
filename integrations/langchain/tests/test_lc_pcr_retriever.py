"""Unit tests for langchain_kgpath.PathConstrainedRetriever against hand-computed truth.

The graph (directed; ``KeywordEmbedder`` counts the words alpha/beta/gamma/delta, so every
cosine below is exact)::

    x -r6-> a -r1-> b -r2-> c -r3-> a        (cycle a-b-c)
                    b -r4-> d -r5-> e
    y -r7-> y (self-loop),  y -r8-> x,  z isolated

    node  text          unit vector               out-reach from a: hops, path
    a     alpha         (1,0,0,0)                 0  a
    b     beta          (0,1,0,0)                 1  a b
    c     gamma         (0,0,1,0)                 2  a b c
    d     beta delta    (0,1,0,1)/sqrt2           2  a b d
    e     gamma delta   (0,0,1,1)/sqrt2           3  a b d e
    x     alpha beta    (1,1,0,0)/sqrt2           -
    y     gamma         (0,0,1,0)                 -
    z     delta         (0,0,0,1)                 -
"""

from __future__ import annotations

import json
import math
import re
from typing import Any
from uuid import UUID

import numpy as np
import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_kgpath import LangChainEmbedder, LangChainLLM, PathConstrainedRetriever

from kgpath import (
    ConfigError,
    GraphIndex,
    HashingEmbedder,
    KnowledgeGraph,
    NodeNotFoundError,
    QueryError,
)
from kgpath.embeddings import BaseEmbedder
from kgpath.methods.pcr import PCRConfig

PAPER = PCRConfig.paper()  # the paper's reachability: out-edges, unlimited depth

VOCAB = ("alpha", "beta", "gamma", "delta")
R2 = 1 / math.sqrt(2)


class KeywordEmbedder(BaseEmbedder):
    """Counts of the four vocabulary words; records whether sync or async was used."""

    def __init__(self) -> None:
        self._dim = len(VOCAB)
        self.show_progress = False
        self.calls: list[str] = []

    def _vec(self, text: str) -> list[float]:
        words = re.findall(r"\w+", text.lower())
        return [float(words.count(w)) for w in VOCAB]

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        self.calls.append(f"sync:{kind}")
        return np.array([self._vec(t) for t in texts], dtype=np.float32)

    async def _aembed(self, texts: list[str], kind: str) -> np.ndarray:
        self.calls.append(f"async:{kind}")
        return np.array([self._vec(t) for t in texts], dtype=np.float32)


def make_graph() -> KnowledgeGraph:
    g = KnowledgeGraph()
    for nid, text in [
        ("a", "alpha"),
        ("b", "beta"),
        ("c", "gamma"),
        ("d", "beta delta"),
        ("e", "gamma delta"),
        ("x", "alpha beta"),
        ("y", "gamma"),
        ("z", "delta"),
    ]:
        g.add_node(nid, nid.upper(), text, type="letter", provenance=[f"p_{nid}"])
    for i, (s, t) in enumerate(
        [("a", "b"), ("b", "c"), ("c", "a"), ("b", "d"), ("d", "e"), ("x", "a"), ("y", "y"),
         ("y", "x")],
        start=1,
    ):
        g.add_edge(s, t, f"r{i}")
    return g


@pytest.fixture
def embedder() -> KeywordEmbedder:
    return KeywordEmbedder()


@pytest.fixture
def retriever(embedder: KeywordEmbedder) -> PathConstrainedRetriever:
    return PathConstrainedRetriever.from_graph(make_graph(), config=PAPER,
                                               embedding=embedder, anchor="a", k=2)


def ids(docs: list[Document]) -> list[str | None]:
    return [d.id for d in docs]


# ---------------------------------------------------------------- hand-computed truth
def test_reachable_topk_scores_and_paths(retriever: PathConstrainedRetriever) -> None:
    docs = retriever.invoke("gamma")
    # Global top-2 would be c and y (both 1.0); y is not reachable from a.
    assert ids(docs) == ["c", "e"]
    c, e = docs
    assert c.metadata["kgpath_score"] == pytest.approx(1.0)
    assert e.metadata["kgpath_score"] == pytest.approx(R2)
    assert (c.metadata["kgpath_hops"], c.metadata["kgpath_node_ids"]) == (2, ["a", "b", "c"])
    assert (e.metadata["kgpath_hops"], e.metadata["kgpath_node_ids"]) == (3, ["a", "b", "d", "e"])
    assert e.metadata["kgpath_path"] == "A -[r1]-> B -[r4]-> D -[r5]-> E"
    assert e.metadata["kgpath_relations"] == ["r1", "r4", "r5"]
    # The graph holds no passage text for p_c / p_e, so the nodes themselves are returned
    # (kind "node"), with the node text as the evidence text.
    assert c.page_content == "gamma" and e.page_content == "gamma delta"
    for rank, d in enumerate(docs, 1):
        m = d.metadata
        assert m["kgpath_node_id"] == m["kgpath_id"] == d.id and m["kgpath_kind"] == "node"
        assert (m["kgpath_anchor_id"], m["kgpath_anchor_name"], m["kgpath_anchor_resolution"]
                ) == ("a", "A", "id")
        assert m["kgpath_fallback"] is False
        assert m["kgpath_passage_ids"] == [f"p_{d.id}"]
        assert m["kgpath_rank"] == rank and m["kgpath_method"] == "pcr"
    full = retriever.result("gamma")  # the native result keeps what metadata does not
    assert full.reachable_count == 5 and full.config.mode == "vector"  # {a, b, c, d, e}
    assert [h.node.type for h in full.hits] == ["letter", "letter"]


def test_whole_reachable_set_and_nothing_else(retriever: PathConstrainedRetriever) -> None:
    docs = retriever.invoke("gamma delta", k=50)
    assert set(ids(docs)) == {"a", "b", "c", "d", "e"}
    hops = {d.id: d.metadata["kgpath_hops"] for d in docs}
    assert hops == {"a": 0, "b": 1, "c": 2, "d": 2, "e": 3}
    scores = {d.id: d.metadata["kgpath_score"] for d in docs}
    expected = {"a": 0.0, "b": 0.0, "c": R2, "d": 0.5, "e": 1.0}
    assert scores == pytest.approx(expected)
    assert ids(docs)[:3] == ["e", "c", "d"]


def test_metadata_is_plain_json(retriever: PathConstrainedRetriever) -> None:
    for d in retriever.invoke("gamma", k=5):
        assert type(d.metadata["kgpath_score"]) is float
        assert json.loads(json.dumps(d.metadata)) == d.metadata


def test_construction_options_max_depth_and_direction() -> None:
    shallow = PathConstrainedRetriever.from_graph(
        make_graph(), config=PAPER, embedding=KeywordEmbedder(), anchor="a", k=2, max_depth=2
    )
    assert ids(shallow.invoke("gamma delta")) == ["c", "d"]  # e is 3 hops away
    inward = PathConstrainedRetriever.from_graph(
        make_graph(), config=PAPER, embedding=KeywordEmbedder(), anchor="a", k=1, direction="in"
    )
    (doc,) = inward.invoke("alpha beta")
    assert doc.id == "x" and doc.metadata["kgpath_hops"] == 1
    assert doc.metadata["kgpath_path"] == "A <-[r6]- X"


def test_construction_options_apply_to_every_call(embedder: KeywordEmbedder) -> None:
    r = PathConstrainedRetriever(graph=make_graph(), config=PAPER,
                                 embedding=embedder, anchor="a", k=2,
                                 max_depth=2)
    assert r.options == {"anchor": "a", "max_depth": 2, "config": PAPER}
    assert ids(r.invoke("gamma delta")) == ["c", "d"]
    assert ids(r.invoke("gamma delta", max_depth=3)) == ["e", "c"]  # per call wins


# ---------------------------------------------------------------- per-call overrides
def test_per_call_k_anchor_and_options(retriever: PathConstrainedRetriever) -> None:
    assert ids(retriever.invoke("gamma", k=1)) == ["c"]
    assert len(retriever.invoke("gamma", k=5)) == 5
    assert len(retriever.invoke("gamma", k=None)) == 2  # None = the retriever's k
    # Per-call anchor_name replaces the constructor's anchor id: from c the graph reaches
    # c, a, b, d, e; "beta delta" is d exactly, 3 hops away via c -> a -> b -> d.
    (d,) = retriever.invoke("beta delta", anchor_name="C", k=1)
    assert d.id == "d" and d.metadata["kgpath_node_ids"] == ["c", "a", "b", "d"]
    assert d.metadata["kgpath_anchor_resolution"] == "name"
    (d,) = retriever.invoke("gamma delta", k=1, max_depth=2)
    assert d.id == "c"
    # The retriever itself is unchanged by per-call options.
    assert (retriever.k, retriever.options) == (2, {"anchor": "a", "config": PAPER})
    assert ids(retriever.invoke("gamma")) == ["c", "e"]


def test_no_anchor_means_most_similar_node(embedder: KeywordEmbedder) -> None:
    # the most similar node anchors only when configured (kgpath issue 12)
    r = PathConstrainedRetriever.from_graph(make_graph(), config=PAPER, embedding=embedder, k=1,
                                            anchor_fallback="similar")
    (doc,) = r.invoke("alpha")
    assert doc.metadata["kgpath_anchor_id"] == "a"
    assert doc.metadata["kgpath_anchor_resolution"] == "similarity"
    # Explicit None per call also drops a constructor anchor.
    anchored = PathConstrainedRetriever.from_graph(make_graph(), config=PAPER,
                                                   embedding=KeywordEmbedder(),
                                                   anchor="z", anchor_fallback="similar")
    (doc,) = anchored.invoke("alpha", anchor=None, k=1)
    assert doc.metadata["kgpath_anchor_id"] == "a"


def test_bind_and_batch_forward_options(retriever: PathConstrainedRetriever) -> None:
    assert ids(retriever.bind(k=1).invoke("gamma")) == ["c"]
    out = retriever.batch(["gamma", "gamma delta"], k=1)
    assert [ids(x) for x in out] == [["c"], ["e"]]


def test_fallback_recorded(embedder: KeywordEmbedder) -> None:
    graph = make_graph()
    strict = PathConstrainedRetriever.from_graph(graph, config=PAPER,
                                                 embedding=embedder, anchor="z", k=2)
    (only,) = strict.invoke("gamma")  # z reaches nothing but itself
    assert only.id == "z" and only.metadata["kgpath_fallback"] is False
    assert only.metadata["kgpath_score"] == 0.0 and only.metadata["kgpath_hops"] == 0
    docs = strict.invoke("gamma", fallback="global")
    assert ids(docs) == ["c", "y"]  # global tie at 1.0, broken by node position
    assert all(d.metadata["kgpath_fallback"] is True for d in docs)
    assert all(d.metadata["kgpath_hops"] is None and d.metadata["kgpath_node_ids"] == []
               and "kgpath_path" not in d.metadata for d in docs)


def test_unknown_anchor_similar_policy(embedder: KeywordEmbedder) -> None:
    r = PathConstrainedRetriever.from_graph(
        make_graph(), config=PAPER, embedding=embedder, anchor="nope", k=1, unknown_anchor="similar"
    )
    (doc,) = r.invoke("alpha")
    assert doc.metadata["kgpath_anchor_id"] == "a"
    assert "nope" in doc.metadata["kgpath_anchor_resolution"]


# ---------------------------------------------------------------- sync == async
QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("gamma", {}),
    ("gamma delta", {"k": 4}),
    ("beta delta", {"anchor_name": "C", "k": 1}),
    ("alpha beta", {"direction": "in", "k": 3}),
    ("gamma", {"anchor": "z", "fallback": "global"}),
]


@pytest.mark.parametrize(("query", "opts"), QUERIES)
async def test_sync_equals_async(
    retriever: PathConstrainedRetriever, query: str, opts: dict[str, Any]
) -> None:
    sync = retriever.invoke(query, **opts)
    asyn = await retriever.ainvoke(query, **opts)
    assert [(d.id, d.page_content, d.metadata) for d in sync] == [
        (d.id, d.page_content, d.metadata) for d in asyn
    ]


async def test_async_embeds_query_with_async_api(
    retriever: PathConstrainedRetriever, embedder: KeywordEmbedder
) -> None:
    retriever.core.index.build()  # node embeddings are built once, synchronously
    embedder.calls.clear()
    await retriever.ainvoke("gamma")
    assert embedder.calls == ["async:query"]
    retriever.invoke("gamma")
    assert embedder.calls == ["async:query", "sync:query"]


# ---------------------------------------------------------------- typed errors
def test_unknown_anchor_errors(retriever: PathConstrainedRetriever) -> None:
    with pytest.raises(NodeNotFoundError, match="'nope'"):
        PathConstrainedRetriever(graph=retriever.core, config=PAPER, anchor="nope")
    with pytest.raises(NodeNotFoundError, match="'Nobody'"):
        PathConstrainedRetriever(graph=retriever.core, config=PAPER, anchor_name="Nobody")
    with pytest.raises(NodeNotFoundError, match="'nope'"):
        retriever.invoke("gamma", anchor="nope")
    with pytest.raises(NodeNotFoundError, match="'Nobody'"):
        retriever.invoke("gamma", anchor_name="Nobody")


async def test_unknown_anchor_error_async(retriever: PathConstrainedRetriever) -> None:
    with pytest.raises(NodeNotFoundError, match="'nope'"):
        await retriever.ainvoke("gamma", anchor="nope")


@pytest.mark.parametrize("bad_k", [0, -1, True, 2.5, "3"])
def test_bad_k(retriever: PathConstrainedRetriever, bad_k: Any) -> None:
    with pytest.raises(ConfigError, match="k must be"):
        retriever.invoke("gamma", k=bad_k)
    with pytest.raises(ConfigError, match=re.escape(repr(bad_k))):
        PathConstrainedRetriever(graph=retriever.core, config=PAPER, anchor="a", k=bad_k)


@pytest.mark.parametrize("query", ["", "   "])
def test_empty_query(retriever: PathConstrainedRetriever, query: str) -> None:
    with pytest.raises(QueryError, match="empty"):
        retriever.invoke(query)


async def test_empty_query_async(retriever: PathConstrainedRetriever) -> None:
    with pytest.raises(QueryError, match="empty"):
        await retriever.ainvoke("")


def test_bad_options(retriever: PathConstrainedRetriever) -> None:
    # unknown keyword arguments name themselves and the accepted ones, per call ...
    with pytest.raises(ConfigError, match=r"\['colour'\].*accepted:.*'anchor'.*'max_depth'"):
        retriever.invoke("gamma", k=2, colour="red")
    with pytest.raises(ConfigError, match=r"\['colour'\].*accepted:.*'max_depth'"):
        retriever.invoke("gamma", anchor="a", colour="red")
    with pytest.raises(ConfigError, match="-1"):
        retriever.invoke("gamma", max_depth=-1)
    with pytest.raises(ConfigError, match="output must be"):
        retriever.invoke("gamma", output="paths")
    # ... and at construction
    with pytest.raises(ConfigError, match=r"\['colour'\].*accepted:.*'max_depth'"):
        PathConstrainedRetriever.from_graph(make_graph(), config=PAPER, embedding=KeywordEmbedder(),
                                            colour="red")
    with pytest.raises(ConfigError, match="prebuilt.*'direction'"):
        PathConstrainedRetriever(graph=retriever.core, config=PAPER, direction="in")
    with pytest.raises(ConfigError, match="sideways"):
        PathConstrainedRetriever.from_graph(make_graph(), config=PAPER, embedding=KeywordEmbedder(),
                                            direction="sideways")
    with pytest.raises(ConfigError, match="output must be"):
        PathConstrainedRetriever(graph=retriever.core, config=PAPER, output="nodes")
    with pytest.raises(ConfigError, match="object"):
        PathConstrainedRetriever.from_graph(make_graph(), config=PAPER, embedding=object())
    with pytest.raises(ConfigError, match="GraphIndex"):
        index = GraphIndex(make_graph(), KeywordEmbedder())
        PathConstrainedRetriever.from_graph(index, config=PAPER, embedding=KeywordEmbedder())
    with pytest.raises(ConfigError, match="list"):
        PathConstrainedRetriever.from_graph([("a", "r", "b")], config=PAPER,
                                            embedding=KeywordEmbedder())


def test_from_graph_accepts_graph_index_and_lc_fields() -> None:
    index = GraphIndex(make_graph(), KeywordEmbedder())
    r = PathConstrainedRetriever.from_graph(index, config=PAPER, anchor="a", k=1, tags=["kg"])
    assert r.core.index is index and r.tags == ["kg"]
    assert ids(r.invoke("gamma")) == ["c"]


# ---------------------------------------------------------------- callbacks and LCEL
class Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def on_retriever_start(self, serialized: Any, query: str, **kwargs: Any) -> None:
        self.events.append(("start", (query, kwargs.get("tags"))))

    def on_retriever_end(self, documents: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.events.append(("end", [d.id for d in documents]))

    def on_retriever_error(self, error: BaseException, **kwargs: Any) -> None:
        self.events.append(("error", type(error).__name__))

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.events.append(("chat", [m.content for batch in messages for m in batch]))


def test_callbacks_see_retriever_start_end_and_error(retriever: PathConstrainedRetriever) -> None:
    rec = Recorder()
    docs = retriever.invoke("gamma", config={"callbacks": [rec], "tags": ["t1"]})
    assert rec.events == [("start", ("gamma", ["t1"])), ("end", ids(docs))]
    rec.events.clear()
    with pytest.raises(NodeNotFoundError):
        retriever.invoke("gamma", config={"callbacks": [rec]}, anchor="nope")
    assert [e[0] for e in rec.events] == ["start", "error"]
    assert rec.events[1] == ("error", "NodeNotFoundError")


async def test_async_callbacks(retriever: PathConstrainedRetriever) -> None:
    rec = Recorder()
    docs = await retriever.ainvoke("gamma", config={"callbacks": [rec]})
    assert rec.events == [("start", ("gamma", [])), ("end", ids(docs))]


def format_docs(docs: list[Document]) -> str:
    return "\n".join(f"- {d.page_content} (path: {d.metadata['kgpath_path']})" for d in docs)


def test_lcel_composition(retriever: PathConstrainedRetriever) -> None:
    chain = retriever | format_docs
    assert chain.invoke("gamma") == (
        "- gamma (path: A -[r1]-> B -[r2]-> C)\n"
        "- gamma delta (path: A -[r1]-> B -[r4]-> D -[r5]-> E)"
    )


async def test_lcel_rag_chain_with_fake_chat_model(retriever: PathConstrainedRetriever) -> None:
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from these graph facts:\n{context}"), ("human", "{question}")]
    )
    rec = Recorder()
    model = FakeListChatModel(responses=["C", "C again"], callbacks=[rec])
    chain = (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | prompt
        | model
        | StrOutputParser()
    )
    assert chain.invoke("gamma") == "C"
    assert await chain.ainvoke("gamma") == "C again"
    system, human = rec.events[0][1]
    assert "A -[r1]-> B -[r2]-> C" in system and human == "gamma"


# ---------------------------------------------------------------- LangChain backends
def test_langchain_embeddings_match_brute_force() -> None:
    lc_emb = DeterministicFakeEmbedding(size=16)
    graph = make_graph()
    r = PathConstrainedRetriever.from_graph(graph, config=PAPER, embedding=lc_emb, anchor="a", k=3)
    assert isinstance(r.core.index.embedder, LangChainEmbedder)
    docs = r.invoke("gamma")
    # Reference: cosine over the reachable set {a, b, c, d, e}, computed directly.
    reach = ["a", "b", "c", "d", "e"]
    q = np.asarray(lc_emb.embed_query("gamma"))
    q /= np.linalg.norm(q)
    mat = np.asarray(lc_emb.embed_documents([graph.node(n).search_text for n in reach]))
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    scores = mat @ q
    order = np.argsort(-scores)[:3]
    assert ids(docs) == [reach[i] for i in order]
    assert [d.metadata["kgpath_score"] for d in docs] == pytest.approx(scores[order].tolist(),
                                                                       abs=1e-5)


async def test_langchain_embeddings_async() -> None:
    r = PathConstrainedRetriever.from_graph(
        make_graph(), config=PAPER, embedding=DeterministicFakeEmbedding(size=16), anchor="a", k=3
    )
    assert ids(await r.ainvoke("gamma")) == ids(r.invoke("gamma"))


async def test_fake_chat_model_through_kgpath_llm(retriever: PathConstrainedRetriever) -> None:
    rec = Recorder()
    llm = LangChainLLM(FakeListChatModel(responses=["c", "e"], callbacks=[rec]))
    context = format_docs(retriever.invoke("gamma"))
    assert llm.complete(f"Facts:\n{context}\nQ: gamma") == "c"
    assert await llm.acomplete("second") == "e"
    assert "A -[r1]-> B -[r2]-> C" in rec.events[0][1][0]


def test_hashing_embedder_default_suite_graph_is_deterministic() -> None:
    a = PathConstrainedRetriever.from_graph(make_graph(), config=PAPER, embedding=HashingEmbedder(),
                                            anchor="a", k=5)
    b = PathConstrainedRetriever.from_graph(make_graph(), config=PAPER, embedding=HashingEmbedder(),
                                            anchor="a", k=5)
    da, db = a.invoke("gamma delta"), b.invoke("gamma delta")
    assert [(d.id, d.metadata["kgpath_score"]) for d in da] == [
        (d.id, d.metadata["kgpath_score"]) for d in db]
    assert set(ids(da)) == {"a", "b", "c", "d", "e"}
