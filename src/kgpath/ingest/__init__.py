"""Documents -> passages -> extraction (spaCy offline, or any LLM) -> knowledge graph."""

from kgpath.ingest.assemble import (
    IngestReport,
    agraph_from_documents,
    aingest_documents,
    graph_from_documents,
    ingest_documents,
)
from kgpath.ingest.documents import ChunkingConfig, chunk_document, coerce_documents
from kgpath.ingest.extraction import Extraction, Extractor, entity_key
from kgpath.ingest.spacy_extractor import SpacyExtractor

__all__ = [
    "ChunkingConfig",
    "Extraction",
    "Extractor",
    "IngestReport",
    "SpacyExtractor",
    "agraph_from_documents",
    "aingest_documents",
    "chunk_document",
    "coerce_documents",
    "entity_key",
    "graph_from_documents",
    "ingest_documents",
]
