"""Tenants sharing one FalkorDB graph are separated inside the queries (their own labels).

Two tenants mention the same entities (same node ids) in different documents. Each is
loaded and updated through its own :meth:`CypherSchema.for_tenant` schema into one graph;
PCR and graph-augmented retrieval for a tenant equal the in-memory methods over that
tenant's documents alone (so nothing of the other tenant is returned, traversed or
scored), and an update of one tenant leaves the other's rows untouched.
"""

from __future__ import annotations

import re

import pytest

from kgpath import GraphIndex, HashingEmbedder, PathConstrainedRetriever
from kgpath.backends.cypher import CypherSchema, DatabaseIndex
from kgpath.errors import ConfigError
from kgpath.ingest.extraction import ExtractedEntity, ExtractedRelation, Extraction, OpenExtractor
from kgpath.methods.augmented import GraphAugmentedRetriever
from kgpath.methods.augmented.cypher import CypherAugmented
from kgpath.methods.pcr import CypherPCR

pytestmark = pytest.mark.falkordb

DOCS = {
    "acme": [("a1", "Marie Curie met Pierre Curie in Paris."), ("a2", "Curie worked in Warsaw.")],
    "globex": [("g1", "Pierre Curie taught Einstein in Paris."),
               ("g2", "Niels Bohr met Einstein in Copenhagen.")],
}


class Capitalised(OpenExtractor):
    name = "capitalised"

    def extract_passage(self, passage_id: str, text: str) -> Extraction:
        names = re.findall(r"[A-Z][a-z]+(?: [A-Z][a-z]+)*", text)
        return Extraction(passage_id, tuple(ExtractedEntity(n, "Thing", text) for n in names),
                          tuple(ExtractedRelation(a, "then", b, "svo", text)
                                for a, b in zip(names, names[1:])))


def build(docs, emb):
    return GraphIndex.from_documents(docs, embedder=emb, extractor=Capitalised())


def rows(drv, schema):
    return sorted(map(repr, drv.run(
        f"MATCH (n:{schema.n}) OPTIONAL MATCH (n)-[r]->(m) "
        "RETURN properties(n) AS n, properties(r) AS r, m.id AS m")))


def test_tenants_share_a_graph_and_never_see_each_other(falkordb_driver):
    emb = HashingEmbedder(32)
    dbs = {t: DatabaseIndex(build(d, emb), falkordb_driver, schema=CypherSchema().for_tenant(t))
           for t, d in DOCS.items()}
    shared = {n.id for n in dbs["acme"].index.graph.nodes} & {
        n.id for n in dbs["globex"].index.graph.nodes}
    assert {"Pierre Curie", "Paris"} <= shared  # the same ids in both tenants
    for tenant, db in dbs.items():
        own = build(DOCS[tenant], emb)
        pcr = CypherPCR(falkordb_driver, embedder=emb, schema=db.schema)
        mem = PathConstrainedRetriever(own)
        for anchor in sorted(shared):
            a = mem.retrieve("Who met Einstein?", anchor=anchor, direction="both")
            b = pcr.retrieve("Who met Einstein?", anchor=anchor, direction="both")
            assert [(h.id, h.path, h.node.provenance) for h in b.hits] == [
                (h.id, h.path, h.node.provenance) for h in a.hits]
        aug = CypherAugmented(falkordb_driver, embedder=emb, schema=db.schema)
        for q in ("Where did Pierre Curie teach?", "Who met Einstein in Paris?"):
            x, y = GraphAugmentedRetriever(own).retrieve(q), aug.retrieve(q)
            assert y.passage_ids == x.passage_ids
            assert y.passage_ids and set(y.passage_ids) <= set(own.graph.passages)
    before = rows(falkordb_driver, dbs["globex"].schema)
    dbs["acme"].delete_documents(["a1"])
    dbs["acme"].add_documents([("a3", "Einstein visited Paris.")])
    assert rows(falkordb_driver, dbs["globex"].schema) == before
    got = CypherPCR(falkordb_driver, embedder=emb, schema=dbs["acme"].schema).retrieve(
        "Einstein", anchor="Paris", direction="both")
    want = PathConstrainedRetriever(build([DOCS["acme"][1], ("a3", "Einstein visited Paris.")],
                                          emb)).retrieve("Einstein", anchor="Paris",
                                                         direction="both")
    assert [(h.id, h.path) for h in got.hits] == [(h.id, h.path) for h in want.hits]


@pytest.mark.parametrize("bad", ["", "a-b", "x y", "é", None])
def test_tenant_names_are_checked(bad):
    with pytest.raises(ConfigError, match="tenant name"):
        CypherSchema().for_tenant(bad)
