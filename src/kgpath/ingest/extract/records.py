"""Records of schema-bounded extraction: typed entities/triples, results, settings.

Also :func:`normalize_passages`, the one reading of "passages" every extractor accepts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kgpath.errors import ConfigError, GraphError
from kgpath.graph import KnowledgeGraph
from kgpath.ingest.schema import EvolutionPolicy, EvolutionResult, Schema, TypeProposal

__all__ = [
    "ExtractionConfig",
    "ExtractionResult",
    "PassageExtraction",
    "Rejection",
    "TypedEntity",
    "TypedTriple",
    "normalize_passages",
]


def _node_key(name: str) -> str:
    """Nodes are identified by name, case- and space-insensitively."""
    return " ".join(name.lower().split())


@dataclass(frozen=True, kw_only=True)
class TypedEntity:
    """An entity mention with the type the extractor gave it (not yet checked)."""

    name: str
    type: str
    description: str = ""
    attributes: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""


@dataclass(frozen=True, kw_only=True)
class TypedTriple:
    """``head (head_type) --relation--> tail (tail_type)`` from passage ``source``."""

    head: str
    head_type: str
    relation: str
    tail: str
    tail_type: str
    source: str = ""
    confidence: float = 1.0
    properties: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str]:
        """``(head, relation, tail)``."""
        return (self.head, self.relation, self.tail)


@dataclass(frozen=True)
class Rejection:
    """An extracted item the schema did not admit, with the reason."""

    item: TypedEntity | TypedTriple | tuple[str, str, Any]
    """The entity, the triple, or ``(entity name, attribute, value)``."""
    reason: str


@dataclass(frozen=True)
class PassageExtraction:
    """Raw output of one extractor call for one passage (before schema bounding)."""

    passage_id: str
    entities: tuple[TypedEntity, ...] = ()
    triples: tuple[TypedTriple, ...] = ()
    proposals: tuple[TypeProposal, ...] = ()
    raw: str | None = None
    notes: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class ExtractionResult:
    """The bounded graph plus everything that explains it."""

    graph: KnowledgeGraph
    schema: Schema
    """The schema the graph was bounded by (the evolved one when evolution ran)."""
    triples: tuple[TypedTriple, ...]
    """Accepted triples with canonical type names."""
    entities: tuple[TypedEntity, ...]
    """Accepted entities (one per node) with canonical type names."""
    rejected: tuple[Rejection, ...]
    evolution: EvolutionResult | None = None
    passages: tuple[PassageExtraction, ...] = ()
    trace: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ExtractionConfig:
    """Extraction settings.

    Attributes
    ----------
    max_triples_per_passage
        Cap on triples kept from one passage (also stated in the prompt; default 20).
    strict
        ``True`` (default): drop entities/triples outside the schema. ``False``: keep them with
        ``schema_type=None`` and ``metadata["off_schema"]`` holding the reason.
    evolution
        An :class:`~kgpath.ingest.schema.EvolutionPolicy` to allow schema evolution; ``None``
        (default) keeps the schema fixed, as the issue requires.
    implicit_proposals
        With evolution on, count each use of an unknown type name as a proposal (default True).
    on_parse_error
        ``"skip"`` (default): an unparsable LLM reply contributes nothing and is recorded in
        the trace and logged; ``"raise"``: raise :class:`~kgpath.errors.ParseError`.
    max_concurrency
        Passages extracted concurrently (threads for sync, tasks for async; default 4).
    """

    max_triples_per_passage: int = 20
    strict: bool = True
    evolution: EvolutionPolicy | None = None
    implicit_proposals: bool = True
    on_parse_error: Literal["skip", "raise"] = "skip"
    max_concurrency: int = 4

    def __post_init__(self) -> None:
        for name in ("max_triples_per_passage", "max_concurrency"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"{name} must be an int >= 1, got {v!r}")
        if self.on_parse_error not in ("skip", "raise"):
            raise ConfigError(
                f"on_parse_error must be 'skip' or 'raise', got {self.on_parse_error!r}"
            )
        if self.evolution is not None and not isinstance(self.evolution, EvolutionPolicy):
            raise ConfigError(
                f"evolution must be an EvolutionPolicy or None, got {self.evolution!r}"
            )


# ---------------------------------------------------------------------- passages
def normalize_passages(
    passages: Mapping[str, str] | Iterable[tuple[str, str]] | Sequence[str] | KnowledgeGraph,
) -> list[tuple[str, str]]:
    """Return ``(passage id, text)`` pairs.

    Accepts a mapping, ``(id, text)`` pairs, plain texts (ids ``p0, p1, ...``) or a graph
    (its passages).
    """
    if isinstance(passages, KnowledgeGraph):
        items = [(p.id, p.text) for p in passages.passages.values()]
    elif isinstance(passages, Mapping):
        items = [(str(k), v) for k, v in passages.items()]
    elif isinstance(passages, str):
        raise GraphError("passages must be a collection, got a single string")
    else:
        items = []
        for i, p in enumerate(passages):
            if isinstance(p, str):
                items.append((f"p{i}", p))
            elif isinstance(p, Sequence) and len(p) == 2:
                items.append((str(p[0]), p[1]))
            else:
                raise GraphError(f"passage #{i} must be a text or (id, text), got {p!r}")
    seen: set[str] = set()
    for pid, text in items:
        if not isinstance(text, str):
            raise GraphError(f"passage {pid!r} text must be a string, got {type(text).__name__}")
        if pid in seen:
            raise GraphError(f"duplicate passage id {pid!r}")
        seen.add(pid)
    return items

