"""kgpath: graph-constrained retrieval with a framework-free core.

``kgpath.__all__`` is what a user needs (pinned by ``tests/test_public_api.py``): the graph,
the six methods with their configs, the evidence contract, the offline ingestion, the
model protocols with their bundled backends, and the errors. Everything else lives in its
module (``kgpath.methods.pathrag``, ``kgpath.index``, ...); there is no compatibility layer.

Adapters for LlamaIndex and LangChain live in their own distributions
(``llama-index-retrievers-kgpath``, ``langchain-kgpath``).
"""

from __future__ import annotations

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
from kgpath.methods.augmented import AugmentedConfig, GraphAugmentedRetriever
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
    "AugmentedConfig",
    "C2RAGConfig",
    "ConstraintCheckedRetriever",
    "GraphAugmentedRetriever",
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
