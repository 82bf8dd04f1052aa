"""GraphIndex.save / GraphIndex.load (issue 21): every vector saved, nothing embedded on reopen."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

import numpy as np
import pytest

from kgpath import (
    ConstraintCheckedRetriever,
    EvidenceRetriever,
    HashingEmbedder,
    KnowledgeGraph,
    PathRAGConfig,
)
from kgpath.embed_cache import CachedEmbedder
from kgpath.errors import ConfigError, EmbeddingError, PersistenceError
from kgpath.index import GraphIndex
from kgpath.index.graph_vectors import embed_graph
from kgpath.index.passage_vectors import passage_cache

TRIPLES = [("Ada", "born in", "London"), ("London", "capital of", "England"),
           ("Ada", "worked with", "Babbage"), ("Babbage", "designed", "Analytical Engine")]
PASSAGES = {"p1": "Ada Lovelace was born in London.",
            "p2": "London is the capital of England.",
            "p3": "Ada worked with Charles Babbage on his engine.",
            "p4": "Babbage designed the Analytical Engine."}
PROVENANCE = [["p1"], ["p2"], ["p3"], ["p4"]]
PLAN = {"constraints": [{"head": "Ada", "relation": "born in", "tail": "?place",
                         "variants": []}]}


class Counting:
    """Counts the texts an embedder is asked for; its vectors are the wrapped model's."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.passages: list[str] = []
        self.queries: list[str] = []

    @property
    def vectors_of(self) -> object:
        return self.inner

    @property
    def dim(self) -> int:
        return self.inner.dim  # type: ignore[attr-defined,no-any-return]

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.passages += list(texts)
        return self.inner.embed_passages(texts)  # type: ignore[attr-defined,no-any-return]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.queries += list(texts)
        return self.inner.embed_queries(texts)  # type: ignore[attr-defined,no-any-return]

    async def aembed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_passages(texts)

    async def aembed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_queries(texts)


def graph() -> KnowledgeGraph:
    return KnowledgeGraph.from_triples(TRIPLES, PASSAGES, provenance=PROVENANCE)


def built(vectors: str = "float32", dim: int = 64) -> GraphIndex:
    """An index whose node, passage and relation vectors are all computed."""
    g = graph()
    emb = HashingEmbedder(dim)
    embed_graph(g, emb)
    index = GraphIndex(g, emb, vectors=vectors).build()
    index.passage_vectors()
    ConstraintCheckedRetriever(index).retrieve("Where was Ada born?", plan=PLAN)
    for config in (PathRAGConfig(), PathRAGConfig.paper()):  # node texts; node names
        EvidenceRetriever("pathrag", index, num_nodes=2, config=config).retrieve(
            "Where was Ada born?")
    return index


def test_saved_index_reopens_with_every_vector_and_embeds_nothing(tmp_path):
    index = built()
    rels = passage_cache(index.graph, index.embedder).relations
    assert {"born in", "capital of"} <= set(rels)  # C2RAG's graph relations were embedded
    index.save(tmp_path / "ix")
    files = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    assert files["format_version"] == 4
    assert {"index.json", "passage_vectors.npy", "text_vectors.npy"} <= set(files["files"])

    again = GraphIndex.load(tmp_path / "ix")
    assert repr(again.embedder) == "HashingEmbedder(dim=64)"  # the bundled model, rebuilt
    counter = Counting(again.embedder)
    again.embedder = counter  # a wrapper of the same model: its fingerprint is known
    assert [n.id for n in again.graph.nodes] == [n.id for n in index.graph.nodes]
    np.testing.assert_array_equal(again.graph.vectors.matrix, index.graph.vectors.matrix)
    pv_old, pv_new = index.passage_vectors(), again.passage_vectors()
    assert pv_new.ids == pv_old.ids
    np.testing.assert_array_equal(pv_new.matrix, pv_old.matrix)
    new_rels = passage_cache(again.graph, counter).relations
    assert set(new_rels) == {"born in", "capital of", "worked with", "designed"}
    for r in new_rels:
        np.testing.assert_array_equal(new_rels[r], rels[r])
    q = "Where was Ada born?"
    for method, opts in (("pcr", {}), ("pathrag", {"num_nodes": 2}), ("augmented", {}),
                         ("pathrag", {"num_nodes": 2, "config": PathRAGConfig.paper()})):
        got = EvidenceRetriever(method, again, **opts).retrieve(q)
        want = EvidenceRetriever(method, index, **opts).retrieve(q)
        assert [(e.id, round(e.score, 6)) for e in got] == \
            [(e.id, round(e.score, 6)) for e in want]
    res = ConstraintCheckedRetriever(again).retrieve(q, plan=PLAN)
    want_res = ConstraintCheckedRetriever(index).retrieve(q, plan=PLAN)
    assert "London" in res.binding_names["?place"]
    assert res.binding_names == want_res.binding_names
    assert counter.passages == []  # no passage, node, node name or probe text embedded
    assert not set(counter.queries) & set(new_rels)  # no relation embedded again
    names = passage_cache(again.graph, counter).sets["node_names"]
    assert set(names) == {n.name for n in again.graph.nodes}  # PathRAG's, saved too


def test_a_graph_loads_from_a_saved_index_and_an_index_not_from_a_graph(tmp_path):
    index = built()
    index.save(tmp_path / "ix")
    g = KnowledgeGraph.load(tmp_path / "ix")
    assert g.num_nodes == index.graph.num_nodes and g.vectors.dim == 64
    index.graph.save(tmp_path / "g")
    with pytest.raises(PersistenceError, match="not a saved index"):
        GraphIndex.load(tmp_path / "g")


def test_index_saved_over_an_index_and_corruption_is_detected(tmp_path):
    d = tmp_path / "ix"
    built().save(d)
    built(dim=32).save(d)  # replaced atomically, like a graph
    assert GraphIndex.load(d).embedder.dim == 32
    raw = bytearray((d / "passage_vectors.npy").read_bytes())
    raw[-1] ^= 0xFF
    (d / "passage_vectors.npy").write_bytes(bytes(raw))
    with pytest.raises(PersistenceError, match="checksum of passage_vectors.npy"):
        GraphIndex.load(d)


def test_another_model_is_refused_and_a_foreign_model_must_be_given(tmp_path):
    built().save(tmp_path / "ix")
    with pytest.raises(EmbeddingError, match="makes other vectors"):
        GraphIndex.load(tmp_path / "ix", embedder=HashingEmbedder(32))
    same = Counting(HashingEmbedder(64))
    GraphIndex.load(tmp_path / "ix", embedder=same)
    assert len(same.passages) == 1  # the probe, once
    meta = tmp_path / "ix" / "index.json"
    raw = json.loads(meta.read_text())
    assert raw["embedder"]["name"] == "kgpath.embeddings.HashingEmbedder"


def test_load_without_an_embedder_needs_a_bundled_model(tmp_path, monkeypatch):
    import kgpath.index.persist as persist

    built().save(tmp_path / "ix")
    monkeypatch.setattr(persist, "bundled_embedder", lambda record: None)
    with pytest.raises(ConfigError, match="pass embedder="):
        GraphIndex.load(tmp_path / "ix")


@pytest.mark.parametrize("kind", ["float16", "int8", "int8+float16"])
def test_compact_vectors_are_saved_and_reopened(tmp_path, kind):
    index = built(kind)
    q = index.embedder.embed_queries(["Ada engine"])[0]
    want = index.vector_index.search(q, 5)
    index.save(tmp_path / "ix")
    again = GraphIndex.load(tmp_path / "ix")
    counter = Counting(again.embedder)
    again.embedder = counter
    assert again.vectors == kind
    got = again.vector_index.search(q, 5)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=0, atol=1e-6)
    assert counter.passages == []


def test_private_node_vectors_of_another_model_are_saved(tmp_path):
    g = graph()
    embed_graph(g, HashingEmbedder(32))  # the graph's vectors: another model's
    index = GraphIndex(g, HashingEmbedder(64)).build()
    own = index.vector_index.vectors.copy()
    index.save(tmp_path / "ix")
    again = GraphIndex.load(tmp_path / "ix")
    counter = Counting(again.embedder)
    again.embedder = counter
    np.testing.assert_array_equal(again.vector_index.vectors, own)
    assert again.graph.vectors.dim == 32  # the graph keeps its own vectors as data
    assert counter.passages == []


def test_a_new_instance_or_a_cache_of_the_same_model_reuses_passage_vectors(tmp_path):
    g = graph()
    first = GraphIndex(g, HashingEmbedder(64))
    first.passage_vectors()
    fresh = Counting(HashingEmbedder(64))
    GraphIndex(g, fresh).passage_vectors()
    assert fresh.passages == [next(iter(PASSAGES.values()))]  # one probe, not the corpus
    cached = Counting(CachedEmbedder(HashingEmbedder(64), tmp_path / "cache"))
    GraphIndex(g, cached).passage_vectors()
    assert len(cached.passages) <= 1
    other = Counting(HashingEmbedder(32))
    GraphIndex(g, other).passage_vectors()
    assert len(other.passages) == len(PASSAGES)  # another dimension: no probe, all passages


def test_a_same_named_model_with_other_vectors_is_never_mixed(caplog):
    class Shifted(HashingEmbedder):
        def _embed(self, texts: list[str], kind: str) -> np.ndarray:
            return np.roll(super()._embed(texts, kind), 1, axis=1)

    Shifted.__qualname__ = HashingEmbedder.__qualname__
    Shifted.__module__ = HashingEmbedder.__module__
    g = graph()
    a, b = HashingEmbedder(64), Shifted(64)
    va = GraphIndex(g, a).passage_vectors()
    with caplog.at_level(logging.WARNING):
        vb = GraphIndex(g, b).passage_vectors()
    assert "another model named" in caplog.text
    np.testing.assert_allclose(vb.matrix, np.roll(va.matrix, 1, axis=1), atol=1e-6)


def test_refresh_embeds_only_what_the_graph_gained():
    index = built()
    g = index.graph
    counter = Counting(index.embedder)
    index.embedder = counter
    assert index.refresh() == {"nodes_embedded": 0, "passages_embedded": 0, "passages": 4}
    g.add_passage("p5", "Ada wrote the first program.")
    g.add_node("Program", name="Program", provenance=("p5",))
    g.add_node("Lone", name="Lone")  # cites no passage: its own text is embedded
    assert index.refresh() == {"nodes_embedded": 1, "passages_embedded": 1, "passages": 5}
    assert sorted(counter.passages) == sorted(["Ada wrote the first program.",
                                               g.node("Lone").search_text])
    p5 = index.passage_vectors().matrix[-1]
    # a node citing one passage has that passage's vector, as a rebuild would give it
    np.testing.assert_allclose(g.vectors.matrix[g.index_of("Program")], p5, atol=1e-6)
    counter.passages.clear()
    g.add_passage("p2", "London is a large city.")  # edited text: that passage only
    assert index.refresh()["passages_embedded"] == 1
    assert counter.passages == ["London is a large city."]


def test_use_graph_after_a_delete_equals_a_rebuild_and_embeds_nothing():
    index = built()
    smaller = KnowledgeGraph.from_triples(TRIPLES[:3], dict(list(PASSAGES.items())[:3]),
                                          provenance=PROVENANCE[:3])
    counter = Counting(index.embedder)
    index.embedder = counter
    assert index.use_graph(smaller) == {"nodes_embedded": 0, "passages_embedded": 0,
                                        "passages": 3}
    assert counter.passages == []
    fresh = KnowledgeGraph.from_triples(TRIPLES[:3], dict(list(PASSAGES.items())[:3]),
                                        provenance=PROVENANCE[:3])
    embed_graph(fresh, HashingEmbedder(64))
    # Babbage lost p4: its vector is the mean of p3 alone, as in the rebuild
    np.testing.assert_allclose(smaller.vectors.matrix, fresh.vectors.matrix, atol=1e-6)
    np.testing.assert_allclose(index.passage_vectors().matrix,
                               GraphIndex(fresh, HashingEmbedder(64)).passage_vectors().matrix,
                               atol=1e-6)


@pytest.mark.parametrize("kind", ["float32-own", "int8+float16"])
def test_own_and_compact_rows_follow_their_nodes_when_nodes_go(kind):
    g = graph()
    if kind == "float32-own":
        embed_graph(g, HashingEmbedder(32))
        index = GraphIndex(g, HashingEmbedder(64)).build()
    else:
        index = GraphIndex(g, HashingEmbedder(64), vectors=kind).build()
    q = index.embedder.embed_queries(["Babbage engine"])[0]
    before = dict(zip(index.vector_index.search(q, 5)[0].tolist(),
                      index.vector_index.search(q, 5)[1].tolist()))
    by_id = {g.node_at(i).id: s for i, s in before.items()}
    smaller = KnowledgeGraph.from_triples(TRIPLES[1:], dict(list(PASSAGES.items())[1:]),
                                          provenance=PROVENANCE[1:])  # "Ada" first no more
    if kind == "float32-own":
        embed_graph(smaller, HashingEmbedder(32))
    counter = Counting(index.embedder)
    index.embedder = counter
    index.use_graph(smaller)
    assert counter.passages == []
    rows, scores = index.vector_index.search(q, 5)
    assert {smaller.node_at(int(i)).id: s for i, s in zip(rows, scores)} == \
        pytest.approx({k: v for k, v in by_id.items() if k in smaller}, abs=1e-6)


def test_an_index_over_a_compact_graph_reopens_compact(tmp_path):
    g = KnowledgeGraph.from_arrays(["a", "b", "c"], [0, 1], [1, 2], relations=["r", "s"],
                                   texts=["alpha node", "beta node", "gamma node"],
                                   compact=True)
    index = GraphIndex(g, HashingEmbedder(64)).build()
    q = index.embedder.embed_queries(["beta"])[0]
    want = index.vector_index.search(q, 3)
    index.save(tmp_path / "ix")
    again = GraphIndex.load(tmp_path / "ix")
    counter = Counting(again.embedder)
    again.embedder = counter
    assert again.graph.compact
    got = again.vector_index.search(q, 3)
    np.testing.assert_array_equal(got[0], want[0])
    assert counter.passages == []


def _resign(d, name: str, data: bytes) -> None:
    """Replace ``name`` and its manifest entry (a forged but consistent directory)."""
    import hashlib

    (d / name).write_bytes(data)
    m = json.loads((d / "manifest.json").read_text())
    m["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    (d / "manifest.json").write_text(json.dumps(m))


@pytest.mark.parametrize("change, match", [
    (lambda m: {**m, "kind": "other"}, "not a kgpath.GraphIndex record"),
    (lambda m: {**m, "node_vectors": "own", "node_ids": ["nobody"]}, "corrupt"),
    (lambda m: {**m, "embedder": {**m["embedder"], "dim": "64"}}, "not a kgpath.GraphIndex"),
])
def test_a_forged_index_record_is_refused(tmp_path, change, match):
    d = tmp_path / "ix"
    built().save(d)
    meta = json.loads((d / "index.json").read_text())
    _resign(d, "index.json", json.dumps(change(meta)).encode())
    with pytest.raises(PersistenceError, match=match):
        GraphIndex.load(d)


def test_vectors_that_do_not_match_their_texts_are_refused(tmp_path):
    d = tmp_path / "ix"
    built().save(d)
    _resign(d, "passage_ids.json", json.dumps(["p1"]).encode())
    with pytest.raises(PersistenceError, match="do not match their texts"):
        GraphIndex.load(d)


def test_an_async_build_gives_new_cited_nodes_their_passage_mean():
    import asyncio

    index = built()
    g = index.graph
    g.add_passage("p5", "Ada wrote the first program.")
    g.add_node("Program", name="Program", provenance=("p5", "p1"))
    asyncio.run(index.abuild())
    pv = index.passage_vectors()
    rows = [pv.ids.index("p5"), pv.ids.index("p1")]
    mean = pv.matrix[rows].mean(axis=0)
    np.testing.assert_allclose(g.vectors.matrix[g.index_of("Program")],
                               mean / np.linalg.norm(mean), atol=1e-6)


def test_vectors_recorded_under_a_cache_wrappers_own_name_stay_shared(tmp_path):
    """Graphs saved before wrappers were looked through name the wrapper, not the model."""
    g = graph()
    embed_graph(g, CachedEmbedder(HashingEmbedder(64), tmp_path / "c"))
    owner = g.vectors.owner
    assert owner["name"] == "kgpath.embeddings.HashingEmbedder"  # the model, now
    g.vectors.set(g.vectors.matrix, owner={**owner, "name": "kgpath.embed_cache.CachedEmbedder"})
    index = GraphIndex(g, CachedEmbedder(HashingEmbedder(64), tmp_path / "c")).build()
    assert index._own is None  # the probe decided: same vectors, shared
    other = GraphIndex(g, CachedEmbedder(HashingEmbedder(32), tmp_path / "c")).build()
    assert other._own is not None


def test_a_save_after_a_small_update_links_the_unchanged_vector_files(tmp_path):
    d = tmp_path / "ix"
    index = built()
    index.save(d)
    inode = {n: (d / n).stat().st_ino for n in ("text_vectors.npy", "passage_vectors.npy")}
    index.graph.add_passage("p5", "Ada wrote the first program.")
    index.refresh()
    index.save(d)
    assert (d / "text_vectors.npy").stat().st_ino == inode["text_vectors.npy"]  # linked
    assert (d / "passage_vectors.npy").stat().st_ino != inode["passage_vectors.npy"]
    assert len(GraphIndex.load(d).passage_vectors().ids) == 5
    raw = bytearray((d / "text_vectors.npy").read_bytes())  # a corrupt old copy ...
    raw[-1] ^= 0xFF
    (d / "text_vectors.npy").write_bytes(bytes(raw))
    index.save(d)  # ... is written afresh, not linked
    again = GraphIndex.load(d)
    names = passage_cache(again.graph, again.embedder).sets["node_names"]
    np.testing.assert_array_equal(
        names["Ada"], passage_cache(index.graph, index.embedder).sets["node_names"]["Ada"])
