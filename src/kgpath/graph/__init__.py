"""The knowledge graph as data: records, CSR adjacency + BFS, node vectors, persistence.

One job per module:

- :mod:`kgpath.graph.model`: :class:`Node`, :class:`Edge`, :class:`Passage` (frozen records);
- :mod:`kgpath.graph.csr`: CSR adjacency arrays, breadth-first search, :class:`BFSResult`;
- :mod:`kgpath.graph.knowledge_graph`: :class:`KnowledgeGraph` (mutation, access, queries);
- :mod:`kgpath.graph.vectors`: :class:`NodeVectors`, the stored node vectors
  (``graph.vectors``);
- :mod:`kgpath.graph.builders`: from triples and integer arrays (``KnowledgeGraph.from_*``);
- :mod:`kgpath.graph.convert`: :func:`from_networkx`, :func:`to_networkx`,
  :func:`from_pathrag6` (module functions: the graph is data, converters are functions);
- :mod:`kgpath.graph.columns`: the compact mode (nodes and edges as arrays);
- :mod:`kgpath.graph.persistence`: atomic JSON + ``.npy`` save/load with a format version;
- :mod:`kgpath.graph.column_io`: a compact graph saved and loaded as ``.npy`` columns;
- :mod:`kgpath.graph.saved_files`: reading a saved directory without trusting it.

This package imports nothing of kgpath but :mod:`kgpath.errors` (``tests/test_layering.py``):
documents become a graph in :mod:`kgpath.ingest` and :class:`kgpath.index.GraphIndex`, names
are looked up by the index (:func:`kgpath.index.linking.find_by_name`).
"""

from kgpath.graph.convert import from_networkx, from_pathrag6, to_networkx
from kgpath.graph.csr import BFSResult
from kgpath.graph.knowledge_graph import KnowledgeGraph
from kgpath.graph.model import Direction, Edge, Node, Passage
from kgpath.graph.persistence import FORMAT_VERSION
from kgpath.graph.vectors import NodeVectors

__all__ = [
    "Node",
    "Edge",
    "Passage",
    "KnowledgeGraph",
    "NodeVectors",
    "BFSResult",
    "Direction",
    "FORMAT_VERSION",
    "from_networkx",
    "from_pathrag6",
    "to_networkx",
]
