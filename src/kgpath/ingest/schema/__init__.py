"""A domain schema: entity, relation and attribute types, with validation and evolution.

Reference: N. Balic, "Schema-Guided Graph Retrieval for Multi-Hop Reasoning", Awesome
Agentic Patterns, 2026 (shared/papers/schema-guided-graph-retrieval-pattern.txt).

The pattern's central move is that *one* schema steers every stage: it bounds extraction
(:mod:`kgpath.ingest.extract`), it is shown to the question decomposer, and its type names are
what typed retrieval filters or boosts on (:mod:`kgpath.methods.schema`). The pattern gives no
equations; this package fixes the data model and two rules it leaves open:

* **Type resolution.** A type is referred to by its name or one of its aliases, compared
  case-insensitively with runs of white space, ``_`` and ``-`` collapsed (``"Nobel prize"``,
  ``"nobel_prize"`` and ``"NOBEL-PRIZE"`` are the same key). Aliases double as the cue words
  the LLM-free decomposer looks for in a question.
* **Evolution** (solution step 2 and guidance item 6: "strict thresholds"). Proposed new types
  are grouped by ``(kind, key)``; a group's *support* is the number of distinct sources
  (passages) that proposed it and its *confidence* the mean of the proposers' confidences. A
  group is adopted only when ``support >= min_support`` **and** ``confidence >=
  min_confidence``; every decision, adopted or rejected, is appended to :attr:`Schema.history`
  with its reason. Evolution is off unless a policy is passed.

Persistence is JSON with a format version (YAML when the file name ends in ``.yaml``/``.yml``
and PyYAML is installed: ``pip install 'kgpath[yaml]'``), written atomically.

Modules: ``types`` (type records, :func:`type_key`), ``model`` (:class:`Schema`, its
validation and persistence), ``evolution`` (proposals, :class:`EvolutionPolicy`,
:func:`evolve_schema`).
"""

from kgpath.ingest.schema.evolution import (
    AggregatedProposal,
    EvolutionPolicy,
    EvolutionResult,
    TypeProposal,
    aggregate_proposals,
    evolve_schema,
)
from kgpath.ingest.schema.model import SCHEMA_FORMAT_VERSION, Schema
from kgpath.ingest.schema.types import (
    AnyType,
    AttributeType,
    EntityType,
    RelationType,
    SchemaChange,
    SchemaError,
    SchemaWarning,
    TypeKind,
    type_key,
)

__all__ = [
    "SCHEMA_FORMAT_VERSION",
    "AggregatedProposal",
    "AnyType",
    "AttributeType",
    "EntityType",
    "EvolutionPolicy",
    "EvolutionResult",
    "RelationType",
    "Schema",
    "SchemaChange",
    "SchemaError",
    "SchemaWarning",
    "TypeKind",
    "TypeProposal",
    "aggregate_proposals",
    "evolve_schema",
    "type_key",
]
