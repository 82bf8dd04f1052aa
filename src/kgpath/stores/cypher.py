"""Compatibility re-exports: PCR in a Cypher database.

Everything here lives in :mod:`kgpath.backends.cypher` (one module per job) and
:class:`CypherPCR` in :mod:`kgpath.methods.pcr` (PCR over a
:class:`~kgpath.backends.cypher.CypherBackend`).
"""

from kgpath.backends.cypher import (
    CypherDialect,
    CypherDriver,
    CypherSchema,
    EmbeddedCypherDriver,
    KuzuDialect,
    Neo4jDialect,
    Neo4jDriver,
    Step,
    as_cypher_driver,
    bfs_order,
    expand_one_hop,
    fetch_nodes,
    load_graph,
    quote_identifier,
    reachable_hops,
)
from kgpath.methods.pcr import CypherPCR

__all__ = [
    "CypherSchema",
    "CypherDialect",
    "KuzuDialect",
    "Neo4jDialect",
    "CypherDriver",
    "EmbeddedCypherDriver",
    "Neo4jDriver",
    "as_cypher_driver",
    "load_graph",
    "reachable_hops",
    "fetch_nodes",
    "expand_one_hop",
    "bfs_order",
    "Step",
    "CypherPCR",
    "quote_identifier",
]
