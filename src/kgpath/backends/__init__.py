"""Graph backends: where PCR's graph lives (:class:`GraphBackend`).

* :class:`InMemoryBackend` - CSR arrays of a :class:`~kgpath.graph.KnowledgeGraph`;
* :class:`CypherBackend` - a Cypher database (Kùzu/Ladybug embedded, Neo4j), see
  :mod:`kgpath.backends.cypher`.

:class:`~kgpath.methods.pcr.PathConstrainedRetriever` takes either; ``CypherPCR`` (in
the Cypher backend) is PCR over a :class:`CypherBackend`.
"""

from kgpath.backends.base import BFSTree, GraphBackend, parent_chain
from kgpath.backends.cypher import (
    CypherBackend,
    CypherDialect,
    CypherDriver,
    CypherSchema,
    CypherTree,
    EmbeddedCypherDriver,
    KuzuDialect,
    Neo4jDialect,
    Neo4jDriver,
    NodeRow,
    Step,
    as_cypher_driver,
    bfs_order,
    expand_one_hop,
    fetch_nodes,
    fetch_passages,
    load_graph,
    quote_identifier,
    reachable_hops,
    register_driver,
)
from kgpath.backends.memory import InMemoryBackend

__all__ = [
    "BFSTree",
    "CypherBackend",
    "CypherDialect",
    "CypherDriver",
    "CypherSchema",
    "CypherTree",
    "EmbeddedCypherDriver",
    "GraphBackend",
    "InMemoryBackend",
    "KuzuDialect",
    "Neo4jDialect",
    "Neo4jDriver",
    "NodeRow",
    "Step",
    "as_cypher_driver",
    "bfs_order",
    "expand_one_hop",
    "fetch_nodes",
    "fetch_passages",
    "load_graph",
    "parent_chain",
    "quote_identifier",
    "reachable_hops",
    "register_driver",
]
