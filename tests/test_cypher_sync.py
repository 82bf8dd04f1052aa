"""CypherSync and DatabaseIndex on the embedded engine (Ladybug / Kùzu): the generic dialect.

The FalkorDB tests (``tests/test_falkordb_delete.py``) check every property against a
loaded rebuild over random update sequences; here the same statements run through the
base :class:`~kgpath.backends.cypher.CypherDialect` (``OPTIONAL MATCH ... WHERE n IS NULL
CREATE``, whole-row ``SET``, typed tables) on a hand-traced sequence: the database after
each update equals a database loaded from the rebuilt index, and PCR on it equals memory.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from kgpath import GraphIndex, HashingEmbedder, KnowledgeGraph, PathConstrainedRetriever
from kgpath.backends.cypher import CypherSync, DatabaseIndex, EmbeddedCypherDriver, load_graph
from kgpath.backends.cypher.vectors import VectorFile
from kgpath.errors import ConfigError
from kgpath.ingest.extraction import ExtractedEntity, ExtractedRelation, Extraction, OpenExtractor
from kgpath.methods.pcr import CypherPCR

pytest.importorskip("ladybug" if __import__("importlib").util.find_spec("ladybug") else "kuzu")


class Pairs(OpenExtractor):
    """Each capitalised word is an entity; consecutive ones are related ("then")."""

    name = "pairs"

    def extract_passage(self, passage_id: str, text: str) -> Extraction:
        names = [w.strip(".") for w in text.split() if w[:1].isupper()]
        return Extraction(passage_id, tuple(ExtractedEntity(n, "Thing", text) for n in names),
                          tuple(ExtractedRelation(a, "then", b, "svo", text)
                                for a, b in zip(names, names[1:])))


def build(docs, emb):
    return GraphIndex.from_documents(docs, embedder=emb, extractor=Pairs())


def dump(drv) -> dict:
    nodes = drv.run("MATCH (n:KgNode) RETURN n.id AS id, n.idx AS i, n.provenance AS p, "
                    "n.text AS t, n.entity_key AS k")
    edges = drv.run("MATCH (a:KgNode)-[r:KG_EDGE]->(b:KgNode) RETURN a.id AS s, b.id AS t, "
                    "r.relation AS r, r.`rank` AS k, r.provenance AS p")
    passages = drv.run("MATCH (p:KgPassage) RETURN p.id AS id, p.idx AS i, p.entities AS e, "
                       "p.text AS t, p.embedding AS v")
    return {name: sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)
            for name, rows in (("nodes", nodes), ("edges", edges), ("passages", passages))}


def test_embedded_updates_equal_a_loaded_rebuild(tmp_path):
    emb = HashingEmbedder(16)
    drv = EmbeddedCypherDriver.open(tmp_path / "db")
    docs = [("a", "Bohr met Einstein."), ("b", "Einstein visited Warsaw and Paris."),
            ("c", "Curie left Warsaw.")]
    db = DatabaseIndex(build(docs, emb), drv, vector_dir=tmp_path / "v")
    steps = [
        ("delete", ["a"], [docs[1], docs[2]]),
        ("upsert", [("b", "Paris met Bohr.")], [("b", "Paris met Bohr."), docs[2]]),
        ("add", [("d", "Einstein met Curie.")],
         [("b", "Paris met Bohr."), docs[2], ("d", "Einstein met Curie.")]),
    ]
    for i, (kind, arg, final) in enumerate(steps):
        getattr(db, f"{kind}_documents")(arg)
        ref = build(final, emb)
        other = EmbeddedCypherDriver.open(tmp_path / f"ref{i}")
        load_graph(other, ref, vector_dir=tmp_path / f"refv{i}")
        assert dump(drv) == dump(other), kind
        for name in ("nodes", "passages"):  # the vector files follow the update
            a_, b_ = VectorFile(tmp_path / "v", name), VectorFile(tmp_path / f"refv{i}", name)
            assert a_.ids(range(a_.count)) == b_.ids(range(b_.count)), (kind, name)
            assert np.array_equal(a_.vectors(range(a_.count)), b_.vectors(range(b_.count)))
        files = CypherPCR(drv, embedder=emb, schema=db.schema, vectors=tmp_path / "v")
        got = files.retrieve("Who met Curie?", anchor="Warsaw", fallback="global")
        want = PathConstrainedRetriever(ref).retrieve("Who met Curie?", anchor="Warsaw",
                                                      fallback="global")
        assert [h.score for h in got.hits] == pytest.approx([h.score for h in want.hits],
                                                            abs=1e-6)
        pcr, mem = CypherPCR(drv, embedder=emb, schema=db.schema), PathConstrainedRetriever(ref)
        for node in ref.graph.nodes:
            a = mem.retrieve("Who met Curie?", anchor=node.id, direction="both")
            b = pcr.retrieve("Who met Curie?", anchor=node.id, direction="both")
            assert [(h.id, h.path) for h in b.hits] == [(h.id, h.path) for h in a.hits]
        other.close()
    assert db.push().changed is False
    drv.close()


def test_embedded_sync_of_a_bare_graph(tmp_path):
    """A graph edited by hand: an edge added, a node's text changed, a node removed."""
    drv = EmbeddedCypherDriver.open(tmp_path / "db")
    g = KnowledgeGraph.from_triples([("a", "to", "b"), ("b", "to", "c")])
    with pytest.raises(ConfigError, match="vector_dir needs a vector for every node"):
        CypherSync(drv, vector_dir=tmp_path / "v").load(g)  # before anything is written
    sync = CypherSync(drv)
    sync.load(g)
    g.add_edge("a", "c", relation="to")
    g.add_node("b", text="changed")  # merges into the existing node: new text
    report = sync.push(g)
    assert (report.edges_created, report.nodes_created, report.nodes_deleted) == (1, 0, 0)
    assert drv.run("MATCH (n:KgNode) WHERE n.id = 'b' RETURN n.text AS t") == [{"t": "changed"}]
    h = KnowledgeGraph.from_triples([("a", "to", "c")])
    report = sync.push(h)
    assert (report.nodes_deleted, report.edges_deleted) == (1, 2)
    other = EmbeddedCypherDriver.open(tmp_path / "ref")
    load_graph(other, h)
    assert dump(drv) == dump(other)
    drv.close()
    other.close()


def test_embedded_sync_without_passage_nodes(tmp_path):
    """``passage_label=None``: nodes and edges are kept in sync, nothing is written for passages."""
    from kgpath.backends.cypher import CypherSchema

    drv = EmbeddedCypherDriver.open(tmp_path / "db")
    g = KnowledgeGraph.from_triples([("a", "to", "b")], {"p": "a to b"}, provenance=[["p"]])
    sync = CypherSync(drv, schema=CypherSchema(passage_label=None))
    sync.load(g)
    h = KnowledgeGraph.from_triples([("a", "to", "c")], {"q": "a to c"}, provenance=[["q"]])
    report = sync.push(h)
    assert (report.nodes_created, report.nodes_deleted, report.passages_created) == (1, 1, 0)
    assert sorted(r["id"] for r in drv.run("MATCH (n:KgNode) RETURN n.id AS id")) == ["a", "c"]
    drv.close()
