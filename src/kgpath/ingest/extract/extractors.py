"""Schema-bounded extractors: one pipeline (extract -> evolve -> bound) behind one hook pair.

:class:`BaseSchemaExtractor` is the schema family of the one extractor protocol
(:class:`~kgpath.ingest.extractor.Extractor`, records: :class:`PassageExtraction`);
:class:`SchemaExtractor` asks an LLM with the schema in the prompt; :class:`PatternExtractor`
is the LLM-free path (known names + relation cue words, much weaker). Used directly
(:meth:`BaseSchemaExtractor.extract`) or through :func:`kgpath.ingest.graph_from_documents`
(:meth:`BaseSchemaExtractor.add_to_graph`), the same passages give the same nodes and edges.
"""

from __future__ import annotations

import logging
import re
from abc import abstractmethod
from collections.abc import Iterable, Mapping, Sequence

from kgpath._parallel import aparallel_map, parallel_map
from kgpath.errors import BackendError, ConfigError, ParseError
from kgpath.graph import KnowledgeGraph
from kgpath.ingest.chunking import TextPassage, split_at_punctuation
from kgpath.ingest.extract.bound import assemble_graph, implicit_proposals
from kgpath.ingest.extract.parse import parse_extraction
from kgpath.ingest.extract.records import (
    ExtractionConfig,
    ExtractionResult,
    PassageExtraction,
    TypedEntity,
    TypedTriple,
    normalize_passages,
)
from kgpath.ingest.extractor import Extractor, IngestReport
from kgpath.ingest.schema import EvolutionResult, Schema, evolve_schema, type_key
from kgpath.llm import LLM, acall_llm, as_llm, call_llm
from kgpath.prompts.schema import SCHEMA_EVOLUTION_NOTE, SCHEMA_EXTRACT_PROMPT

__all__ = ["BaseSchemaExtractor", "PatternExtractor", "SchemaExtractor"]

logger = logging.getLogger("kgpath.extract")


class BaseSchemaExtractor(Extractor[PassageExtraction]):
    """Shared pipeline (extract -> evolve -> bound); subclasses implement one hook pair.

    The hook pair is :meth:`extract_passage` / :meth:`aextract_passage` (raw typed records
    of one passage); :meth:`extract` runs the pipeline on any passages and returns an
    :class:`ExtractionResult`; :meth:`add_to_graph` runs its evolve and bound steps for
    :func:`kgpath.ingest.graph_from_documents`. An unparsable reply is skipped or raised
    per ``config.on_parse_error`` on both paths.

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
        self.max_concurrency = self.config.max_concurrency

    @abstractmethod
    def extract_passage(self, passage_id: str, text: str) -> PassageExtraction:
        """Raw typed entities/triples/proposals of one passage (not yet bounded)."""

    def extract_passages(self, passages: Sequence[TextPassage]) -> list[PassageExtraction]:
        """The hook over every passage (bounded thread pool); parse errors per config."""
        runs = parallel_map(
            lambda p: self._safe(p.id, p.text), passages, max_workers=self.max_concurrency,
            desc="extracting passages",
        )
        return [r for r, _, _ in runs]

    async def aextract_passages(
        self, passages: Sequence[TextPassage]
    ) -> list[PassageExtraction]:
        """Async :meth:`extract_passages` (gathered with a concurrency bound)."""

        async def one(p: TextPassage) -> PassageExtraction:
            return await self._asafe(p.id, p.text)

        runs = await aparallel_map(one, passages, limit=self.max_concurrency)
        return [r for r, _, _ in runs]

    def add_to_graph(self, graph: KnowledgeGraph, passages: Sequence[TextPassage],
                     records: Sequence[PassageExtraction], report: IngestReport) -> None:
        """Evolve (if enabled) and bound the records into ``graph`` (as :meth:`extract`)."""
        before = len(graph)
        res = self._finish([(p.id, p.text) for p in passages], list(records), graph)
        report.nodes_new += len(graph) - before
        report.edges_added += len(res.triples)
        for r in records:
            report.notes.extend(f"{r.passage_id}: {n}" for n in r.notes)
            if r.error:
                report.notes.append(f"{r.passage_id}: skipped: {r.error}")
        if res.rejected:
            report.notes.append(f"{len(res.rejected)} item(s) rejected by the schema")

    def extract(
        self,
        passages: Mapping[str, str] | Iterable[tuple[str, str]] | Sequence[str] | KnowledgeGraph,
        *,
        graph: KnowledgeGraph | None = None,
    ) -> ExtractionResult:
        """Extract all passages (bounded thread pool), evolve if enabled, build the graph.

        ``graph``: extend this graph instead of creating a new one.
        """
        items = normalize_passages(passages)
        runs = self.extract_passages([TextPassage(pid, text, pid) for pid, text in items])
        return self._finish(items, runs, graph)

    async def aextract(
        self,
        passages: Mapping[str, str] | Iterable[tuple[str, str]] | Sequence[str] | KnowledgeGraph,
        *,
        graph: KnowledgeGraph | None = None,
    ) -> ExtractionResult:
        """Async :meth:`extract` (passages gathered with a concurrency bound)."""
        items = normalize_passages(passages)
        runs = await self.aextract_passages([TextPassage(pid, text, pid) for pid, text in items])
        return self._finish(items, runs, graph)

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
    >>> from kgpath.ingest.schema import Schema
    >>> s = Schema(entities=["Person", "Element"], relations=[("Person", "discovered", "Element")])
    >>> llm = ScriptedLLM(['{"triples": [["Curie", "Person", "discovered", "radium", "Element"]]}'])
    >>> res = SchemaExtractor(s, llm).extract({"p1": "Curie discovered radium."})
    >>> [(e.source, e.relation, e.target, e.type) for e in res.graph.edges]
    [('Curie', 'discovered', 'radium', 'discovered')]
    """

    name = "schema"

    def __init__(
        self,
        schema: Schema,
        llm: LLM,
        *,
        config: ExtractionConfig | None = None,
        prompt: str = SCHEMA_EXTRACT_PROMPT,
    ) -> None:
        super().__init__(schema, config=config)
        if llm is None:
            raise ConfigError("SchemaExtractor needs an LLM, got None; use PatternExtractor "
                              "for the LLM-free path")
        self.llm = as_llm(llm)  # framework models adapted; ConfigError for llm="gpt"
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
        """Ask the LLM (:func:`~kgpath.llm.call_llm`) and parse its reply.

        A model that keeps failing skips the passage with the error recorded (and a
        warning); when it failed on every passage of a batch the ``BackendError`` is raised.
        """
        try:
            reply = call_llm(self.llm, self.build_prompt(text),
                             step=f"schema extraction of passage {passage_id!r}")
        except BackendError as exc:
            return _llm_failed(passage_id, exc)
        return parse_extraction(reply, passage_id, max_triples=self.config.max_triples_per_passage)

    async def aextract_passage(self, passage_id: str, text: str) -> PassageExtraction:
        """Async :meth:`extract_passage` (:func:`~kgpath.llm.acall_llm`)."""
        try:
            reply = await acall_llm(self.llm, self.build_prompt(text),
                                    step=f"schema extraction of passage {passage_id!r}")
        except BackendError as exc:
            return _llm_failed(passage_id, exc)
        return parse_extraction(reply, passage_id, max_triples=self.config.max_triples_per_passage)

    def extract_passages(self, passages: Sequence[TextPassage]) -> list[PassageExtraction]:
        """The hook over a batch; raises when the model failed on every passage of it."""
        return _check_backend(super().extract_passages(passages))

    async def aextract_passages(
        self, passages: Sequence[TextPassage]
    ) -> list[PassageExtraction]:
        """Async :meth:`extract_passages`."""
        return _check_backend(await super().aextract_passages(passages))


_LLM_FAILED = "LLM call failed: "


def _llm_failed(passage_id: str, exc: BackendError) -> PassageExtraction:
    logger.warning("schema extraction of passage %r skipped: %s", passage_id, exc)
    return PassageExtraction(passage_id=passage_id, error=f"{_LLM_FAILED}{exc}")


def _check_backend(runs: list[PassageExtraction]) -> list[PassageExtraction]:
    """``runs``, or a :class:`BackendError` when the model failed on every passage."""
    if runs and all(r.error and r.error.startswith(_LLM_FAILED) for r in runs):
        raise BackendError(f"the LLM failed on every passage of the batch ({len(runs)}), "
                           f"e.g. {runs[0].passage_id!r}: {str(runs[0].error)[len(_LLM_FAILED):]}")
    return runs


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

    Sentences are read with :func:`~kgpath.ingest.chunking.split_at_punctuation` (a split
    after every ``. ! ? ;``), not the abbreviation-aware splitter passages are chunked with.
    """

    name = "pattern"

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
        for sent in split_at_punctuation(text):
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
