"""One linker for PCR anchors and entity linking: lookups, the exact-unmarked rule, one index."""

from __future__ import annotations

import pytest

from kgpath import HashingEmbedder, KnowledgeGraph
from kgpath.backends import InMemoryBackend
from kgpath.errors import ConfigError
from kgpath.graph import Node
from kgpath.index.linking import EntityLinker, GraphNames, LinkerConfig, name_key_index
from kgpath.methods.pcr.anchors import link_anchors
from kgpath.methods.pcr.anchors import name_key_index as anchors_name_key_index


def _graph(*names: str) -> KnowledgeGraph:
    g = KnowledgeGraph()
    for i, n in enumerate(names):
        g.add_node(f"n{i}", name=n)
    return g


class DictNames:
    """A database stand-in: string keys, answers by entity key, counts its queries."""

    def __init__(self, rows: dict[str, str]) -> None:
        self.rows, self.asked = rows, []

    def candidates(self, key: str, span: str) -> list[str]:
        self.asked.append(span)
        from kgpath.ingest import entity_key
        return [k for k, name in self.rows.items() if entity_key(name) == key]

    def node(self, k: str) -> Node:
        return Node(id=k, name=self.rows[k])


def test_linker_over_a_lookup_without_graph():
    names = DictNames({"db:2": "Warsaw", "db:1": "Marie Curie", "db:3": "radium"})
    linker = EntityLinker(None, names=names, embedder=object())
    q = "Did Marie Curie mine radium near Warsaw?"
    # "Marie Curie" 4-15, "Warsaw" 33-39; "radium" is unmarked: skipped without a query
    assert [(x.node_id, x.name, x.start, x.end) for x in linker.link(q)] == [
        ("db:1", "Marie Curie", 4, 15), ("db:2", "Warsaw", 33, 39)]
    assert "radium" not in names.asked and "Marie Curie" in names.asked
    # no graph: no embedding fallback even with an embedder
    assert linker.link("nothing here") == []
    with pytest.raises(ConfigError, match="graph or names"):
        EntityLinker(None)


def test_exact_unmarked_links_only_a_name_written_so():
    g = _graph("Film", "radium", "Radium Institute")
    cfg = LinkerConfig(exact_unmarked=True)
    got = [(x.node_id, x.surface, x.start) for x in EntityLinker(g, config=cfg).link(
        "the film about radium at the Radium Institute")]
    # "film" is not written as "Film": no link; "radium" is; the capitalised 2-gram wins
    assert got == [("n1", "radium", 15), ("n2", "Radium Institute", 29)]
    assert EntityLinker(g).link("the film about radium") == []  # the default skips both
    with pytest.raises(ConfigError, match="exact_unmarked"):
        LinkerConfig(exact_unmarked="yes")  # type: ignore[arg-type]


def test_match_keeps_lookup_order_link_sorts_by_id():
    g = KnowledgeGraph()
    g.add_node("zeta", name="Paris")
    g.add_node("alpha", name="paris")
    linker = EntityLinker(g)
    assert linker.match("Is Paris big?") == [(3, 8, [0, 1])]  # node order
    assert [x.node_id for x in linker.link("Is Paris big?")] == ["alpha", "zeta"]
    b = InMemoryBackend(g, embedder=HashingEmbedder(dim=8))
    assert [x.node.id for x in link_anchors(b, "Is Paris big?")] == ["zeta", "alpha"]


def test_one_key_index_per_graph_rebuilt_on_change():
    g = _graph("Marie Curie", "Warsaw")
    assert anchors_name_key_index is name_key_index
    idx = name_key_index(g)
    assert idx == {"marie curie": [0], "warsaw": [1]}
    b = InMemoryBackend(g, embedder=HashingEmbedder(dim=8))
    EntityLinker(g).link("Marie Curie")
    link_anchors(b, "Warsaw")
    assert name_key_index(g) is idx  # both linkers used the one cached index
    g.add_node("n2", name="The Sorbonne")
    assert name_key_index(g)["sorbonne"] == [2]
    assert [x.node_id for x in EntityLinker(g).link("the Sorbonne")] == ["n2"]
    assert GraphNames(g).candidates("sorbonne", "Sorbonne") == [2]


def test_anchor_max_ngram():
    g = _graph("Marie Curie", "Curie")
    b = InMemoryBackend(g, embedder=HashingEmbedder(dim=8))
    assert [(x.node.id, x.start) for x in link_anchors(b, "Marie Curie")] == [("n0", 0)]
    assert [(x.node.id, x.start) for x in link_anchors(b, "Marie Curie", max_ngram=1)] == [
        ("n1", 6)]


def test_name_key_index_once_per_version_and_dropped_with_the_graph():
    # moved from test_pcr_passages.py: the cache now lives in kgpath.index.linking
    import gc

    from kgpath.index import linking
    from kgpath.methods.pcr import anchors

    g = KnowledgeGraph()
    g.add_node("mc", name="Marie Curie")
    first = anchors.name_key_index(g)
    assert first == {"marie curie": [0]}
    assert anchors.name_key_index(g) is first  # cached
    g.add_node("pc", name="Pierre Curie")
    assert anchors.name_key_index(g) == {"marie curie": [0], "pierre curie": [1]}
    key = id(g)
    assert key in linking._INDEX_CACHE
    del g
    gc.collect()
    assert key not in linking._INDEX_CACHE
