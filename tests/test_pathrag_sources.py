"""PathRAG's passages as the authors' code selects its text units (``sources.py``).

Hand-computed truth. Graph (undirected for the text units)::

    X -r-> Y    X -r-> Z    Y -co-> W (type cooccurrence)

Provenance: X: q1, q2; Y: q2; Z: q2; W: q3.  Relation counts
(``_find_most_related_text_unit_from_entities``): for X, q1 is cited by none of X's neighbours
(Y, Z) -> 0; q2 by both -> 2.  For Y (neighbours X, W): q2 is cited by X -> 1.
"""

from __future__ import annotations

import numpy as np
import pytest

from kgpath import ConfigError, HashingEmbedder, KnowledgeGraph
from kgpath.methods.pathrag import PathRAGConfig, PathRAGRetriever, RetrievedNode
from kgpath.methods.pathrag.flow import flow_adjacency
from kgpath.methods.pathrag.sources import (
    TextUnit,
    entity_text_units,
    passage_citations,
    seed_text_units,
)


def graph() -> KnowledgeGraph:
    g = KnowledgeGraph()
    for pid in ("q1", "q2", "q3"):
        g.add_passage(pid, f"text of {pid}")
    g.add_node("X", provenance=["q1", "q2"])
    g.add_node("Y", provenance=["q2"])
    g.add_node("Z", provenance=["q2"])
    g.add_node("W", provenance=["q3"])
    g.add_edge("X", "Y", "r")
    g.add_edge("X", "Z", "r")
    g.add_edge("Y", "W", "co-occurs with", type="cooccurrence")
    return g


def nodes(g: KnowledgeGraph, *ids: str, sim: float = 0.5) -> list[RetrievedNode]:
    return [RetrievedNode(g.node(i), g.index_of(i), "kw", sim) for i in ids]


def test_one_entity_orders_its_passages_by_relation_count():
    g = graph()
    units = entity_text_units(g, flow_adjacency(g, "undirected"), nodes(g, "X"))
    assert [(u.passage_id, u.order, u.relation_count) for u in units] == [
        ("q2", 0, 2), ("q1", 0, 0)]


def test_entity_rank_first_and_counts_add_over_entities():
    g = graph()
    units = entity_text_units(g, flow_adjacency(g, "undirected"), nodes(g, "Y", "X"))
    # q2 first cited by Y (order 0): count 1 from Y plus 2 from X; q1 by X (order 1)
    assert [(u.passage_id, u.order, u.relation_count) for u in units] == [
        ("q2", 0, 3), ("q1", 1, 0)]
    assert units[0].node_id == "Y" and units[0].supporting == ("Y", "X")


def test_similarity_order_within_an_entity():
    g = graph()
    sims = {"q1": 0.9, "q2": 0.1}
    units = entity_text_units(g, flow_adjacency(g, "undirected"), nodes(g, "X"), sims)
    assert [u.passage_id for u in units] == ["q1", "q2"]



def test_question_order_ranks_across_entities():
    g = graph()
    ranked = [RetrievedNode(g.node("W"), g.index_of("W"), "kw", 0.8),
              RetrievedNode(g.node("X"), g.index_of("X"), "kw", 0.2)]
    sims = {"q1": 0.9, "q2": 0.1, "q3": 0.3}
    units = entity_text_units(g, flow_adjacency(g, "undirected"), ranked, sims, 0.7)
    # q1: .7*.9 + .3*.2 = 0.69; q3 (W, first entity): .7*.3 + .3*.8 = 0.45;
    # q2: .7*.1 + .3*.2 = 0.13. Entity order alone would put q3 first.
    assert [u.passage_id for u in units] == ["q1", "q3", "q2"]

# Seeds (seed_text_units). Node vectors in node order X, Y, Z, W; one node query (0, 1):
# cos = 0, 0.6, 0.8, 0.8 for X, Y, Z, W.
NODE_VECS = np.array([[1.0, 0.0], [0.8, 0.6], [0.6, 0.8], [0.6, 0.8]])
NODE_QUERY = np.array([[0.0, 1.0]])


def test_seeds_join_the_candidates_with_their_best_citing_node():
    g = graph()
    sims = {"q1": 0.9, "q2": 0.1, "q3": 0.5}
    units = entity_text_units(g, flow_adjacency(g, "undirected"), nodes(g, "X", sim=0.2),
                              sims, 0.7)
    assert [u.passage_id for u in units] == ["q1", "q2"]  # W (q3) was not retrieved
    # Top-1 passage is q1, already a candidate: nothing changes.
    assert seed_text_units(g, units, sims, 1, 0.7, NODE_VECS, NODE_QUERY) == units
    out = seed_text_units(g, units, sims, 2, 0.7, NODE_VECS, NODE_QUERY)
    # q3 joins (2nd most similar passage); s(q3) = cos of W = 0.8.
    # q1: .7*.9 + .3*.2 = 0.69; q3: .7*.5 + .3*.8 = 0.59; q2: .7*.1 + .3*.2 = 0.13
    assert [u.passage_id for u in out] == ["q1", "q3", "q2"]
    seed = out[1]
    assert (seed.node_id, seed.seeded, seed.order) == ("W", True, 1)
    assert seed.similarity == pytest.approx(0.8)
    assert seed.supporting == () and not out[0].seeded and not out[2].seeded
    assert seed_text_units(g, units, sims, 0, 0.7, NODE_VECS, NODE_QUERY) == units


def test_a_seed_takes_the_most_similar_of_its_citing_nodes():
    g = graph()
    sims = {"q1": 0.9, "q2": 0.3, "q3": 0.1}
    units = entity_text_units(g, flow_adjacency(g, "undirected"), nodes(g, "W", sim=0.9),
                              sims, 0.7)
    out = seed_text_units(g, units, sims, 2, 0.7, NODE_VECS, NODE_QUERY)
    # q1 cited by X (cos 0); q2 by X, Y, Z: best Z (0.8; node order breaks the tie with W).
    # q2: .7*.3 + .3*.8 = 0.45; q3 (W): .7*.1 + .3*.9 = 0.34; q1: .7*.9 + .3*0 = 0.63
    assert [(u.passage_id, u.node_id) for u in out] == [("q1", "X"), ("q2", "Z"), ("q3", "W")]
    assert [u.similarity for u in out] == pytest.approx([0.0, 0.8, 0.9])


def test_seeds_without_node_queries_score_zero_and_follow_the_entities_on_ties():
    g = graph()
    sims = {"q1": 0.5, "q2": 0.5, "q3": 0.5}
    units = entity_text_units(g, flow_adjacency(g, "undirected"), nodes(g, "W", sim=0.0),
                              sims, 0.7)
    out = seed_text_units(g, units, sims, 3, 0.7)  # nodes given by id: no node query
    assert [(u.passage_id, u.similarity, u.order, u.node_id) for u in out] == [
        ("q3", 0.0, 0, "W"), ("q1", 0.0, 1, None), ("q2", 0.0, 1, None)]


def test_relation_units_stay_first():
    g = graph()
    edge = g.edges[0]
    rel = TextUnit("q2", 0, 0, None, edge, 0.0, ("X", "Y"))
    out = seed_text_units(g, [rel], {"q1": 0.9, "q2": 0.0, "q3": 0.8}, 2, 0.7,
                          NODE_VECS, NODE_QUERY)
    assert [u.passage_id for u in out] == ["q2", "q3", "q1"]  # q3 .56+.24 > q1 .63+0


def test_passage_citations_is_the_inverse_of_provenance_and_kept_in_the_store():
    g = graph()
    store: dict = {}
    got = passage_citations(g, store)
    assert got == {"q1": [0], "q2": [0, 1, 2], "q3": [3]}
    assert store["cited_by"] is got and passage_citations(g, store) is got


@pytest.mark.filterwarnings("ignore::UserWarning")  # num_nodes covers this small graph
def test_retriever_seeds_the_question_nearest_passages():
    g = graph()
    emb = HashingEmbedder()
    r = PathRAGRetriever(g, embedder=emb)
    qv = emb.embed_queries(["text of q3"])[0]
    pv = r.index.passage_vectors()
    cos = dict(zip(pv.ids, (pv.matrix @ qv).tolist()))
    res = r.retrieve_from_nodes("text of q3", ["X"])  # W (q3) not in V_q
    ev = [e for e in res.evidence() if e.kind == "passage"]
    # Nodes given by id score 0, so the rule is 0.7 * cos for all three passages.
    assert [e.id for e in ev] == sorted(cos, key=lambda p: -cos[p])
    q3 = next(e for e in ev if e.id == "q3")
    assert q3.trace == {"supporting": [], "node_id": None, "seed": True}
    off = r.retrieve_from_nodes("text of q3", ["X"], seed_passages=0)
    assert "q3" not in [e.id for e in off.evidence()]
    paper = r.retrieve_from_nodes("text of q3", ["X"], unit_order="relation_count")
    assert "q3" not in [e.id for e in paper.evidence()]  # seeds need unit_order="question"


def test_retrieve_scores_a_seed_by_its_best_citing_node_for_the_node_query():
    g = KnowledgeGraph()
    names = ["apple", "banana", "cherry", "grape", "lemon", "mango"]
    for i, name in enumerate(names):  # node i cites passage p<i> and p<i+1>
        g.add_passage(f"p{i}", f"about {name} and more")
    g.add_passage(f"p{len(names)}", "the last one")
    for i, name in enumerate(names):
        g.add_node(name, text=f"{name} fruit", provenance=[f"p{i}", f"p{i + 1}"])
    emb = HashingEmbedder()
    r = PathRAGRetriever(g, embedder=emb, config=PathRAGConfig(num_nodes=2,
                                                               seed_passages=7))
    q = "about cherry and more"
    res = r.retrieve(q)
    retrieved = set(res.trace["retrieved_node_ids"])
    seeds = [u for u in res.text_units if u.seeded]
    assert retrieved == {"cherry"}  # the z floor keeps the one clear match
    # cherry cites p2, p3; the seeds (all 7 passages asked for) bring in the other five
    assert {u.passage_id for u in seeds} == {"p0", "p1", "p4", "p5", "p6"}
    qv = emb.embed_queries([q])[0]  # offline, the question is the joined node query
    nv = r.index.vector_index.vectors
    cited = passage_citations(g)
    for u in seeds:
        assert not {g.node_at(i).id for i in cited.get(u.passage_id, [])} & retrieved
        best = max(cited[u.passage_id], key=lambda i: float(nv[i] @ qv))
        assert u.node_id == g.node_at(best).id
        assert u.similarity == pytest.approx(float(nv[best] @ qv), abs=1e-6)
    pv = r.index.passage_vectors()
    cos = dict(zip(pv.ids, (pv.matrix @ qv).tolist()))
    score = [0.7 * cos[u.passage_id] + 0.3 * u.similarity for u in res.text_units]
    assert score == sorted(score, reverse=True)


def test_paper_preset_has_no_seeds():
    assert PathRAGConfig.paper().seed_passages == 0
    assert PathRAGConfig.literal_eq4().seed_passages == 0
    assert PathRAGConfig().seed_passages == PathRAGConfig.for_passages().seed_passages == 5


def test_evidence_passages_are_the_text_units_then_path_provenance():
    g = graph()
    r = PathRAGRetriever(g, embedder=HashingEmbedder(), config=PathRAGConfig.paper())
    res = r.retrieve_from_nodes("how are X and W linked?", ["X", "W"])
    ev = res.evidence()
    # X's passages (q2 count 2, q1 count 0), then W's (q3); the path X-Y-W adds nothing new
    assert [e.id for e in ev] == ["q2", "q1", "q3"]
    assert [e.kind for e in ev] == ["passage"] * 3
    assert ev[0].trace == {"supporting": ["X"], "node_id": "X"}
    assert ev[0].score == 0.0  # nodes given by id have no keyword similarity
    old = r.retrieve_from_nodes("how are X and W linked?", ["X", "W"], passages="paths")
    assert [e.id for e in old.evidence()] == ["q1", "q2", "q3"]  # the path's provenance


def test_excluded_edge_types_leave_the_paths():
    g = graph()
    r = PathRAGRetriever(g, embedder=HashingEmbedder(), config=PathRAGConfig.paper())
    assert len(r.retrieve_from_nodes("x?", ["X", "W"]).paths) == 1  # X-Y-W
    res = r.retrieve_from_nodes("x?", ["X", "W"], exclude_edge_types=("cooccurrence",))
    assert res.paths == () and res.empty_reason == "no_path"
    assert [e.id for e in res.evidence()] == ["q2", "q1", "q3"]  # text units unchanged
    adj = flow_adjacency(g, "undirected", ("cooccurrence",))
    assert adj.degree.tolist() == [2, 1, 1, 0]


def test_joined_query_embeds_the_question_offline():
    g = graph()
    r = PathRAGRetriever(g, embedder=HashingEmbedder())
    res = r.retrieve("Where is X?", node_query="joined")
    assert res.trace["node_keywords"] == ["Where is X?"]
    assert res.trace["node_query"] == "joined"


@pytest.mark.parametrize("field, value", [
    ("passages", "nodes"), ("node_query", "both"), ("unit_order", "degree"),
    ("exclude_edge_types", ["cooccurrence"]), ("seed_passages", -1), ("seed_passages", 2.0),
])
def test_bad_options_raise(field, value):
    with pytest.raises(ConfigError, match=field):
        PathRAGConfig(**{field: value})


def test_for_passages_preset_sets_the_measured_options_and_takes_overrides():
    from kgpath.methods.pathrag import PathRAGConfig

    cfg = PathRAGConfig.for_passages()
    assert (cfg.node_query, cfg.node_match) == ("joined", "text")
    assert cfg.exclude_edge_types == ("cooccurrence",)
    assert cfg.unit_order == "question"
    assert cfg.num_nodes == PathRAGConfig().num_nodes  # everything else stays the default
    assert PathRAGConfig.for_passages(unit_order="relation_count").unit_order == "relation_count"


class _AsyncOnly(HashingEmbedder):
    """Records every sync call made while ``forbid`` is set (the async path must make none)."""

    forbid = False
    sync_calls: list[str] = []

    def embed_queries(self, texts):  # type: ignore[no-untyped-def]
        if self.forbid:
            self.sync_calls.append("embed_queries")
        return super().embed_queries(texts)

    def embed_passages(self, texts):  # type: ignore[no-untyped-def]
        if self.forbid:
            self.sync_calls.append("embed_passages")
        return super().embed_passages(texts)


@pytest.mark.filterwarnings("ignore::UserWarning")  # num_nodes covers this small graph
def test_aretrieve_with_question_order_makes_no_sync_embedder_call():
    import asyncio

    g = graph()
    emb = _AsyncOnly()
    r = PathRAGRetriever(g, embedder=emb, config=PathRAGConfig.for_passages(num_nodes=3))

    async def run():  # type: ignore[no-untyped-def]
        await r.index.abuild()
        emb.forbid = True
        try:
            return await r.aretrieve("text of X and Y")
        finally:
            emb.forbid = False

    res = asyncio.run(run())
    assert emb.sync_calls == []  # the question's vector came with the keywords' request
    ref = PathRAGRetriever(g, embedder=HashingEmbedder(),
                           config=PathRAGConfig.for_passages(num_nodes=3))
    want = ref.retrieve("text of X and Y")
    assert [(e.id, e.score) for e in res.evidence()] == [(e.id, e.score) for e in want.evidence()]
    assert res.text_units == want.text_units
    assert [u.passage_id for u in want.text_units if u.seeded] == ["q3"]  # seeds async too


@pytest.mark.filterwarnings("ignore::UserWarning")  # num_nodes covers this small graph
@pytest.mark.parametrize("node_match", ["text", "name"])
def test_cold_aretrieve_builds_its_node_vectors_with_the_async_api(node_match):
    import asyncio

    g = graph()
    emb = _AsyncOnly()
    emb.sync_calls = []
    r = PathRAGRetriever(g, embedder=emb, config=PathRAGConfig(num_nodes=3, node_match=node_match))

    async def run():  # type: ignore[no-untyped-def]
        emb.forbid = True  # nothing built yet: node index / name vectors come in cold
        try:
            return await r.aretrieve("text of X and Y")
        finally:
            emb.forbid = False

    res = asyncio.run(run())
    assert emb.sync_calls == []
    want = PathRAGRetriever(g, embedder=HashingEmbedder(),
                            config=PathRAGConfig(num_nodes=3, node_match=node_match))
    assert [(e.id, e.score) for e in res.evidence()] == [
        (e.id, e.score) for e in want.retrieve("text of X and Y").evidence()]
