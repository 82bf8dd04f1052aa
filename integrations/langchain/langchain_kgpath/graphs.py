"""LangChain graph objects (``GraphDocument``, ``NetworkxEntityGraph``) to a kgpath graph.

The conversion reads them by attribute and lives in the core
(:mod:`kgpath.ingest.graph_documents`); this module re-exports it under the adapter's name.
"""

from kgpath.ingest.graph_documents import (
    knowledge_graph_from_entity_graph,
    knowledge_graph_from_graph_documents,
)

__all__ = ["knowledge_graph_from_entity_graph", "knowledge_graph_from_graph_documents"]
