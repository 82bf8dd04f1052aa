"""The knowledge graph: records, CSR adjacency + BFS, builders and persistence.

One job per module:

- :mod:`kgpath.graph.model`: :class:`Node`, :class:`Edge`, :class:`Passage` (frozen records);
- :mod:`kgpath.graph.csr`: CSR adjacency arrays, breadth-first search, :class:`BFSResult`;
- :mod:`kgpath.graph.knowledge_graph`: :class:`KnowledgeGraph` (mutation, access, embeddings);
- :mod:`kgpath.graph.builders`: from triples, integer arrays, PathRAG-6 JSON, networkx;
- :mod:`kgpath.graph.columns`: the compact mode (nodes and edges as arrays);
- :mod:`kgpath.graph.persistence`: atomic JSON + ``.npy`` save/load with a format version;
- :mod:`kgpath.graph.column_io`: a compact graph saved and loaded as ``.npy`` columns;
- :mod:`kgpath.graph.saved_files`: reading a saved directory without trusting it.

Every name importable from ``kgpath.graph`` before it became a package is re-exported here.
"""

from kgpath.graph.csr import BFSResult
from kgpath.graph.knowledge_graph import KnowledgeGraph
from kgpath.graph.model import Direction, Edge, Node, Passage
from kgpath.graph.persistence import FORMAT_VERSION

__all__ = [
    "Node",
    "Edge",
    "Passage",
    "KnowledgeGraph",
    "BFSResult",
    "Direction",
    "FORMAT_VERSION",
]
