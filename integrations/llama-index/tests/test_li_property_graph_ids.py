"""Passage ids and entity ids live in separate namespaces in a property graph store (issue 24).

HotpotQA passages are named after their page's entity ("Marie Curie" is a passage and an
entity). Written into a store, the chunk of such a passage gets the id ``passage:<id>`` and a
``kgpath_id`` property, so the entity does not overwrite it; read back, the passage has its
id, its text and its citations again.
"""

from __future__ import annotations

from llama_index.core.graph_stores.types import TRIPLET_SOURCE_KEY, ChunkNode, EntityNode
from llama_index.retrievers.kgpath import (
    knowledge_graph_from_property_graph_store,
    knowledge_graph_to_property_graph_store,
)
from llama_index.retrievers.kgpath.pg_conventions import PASSAGE_PREFIX

from kgpath import KnowledgeGraph


def colliding_graph() -> KnowledgeGraph:
    """Passages "Marie Curie" and "Warsaw" share their ids with entities; "p3" does not."""
    g = KnowledgeGraph()
    g.add_passage("Marie Curie", "Marie Curie was born in Warsaw.", {"title": "Marie Curie"})
    g.add_passage("Warsaw", "Warsaw is the capital of Poland.")
    g.add_passage("p3", "Polonium is named after Poland.")
    g.add_node("Marie Curie", text="Physicist.", provenance=["Marie Curie"])
    g.add_node("Warsaw", text="A city.", provenance=["Marie Curie", "Warsaw"])
    g.add_node("Poland", provenance=["Warsaw", "p3"])
    g.add_node("Polonium", provenance=["p3"])
    g.add_edge("Marie Curie", "Warsaw", relation="born in", provenance=["Marie Curie"])
    g.add_edge("Warsaw", "Poland", relation="capital of", provenance=["Warsaw"])
    g.add_edge("Polonium", "Poland", relation="named after", provenance=["p3"])
    return g


def test_colliding_passages_survive_the_round_trip() -> None:
    g = colliding_graph()
    store = knowledge_graph_to_property_graph_store(g)
    chunks = {n.id: n for n in store.get() if isinstance(n, ChunkNode)}
    assert set(chunks) == {PASSAGE_PREFIX + "Marie Curie", PASSAGE_PREFIX + "Warsaw", "p3"}
    assert chunks[PASSAGE_PREFIX + "Warsaw"].properties["kgpath_id"] == "Warsaw"
    assert "kgpath_id" not in chunks["p3"].properties  # no collision, nothing added
    assert {n.id for n in store.get() if isinstance(n, EntityNode)} == {
        "Marie Curie", "Warsaw", "Poland", "Polonium"}
    back = knowledge_graph_from_property_graph_store(store)
    assert back.passages == g.passages  # 3 of 3 (before: the entities overwrote two)
    assert list(back.nodes) == list(g.nodes)
    assert list(back.edges) == list(g.edges)


def test_llamaindex_source_ids_name_the_stores_chunks() -> None:
    store = knowledge_graph_to_property_graph_store(colliding_graph())
    ent = {n.id: n for n in store.get() if isinstance(n, EntityNode)}
    # LlamaIndex fetches an entity's source chunk by this id: it must be the chunk's
    assert ent["Marie Curie"].properties[TRIPLET_SOURCE_KEY] == PASSAGE_PREFIX + "Marie Curie"
    assert ent["Poland"].properties[TRIPLET_SOURCE_KEY] == PASSAGE_PREFIX + "Warsaw"
    assert ent["Polonium"].properties[TRIPLET_SOURCE_KEY] == "p3"
