"""Schema-guided retrieval on a graph whose labels differ only in case (issue 25).

An OpenIE graph holds both ``"country of origin"`` and ``"Country of origin"``; the schema
derived from the graph used to fail at construction (``SchemaError: duplicate relation
type``). The variants are now one type that matches every spelling.
"""

from __future__ import annotations

from kgpath import EvidenceRetriever, HashingEmbedder, KnowledgeGraph
from kgpath.methods.schema.spec import merged_types, schema_from_graph
from kgpath.methods.schema.typed import _TypeTable


def _graph() -> KnowledgeGraph:
    g = KnowledgeGraph()
    g.add_node("tea", name="Tea", type="product")
    g.add_node("china", name="China", type="Country")
    g.add_node("ramen", name="Ramen", type="Product")
    g.add_node("japan", name="Japan", type="country")
    g.add_node("sushi", name="Sushi", type="Product")
    g.add_edge("tea", "china", relation="country of origin")
    g.add_edge("ramen", "japan", relation="Country of origin")
    g.add_edge("sushi", "japan", relation="Country_of_origin")
    return g


def test_case_variants_merge_into_one_type_named_by_the_commonest_spelling():
    assert merged_types(["b", "A", "a", "a"]) == [
        {"name": "a", "aliases": ["A"]}, {"name": "b", "aliases": []}]
    s = schema_from_graph(_graph())
    # 1 / 1 / 1 spellings: ties go to the first in sorted order (upper case first)
    assert [(r.name, r.aliases) for r in s.relations] == [
        ("Country of origin", ("Country_of_origin", "country of origin"))]
    # entity types: "Product" twice, "product" once; "Country" and "country" once each
    assert [(t.name, t.aliases) for t in s.entities] == [
        ("Country", ("country",)), ("Product", ("product",))]


def test_every_spelling_resolves_to_the_merged_type():
    g = _graph()
    s = schema_from_graph(g)
    table = _TypeTable(g, s)
    assert table.edge_type.tolist() == [0, 0, 0]
    assert sorted(table.node_type.tolist()) == [0, 0, 1, 1, 1]


def test_schema_guided_retrieval_runs_on_the_graph():
    g = _graph()
    r = EvidenceRetriever("schema", g, embedder=HashingEmbedder(), k=3, output="native")
    items = r.retrieve("What is the country of origin of ramen?")
    assert items and all(e.method == "schema" for e in items)
