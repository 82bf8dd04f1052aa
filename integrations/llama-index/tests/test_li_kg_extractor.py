"""``KgpathSpacyExtractor``: kgpath's offline extractor as a ``PropertyGraphIndex`` component.

Truth: the component's entities and relations equal what the core's
``graph_from_documents`` builds from the same texts (one passage per node), and a
``PropertyGraphIndex`` built with it holds those triples, which kgpath reads back and
retrieves over. The hand-checked triples of the Curie texts pin the extraction itself.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence

import pytest
from llama_index.core import Document, PropertyGraphIndex
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY, EntityNode
from llama_index.core.llms import MockLLM
from llama_index.core.schema import BaseNode, TextNode
from llama_index.retrievers.kgpath import (
    KgpathEmbedding,
    KgpathQueryBundle,
    KgpathSpacyExtractor,
    PCRSubRetriever,
    knowledge_graph_from_property_graph_store,
)

from kgpath import ConfigError, HashingEmbedder, KnowledgeGraph
from kgpath.errors import MissingDependencyError
from kgpath.ingest import ChunkingConfig, graph_from_documents


def _spacy_ready() -> bool:
    try:
        from kgpath.ingest.spacy_extractor import load_pipeline

        load_pipeline()
        return True
    except (ImportError, OSError, MissingDependencyError):
        return False


# also skipped when this adapter's tests run alone (the core's conftest hook is not loaded)
pytestmark = [pytest.mark.spacy,
              pytest.mark.skipif(not _spacy_ready(), reason="spaCy English pipeline missing")]

TEXTS = {
    "curie": "Marie Curie was born in Warsaw. She discovered polonium.",
    "pierre": "Pierre Curie married Marie Curie in Paris.",
    "radium": "Radium was discovered by Marie Curie. Radium treats cancer.",
}
Found = tuple[set[tuple[str, str]], set[tuple[str, str, str]]]  # (name, type), triples
WHOLE = ChunkingConfig(max_chars=5000)  # one passage per text, as the component reads them


def _nodes() -> list[TextNode]:
    return [TextNode(id_=k, text=v) for k, v in TEXTS.items()]


def _core_graph() -> KnowledgeGraph:
    return graph_from_documents(list(TEXTS.items()), chunking=WHOLE)


def _found(nodes: Sequence[BaseNode]) -> Found:
    ents = {(e.name, e.label) for n in nodes for e in n.metadata[KG_NODES_KEY]}
    rels = {(r.source_id, r.label, r.target_id) for n in nodes
            for r in n.metadata[KG_RELATIONS_KEY]}
    return ents, rels


def _truth() -> Found:
    g = _core_graph()
    ents = {(n.name, n.type or "entity") for n in g.nodes}
    rels = {(g.node(e.source).name, e.relation, g.node(e.target).name) for e in g.edges}
    return ents, rels


def test_entities_and_relations_equal_the_core_graph() -> None:
    ents, rels = _found(KgpathSpacyExtractor()(_nodes()))
    assert (ents, rels) == _truth()
    # hand-checked against the texts
    assert {("Marie Curie", "Person"), ("Warsaw", "Place"), ("polonium", "Concept"),
            ("Pierre Curie", "Person"), ("Paris", "Place")} <= ents
    assert {("Marie Curie", "was born in", "Warsaw"), ("Marie Curie", "discovered", "polonium"),
            ("Pierre Curie", "married", "Marie Curie")} <= rels


def test_each_node_gets_what_its_own_text_states() -> None:
    by_id = {n.node_id: n for n in KgpathSpacyExtractor()(_nodes())}
    g = _core_graph()
    for pid, node in by_id.items():
        want = {(g.node(e.source).name, e.relation, g.node(e.target).name)
                for e in g.edges if pid in e.provenance}
        got = {(r.source_id, r.label, r.target_id) for r in node.metadata[KG_RELATIONS_KEY]}
        assert got == want and got, pid
        names = {e.name for e in node.metadata[KG_NODES_KEY]}
        assert {r[0] for r in got} | {r[2] for r in got} <= names
    curie = next(e for e in by_id["curie"].metadata[KG_NODES_KEY] if e.name == "Marie Curie")
    assert curie.properties["kgpath_id"] == g.node("Marie Curie").id
    assert "kgpath_provenance" not in curie.properties  # read from the chunks' mentions
    born = next(r for r in by_id["curie"].metadata[KG_RELATIONS_KEY] if r.label == "was born in")
    assert born.properties["kgpath_provenance"] == ["curie"]


def test_existing_kg_metadata_is_kept_in_front() -> None:
    mine = EntityNode(name="Sorbonne", label="Org")
    node = TextNode(id_="pierre", text=TEXTS["pierre"], metadata={KG_NODES_KEY: [mine],
                                                                  KG_RELATIONS_KEY: []})
    out = KgpathSpacyExtractor()([node])[0]
    assert out.metadata[KG_NODES_KEY][0] is mine
    assert len(out.metadata[KG_NODES_KEY]) > 1 and out.metadata[KG_RELATIONS_KEY]


async def test_acall_equals_call() -> None:
    ex = KgpathSpacyExtractor(num_workers=2, batch_size=1)
    assert _found(await ex.acall(_nodes())) == _found(ex(_nodes(), show_progress=True))
    assert _found(ex(_nodes())) == _truth()


def test_empty_text_and_no_nodes() -> None:
    ex = KgpathSpacyExtractor()
    assert ex([]) == []
    out = ex([TextNode(id_="blank", text="   ")])[0]
    assert out.metadata[KG_NODES_KEY] == [] and out.metadata[KG_RELATIONS_KEY] == []


def test_pickles_and_serialises() -> None:
    ex = KgpathSpacyExtractor(cooccurrence=False, num_workers=2)
    ex(_nodes()[:1])  # loads the pipeline; it is not part of the pickle
    blob = pickle.dumps(ex)
    assert len(blob) < 5000, len(blob)  # the spaCy pipeline is megabytes
    again = pickle.loads(blob)
    restored = KgpathSpacyExtractor.from_dict(ex.to_dict())
    for other in (again, restored):
        assert (other.cooccurrence, other.num_workers) == (False, 2)
        assert _found(other(_nodes())) == _found(ex(_nodes()))
    assert ex.to_dict()["class_name"] == "KgpathSpacyExtractor"


def test_bad_arguments_are_typed_errors() -> None:
    with pytest.raises(ConfigError, match="num_workers.*0"):
        KgpathSpacyExtractor(num_workers=0)
    with pytest.raises(ConfigError, match="batch_size.*-1"):
        KgpathSpacyExtractor(batch_size=-1)
    with pytest.raises(ConfigError, match="model.*3"):
        KgpathSpacyExtractor(model=3)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'x' is given twice"):
        KgpathSpacyExtractor()([TextNode(id_="x", text="A."), TextNode(id_="x", text="B.")])


@pytest.mark.parametrize("use_async", [True, False])  # acall / __call__
def test_property_graph_index_holds_the_triples_and_kgpath_retrieves(use_async: bool) -> None:
    docs = [Document(id_=k, text=v) for k, v in TEXTS.items()]
    emb = KgpathEmbedding(HashingEmbedder(dim=64))
    index = PropertyGraphIndex.from_documents(
        docs, kg_extractors=[KgpathSpacyExtractor()], embed_model=emb, llm=MockLLM(),
        embed_kg_nodes=False, use_async=use_async)
    store = index.property_graph_store
    held = {(t[0].name, t[1].label, t[2].name) for t in store.get_triplets(
        entity_names=[n for n, _ in _truth()[0]])}
    assert held == _truth()[1]

    back = knowledge_graph_from_property_graph_store(store)
    core = _core_graph()
    assert {(n.id, n.name, n.type) for n in back.nodes} == {
        (n.id, n.name, n.type) for n in core.nodes}
    assert {(e.source, e.relation, e.target) for e in back.edges} == {
        (e.source, e.relation, e.target) for e in core.edges}

    # provenance: the chunks (one per document here) that state each node and edge
    doc_of = {c.id_: c.ref_doc_id for c in index.docstore.docs.values()}
    assert {n.id: {doc_of[p] for p in n.provenance} for n in back.nodes} == {
        n.id: set(n.provenance) for n in core.nodes}
    assert {(e.source, e.relation, e.target): {doc_of[p] for p in e.provenance}
            for e in back.edges} == {(e.source, e.relation, e.target): set(e.provenance)
                                     for e in core.edges}

    sub = PCRSubRetriever(store, embed_model=HashingEmbedder(dim=64), k=3, output="native")
    hits = sub.retrieve(KgpathQueryBundle("Where was she born?", anchor="Marie Curie"))
    assert {n.node.metadata["kgpath_anchor_id"] for n in hits} == {"Marie Curie"}
    assert "Marie Curie -[was born in]-> Warsaw" in {n.node.metadata["kgpath_path"]
                                                     for n in hits}


def test_a_later_insert_keeps_earlier_provenance() -> None:
    docs = [Document(id_=k, text=v) for k, v in TEXTS.items()]
    index = PropertyGraphIndex.from_documents(
        docs[:1], kg_extractors=[KgpathSpacyExtractor()],
        embed_model=KgpathEmbedding(HashingEmbedder(dim=64)), llm=MockLLM(),
        embed_kg_nodes=False)
    for doc in docs[1:]:
        index.insert(doc)
    back = knowledge_graph_from_property_graph_store(index.property_graph_store)
    doc_of = {c.id_: c.ref_doc_id for c in index.docstore.docs.values()}
    assert {doc_of[p] for p in back.node("Marie Curie").provenance} == set(TEXTS)
    assert {(e.source, e.relation, e.target) for e in back.edges} == {
        (e.source, e.relation, e.target) for e in _core_graph().edges}


def test_the_readme_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    text = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    start = text.index("```python\nfrom llama_index.core import Document, PropertyGraphIndex\n")
    end = text.index("```", start + 3)
    code = text[start + len("```python\n"):end]
    shown = text.index("```\n", text.index("prints", end)) + len("```\n")
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out == text[shown:text.index("```", shown)]
