"""Schema-guided retrieval: decomposition with the schema, typed and parallel retrieval.

Reference: N. Balic, "Schema-Guided Graph Retrieval for Multi-Hop Reasoning", Awesome
Agentic Patterns, 2026 (shared/papers/schema-guided-graph-retrieval-pattern.txt).

The pattern is a recipe, not a paper with equations; the modules follow its solution list
(steps 4-6) and its pseudo-code, and every quantity it leaves open is defined where it is
used:

``config``
    :class:`SchemaRetrieverConfig` (frozen, keyword-only; the pattern fixes no numbers).
``decompose``
    Step 4, *decompose_question(question, schema)*: :class:`SchemaDecomposer`,
    :func:`validate_plan`, the LLM-free :func:`heuristic_decomposition`.
``typed``
    Step 5, typed retrieval: :func:`type_match` (type affinity ``t(v)``), the filter (AND over
    the constrained categories) or boost (``+ β · t(v)``), incident triples, provenance
    passages.
``merge``
    Step 6, *merge(evidence)*: :func:`merge_evidence`, :func:`format_evidence`.
``result``
    :class:`EvidenceItem`, :class:`SubQuestionResult`, :class:`SchemaResult` and its
    evidence contract (``result.evidence(output="passages", k=None)``).
``retriever``
    :class:`SchemaGuidedRetriever`; sub-questions run concurrently with
    :func:`parallel_map` / :func:`aparallel_map` (from :mod:`kgpath._parallel`).
``cypher``
    :class:`CypherSchemaRetriever`: the same retrieval on a graph database, fetching only
    what each sub-question reaches (typed candidates pushed down, their vectors, the edges
    at the hits, cited passages) and reusing the typed-retrieval code through its seam
    (:class:`~kgpath.methods.schema.typed.TypedAccess`).
"""

from kgpath._parallel import aparallel_map, parallel_map
from kgpath.methods.schema.config import SchemaRetrieverConfig, TypeMode
from kgpath.methods.schema.cypher import CypherSchemaRetriever
from kgpath.methods.schema.decompose import (
    DecompositionPlan,
    InvolvedTypes,
    SchemaDecomposer,
    SubQuestion,
    heuristic_decomposition,
    parse_decomposition,
    split_question,
    validate_plan,
)
from kgpath.methods.schema.merge import format_evidence, merge_evidence
from kgpath.methods.schema.result import (
    EvidenceItem,
    EvidenceKind,
    SchemaResult,
    SubQuestionResult,
)
from kgpath.methods.schema.retriever import SchemaGuidedRetriever
from kgpath.methods.schema.typed import type_match

__all__ = [
    "CypherSchemaRetriever",
    "DecompositionPlan",
    "EvidenceItem",
    "EvidenceKind",
    "InvolvedTypes",
    "SchemaDecomposer",
    "SchemaGuidedRetriever",
    "SchemaResult",
    "SchemaRetrieverConfig",
    "SubQuestion",
    "SubQuestionResult",
    "TypeMode",
    "aparallel_map",
    "format_evidence",
    "heuristic_decomposition",
    "merge_evidence",
    "parallel_map",
    "parse_decomposition",
    "split_question",
    "type_match",
    "validate_plan",
]
