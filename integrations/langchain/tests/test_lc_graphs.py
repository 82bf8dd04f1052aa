"""LangChain graph inputs (GraphDocument, NetworkxEntityGraph) -> kgpath KnowledgeGraph."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from langchain_core.documents import Document
from langchain_kgpath import PathConstrainedRetriever
from langchain_kgpath.graphs import (
    knowledge_graph_from_entity_graph,
    knowledge_graph_from_graph_documents,
)

from kgpath import GraphError, HashingEmbedder, KnowledgeGraph
from kgpath.methods.pcr import PCRConfig

PAPER = PCRConfig.paper()  # the paper's reachability: out-edges, unlimited depth

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
EMB = HashingEmbedder(dim=64)


@pytest.fixture
def lc():
    gd = pytest.importorskip("langchain_community.graphs.graph_document")
    return gd


def graph_documents(lc):
    N, R = lc.Node, lc.Relationship
    curie = N(id="Marie Curie", type="Person", properties={"description": "Physicist."})
    radium = N(id="radium", type="Element")
    pierre = N(id="Pierre Curie", type="Person")
    d1 = lc.GraphDocument(
        nodes=[curie, radium, pierre],
        relationships=[R(source=curie, target=radium, type="DISCOVERED",
                         properties={"year": 1898}),
                       R(source=pierre, target=radium, type="DISCOVERED"),
                       R(source=curie, target=pierre, type="MARRIED", properties={"weight": 0.5})],
        source=Document(page_content="Marie and Pierre Curie discovered radium in 1898.",
                        id="d1", metadata={"page": 1}),
    )
    radium2 = N(id="radium", type="Element", properties={"name": "Radium", "symbol": "Ra"})
    therapy = N(id="radiotherapy", type="Concept")
    d2 = lc.GraphDocument(
        nodes=[radium2, therapy],
        relationships=[R(source=radium2, target=therapy, type="USED_IN",
                         properties={"description": "radium was used in radiotherapy"}),
                       R(source=therapy, target=N(id="cancer"), type="TREATS")],
        source=Document(page_content="Radium was used in radiotherapy, which treats cancer."),
    )
    return [d1, d2]


def hand_built() -> KnowledgeGraph:
    """The graph the two documents describe, written by hand."""
    g = KnowledgeGraph()
    g.add_passage("d1", "Marie and Pierre Curie discovered radium in 1898.", {"page": 1})
    g.add_passage("doc-1", "Radium was used in radiotherapy, which treats cancer.")
    g.add_node("Marie Curie", text="Physicist.", type="Person", provenance=["d1"])
    g.add_node("radium", name="Radium", type="Element", metadata={"symbol": "Ra"},
               provenance=["d1", "doc-1"])
    g.add_node("Pierre Curie", type="Person", provenance=["d1"])
    g.add_node("radiotherapy", type="Concept", provenance=["doc-1"])
    g.add_node("cancer", provenance=["doc-1"])
    g.add_edge("Marie Curie", "radium", "DISCOVERED", metadata={"year": 1898}, provenance=["d1"])
    g.add_edge("Pierre Curie", "radium", "DISCOVERED", provenance=["d1"])
    g.add_edge("Marie Curie", "Pierre Curie", "MARRIED", weight=0.5, provenance=["d1"])
    g.add_edge("radium", "radiotherapy", "USED_IN", text="radium was used in radiotherapy",
               provenance=["doc-1"])
    g.add_edge("radiotherapy", "cancer", "TREATS", provenance=["doc-1"])
    return g


def test_graph_documents_match_the_hand_built_graph(lc):
    g = knowledge_graph_from_graph_documents(graph_documents(lc))
    h = hand_built()
    assert list(g.nodes) == list(h.nodes)
    assert list(g.edges) == list(h.edges)
    assert g.passages == h.passages


def test_retrieval_equals_direct_build(lc):
    g = knowledge_graph_from_graph_documents(graph_documents(lc))
    via = PathConstrainedRetriever.from_graph(g, config=PAPER,
                                              embedding=EMB, k=4, anchor="Marie Curie")
    direct = PathConstrainedRetriever.from_graph(hand_built(), config=PAPER, embedding=EMB, k=4,
                                                 anchor="Marie Curie")
    for q in ("cancer treatment", "element"):
        a, b = via.invoke(q), direct.invoke(q)
        assert [d.id for d in a] == [d.id for d in b]
        assert [d.metadata for d in a] == [d.metadata for d in b]
    docs = via.invoke("cancer", k=5, output="native")
    by = {d.id: d.metadata for d in docs}
    assert by["cancer"]["kgpath_node_ids"] == ["Marie Curie", "radium", "radiotherapy", "cancer"]
    # the default output is the source documents' text, with their own metadata unprefixed
    passages = via.invoke("cancer", k=5)
    assert passages and all(d.metadata["kgpath_kind"] == "passage" for d in passages)
    assert all(d.page_content == g.passage(d.id).text for d in passages)
    assert {"page": 1, "kgpath_id": "d1"}.items() <= next(
        d.metadata for d in passages if d.id == "d1").items()


def test_duck_typed_inputs_and_errors():
    node = SimpleNamespace(id="a", type="Node", properties={})
    other = SimpleNamespace(id="b", type="Thing", properties={"text": "bee"})
    rel = SimpleNamespace(source=node, target=other, type="LINKS", properties={})
    gd = SimpleNamespace(nodes=[node], relationships=[rel], source=None)
    g = knowledge_graph_from_graph_documents([gd])
    assert g.node("a").type is None and g.node("b").type == "Thing"
    assert g.node("b").text == "bee" and g.passages == {}
    with pytest.raises(GraphError, match="without an id"):
        knowledge_graph_from_graph_documents(
            [SimpleNamespace(nodes=[SimpleNamespace(id="", type="X")], relationships=[])])
    same = SimpleNamespace(id="s", page_content="x", metadata={})
    with pytest.raises(GraphError, match="share the id 's'"):
        knowledge_graph_from_graph_documents(
            [SimpleNamespace(nodes=[], relationships=[], source=same)] * 2)
    # a node typed differently in two documents keeps the first type and records the other
    n1 = SimpleNamespace(id="x", type="Person", properties={})
    n2 = SimpleNamespace(id="x", type="Company", properties={})
    g = knowledge_graph_from_graph_documents(
        [SimpleNamespace(nodes=[n1], relationships=[]), SimpleNamespace(nodes=[n2],
                                                                        relationships=[])])
    assert g.node("x").type == "Person" and g.node("x").metadata["other_types"] == ["Company"]


def test_networkx_entity_graph():
    nx_mod = pytest.importorskip("langchain_community.graphs.networkx_graph")
    eg = nx_mod.NetworkxEntityGraph()
    eg.add_triple(nx_mod.KnowledgeTriple("Marie Curie", "discovered", "radium"))
    eg.add_triple(nx_mod.KnowledgeTriple("radium", "used in", "radiotherapy"))
    eg.add_node("lonely")
    g = knowledge_graph_from_entity_graph(eg)
    assert sorted((e.source, e.relation, e.target) for e in g.edges) == [
        ("Marie Curie", "discovered", "radium"), ("radium", "used in", "radiotherapy")]
    assert "lonely" in g and g.node("radium").text == "radium"
    r = PathConstrainedRetriever.from_graph(g, config=PAPER, embedding=EMB, anchor="Marie Curie")
    assert sorted(d.id for d in r.invoke("therapy")) == ["Marie Curie", "radiotherapy", "radium"]
    triples = [nx_mod.KnowledgeTriple("a", "r", "b"), ("b", "s", "c")]
    g2 = knowledge_graph_from_entity_graph(triples)
    assert [(e.source, e.relation, e.target) for e in g2.edges] == [("a", "r", "b"),
                                                                   ("b", "s", "c")]
    with pytest.raises(GraphError, match="item #0"):
        knowledge_graph_from_entity_graph([("a", "b")])
    with pytest.raises(GraphError, match="NetworkxEntityGraph"):
        knowledge_graph_from_entity_graph(42)
