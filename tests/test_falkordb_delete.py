"""Document updates and deletes in a FalkorDB database equal a database loaded from a rebuild.

A :class:`~kgpath.backends.cypher.sync.DatabaseIndex` applies ``add_documents`` /
``upsert_documents`` / ``delete_documents`` to its index and pushes the difference as
parameterised Cypher. Truth: after every step, the database's nodes, edges and passages
(every property: names, texts, provenance, order, embeddings) equal those ``load_graph``
writes for ``GraphIndex.from_documents(final documents)``, and PCR on the database returns
the in-memory result; a hand-traced deletion checks provenance counting row by row.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgpath import GraphIndex, HashingEmbedder, PathConstrainedRetriever
from kgpath.backends.cypher import CypherSchema, FalkorDBDriver, load_graph
from kgpath.backends.cypher.loading import decode_vector
from kgpath.backends.cypher.sync import CypherSync, DatabaseIndex
from kgpath.errors import ConfigError, DocumentError
from kgpath.ingest import ChunkingConfig
from kgpath.ingest.extraction import ExtractedEntity, ExtractedRelation, Extraction, OpenExtractor
from kgpath.methods.pcr import CypherPCR

pytestmark = pytest.mark.falkordb
_names = itertools.count()
CHUNKING = ChunkingConfig(max_chars=50)
SENTENCES = [
    "Marie Curie met Pierre Curie in Paris.",
    "Curie worked in Warsaw.",
    "PARIS is large.",
    "Pierre Curie taught Einstein.",
    "Einstein visited Warsaw and Paris.",
    "Bohr met Einstein.",
    "Niels Bohr lived in Copenhagen.",
]


class Capitalised(OpenExtractor):
    """Runs of capitalised words are entities; consecutive ones are related ("then")."""

    name = "capitalised"

    def extract_passage(self, passage_id: str, text: str) -> Extraction:
        ents, rels = [], []
        for sentence in re.split(r"(?<=\.) ", text):
            names = re.findall(r"[A-Z][A-Za-z]*(?: [A-Z][A-Za-z]*)*", sentence)
            ents += [ExtractedEntity(n, ("Person", "Place")[len(n) % 2], sentence)
                     for n in names]
            rels += [ExtractedRelation(a, "then", b, "svo", sentence)
                     for a, b in zip(names, names[1:])]
        return Extraction(passage_id, tuple(ents), tuple(rels))


def build(docs: list[tuple[str, str]], emb: Any) -> GraphIndex:
    return GraphIndex.from_documents(docs, embedder=emb, extractor=Capitalised(),
                                     chunking=CHUNKING)


def contents(drv: FalkorDBDriver, schema: CypherSchema) -> dict[str, Any]:
    """Every node, edge and passage with every property, embeddings rounded (float32 sums)."""
    def clean(props: dict[str, Any]) -> str:
        p = dict(props)
        if "embedding" in p:  # node vectors: lists; passage vectors: base64 float32
            p["embedding"] = [round(float(x), 5) for x in decode_vector(p["embedding"])]
        return json.dumps(p, sort_keys=True)

    nodes = drv.run(f"MATCH (n:{schema.n}) RETURN properties(n) AS p")
    edges = drv.run(f"MATCH (a:{schema.n})-[r]->(b:{schema.n}) "
                    "RETURN a.id AS s, b.id AS t, properties(r) AS p")
    passages = drv.run("MATCH (p:KgPassage) RETURN properties(p) AS p")
    return {
        "nodes": sorted(clean(r["p"]) for r in nodes),
        "edges": sorted((r["s"], r["t"], clean(r["p"])) for r in edges),
        "passages": sorted(clean(r["p"]) for r in passages),
    }


def assert_same_database(db: DatabaseIndex, docs: list[tuple[str, str]], scratch, emb) -> None:
    """The bound database equals one loaded from a rebuild; PCR on it equals memory."""
    got = contents(db.driver, db.schema)
    if not docs:
        assert got == {"nodes": [], "edges": [], "passages": []}
        return
    ref = build(docs, emb)
    load_graph(scratch, ref, replace=True)
    assert got == contents(scratch, db.schema)
    pcr = CypherPCR(db.driver, embedder=emb, schema=db.schema)
    mem = PathConstrainedRetriever(ref)
    for node in list(ref.graph.nodes)[:3]:
        a, b = mem.retrieve("Who met Einstein?", anchor=node.id, direction="both", k=4), \
            pcr.retrieve("Who met Einstein?", anchor=node.id, direction="both", k=4)
        assert [(h.id, h.hops, h.path) for h in b.hits] == [(h.id, h.hops, h.path)
                                                             for h in a.hits]


def apply(model: list[tuple[str, str]], db: DatabaseIndex, op: tuple[Any, ...]) -> None:
    kind, doc_id = op[0], op[1]
    known = dict(model)
    if kind == "delete":
        if doc_id not in known:
            with pytest.raises(DocumentError):
                db.delete_documents([doc_id])
            return
        db.delete_documents([doc_id])
        model[:] = [d for d in model if d[0] != doc_id]
        return
    text = op[2]
    if kind == "add" and doc_id in known and known[doc_id] != text:
        with pytest.raises(DocumentError):
            db.add_documents([(doc_id, text)])
        return
    getattr(db, f"{kind}_documents")([(doc_id, text)])
    if doc_id in known:
        model[:] = [(d, text if d == doc_id else t) for d, t in model]
    else:
        model.append((doc_id, text))


def test_delete_hand_traced_provenance_counting(falkordb_graphs):
    """Docs a: "Bohr met Einstein." / b: "Einstein visited Warsaw and Paris."

    Deleting a removes Bohr and the edge Bohr->Einstein; Einstein stays, citing only b's
    passage; Warsaw, Paris and their edges are untouched except for their order.
    """
    emb = HashingEmbedder(32)
    drv, scratch = falkordb_graphs(), falkordb_graphs()
    db = DatabaseIndex(build([("a", "Bohr met Einstein."),
                              ("b", "Einstein visited Warsaw and Paris.")], emb), drv)
    before = {r["id"]: json.loads(r["prov"]) for r in drv.run(
        "MATCH (n:KgNode) RETURN n.id AS id, n.provenance AS prov")}
    assert before == {"Bohr": ["a"], "Einstein": ["a", "b"], "Warsaw": ["b"], "Paris": ["b"]}
    db.delete_documents(["a"])
    rep = db.last_push
    assert (rep.nodes_deleted, rep.edges_deleted, rep.passages_deleted) == (1, 1, 1)
    assert rep.nodes_created == rep.edges_created == rep.passages_created == 0
    after = {r["id"]: (json.loads(r["prov"]), r["idx"]) for r in drv.run(
        "MATCH (n:KgNode) RETURN n.id AS id, n.provenance AS prov, n.idx AS idx")}
    assert after == {"Einstein": (["b"], 0), "Warsaw": (["b"], 1), "Paris": (["b"], 2)}
    edges = sorted((r["s"], r["t"], r["rank"]) for r in drv.run(
        "MATCH (a)-[r:KG_EDGE]->(b) RETURN a.id AS s, b.id AS t, r.rank AS rank"))
    assert edges == [("Einstein", "Warsaw", 0), ("Warsaw", "Paris", 1)]
    assert db.push().changed is False  # nothing left to write
    assert_same_database(db, [("b", "Einstein visited Warsaw and Paris.")], scratch, emb)
    db.upsert_documents([("b", "Bohr met Einstein.")])
    assert_same_database(db, [("b", "Bohr met Einstein.")], scratch, emb)
    db.delete_documents(["b"])
    assert_same_database(db, [], scratch, emb)
    db.add_documents([("c", "Niels Bohr lived in Copenhagen.")])
    assert_same_database(db, [("c", "Niels Bohr lived in Copenhagen.")], scratch, emb)


def test_delete_push_is_idempotent_and_survives_a_retry(falkordb_graphs):
    """A push whose statements already ran (a retry after a lost answer) changes nothing."""
    emb = HashingEmbedder(32)
    drv, scratch = falkordb_graphs(), falkordb_graphs()
    index = build([("a", SENTENCES[0]), ("b", SENTENCES[3])], emb)
    db = DatabaseIndex(index, drv)
    stale = db.sync._written
    db.delete_documents(["a"])
    db.sync._written = stale  # as if the digests had not been replaced after the writes
    db.push()  # every statement again: creation only when absent, SET of whole rows
    assert_same_database(db, [("b", SENTENCES[3])], scratch, emb)


def test_delete_sync_refuses_what_it_cannot_identify(falkordb_graphs):
    with pytest.raises(ConfigError, match="edge_order_property"):
        CypherSync(falkordb_graphs(), schema=CypherSchema(edge_order_property=None))
    with pytest.raises(ConfigError, match="before load"):
        CypherSync(falkordb_graphs()).push(build([("a", SENTENCES[0])], HashingEmbedder(8)))


TEXTS = st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=3).map(" ".join)
IDS = st.sampled_from(["a", "b", "c"])
OPS = st.one_of(
    st.tuples(st.just("add"), IDS, TEXTS),
    st.tuples(st.just("upsert"), IDS, TEXTS),
    st.tuples(st.just("delete"), IDS),
)


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(start=st.lists(st.tuples(IDS, TEXTS), min_size=1, max_size=3, unique_by=lambda d: d[0]),
       ops=st.lists(OPS, min_size=1, max_size=5))
def test_delete_any_sequence_of_updates_equals_a_loaded_rebuild(falkordb_graphs, start, ops):
    emb = HashingEmbedder(16)
    drv, scratch = falkordb_graphs(), falkordb_graphs()
    db = DatabaseIndex(build(start, emb), drv)
    model = list(start)
    for op in ops:
        apply(model, db, op)
        assert_same_database(db, model, scratch, emb)


def test_delete_through_a_server_restart_then_push_again(tmp_path):
    """The server dies before an update reaches it: the update raises, the index keeps it,
    and once the server is back (from its snapshot) ``push()`` makes the database equal a
    loaded rebuild."""
    from kgpath import BackendError
    from kgpath.backends.cypher.falkordb_server import FalkorDBServer

    emb = HashingEmbedder(16)
    with FalkorDBServer(tmp_path / "srv") as server:
        drv = FalkorDBDriver.connect(server.host, server.port, "restart", timeout=10,
                                     retries=1, backoff=0.01)
        scratch = FalkorDBDriver.connect(server.host, server.port, "scratch", timeout=10)
        docs = [("a", SENTENCES[0]), ("b", SENTENCES[3]), ("c", SENTENCES[5])]
        db = DatabaseIndex(build(docs, emb), drv)
        server.save()
        server.kill()
        with pytest.raises(BackendError, match="unreachable"):
            db.delete_documents(["a"])
        assert "a" not in db.index.ledger.documents  # the index has the update
        server.start()  # loads the snapshot: the database is as before the update
        db.push()
        assert_same_database(db, docs[1:], scratch, emb)
        drv.close()
        scratch.close()


async def test_delete_async_updates_equal_sync_ones(falkordb_graphs):
    emb = HashingEmbedder(16)
    drv, scratch = falkordb_graphs(), falkordb_graphs()
    db = DatabaseIndex(build([("a", SENTENCES[0]), ("b", SENTENCES[3])], emb), drv)
    await db.aupsert_documents([("a", SENTENCES[1])])
    await db.aadd_documents([("c", SENTENCES[6])])
    await db.adelete_documents(["b"])
    assert_same_database(db, [("a", SENTENCES[1]), ("c", SENTENCES[6])], scratch, emb)
