"""Hostile inputs on the newest public surface (PCR, PathRAG, C2RAG configs and retrievers,
the chunk graph builder, the embedding cache, document ingestion): each one that slipped
through now raises a typed kgpath error naming the bad value, or takes a documented fallback.
"""

from __future__ import annotations

import errno
import logging
from pathlib import Path

import numpy as np
import pytest

import kgpath.embed_cache as embed_cache
from kgpath import HashingEmbedder, KnowledgeGraph
from kgpath.embed_cache import CachedEmbedder
from kgpath.errors import ConfigError, EmbeddingError, GraphError, PersistenceError
from kgpath.index import GraphIndex
from kgpath.ingest import graph_from_documents
from kgpath.ingest.chunk_graph import ChunkGraphBuilder
from kgpath.methods.c2rag import ConstraintCheckedRetriever
from kgpath.methods.pathrag import PathRAGConfig, PathRAGRetriever
from kgpath.methods.pcr import PathConstrainedRetriever


@pytest.fixture(scope="module")
def index() -> GraphIndex:
    g = KnowledgeGraph.from_triples(
        [("honey bee", "makes", "honey"), ("honey", "sweetens", "tea")],
        {"p1": "Bees make honey.", "p2": "Honey sweetens tea."}, provenance=[["p1"], ["p2"]],
    )
    return GraphIndex(g, HashingEmbedder())


# ---------------------------------------------------------------- PCR
@pytest.mark.parametrize(("bad", "named"), [
    (["a", "b"], "'a'"),                                    # not numbers
    (None, "None"),                                         # was "dimension 1"
    ("rows", "(2, 256)"),                                   # was "dimension 512"
    ("nan", "nan at position 3"),
    ("inf", "inf at position 3"),
])
def test_pcr_retrieve_by_vector_refuses_bad_vectors(index, bad, named):
    pcr = PathConstrainedRetriever(index)
    qv = index.embedder.embed_queries(["honey"])[0]
    if bad == "rows":
        bad = np.stack([qv, qv])
    elif bad in ("nan", "inf"):
        value, bad = float(bad), qv.copy()
        bad[3] = value
    with pytest.raises(EmbeddingError, match=named.replace("(", r"\(").replace(")", r"\)")):
        pcr.retrieve_by_vector(bad, anchor="honey")


def test_pcr_retrieve_by_vector_still_takes_one_row_and_ints(index):
    pcr = PathConstrainedRetriever(index)
    qv = index.embedder.embed_queries(["honey"])
    assert pcr.retrieve_by_vector(qv, anchor="honey").ids == pcr.retrieve_by_vector(
        qv[0], anchor="honey").ids
    assert pcr.retrieve_by_vector(np.ones(qv.shape[1], np.int64), anchor="honey").hits
    for shape in ((-1, 1), (1, 1, -1)):  # a column and a nested row, accepted before the check
        assert pcr.retrieve_by_vector(qv.reshape(shape), anchor="honey").ids == \
            pcr.retrieve_by_vector(qv[0], anchor="honey").ids


def test_pcr_anchors_with_none_is_refused_not_anchored_by_similarity(index):
    pcr = PathConstrainedRetriever(index)
    with pytest.raises(ConfigError, match=r"anchors\[1\] is None in \['honey', None\]"):
        pcr.retrieve("tea", anchors=["honey", None])


@pytest.mark.parametrize(("retriever", "wanted"), [
    (PathConstrainedRetriever, "PCRConfig"),
    (PathRAGRetriever, "PathRAGConfig"),
    (ConstraintCheckedRetriever, "C2RAGConfig"),
])
def test_retrievers_refuse_a_config_of_the_wrong_type(index, retriever, wanted):
    with pytest.raises(ConfigError, match=f"config must be a {wanted}, got {{'k': 3}}"):
        retriever(index, config={"k": 3})


# ---------------------------------------------------------------- PathRAG
@pytest.mark.parametrize("preset", ["for_passages", "lite", "literal_eq4"])
def test_pathrag_presets_name_an_unknown_option(preset):
    with pytest.raises(ConfigError, match=r"unknown PathRAGConfig option\(s\): \['unit_ordr'\]"):
        getattr(PathRAGConfig, preset)(unit_ordr="question")


@pytest.mark.parametrize("bad", [("",), ("cooccurrence", "  ")])
def test_pathrag_exclude_edge_types_refuses_blank_types(bad):
    with pytest.raises(ConfigError, match="tuple of non-empty str, got " + repr(bad)
                       .replace("(", r"\(").replace(")", r"\)")):
        PathRAGConfig(exclude_edge_types=bad)


def test_pathrag_exclude_unknown_edge_type_is_logged_and_excludes_nothing(index, caplog):
    pr = PathRAGRetriever(index, config=PathRAGConfig(num_nodes=2, min_similarity_z=None))
    base = pr.retrieve("honey bee tea")
    with caplog.at_level(logging.INFO, logger="kgpath.methods.pathrag"):
        got = pr.retrieve("honey bee tea", exclude_edge_types=("no_such_type",))
    assert base.paths
    assert "no edge has type ['no_such_type']" in caplog.text
    def ids(result):
        return [[n.id for n in p.nodes] for p in result.paths]

    assert ids(got) == ids(base)


# ---------------------------------------------------------------- documents
def test_chunk_graph_build_of_none_names_it():
    with pytest.raises(GraphError, match="collection of documents, got None"):
        ChunkGraphBuilder(HashingEmbedder()).build(None)


def test_from_documents_of_none_names_it():
    with pytest.raises(GraphError, match="collection of documents, got None"):
        graph_from_documents(None)


def test_from_documents_with_a_non_embedder_names_the_argument():
    with pytest.raises(ConfigError, match="embedder"):
        GraphIndex.from_documents([("p", "Bees make honey.")], embedder="x")


# ---------------------------------------------------------------- embedding cache
def test_cache_dir_that_is_a_file_is_refused_and_kept(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("user data")
    with pytest.raises(ConfigError, match="notes.txt' exists and is not a folder"):
        CachedEmbedder(HashingEmbedder(), f)
    assert f.read_text() == "user data"


def test_cache_dir_that_cannot_be_written_raises_persistence_error(tmp_path, monkeypatch):
    c = CachedEmbedder(HashingEmbedder(), tmp_path / "cache")

    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(c.path))

    monkeypatch.setattr(Path, "mkdir", refuse)
    with pytest.raises(PersistenceError, match="cannot be written .*Permission denied"):
        c.embed_passages(["a"])


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"embedder": None}, "embedder must have .* got None"),
    ({"cache_dir": None}, "cache_dir must be a folder path, got None"),
    ({"cache_key": 5}, "cache_key must be a non-empty str or None, got 5"),
])
def test_cached_embedder_arguments_are_checked(tmp_path, kwargs, named):
    args = {"embedder": HashingEmbedder(), "cache_dir": tmp_path, **kwargs}
    with pytest.raises(ConfigError, match=named):
        CachedEmbedder(args.pop("embedder"), args.pop("cache_dir"), **args)


@pytest.mark.parametrize(("bad", "named"), [(None, r"texts\[1\] must be a str, got None"),
                                            (b"a", r"texts\[1\] must be a str, got b'a'")])
def test_cached_embedder_refuses_non_str_texts(tmp_path, bad, named):
    with pytest.raises(EmbeddingError, match=named):
        CachedEmbedder(HashingEmbedder(), tmp_path).embed_passages(["a", bad])


class _NaNAfterFirst(HashingEmbedder):
    def embed_passages(self, texts):
        out = super().embed_passages(texts)
        out[1:] = np.nan
        return out


def test_cached_embedder_never_caches_nan_rows(tmp_path):
    c = CachedEmbedder(_NaNAfterFirst(), tmp_path)
    with pytest.raises(EmbeddingError, match="NaN or inf for 2 of 3 texts, first 'b'"):
        c.embed_passages(["a", "b", "c"])
    assert list(tmp_path.rglob("*.npz")) == []


def test_segment_the_os_refuses_to_read_is_skipped_not_deleted(tmp_path, monkeypatch):
    emb = HashingEmbedder()
    CachedEmbedder(emb, tmp_path).embed_passages(["a"])
    c = CachedEmbedder(emb, tmp_path)
    (seg,) = c.segments("passage")

    def refuse(path, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(embed_cache.np, "load", refuse)
    got = c.embed_passages(["a"])
    assert seg.exists() and c.corrupt == 0 and c.misses == 1
    np.testing.assert_allclose(got, emb.embed_passages(["a"]))
