"""kgpath: graph-constrained retrieval with a framework-free core.

``kgpath.__all__`` is what a user needs (pinned by ``tests/test_public_api.py``): the graph,
the five methods with their configs, the evidence contract, the offline ingestion, the
model protocols with their bundled backends, and the errors. Everything else lives in its
module (``kgpath.methods.pathrag``, ``kgpath.index``, ...); names that were importable from
``kgpath`` before the API was trimmed still are, lazily, for compatibility.

Adapters for LlamaIndex and LangChain live in their own distributions
(``llama-index-retrievers-kgpath``, ``langchain-kgpath``).
"""

from __future__ import annotations

import importlib
from typing import Any

from kgpath.embeddings import (
    Embedder,
    HashingEmbedder,
    LocalEmbedder,
    OpenAIEmbedder,
    default_embedder,
)
from kgpath.errors import (
    BackendError,
    ConfigError,
    EmbeddingError,
    EmptyGraphError,
    GraphError,
    KgpathError,
    MissingDependencyError,
    NodeNotFoundError,
    ParseError,
    PersistenceError,
    QueryError,
)
from kgpath.evidence import Evidence
from kgpath.facade import EvidenceRetriever
from kgpath.graph import Edge, KnowledgeGraph, Node, Passage
from kgpath.index import GraphIndex
from kgpath.llm import LLM, OpenAILLM, ScriptedLLM
from kgpath.methods.c2rag import C2RAGConfig, ConstraintCheckedRetriever
from kgpath.methods.pathrag import PathRAGConfig, PathRAGRetriever
from kgpath.methods.pcr import PathConstrainedRetriever, PCRConfig
from kgpath.methods.schema import SchemaGuidedRetriever, SchemaRetrieverConfig
from kgpath.methods.traversal import TraversalConfig, TraversalRetriever
from kgpath.policies import SufficiencyGate
from kgpath.rerank import Reranker

__version__ = "0.1.0"

__all__ = [
    # graph and index
    "Edge",
    "GraphIndex",
    "KnowledgeGraph",
    "Node",
    "Passage",
    # the contract
    "Evidence",
    "EvidenceRetriever",
    # methods
    "C2RAGConfig",
    "ConstraintCheckedRetriever",
    "PCRConfig",
    "PathConstrainedRetriever",
    "PathRAGConfig",
    "PathRAGRetriever",
    "SchemaGuidedRetriever",
    "SchemaRetrieverConfig",
    "SufficiencyGate",
    "TraversalConfig",
    "TraversalRetriever",
    # models
    "Embedder",
    "HashingEmbedder",
    "LLM",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "OpenAILLM",
    "Reranker",
    "ScriptedLLM",
    "default_embedder",
    # errors
    "BackendError",
    "ConfigError",
    "EmbeddingError",
    "EmptyGraphError",
    "GraphError",
    "KgpathError",
    "MissingDependencyError",
    "NodeNotFoundError",
    "ParseError",
    "PersistenceError",
    "QueryError",
    "__version__",
]

# Names importable from ``kgpath`` before the public API was trimmed: still importable
# (resolved on first use), not part of ``__all__``.
_COMPAT: dict[str, str] = {
    "BaseEmbedder": "kgpath.embeddings",
    "LangChainEmbedder": "kgpath.embeddings",
    "LlamaIndexEmbedder": "kgpath.embeddings",
    "LangChainLLM": "kgpath.llm",
    "LlamaIndexLLM": "kgpath.llm",
    "BM25Index": "kgpath.index",
    "VectorIndex": "kgpath.index",
    "CallableReranker": "kgpath.rerank",
    "CrossEncoderReranker": "kgpath.rerank",
    "EmbeddingReranker": "kgpath.rerank",
    "C2RAGResult": "kgpath.methods.c2rag",
    "PATHRAG_LT": "kgpath.methods.pathrag",
    "PathRAGPath": "kgpath.methods.pathrag",
    "PathRAGResult": "kgpath.methods.pathrag",
    "PCRHit": "kgpath.methods.pcr",
    "PCRResult": "kgpath.methods.pcr",
    "DecompositionPlan": "kgpath.methods.schema",
    "SchemaDecomposer": "kgpath.methods.schema",
    "SchemaResult": "kgpath.methods.schema",
    "TraversalResult": "kgpath.methods.traversal",
    "ChunkGraphBuilder": "kgpath.build.chunk_graph",
    "ChunkGraphConfig": "kgpath.build.chunk_graph",
    "build_chunk_graph": "kgpath.build.chunk_graph",
    "ExtractionConfig": "kgpath.build.extract",
    "PatternExtractor": "kgpath.build.extract",
    "SchemaExtractor": "kgpath.build.extract",
    "Hierarchy": "kgpath.build.hierarchy",
    "HierarchyConfig": "kgpath.build.hierarchy",
    "build_hierarchy": "kgpath.build.hierarchy",
    "EvolutionPolicy": "kgpath.build.schema",
    "Schema": "kgpath.build.schema",
    "SchemaError": "kgpath.build.schema",
    "SchemaWarning": "kgpath.build.schema",
    "CypherPCR": "kgpath.stores",
    "CypherSchema": "kgpath.stores",
    "EmbeddedCypherDriver": "kgpath.stores",
    "Neo4jDriver": "kgpath.stores",
}


def __getattr__(name: str) -> Any:
    module = _COMPAT.get(name)
    if module is None:
        raise AttributeError(f"module 'kgpath' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
