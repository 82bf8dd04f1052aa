"""LlamaIndex property graphs <-> kgpath, and kgpath sub-retrievers of a PropertyGraphIndex."""

from __future__ import annotations

import pytest
from llama_index.core import PropertyGraphIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import (
    KG_NODES_KEY,
    KG_RELATIONS_KEY,
    TRIPLET_SOURCE_KEY,
    ChunkNode,
    EntityNode,
    PropertyGraphStore,
    Relation,
)
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import TextNode, TransformComponent
from llama_index.retrievers.kgpath import KgpathQueryBundle
from llama_index.retrievers.kgpath.pg_conventions import (
    PropertyGraphReader,
    entity_names,
    entity_properties,
    relation_properties,
)
from llama_index.retrievers.kgpath.property_graph import (
    PathRAGSubRetriever,
    PCRSubRetriever,
    find_mentioned_entity,
    knowledge_graph_from_property_graph_store,
    knowledge_graph_to_property_graph_store,
)

from kgpath import ConfigError, GraphIndex, HashingEmbedder, KnowledgeGraph
from kgpath.methods.pcr import PathConstrainedRetriever as CorePCR
from kgpath.methods.pcr import PCRConfig

PAPER = PCRConfig.paper()  # the paper's reachability: out-edges, unlimited depth

EMB = HashingEmbedder(dim=64)


def same_pcr(a, b):
    assert [h.id for h in a.hits] == [h.id for h in b.hits]
    for x, y in zip(a.hits, b.hits):
        assert (x.hops, x.path, [e.relation for e in x.edges]) == (
            y.hops, y.path, [e.relation for e in y.edges])
        assert x.score == pytest.approx(y.score, abs=1e-6)


# ---------------------------------------------------------------------- round trip
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


def test_round_trip_through_simple_store_is_lossless():
    g = written_graph()
    store = knowledge_graph_to_property_graph_store(g)
    names = {n.name for n in store.get() if isinstance(n, EntityNode)}
    # unique names become entity names; the shared name "lab" falls back to the ids
    assert {"Marie Curie", "radium", "lab1", "lab2", 'the "Curie" unit'} <= names
    back = knowledge_graph_from_property_graph_store(store)
    assert list(back.nodes) == list(g.nodes)
    assert list(back.edges) == list(g.edges)
    assert back.passages == g.passages
    bare = knowledge_graph_from_property_graph_store(store, include_chunks=False)
    assert bare.passages == {} and all(not n.provenance for n in bare.nodes)
    assert all(not e.provenance for e in bare.edges) and len(bare) == len(g)


def test_round_trip_retrieval_equals_direct_build():
    g = written_graph()
    back = knowledge_graph_from_property_graph_store(knowledge_graph_to_property_graph_store(g))
    direct, via = CorePCR(GraphIndex(g, EMB)), CorePCR(GraphIndex(back, EMB))
    for kw in (dict(anchor="mc"), dict(anchor_name="radium", direction="both"),
               dict(anchor="pc", max_depth=1, k=3), dict(anchor_fallback="similar")):
        a, b = direct.retrieve("radioactive treatment", **kw), via.retrieve(
            "radioactive treatment", **kw)
        assert a.hits == b.hits and a.anchor == b.anchor


class TripleListExtractor(TransformComponent):
    """Offline kg extractor: reads ``(head, relation, tail)`` triples from chunk metadata."""

    def __call__(self, nodes, **kwargs):
        for node in nodes:
            ents, rels = {}, []
            for h, r, t in node.metadata.get("triples", []):
                for name in (h, t):
                    ents.setdefault(name, EntityNode(name=name, label="entity"))
                rels.append(Relation(label=r, source_id=h, target_id=t))
            node.metadata[KG_NODES_KEY] = list(ents.values())
            node.metadata[KG_RELATIONS_KEY] = rels
        return nodes


CHUNKS = {
    "c1": ("Marie Curie discovered radium with Pierre Curie.",
           [("Marie Curie", "discovered", "radium"), ("Pierre Curie", "discovered", "radium"),
            ("Marie Curie", "married", "Pierre Curie")]),
    "c2": ("Radium was used in radiotherapy; radiotherapy treats cancer.",
           [("radium", "used in", "radiotherapy"), ("radiotherapy", "treats", "cancer")]),
    "c3": ("Polonium was named after Poland.", [("polonium", "named after", "Poland")]),
}


@pytest.fixture
def pg_index():
    nodes = [TextNode(id_=cid, text=text, metadata={"triples": triples})
             for cid, (text, triples) in CHUNKS.items()]
    return PropertyGraphIndex(
        nodes=nodes, kg_extractors=[TripleListExtractor()], llm=MockLLM(),
        embed_model=MockEmbedding(embed_dim=8), property_graph_store=SimplePropertyGraphStore(),
        embed_kg_nodes=False, use_async=False,
    )


def test_store_built_by_property_graph_index_converts_like_the_triples(pg_index):
    g = knowledge_graph_from_property_graph_store(pg_index.property_graph_store)
    triples = [t for _, ts in CHUNKS.values() for t in ts]
    direct = KnowledgeGraph.from_triples(triples)
    assert sorted(n.id for n in g.nodes) == sorted(n.id for n in direct.nodes)
    assert sorted((e.source, e.relation, e.target) for e in g.edges) == sorted(
        (e.source, e.relation, e.target) for e in direct.edges)
    # chunks become passages; the chunk each entity/relation came from is its provenance
    assert set(g.passages) == {"c1", "c2", "c3"}
    assert g.passages["c2"].text.startswith("Radium was used")
    # LlamaIndex keeps the last chunk on the entity; its relations' chunks are added
    assert g.node("radium").provenance == ("c2", "c1")
    assert g.node("Poland").provenance == ("c3",)
    assert {e.relation: e.provenance for e in g.edges}["used in"] == ("c2",)
    assert g.node("radium").type is None and g.node("radium").name == "radium"
    # retrieval on the converted graph equals retrieval on the direct build
    a = CorePCR(GraphIndex(direct, EMB)).retrieve("cancer treatment", anchor="Marie Curie", k=6)
    b = CorePCR(GraphIndex(g, EMB)).retrieve("cancer treatment", anchor="Marie Curie", k=6)
    same_pcr(a, b)


class OpaqueStore(PropertyGraphStore):
    """A store reachable only through the abstract API (no .graph, no .connection)."""

    def __init__(self, inner):
        self._inner = inner

    def get(self, properties=None, ids=None):
        return self._inner.get(properties, ids)

    def get_triplets(self, entity_names=None, relation_names=None, properties=None, ids=None):
        return self._inner.get_triplets(entity_names, relation_names, properties, ids)

    def get_rel_map(self, graph_nodes, depth=2, limit=30, ignore_rels=None):
        return self._inner.get_rel_map(graph_nodes, depth, limit, ignore_rels)

    def upsert_nodes(self, nodes):
        self._inner.upsert_nodes(nodes)

    def upsert_relations(self, relations):
        self._inner.upsert_relations(relations)

    def delete(self, entity_names=None, relation_names=None, properties=None, ids=None):
        self._inner.delete(entity_names, relation_names, properties, ids)

    def structured_query(self, query, param_map=None):
        raise NotImplementedError

    def vector_query(self, query, **kwargs):
        raise NotImplementedError


def test_generic_store_api_path():
    g = written_graph()
    store = OpaqueStore(knowledge_graph_to_property_graph_store(g))
    back = knowledge_graph_from_property_graph_store(store, batch_size=2, show_progress=False)
    assert list(back.nodes) == list(g.nodes)
    assert sorted(map(repr, back.edges)) == sorted(map(repr, g.edges))


def test_embeddings_travel_when_asked():
    g = written_graph()
    GraphIndex(g, EMB).build()
    store = knowledge_graph_to_property_graph_store(g, embeddings=True)
    back = knowledge_graph_from_property_graph_store(store, embeddings=True)
    assert (back.vectors.matrix == g.vectors.matrix).all()
    assert back.vectors.missing() == []
    assert knowledge_graph_from_property_graph_store(store).vectors.missing() == list(
        range(len(g)))


# ---------------------------------------------------------------------- sub-retrievers
def test_mentioned_entity_prefers_the_longest_name():
    names = {"marie curie": ["mc"], "curie": ["x"], "radium": ["ra"]}
    assert find_mentioned_entity("What did Marie Curie find?", names) == "mc"
    assert find_mentioned_entity("radium and Curie", names) == "ra"  # same length: leftmost
    assert find_mentioned_entity("radium and Marie  Curie!", names) == "mc"  # longest
    assert find_mentioned_entity("nothing here", names) is None


def test_pcr_sub_retriever_in_one_line(pg_index):
    retriever = pg_index.as_retriever(
        sub_retrievers=[PCRSubRetriever.from_index(pg_index, embed_model=EMB, k=4,
                                                   output="native", direction="out",
                                                   max_depth=None)],
        use_async=False,
    )
    nodes = retriever.retrieve("What did Marie Curie discover that treats cancer?")
    core = CorePCR(GraphIndex(knowledge_graph_from_property_graph_store(
        pg_index.property_graph_store), EMB), config=PAPER).retrieve(
        "What did Marie Curie discover that treats cancer?", anchor="Marie Curie", k=4)
    assert [n.node.node_id for n in nodes] == core.ids
    assert [n.score for n in nodes] == pytest.approx([h.score for h in core.hits])
    meta = nodes[0].node.metadata
    assert meta["kgpath_anchor_id"] == "Marie Curie" and meta["kgpath_method"] == "pcr"
    assert [n.node.metadata["kgpath_node_ids"] for n in nodes] == [list(h.path) for h in core.hits]
    # Marie Curie -> radium, Pierre Curie; radium -> radiotherapy -> cancer (not polonium)
    assert core.reachable_count == 5


def test_pcr_sub_retriever_options_text_and_async(pg_index):
    sub = PCRSubRetriever.from_index(pg_index, embed_model=EMB, include_text=True, k=2,
                                     output="native")
    nodes = sub.retrieve(KgpathQueryBundle("treatment", anchor="radium", k=2))
    assert {n.node.metadata["kgpath_anchor_id"] for n in nodes} == {"radium"}
    # include_text: each source chunk (read from the store) is appended once, to the
    # best-ranked hit citing it; the hits keep their kgpath node ids and trace
    graph = knowledge_graph_from_property_graph_store(pg_index.property_graph_store)
    core = CorePCR(GraphIndex(graph, EMB)).retrieve("treatment", anchor="radium", k=2)
    assert [n.node.node_id for n in nodes] == core.ids
    used = set()
    for n, hit in zip(nodes, core.hits):
        src = hit.node.provenance[0]
        assert n.node.ref_doc_id == src
        content = n.node.get_content()
        if src not in used:
            assert content.startswith("Here are some facts") and content.endswith(
                CHUNKS[src][0])
            used.add(src)
        else:
            assert CHUNKS[src][0] not in content
    assert used

    async def run():
        return await sub.aretrieve(KgpathQueryBundle("treatment", anchor="radium", k=2))

    import asyncio

    anodes = asyncio.run(run())
    assert [n.node.node_id for n in anodes] == [n.node.node_id for n in nodes]
    with pytest.raises(ConfigError):
        PCRSubRetriever.from_index(pg_index, embed_model=EMB, k=0)
    with pytest.raises(ConfigError, match="push_down=True"):
        PCRSubRetriever(pg_index.property_graph_store, embed_model=EMB, push_down=True)
    with pytest.raises(ConfigError, match=r"bogus.*accepted"):
        PCRSubRetriever(pg_index.property_graph_store, embed_model=EMB, bogus=1)


def test_pcr_sub_retriever_passages_by_default(pg_index):
    graph = knowledge_graph_from_property_graph_store(pg_index.property_graph_store)
    # passage_order="hits" without the re-rank: hit order, then each hit's provenance
    sub = PCRSubRetriever.from_index(pg_index, embed_model=EMB, k=2, passage_order="hits",
                                     rerank=None)
    nodes = sub.retrieve(KgpathQueryBundle("treatment", anchor="radium"))
    core = CorePCR(GraphIndex(graph, EMB)).retrieve("treatment", anchor="radium", k=2)
    want = list(dict.fromkeys(p for h in core.hits for p in h.node.provenance))
    assert [n.node.node_id for n in nodes] == want
    assert [n.node.get_content() for n in nodes] == [CHUNKS[p][0] for p in want]
    # the default (passage_order="question") is the core's own passage output
    sub = PCRSubRetriever.from_index(pg_index, embed_model=EMB, k=2)
    nodes = sub.retrieve(KgpathQueryBundle("treatment", anchor="radium"))
    want = [e.id for e in core.evidence(k=2)]
    assert [n.node.node_id for n in nodes] == want
    assert [n.node.get_content() for n in nodes] == [CHUNKS[p][0] for p in want]


def test_sub_retriever_inside_a_query_engine(pg_index):
    retriever = pg_index.as_retriever(
        sub_retrievers=[PCRSubRetriever.from_index(pg_index, embed_model=EMB)], use_async=False)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    answer = engine.query("Who married Pierre Curie?")
    assert answer.source_nodes
    assert all(n.node.metadata["kgpath_method"] == "pcr" for n in answer.source_nodes)


def test_pathrag_sub_retriever(pg_index):
    pytest.importorskip("kgpath.methods.pathrag")
    from kgpath.methods.pathrag import PathRAGConfig, PathRAGRetriever

    paper = PathRAGConfig.paper()  # the paths themselves: the paper's node retrieval
    nodes_as_paper = {"node_query": paper.node_query, "node_match": paper.node_match,
                      "exclude_edge_types": paper.exclude_edge_types,
                      "unit_order": paper.unit_order}
    sub = PathRAGSubRetriever.from_index(pg_index, embed_model=EMB, top_k=5, output="native",
                                         **nodes_as_paper)
    nodes = pg_index.as_retriever(sub_retrievers=[sub], use_async=False).retrieve(
        "Marie Curie radiotherapy")
    graph = knowledge_graph_from_property_graph_store(pg_index.property_graph_store)
    res = PathRAGRetriever(GraphIndex(graph, EMB), config=paper).retrieve(
        "Marie Curie radiotherapy", top_k=5)
    assert res.paths
    assert [n.score for n in nodes] == pytest.approx([p.reliability for p in res.paths])
    assert all(n.node.metadata["kgpath_method"] == "pathrag" for n in nodes)
    # a second sub-retriever can share the first one's GraphIndex (node vectors embedded once)
    pcr = PCRSubRetriever.from_index(pg_index, embed_model=EMB)
    shared = PathRAGSubRetriever.from_index(pg_index, graph=pcr.index, top_k=5, output="native",
                                            **nodes_as_paper)
    assert shared.index is pcr.index and shared.graph is pcr.graph
    assert [n.score for n in shared.retrieve("Marie Curie radiotherapy")] == pytest.approx(
        [p.reliability for p in res.paths])
    with pytest.raises(ConfigError, match="own embedder"):
        PathRAGSubRetriever(pg_index.property_graph_store, graph=pcr.index, embed_model=EMB)


# ---------------------------------------------------------------------- Ladybug store
@pytest.fixture
def ladybug_store(tmp_path):
    pytest.importorskip("llama_index.graph_stores.ladybug")
    import ladybug
    from llama_index.graph_stores.ladybug import LadybugPropertyGraphStore

    db = ladybug.Database(str(tmp_path / "lb"))
    store = LadybugPropertyGraphStore(db, use_vector_index=False)
    chunks = [ChunkNode(text=text, id_=cid) for cid, (text, _) in CHUNKS.items()]
    store.upsert_nodes(chunks)
    ents, rels = {}, []
    for cid, (_, triples) in CHUNKS.items():
        for h, r, t in triples:
            for name in (h, t):
                ents.setdefault(name, EntityNode(name=name, label="entity",
                                                 properties={TRIPLET_SOURCE_KEY: cid}))
            rels.append(Relation(label=r, source_id=h, target_id=t,
                                 properties={TRIPLET_SOURCE_KEY: cid}))
    store.upsert_nodes(list(ents.values()))
    store.upsert_relations(rels)
    yield store
    store.connection.close()
    db.close()


def test_ladybug_store_converts_and_pushes_down(ladybug_store):
    g = knowledge_graph_from_property_graph_store(ladybug_store)
    triples = [t for _, ts in CHUNKS.values() for t in ts]
    assert sorted((e.source, e.relation, e.target) for e in g.edges) == sorted(triples)
    assert [n.id for n in g.nodes] == sorted(n.id for n in g.nodes)
    assert set(g.passages) == {"c1", "c2", "c3"}
    assert "c1" in g.node("radium").provenance

    sub = PCRSubRetriever(ladybug_store, embed_model=EMB, k=5)
    assert sub.push_down
    memory = PCRSubRetriever(ladybug_store, embed_model=EMB, k=5, push_down=False,
                             output="native")
    for q in ("What did Marie Curie discover?", "radiotherapy cancer", "Poland"):
        a, b = sub.retrieve(q), memory.retrieve(q)
        assert [n.node.node_id for n in a] == [n.node.node_id for n in b]
        assert [n.score for n in a] == pytest.approx([n.score for n in b], abs=1e-6)
        for x, y in zip(a, b):
            for key in ("kgpath_hops", "kgpath_node_ids", "kgpath_relations",
                        "kgpath_anchor_id", "kgpath_path"):
                assert x.node.metadata[key] == y.node.metadata[key], key


# ---------------------------------------------------------------------- conventions, by hand
def test_property_graph_reader_builds_in_order_with_provenance():
    r = PropertyGraphReader()
    r.chunks["c1"] = ("Curie lived in Paris.", {"file": "x"})
    r.entity("Marie Curie", "Marie Curie", "PERSON", {"triplet_source_id": "c0",
                                                      "age": 66, "description": "chemist"})
    r.entity("Paris", "Paris", "entity", {"kgpath_id": "paris", "kgpath_provenance": ["c1"]})
    r.relation("Marie Curie", "Paris", "LIVED_IN", {"weight": 2, "triplet_source_id": "c1",
                                                    "since": 1891})
    r.relation("c1", "Marie Curie", "MENTIONS", {})  # a chunk end: a mention
    r.relation("Marie Curie", "Nowhere", "X", {})  # dangling: skipped
    g = r.build(include_chunks=True, embeddings=False)
    curie, paris = g.node("Marie Curie"), g.node("paris")
    assert (curie.type, curie.text, dict(curie.metadata)) == ("PERSON", "chemist", {"age": 66})
    # its own source, then the chunks that mention it, then its relations' sources
    assert list(curie.provenance) == ["c0", "c1"]
    assert paris.type is None and list(paris.provenance) == ["c1"]  # exact: kgpath wrote it
    (edge,) = g.edges
    assert (edge.source, edge.target, edge.relation, edge.weight) == (
        "Marie Curie", "paris", "LIVED_IN", 2.0)
    assert dict(edge.metadata) == {"since": 1891} and list(edge.provenance) == ["c1"]
    assert list(g.passages) == ["c1"]
    bare = r.build(include_chunks=False, embeddings=False)
    assert not bare.passages and not bare.node("Marie Curie").provenance


def test_entity_names_and_properties_round_trip():
    g = KnowledgeGraph()
    g.add_passage("p", "text")
    g.add_node("1", name="Paris", text="capital", provenance=["p"], metadata={"k": 1})
    g.add_node("2", name="Paris")
    g.add_node("3", name="Lyon")
    g.add_edge("1", "3", relation="near", text="close", weight=0.5, provenance=["p"])
    names = entity_names(g)
    assert names == {"1": "1", "2": "2", "3": "Lyon"}  # "Paris" is not unique
    props = entity_properties(g.node("1"), names["1"])
    assert props == {"k": 1, "kgpath_id": "1", "kgpath_name": "Paris",
                     "description": "capital", "kgpath_provenance": ["p"],
                     TRIPLET_SOURCE_KEY: "p"}
    assert entity_properties(g.node("3"), "Lyon") == {"kgpath_id": "3"}
    (edge,) = g.edges
    assert relation_properties(edge) == {"weight": 0.5, "description": "close",
                                         "kgpath_provenance": ["p"], TRIPLET_SOURCE_KEY: "p"}
