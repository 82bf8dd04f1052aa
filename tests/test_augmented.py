"""Graph-augmented retriever on a hand-built document graph with hand-set vectors."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from kgpath.errors import ConfigError, GraphError
from kgpath.evidence import Evidence
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_vectors import embed_graph, passage_mean_vectors
from kgpath.methods.augmented import AugmentedConfig, GraphAugmentedRetriever
from kgpath.methods.augmented.spec import SPEC

# Passages and their vectors (unit, 3-d). The question vector is q = (1, 0, 0).
#   film   (0.9)  cites Kiss and Tell, Shirley Temple  -> the first hop of the bridge
#   temple (0.3)  cites Shirley Temple                 -> the answer passage, weak alone
#   other1 (0.6)  cites Nobody
#   other2 (0.5)  cites Nobody2
#   usa    (0.2)  cites United States (cited by 3 passages: over the cap of 2)
PASSAGES = {
    "film": ("Kiss and Tell is a film starring Shirley Temple.", 0.9),
    "temple": ("Shirley Temple was a diplomat.", 0.3),
    "other1": ("Nobody made a film.", 0.6),
    "other2": ("Nobody2 wrote a book.", 0.5),
    "usa": ("United States things.", 0.2),
}
ENTITIES = {
    "Kiss and Tell": ["film"],
    "Shirley Temple": ["film", "temple"],
    "Nobody": ["other1"],
    "Nobody2": ["other2"],
    "United States": ["usa", "other1", "other2"],
}


def _vec(cos: float) -> np.ndarray:
    return np.array([cos, np.sqrt(1 - cos * cos), 0.0], np.float32)


class FixedEmbedder:
    """Passage vectors from the table above; every query is (1, 0, 0)."""

    dim = 3

    def embed_passages(self, texts):
        by_text = {t: _vec(c) for t, c in PASSAGES.values()}
        return np.stack([by_text.get(t, np.array([0, 0, 1], np.float32)) for t in texts])

    def embed_queries(self, texts):
        return np.tile(np.array([1, 0, 0], np.float32), (len(texts), 1))

    async def aembed_passages(self, texts):
        return self.embed_passages(texts)

    async def aembed_queries(self, texts):
        return self.embed_queries(texts)


def _graph() -> KnowledgeGraph:
    g = KnowledgeGraph()
    for pid, (text, _) in PASSAGES.items():
        g.add_passage(pid, text, {"doc_id": pid})
    for name, cited in ENTITIES.items():
        g.add_node(name, name=name, provenance=tuple(cited))
    g.add_edge("Kiss and Tell", "Shirley Temple", "stars")
    return g


def test_dense_order_without_graph():
    r = GraphAugmentedRetriever(_graph(), embedder=FixedEmbedder(), config=AugmentedConfig(
        expansion="none", use_query_entities=False))
    assert r.retrieve("anything").passage_ids == ["film", "other1", "other2", "temple", "usa"]


def test_bridge_passage_rises_through_shared_entity():
    # s' = s; seeds (m=2) = film, other1. temple linked to film via Shirley Temple:
    # chain(temple) = 0.3 + 0.9 + 0.5 = 1.7; chain(film) = 0.9 + max(0.6, 0.3 + 0.5? no:
    # film's links come from seeds film->temple only) = 0.9 + 0.6 = 1.5;
    # chain(other1) = 0.6 + 0.9 = 1.5; other2 = 0.5 + 0.9 = 1.4; usa = 0.2 + 0.9 = 1.1
    # (United States is cited by 3 > cap 2 passages, so it links nothing).
    cfg = AugmentedConfig(seeds=2, link_bonus=0.5, max_entity_passages=2,
                          use_query_entities=False)
    res = GraphAugmentedRetriever(_graph(), embedder=FixedEmbedder(), config=cfg).retrieve("who?")
    assert res.passage_ids == ["temple", "film", "other1", "other2", "usa"]
    assert [round(h.score, 3) for h in res.hits] == [1.7, 1.5, 1.5, 1.4, 1.1]
    top = res.hits[0]
    assert (top.partner, top.via, top.base_score) == ("film", ("Shirley Temple",),
                                                       pytest.approx(0.3, abs=1e-6))
    ev = res.evidence("passages", k=2)
    assert [e.id for e in ev] == ["temple", "film"] and all(isinstance(e, Evidence) for e in ev)
    assert ev[0].trace["supporting"] == ["film"] and ev[0].trace["anchor_id"] == "Shirley Temple"
    assert ev[0].metadata()["kgpath_method"] == "augmented"
    assert ev[0].text == PASSAGES["temple"][0]


def test_cap_lets_common_entity_link_when_raised():
    # cap 3: United States links other1 (seed) with usa and other2:
    # chain(usa) = 0.2 + max(0.9, 0.6 + 0.5) = 1.3 ; other2 = 0.5 + 1.1 = 1.6
    cfg = AugmentedConfig(seeds=2, link_bonus=0.5, max_entity_passages=3,
                          use_query_entities=False, link_rule="shared")
    res = GraphAugmentedRetriever(_graph(), embedder=FixedEmbedder(), config=cfg).retrieve("who?")
    scores = {h.passage_id: round(h.score, 3) for h in res.hits}
    assert scores == {"temple": 1.7, "other2": 1.6, "film": 1.5, "other1": 1.5, "usa": 1.3}
    # "lead": United States is the lead entity of usa (named first) but of neither other1
    # ("Nobody") nor other2 ("Nobody2"): usa keeps its link, other2 loses it (0.5 + 0.9).
    res = GraphAugmentedRetriever(_graph(), embedder=FixedEmbedder(), config=AugmentedConfig(
        seeds=2, link_bonus=0.5, max_entity_passages=3, use_query_entities=False)
    ).retrieve("who?")
    scores = {h.passage_id: round(h.score, 3) for h in res.hits}
    assert scores == {"temple": 1.7, "other2": 1.4, "film": 1.5, "other1": 1.5, "usa": 1.3}


def test_lead_entities():
    from kgpath.methods.augmented import PassageEntityIndex

    g = _graph()
    idx = PassageEntityIndex(g, list(PASSAGES))
    leads = [g.node_at(idx.lead(i)).id for i in range(len(PASSAGES))]
    assert leads == ["Kiss and Tell", "Shirley Temple", "Nobody", "Nobody2", "United States"]


def test_question_entity_bonus_and_seed():
    # "Nobody2" is named: other2 gets γ = 0.3 -> s' = 0.8 and joins the seeds.
    cfg = AugmentedConfig(seeds=1, link_bonus=0.0, question_bonus=0.3,
                          expansion="none")
    res = GraphAugmentedRetriever(_graph(), embedder=FixedEmbedder(), config=cfg).retrieve(
        "What did Nobody2 write?")
    assert res.seeds == ("film", "other2")
    assert [x.node_id for x in res.query_links] == ["Nobody2"]
    # chain: film 0.9 + 0.8 = 1.7, other2 0.8 + 0.9 = 1.7 (tie -> s' decides), other1 1.5
    assert res.passage_ids[:3] == ["film", "other2", "other1"]
    assert res.hits[1].question_entity


def test_neighbour_expansion():
    # Nobody -[knows]-> Nobody2: with "neighbours", seed other1 links other2 too.
    g = _graph()
    g.add_edge("Nobody", "Nobody2", "knows")
    cfg = AugmentedConfig(seeds=2, link_bonus=0.5, max_entity_passages=2,
                          expansion="neighbours", use_query_entities=False)
    res = GraphAugmentedRetriever(g, embedder=FixedEmbedder(), config=cfg).retrieve("who?")
    hit = {h.passage_id: h for h in res.hits}["other2"]
    assert (round(hit.score, 3), hit.partner, hit.via) == (1.6, "other1", ("Nobody2",))


def test_custom_base_and_async_and_overrides():
    def base(query, n):
        return [("usa", 2.0)]

    r = GraphAugmentedRetriever(_graph(), embedder=FixedEmbedder(), base=base,
                                config=AugmentedConfig(expansion="none",
                                                       use_query_entities=False))
    assert r.retrieve("x").passage_ids[0] == "usa"
    assert asyncio.run(r.aretrieve("x", k=2)).passage_ids == ["usa", "film"]
    with pytest.raises(ConfigError, match="bogus"):
        r.retrieve("x", bogus=1)

    async def abase(query, n):
        return [("temple", 5.0)]

    r2 = GraphAugmentedRetriever(_graph(), base=abase, config=AugmentedConfig(
        expansion="none", use_query_entities=False))
    # no embedder: only the base's passages have a finite score
    assert asyncio.run(r2.aretrieve("x")).passage_ids == ["temple"]


def test_build_and_errors():
    r = SPEC.build(_graph(), embedder=FixedEmbedder(), llm=None, config=AugmentedConfig(k=1))
    assert len(r.retrieve("x").hits) == 1
    with pytest.raises(GraphError):
        GraphAugmentedRetriever(KnowledgeGraph(), embedder=FixedEmbedder())
    with pytest.raises(ConfigError):
        GraphAugmentedRetriever(_graph())
    with pytest.raises(ConfigError, match="expansion"):
        AugmentedConfig(expansion="pcr")


def test_embed_graph_passage_means():
    g = _graph()
    g.add_node("Orphan", name="Orphan")  # cites nothing: its own text is embedded
    vec = embed_graph(g, FixedEmbedder())
    assert vec.passage_ids == tuple(PASSAGES)
    assert vec.seconds["nodes_embedded"] == 1.0
    st = g.vectors.matrix[g.index_of("Shirley Temple")]
    mean = (_vec(0.9) + _vec(0.3)) / 2
    np.testing.assert_allclose(st, mean / np.linalg.norm(mean), atol=1e-6)
    np.testing.assert_allclose(g.vectors.matrix[g.index_of("Orphan")], [0, 0, 1])
    m, missing = passage_mean_vectors(g, vec.passage_ids, vec.passage_vectors)
    assert missing == [g.index_of("Orphan")]


def test_embed_graph_shares_the_passage_cache():
    from kgpath.index.passage_vectors import passage_vectors

    class Counting(FixedEmbedder):
        calls = 0

        def embed_passages(self, texts):
            Counting.calls += len(texts)
            return super().embed_passages(texts)

    g, emb = _graph(), Counting()
    vec = embed_graph(g, emb)
    assert Counting.calls == len(PASSAGES)  # every passage once, no node text
    shared = passage_vectors(g, emb)  # what C2RAG's recovery reads: nothing re-embedded
    assert Counting.calls == len(PASSAGES) and shared.ids == vec.passage_ids
    again = embed_graph(g, emb)
    assert Counting.calls == len(PASSAGES)
    np.testing.assert_allclose(again.passage_vectors, vec.passage_vectors)
    g2, emb2 = _graph(), Counting()
    embed_graph(g2, emb2, passage_vectors=vec.passage_vectors)  # given: nothing embedded
    assert Counting.calls == len(PASSAGES)


def test_embed_graph_records_its_embedder_so_another_index_reembeds() -> None:
    from kgpath import GraphIndex, HashingEmbedder, KnowledgeGraph
    from kgpath.index.graph_vectors import embed_graph

    g = KnowledgeGraph.from_triples([("a", "r", "b")], {"p": "a r b"}, provenance=[["p"]])
    embed_graph(g, HashingEmbedder(64))
    assert g.vectors.owner is not None and g.vectors.owner["dim"] == 64
    same = GraphIndex(g, HashingEmbedder(64)).build()
    assert same.vector_index.vectors.shape == (2, 64)  # the stored passage-mean vectors
    other = GraphIndex(g, HashingEmbedder(32)).build()  # another embedder: its own vectors
    assert other.vector_index.vectors.shape == (2, 32)
