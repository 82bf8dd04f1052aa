"""Graph backends: where a graph lives (:class:`GraphBackend`), and what else it offers.

A small required structure interface with defaults (:mod:`kgpath.backends.base`), plus
optional capabilities a method asks for with ``backend.capability(...)``:
:class:`VectorSearch`, :class:`PassageSearch`, :class:`InProcessGraph`,
:class:`NeighbourhoodPushDown`, :class:`PassageEntityStore`. Two backends ship:

* :class:`InMemoryBackend` - CSR arrays of a :class:`~kgpath.graph.KnowledgeGraph` (every
  capability);
* :class:`CypherBackend` - a Cypher database (Kùzu/Ladybug embedded, Neo4j, FalkorDB), see
  :mod:`kgpath.backends.cypher` (vector search, neighbourhood push-down, passages with
  their entities).

This package imports no method; a method's database code lives in its own package.
"""

from kgpath.backends.base import (
    BackendNames,
    BFSTree,
    EntityRecord,
    GraphBackend,
    InProcessGraph,
    KeyTree,
    NeighbourhoodPushDown,
    PassageEntityStore,
    PassageRecord,
    PassageSearch,
    VectorSearch,
    parent_chain,
)
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
    adjacent_pairs,
    as_cypher_driver,
    bfs_order,
    expand_one_hop,
    fetch_nodes,
    fetch_passages,
    load_graph,
    order_and_degree,
    quote_identifier,
    reachable_hops,
    register_driver,
)
from kgpath.backends.memory import InMemoryBackend

__all__ = [
    "BFSTree",
    "BackendNames",
    "CypherBackend",
    "CypherDialect",
    "CypherDriver",
    "CypherSchema",
    "CypherTree",
    "EmbeddedCypherDriver",
    "EntityRecord",
    "GraphBackend",
    "InMemoryBackend",
    "InProcessGraph",
    "KeyTree",
    "KuzuDialect",
    "Neo4jDialect",
    "Neo4jDriver",
    "NeighbourhoodPushDown",
    "NodeRow",
    "PassageEntityStore",
    "PassageRecord",
    "PassageSearch",
    "Step",
    "VectorSearch",
    "adjacent_pairs",
    "as_cypher_driver",
    "bfs_order",
    "expand_one_hop",
    "fetch_nodes",
    "fetch_passages",
    "load_graph",
    "order_and_degree",
    "parent_chain",
    "quote_identifier",
    "reachable_hops",
    "register_driver",
]
