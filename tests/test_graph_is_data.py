"""The graph is data (issue 20): a small KnowledgeGraph, vectors as one attribute, documents
through the index, and a ``graph`` package that imports nothing above it."""

from __future__ import annotations

import ast
import asyncio
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from kgpath import ConfigError, EmbeddingError, GraphError, HashingEmbedder, KnowledgeGraph
from kgpath.graph import NodeVectors, from_networkx, to_networkx
from kgpath.index import GraphIndex, find_by_name
from kgpath.ingest import Extraction
from kgpath.ingest.extraction import ExtractedEntity, ExtractedRelation, OpenExtractor

SRC = Path(__file__).resolve().parents[1] / "src" / "kgpath"
SAVED = Path(__file__).resolve().parent / "data" / "saved_before_redesign"


# ---------------------------------------------------------------------- shape
def test_knowledge_graph_has_at_most_25_public_members() -> None:
    public = [n for n in dir(KnowledgeGraph) if not n.startswith("_")]
    assert len(public) <= 25, public
    gone = {"from_documents", "add_documents", "to_networkx", "from_networkx", "from_pathrag6",
            "embeddings", "embedding_dim", "embedding_owner", "set_embeddings",
            "missing_embeddings", "find_by_name", "ids_to_indices", "in_degree", "out_degree"}
    assert not gone & set(public)


def _kgpath_imports(package: str) -> dict[str, set[str]]:
    """``module -> kgpath modules it imports``: every statement, lazy and TYPE_CHECKING too."""
    found: dict[str, set[str]] = {}
    for path in sorted((SRC / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{path}: relative import"
                names.add(node.module or "")
                names.update(f"{node.module}.{a.name}" for a in node.names)
        found[str(path.relative_to(SRC))] = {n for n in names if n.split(".")[0] == "kgpath"}
    return found


def _top(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_graph_imports_only_errors_and_itself() -> None:
    bad = {m: sorted(n for n in names if _top(n) not in ("errors", "_files", "graph"))
           for m, names in _kgpath_imports("graph").items()}
    assert not {m: b for m, b in bad.items() if b}


def test_index_imports_only_graph_search_ingest_embeddings_and_the_bottom() -> None:
    allowed = {"index", "graph", "search", "ingest", "embeddings", "embed_cache", "errors",
               "_config", "_files",
               "_progress", "_parallel", "_singleflight", "_tables", "tokens", "token_engine"}
    bad = {m: sorted(n for n in names if _top(n) not in allowed)
           for m, names in _kgpath_imports("index").items()}
    assert not {m: b for m, b in bad.items() if b}


# ---------------------------------------------------------------------- vectors
def test_vectors_are_one_attribute_over_the_graphs_storage() -> None:
    g = KnowledgeGraph.from_triples([("a", "r", "b")])
    v = g.vectors
    assert isinstance(v, NodeVectors)
    assert v.dim is None and v.owner is None and v.missing() == [0, 1]
    with pytest.raises(EmbeddingError, match=r"2 node\(s\) have no embedding"):
        _ = v.matrix
    version = g.version
    g.vectors.set({"b": [0.0, 2.0]}, owner={"name": "m", "dim": 2, "fingerprint": "f"})
    assert g.version == version + 1
    assert g.vectors.dim == 2 and g.vectors.missing() == [0]
    assert g.vectors.owner == {"name": "m", "dim": 2, "fingerprint": "f"}
    g.vectors.set({"a": [1.0, 0.0]})  # another (unknown) owner: the owner becomes unknown
    assert g.vectors.owner is None
    np.testing.assert_array_equal(g.vectors.matrix, [[1, 0], [0, 2]])
    g.add_node("c")  # a new node has no vector yet
    assert g.vectors.missing() == [2]
    g.add_node("a", text="edited")  # a changed text drops the vector
    assert g.vectors.missing() == [0, 2]
    with pytest.raises(EmbeddingError, match="dimension 3, expected 2"):
        g.vectors.set({"c": [1.0, 2.0, 3.0]})
    with pytest.raises(EmbeddingError, match=r"shape \(3, d\)"):
        g.vectors.set(np.ones((2, 2), np.float32))
    g.vectors.set(np.eye(3, 2, dtype=np.float32), owner={"name": "x"})
    assert g.vectors.missing() == [] and g.vectors.owner == {"name": "x"}


def test_a_graph_saved_before_the_redesign_loads_and_saves_the_same_bytes(tmp_path) -> None:
    for name in ("objects", "compact"):
        g = KnowledgeGraph.load(SAVED / name)
        g.save(tmp_path / name)
        for f in sorted(p.name for p in (SAVED / name).iterdir()):
            old, new = (SAVED / name / f).read_bytes(), (tmp_path / name / f).read_bytes()
            if f == "manifest.json":
                a, b = json.loads(old), json.loads(new)
                a.pop("saved_ns"), b.pop("saved_ns")
                assert a == b, name
            else:
                assert old == new, f"{name}/{f}"


def test_the_old_save_keeps_its_vectors_and_their_owner(monkeypatch) -> None:
    g = KnowledgeGraph.load(SAVED / "objects")
    assert g.vectors.owner is not None and g.vectors.owner["dim"] == 8
    emb = HashingEmbedder(8)  # the saved vectors are this embedder's node-text vectors
    want = emb.embed_passages([n.search_text for n in g.nodes])
    np.testing.assert_allclose(g.vectors.matrix, want, atol=1e-6)
    seen: list[str] = []
    real = HashingEmbedder.embed_passages

    def counting(self, texts):  # type: ignore[no-untyped-def]
        seen.extend(texts)
        return real(self, texts)

    monkeypatch.setattr(HashingEmbedder, "embed_passages", counting)
    index = GraphIndex(g, HashingEmbedder(8)).build()  # the same embedder: vectors shared
    assert set(seen) <= {g.vectors.owner["probe"]}  # at most the owner's probe, no node
    np.testing.assert_array_equal(index.vector_index.vectors, g.vectors.matrix)
    c = KnowledgeGraph.load(SAVED / "compact")
    assert c.compact and c.vectors.dim == 2 and c.vectors.missing() == [1]
    assert c.vectors.owner is None


# ---------------------------------------------------------------------- structure
def test_degree_in_every_direction(chain_graph: KnowledgeGraph) -> None:
    out, inn, both = (chain_graph.degree(d) for d in ("out", "in", "both"))
    assert out.tolist() == [1, 1, 1, 1, 1, 0] and inn.tolist() == [0, 2, 1, 1, 0, 1]
    assert both.tolist() == [len(chain_graph.neighbors(i, "both")) for i in range(6)]
    with pytest.raises(ConfigError):
        chain_graph.degree("sideways")  # type: ignore[arg-type]


def test_converters_are_module_functions_that_round_trip_vectors() -> None:
    g = KnowledgeGraph.from_triples([("a", "r", "b")], {"p": "a r b"})
    g.vectors.set({"a": [1.0, 0.0]})
    back = from_networkx(to_networkx(g))
    assert back.vectors.missing() == [1] and back.vectors.dim == 2
    assert [(e.source, e.relation, e.target) for e in back.edges] == [("a", "r", "b")]
    assert back.passage("p").text == "a r b"


def test_find_by_name_follows_the_graphs_version() -> None:
    g = KnowledgeGraph()
    g.add_node("x", name="Tower of  London")
    assert find_by_name(g, " tower OF london") == [0]
    g.add_node("y", name="tower of london")
    assert find_by_name(g, "Tower of London") == [0, 1]
    g.add_node("x", name="Tower")
    assert find_by_name(g, "tower of london") == [1] and find_by_name(g, "TOWER") == [0]


# ---------------------------------------------------------------------- documents
class _Script(OpenExtractor):
    """Extractor: every passage names its words as entities, chained by ``next``."""

    name = "script"

    def extract_passage(self, passage_id: str, text: str) -> Extraction:
        names = text.rstrip(".").split()
        return Extraction(
            passage_id, tuple(ExtractedEntity(n, "Thing", text) for n in names),
            tuple(ExtractedRelation(a, "next", b, "svo", text) for a, b in zip(names, names[1:])))


DOCS = [("d1", "Alpha Beta."), ("d2", "Beta Gamma.")]


def test_graph_index_from_documents_embeds_the_corpus_once() -> None:
    emb = HashingEmbedder(16)
    index = GraphIndex.from_documents(DOCS, embedder=emb, extractor=_Script())
    g = index.graph
    assert index.embedder is emb
    assert [n.id for n in g.nodes] == ["Alpha", "Beta", "Gamma"]
    assert g.vectors.missing() == [] and g.vectors.owner is not None
    p = emb.embed_passages(["Alpha Beta.", "Beta Gamma."])
    beta = p.mean(axis=0)
    np.testing.assert_allclose(g.vectors.matrix[1], beta / np.linalg.norm(beta), atol=1e-6)
    np.testing.assert_allclose(g.vectors.matrix[0], p[0] / np.linalg.norm(p[0]), atol=1e-6)
    a = asyncio.run(GraphIndex.afrom_documents(DOCS, embedder=emb, extractor=_Script()))
    assert [n.id for n in a.graph.nodes] == [n.id for n in g.nodes]
    np.testing.assert_allclose(a.graph.vectors.matrix, g.vectors.matrix, atol=1e-6)


def test_graph_index_from_documents_checks_options_before_reading_documents() -> None:
    with pytest.raises(ConfigError, match="embedder"):
        GraphIndex.from_documents(None, embedder="x")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="node_vectors"):
        GraphIndex.from_documents(None, embedder=HashingEmbedder(8),  # type: ignore[arg-type]
                                  node_vectors="mean")  # type: ignore[arg-type]
    with pytest.raises(GraphError, match="collection of documents, got None"):
        GraphIndex.from_documents(None, embedder=HashingEmbedder(8))  # type: ignore[arg-type]


def test_graph_index_add_documents_extracts_only_new_passages_and_equals_a_build() -> None:
    emb = HashingEmbedder(16)
    index = GraphIndex.from_documents(DOCS[:1], embedder=emb, extractor=_Script())
    report = index.add_documents(DOCS, extractor=_Script())
    # d1 is known with the same content (a no-op), d2 is read; the graph is a build's
    assert (report.documents_unchanged, report.passages_new, report.passages_extracted,
            report.nodes_new) == (1, 1, 1, 1)
    built = GraphIndex.from_documents(DOCS, embedder=emb, extractor=_Script()).graph
    assert index.graph.nodes == built.nodes and index.graph.edges == built.edges
    assert index.graph.vectors.missing() == []  # node vectors from the passage vectors
    np.testing.assert_array_equal(index.graph.vectors.matrix, built.vectors.matrix)
    again = asyncio.run(index.aadd_documents([("d3", "Gamma Delta.")], extractor=_Script()))
    assert again.nodes_new == 1 and "Delta" in index.graph


def test_graph_index_over_a_given_graph_adds_by_incremental_ingestion() -> None:
    twin = GraphIndex.from_documents(DOCS[:1], embedder=HashingEmbedder(16),
                                     extractor=_Script()).graph
    index = GraphIndex(twin, HashingEmbedder(16))  # no ledger: the incremental ingestion
    report = index.add_documents(DOCS, extractor=_Script())
    assert (report.passages_unchanged, report.passages_new, report.nodes_new) == (1, 1, 1)
    assert index.graph.vectors.missing() == [2]  # only the new node lacks a vector
    index.build()  # ... and the next build embeds it (its search text)
    assert index.graph.vectors.missing() == []


def test_saving_over_an_old_save_in_place_works(tmp_path) -> None:
    copy = tmp_path / "objects"
    shutil.copytree(SAVED / "objects", copy)
    KnowledgeGraph.load(copy).save(copy)
    assert KnowledgeGraph.load(copy).vectors.dim == 8
