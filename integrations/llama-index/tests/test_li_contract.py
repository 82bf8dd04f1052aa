"""Contract suite for the LlamaIndex PCR retriever (STYLE habit 10).

Node-level tests use ``output="native"`` (one node per PCR hit); the passage output is
checked against hand-computed provenance. Every test runs against the hand-written toy
graph of ``conftest.py`` whose reachable set, shortest paths and cosine scores were
computed by hand. The contract: sync == async, float
scores in descending order, ``top_k`` honoured, trace metadata correct, works inside
``RetrieverQueryEngine`` with ``MockLLM`` without touching ``Settings``, callbacks and
instrumentation receive retrieval events, bad input raises kgpath's typed errors.
"""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from llama_index.core.callbacks.schema import EventPayload
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore
from llama_index.retrievers.kgpath import KgpathQueryBundle, PathConstrainedRetriever

from kgpath import ConfigError, NodeNotFoundError, QueryError
from kgpath.methods.pcr import PCRConfig

PAPER = PCRConfig.paper()  # the paper's reachability: out-edges, unlimited depth

MODES = ["vector", "hybrid"]


def native(core: Any, **options: Any) -> PathConstrainedRetriever:
    """The retriever with one node per PCR hit (``output="native"``)."""
    return PathConstrainedRetriever(core, output="native", **options)


def _ids(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


def _snapshot(nodes: list[NodeWithScore]) -> list[tuple[str, float, dict[str, Any]]]:
    return [(n.node.node_id, n.score, dict(n.node.metadata)) for n in nodes]


@pytest.fixture(params=MODES)
def retriever(request: pytest.FixtureRequest, core_pcr: Any) -> PathConstrainedRetriever:
    return native(core_pcr, anchor="a", k=3, mode=request.param)


# ---------------------------------------------------------------- sync == async
@pytest.mark.parametrize("query", ["east", "north", "up"])
async def test_sync_equals_async(retriever: PathConstrainedRetriever, query: str) -> None:
    sync = retriever.retrieve(query)
    asyn = await retriever.aretrieve(query)
    assert _snapshot(sync) == _snapshot(asyn)
    assert len(sync) == 3


async def test_async_awaits_the_embedders_async_api(core_pcr: Any) -> None:
    r = native(core_pcr, anchor="a")
    emb = core_pcr.index.embedder
    await r.aretrieve("east")
    # the query, then the graph's passages once (passage_order="question"), both awaited
    assert emb.calls[0] == ("async", "query", ("east",))
    assert [c[:2] for c in emb.calls] == [("async", "query"), ("async", "passage")]
    r.retrieve("north")
    assert emb.calls[-1] == ("sync", "query", ("north",))


async def test_sync_equals_async_with_per_call_options(core_pcr: Any) -> None:
    r = native(core_pcr, anchor="x")
    kw: dict[str, Any] = {"anchor": "a", "k": 2, "max_depth": 1}
    sync = r.retrieve_with("north", **kw)
    asyn = await r.aretrieve_with("north", **kw)
    assert _snapshot(sync) == _snapshot(asyn)
    assert _ids(sync) == ["a", "b"]


# ---------------------------------------------------------------- scores and top_k
def test_scores_are_python_floats_in_descending_order(
    retriever: PathConstrainedRetriever,
) -> None:
    nodes = retriever.retrieve_with("east", k=10)
    scores = [n.score for n in nodes]
    assert all(type(s) is float for s in scores)
    assert all(type(n.node.metadata["kgpath_score"]) is float for n in nodes)
    assert scores == sorted(scores, reverse=True)


def test_vector_scores_equal_hand_computed_cosines(core_pcr: Any, toy: Any) -> None:
    r = native(core_pcr, anchor="a", k=3)
    east = r.retrieve("east")
    assert _ids(east) == ["e", "c", "b"]  # x (1.0) and y (0.96) are not reachable
    assert [n.score for n in east] == pytest.approx([toy.EAST_SCORES[i] for i in "ecb"], abs=1e-6)
    north = r.retrieve("north")
    assert _ids(north) == ["a", "b", "c"]
    assert [n.score for n in north] == pytest.approx([toy.NORTH_SCORES[i] for i in "abc"], abs=1e-6)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 10])
def test_top_k_honoured(core_pcr: Any, toy: Any, k: int) -> None:
    reachable = len(toy.REACH_FROM_A)
    by_k = native(core_pcr, anchor="a", k=k).retrieve("east")
    by_alias = native(core_pcr, anchor="a", similarity_top_k=k).retrieve("east")
    per_call = native(core_pcr, anchor="a").retrieve_with("east", k=k)
    bundle = native(core_pcr, anchor="a").retrieve(
        KgpathQueryBundle("east", k=k)
    )
    for nodes in (by_k, by_alias, per_call, bundle):
        assert len(nodes) == min(k, reachable)
        assert set(_ids(nodes)) <= set(toy.REACH_FROM_A)
    assert _ids(by_k) == _ids(by_alias) == _ids(per_call) == _ids(bundle)


def test_similarity_top_k_property_reflects_config(core_pcr: Any) -> None:
    r = native(core_pcr, similarity_top_k=4)
    assert r.similarity_top_k == 4 == r.config.k


# ---------------------------------------------------------------- trace metadata
def test_trace_metadata_matches_hand_computed_paths(core_pcr: Any, toy: Any) -> None:
    r = native(core_pcr, anchor="a", k=10)
    nodes = r.retrieve("east")
    assert set(_ids(nodes)) == set(toy.REACH_FROM_A)  # exactly the reachable set, nothing else
    rel = {"b": ["founded"], "d": ["owns"], "c": ["founded", "employs"],
           "e": ["founded", "employs", "wrote"], "a": []}
    text = {"a": "Acme", "b": "Acme -[founded]-> Beta Labs", "d": "Acme -[owns]-> Depot",
            "c": "Acme -[founded]-> Beta Labs -[employs]-> Carol",
            "e": "Acme -[founded]-> Beta Labs -[employs]-> Carol -[wrote]-> Essay"}
    for rank, n in enumerate(nodes, start=1):
        nid, m = n.node.node_id, n.node.metadata
        hops, path = toy.REACH_FROM_A[nid]
        assert m["kgpath_node_id"] == m["kgpath_id"] == nid
        assert m["kgpath_kind"] == "node"
        assert m["kgpath_hops"] == hops
        assert m["kgpath_node_ids"] == path
        assert m["kgpath_relations"] == rel[nid]
        assert m["kgpath_path"] == text[nid]
        assert m["kgpath_anchor_id"] == "a" and m["kgpath_anchor_name"] == "Acme"
        assert m["kgpath_anchor_resolution"] == "id"
        assert m["kgpath_fallback"] is False
        assert m["kgpath_rank"] == rank
        assert m["kgpath_score"] == n.score
        assert m["kgpath_method"] == "pcr"
    result = r.result("east")  # what the trace no longer repeats on every node
    assert result.reachable_count == 5 and result.config.mode == "vector"
    by_id = {n.node.node_id: n.node.metadata for n in nodes}
    assert by_id["c"]["kgpath_passage_ids"] == ["p1", "p2"]
    assert by_id["d"]["kgpath_passage_ids"] == []
    assert by_id["a"]["source"] == "registry"  # the node's own metadata, unprefixed


def test_passages_follow_hit_order_then_provenance(core_pcr: Any) -> None:
    # hits for "east" from a, k=3: e (1.0, p2), c (0.8, p1 p2), b (0.6, p1)
    r = PathConstrainedRetriever(core_pcr, anchor="a", k=3, passage_order="hits")
    nodes = r.retrieve("east")
    assert _ids(nodes) == ["p2", "p1"]
    assert [n.score for n in nodes] == pytest.approx([1.0, 0.8], abs=1e-6)
    assert [n.node.get_content(MetadataMode.NONE) for n in nodes] == [
        "Carol wrote an essay on catalysis.", "Acme founded Beta Labs, which employs Carol."]
    m2, m1 = (n.node.metadata for n in nodes)
    assert (m2["kgpath_kind"], m2["kgpath_node_id"], m2["kgpath_supporting"]) == (
        "passage", "e", ["e", "c"])
    assert (m1["kgpath_node_id"], m1["kgpath_supporting"]) == ("c", ["c", "b"])
    assert [m2["kgpath_rank"], m1["kgpath_rank"]] == [1, 2]
    assert _ids(r.retrieve_with("east", k=1)) == ["p2"]


def test_passages_ranked_by_the_question_by_default(core_pcr: Any) -> None:
    # passage_order="question": 0.7 cos(q, passage) + 0.3 best citing hit. "east" from a,
    # k=3 (candidates from passage_hits=20 hits: e 1.0, c 0.8, b 0.6, a 0, d 0):
    # p2 = 0.7*1 + 0.3*1.0 = 1.0; p1 = 0.7*0 + 0.3*0.8 = 0.24
    nodes = PathConstrainedRetriever(core_pcr, anchor="a", k=3).retrieve("east")
    assert _ids(nodes) == ["p2", "p1"]
    assert [n.score for n in nodes] == pytest.approx([1.0, 0.24], abs=1e-6)
    assert [n.node.metadata["kgpath_query_similarity"] for n in nodes] == pytest.approx(
        [1.0, 0.0], abs=1e-6)
    # "north": p1 = 0.7*1 + 0.3*1.0 (a) = 1.0; p2 = 0.7*0 + 0.3*0.6 (c) = 0.18
    nodes = PathConstrainedRetriever(core_pcr, anchor="a", k=3).retrieve("north")
    assert _ids(nodes) == ["p1", "p2"]
    assert [n.score for n in nodes] == pytest.approx([1.0, 0.18], abs=1e-6)


def test_node_ids_are_the_kgpath_ids_and_stable(core_pcr: Any) -> None:
    r = native(core_pcr, anchor="a", k=10)
    first = r.retrieve("east")
    second = r.retrieve("east")
    assert _ids(first) == _ids(second)
    assert [n.node.hash for n in first] == [n.node.hash for n in second]
    assert all(n.node.node_id == n.node.metadata["kgpath_node_id"] for n in first)


def test_node_text_is_the_kgpath_node_text(core_pcr: Any, toy_graph: Any) -> None:
    nodes = native(core_pcr, anchor="a", k=10).retrieve("east")
    for n in nodes:
        assert n.node.get_content(MetadataMode.NONE) == toy_graph.node(n.node.node_id).text


# ---------------------------------------------------------------- query engine
@pytest.fixture
def no_settings_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any implicit use of Settings.llm / Settings.embed_model fail loudly."""
    from llama_index.core import settings as li_settings

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("Settings default LLM / embed model was resolved")

    monkeypatch.setattr(li_settings, "resolve_llm", boom)
    monkeypatch.setattr(li_settings, "resolve_embed_model", boom)
    monkeypatch.setattr(li_settings.Settings, "_llm", None)
    monkeypatch.setattr(li_settings.Settings, "_embed_model", None)


@pytest.mark.usefixtures("no_settings_defaults")
async def test_inside_retriever_query_engine_with_mock_llm(
    toy_graph: Any, query_embedder: Any
) -> None:
    r = PathConstrainedRetriever.from_graph(toy_graph, config=PAPER,
                                            embed_model=query_embedder, anchor="a",
                                            k=3, output="native",
                                            llm_metadata_keys=("kgpath_path",))
    engine = RetrieverQueryEngine.from_args(r, llm=MockLLM())
    response = engine.query("east")
    assert _ids(response.source_nodes) == ["e", "c", "b"]
    assert all(type(n.score) is float for n in response.source_nodes)
    # MockLLM echoes its prompt: the context holds node texts and (asked for) the readable
    # paths, but none of the other trace fields.
    prompt = str(response)
    assert "Essay on catalysis." in prompt and "Carol is a chemist." in prompt
    assert "kgpath_path: Acme -[founded]-> Beta Labs -[employs]-> Carol -[wrote]-> Essay" \
        in prompt
    for hidden in ("kgpath_node_id", "kgpath_passage_ids", "anchor_resolution", "kgpath_hops",
                   "kgpath_relations", "kgpath_score"):
        assert hidden not in prompt
    aresponse = await engine.aquery("east")
    assert _snapshot(aresponse.source_nodes) == _snapshot(response.source_nodes)
    # per-call anchor through the engine
    moved = engine.query(KgpathQueryBundle("north", anchor="c", k=2))
    assert _ids(moved.source_nodes) == ["b", "c"]
    assert moved.source_nodes[0].node.metadata["kgpath_node_ids"] == ["c", "b"]


# ---------------------------------------------------------------- callbacks / instrumentation
async def test_callback_manager_receives_retrieve_events(core_pcr: Any) -> None:
    handler = LlamaDebugHandler()
    r = native(
        core_pcr, anchor="a", k=2, callback_manager=CallbackManager([handler])
    )
    r.retrieve("east")
    await r.aretrieve("north")
    pairs = handler.get_event_pairs(CBEventType.RETRIEVE)
    assert len(pairs) == 2
    assert [p[0].payload[EventPayload.QUERY_STR] for p in pairs] == ["east", "north"]
    assert [_ids(p[1].payload[EventPayload.NODES]) for p in pairs] == [["e", "c"], ["a", "b"]]


class _Collect(BaseEventHandler):
    events: list[Any] = []

    @classmethod
    def class_name(cls) -> str:
        return "Collect"

    def handle(self, event: Any, **kwargs: Any) -> None:
        if isinstance(event, RetrievalEndEvent):
            self.events.append(event)


def test_instrumentation_sees_retrieval_end_events(core_pcr: Any) -> None:
    handler = _Collect(events=[])
    root = get_dispatcher()
    root.add_event_handler(handler)
    try:
        native(core_pcr, anchor="a", k=1).retrieve("east")
    finally:
        root.event_handlers.remove(handler)
    assert len(handler.events) == 1
    assert _ids(handler.events[0].nodes) == ["e"]


# ---------------------------------------------------------------- typed errors
async def test_unknown_anchor_id_raises_node_not_found(core_pcr: Any) -> None:
    r = native(core_pcr, anchor="nope")
    with pytest.raises(NodeNotFoundError, match="'nope'"):
        r.retrieve("east")
    with pytest.raises(NodeNotFoundError, match="'nope'"):
        await r.aretrieve("east")


def test_unknown_anchor_name_raises_node_not_found(core_pcr: Any) -> None:
    r = native(core_pcr)
    with pytest.raises(NodeNotFoundError, match="'Nobody'"):
        r.retrieve_with("east", anchor_name="Nobody")


@pytest.mark.parametrize("k", [0, -1])
async def test_non_positive_k_raises_config_error(core_pcr: Any, k: int) -> None:
    with pytest.raises(ConfigError, match=str(k)):
        native(core_pcr, anchor="a", k=k)
    with pytest.raises(ConfigError, match=str(k)):
        native(core_pcr, anchor="a", similarity_top_k=k)
    r = native(core_pcr, anchor="a")
    with pytest.raises(ConfigError, match=str(k)):
        r.retrieve_with("east", k=k)
    with pytest.raises(ConfigError, match=str(k)):
        await r.aretrieve(KgpathQueryBundle("east", k=k))


@pytest.mark.parametrize("query", ["", "   "])
async def test_empty_query_raises_query_error(core_pcr: Any, query: str) -> None:
    r = native(core_pcr, anchor="a")
    with pytest.raises(QueryError):
        r.retrieve(query)
    with pytest.raises(QueryError):
        await r.aretrieve(query)


def test_bad_options_raise_config_error(core_pcr: Any, toy_graph: Any) -> None:
    with pytest.raises(ConfigError, match="max_depth"):
        PathConstrainedRetriever(core_pcr, max_depth=-1)
    with pytest.raises(ConfigError, match=r"top_n.*accepted.*max_depth"):
        PathConstrainedRetriever(core_pcr, top_n=3)
    with pytest.raises(ConfigError, match="KnowledgeGraph"):
        PathConstrainedRetriever("not a graph")
    with pytest.raises(ConfigError, match="str"):
        PathConstrainedRetriever.from_graph(toy_graph, config=PAPER, embed_model="openai")
    with pytest.raises(ConfigError, match="output"):
        PathConstrainedRetriever(core_pcr, output="paths")
    with pytest.raises(ConfigError, match="embed_model"):
        PathConstrainedRetriever(core_pcr, embed_model=core_pcr.index.embedder)
    r = PathConstrainedRetriever(core_pcr, anchor="a")
    with pytest.raises(ConfigError, match="direction"):
        r.retrieve_with("east", direction="sideways")
    with pytest.raises(ConfigError, match=r"bogus.*accepted"):
        r.retrieve_with("east", bogus=1)


def test_config_k_counts_hits_and_similarity_top_k_counts_nodes(core_pcr: Any) -> None:
    # k=3 hits (e, c, b) cite two passages; similarity_top_k=1 keeps the first
    r = PathConstrainedRetriever(core_pcr, anchor="a", k=3, similarity_top_k=1)
    assert r.config.k == 3 and r.similarity_top_k == 1
    assert _ids(r.retrieve("east")) == ["p2"]


def test_errors_are_reported_to_callbacks(core_pcr: Any) -> None:
    handler = LlamaDebugHandler()
    r = native(core_pcr, anchor="nope",
                                 callback_manager=CallbackManager([handler]))
    with pytest.raises(NodeNotFoundError):
        r.retrieve("east")
    (start, end), = handler.get_event_pairs(CBEventType.RETRIEVE)
    assert isinstance(end.payload[EventPayload.EXCEPTION], NodeNotFoundError)
