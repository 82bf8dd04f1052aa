"""Vectors beside the database (:mod:`kgpath.backends.cypher.vectors`) equal the paged scan.

Truth: the file's top-k is :func:`~kgpath.search.vector.top_k` of the float32 matrix (ties
by row), whatever the chunk size; over FalkorDB, ``CypherBackend(vectors=...)`` returns the
same global top-k (keys, scores, count scored), the same passage top ``n``, and the same PCR
and graph-augmented results as the scan over the base64 vectors in the database, on random
graphs with duplicated (tied) vectors; a database changed after the files were written is
refused, never answered from stale rows.
"""

from __future__ import annotations

import os
import random
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from kgpath import GraphIndex, HashingEmbedder, KnowledgeGraph
from kgpath.backends.cypher import CypherBackend, CypherSchema, load_graph
from kgpath.backends.cypher import vectors as vecmod
from kgpath.backends.cypher.vectors import (
    VectorFile,
    VectorFiles,
    VectorFileWriter,
    write_vector_files,
)
from kgpath.errors import BackendError, ConfigError, EmbeddingError, PersistenceError
from kgpath.methods.augmented import GraphAugmentedRetriever
from kgpath.methods.augmented.cypher import CypherAugmented
from kgpath.methods.pcr import PathConstrainedRetriever
from kgpath.search.vector import top_k


def tied_matrix(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((n, dim)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    for i in range(0, n, 7):  # every 7th row repeats an earlier one: tied scores
        m[i] = m[rng.integers(0, max(i, 1))]
    return m


@pytest.mark.parametrize("chunk_bytes", [4 * 8 * 3, 4 * 8 * 1000, 8 << 20])
def test_score_rows_are_the_per_row_sums_of_every_query(tmp_path, monkeypatch, chunk_bytes):
    # chunks of 3 rows start off the page boundary (mapped from the page before)
    monkeypatch.setattr(vecmod, "CHUNK_BYTES", chunk_bytes)
    m = tied_matrix(2000, 8, 4)
    write_vector_files(tmp_path, node_ids=[f"n{i}" for i in range(2000)], node_vectors=m)
    vf = VectorFile(tmp_path, "nodes")
    qs = m[[3, 1999, 700]]
    got = vf.score_rows(qs)
    assert got.shape == (3, 2000) and got.dtype == np.float32
    for k, q in enumerate(qs):
        assert np.array_equal(got[k], np.einsum("ij,j->i", m, q))
        assert np.array_equal(vf.scores(q), got[k])
    with pytest.raises(EmbeddingError, match="dimension 4"):
        vf.score_rows(np.zeros((2, 4), np.float32))


def test_a_file_truncated_after_opening_is_refused_not_mapped(tmp_path):
    m = tied_matrix(300, 8, 3)
    write_vector_files(tmp_path, node_ids=[f"n{i}" for i in range(300)], node_vectors=m)
    vf = VectorFile(tmp_path, "nodes")
    os.truncate(vf.path, 100 * 8 * 4)  # a map past the end would kill the process (SIGBUS)
    with pytest.raises(PersistenceError, match="ended early"):
        vf.scores(m[0])


@pytest.mark.parametrize("chunk_bytes", [4 * 8 * 3, 4 * 8 * 64, 8 << 20])
def test_file_top_k_is_top_k_of_the_matrix(tmp_path, monkeypatch, chunk_bytes):
    monkeypatch.setattr(vecmod, "CHUNK_BYTES", chunk_bytes)
    m = tied_matrix(500, 8, 1)
    ids = [f"n{i}·é" for i in range(500)]
    write_vector_files(tmp_path, node_ids=ids, node_vectors=m, chunk=37)
    vf = VectorFile(tmp_path, "nodes")
    assert (vf.count, vf.dim) == (500, 8)
    rng = np.random.default_rng(2)
    for _ in range(20):
        q = m[rng.integers(0, 500)]  # a stored vector: its ties score equal
        k = int(rng.integers(1, 40))
        pos, sc = vf.top(q, k)
        want = top_k(m @ q, k)
        assert pos.tolist() == want.tolist()
        # float32 BLAS: the summation order may differ with the chunk's row count (1 ulp)
        assert np.allclose(sc, (m @ q)[want], rtol=0, atol=1e-6)
        ex = int(want[0])
        pos2, _ = vf.top(q, k, exclude=ex)
        assert pos2.tolist() == [p for p in top_k(m @ q, k + 1).tolist() if p != ex][:k]
    qs = m[:16]  # concurrent queries (threads) on one file give the sequential answers
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda q: vf.top(q, 7)[0].tolist(), qs))
    assert got == [top_k(m @ q, 7).tolist() for q in qs]
    rows = [499, 3, 4, 5, 3, 0, 250]
    assert np.array_equal(vf.vectors(rows), m[rows])
    assert vf.ids(rows) == [ids[r] for r in rows]
    with pytest.raises(EmbeddingError, match="dimension 3"):
        vf.top(np.ones(3), 1)
    with pytest.raises(ConfigError, match="out of range"):
        vf.vectors([500])
    vf.close()


def test_broken_files_are_refused(tmp_path):
    with VectorFileWriter(tmp_path, "nodes", 4) as w:
        w.append(["a", "b"], np.eye(2, 4))
    with open(VectorFile(tmp_path, "nodes").path, "ab") as fh:  # the published generation
        fh.write(b"\0\0\0\0")
    with pytest.raises(PersistenceError, match="was the write interrupted"):
        VectorFile(tmp_path, "nodes")
    with pytest.raises(PersistenceError, match="no vector directory"):
        VectorFiles(tmp_path / "missing")
    (tmp_path / "nodes.json").unlink()
    with pytest.raises(PersistenceError, match="holds no node or passage vectors"):
        VectorFiles(tmp_path)
    with pytest.raises(ConfigError, match=r"expected \(1, 4\) rows"):
        VectorFileWriter(tmp_path, "x", 4).append(["a"], np.ones((1, 3)))


def random_index(seed: int, n: int = 120) -> GraphIndex:
    rnd = random.Random(seed)
    g = KnowledgeGraph()
    for j in range(n // 3):
        g.add_passage(f"p{j}", f"passage {j} about topic {rnd.randrange(9)}")
    for i in range(n):
        g.add_node(f"n{i}", name=f"entity {i % 40}", text=f"text {rnd.randrange(50)}",
                   provenance=[f"p{rnd.randrange(n // 3)}"])
    for _ in range(2 * n):
        g.add_edge(f"n{rnd.randrange(n)}", f"n{rnd.randrange(n)}", relation="r")
    return GraphIndex(g, HashingEmbedder(32)).build()  # equal names/texts: tied vectors


@pytest.mark.falkordb
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_file_backend_equals_scan(falkordb_driver, tmp_path, seed):
    index = random_index(seed)
    schema = load_graph(falkordb_driver, index, vector_dir=tmp_path)
    scan = CypherBackend(falkordb_driver, embedder=index.embedder, schema=schema, page_size=17)
    file = CypherBackend(falkordb_driver, embedder=index.embedder, schema=schema,
                         vectors=tmp_path)
    rnd = random.Random(seed)
    for j in range(12):
        q = f"entity {rnd.randrange(40)} text {rnd.randrange(50)}"
        qv = scan.embed_query(q)
        k = rnd.choice([1, 5, 30, 200])
        ex = scan.node_by_id(f"n{rnd.randrange(120)}") if j % 2 else None
        a, b = scan.global_top(q, qv, k, exclude=ex), file.global_top(q, qv, k, exclude=ex)
        assert [x.id for x in b[0]] == [x.id for x in a[0]]
        assert np.allclose(b[1], a[1], rtol=0, atol=1e-6) and b[2] == a[2]
        assert file.passage_top(qv, k) == scan.passage_top(qv, k)
        assert file.most_similar(qv) == scan.most_similar(qv)
    for q in ["entity 3 text 4", "passage about topic 2", "nothing here"]:
        mem = PathConstrainedRetriever(index).retrieve(q, anchor="n0", fallback="global")
        got = PathConstrainedRetriever(file).retrieve(q, anchor="n0", fallback="global")
        assert [h.id for h in got.hits] == [h.id for h in mem.hits]
        assert [h.score for h in got.hits] == pytest.approx([h.score for h in mem.hits],
                                                            abs=1e-6)
        a_mem = GraphAugmentedRetriever(index).retrieve(q)
        a_db = CypherAugmented(file, embedder=index.embedder).retrieve(q)
        assert a_db.passage_ids == a_mem.passage_ids


@pytest.mark.falkordb
def test_vectors_only_in_the_file(falkordb_driver, tmp_path):
    """embeddings=False: scores of reached nodes and passage records read the file."""
    index = random_index(5)
    load_graph(falkordb_driver, index, vector_dir=tmp_path, embeddings=False)
    file = CypherBackend(falkordb_driver, embedder=index.embedder, vectors=tmp_path)
    keys = [file.node_by_id(f"n{i}") for i in (4, 9, 1)]
    assert all(not k.row.get("embedding") for k in keys)
    qv = file.embed_query("entity 4")
    mat = index.graph.vectors.matrix
    want = mat[[4, 9, 1]] @ qv
    assert np.allclose(file.score("entity 4", qv, keys), want, rtol=0, atol=1e-6)
    recs = file.passage_records(["p3", "p0"])
    pv = index.passage_vectors()
    assert np.array_equal(recs["p3"].vector, pv.matrix[list(pv.ids).index("p3")])
    mem = GraphAugmentedRetriever(index).retrieve("entity 4 passage topic 1")
    assert CypherAugmented(file, embedder=index.embedder).retrieve(
        "entity 4 passage topic 1").passage_ids == mem.passage_ids


@pytest.mark.falkordb
def test_stale_files_are_refused(falkordb_driver, tmp_path):
    index = random_index(7, n=30)
    schema = load_graph(falkordb_driver, index, vector_dir=tmp_path)
    file = CypherBackend(falkordb_driver, embedder=index.embedder, vectors=tmp_path)
    qv = file.embed_query("entity 1")
    top = file.global_top("", qv, 3)[0][0]
    falkordb_driver.run("MATCH (n:KgNode {id: $id}) SET n.idx = 999", {"id": top.id})
    with pytest.raises(BackendError, match="is stale"):
        file.global_top("", qv, 3)
    falkordb_driver.run("CREATE (:KgNode {id: 'extra', idx: 1000})", {})
    with pytest.raises(BackendError, match="31 nodes"):
        file.global_top("", qv, 3)
    falkordb_driver.run("CREATE (:KgPassage {id: 'extra', idx: 1000})", {})
    with pytest.raises(BackendError, match="passages"):
        file.passage_top(qv, 3)
    with pytest.raises(ConfigError, match="order_property"):
        CypherBackend(falkordb_driver, embedder=index.embedder, vectors=tmp_path,
                      schema=CypherSchema(order_property=None))
    assert schema.order_property == "idx"


@pytest.mark.falkordb
def test_bulk_load_equals_load_graph(falkordb_server, falkordb_driver, tmp_path):
    """Streamed batches (``bulk.py``) write the graph ``load_graph`` writes: same answers."""
    from kgpath.backends.cypher import FalkorDBDriver
    from kgpath.backends.cypher.bulk import bulk_load
    from kgpath.backends.cypher.loading import edge_rows, node_rows, passage_rows

    index = random_index(11)
    g = index.graph
    load_graph(falkordb_driver, index)
    other = FalkorDBDriver.connect(falkordb_server.host, falkordb_server.port,
                                   "kgpath_test_bulk", timeout=60)
    try:
        rows = node_rows(g)
        for r in rows:
            del r["embedding"]  # vectors only in the file
        edges, passages = edge_rows(g), passage_rows(g)
        stats = bulk_load(other, nodes=[rows[:50], rows[50:]],
                          edges=[edges[i:i + 37] for i in range(0, len(edges), 37)],
                          passages=[passages])
        assert (stats.nodes, stats.edges, stats.passages) == (
            len(g), g.num_edges, len(g.passages))
        pv = index.passage_vectors()
        write_vector_files(tmp_path, node_ids=[n.id for n in g.nodes],
                           node_vectors=g.vectors.matrix, passage_ids=list(pv.ids),
                           passage_vectors=pv.matrix)
        a = CypherBackend(falkordb_driver, embedder=index.embedder)
        b = CypherBackend(other, embedder=index.embedder, vectors=tmp_path)
        for q in ["entity 3 text 4", "passage about topic 2", "entity 17"]:
            for direction in ("out", "in", "both"):
                x = PathConstrainedRetriever(a).retrieve(q, anchor="n5", max_depth=2,
                                                         direction=direction)
                y = PathConstrainedRetriever(b).retrieve(q, anchor="n5", max_depth=2,
                                                         direction=direction)
                assert [(h.id, h.path, h.edges) for h in y.hits] == [
                    (h.id, h.path, h.edges) for h in x.hits]
            assert (CypherAugmented(b, embedder=index.embedder).retrieve(q).passage_ids
                    == CypherAugmented(a, embedder=index.embedder).retrieve(q).passage_ids)
        with pytest.raises(ConfigError, match="empty target"):
            bulk_load(other, nodes=[rows[:1]])
        empty = FalkorDBDriver.connect(falkordb_server.host, falkordb_server.port,
                                       "kgpath_test_bulk2", timeout=60)
        try:
            with pytest.raises(ConfigError, match="'source' and 'target'"):
                bulk_load(empty, nodes=[rows[:1]], edges=[[{"rank": 0}]])
        finally:
            empty.graph.delete()
            empty.close()
    finally:
        other.graph.delete()
        other.close()
