"""Keyword and community layers, summaries, persistence, and routing through communities."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kgpath import KnowledgeGraph, ScriptedLLM
from kgpath.embeddings import BaseEmbedder
from kgpath.errors import ConfigError, EmptyGraphError, PersistenceError
from kgpath.ingest.hierarchy import (
    CommunityRouter,
    Hierarchy,
    HierarchyConfig,
    build_hierarchy,
    detect_communities,
    keyword_layer,
)
from kgpath.ingest.schema import Schema
from kgpath.methods.schema import DecompositionPlan, SchemaGuidedRetriever


class TopicEmbedder(BaseEmbedder):
    """2 topics: vector = (#radium words, #orbit words, 0.01), so cosines are exact."""

    RADIUM = {"radium", "polonium", "uranium", "curie"}
    ORBIT = {"orbit", "orbits", "bohr", "electron", "model"}

    def __init__(self) -> None:
        self._dim = 3
        self.show_progress = False

    def _embed(self, texts, kind):
        out = []
        for t in texts:
            words = [w.strip(".,;:?").lower() for w in t.split()]
            out.append([sum(w in self.RADIUM for w in words),
                        sum(w in self.ORBIT for w in words), 0.01])
        return np.asarray(out, dtype=np.float32)


def two_cliques() -> KnowledgeGraph:
    """a1..a4 (radium topic) fully connected, b1..b4 (orbit topic) fully connected, a1->b1."""
    g = KnowledgeGraph()
    a_txt = ["radium salts", "polonium ore", "uranium rays", "curie radium lab"]
    b_txt = ["electron orbit", "bohr model", "orbit levels", "electron model"]
    for i, t in enumerate(a_txt, 1):
        g.add_node(f"a{i}", name=f"A{i}", text=t, type="Element")
    for i, t in enumerate(b_txt, 1):
        g.add_node(f"b{i}", name=f"B{i}", text=t, type="Theory")
    for grp in ("a", "b"):
        for i in range(1, 5):
            for j in range(1, 5):
                if i != j:
                    g.add_edge(f"{grp}{i}", f"{grp}{j}", relation="related")
    g.add_edge("a1", "b1", relation="bridge")
    return g


def test_keyword_layer_by_hand():
    g = KnowledgeGraph()
    g.add_node("n1", name="radium", text="radium radium polonium")
    g.add_node("n2", name="uranium", text="radium uranium")
    g.add_node("n3", name="model", text="orbit model")
    g.add_node("n4", name="electron", text="orbit electron")
    # df: radium 2, orbit 2, others 1; min_df=2, max_df=0.5*4=2 -> only radium/orbit qualify
    kw, node_kw = keyword_layer(g, HierarchyConfig())
    assert kw == {"orbit": ("n3", "n4"), "radium": ("n1", "n2")}
    assert node_kw == {"n1": ("radium",), "n2": ("radium",), "n3": ("orbit",), "n4": ("orbit",)}


def test_communities_are_the_two_cliques_and_seeded():
    g = two_cliques()
    comms = detect_communities(g, HierarchyConfig(seed=0))
    assert sorted(map(sorted, comms)) == [["a1", "a2", "a3", "a4"], ["b1", "b2", "b3", "b4"]]
    assert detect_communities(g, HierarchyConfig(seed=0)) == comms


def test_hierarchy_attach_links_community_nodes_to_members():
    g = two_cliques()
    h = build_hierarchy(g)
    assert len(h.communities) == 2
    g2 = h.attach(g)
    assert g2 is g
    for c in h.communities:
        node = g.node(c.id)
        assert node.type == "Community" and node.metadata["layer"] == "community"
        linked = {e.target for e in g.edges if e.source == c.id and e.relation == "has_member"}
        assert linked == set(c.members)
        reached = {g.node_at(int(i)).id for i in g.bfs(c.id, max_depth=1).nodes}
        assert reached == {c.id, *c.members}
    # keyword nodes: every node containing a chosen keyword links to it
    assert h.keywords["orbit"] == ("b1", "b3")
    assert {e.source for e in g.edges if e.target == "keyword:orbit"} == {"b1", "b3"}
    # building again on the attached graph ignores the layer nodes
    again = build_hierarchy(g)
    assert [c.members for c in again.communities] == [c.members for c in h.communities]


def test_keyword_summary_and_llm_summary():
    g = two_cliques()
    h = build_hierarchy(g)
    a = next(c for c in h.communities if "a1" in c.members)
    assert a.summary_source == "keywords"
    assert a.summary.startswith("4 nodes about radium")
    assert "main members: A1" in a.summary  # a1 has the most internal edges (bridge is out)
    llm = ScriptedLLM(lambda p: "Radioactive elements." if "A1" in p else "Atomic models.")
    h2 = build_hierarchy(g, llm=llm)
    assert {c.summary for c in h2.communities} == {"Radioactive elements.", "Atomic models."}
    assert all(c.summary_source == "llm" for c in h2.communities)
    assert len(llm.prompts) == 2 and "A1 -[related]-> A2" in " ".join(llm.prompts)
    # an empty LLM reply falls back to the keyword summary
    h3 = build_hierarchy(g, llm=ScriptedLLM(lambda p: "  "))
    assert all(c.summary_source == "keywords" for c in h3.communities)


def test_routing_returns_members_of_the_matching_community():
    g = two_cliques()
    h = build_hierarchy(g)
    emb = TopicEmbedder()
    router = CommunityRouter(h, g, emb)
    q = emb.embed_queries(["radium?"])[0]
    [(best, score)] = router.route(q, 1)
    assert set(best.members) == {"a1", "a2", "a3", "a4"}
    cand, routed = router.candidates(q, 1)
    assert sorted(g.node_at(int(i)).id for i in cand) == ["a1", "a2", "a3", "a4"]
    assert routed[0][0] == best.id and routed[0][1] == pytest.approx(score)
    # query (1, 0, .01) vs a community text with r radium words and 0 orbit words:
    # cos = (r + 1e-4) / (|q| * sqrt(r^2 + 1e-4))
    r = sum(w.strip(".,;:?").lower() in TopicEmbedder.RADIUM for w in best.routing_text.split())
    expected = (r + 1e-4) / (math.sqrt(1 + 1e-4) * math.sqrt(r * r + 1e-4))
    assert score == pytest.approx(expected, rel=1e-5)
    both, _ = router.candidates(q, 5)  # top larger than the number of communities
    assert both.size == 8


def test_retriever_routes_through_communities_on_large_graphs_only():
    g = two_cliques()
    h = build_hierarchy(g)
    schema = Schema(entities=["Element", "Theory"])
    plan = DecompositionPlan.from_questions("radium?", ["radium?"])
    r = SchemaGuidedRetriever(g, schema=schema, embedder=TopicEmbedder(), hierarchy=h)
    routed = r.retrieve("radium?", plan=plan, k=8, route_min_nodes=0, route_top_communities=1)
    assert sorted(routed.ids) == ["a1", "a2", "a3", "a4"]
    assert routed.sub_results[0].trace["routed_communities"][0][0] == h.communities_of("a1")[0]
    whole = r.retrieve("radium?", plan=plan, k=8)  # 8 nodes < route_min_nodes=5000
    assert len(whole.ids) == 8 and "routed_communities" not in whole.sub_results[0].trace


def test_layer_nodes_are_not_evidence_unless_asked():
    g = two_cliques()
    build_hierarchy(g).attach(g)
    schema = Schema(entities=["Element", "Theory", "Community"])
    plan = DecompositionPlan.from_questions("radium?", ["radium?"])
    r = SchemaGuidedRetriever(g, schema=schema, embedder=TopicEmbedder())
    ids = r.retrieve("radium?", plan=plan, k=50).ids
    assert len(ids) == 8 and not any(":" in i for i in ids)
    ids = r.retrieve("radium?", plan=plan, k=50, include_layer_nodes=True).ids
    assert any(i.startswith("community:") for i in ids)


def test_save_load_round_trip(tmp_path):
    h = build_hierarchy(two_cliques())
    h.save(tmp_path / "h.json")
    back = Hierarchy.load(tmp_path / "h.json")
    assert back.communities == h.communities
    assert dict(back.keywords) == dict(h.keywords) and back.config == h.config
    with pytest.raises(PersistenceError):
        Hierarchy.load(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text('{"communities": 3}')
    with pytest.raises(PersistenceError):
        Hierarchy.load(tmp_path / "bad.json")


def test_min_community_size_and_bad_config():
    g = two_cliques()
    g.add_node("lonely", text="radium")
    h = build_hierarchy(g, config=HierarchyConfig(min_community_size=2))
    assert h.trace["skipped_small_communities"] == 1
    assert all("lonely" not in c.members for c in h.communities)
    assert any("lonely" in c.members for c in build_hierarchy(g).communities)  # default 1
    for bad in ({"algorithm": "girvan"}, {"resolution": 0}, {"min_keyword_df": 0},
                {"max_keyword_df": 1.5}):
        with pytest.raises(ConfigError):
            HierarchyConfig(**bad)
    with pytest.raises(EmptyGraphError):
        build_hierarchy(KnowledgeGraph())


def test_leiden_without_backend_is_an_actionable_error():
    import networkx as nx

    try:
        nx.community.leiden_communities(nx.path_graph(3), seed=0)
    except NotImplementedError:
        with pytest.raises(ConfigError, match="use algorithm='louvain'"):
            detect_communities(two_cliques(), HierarchyConfig(algorithm="leiden"))
    else:  # a backend is installed: it must give the two cliques too
        comms = detect_communities(two_cliques(), HierarchyConfig(algorithm="leiden"))
        assert sorted(map(sorted, comms)) == [["a1", "a2", "a3", "a4"], ["b1", "b2", "b3", "b4"]]
