"""A graph in a Cypher database: identifiers, dialects, drivers, schema, loading, queries.

One module per job:

* :mod:`~kgpath.backends.cypher.identifiers` - the only text spliced into queries
  (validated, back-quoted identifiers; validated depth bounds);
* :mod:`~kgpath.backends.cypher.dialects` - :class:`KuzuDialect` (Kùzu/Ladybug),
  :class:`Neo4jDialect`; a new engine is one subclass of :class:`CypherDialect`;
* :mod:`~kgpath.backends.cypher.drivers` - :class:`EmbeddedCypherDriver`,
  :class:`Neo4jDriver`, :func:`as_cypher_driver`, :func:`register_driver`;
* :mod:`~kgpath.backends.cypher.schema` - :class:`CypherSchema` and row <-> record mapping;
* :mod:`~kgpath.backends.cypher.loading` - :func:`load_graph`;
* :mod:`~kgpath.backends.cypher.queries` - parameterised reachability (Eq. 1 of the PCR
  paper), one-hop expansion, batched neighbour pairs and degrees, lookups, and the
  BFS-order rule that makes the result equal the in-memory one;
* :mod:`~kgpath.backends.cypher.falkordb` - :class:`FalkorDBDialect` and the pooled,
  retrying :class:`FalkorDBDriver` (a FalkorDB server over the network);
* :mod:`~kgpath.backends.cypher.sync` - :class:`CypherSync` (write a graph, then only
  what changed) and :class:`DatabaseIndex` (a ``GraphIndex`` whose document updates
  reach the database);
* :mod:`~kgpath.backends.cypher.backend` - :class:`CypherBackend`, the
  :class:`~kgpath.backends.base.GraphBackend` over a database (with the
  :class:`~kgpath.backends.base.VectorSearch` and
  :class:`~kgpath.backends.base.NeighbourhoodPushDown` capabilities).

Methods keep their database code in their own packages (PCR's ``CypherPCR`` in
``kgpath.methods.pcr.cypher``, PathRAG's pushed-down pool in ``kgpath.methods.pathrag.cypher``);
nothing here is specific to one method.

The database engines are optional (``pip install 'kgpath[graphdb]'``, ``kgpath[neo4j]`` or
``kgpath[falkordb]``) and imported only when a database is opened.
"""

from kgpath.backends.cypher.backend import CypherBackend, CypherTree, NodeRow
from kgpath.backends.cypher.dialects import CypherDialect, KuzuDialect, Neo4jDialect
from kgpath.backends.cypher.drivers import (
    CypherDriver,
    EmbeddedCypherDriver,
    Neo4jDriver,
    as_cypher_driver,
    register_driver,
)
from kgpath.backends.cypher.falkordb import FalkorDBDialect, FalkorDBDriver
from kgpath.backends.cypher.identifiers import quote_identifier
from kgpath.backends.cypher.loading import load_graph
from kgpath.backends.cypher.queries import (
    Step,
    adjacent_pairs,
    bfs_order,
    expand_one_hop,
    fetch_nodes,
    fetch_passages,
    order_and_degree,
    reachable_hops,
)
from kgpath.backends.cypher.schema import CypherSchema
from kgpath.backends.cypher.sync import CypherSync, DatabaseIndex, SyncReport

__all__ = [
    "CypherBackend",
    "CypherDialect",
    "CypherDriver",
    "CypherSchema",
    "CypherSync",
    "DatabaseIndex",
    "CypherTree",
    "EmbeddedCypherDriver",
    "FalkorDBDialect",
    "FalkorDBDriver",
    "KuzuDialect",
    "Neo4jDialect",
    "Neo4jDriver",
    "NodeRow",
    "Step",
    "SyncReport",
    "adjacent_pairs",
    "as_cypher_driver",
    "bfs_order",
    "expand_one_hop",
    "fetch_nodes",
    "fetch_passages",
    "load_graph",
    "order_and_degree",
    "quote_identifier",
    "reachable_hops",
    "register_driver",
]
