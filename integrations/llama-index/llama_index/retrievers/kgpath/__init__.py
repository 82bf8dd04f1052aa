"""LlamaIndex retrievers for kgpath graph-constrained retrieval.

Every retriever is a :class:`KgpathRetriever` over the framework-free core
(:class:`kgpath.facade.EvidenceRetriever`) and returns ``NodeWithScore`` objects whose text
is the evidence (source passages by default) and whose metadata is
:meth:`kgpath.evidence.Evidence.metadata`, the same keys as the LangChain adapter.

:class:`KgpathEmbedding` is kgpath's embedder (default the bundled offline model) as a
LlamaIndex ``BaseEmbedding``, sharing passage vectors with the kgpath retrievers.
:class:`LlamaIndexEmbedder` and :class:`LlamaIndexLLM` wrap LlamaIndex models for the core;
a ``BaseEmbedding`` passed straight to the core is wrapped through this distribution's
``kgpath.embedder_adapters`` entry point
(:func:`llama_index.retrievers.kgpath.embeddings.wrap_embed_model`).

:class:`KgpathIndex` is a durable, updatable kgpath index with LlamaIndex's index methods
(``insert``, ``delete_ref_doc``, ``refresh_ref_docs``, ``persist``, ``as_retriever``,
``as_query_engine``). :class:`KgpathSpacyExtractor` is kgpath's offline spaCy extractor as a
``PropertyGraphIndex`` ``kg_extractors`` component.
"""

from llama_index.retrievers.kgpath._base import KgpathQueryBundle, evidence_to_node
from llama_index.retrievers.kgpath.embeddings import KgpathEmbedding, LlamaIndexEmbedder
from llama_index.retrievers.kgpath.index import KgpathIndex
from llama_index.retrievers.kgpath.kg_extractor import KgpathSpacyExtractor
from llama_index.retrievers.kgpath.llms import LlamaIndexLLM
from llama_index.retrievers.kgpath.postprocessors import (
    PathOrderPostprocessor,
    SufficiencyPostprocessor,
    pathrag_query_engine,
)
from llama_index.retrievers.kgpath.prompts import (
    C2RAG_EVIDENCE_PROMPT,
    C2RAG_PLANNER_PROMPT,
    PATHRAG_KEYWORD_TEMPLATE,
    PATHRAG_QA_TEMPLATE,
)
from llama_index.retrievers.kgpath.property_graph import (
    PathRAGSubRetriever,
    PCRSubRetriever,
    knowledge_graph_from_property_graph_store,
    knowledge_graph_to_property_graph_store,
)
from llama_index.retrievers.kgpath.retrievers import (
    C2RAGRetriever,
    GraphAugmentedRetriever,
    KgpathRetriever,
    KGTraversalRetriever,
    PathConstrainedRetriever,
    PathRAGRetriever,
    SchemaGuidedRetriever,
)
from llama_index.retrievers.kgpath.schema import (
    SchemaDecomposeQueryTransform,
    SchemaSubQuestionRetriever,
    graph_from_schema_llm_output,
    schema_to_llamaindex_kwargs,
)

__all__ = [
    "C2RAG_EVIDENCE_PROMPT",
    "C2RAG_PLANNER_PROMPT",
    "C2RAGRetriever",
    "GraphAugmentedRetriever",
    "KGTraversalRetriever",
    "KgpathEmbedding",
    "KgpathIndex",
    "KgpathQueryBundle",
    "KgpathRetriever",
    "KgpathSpacyExtractor",
    "LlamaIndexEmbedder",
    "LlamaIndexLLM",
    "PATHRAG_KEYWORD_TEMPLATE",
    "PATHRAG_QA_TEMPLATE",
    "PCRSubRetriever",
    "PathConstrainedRetriever",
    "PathOrderPostprocessor",
    "PathRAGRetriever",
    "PathRAGSubRetriever",
    "SchemaDecomposeQueryTransform",
    "SchemaGuidedRetriever",
    "SchemaSubQuestionRetriever",
    "SufficiencyPostprocessor",
    "evidence_to_node",
    "graph_from_schema_llm_output",
    "knowledge_graph_from_property_graph_store",
    "knowledge_graph_to_property_graph_store",
    "pathrag_query_engine",
    "schema_to_llamaindex_kwargs",
]
