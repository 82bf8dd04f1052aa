"""The edge vector file follows document updates (``DatabaseIndex(..., edge_vectors=)``).

Truth: the in-memory :class:`~kgpath.methods.pathrag.PathRAGRetriever` on the updated
index. After every random add, upsert or delete (edge ranks shift on deletes, names come
and go), a ``CypherPathRAG`` made once before the updates and reading every vector from
``vector_dir`` (the stored ones must not be scanned) returns what memory returns, with LLM
high-level keywords; the file holds exactly the rows of a fresh write. Without
``edge_vectors`` a push that changes edges unpublishes the edge file, and the scan takes
over (still equal).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from kgpath import HashingEmbedder
from kgpath.backends.cypher.sync import DatabaseIndex
from kgpath.backends.cypher.vectors import VectorFile, VectorFiles
from kgpath.llm import ScriptedLLM
from kgpath.methods.pathrag import CypherPathRAG, PathRAGConfig, PathRAGRetriever
from kgpath.methods.pathrag.dbstore import pathrag_edge_vectors, store_pathrag_vectors
from tests.test_falkordb_names_sync import QUESTIONS, SENTENCES, apply, build, text
from tests.test_falkordb_pathrag_whole import assert_same, both, keyword_llm

CFG = PathRAGConfig(num_nodes=6, num_relations=5, min_similarity_z=None)


def reader(db: DatabaseIndex, scan_edges: bool = False) -> CypherPathRAG:
    r = CypherPathRAG(db.driver, embedder=db.embedder, schema=db.schema, config=CFG,
                      vectors=db.vector_dir, llm=ScriptedLLM(keyword_llm))

    def no_scan(*_a, **_k):
        raise AssertionError("the stored vectors were scanned despite the vector files")
    r._node_matrix_db = no_scan
    r._scan_passages = no_scan
    if not scan_edges:
        r._edge_matrix_db = no_scan
    return r


def assert_follows(db: DatabaseIndex, readers: list[CypherPathRAG]) -> int:
    """Every reader equals memory on every question; the edge file equals a fresh write."""
    ids, mat = pathrag_edge_vectors(db.index)
    vf = VectorFile(db.vector_dir, "edges")  # type: ignore[arg-type]
    assert vf.ids(range(vf.count)) == ids
    assert np.array_equal(vf.vectors(range(vf.count)), mat)
    relations = 0
    mem = PathRAGRetriever(db.index, config=CFG, llm=ScriptedLLM(keyword_llm))
    for q in QUESTIONS:
        for r in readers:
            a, b = both(mem, r, q)
            assert_same(a, b)
            relations += len(a.relations)
    return relations


@pytest.mark.falkordb
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_edge_file_follows_random_updates(falkordb_graphs, tmp_path, seed):
    emb = HashingEmbedder(64)
    rnd = random.Random(seed)
    model = [(f"s{i}", text(*rnd.sample(SENTENCES, 2))) for i in range(3)]
    db = DatabaseIndex(build(model, emb), falkordb_graphs(), vector_dir=tmp_path / "v",
                       edge_vectors=pathrag_edge_vectors)
    readers = [reader(db)]  # made once, before the updates
    relations = 0
    gens = set()
    for _ in range(6):
        relations += assert_follows(db, readers + [reader(db)])
        gens.add(VectorFiles(db.vector_dir).edges.generation)
        apply(model, db, rnd)
    relations += assert_follows(db, readers)
    assert relations and len(gens) > 2  # relations compared; the file was rewritten


@pytest.mark.falkordb
def test_without_edge_vectors_a_push_unpublishes_the_edge_file(falkordb_graphs, tmp_path):
    emb = HashingEmbedder(64)
    db = DatabaseIndex(build([("a", text(*SENTENCES[:3]))], emb), falkordb_graphs(),
                       vector_dir=tmp_path / "v")
    assert VectorFiles(db.vector_dir).edges is None  # nothing asked for one
    store_pathrag_vectors(db.driver, db.index, schema=db.schema, vector_dir=db.vector_dir)
    assert VectorFiles(db.vector_dir).edges is not None
    r = reader(db, scan_edges=True)
    assert_follows(db, [r])
    db.add_documents([("b", text(SENTENCES[4]))])  # new edges: the file would be stale
    assert VectorFiles(db.vector_dir).edges is None
    mem = PathRAGRetriever(db.index, config=CFG, llm=ScriptedLLM(keyword_llm))
    for q in QUESTIONS:  # the scan (stored vectors, embedded where none) takes over
        assert_same(*both(mem, r, q))


@pytest.mark.falkordb
def test_edge_file_follows_a_rename_in_place(falkordb_graphs, tmp_path):
    """Renaming a node changes no edge row, but the relation texts of its edges."""
    emb = HashingEmbedder(64)
    docs = [("a", text(SENTENCES[7])), ("b", text(SENTENCES[4])), ("c", text(SENTENCES[6]))]
    db = DatabaseIndex(build(docs, emb), falkordb_graphs(), vector_dir=tmp_path / "v",
                       edge_vectors=pathrag_edge_vectors)
    r = reader(db)
    assert_follows(db, [r])
    before = VectorFiles(db.vector_dir).edges
    db.index.graph.add_node("Bohr", name="Niels Henrik Bohr")
    assert db.push().nodes_updated == 1 and not db.last_push.edges_updated
    after = VectorFiles(db.vector_dir).edges
    assert after.generation > before.generation
    assert after.ids(range(after.count)) != before.ids(range(before.count))  # new digests
    assert assert_follows(db, [r])
