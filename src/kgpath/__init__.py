"""kgpath: graph-constrained retrieval with a framework-free core.

The public API is re-exported here; adapters for LlamaIndex and LangChain live in their
own distributions (``llama-index-retrievers-kgpath``, ``langchain-kgpath``).
"""

from kgpath.build.chunk_graph import ChunkGraphBuilder, ChunkGraphConfig, build_chunk_graph
from kgpath.build.extract import ExtractionConfig, PatternExtractor, SchemaExtractor
from kgpath.build.hierarchy import Hierarchy, HierarchyConfig, build_hierarchy
from kgpath.build.schema import EvolutionPolicy, Schema, SchemaError, SchemaWarning
from kgpath.embeddings import (
    BaseEmbedder,
    Embedder,
    HashingEmbedder,
    LangChainEmbedder,
    LlamaIndexEmbedder,
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
from kgpath.graph import Edge, KnowledgeGraph, Node, Passage
from kgpath.index import BM25Index, GraphIndex, VectorIndex
from kgpath.llm import LLM, LangChainLLM, LlamaIndexLLM, OpenAILLM, ScriptedLLM
from kgpath.methods.c2rag import C2RAGConfig, C2RAGResult, ConstraintCheckedRetriever
from kgpath.methods.pathrag import (
    PATHRAG_LT,
    PathRAGConfig,
    PathRAGPath,
    PathRAGResult,
    PathRAGRetriever,
)
from kgpath.methods.pcr import PathConstrainedRetriever, PCRConfig, PCRHit, PCRResult
from kgpath.methods.schema import (
    DecompositionPlan,
    SchemaDecomposer,
    SchemaGuidedRetriever,
    SchemaResult,
    SchemaRetrieverConfig,
)
from kgpath.methods.traversal import TraversalConfig, TraversalResult, TraversalRetriever
from kgpath.rerank import CallableReranker, CrossEncoderReranker, EmbeddingReranker, Reranker
from kgpath.stores import CypherPCR, CypherSchema, EmbeddedCypherDriver, Neo4jDriver

__version__ = "0.1.0"

__all__ = [
    "CypherPCR",
    "CypherSchema",
    "EmbeddedCypherDriver",
    "Neo4jDriver",
    "BM25Index",
    "BackendError",
    "BaseEmbedder",
    "C2RAGConfig",
    "C2RAGResult",
    "ConstraintCheckedRetriever",
    "CallableReranker",
    "ConfigError",
    "CrossEncoderReranker",
    "Edge",
    "EmbeddingError",
    "EmbeddingReranker",
    "Embedder",
    "EmptyGraphError",
    "GraphError",
    "GraphIndex",
    "HashingEmbedder",
    "KgpathError",
    "KnowledgeGraph",
    "LLM",
    "LangChainEmbedder",
    "LangChainLLM",
    "LlamaIndexEmbedder",
    "LlamaIndexLLM",
    "LocalEmbedder",
    "MissingDependencyError",
    "Node",
    "NodeNotFoundError",
    "OpenAIEmbedder",
    "OpenAILLM",
    "PATHRAG_LT",
    "PCRConfig",
    "PCRHit",
    "PCRResult",
    "ParseError",
    "Passage",
    "PathConstrainedRetriever",
    "PathRAGConfig",
    "PathRAGPath",
    "PathRAGResult",
    "PathRAGRetriever",
    "PersistenceError",
    "QueryError",
    "Reranker",
    "ScriptedLLM",
    "DecompositionPlan",
    "EvolutionPolicy",
    "ExtractionConfig",
    "Hierarchy",
    "HierarchyConfig",
    "PatternExtractor",
    "Schema",
    "SchemaDecomposer",
    "SchemaError",
    "SchemaExtractor",
    "SchemaGuidedRetriever",
    "SchemaResult",
    "SchemaRetrieverConfig",
    "SchemaWarning",
    "build_hierarchy",
    "VectorIndex",
    "__version__",
    "default_embedder",
    "ChunkGraphBuilder",
    "ChunkGraphConfig",
    "build_chunk_graph",
    "TraversalConfig",
    "TraversalResult",
    "TraversalRetriever",
]
