"""Graph stores: run kgpath methods inside graph databases instead of in memory.

:mod:`kgpath.stores.cypher` pushes PCR's reachability (Eq. 1) and one-hop neighbourhood
expansion into any Cypher engine behind a small driver protocol (an embedded Ladybug/Kùzu
database, a Neo4j server). The database engines are optional: ``pip install 'kgpath[graphdb]'``
(or ``kgpath[neo4j]``); they are imported only when a database is opened.
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
