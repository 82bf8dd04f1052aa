"""Schema-bounded extraction of typed triples from passages (pattern step 1 and 2).

Reference: N. Balic, "Schema-Guided Graph Retrieval for Multi-Hop Reasoning", 2026
(shared/papers/schema-guided-graph-retrieval-pattern.txt), solution steps 1-2 and guidance
items 2 and 6.

:class:`BaseSchemaExtractor` is the schema family of the one extractor protocol
(:class:`kgpath.ingest.extractor.Extractor`), so both extractors also work through
:func:`kgpath.ingest.graph_from_documents` and give the same nodes and edges there.

Pipeline (:meth:`BaseSchemaExtractor.extract`):

1. **Extract** every passage with a policy behind one hook pair, :meth:`extract_passage` /
   ``aextract_passage``:
   :class:`SchemaExtractor` asks an LLM (``kgpath.llm.LLM``) with the schema in the prompt;
   :class:`PatternExtractor` is the LLM-free path (known names + relation cue words, see its
   docstring for how much weaker it is).
2. **Evolve** (only when ``ExtractionConfig.evolution`` is set; off by default): explicit
   proposals from the LLM plus, optionally, *implicit* ones (a triple or entity that used a
   type name the schema lacks counts as one vote for that type) go through
   :func:`kgpath.ingest.schema.evolve_schema` and its thresholds.
3. **Bound** (:func:`assemble_graph`): every entity and triple is checked against the
   (possibly evolved) schema - known types, relation allowed between these head/tail types,
   attributes allowed on the entity type. Accepted items become nodes/edges that store their
   canonical ``schema_type`` (``Node.type``/``Edge.type`` and ``metadata["schema_type"]``) and
   their provenance passage ids; rejected ones are returned with the reason.

The same :func:`assemble_graph` is used by the LlamaIndex converter for
``SchemaLLMPathExtractor`` output, so all sources are bounded by one rule.

Modules: ``records`` (typed records, :class:`ExtractionConfig`), ``parse`` (LLM replies),
``bound`` (:func:`assemble_graph`), ``extractors`` (the pipeline and its two policies).
"""

from kgpath.ingest.extract.bound import assemble_graph, implicit_proposals
from kgpath.ingest.extract.extractors import (
    BaseSchemaExtractor,
    PatternExtractor,
    SchemaExtractor,
)
from kgpath.ingest.extract.parse import parse_extraction
from kgpath.ingest.extract.records import (
    ExtractionConfig,
    ExtractionResult,
    PassageExtraction,
    Rejection,
    TypedEntity,
    TypedTriple,
    normalize_passages,
)

__all__ = [
    "BaseSchemaExtractor",
    "ExtractionConfig",
    "ExtractionResult",
    "PassageExtraction",
    "PatternExtractor",
    "Rejection",
    "SchemaExtractor",
    "TypedEntity",
    "TypedTriple",
    "assemble_graph",
    "implicit_proposals",
    "normalize_passages",
    "parse_extraction",
]
