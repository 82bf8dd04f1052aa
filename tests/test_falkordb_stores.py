"""Framework stores on a FalkorDB server: LlamaIndex's FalkorDBPropertyGraphStore round trip
(and PCR reading the store's graph in place), LangChain's FalkorDBGraph."""

from __future__ import annotations

import itertools

import pytest

from kgpath import GraphIndex, HashingEmbedder, KnowledgeGraph
from kgpath.methods.pcr import PathConstrainedRetriever

pytestmark = pytest.mark.falkordb
_graphs = itertools.count()


def written_graph() -> KnowledgeGraph:
    """Ids differ from names, two nodes share a name, a name holds quotes, parallel edges."""
    g = KnowledgeGraph()
    g.add_passage("p1", "Marie Curie and Pierre Curie discovered radium.", {"year": 1898})
    g.add_passage("p2", "Radium was used in early radiotherapy.")
    g.add_node("mc", name="Marie Curie", text="Physicist and chemist.", type="person",
               metadata={"born": 1867, "tags": ["nobel"]}, provenance=["p1"])
    g.add_node("pc", name="Pierre Curie", text="Physicist.", type="person", provenance=["p1"])
    g.add_node("ra", name="radium", text="A radioactive element.", type="element",
               provenance=["p1", "p2"])
    g.add_node("rt", name="radiotherapy", text="Treatment with radiation.", provenance=["p2"])
    g.add_node("lab1", name="lab", text="The shed on rue Lhomond.")
    g.add_node("lab2", name="lab", text="The Radium Institute.")
    g.add_node("q", name='the "Curie" unit', text="A unit of activity.")
    g.add_edge("mc", "ra", relation="discovered", text="Marie Curie discovered radium",
               provenance=["p1"], weight=0.9)
    g.add_edge("pc", "ra", relation="discovered", provenance=["p1"])
    g.add_edge("mc", "pc", relation="married", metadata={"year": 1895})
    g.add_edge("ra", "rt", relation="used in", type="application", provenance=["p2"])
    g.add_edge("mc", "lab1", relation="worked in")
    g.add_edge("mc", "lab2", relation="worked in")
    g.add_edge("mc", "lab2", relation="directed")  # parallel relation
    g.add_edge("ra", "q", relation="names")
    return g


@pytest.fixture
def li_store(falkordb_server):
    pytest.importorskip("llama_index.graph_stores.falkordb")
    from llama_index.graph_stores.falkordb import FalkorDBPropertyGraphStore

    store = FalkorDBPropertyGraphStore(
        url=f"falkor://{falkordb_server.host}:{falkordb_server.port}",
        database=f"li_store_{next(_graphs)}",
    )
    yield store
    store.close()


def test_llama_index_store_round_trip_is_lossless(li_store):
    from llama_index.retrievers.kgpath.falkordb_store import (
        knowledge_graph_from_falkordb_store,
        knowledge_graph_to_falkordb_store,
    )

    g = written_graph()
    knowledge_graph_to_falkordb_store(g, li_store)
    back = knowledge_graph_from_falkordb_store(li_store)
    assert list(back.nodes) == list(g.nodes)  # ids, names (quotes too), texts, metadata, order
    assert list(back.edges) == list(g.edges)  # relations, weights, provenance, order
    assert back.passages == g.passages
    emb = HashingEmbedder(dim=32)
    a, b = PathConstrainedRetriever(GraphIndex(g, emb)), PathConstrainedRetriever(
        GraphIndex(back, emb))
    for kw in (dict(anchor="mc"), dict(anchor_name="radium", direction="both")):
        assert a.retrieve("radioactive", **kw).hits == b.retrieve("radioactive", **kw).hits
    # ...and back again: a second store holds the same graph
    knowledge_graph_to_falkordb_store(back, li_store)  # upsert: idempotent
    again = knowledge_graph_from_falkordb_store(li_store)
    assert list(again.nodes) == list(g.nodes) and list(again.edges) == list(g.edges)


def test_llama_index_store_is_a_cypher_driver(li_store):
    from kgpath.backends.cypher import FalkorDBDriver, as_cypher_driver

    drv = as_cypher_driver(li_store)
    assert isinstance(drv, FalkorDBDriver)
    assert drv.run("RETURN $x AS x", {"x": "ok"}) == [{"x": "ok"}]


def test_langchain_falkordb_graph(falkordb_server):
    graphs = pytest.importorskip("langchain_community.graphs")
    from langchain_community.graphs.graph_document import GraphDocument, Node, Relationship
    from langchain_core.documents import Document

    from kgpath.backends.cypher import FalkorDBDriver, as_cypher_driver, reachable_hops
    from kgpath.backends.cypher.schema import CypherSchema

    lc = graphs.FalkorDBGraph(database=f"lc_{next(_graphs)}", host=falkordb_server.host,
                              port=falkordb_server.port)
    a, b, c = (Node(id=x, type="Thing") for x in ("a", "b", "c"))
    lc.add_graph_documents([GraphDocument(
        nodes=[a, b, c],
        relationships=[Relationship(source=a, target=b, type="LINKS"),
                       Relationship(source=b, target=c, type="LINKS")],
        source=Document(page_content="a links b links c"))])
    drv = as_cypher_driver(lc)
    assert isinstance(drv, FalkorDBDriver)
    schema = CypherSchema(node_label="Thing", rel_types=("LINKS",), name_property=None,
                          name_key_property=None, order_property=None, passage_label=None,
                          text_property=None, embedding_property=None,
                          key_property=None)  # a graph kgpath did not write: no lookup key
    assert reachable_hops(drv, schema, "a") == {"a": 0, "b": 1, "c": 2}
