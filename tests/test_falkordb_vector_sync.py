"""Vector files beside the database follow document updates (``DatabaseIndex(vector_dir=)``).

Truth: after every push of a seeded random add / upsert / delete sequence, the node and
passage files hold exactly the rows (ids, float32 vectors, in order) that
``load_graph(..., vector_dir=...)`` writes for ``GraphIndex.from_documents(final documents)``,
and a :class:`~kgpath.backends.cypher.CypherBackend` opened once before the updates (and
``CypherPCR`` / ``CypherAugmented`` given ``vectors=``) answers ``global_top``,
``passage_top``, PCR with the global fallback and graph-augmented retrieval exactly as over a
fresh load of the rebuilt index and as in memory. A push whose statements fail leaves the
previous files valid and unchanged; a reader holding a file keeps reading its generation
(never a torn file), the next access opens the new one.
"""

from __future__ import annotations

import itertools
import os
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from kgpath import BackendError, GraphIndex, HashingEmbedder, PathConstrainedRetriever
from kgpath.backends.cypher import CypherBackend, FalkorDBDriver, load_graph
from kgpath.backends.cypher import sync as syncmod
from kgpath.backends.cypher.sync import DatabaseIndex
from kgpath.backends.cypher.vectors import (
    VectorFile,
    VectorFiles,
    VectorFileWriter,
    read_header,
    write_vector_files,
)
from kgpath.errors import PersistenceError
from kgpath.ingest import ChunkingConfig
from kgpath.methods.augmented import GraphAugmentedRetriever
from kgpath.methods.augmented.cypher import CypherAugmented
from kgpath.methods.pcr import CypherPCR
from kgpath.testing.falkordb import fail_statement
from tests.test_falkordb_replica import Capitalised

_names = itertools.count()
SENTENCES = [
    "Marie Curie met Pierre Curie in Paris.",
    "Curie worked in Warsaw.",
    "Pierre Curie taught Einstein.",
    "Einstein visited Warsaw and Paris.",
    "Bohr met Einstein.",
    "Niels Bohr lived in Copenhagen.",
    "Lise Meitner wrote to Bohr.",
]
QUERIES = ["Who met Einstein?", "Curie in Warsaw", "Copenhagen"]




def build(docs: list[tuple[str, str]], emb: Any) -> GraphIndex:
    return GraphIndex.from_documents(docs, embedder=emb, extractor=Capitalised(),
                                     chunking=ChunkingConfig(max_chars=50))


def file_rows(directory: Any, name: str) -> tuple[list[str], np.ndarray]:
    vf = VectorFile(directory, name)
    try:
        return vf.ids(range(vf.count)), vf.vectors(np.arange(vf.count))
    finally:
        vf.close()


def data_files(directory: Any) -> set[str]:
    return {f for f in os.listdir(directory) if not f.endswith(".json")}


# -- the files alone -------------------------------------------------------------------------
def test_a_reader_keeps_its_generation_and_the_directory_follows(tmp_path):
    m1, m2 = np.eye(3, 4, dtype=np.float32), np.arange(20, dtype=np.float32).reshape(5, 4)
    write_vector_files(tmp_path, node_ids=["a", "b", "c"], node_vectors=m1)
    files = VectorFiles(tmp_path)
    held = files.nodes
    assert held is files.nodes  # no re-open while the header is unchanged
    write_vector_files(tmp_path, node_ids=list("vwxyz"), node_vectors=m2)
    assert np.array_equal(held.vectors([0, 1, 2]), m1) and held.ids([2]) == ["c"]
    assert held.top(m1[1], 1)[0].tolist() == [1]
    now = files.nodes
    assert now is not held and (now.count, now.generation) == (5, held.generation + 1)
    assert np.array_equal(now.vectors(range(5)), m2) and now.ids([4]) == ["z"]
    assert len(data_files(tmp_path)) == 3  # the old generation is unlinked (held stays open)
    os.unlink(tmp_path / "nodes.json")
    with pytest.raises(PersistenceError, match="holds no node or passage vectors"):
        VectorFiles(tmp_path)
    assert files.nodes is None


def test_a_failed_write_leaves_the_old_files(tmp_path):
    m = np.eye(2, dtype=np.float32)
    write_vector_files(tmp_path, node_ids=["a", "b"], node_vectors=m)
    head, before = read_header(tmp_path, "nodes"), data_files(tmp_path)
    with pytest.raises(RuntimeError, match="boom"):
        with VectorFileWriter(tmp_path, "nodes", 2) as w:
            w.append(["x"], np.ones((1, 2)))
            raise RuntimeError("boom")
    assert read_header(tmp_path, "nodes") == head and data_files(tmp_path) == before
    staged = VectorFileWriter(tmp_path, "nodes", 2)
    staged.append(["x"], np.ones((1, 2)))
    staged.finish()  # written, not published: readers still open the old generation
    assert file_rows(tmp_path, "nodes")[0] == ["a", "b"]
    staged.discard()
    assert data_files(tmp_path) == before
    stray = VectorFileWriter(tmp_path, "nodes", 2)  # a crash: files left, never published
    stray.finish()
    write_vector_files(tmp_path, node_ids=["c"], node_vectors=m[:1])  # removes the stray
    assert len(data_files(tmp_path)) == 3 and file_rows(tmp_path, "nodes")[0] == ["c"]


def test_first_format_headers_are_still_read(tmp_path):
    """A header without ``stem`` names ``nodes.f32`` (files written before generations)."""
    write_vector_files(tmp_path, node_ids=["a", "b"], node_vectors=np.eye(2))
    head = read_header(tmp_path, "nodes")
    for ext in ("f32", "off", "ids"):
        os.rename(tmp_path / f"{head['stem']}.{ext}", tmp_path / f"nodes.{ext}")
    (tmp_path / "nodes.json").write_text(
        '{"format": "kgpath-vectors", "version": 1, "count": 2, "dim": 2}')
    assert file_rows(tmp_path, "nodes")[0] == ["a", "b"]
    write_vector_files(tmp_path, node_ids=["c"], node_vectors=np.ones((1, 2)))
    assert not (tmp_path / "nodes.f32").exists() and len(data_files(tmp_path)) == 3


def test_concurrent_readers_never_see_a_torn_generation(tmp_path):
    """Generation g holds g + 1 rows, every value g, ids ``g:i``: while a writer publishes
    30 generations, readers (one long-lived VectorFiles, and fresh opens) always see one
    whole generation."""
    def write(g: int) -> None:
        write_vector_files(tmp_path, node_ids=[f"{g}:{i}" for i in range(g + 1)],
                           node_vectors=np.full((g + 1, 64), g, np.float32), chunk=3)

    write(0)
    files, seen, stop = VectorFiles(tmp_path), [], threading.Event()

    def read() -> None:
        while not stop.is_set():
            for vf in (files.nodes, VectorFile(tmp_path, "nodes")):
                assert vf is not None
                mat, ids = vf.vectors(np.arange(vf.count)), vf.ids(range(vf.count))
                g = vf.count - 1
                assert (mat == g).all() and ids == [f"{g}:{i}" for i in range(g + 1)]
                seen.append(g)

    with ThreadPoolExecutor(2) as pool:
        readers = [pool.submit(read) for _ in range(2)]
        for g in range(1, 31):
            write(g)
        stop.set()
        for r in readers:
            r.result()  # re-raises a reader's assertion
    assert seen and max(seen) <= 30 and files.nodes.count == 31  # type: ignore[union-attr]


# -- the files through document updates (FalkorDB) ----------------------------------------


def assert_files_follow(db: DatabaseIndex, docs: list[tuple[str, str]], reader: CypherBackend,
                        scratch: FalkorDBDriver, ref_dir: Any, emb: Any) -> None:
    """The files equal a fresh load's; the database's methods equal the fresh load's."""
    if not docs:
        assert VectorFile(db.vector_dir, "nodes").count == 0
        return
    ref = build(docs, emb)
    load_graph(scratch, ref, replace=True, vector_dir=ref_dir)
    for name in ("nodes", "passages"):
        (ids, mat), (ref_ids, ref_mat) = file_rows(db.vector_dir, name), file_rows(ref_dir, name)
        assert ids == ref_ids and np.array_equal(mat, ref_mat)
    fresh = CypherBackend(scratch, embedder=emb, vectors=ref_dir)
    for q in QUERIES:
        qv = reader.embed_query(q)
        for k in (1, 3, 50):
            a, b = reader.global_top(q, qv, k), fresh.global_top(q, qv, k)
            assert [x.id for x in a[0]] == [x.id for x in b[0]]
            assert a[1].tolist() == b[1].tolist() and a[2] == b[2]
            assert reader.passage_top(qv, k) == fresh.passage_top(qv, k)
        anchor = ref.graph.nodes[len(ref.graph) // 2].id
        want = CypherPCR(scratch, embedder=emb, vectors=ref_dir).retrieve(
            q, anchor=anchor, fallback="global", k=4)
        # memory sums in BLAS order: a near-tie may go the other way (1 ulp), so scores only
        mem = PathConstrainedRetriever(ref).retrieve(q, anchor=anchor, fallback="global", k=4)
        for pcr in (PathConstrainedRetriever(reader),
                    CypherPCR(db.driver, embedder=emb, schema=db.schema, vectors=db.vector_dir)):
            got = pcr.retrieve(q, anchor=anchor, fallback="global", k=4)
            assert [(h.id, h.hops, h.path, h.score) for h in got.hits] == [
                (h.id, h.hops, h.path, h.score) for h in want.hits]
            assert [h.score for h in got.hits] == pytest.approx([h.score for h in mem.hits],
                                                                abs=1e-6)
        aug = CypherAugmented(db.driver, embedder=emb, schema=db.schema, vectors=db.vector_dir)
        assert aug.backend.vectors is not None  # type: ignore[attr-defined]
        want = GraphAugmentedRetriever(ref).retrieve(q)
        assert aug.retrieve(q).passage_ids == want.passage_ids
        assert CypherAugmented(reader, embedder=emb).retrieve(q).passage_ids == want.passage_ids


def apply(model: list[tuple[str, str]], db: DatabaseIndex, rnd: random.Random) -> None:
    """One random update that succeeds (add of a new id, upsert, delete of a held id)."""
    held = [d for d, _ in model]
    kind = rnd.choice(["add", "upsert", "delete"] if held else ["add"])
    text = " ".join(rnd.sample(SENTENCES, rnd.randint(1, 3)))
    if kind == "delete":
        doc = rnd.choice(held)
        db.delete_documents([doc])
        model[:] = [d for d in model if d[0] != doc]
    elif kind == "upsert":
        doc = rnd.choice(held + ["new"])
        db.upsert_documents([(doc, text)])
        model[:] = [(d, text if d == doc else t) for d, t in model] + (
            [] if doc in held else [(doc, text)])
    else:
        doc = f"d{next(_names)}"
        db.add_documents([(doc, text)])
        model.append((doc, text))


@pytest.mark.falkordb
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("embeddings", [True, False])
def test_vector_sync_random_updates_equal_a_fresh_load(falkordb_graphs, tmp_path, seed, embeddings):
    emb = HashingEmbedder(16)
    rnd = random.Random(seed)
    model = [(f"s{i}", " ".join(rnd.sample(SENTENCES, 2))) for i in range(3)]
    drv, scratch = falkordb_graphs(), falkordb_graphs()
    db = DatabaseIndex(build(model, emb), drv, vector_dir=tmp_path / "v",
                       embeddings=embeddings)
    reader = CypherBackend(drv, embedder=emb, schema=db.schema, vectors=tmp_path / "v")
    assert_files_follow(db, model, reader, scratch, tmp_path / "ref", emb)
    for _ in range(6):
        held = reader.vectors.nodes  # type: ignore[union-attr]
        assert held is not None
        ids, mat = held.ids(range(held.count)), held.vectors(np.arange(held.count))
        apply(model, db, rnd)
        assert held.ids(range(held.count)) == ids  # a reader keeps its generation whole
        assert np.array_equal(held.vectors(np.arange(held.count)), mat)
        assert_files_follow(db, model, reader, scratch, tmp_path / "ref", emb)
        assert len(data_files(tmp_path / "v")) == 12  # one generation of each (and of names)


@pytest.mark.falkordb
def test_vector_sync_a_failed_push_keeps_the_old_files(falkordb_graphs, tmp_path, monkeypatch):
    emb = HashingEmbedder(16)
    docs = [("a", SENTENCES[0]), ("b", SENTENCES[3]), ("c", SENTENCES[5])]
    drv, scratch = falkordb_graphs(), falkordb_graphs()
    vdir = tmp_path / "v"
    db = DatabaseIndex(build(docs, emb), drv, vector_dir=vdir)
    reader = CypherBackend(drv, embedder=emb, schema=db.schema, vectors=vdir)
    heads = {n: read_header(vdir, n) for n in ("nodes", "passages")}
    rows = {n: file_rows(vdir, n) for n in heads}
    before = data_files(vdir)
    real = drv.run
    restore = fail_statement(monkeypatch, drv, at=2)  # the push's third statement fails
    with pytest.raises(BackendError, match="connection lost"):
        db.delete_documents(["a"])
    restore()
    assert {n: read_header(vdir, n) for n in heads} == heads and data_files(vdir) == before
    for n in heads:
        ids, mat = file_rows(vdir, n)
        assert ids == rows[n][0] and np.array_equal(mat, rows[n][1])
    assert reader.vectors.nodes.generation == heads["nodes"]["generation"]  # type: ignore[union-attr]

    def no_disk(*args: Any, **kw: Any) -> Any:
        raise PersistenceError("disk full (test)")

    monkeypatch.setattr(syncmod, "stage_vector_file", no_disk)  # files fail: no statement
    sent = itertools.count()
    monkeypatch.setattr(drv, "run", lambda *a, **k: (next(sent), real(*a, **k))[1])
    with pytest.raises(PersistenceError, match="disk full"):
        db.push()
    assert next(sent) == 0 and data_files(vdir) == before
    monkeypatch.undo()
    db.push()  # the update the index kept: database and files now equal a fresh load
    assert read_header(vdir, "nodes")["generation"] == heads["nodes"]["generation"] + 1
    assert_files_follow(db, docs[1:], reader, scratch, tmp_path / "ref", emb)


@pytest.mark.falkordb
def test_vector_sync_pushes_without_moves_keep_the_files(falkordb_graphs, tmp_path):
    """An upsert that changes no node, position or vector writes no new generation."""
    emb = HashingEmbedder(16)
    docs = [("a", SENTENCES[0]), ("b", SENTENCES[4])]
    db = DatabaseIndex(build(docs, emb), falkordb_graphs(), vector_dir=tmp_path)
    gen = {n: read_header(tmp_path, n)["generation"] for n in ("nodes", "passages")}
    assert db.push().changed is False
    assert {n: read_header(tmp_path, n)["generation"] for n in gen} == gen
    db.add_documents([("c", SENTENCES[5])])
    assert {n: read_header(tmp_path, n)["generation"] for n in gen} == {
        n: g + 1 for n, g in gen.items()}
    db.delete_documents(["a", "b", "c"])
    assert VectorFile(tmp_path, "nodes").count == VectorFile(tmp_path, "passages").count == 0


@pytest.mark.falkordb
def test_vector_sync_cypher_methods_take_vectors(falkordb_graphs, tmp_path):
    """``CypherPCR(vectors=)`` / ``CypherAugmented(vectors=)`` read the files (the database
    holds no vectors here: without the files the scan has nothing to score)."""
    emb = HashingEmbedder(16)
    docs = [("a", SENTENCES[0]), ("b", SENTENCES[3]), ("c", SENTENCES[6])]
    index = build(docs, emb)
    drv = falkordb_graphs()
    schema = load_graph(drv, index, vector_dir=tmp_path, embeddings=False)
    pcr = CypherPCR(drv, embedder=emb, schema=schema, vectors=tmp_path)
    aug = CypherAugmented(drv, embedder=emb, schema=schema, vectors=str(tmp_path))
    assert pcr.backend.vectors is not None and pcr.backend.vectors.directory == tmp_path
    for q in QUERIES:
        mem = PathConstrainedRetriever(index).retrieve(q, fallback="global", anchor="Bohr")
        got = pcr.retrieve(q, fallback="global", anchor="Bohr")
        assert [(h.id, h.path) for h in got.hits] == [(h.id, h.path) for h in mem.hits]
        assert aug.retrieve(q).passage_ids == GraphAugmentedRetriever(index).retrieve(
            q).passage_ids
    with pytest.raises(Exception, match="passage vectors|stored vector"):
        CypherAugmented(drv, embedder=emb, schema=schema).retrieve(QUERIES[0])
    with pytest.raises(Exception, match="vectors= is for a driver"):
        CypherAugmented(pcr.backend, vectors=tmp_path)


@pytest.mark.falkordb
def test_vector_sync_rows_read_by_order_are_checked(falkordb_graphs, tmp_path):
    """Vectors only in the files: a reached node (passage) read by its order must be that row
    of the file; an order that names another row (a database updated while the files are
    not yet, counts equal) is refused, never scored with another node's vector."""
    emb = HashingEmbedder(16)
    docs = [("a", SENTENCES[0]), ("b", SENTENCES[3]), ("c", SENTENCES[6])]
    index = build(docs, emb)
    drv = falkordb_graphs()
    schema = load_graph(drv, index, vector_dir=tmp_path, embeddings=False)
    file = CypherBackend(drv, embedder=emb, schema=schema, vectors=tmp_path)
    qv = file.embed_query("Bohr")
    keys = [file.node_by_id("Bohr"), file.node_by_id("Paris")]
    want = index.graph.vectors.matrix[[index.graph.index_of("Bohr"),
                                       index.graph.index_of("Paris")]] @ qv
    assert np.allclose(file.score("Bohr", qv, keys), want, rtol=0, atol=1e-6)
    assert set(file.passage_records(["a", "b"])) == {"a", "b"}
    drv.run("MATCH (x:KgNode {id: 'Bohr'}), (y:KgNode {id: 'Paris'}) "
            "WITH x, y, x.idx AS i SET x.idx = y.idx, y.idx = i", {})
    keys = [file.node_by_id("Bohr"), file.node_by_id("Paris")]
    with pytest.raises(BackendError, match="is stale"):
        file.score("Bohr", qv, keys)
    drv.run("MATCH (x:KgPassage {id: 'a'}), (y:KgPassage {id: 'b'}) "
            "WITH x, y, x.idx AS i SET x.idx = y.idx, y.idx = i", {})
    with pytest.raises(BackendError, match="is stale"):
        file.passage_records(["a"])
