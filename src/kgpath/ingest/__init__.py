"""The one construction package: documents -> passages -> extraction -> graph.

Read it in this order:

================================  ===========================================================
module                            what it does
================================  ===========================================================
``documents``                     the one document coercer: strings, ``(id, text)`` pairs,
                                  mappings, LangChain/LlamaIndex documents ->
                                  :class:`SourceDocument`
``chunking``                      the one chunker: :func:`split_sentences`; passages
                                  (:func:`chunk_document`); windows (:func:`sliding_windows`)
``extractor``                     the one extractor protocol (:class:`Extractor`: a template
                                  base, one ``extract_passage`` / ``aextract_passage`` hook
                                  pair per extractor, :meth:`Extractor.add_to_graph` per
                                  record family)
``extraction``                    open family: :class:`Extraction` records, name merging
                                  (:func:`entity_key`), :class:`OpenExtractor`
``spacy_extractor``,              open extractors: :class:`SpacyExtractor` (offline, with
``dependency_relations``,         dependency-path relations), :class:`LLMExtractor`
``llm_extractor``
``schema/``, ``extract/``         schema family: :class:`Schema` (+ evolution),
                                  :class:`SchemaExtractor` (LLM), :class:`PatternExtractor`
                                  (LLM-free), bounded by :func:`assemble_graph`
``assemble``                      :func:`graph_from_documents`: coerce, chunk, extract with
                                  any :class:`Extractor`, add to a graph (incrementally)
``chunk_graph/``                  the semantic chunk graph (windows, similarity edges,
                                  themes, mentions): :func:`build_chunk_graph`,
                                  :func:`chunk_graph_from_documents`
``hierarchy``                     community layers over a built graph (:func:`build_hierarchy`)
================================  ===========================================================

This package imports nothing from ``index``, ``backends``, ``methods``, ``policies`` or the
facade; entity linking (a query-time step) lives in :mod:`kgpath.index.linking`.
"""

from kgpath.ingest.assemble import (
    agraph_from_documents,
    aingest_documents,
    graph_from_documents,
    ingest_documents,
)
from kgpath.ingest.chunk_graph import (
    ChunkGraphBuilder,
    ChunkGraphConfig,
    abuild_chunk_graph,
    build_chunk_graph,
    chunk_graph_from_documents,
)
from kgpath.ingest.chunking import (
    ChunkingConfig,
    TextPassage,
    chunk_document,
    sliding_windows,
    split_sentences,
)
from kgpath.ingest.documents import SourceDocument, coerce_documents
from kgpath.ingest.extract import (
    BaseSchemaExtractor,
    ExtractionConfig,
    ExtractionResult,
    PatternExtractor,
    SchemaExtractor,
    assemble_graph,
)
from kgpath.ingest.extraction import Extraction, OpenExtractor, entity_key
from kgpath.ingest.extractor import Extractor, IngestReport
from kgpath.ingest.hierarchy import Hierarchy, HierarchyConfig, build_hierarchy
from kgpath.ingest.llm_extractor import LLMExtractor
from kgpath.ingest.schema import EvolutionPolicy, Schema
from kgpath.ingest.spacy_extractor import SpacyExtractor

__all__ = [
    "BaseSchemaExtractor",
    "ChunkGraphBuilder",
    "ChunkGraphConfig",
    "ChunkingConfig",
    "EvolutionPolicy",
    "Extraction",
    "ExtractionConfig",
    "ExtractionResult",
    "Extractor",
    "Hierarchy",
    "HierarchyConfig",
    "IngestReport",
    "LLMExtractor",
    "OpenExtractor",
    "PatternExtractor",
    "Schema",
    "SchemaExtractor",
    "SourceDocument",
    "SpacyExtractor",
    "TextPassage",
    "abuild_chunk_graph",
    "agraph_from_documents",
    "aingest_documents",
    "assemble_graph",
    "build_chunk_graph",
    "build_hierarchy",
    "chunk_document",
    "chunk_graph_from_documents",
    "coerce_documents",
    "entity_key",
    "graph_from_documents",
    "ingest_documents",
    "sliding_windows",
    "split_sentences",
]
