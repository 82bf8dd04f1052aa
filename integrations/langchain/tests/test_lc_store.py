"""KgpathGraphStore: LangChain's indexing API keeps the graph equal to a rebuild.

After every sync of a changing corpus (one document changed, one removed) through
``langchain_core.indexing.index`` with ``cleanup="incremental"`` and ``cleanup="full"``,
the store's graph equals ``GraphIndex.from_documents`` over the current documents (node
ids, edge triples, passage ids and texts), and each method's retriever, built once over the
store, returns passages of current documents only.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.indexing import InMemoryRecordManager, index
from langchain_kgpath import GraphAugmentedRetriever, KgpathGraphStore, PathRAGRetriever

from kgpath import GraphIndex, HashingEmbedder
from kgpath.errors import ConfigError, EmptyGraphError
from kgpath.ingest.extraction import ExtractedEntity, ExtractedRelation, Extraction, OpenExtractor

pytestmark = pytest.mark.filterwarnings("ignore:PathRAG num_nodes:UserWarning")
METHODS = ("pcr", "pathrag", "augmented", "c2rag")


class Capitals(OpenExtractor):
    """Runs of capitalised words are entities; consecutive ones are related ("then")."""

    name = "capitals"

    def extract_passage(self, passage_id: str, text: str) -> Extraction:
        names = re.findall(r"[A-Z][a-z]+(?: [A-Z][a-z]+)*", text)
        ents = tuple(ExtractedEntity(n, "Thing", text) for n in names)
        rels = tuple(ExtractedRelation(a, "then", b, "svo", text)
                     for a, b in zip(names, names[1:]))
        return Extraction(passage_id, ents, rels)


def corpus(version: int) -> list[Document]:
    """Three sources; version 1 changes ``b.txt`` and drops ``c.txt``."""
    docs = [Document(page_content="Marie Curie met Pierre Curie in Paris.",
                     metadata={"source": "a.txt"}),
            Document(page_content="Einstein visited Warsaw with Bohr.",
                     metadata={"source": "b.txt"}),
            Document(page_content="Niels Bohr lived in Copenhagen near Tivoli.",
                     metadata={"source": "c.txt"})]
    if version == 1:
        docs[1] = Document(page_content="Einstein visited Prague with Planck.",
                           metadata={"source": "b.txt"})
        docs = docs[:2]
    return docs


def snapshot(ix: GraphIndex) -> tuple[Any, ...]:
    g = ix.graph
    return ([n.id for n in g.nodes], [(e.source, e.relation, e.target) for e in g.edges],
            {pid: p.text for pid, p in g.passages.items()})


def assert_rebuild(store: KgpathGraphStore) -> None:
    """The store's graph equals a build over its current documents, in store order."""
    assert store.index.ledger is not None
    docs = [e.document for e in store.index.ledger.documents.values()]
    ref = GraphIndex.from_documents(docs, embedder=HashingEmbedder(32), extractor=Capitals())
    assert snapshot(store.index) == snapshot(ref)


def current_texts(store: KgpathGraphStore) -> set[str]:
    return {p.text for p in store.index.graph.passages.values()}


@pytest.mark.parametrize("cleanup", ["incremental", "full"])
def test_indexing_api_keeps_the_graph_equal_to_a_rebuild(cleanup: str) -> None:
    store = KgpathGraphStore(HashingEmbedder(32), extractor=Capitals())
    with pytest.raises(EmptyGraphError):  # the core refuses a graph with nothing to search
        store.as_retriever(method="pcr")
    rm = InMemoryRecordManager(namespace=f"kgpath/{cleanup}")
    rm.create_schema()
    first = index(corpus(0), rm, store, cleanup=cleanup, source_id_key="source",
                  key_encoder="sha256")
    assert first["num_added"] == 3 and first["num_deleted"] == 0
    assert_rebuild(store)
    assert current_texts(store) == {d.page_content for d in corpus(0)}
    retrievers = {m: store.as_retriever(method=m, k=10) for m in METHODS}
    again = index(corpus(0), rm, store, cleanup=cleanup, source_id_key="source",
                  key_encoder="sha256")
    assert again["num_skipped"] == 3 and again["num_added"] == 0
    second = index(corpus(1), rm, store, cleanup=cleanup, source_id_key="source",
                  key_encoder="sha256")
    # b.txt changed: its new version added and old one deleted; c.txt: deleted by "full"
    # only (incremental cleanup touches the sources it sees)
    assert second["num_added"] == 1
    assert second["num_deleted"] == (2 if cleanup == "full" else 1)
    assert_rebuild(store)
    expect = {d.page_content for d in corpus(1)}
    if cleanup == "incremental":
        expect.add(corpus(0)[2].page_content)
    assert current_texts(store) == expect
    for name, r in retrievers.items():  # built before the update: they see the live index
        got = r.invoke("Who visited Prague or Warsaw with Planck or Bohr?")
        assert got, name
        assert {d.page_content for d in got} <= expect, name
        assert "Einstein visited Warsaw with Bohr." not in {d.page_content for d in got}, name


def test_removed_entities_leave_the_graph() -> None:
    store = KgpathGraphStore(HashingEmbedder(32), extractor=Capitals())
    ids = store.add_documents(corpus(0), ids=["a", "b", "c"])
    assert ids == ["a", "b", "c"]
    assert "Tivoli" in {n.name for n in store.index.graph.nodes}
    assert store.delete(["c", "missing"]) is True
    assert "Tivoli" not in {n.name for n in store.index.graph.nodes}
    store.add_documents([Document(page_content="Einstein met Planck.", id="b")])  # replaces
    assert "Warsaw" not in {n.name for n in store.index.graph.nodes}
    assert [d.page_content for d in store.get_by_ids(["b", "x", "a"])] == [
        "Einstein met Planck.", corpus(0)[0].page_content]
    assert_rebuild(store)


def test_ids_dense_search_and_retriever_classes() -> None:
    store = KgpathGraphStore.from_documents(
        [Document(page_content="Bees make Honey.", id="bees", metadata={"k": 1}),
         Document(page_content="Hives house Bees. Hives are boxes.")],
        HashingEmbedder(64), extractor=Capitals())
    hive = store.similarity_search("Hives house Bees. Hives are boxes.", k=1)[0]
    assert hive.id.startswith("doc-") and len(hive.id) == 20  # the core's content id
    # the same content again (no id): the same content id, nothing added
    assert store.add_texts(["Hives house Bees. Hives are boxes."]) == [hive.id]
    assert len(store.index.ledger.documents) == 2
    got = store.similarity_search_with_score("Bees make Honey.", k=5)
    assert [d.id for d, _ in got][0] == "bees" and got[0][1] == pytest.approx(1.0, abs=1e-5)
    assert got[0][0].metadata == {"k": 1}
    assert isinstance(store.as_retriever(method="pathrag"), PathRAGRetriever)
    assert isinstance(store.as_retriever(method="augmented"), GraphAugmentedRetriever)
    assert store.as_retriever(search_kwargs={"k": 1}).invoke("Bees make Honey.")[0].id == "bees"
    with pytest.raises(ConfigError, match="'pcrr'"):
        store.as_retriever(method="pcrr")
    with pytest.raises(ConfigError, match="ids=None"):
        store.delete()
    with pytest.raises(ConfigError, match="2 entries for 1"):
        store.add_documents([Document(page_content="x")], ids=["1", "2"])


async def test_async_add_and_delete_equal_sync() -> None:
    store = KgpathGraphStore(HashingEmbedder(32), extractor=Capitals())
    await store.aadd_documents(corpus(0), ids=["a", "b", "c"])
    assert await store.adelete(["b"]) is True
    sync = KgpathGraphStore(HashingEmbedder(32), extractor=Capitals())
    sync.add_documents(corpus(0), ids=["a", "b", "c"])
    sync.delete(["b"])
    assert snapshot(store.index) == snapshot(sync.index)


def test_save_load_update(tmp_path: Any) -> None:
    store = KgpathGraphStore(HashingEmbedder(32), extractor=Capitals())
    store.add_documents(corpus(0), ids=["a", "b", "c"])
    store.save(tmp_path / "ix")
    back = KgpathGraphStore.load(tmp_path / "ix", HashingEmbedder(32), extractor=Capitals())
    assert snapshot(back.index) == snapshot(store.index)
    assert [d.id for d in back.similarity_search("Niels Bohr lived in Copenhagen", k=1)] == ["c"]
    back.add_documents([Document(page_content="Einstein visited Prague with Planck.")],
                       ids=["b"])
    back.delete(["c"])
    assert current_texts(back) == {corpus(0)[0].page_content,
                                   "Einstein visited Prague with Planck."}
    assert [d.id for d in back.get_by_ids(["a", "b", "c"])] == ["a", "b"]
    names = {n.name for n in back.index.graph.nodes}
    assert {"Prague", "Planck"} <= names and not {"Tivoli", "Copenhagen"} & names
    got = back.as_retriever(method="augmented", k=10).invoke("Who visited Prague?")
    assert got and {d.page_content for d in got} <= current_texts(back)
    if back.index.ledger is not None:  # the core saves the document ledger (exact updates)
        assert_rebuild(back)


def test_a_document_of_several_passages_is_found_once() -> None:
    from kgpath.ingest import ChunkingConfig

    long = ("Marie Curie met Pierre Curie in Paris. Curie worked in Warsaw. "
            "Einstein visited Warsaw and Paris.")
    store = KgpathGraphStore(HashingEmbedder(64), extractor=Capitals(),
                             chunking=ChunkingConfig(max_chars=50))
    store.add_documents([Document(page_content=long, id="long"),
                         Document(page_content="Bohr lived in Copenhagen.", id="bohr")])
    assert len([p for p in store.index.graph.passages.values()
                if p.metadata["doc_id"] == "long"]) >= 2
    got = store.similarity_search("Einstein visited Warsaw and Paris.", k=5)
    assert [d.id for d in got] == ["long", "bohr"]  # its best passage is an exact match
    assert got[0].page_content == long
    scores = dict((d.id, s) for d, s in store.similarity_search_with_relevance_scores(
        "Einstein visited Warsaw and Paris.", k=2))
    assert scores["long"] == pytest.approx(1.0, abs=1e-5) and 0.0 <= scores["bohr"] < 1.0
