from __future__ import annotations

import math

import numpy as np
import pytest

from kgpath import ConfigError, EmbeddingError
from kgpath.index import BM25Index, VectorIndex, hybrid_scores, normalize_bm25, tokenize, top_k


def test_bm25_hand_computed():
    # N=3, avgdl=4/3; "cherry" occurs once in doc 2 (length 1)
    idx = BM25Index(["apple banana", "apple", "cherry"], k1=1.5, b=0.75)
    idf = math.log((3 - 1 + 0.5) / (1 + 0.5))
    tf_part = (1 * 2.5) / (1 + 1.5 * (1 - 0.75 + 0.75 * 1 / (4 / 3)))
    assert idx.scores("cherry").tolist() == pytest.approx([0, 0, idf * tf_part], abs=1e-6)
    # restricted scoring returns candidates' scores in the given order
    assert idx.scores("cherry", [2, 0]).tolist() == pytest.approx([idf * tf_part, 0.0], abs=1e-6)


def test_tokenizer_drops_stopwords():
    assert tokenize("What is the Capital of France?") == ["capital", "france"]


def test_hybrid_normalisation_by_hand():
    got = hybrid_scores(np.array([0.5, 0.9, 0.1]), np.array([2.0, 0.0, 4.0]), alpha=0.7)
    assert got.tolist() == pytest.approx([0.35 + 0.15, 0.63, 0.07 + 0.3])
    assert normalize_bm25(np.zeros(3)).tolist() == [0, 0, 0]
    with pytest.raises(ConfigError, match="1.2"):
        hybrid_scores(np.zeros(1), np.zeros(1), alpha=1.2)


def test_top_k_order_and_ties():
    s = np.array([0.1, 0.9, 0.5, 0.9, 0.3])
    assert top_k(s, 3).tolist() == [1, 3, 2]
    assert top_k(s, 10).tolist() == [1, 3, 2, 4, 0]
    assert top_k(s, 0).tolist() == []


def test_vector_restricted_search_paths_agree():
    rng = np.random.default_rng(1)
    m = rng.normal(size=(500, 16)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    q = m[7]
    cand = rng.choice(500, 200, replace=False)
    dense = VectorIndex(m, dense_threshold=10_000)
    faiss_path = VectorIndex(m, dense_threshold=10)  # forces the IDSelector path
    i1, s1 = dense.search(q, 5, cand)
    i2, s2 = faiss_path.search(q, 5, cand)
    brute = cand[np.argsort(-(m[cand] @ q), kind="stable")[:5]]
    assert i1.tolist() == i2.tolist() == brute.tolist()
    np.testing.assert_allclose(s1, s2, rtol=1e-5)
    assert set(i1.tolist()) <= set(cand.tolist())
    gi, _ = faiss_path.search(q, 1)
    assert gi.tolist() == [7]


def test_vector_index_validation():
    with pytest.raises(EmbeddingError, match="row 1"):
        VectorIndex(np.array([[1.0, 0.0], [np.nan, 1.0]]))
    idx = VectorIndex(np.eye(3, dtype=np.float32))
    with pytest.raises(EmbeddingError, match="dimension 2"):
        idx.search(np.ones(2), 1)
    with pytest.raises(ConfigError):
        idx.search(np.ones(3), 0)
    with pytest.raises(ConfigError, match="out of range"):
        idx.search(np.ones(3), 1, [5])
