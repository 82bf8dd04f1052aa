"""The edge vector file's pieces without a database: ranking, keys, the third file kind.

Truth is computed by hand: which relations :func:`rank_relations` keeps and in which
order, and what an :func:`edge_file_key` holds.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from kgpath.backends.cypher.vectors import VectorFiles, stage_vector_file
from kgpath.errors import PersistenceError
from kgpath.methods.pathrag.dbstore import edge_file_key
from kgpath.methods.pathrag.nodes import rank_relations, retrieve_relations


def test_rank_relations_by_hand():
    sims = np.array([0.5, 0.9, 0.5, 0.9, 0.1], np.float32)
    degree = [2, 1, 3, 1, 0]
    # top 3 by similarity, ties by index: 1, 3, 0; then by degree (0 has 2), similarity, index
    assert [e for e, _ in rank_relations(sims, degree, 3)] == [0, 1, 3]
    assert [e for e, _ in rank_relations(sims, degree, 4)] == [2, 0, 1, 3]  # 2 ties 0 by sim
    assert [e for e, _ in rank_relations(sims, degree, 3, min_similarity=0.6)] == [1, 3]
    # mean 0.58, std 0.2993: mean + 1 std = 0.879 keeps the two 0.9s
    assert [e for e, _ in rank_relations(sims, degree, 5, min_z=1.0)] == [1, 3]
    assert rank_relations(sims, degree, 0) == [] and rank_relations([], [], 3) == []


def test_retrieve_relations_ties_by_edge_order_wherever_the_row_sits():
    """Equal edge vectors score equally (summed row by row), so ties go to the lower index."""
    rng = np.random.default_rng(0)
    for n, rows in ((7, (0, 4, 5)), (1001, (0, 500, 1000))):  # a BLAS product sums the
        ev = rng.standard_normal((n, 16)).astype(np.float32)  # last rows another way
        for r in rows[1:]:
            ev[r] = ev[rows[0]]
        kv = ev[0] + 0.01 * rng.standard_normal(16).astype(np.float32)
        got = retrieve_relations(kv, ev, np.zeros(n, np.int64), 3)
        assert [e for e, _ in got] == list(rows)
        assert got[0][1] == got[1][1] == got[2][1]


def test_edge_file_key_round_trips_any_id():
    key = edge_file_key(7, 'a\t"b"', "ü,[x]", "a r b: text")
    rank, s, t, digest = json.loads(key)
    assert (rank, s, t) == (7, 'a\t"b"', "ü,[x]") and len(digest) == 16
    assert edge_file_key(7, 'a\t"b"', "ü,[x]", "a r b: other") != key


def test_vector_files_third_kind_edges(tmp_path):
    with pytest.raises(PersistenceError, match="no node or passage vectors .nor edge"):
        VectorFiles(tmp_path)
    stage_vector_file(tmp_path, "edges", ["k0", "k1"], np.eye(2, dtype=np.float32)).publish()
    files = VectorFiles(tmp_path)  # an edge file alone is a vector directory
    assert files.nodes is None and files.passages is None
    assert files.edges.count == 2 and files.edges.ids([1]) == ["k1"]
    stage_vector_file(tmp_path, "edges", ["k0"], np.eye(1, 2, dtype=np.float32)).publish()
    assert files.edges.count == 1  # follows a new generation
