"""Graph stores: run kgpath methods inside graph databases instead of in memory.

A compatibility layer: the Cypher machinery lives in :mod:`kgpath.backends.cypher`
(identifiers, dialects, drivers, schema, loading, queries, the backend) and
:class:`CypherPCR` is PCR (:mod:`kgpath.methods.pcr`) over a
:class:`~kgpath.backends.cypher.CypherBackend`. The database engines are optional:
``pip install 'kgpath[graphdb]'`` (or ``kgpath[neo4j]``); they are imported only when a
database is opened.
"""

from kgpath.stores.cypher import (
    CypherDialect,
    CypherDriver,
    CypherPCR,
    CypherSchema,
    EmbeddedCypherDriver,
    KuzuDialect,
    Neo4jDialect,
    Neo4jDriver,
    as_cypher_driver,
    expand_one_hop,
    fetch_nodes,
    load_graph,
    quote_identifier,
    reachable_hops,
)

__all__ = [
    "CypherDialect",
    "CypherDriver",
    "CypherPCR",
    "CypherSchema",
    "EmbeddedCypherDriver",
    "KuzuDialect",
    "Neo4jDialect",
    "Neo4jDriver",
    "as_cypher_driver",
    "expand_one_hop",
    "fetch_nodes",
    "load_graph",
    "quote_identifier",
    "reachable_hops",
]
