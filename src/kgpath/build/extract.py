"""Schema-bounded extraction of typed triples from passages (pattern step 1 and 2).

Reference: N. Balic, "Schema-Guided Graph Retrieval for Multi-Hop Reasoning", 2026
(shared/papers/schema-guided-graph-retrieval-pattern.txt), solution steps 1-2 and guidance
items 2 and 6.

Pipeline (:meth:`BaseSchemaExtractor.extract`):

1. **Extract** every passage with a policy behind one hook, :meth:`extract_passage`:
   :class:`SchemaExtractor` asks an LLM (``kgpath.llm.LLM``) with the schema in the prompt;
   :class:`PatternExtractor` is the LLM-free path (known names + relation cue words, see its
   docstring for how much weaker it is).
2. **Evolve** (only when ``ExtractionConfig.evolution`` is set; off by default): explicit
   proposals from the LLM plus, optionally, *implicit* ones (a triple or entity that used a
   type name the schema lacks counts as one vote for that type) go through
   :func:`kgpath.build.schema.evolve_schema` and its thresholds.
3. **Bound** (:func:`assemble_graph`): every entity and triple is checked against the
   (possibly evolved) schema - known types, relation allowed between these head/tail types,
   attributes allowed on the entity type. Accepted items become nodes/edges that store their
   canonical ``schema_type`` (``Node.type``/``Edge.type`` and ``metadata["schema_type"]``) and
   their provenance passage ids; rejected ones are returned with the reason.

The same :func:`assemble_graph` is used by the LlamaIndex converter for
``SchemaLLMPathExtractor`` output, so all sources are bounded by one rule.
"""

from __future__ import annotations

import asyncio
import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kgpath.build.schema import (
    EvolutionPolicy,
    EvolutionResult,
    Schema,
    TypeProposal,
    evolve_schema,
    type_key,
)
from kgpath.errors import ConfigError, GraphError, ParseError
from kgpath.graph import KnowledgeGraph
from kgpath.llm import LLM, parse_json_response
from kgpath.prompts.schema import SCHEMA_EVOLUTION_NOTE, SCHEMA_EXTRACT_PROMPT

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

logger = logging.getLogger("kgpath.extract")


# ---------------------------------------------------------------------- records
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
        An :class:`~kgpath.build.schema.EvolutionPolicy` to allow schema evolution; ``None``
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


# ---------------------------------------------------------------------- bounding
def _node_key(name: str) -> str:
    return " ".join(name.lower().split())


def assemble_graph(
    schema: Schema,
    entities: Iterable[TypedEntity],
    triples: Iterable[TypedTriple],
    *,
    passages: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    graph: KnowledgeGraph | None = None,
    strict: bool = True,
) -> ExtractionResult:
    """Bound extracted items by ``schema`` and build (or extend) a graph.

    Rules:

    * an entity is admitted when its type resolves to a schema entity type; attributes are
      kept only if the schema allows them on that type (others are rejected one by one);
    * a triple is admitted when :meth:`Schema.check_triple` accepts
      ``(head_type, relation, tail_type)``; its end nodes are created if needed;
    * nodes are identified by name, case- and space-insensitively; the first admitted type of
      a name wins and later conflicting types are listed in ``trace["type_conflicts"]``
      (their triples are still admitted: each triple was checked with its own types);
    * provenance: a node cites every passage that mentions it, an edge every passage that
      states it; duplicates merge (see :meth:`KnowledgeGraph.add_edge`).

    With ``strict=False`` off-schema items are kept with ``schema_type=None`` and the reason
    in ``metadata["off_schema"]`` instead of being rejected.
    """
    g = graph if graph is not None else KnowledgeGraph()
    if passages is not None:
        items = passages.items() if isinstance(passages, Mapping) else passages
        for pid, text in items:
            if pid not in g.passages:
                g.add_passage(pid, text)
    by_key: dict[str, str] = {_node_key(n.name): n.id for n in g.nodes}
    info: dict[str, dict[str, Any]] = {}
    for n in g.nodes:
        info[n.id] = {
            "name": n.name, "text": n.text, "type": n.type,
            "schema_type": n.metadata.get("schema_type", n.type),
            "attributes": dict(n.metadata.get("attributes") or {}),
            "metadata": dict(n.metadata), "provenance": list(n.provenance), "existing": True,
        }
    rejected: list[Rejection] = []
    conflicts: list[dict[str, Any]] = []
    accepted_entities: dict[str, TypedEntity] = {}

    def touch(name: str, typ: str | None, off: str | None, source: str, desc: str = "") -> str:
        key = _node_key(name)
        nid = by_key.get(key)
        if nid is None:
            nid = name.strip()
            by_key[key] = nid
            meta: dict[str, Any] = {"schema_type": typ}
            if off:
                meta["off_schema"] = off
            info[nid] = {
                "name": nid, "text": desc, "type": typ, "schema_type": typ, "attributes": {},
                "metadata": meta, "provenance": [], "existing": False,
            }
        rec = info[nid]
        if rec["schema_type"] is None and typ is not None and not off:
            rec["schema_type"] = rec["type"] = typ
            rec["metadata"]["schema_type"] = typ
            rec["metadata"].pop("off_schema", None)
        elif typ is not None and rec["schema_type"] not in (None, typ):
            conflicts.append({"node": nid, "kept": rec["schema_type"], "ignored": typ,
                              "source": source})
        if desc and not rec["text"]:
            rec["text"] = desc
        if source and source not in rec["provenance"]:
            rec["provenance"].append(source)
        return nid

    for e in entities:
        if not e.name.strip():
            rejected.append(Rejection(e, "entity has an empty name"))
            continue
        t = schema.resolve("entity", e.type)
        if t is None:
            reason = f"entity type {e.type!r} is not in the schema"
            if strict:
                rejected.append(Rejection(e, reason))
                continue
            nid = touch(e.name, e.type or None, reason, e.source, e.description)
        else:
            nid = touch(e.name, t, None, e.source, e.description)
        node_type = info[nid]["schema_type"]
        for attr, value in dict(e.attributes).items():
            canon = schema.attribute_allowed(node_type, attr) if node_type else None
            if canon is None:
                reason = f"attribute {attr!r} is not allowed on type {node_type!r}"
                if strict:
                    rejected.append(Rejection((nid, str(attr), value), reason))
                    continue
                canon = str(attr)
            info[nid]["attributes"][canon] = value
        accepted_entities.setdefault(nid, TypedEntity(
            name=nid, type=node_type or e.type, description=info[nid]["text"],
            attributes=info[nid]["attributes"], source=e.source,
        ))

    edges: list[tuple[TypedTriple, str | None]] = []
    for tr in triples:
        if not tr.head.strip() or not tr.tail.strip():
            rejected.append(Rejection(tr, "triple has an empty head or tail"))
            continue
        if _node_key(tr.head) == _node_key(tr.tail):
            rejected.append(Rejection(tr, "self-referencing triple"))
            continue
        checked, reason = schema.check_triple(tr.head_type, tr.relation, tr.tail_type)
        if checked is None:
            if strict:
                rejected.append(Rejection(tr, reason))
                continue
            h = touch(tr.head, schema.resolve("entity", tr.head_type), None, tr.source)
            t = touch(tr.tail, schema.resolve("entity", tr.tail_type), None, tr.source)
            edges.append((TypedTriple(
                head=h, head_type=tr.head_type, relation=tr.relation.strip(), tail=t,
                tail_type=tr.tail_type, source=tr.source, confidence=tr.confidence,
                properties=tr.properties,
            ), reason))
            continue
        ht, rel, tt = checked
        h = touch(tr.head, ht, None, tr.source)
        t = touch(tr.tail, tt, None, tr.source)
        edges.append((TypedTriple(
            head=h, head_type=ht, relation=rel, tail=t, tail_type=tt, source=tr.source,
            confidence=tr.confidence, properties=tr.properties,
        ), None))

    for nid, rec in info.items():
        meta = dict(rec["metadata"])
        if rec["attributes"]:
            meta["attributes"] = dict(rec["attributes"])
        g.add_node(
            nid, name=rec["name"], text=rec["text"], type=rec["type"], metadata=meta,
            provenance=tuple(rec["provenance"]),
        )
    kept: list[TypedTriple] = []
    for tr, off in edges:
        meta = {"schema_type": None if off else tr.relation, "confidence": tr.confidence,
                **dict(tr.properties)}
        if off:
            meta["off_schema"] = off
        g.add_edge(
            tr.head, tr.tail, relation=tr.relation,
            text=f"{g.node(tr.head).name} {tr.relation} {g.node(tr.tail).name}",
            type=None if off else tr.relation,
            provenance=(tr.source,) if tr.source else (), metadata=meta,
        )
        kept.append(tr)
    for nid, rec in info.items():
        if nid not in accepted_entities and not rec["existing"]:
            accepted_entities[nid] = TypedEntity(
                name=nid, type=rec["schema_type"] or "", description=rec["text"],
                attributes=rec["attributes"],
                source=rec["provenance"][0] if rec["provenance"] else "",
            )
    return ExtractionResult(
        graph=g,
        schema=schema,
        triples=tuple(kept),
        entities=tuple(accepted_entities.values()),
        rejected=tuple(rejected),
        trace={
            "accepted_triples": len(kept),
            "rejected": len(rejected),
            "type_conflicts": conflicts,
            "strict": strict,
            "schema_version": schema.version,
        },
    )


def implicit_proposals(
    schema: Schema, entities: Iterable[TypedEntity], triples: Iterable[TypedTriple]
) -> list[TypeProposal]:
    """One vote per use of an unknown type name (entity type or relation) in extractor output.

    A relation vote carries the triple's head/tail types so that, if adopted, the relation is
    bounded by the types it was actually seen with. Confidence is the triple's confidence
    (1.0 for entities, which carry none).
    """
    out: list[TypeProposal] = []
    for e in entities:
        if e.type.strip() and schema.resolve("entity", e.type) is None:
            out.append(TypeProposal(kind="entity", name=e.type, source=e.source))
    for t in triples:
        for typ in (t.head_type, t.tail_type):
            if typ.strip() and schema.resolve("entity", typ) is None:
                out.append(TypeProposal(kind="entity", name=typ, confidence=t.confidence,
                                        source=t.source))
        if t.relation.strip() and schema.resolve("relation", t.relation) is None:
            if t.head_type.strip() and t.tail_type.strip():
                out.append(TypeProposal(
                    kind="relation", name=t.relation, confidence=t.confidence, source=t.source,
                    head=(t.head_type,), tail=(t.tail_type,),
                ))
    return out


# ---------------------------------------------------------------------- LLM reply parsing
_HEAD = ("head", "subject", "source", "h")
_HEAD_T = ("head_type", "subject_type", "source_type", "head_label")
_REL = ("relation", "predicate", "label", "r", "type")
_TAIL = ("tail", "object", "target", "t")
_TAIL_T = ("tail_type", "object_type", "target_type", "tail_label")


def _first(d: Mapping[str, Any], keys: Sequence[str]) -> str:
    for k in keys:
        v = d.get(k)
        if isinstance(v, (str, int, float)) and not isinstance(v, bool) and str(v).strip():
            return str(v).strip()
    return ""


def _confidence(v: Any, notes: list[str]) -> float:
    if v is None:
        return 1.0
    try:
        c = float(v)
    except (TypeError, ValueError):
        notes.append(f"confidence {v!r} is not a number; 1.0 used")
        return 1.0
    if not 0.0 <= c <= 1.0:
        notes.append(f"confidence {c} clipped to [0, 1]")
        c = min(1.0, max(0.0, c))
    return c


def parse_extraction(
    text: str, passage_id: str, *, max_triples: int | None = None
) -> PassageExtraction:
    """Parse an extraction reply into typed records (types are checked later, not here).

    Accepts the prompt's shape ``{entities, triples, proposals}``; a bare list is read as the
    triples. Triples may be objects (``head``/``subject``, ``relation``/``predicate``, ...)
    or lists ``[head, head_type, relation, tail, tail_type]`` / ``[head, relation, tail]``;
    a missing end type is taken from the entity list when the name appears there. Malformed
    items are skipped and noted. Raises :class:`~kgpath.errors.ParseError` when no JSON at
    all can be recovered.
    """
    data = parse_json_response(text)
    if isinstance(data, list):
        data = {"triples": data}
    notes: list[str] = []
    extra = set(data) - {"entities", "triples", "proposals"}
    if extra:
        notes.append(f"ignored extra key(s) {sorted(extra)}")
    ents: list[TypedEntity] = []
    for i, e in enumerate(_as_list(data.get("entities"), "entities", notes)):
        if not isinstance(e, Mapping):
            notes.append(f"entity #{i} is not an object: {e!r}")
            continue
        name, typ = _first(e, ("name", "id")), _first(e, ("type", "label", "entity_type"))
        if not name:
            notes.append(f"entity #{i} has no name")
            continue
        attrs = e.get("attributes") or e.get("properties") or {}
        if not isinstance(attrs, Mapping):
            notes.append(f"attributes of entity {name!r} are not an object; ignored")
            attrs = {}
        ents.append(TypedEntity(name=name, type=typ, description=_first(e, ("description",)),
                                attributes=dict(attrs), source=passage_id))
    types_by_name = {_node_key(e.name): e.type for e in ents if e.type}
    trips: list[TypedTriple] = []
    for i, t in enumerate(_as_list(data.get("triples"), "triples", notes)):
        if isinstance(t, Mapping):
            h, r, tl = _first(t, _HEAD), _first(t, _REL), _first(t, _TAIL)
            ht, tt = _first(t, _HEAD_T), _first(t, _TAIL_T)
            conf = _confidence(t.get("confidence"), notes)
        elif isinstance(t, Sequence) and not isinstance(t, str) and len(t) in (3, 5):
            vals = [str(x).strip() for x in t]
            if len(vals) == 5:
                h, ht, r, tl, tt = vals
            else:
                (h, r, tl), ht, tt = vals, "", ""
            conf = 1.0
        else:
            notes.append(f"triple #{i} has an unknown shape: {t!r}")
            continue
        if not (h and r and tl):
            notes.append(f"triple #{i} lacks a head, relation or tail: {t!r}")
            continue
        ht = ht or types_by_name.get(_node_key(h), "")
        tt = tt or types_by_name.get(_node_key(tl), "")
        trips.append(TypedTriple(head=h, head_type=ht, relation=r, tail=tl, tail_type=tt,
                                 source=passage_id, confidence=conf))
    if max_triples is not None and len(trips) > max_triples:
        notes.append(f"{len(trips) - max_triples} triple(s) beyond max_triples dropped")
        trips = trips[:max_triples]
    props: list[TypeProposal] = []
    for i, p in enumerate(_as_list(data.get("proposals"), "proposals", notes)):
        if not isinstance(p, Mapping):
            notes.append(f"proposal #{i} is not an object: {p!r}")
            continue
        try:
            props.append(TypeProposal(
                kind=str(p.get("kind", "")).strip().lower(),  # type: ignore[arg-type]
                name=_first(p, ("name",)),
                confidence=_confidence(p.get("confidence"), notes),
                description=_first(p, ("description",)),
                head=_str_list(p.get("head")), tail=_str_list(p.get("tail")),
                entities=_str_list(p.get("entities")),
                source=passage_id,
            ))
        except ConfigError as exc:  # SchemaError subclasses ConfigError
            notes.append(f"proposal #{i} ignored: {exc}")
    return PassageExtraction(passage_id=passage_id, entities=tuple(ents), triples=tuple(trips),
                             proposals=tuple(props), raw=text, notes=tuple(notes))


def _as_list(v: Any, what: str, notes: list[str]) -> list[Any]:
    if v is None:
        return []
    if isinstance(v, list):
        return v
    notes.append(f"{what} is not a list; ignored")
    return []


def _str_list(v: Any) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,) if v.strip() else ()
    if isinstance(v, list):
        return tuple(str(x) for x in v if isinstance(x, str) and x.strip())
    return ()


# ---------------------------------------------------------------------- extractors
class BaseSchemaExtractor(ABC):
    """Shared pipeline (extract -> evolve -> bound); subclasses implement one hook.

    Parameters
    ----------
    schema
        The seed schema.
    config
        :class:`ExtractionConfig`.
    """

    def __init__(self, schema: Schema, *, config: ExtractionConfig | None = None) -> None:
        if not isinstance(schema, Schema):
            raise ConfigError(f"schema must be a kgpath Schema, got {type(schema).__name__}")
        self.schema = schema
        self.config = config or ExtractionConfig()

    @abstractmethod
    def extract_passage(self, passage_id: str, text: str) -> PassageExtraction:
        """Raw typed entities/triples/proposals of one passage (not yet bounded)."""

    async def aextract_passage(self, passage_id: str, text: str) -> PassageExtraction:
        """Async :meth:`extract_passage` (default: run the sync hook in a thread)."""
        return await asyncio.to_thread(self.extract_passage, passage_id, text)

    def extract(
        self,
        passages: Mapping[str, str] | Iterable[tuple[str, str]] | Sequence[str] | KnowledgeGraph,
        *,
        graph: KnowledgeGraph | None = None,
    ) -> ExtractionResult:
        """Extract all passages (bounded thread pool), evolve if enabled, build the graph.

        ``graph``: extend this graph instead of creating a new one.
        """
        from kgpath._parallel import parallel_map

        items = normalize_passages(passages)
        runs = parallel_map(
            lambda it: self._safe(it[0], it[1]), items, max_workers=self.config.max_concurrency,
            desc="extracting passages",
        )
        return self._finish(items, [r for r, _, _ in runs], graph)

    async def aextract(
        self,
        passages: Mapping[str, str] | Iterable[tuple[str, str]] | Sequence[str] | KnowledgeGraph,
        *,
        graph: KnowledgeGraph | None = None,
    ) -> ExtractionResult:
        """Async :meth:`extract` (passages gathered with a concurrency bound)."""
        from kgpath._parallel import aparallel_map

        items = normalize_passages(passages)

        async def one(it: tuple[str, str]) -> PassageExtraction:
            return await self._asafe(it[0], it[1])

        runs = await aparallel_map(one, items, limit=self.config.max_concurrency)
        return self._finish(items, [r for r, _, _ in runs], graph)

    def _safe(self, pid: str, text: str) -> PassageExtraction:
        try:
            return self.extract_passage(pid, text)
        except ParseError as exc:
            return self._parse_failure(pid, exc)

    async def _asafe(self, pid: str, text: str) -> PassageExtraction:
        try:
            return await self.aextract_passage(pid, text)
        except ParseError as exc:
            return self._parse_failure(pid, exc)

    def _parse_failure(self, pid: str, exc: ParseError) -> PassageExtraction:
        if self.config.on_parse_error == "raise":
            raise ParseError(f"extraction reply for passage {pid!r} unparsable: {exc}") from exc
        logger.warning("extraction reply for passage %r skipped: %s", pid, exc)
        return PassageExtraction(passage_id=pid, error=str(exc))

    def _finish(
        self,
        items: list[tuple[str, str]],
        runs: list[PassageExtraction],
        graph: KnowledgeGraph | None,
    ) -> ExtractionResult:
        cfg = self.config
        entities = [e for r in runs for e in r.entities]
        triples = [t for r in runs for t in r.triples]
        schema = self.schema
        evo: EvolutionResult | None = None
        if cfg.evolution is not None:
            props = [p for r in runs for p in r.proposals]
            if cfg.implicit_proposals:
                props += implicit_proposals(schema, entities, triples)
            evo = evolve_schema(schema, props, cfg.evolution)
            schema = evo.schema
        res = assemble_graph(schema, entities, triples, passages=items, graph=graph,
                             strict=cfg.strict)
        trace = dict(res.trace)
        trace.update(
            extractor=type(self).__name__,
            passages=len(items),
            parse_failures=[r.passage_id for r in runs if r.error],
            notes={r.passage_id: list(r.notes) for r in runs if r.notes},
            seed_schema_version=self.schema.version,
            evolution="off" if evo is None else {
                "adopted": [c.name for c in evo.adopted],
                "rejected": [c.name for c in evo.rejected],
            },
        )
        return ExtractionResult(
            graph=res.graph, schema=schema, triples=res.triples, entities=res.entities,
            rejected=res.rejected, evolution=evo, passages=tuple(runs), trace=trace,
        )


class SchemaExtractor(BaseSchemaExtractor):
    """LLM extraction bounded by the schema (pattern step 1, with optional step 2).

    The prompt (:data:`~kgpath.prompts.schema.SCHEMA_EXTRACT_PROMPT`) lists the schema and asks
    for typed entities and triples (and, when evolution is on, proposals). The reply is parsed
    tolerantly (:func:`parse_extraction`) and then bounded by the schema, so a model that
    ignores the instructions cannot put off-schema types into the graph.

    Examples
    --------
    >>> from kgpath import ScriptedLLM
    >>> from kgpath.build.schema import Schema
    >>> s = Schema(entities=["Person", "Element"], relations=[("Person", "discovered", "Element")])
    >>> llm = ScriptedLLM(['{"triples": [["Curie", "Person", "discovered", "radium", "Element"]]}'])
    >>> res = SchemaExtractor(s, llm).extract({"p1": "Curie discovered radium."})
    >>> [(e.source, e.relation, e.target, e.type) for e in res.graph.edges]
    [('Curie', 'discovered', 'radium', 'discovered')]
    """

    def __init__(
        self,
        schema: Schema,
        llm: LLM,
        *,
        config: ExtractionConfig | None = None,
        prompt: str = SCHEMA_EXTRACT_PROMPT,
    ) -> None:
        super().__init__(schema, config=config)
        if llm is None or not hasattr(llm, "complete"):
            raise ConfigError(
                f"SchemaExtractor needs an LLM with complete()/acomplete(), got {llm!r}; "
                "use PatternExtractor for the LLM-free path"
            )
        self.llm = llm
        self.prompt = prompt

    def build_prompt(self, text: str) -> str:
        """Return the extraction prompt for one passage."""
        return self.prompt.format(
            schema=self.schema.describe(),
            evolution_note=SCHEMA_EVOLUTION_NOTE if self.config.evolution is not None else "",
            max_triples=self.config.max_triples_per_passage,
            text=text,
        )

    def extract_passage(self, passage_id: str, text: str) -> PassageExtraction:
        """Ask the LLM and parse its reply."""
        reply = self.llm.complete(self.build_prompt(text))
        return parse_extraction(reply, passage_id, max_triples=self.config.max_triples_per_passage)

    async def aextract_passage(self, passage_id: str, text: str) -> PassageExtraction:
        """Async :meth:`extract_passage` on the LLM's native ``acomplete``."""
        reply = await self.llm.acomplete(self.build_prompt(text))
        return parse_extraction(reply, passage_id, max_triples=self.config.max_triples_per_passage)


_SENTENCE = re.compile(r"(?<=[.!?;])\s+")


class PatternExtractor(BaseSchemaExtractor):
    """LLM-free extraction from known names and relation cue words. Much weaker than an LLM.

    For each sentence: find mentions of names from ``gazetteer`` (name -> entity type; a
    :class:`KnowledgeGraph` gives its node names and types), longest match first and
    non-overlapping; find occurrences of each relation type's name or aliases (cue phrases,
    ``_``/``-`` read as spaces). For a cue, the head is the nearest mention ending before it
    and the tails are the mentions after it up to the next cue; a pair becomes a triple only
    if the schema allows the relation between their types.

    Known weaknesses, by design: it never discovers entities missing from the gazetteer,
    misses relations not verbalised by a cue between the two names (passive voice, pronouns,
    nominalisations), may attach a cue to the wrong head in long sentences, and never proposes
    new types (so evolution has nothing to adopt from it).
    """

    def __init__(
        self,
        schema: Schema,
        gazetteer: Mapping[str, str] | KnowledgeGraph,
        *,
        config: ExtractionConfig | None = None,
    ) -> None:
        super().__init__(schema, config=config)
        if isinstance(gazetteer, KnowledgeGraph):
            gaz = {n.name: str(n.metadata.get("schema_type") or n.type or "") for n in gazetteer}
        elif isinstance(gazetteer, Mapping):
            gaz = {str(k): str(v) for k, v in gazetteer.items()}
        else:
            raise ConfigError(f"gazetteer must be a mapping or a KnowledgeGraph, got {gazetteer!r}")
        self.gazetteer: dict[str, str] = {}
        for name, typ in gaz.items():
            t = schema.resolve("entity", typ)
            if t is not None and name.strip():
                self.gazetteer[name.strip()] = t
        names = sorted(self.gazetteer, key=len, reverse=True)
        self._names = re.compile(
            r"(?<!\w)(" + "|".join(re.escape(n) for n in names) + r")(?!\w)", re.IGNORECASE
        ) if names else None
        self._canon = {n.lower(): n for n in names}
        cues = []
        for r in schema.relations:
            for label in (r.name, *r.aliases):
                words = type_key(label)
                if words:
                    cues.append((words, r.name))
        cues.sort(key=lambda c: len(c[0]), reverse=True)
        self._cue_rel = dict(cues)
        self._cues = re.compile(
            r"(?<!\w)(" + "|".join(re.escape(c).replace(r"\ ", r"[\s_\-]+") for c, _ in cues)
            + r")(?!\w)", re.IGNORECASE
        ) if cues else None

    def extract_passage(self, passage_id: str, text: str) -> PassageExtraction:
        """Pattern-match one passage."""
        if self._names is None or self._cues is None:
            return PassageExtraction(passage_id=passage_id, notes=("empty gazetteer or no cues",))
        ents: dict[str, TypedEntity] = {}
        trips: list[TypedTriple] = []
        for sent in _SENTENCE.split(text):
            mentions = [(m.start(), m.end(), self._canon[m.group(1).lower()])
                        for m in self._names.finditer(sent)]
            for _, _, name in mentions:
                ents.setdefault(name, TypedEntity(name=name, type=self.gazetteer[name],
                                                  source=passage_id))
            cues = [(m.start(), m.end(), self._cue_rel[type_key(m.group(1))])
                    for m in self._cues.finditer(sent)]
            # a cue inside a mention (e.g. "discovered" inside a name) is not a cue
            cues = [c for c in cues if not any(s <= c[0] and c[1] <= e for s, e, _ in mentions)]
            for ci, (cs, ce, rel) in enumerate(cues):
                before = [m for m in mentions if m[1] <= cs]
                if not before:
                    continue
                head = before[-1][2]
                stop = cues[ci + 1][0] if ci + 1 < len(cues) else len(sent)
                for ms, _, tail in mentions:
                    if ce <= ms < stop and tail != head:
                        ht, tt = self.gazetteer[head], self.gazetteer[tail]
                        if self.schema.allows(ht, rel, tt):
                            trips.append(TypedTriple(head=head, head_type=ht, relation=rel,
                                                     tail=tail, tail_type=tt, source=passage_id))
        mx = self.config.max_triples_per_passage
        return PassageExtraction(passage_id=passage_id, entities=tuple(ents.values()),
                                 triples=tuple(trips[:mx]))
