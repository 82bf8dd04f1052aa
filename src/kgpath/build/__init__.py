"""Graph construction beyond ``KnowledgeGraph``'s own builders.

Schema-bounded extraction (``schema``, ``extract``), keyword/community layers (``hierarchy``)
and the semantic chunk graph (``chunk_graph``).
"""

from kgpath.build.extract import (
    ExtractionConfig,
    ExtractionResult,
    PatternExtractor,
    SchemaExtractor,
    TypedEntity,
    TypedTriple,
    assemble_graph,
)
from kgpath.build.hierarchy import (
    Community,
    CommunityRouter,
    Hierarchy,
    HierarchyConfig,
    build_hierarchy,
)
from kgpath.build.schema import (
    AttributeType,
    EntityType,
    EvolutionPolicy,
    RelationType,
    Schema,
    SchemaChange,
    SchemaError,
    SchemaWarning,
    TypeProposal,
    evolve_schema,
)

__all__: list[str] = [
    "AttributeType",
    "Community",
    "CommunityRouter",
    "EntityType",
    "EvolutionPolicy",
    "ExtractionConfig",
    "ExtractionResult",
    "Hierarchy",
    "HierarchyConfig",
    "PatternExtractor",
    "RelationType",
    "Schema",
    "SchemaChange",
    "SchemaError",
    "SchemaExtractor",
    "SchemaWarning",
    "TypeProposal",
    "TypedEntity",
    "TypedTriple",
    "assemble_graph",
    "build_hierarchy",
    "evolve_schema",
]
