"""Schema-guided retrieval: decomposition with the schema, typed and parallel retrieval.

Reference: N. Balic, "Schema-Guided Graph Retrieval for Multi-Hop Reasoning", Awesome
Agentic Patterns, 2026 (shared/papers/schema-guided-graph-retrieval-pattern.txt).

The pattern is a recipe, not a paper with equations; the steps below follow its solution
list (steps 4-6) and its pseudo-code, and every quantity it leaves open is defined here.

1. :class:`SchemaDecomposer` - *decompose_question(question, schema)*. The LLM sees the
   schema and returns ``{sub_questions: [...], involved_types: {nodes, relations,
   attributes}}``. :func:`validate_plan` checks it against the schema: unknown type names are
   dropped with a :class:`~kgpath.build.schema.SchemaWarning`; extra keys are ignored and
   missing keys default (both warned); zero sub-questions or unparsable output fall back to
   the whole question. Without an LLM, :func:`heuristic_decomposition` splits on question
   marks, semicolons and conjunctions followed by a question word, and detects types by
   matching schema names/aliases and graph node names in the text. It is much weaker than an
   LLM (no paraphrase, no implicit types) and the plan says ``source="heuristic"``.
2. :func:`type_match` - *typed retrieval*. For involved types ``N`` (entity), ``R``
   (relation), ``A`` (attribute) the type affinity of node ``v`` is the mean over the
   non-empty categories of the indicators ``[type(v) ∈ N]``, ``[v has an edge typed in R]``,
   ``[v has an attribute in A]``, so ``t(v) ∈ [0, 1]``. ``type_mode="filter"`` keeps only
   candidates with ``t(v) > 0`` *before* scoring; ``"boost"`` scores every candidate and adds
   ``β · t(v)`` (``β = boost``); ``"off"`` ignores types. Scores come from
   :meth:`kgpath.index.GraphIndex.score_candidates` (vector, BM25 or hybrid). Triples are the
   edges incident to the retrieved nodes, scored by the mean base score of their two ends and
   filtered/boosted by ``[type(e) ∈ R]``; passages are the provenance of retrieved nodes and
   triples, scored by the best item citing them.
3. :func:`parallel_map` / :func:`aparallel_map` - *parallel_map(plan.sub_questions, ...)*.
   Sub-questions run concurrently: a bounded thread pool for sync backends, ``asyncio``
   tasks with a semaphore for async ones.
4. :func:`merge_evidence` - *merge(evidence)*. Items are de-duplicated by kind and key (node
   id, ``(source, relation, target)``, passage id); a merged item keeps its best score and
   the indices of every sub-question that retrieved it.

Complexity per sub-question: one query embedding, O(|C|·d) scoring over the candidate set
``C`` (all base nodes, the type-filtered subset, or the members of routed communities), and
O(|E|) to compute the relation indicator.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import numpy as np

from kgpath._config import with_overrides
from kgpath.build.hierarchy import CommunityRouter, Hierarchy, is_layer_node
from kgpath.build.schema import Schema, SchemaWarning
from kgpath.errors import ConfigError, ParseError
from kgpath.graph import Edge, KnowledgeGraph, Node, Passage
from kgpath.index.bm25 import STOPWORDS
from kgpath.index.graph_index import GraphIndex, check_query
from kgpath.index.vector import top_k
from kgpath.llm import LLM, parse_json_response
from kgpath.prompts.schema import SCHEMA_DECOMPOSE_PROMPT

__all__ = [
    "DecompositionPlan",
    "EvidenceItem",
    "InvolvedTypes",
    "SchemaDecomposer",
    "SchemaGuidedRetriever",
    "SchemaResult",
    "SchemaRetrieverConfig",
    "SubQuestion",
    "SubQuestionResult",
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

logger = logging.getLogger("kgpath.schema")

T = TypeVar("T")
R = TypeVar("R")
TypeMode = Literal["filter", "boost", "off"]


# ---------------------------------------------------------------------- concurrency
def parallel_map(
    fn: Callable[[T], R],
    items: Sequence[T],
    *,
    max_workers: int = 4,
    desc: str | None = None,
    progress_threshold: int = 16,
) -> list[tuple[R, float, float]]:
    """Apply ``fn`` to every item on a bounded thread pool (pattern step 6, sync backends).

    Returns ``(result, start, end)`` per item in input order, times from
    ``time.perf_counter``. One item (or ``max_workers == 1``) runs inline without a thread.
    The first exception raised by ``fn`` propagates. With ``desc``, a progress bar is shown
    when there are more than ``progress_threshold`` items (for long LLM steps).
    """
    from kgpath._progress import progress

    if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
        raise ConfigError(f"max_workers must be an int >= 1, got {max_workers!r}")

    def timed(x: T) -> tuple[R, float, float]:
        t0 = time.perf_counter()
        r = fn(x)
        return r, t0, time.perf_counter()

    def bar(results: Iterable[tuple[R, float, float]]) -> list[tuple[R, float, float]]:
        return list(progress(results, total=len(items), desc=desc or "", enabled=desc is not None,
                             threshold=progress_threshold))

    if len(items) <= 1 or max_workers == 1:
        return bar(timed(x) for x in items)
    with ThreadPoolExecutor(max_workers=min(max_workers, len(items))) as pool:
        return bar(pool.map(timed, items))


async def aparallel_map(
    fn: Callable[[T], Awaitable[R]], items: Sequence[T], *, limit: int = 4
) -> list[tuple[R, float, float]]:
    """Await ``fn`` on every item concurrently, at most ``limit`` at a time (async backends).

    Returns ``(result, start, end)`` per item in input order (``asyncio.gather``).
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ConfigError(f"limit must be an int >= 1, got {limit!r}")
    sem = asyncio.Semaphore(limit)

    async def timed(x: T) -> tuple[R, float, float]:
        async with sem:
            t0 = time.perf_counter()
            r = await fn(x)
            return r, t0, time.perf_counter()

    return list(await asyncio.gather(*(timed(x) for x in items)))


# ---------------------------------------------------------------------- plans
@dataclass(frozen=True)
class InvolvedTypes:
    """Schema types a (sub-)question involves (canonical names)."""

    nodes: tuple[str, ...] = ()
    relations: tuple[str, ...] = ()
    attributes: tuple[str, ...] = ()

    @property
    def is_empty(self) -> bool:
        """No type in any category."""
        return not (self.nodes or self.relations or self.attributes)

    def union(self, other: InvolvedTypes) -> InvolvedTypes:
        """Category-wise union, first-seen order."""
        return InvolvedTypes(
            tuple(dict.fromkeys(self.nodes + other.nodes)),
            tuple(dict.fromkeys(self.relations + other.relations)),
            tuple(dict.fromkeys(self.attributes + other.attributes)),
        )

    def to_dict(self) -> dict[str, list[str]]:
        """``{"nodes": [...], "relations": [...], "attributes": [...]}``."""
        return {"nodes": list(self.nodes), "relations": list(self.relations),
                "attributes": list(self.attributes)}


@dataclass(frozen=True)
class SubQuestion:
    """One focused sub-question and the types its retrieval is steered by."""

    text: str
    types: InvolvedTypes


@dataclass(frozen=True)
class DecompositionPlan:
    """Validated decomposition: sub-questions, involved types, and how it was obtained."""

    question: str
    sub_questions: tuple[SubQuestion, ...]
    involved_types: InvolvedTypes
    source: Literal["llm", "heuristic", "fallback", "given"]
    """``"llm"``, ``"heuristic"`` (LLM-free), ``"fallback"`` (LLM output unusable: whole
    question, heuristic types) or ``"given"`` (built by the caller)."""
    dropped: tuple[str, ...] = ()
    """Type names dropped because they are not in the schema, as ``"kind:name"``."""
    notes: tuple[str, ...] = ()
    raw: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the plan in the pattern's JSON shape (plus per-sub-question types)."""
        return {
            "sub_questions": [s.text for s in self.sub_questions],
            "involved_types": self.involved_types.to_dict(),
            "sub_question_types": [s.types.to_dict() for s in self.sub_questions],
            "source": self.source,
            "dropped": list(self.dropped),
            "notes": list(self.notes),
        }

    @classmethod
    def from_questions(
        cls,
        question: str,
        sub_questions: Sequence[str],
        types: InvolvedTypes | Mapping[str, Sequence[str]] | None = None,
        *,
        schema: Schema | None = None,
    ) -> DecompositionPlan:
        """Build a caller-made plan; with ``schema`` its types are validated like LLM output."""
        raw_types = types.to_dict() if isinstance(types, InvolvedTypes) else dict(types or {})
        if schema is not None:
            return dataclasses.replace(
                validate_plan({"sub_questions": list(sub_questions), "involved_types": raw_types},
                              schema, question),
                source="given",
            )
        it = InvolvedTypes(*(tuple(raw_types.get(k, ())) for k in ("nodes", "relations",
                                                                    "attributes")))
        subs = tuple(SubQuestion(s, it) for s in sub_questions if s.strip()) or (
            SubQuestion(question, it),
        )
        return cls(question, subs, it, "given")


_KIND_OF = {"nodes": "entity", "relations": "relation", "attributes": "attribute"}


def _warn(msg: str) -> None:
    # one user-visible channel (warnings); the log record is INFO so that an application
    # without logging configured does not print every message twice
    logger.info(msg)
    warnings.warn(msg, SchemaWarning, stacklevel=4)


def _as_list(value: Any, what: str, consequence: str, notes: list[str]) -> list[Any]:
    """A string becomes a one-item list; a non-list is noted, warned about and dropped."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return value
    msg = f"{what} is not a list ({value!r}); {consequence}"
    notes.append(msg)
    _warn(msg)
    return []


def _validate_types(
    raw: object, schema: Schema, dropped: list[str], notes: list[str]
) -> InvolvedTypes:
    if raw is None:
        return InvolvedTypes()
    if not isinstance(raw, Mapping):
        msg = f"involved_types is not an object ({raw!r}); no types used"
        notes.append(msg)
        _warn(msg)
        return InvolvedTypes()
    extra = set(raw) - set(_KIND_OF)
    if extra:
        msg = f"ignored extra involved_types key(s) {sorted(extra)}"
        notes.append(msg)
        _warn(msg)
    out: dict[str, tuple[str, ...]] = {}
    for key, kind in _KIND_OF.items():
        vals = _as_list(raw.get(key, []), f"involved_types.{key}", "ignored", notes)
        names: list[str] = []
        for v in vals:
            canon = schema.resolve(kind, v) if isinstance(v, str) else None  # type: ignore[arg-type]
            if canon is None:
                dropped.append(f"{kind}:{v}")
                _warn(f"decomposition named {kind} type {v!r}, which is not in schema "
                      f"{schema.name!r}; dropped")
                continue
            if canon not in names:
                names.append(canon)
        out[key] = tuple(names)
    return InvolvedTypes(out["nodes"], out["relations"], out["attributes"])


def validate_plan(
    data: object,
    schema: Schema,
    question: str,
    *,
    max_sub_questions: int = 4,
    raw: str | None = None,
) -> DecompositionPlan:
    """Check a decomposition object against the schema (see the module docstring, step 1).

    * top level must be an object (a bare list is read as the sub-questions);
    * ``sub_questions``: strings (or objects with a ``question`` key and optional
      ``involved_types``), stripped, de-duplicated case-insensitively, at most
      ``max_sub_questions``; none at all -> the whole question;
    * ``involved_types``: every name resolved through the schema (names or aliases, any case);
      unknown ones dropped with a :class:`SchemaWarning` and listed in ``dropped``;
    * extra keys ignored and missing keys defaulted, each with a warning and a note.
    """
    if isinstance(max_sub_questions, bool) or not isinstance(max_sub_questions, int) or (
        max_sub_questions < 1
    ):
        raise ConfigError(f"max_sub_questions must be an int >= 1, got {max_sub_questions!r}")
    notes: list[str] = []
    dropped: list[str] = []
    if isinstance(data, list):
        data = {"sub_questions": data, "involved_types": None}
        notes.append("reply was a bare list; read as sub_questions")
    if not isinstance(data, Mapping):
        raise ParseError(f"decomposition must be a JSON object, got {type(data).__name__}")
    extra = set(data) - {"sub_questions", "involved_types"}
    if extra:
        msg = f"ignored extra decomposition key(s) {sorted(extra)}"
        notes.append(msg)
        _warn(msg)
    for key in ("sub_questions", "involved_types"):
        if key not in data:
            msg = f"decomposition lacks {key!r}; " + (
                "using the whole question" if key == "sub_questions" else "no types used"
            )
            notes.append(msg)
            _warn(msg)
    plan_types = _validate_types(data.get("involved_types"), schema, dropped, notes)
    subs_raw = _as_list(
        data.get("sub_questions", []), "sub_questions", "using the whole question", notes
    )
    subs: list[SubQuestion] = []
    seen: set[str] = set()
    for item in subs_raw:
        types = plan_types
        if isinstance(item, Mapping):
            text = item.get("question") or item.get("text") or ""
            if "involved_types" in item:
                types = _validate_types(item["involved_types"], schema, dropped, notes)
                plan_types = plan_types.union(types)
        else:
            text = item
        if not isinstance(text, str) or not text.strip():
            notes.append(f"skipped empty or non-text sub-question {item!r}")
            continue
        key = " ".join(text.lower().split())
        if key in seen:
            continue
        seen.add(key)
        subs.append(SubQuestion(text.strip(), types))
    if len(subs) > max_sub_questions:
        notes.append(f"{len(subs) - max_sub_questions} sub-question(s) beyond "
                     f"max_sub_questions={max_sub_questions} dropped")
        subs = subs[:max_sub_questions]
    if not subs:
        if "sub_questions" in data:
            msg = "decomposition has zero sub-questions; using the whole question"
            notes.append(msg)
            _warn(msg)
        subs = [SubQuestion(question, plan_types)]
    return DecompositionPlan(
        question=question, sub_questions=tuple(subs), involved_types=plan_types, source="llm",
        dropped=tuple(dropped), notes=tuple(notes), raw=raw,
    )


# ---------------------------------------------------------------------- heuristic path
_QWORD = (r"who|whom|whose|what|which|where|when|why|how|did|does|do|was|were|is|are|has|"
          r"have|had|can|could")
_SPLIT_CONJ = re.compile(rf",?\s+(?:and|but|then|also)\s+(?=(?:{_QWORD})\b)", re.IGNORECASE)
_SPLIT_HARD = re.compile(r"(?<=\?)\s+|;\s*")
_LEAD_CONJ = re.compile(r"^(?:and|but|then|also)\s+(?=\w)", re.IGNORECASE)
_WORD = re.compile(r"\w+", re.UNICODE)
_SUFFIXES = ("ers", "ing", "ies", "er", "ed", "es", "s", "y", "e")


def split_question(question: str) -> list[str]:
    """Split a question into clauses.

    Splits at ``?``/``;`` and at ``and``/``but``/``then``/``also`` followed by a question
    word or auxiliary (``who``, ``where``, ``did``, ...).

    >>> split_question("Who discovered radium and where was its ore mined?")
    ['Who discovered radium?', 'where was its ore mined?']
    """
    q = question.strip()
    parts: list[str] = []
    for chunk in _SPLIT_HARD.split(q):
        parts.extend(_LEAD_CONJ.sub("", p.strip(" ,")) for p in _SPLIT_CONJ.split(chunk))
    parts = [p for p in parts if p]
    if len(parts) > 1 and q.endswith("?"):
        parts = [p if p.endswith("?") else p + "?" for p in parts]
    return parts or [q]


def _stem(word: str) -> str:
    """Strip suffixes crudely, in two passes; stems keep at least 3 letters.

    Enough for "receive"/"received" and "discoverers"/"discovered" to meet.
    """
    w = word.lower()
    for _ in range(2):
        for suf in _SUFFIXES:
            if w.endswith(suf) and len(w) - len(suf) >= 3:
                w = w[: -len(suf)]
                break
    return w


def _phrase(text: str) -> tuple[str, ...]:
    return tuple(_stem(t) for t in _WORD.findall(text.replace("_", " ")))


class _TypeDetector:
    """Finds schema type cues and graph node names in text (n-gram lookup, longest first)."""

    def __init__(self, schema: Schema, graph: KnowledgeGraph | None) -> None:
        self.tables: dict[str, dict[tuple[str, ...], str]] = {}
        for kind in ("entity", "relation", "attribute"):
            tab: dict[tuple[str, ...], str] = {}
            for label, canon in schema.labels(kind).items():  # type: ignore[arg-type]
                ph = _phrase(label)
                if ph:
                    tab.setdefault(ph, canon)
            self.tables[kind] = tab
        names: dict[tuple[str, ...], tuple[str, str]] = {}
        if graph is not None:
            for n in graph.nodes:
                if is_layer_node(n.metadata):
                    continue
                t = schema.resolve("entity", str(n.metadata.get("schema_type") or n.type or ""))
                words = _WORD.findall(n.name.lower())
                if t is None or not words or all(w in STOPWORDS for w in words):
                    continue
                names.setdefault(tuple(_stem(w) for w in words), (t, n.name))
        self.names = names
        lens = [len(k) for tab in self.tables.values() for k in tab] + [len(k) for k in names]
        self.max_len = max(lens, default=1)

    def detect(self, text: str) -> tuple[InvolvedTypes, list[str]]:
        toks = [_stem(t) for t in _WORD.findall(text.lower())]
        found: dict[str, list[str]] = {"entity": [], "relation": [], "attribute": []}
        mentions: list[str] = []
        used = [False] * len(toks)
        for n in range(min(self.max_len, len(toks)), 0, -1):
            for i in range(len(toks) - n + 1):
                if any(used[i: i + n]):
                    continue
                key = tuple(toks[i: i + n])
                hit = False
                for kind, tab in self.tables.items():
                    if key in tab:
                        found[kind].append(tab[key])
                        hit = True
                if key in self.names:
                    typ, name = self.names[key]
                    found["entity"].append(typ)
                    mentions.append(name)
                    hit = True
                if hit:
                    for j in range(i, i + n):
                        used[j] = True
        return InvolvedTypes(
            tuple(dict.fromkeys(found["entity"])),
            tuple(dict.fromkeys(found["relation"])),
            tuple(dict.fromkeys(found["attribute"])),
        ), mentions


def heuristic_decomposition(
    question: str,
    schema: Schema,
    *,
    graph: KnowledgeGraph | None = None,
    max_sub_questions: int = 4,
    _detector: _TypeDetector | None = None,
) -> DecompositionPlan:
    """LLM-free decomposition (documented as much weaker than an LLM).

    Sub-questions are the clauses of :func:`split_question` (at most ``max_sub_questions``;
    extra clauses are appended to the last one). Types of a clause: schema type names and
    aliases found in it (crude stemming, so "receive" finds a relation called "received"),
    plus the types of graph nodes named in it. A clause with no detected type uses the union
    of all clauses' types. Cannot resolve pronouns, paraphrases or implied types.
    """
    q = check_query(question)
    det = _detector or _TypeDetector(schema, graph)
    clauses = split_question(q)
    if len(clauses) > max_sub_questions:
        clauses = clauses[: max_sub_questions - 1] + [" ".join(clauses[max_sub_questions - 1:])]
    detected = [det.detect(c) for c in clauses]
    plan_types = InvolvedTypes()
    for t, _ in detected:
        plan_types = plan_types.union(t)
    subs = tuple(SubQuestion(c, t if not t.is_empty else plan_types)
                 for c, (t, _) in zip(clauses, detected, strict=True))
    mentions = sorted({m for _, ms in detected for m in ms})
    notes: tuple[str, ...] = (
        "LLM-free heuristic decomposition (clause split + type-name matching)",)
    if mentions:
        notes += (f"node names matched: {mentions}",)
    return DecompositionPlan(q, subs, plan_types, "heuristic", notes=notes)


def parse_decomposition(
    text: str,
    schema: Schema,
    question: str,
    *,
    max_sub_questions: int = 4,
    graph: KnowledgeGraph | None = None,
) -> DecompositionPlan:
    """Parse and validate an LLM decomposition reply, repairing it or falling back.

    Repairs are those of :func:`kgpath.llm.parse_json_response`. If nothing parses, the plan
    is the whole question with heuristically detected types (``source="fallback"``).
    """
    try:
        data = parse_json_response(text)
    except ParseError as exc:
        _warn(f"decomposition reply unparsable ({exc}); using the whole question")
        h = heuristic_decomposition(question, schema, graph=graph, max_sub_questions=1)
        return dataclasses.replace(
            h, source="fallback", raw=text,
            notes=(f"unparsable decomposition reply: {exc}", *h.notes),
        )
    try:
        return validate_plan(data, schema, question, max_sub_questions=max_sub_questions, raw=text)
    except ParseError as exc:
        _warn(f"decomposition reply unusable ({exc}); using the whole question")
        h = heuristic_decomposition(question, schema, graph=graph, max_sub_questions=1)
        return dataclasses.replace(h, source="fallback", raw=text,
                                   notes=(f"unusable decomposition: {exc}", *h.notes))


class SchemaDecomposer:
    """Question decomposition with the schema (pattern step 4).

    Parameters
    ----------
    schema
        The same schema used for extraction.
    llm
        Any :class:`kgpath.llm.LLM`; ``None`` uses :func:`heuristic_decomposition`.
    graph
        Optional graph whose node names the heuristic (and the fallback) can recognise.
    max_sub_questions
        Upper bound on sub-questions (default 4; stated in the prompt and enforced).
    prompt
        Template with ``{schema}``, ``{max_sub_questions}`` and ``{question}``.
    """

    def __init__(
        self,
        schema: Schema,
        llm: LLM | None = None,
        *,
        graph: KnowledgeGraph | None = None,
        max_sub_questions: int = 4,
        prompt: str = SCHEMA_DECOMPOSE_PROMPT,
    ) -> None:
        if not isinstance(schema, Schema):
            raise ConfigError(f"schema must be a kgpath Schema, got {type(schema).__name__}")
        if isinstance(max_sub_questions, bool) or not isinstance(max_sub_questions, int) or (
            max_sub_questions < 1
        ):
            raise ConfigError(f"max_sub_questions must be an int >= 1, got {max_sub_questions!r}")
        self.schema = schema
        self.llm = llm
        self.graph = graph
        self.max_sub_questions = max_sub_questions
        self.prompt = prompt
        self._detector: _TypeDetector | None = None
        self._lock = threading.Lock()

    def _det(self) -> _TypeDetector:
        with self._lock:
            if self._detector is None:
                self._detector = _TypeDetector(self.schema, self.graph)
            return self._detector

    def build_prompt(self, question: str, max_sub_questions: int | None = None) -> str:
        """Return the decomposition prompt for ``question``."""
        return self.prompt.format(
            schema=self.schema.describe(),
            max_sub_questions=max_sub_questions or self.max_sub_questions,
            question=question,
        )

    def decompose(
        self, question: str, *, max_sub_questions: int | None = None
    ) -> DecompositionPlan:
        """Decompose ``question`` (LLM if configured, else the heuristic)."""
        q = check_query(question)
        m = max_sub_questions or self.max_sub_questions
        if self.llm is None:
            return heuristic_decomposition(q, self.schema, graph=self.graph,
                                           max_sub_questions=m, _detector=self._det())
        reply = self.llm.complete(self.build_prompt(q, m))
        return parse_decomposition(reply, self.schema, q, max_sub_questions=m, graph=self.graph)

    async def adecompose(
        self, question: str, *, max_sub_questions: int | None = None
    ) -> DecompositionPlan:
        """Async :meth:`decompose` on the LLM's ``acomplete``."""
        q = check_query(question)
        m = max_sub_questions or self.max_sub_questions
        if self.llm is None:
            return heuristic_decomposition(q, self.schema, graph=self.graph,
                                           max_sub_questions=m, _detector=self._det())
        reply = await self.llm.acomplete(self.build_prompt(q, m))
        return parse_decomposition(reply, self.schema, q, max_sub_questions=m, graph=self.graph)


# ---------------------------------------------------------------------- config & results
@dataclass(frozen=True, kw_only=True)
class SchemaRetrieverConfig:
    """Schema-guided retrieval settings. The pattern fixes no numbers; defaults are ours.

    Attributes
    ----------
    k
        Nodes retrieved per sub-question (default 5).
    k_triples
        Triples (edges incident to the retrieved nodes) per sub-question (default 5).
    k_passages
        Provenance passages per sub-question (default 3).
    type_mode
        ``"filter"`` (default; the pattern's "filter ... before scoring"), ``"boost"`` or
        ``"off"``.
    boost
        ``β``: score bonus for a full type match in boost mode (default 0.1, about the spread
        of cosine scores among the top nodes of a small e5 index).
    empty_filter
        When the filter leaves no candidate: ``"boost"`` (default; fall back to boosting, and
        record it) or ``"empty"`` (return nothing for that sub-question).
    mode, alpha
        Base score: ``"vector"`` (default), ``"bm25"`` or ``"hybrid"`` with weight ``alpha``
        (0.7) on the vector score, as in :meth:`GraphIndex.score_candidates`.
    max_sub_questions
        Cap on sub-questions for the built-in decomposer (default 4).
    max_concurrency
        Sub-questions retrieved at once (threads or tasks; default 4).
    route_top_communities
        With a hierarchy: communities a sub-question is routed to (default 3).
    route_min_nodes
        Route only when the graph has at least this many base nodes (default 5000); smaller
        graphs are searched whole.
    include_layer_nodes
        Whether keyword/community layer nodes may be retrieved as evidence (default False).
    """

    k: int = 5
    k_triples: int = 5
    k_passages: int = 3
    type_mode: TypeMode = "filter"
    boost: float = 0.1
    empty_filter: Literal["boost", "empty"] = "boost"
    mode: Literal["vector", "bm25", "hybrid"] = "vector"
    alpha: float = 0.7
    max_sub_questions: int = 4
    max_concurrency: int = 4
    route_top_communities: int = 3
    route_min_nodes: int = 5000
    include_layer_nodes: bool = False

    def __post_init__(self) -> None:
        for name in ("k", "max_sub_questions", "max_concurrency", "route_top_communities"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"{name} must be an int >= 1, got {v!r}")
        for name in ("k_triples", "k_passages", "route_min_nodes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ConfigError(f"{name} must be an int >= 0, got {v!r}")
        if self.type_mode not in ("filter", "boost", "off"):
            raise ConfigError(
                f"type_mode must be 'filter', 'boost' or 'off', got {self.type_mode!r}"
            )
        if isinstance(self.boost, bool) or not isinstance(self.boost, (int, float)) or (
            not np.isfinite(self.boost) or self.boost < 0
        ):
            raise ConfigError(f"boost must be a finite number >= 0, got {self.boost!r}")
        if self.empty_filter not in ("boost", "empty"):
            raise ConfigError(
                f"empty_filter must be 'boost' or 'empty', got {self.empty_filter!r}"
            )
        if self.mode not in ("vector", "bm25", "hybrid"):
            raise ConfigError(f"mode must be 'vector', 'bm25' or 'hybrid', got {self.mode!r}")
        if not isinstance(self.alpha, (int, float)) or not 0.0 <= self.alpha <= 1.0:
            raise ConfigError(f"alpha must be in [0, 1], got {self.alpha!r}")


EvidenceKind = Literal["node", "triple", "passage"]


@dataclass(frozen=True)
class EvidenceItem:
    """One piece of evidence (a node, a triple or a passage) with its trace."""

    kind: EvidenceKind
    key: str
    """Node id, ``"source|relation|target"``, or passage id."""
    text: str
    score: float
    sub_questions: tuple[int, ...]
    """Indices into :attr:`DecompositionPlan.sub_questions` this item was retrieved for."""
    schema_type: str | None = None
    base_score: float = 0.0
    """Score before the type bonus."""
    type_affinity: float | None = None
    """``t(v)`` (nodes) or ``[type(e) ∈ R]`` (triples); ``None`` when no types applied."""
    node: Node | None = None
    edge: Edge | None = None
    passage: Passage | None = None


@dataclass(frozen=True)
class SubQuestionResult:
    """Evidence for one sub-question, before merging."""

    index: int
    question: str
    types: InvolvedTypes
    nodes: tuple[EvidenceItem, ...]
    triples: tuple[EvidenceItem, ...]
    passages: tuple[EvidenceItem, ...]
    trace: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SchemaResult:
    """Merged evidence of all sub-questions plus the plan and per-sub-question traces."""

    question: str
    plan: DecompositionPlan
    sub_results: tuple[SubQuestionResult, ...]
    nodes: tuple[EvidenceItem, ...]
    triples: tuple[EvidenceItem, ...]
    passages: tuple[EvidenceItem, ...]
    config: SchemaRetrieverConfig
    trace: dict[str, Any] = field(default_factory=dict)

    @property
    def evidence(self) -> tuple[EvidenceItem, ...]:
        """Nodes, then triples, then passages."""
        return self.nodes + self.triples + self.passages

    @property
    def ids(self) -> list[str]:
        """Merged node ids in rank order."""
        return [n.key for n in self.nodes]

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.nodes)


# ---------------------------------------------------------------------- typed retrieval
class _TypeTable:
    """Per-graph arrays of canonical schema types (built once per graph version)."""

    def __init__(self, graph: KnowledgeGraph, schema: Schema) -> None:
        self.version = graph.version
        ents = schema.names("entity")
        rels = schema.names("relation")
        self.ent_id = {n: i for i, n in enumerate(ents)}
        self.rel_id = {n: i for i, n in enumerate(rels)}
        n = len(graph)
        self.node_type = np.full(n, -1, dtype=np.int32)
        self.layer = np.zeros(n, dtype=bool)
        self.attrs: list[frozenset[str]] = []
        for i, nd in enumerate(graph.nodes):
            t = schema.resolve("entity", str(nd.metadata.get("schema_type") or nd.type or ""))
            if t is not None:
                self.node_type[i] = self.ent_id[t]
            self.layer[i] = is_layer_node(nd.metadata)
            keys = set(dict(nd.metadata.get("attributes") or {}))
            keys |= {k for k in nd.metadata if k not in ("attributes", "schema_type")}
            self.attrs.append(frozenset(
                a for a in (schema.resolve("attribute", k) for k in keys) if a is not None
            ))
        m = graph.num_edges
        self.edge_type = np.full(m, -1, dtype=np.int32)
        self.edge_layer = np.zeros(m, dtype=bool)
        self.src = np.empty(m, dtype=np.int64)
        self.dst = np.empty(m, dtype=np.int64)
        for j, e in enumerate(graph.edges):
            label = e.metadata.get("schema_type") or e.type or e.relation
            r = schema.resolve("relation", str(label or ""))
            if r is not None:
                self.edge_type[j] = self.rel_id[r]
            self.edge_layer[j] = is_layer_node(e.metadata)
            self.src[j] = graph.index_of(e.source)
            self.dst[j] = graph.index_of(e.target)
        self.ent_names = ents
        self.rel_names = rels


def type_match(
    table: _TypeTable, types: InvolvedTypes
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(t(v) for every node, [type(e) ∈ R] for every edge)``; ``None`` for no types.

    ``t(v)`` is the mean over the non-empty categories among ``N``, ``R``, ``A`` of the
    indicators defined in the module docstring (step 2).
    """
    cats: list[np.ndarray] = []
    edge_ok: np.ndarray | None = None
    n = table.node_type.shape[0]
    if types.nodes:
        ids = [table.ent_id[t] for t in types.nodes if t in table.ent_id]
        cats.append(np.isin(table.node_type, ids))
    if types.relations:
        ids = [table.rel_id[t] for t in types.relations if t in table.rel_id]
        edge_ok = np.isin(table.edge_type, ids)
        ind = np.zeros(n, dtype=bool)
        ind[table.src[edge_ok]] = True
        ind[table.dst[edge_ok]] = True
        cats.append(ind)
    if types.attributes:
        want = set(types.attributes)
        cats.append(np.fromiter((bool(a & want) for a in table.attrs), dtype=bool, count=n))
    if not cats:
        return None, None
    return np.mean(np.vstack(cats).astype(np.float32), axis=0), edge_ok


def merge_evidence(
    results: Sequence[SubQuestionResult],
) -> tuple[tuple[EvidenceItem, ...], tuple[EvidenceItem, ...], tuple[EvidenceItem, ...]]:
    """De-duplicate evidence across sub-questions (pattern: *merge(evidence)*).

    Items with the same kind and key merge into one that keeps the record with the highest
    score and the sorted union of sub-question indices. Output: per kind, score descending,
    ties by first appearance (sub-question order, then rank).
    """
    out = []
    for kind in ("nodes", "triples", "passages"):
        best: dict[str, EvidenceItem] = {}
        tags: dict[str, set[int]] = {}
        order: dict[str, int] = {}
        for r in results:
            for it in getattr(r, kind):
                tags.setdefault(it.key, set()).update(it.sub_questions)
                order.setdefault(it.key, len(order))
                if it.key not in best or it.score > best[it.key].score:
                    best[it.key] = it
        merged = [dataclasses.replace(best[k], sub_questions=tuple(sorted(tags[k]))) for k in best]
        merged.sort(key=lambda it: (-it.score, order[it.key]))
        out.append(tuple(merged))
    return out[0], out[1], out[2]


def format_evidence(result: SchemaResult, *, max_chars: int | None = None) -> str:
    """Evidence as text lines tagged with sub-question numbers (1-based), for an answer LLM."""
    lines = []
    for it in result.evidence:
        tag = ",".join(str(i + 1) for i in it.sub_questions)
        typ = f" ({it.schema_type})" if it.schema_type else ""
        label = "passage " + it.key if it.kind == "passage" else it.kind
        lines.append(f"[{label}{typ}] {it.text} {{sub-question {tag}}}")
    text = "\n".join(lines)
    return text[:max_chars] if max_chars is not None else text


class SchemaGuidedRetriever:
    """Decompose with the schema, retrieve sub-questions concurrently by type, merge.

    Parameters
    ----------
    index
        A :class:`GraphIndex` or a :class:`KnowledgeGraph` (wrapped with ``embedder``).
    schema
        The schema (the same one used to build the graph).
    llm
        LLM for decomposition; ``None`` uses the LLM-free heuristic.
    embedder
        Used only when ``index`` is a bare graph.
    config
        :class:`SchemaRetrieverConfig`; per-call overrides are keyword arguments of
        :meth:`retrieve`, applied with ``dataclasses.replace``.
    decomposer
        A custom :class:`SchemaDecomposer` (default: one built from ``schema``/``llm``).
    hierarchy
        Optional :class:`~kgpath.build.hierarchy.Hierarchy` for community routing on large
        graphs (see ``route_min_nodes``).

    Examples
    --------
    >>> from kgpath import HashingEmbedder
    >>> from kgpath.build.schema import Schema
    >>> from kgpath.data import load_demo_graph
    >>> g = load_demo_graph()
    >>> s = Schema(entities=sorted({n.type for n in g.nodes}))
    >>> r = SchemaGuidedRetriever(g, s, embedder=HashingEmbedder())
    >>> res = r.retrieve("Which place was Marie Curie born in?", k=3)
    >>> {g.node(i).type for i in res.ids} <= {"Place", "Person"}
    True
    """

    def __init__(
        self,
        index: GraphIndex | KnowledgeGraph,
        schema: Schema,
        *,
        llm: LLM | None = None,
        embedder: Any = None,
        config: SchemaRetrieverConfig | None = None,
        decomposer: SchemaDecomposer | None = None,
        hierarchy: Hierarchy | None = None,
    ) -> None:
        if not isinstance(schema, Schema):
            raise ConfigError(f"schema must be a kgpath Schema, got {type(schema).__name__}")
        self.index = index if isinstance(index, GraphIndex) else GraphIndex(index, embedder)
        self.schema = schema
        self.config = config or SchemaRetrieverConfig()
        self.decomposer = decomposer or SchemaDecomposer(
            schema, llm, graph=self.index.graph, max_sub_questions=self.config.max_sub_questions
        )
        self.hierarchy = hierarchy
        self._table: _TypeTable | None = None
        self._router: CommunityRouter | None = None
        self._router_version = -1
        self._lock = threading.Lock()

    @property
    def graph(self) -> KnowledgeGraph:
        """The underlying graph."""
        return self.index.graph

    def _config(self, overrides: Mapping[str, Any]) -> SchemaRetrieverConfig:
        return with_overrides(self.config, overrides, label="schema-retriever")

    # ------------------------------------------------------------------ preparation
    def _prepare(self, cfg: SchemaRetrieverConfig) -> tuple[_TypeTable, CommunityRouter | None]:
        """Build shared structures once, before threads fan out (they are then read-only)."""
        with self._lock:
            self.index.build()
            if cfg.mode != "vector":
                _ = self.index.bm25
            g = self.graph
            if self._table is None or self._table.version != g.version:
                self._table = _TypeTable(g, self.schema)
            router = None
            if self.hierarchy is not None:
                n_base = int((~self._table.layer).sum())
                if n_base >= cfg.route_min_nodes:
                    if self._router is None or self._router_version != g.version:
                        self._router = CommunityRouter(self.hierarchy, g, self.index.embedder)
                        self._router_version = g.version
                    router = self._router
            return self._table, router

    def decompose(self, question: str, **overrides: Any) -> DecompositionPlan:
        """Return the plan :meth:`retrieve` would use."""
        cfg = self._config(overrides)
        return self.decomposer.decompose(question, max_sub_questions=cfg.max_sub_questions)

    async def adecompose(self, question: str, **overrides: Any) -> DecompositionPlan:
        """Async :meth:`decompose`."""
        cfg = self._config(overrides)
        return await self.decomposer.adecompose(question, max_sub_questions=cfg.max_sub_questions)

    # ------------------------------------------------------------------ retrieval
    def retrieve(
        self, question: str, *, plan: DecompositionPlan | None = None, **overrides: Any
    ) -> SchemaResult:
        """Decompose (unless ``plan`` is given), retrieve sub-questions on a thread pool, merge.

        ``overrides`` are :class:`SchemaRetrieverConfig` fields for this call (e.g. ``k=3``).
        """
        q = check_query(question)
        cfg = self._config(overrides)
        t0 = time.perf_counter()
        plan = plan or self.decomposer.decompose(q, max_sub_questions=cfg.max_sub_questions)
        t_plan = time.perf_counter()
        table, router = self._prepare(cfg)

        def one(job: tuple[int, SubQuestion]) -> SubQuestionResult:
            i, sq = job
            qv = self.index.embed_query(sq.text)
            return self._retrieve_one(i, sq, qv, cfg, table, router)

        runs = parallel_map(one, list(enumerate(plan.sub_questions)),
                            max_workers=cfg.max_concurrency)
        return self._finish(q, plan, runs, cfg, t0, t_plan, "threads")

    async def aretrieve(
        self, question: str, *, plan: DecompositionPlan | None = None, **overrides: Any
    ) -> SchemaResult:
        """Async :meth:`retrieve`.

        Decomposition and query embeddings are awaited natively; sub-questions are gathered
        with a concurrency bound.
        """
        q = check_query(question)
        cfg = self._config(overrides)
        t0 = time.perf_counter()
        plan = plan or await self.decomposer.adecompose(q, max_sub_questions=cfg.max_sub_questions)
        t_plan = time.perf_counter()
        table, router = self._prepare(cfg)

        async def one(job: tuple[int, SubQuestion]) -> SubQuestionResult:
            i, sq = job
            qv = await self.index.aembed_query(sq.text)
            return self._retrieve_one(i, sq, qv, cfg, table, router)

        runs = await aparallel_map(one, list(enumerate(plan.sub_questions)),
                                   limit=cfg.max_concurrency)
        return self._finish(q, plan, runs, cfg, t0, t_plan, "asyncio")

    def _finish(
        self,
        q: str,
        plan: DecompositionPlan,
        runs: list[tuple[SubQuestionResult, float, float]],
        cfg: SchemaRetrieverConfig,
        t0: float,
        t_plan: float,
        how: str,
    ) -> SchemaResult:
        subs = []
        for r, s, e in runs:
            tr = dict(r.trace)
            tr.update(started_s=round(s - t0, 6), ended_s=round(e - t0, 6))
            subs.append(dataclasses.replace(r, trace=tr))
        nodes, triples, passages = merge_evidence(subs)
        n_before = sum(len(r.nodes) + len(r.triples) + len(r.passages) for r in subs)
        return SchemaResult(
            question=q, plan=plan, sub_results=tuple(subs), nodes=nodes, triples=triples,
            passages=passages, config=cfg,
            trace={
                "plan_source": plan.source,
                "sub_questions": [s.text for s in plan.sub_questions],
                "involved_types": plan.involved_types.to_dict(),
                "dropped_types": list(plan.dropped),
                "plan_notes": list(plan.notes),
                "type_mode": cfg.type_mode,
                "concurrency": how,
                "max_concurrency": cfg.max_concurrency,
                "decompose_s": round(t_plan - t0, 6),
                "total_s": round(time.perf_counter() - t0, 6),
                "evidence_before_merge": n_before,
                "evidence_after_merge": len(nodes) + len(triples) + len(passages),
            },
        )

    def _retrieve_one(
        self,
        i: int,
        sq: SubQuestion,
        qv: np.ndarray,
        cfg: SchemaRetrieverConfig,
        table: _TypeTable,
        router: CommunityRouter | None,
    ) -> SubQuestionResult:
        g = self.graph
        n = len(g)
        cand = np.arange(n, dtype=np.int64)
        if not cfg.include_layer_nodes:
            cand = cand[~table.layer]
        trace: dict[str, Any] = {"types": sq.types.to_dict()}
        if router is not None:
            members, routed = router.candidates(qv, cfg.route_top_communities)
            cand = np.intersect1d(cand, members)
            trace["routed_communities"] = routed
        tm, edge_ok = (None, None) if cfg.type_mode == "off" else type_match(table, sq.types)
        mode = cfg.type_mode if tm is not None else "off"
        trace["candidates"] = int(cand.size)
        if mode == "filter" and tm is not None:
            keep = cand[tm[cand] > 0]
            trace["filtered_out"] = int(cand.size - keep.size)
            if keep.size == 0:
                trace["filter_empty"] = True
                if cfg.empty_filter == "empty":
                    cand = keep
                else:
                    mode = "boost"
                    trace["fallback"] = "boost (filter matched no candidate)"
            else:
                cand = keep
        trace["type_mode_used"] = mode
        base = self.index.score_candidates(sq.text, qv, cand, mode=cfg.mode, alpha=cfg.alpha)
        boosted = mode == "boost" and tm is not None
        bonus = cfg.boost * tm[cand] if boosted else np.zeros_like(base)  # type: ignore[index]
        final = base + bonus
        pos = top_k(final, min(cfg.k, int(cand.size)))
        node_items = []
        for p in pos:
            v = int(cand[p])
            nd = g.node_at(v)
            t = table.node_type[v]
            node_items.append(EvidenceItem(
                kind="node", key=nd.id, text=nd.search_text, score=float(final[p]),
                sub_questions=(i,), schema_type=table.ent_names[t] if t >= 0 else None,
                base_score=float(base[p]),
                type_affinity=float(tm[v]) if tm is not None else None, node=nd,
            ))
        triple_items = self._triples(i, sq, qv, cfg, table, mode, edge_ok,
                                     np.asarray([int(cand[p]) for p in pos], dtype=np.int64),
                                     trace)
        passage_items = self._passages(i, node_items + triple_items, cfg)
        return SubQuestionResult(i, sq.text, sq.types, tuple(node_items), tuple(triple_items),
                                 tuple(passage_items), trace)

    def _triples(
        self,
        i: int,
        sq: SubQuestion,
        qv: np.ndarray,
        cfg: SchemaRetrieverConfig,
        table: _TypeTable,
        mode: str,
        edge_ok: np.ndarray | None,
        hits: np.ndarray,
        trace: dict[str, Any],
    ) -> list[EvidenceItem]:
        if cfg.k_triples == 0 or hits.size == 0:
            return []
        g = self.graph
        csr = g.csr()
        parts: list[np.ndarray] = []
        for d in ("out", "in"):
            ip, ed = csr[f"{d}_indptr"], csr[f"{d}_edges"]
            parts.extend(ed[ip[h]: ip[h + 1]] for h in hits)
        eids = np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
        eids = eids[~table.edge_layer[eids]]
        if eids.size == 0:
            return []
        if mode == "filter" and edge_ok is not None:
            kept = eids[edge_ok[eids]]
            if kept.size or cfg.empty_filter == "empty":
                trace["triples_filtered_out"] = int(eids.size - kept.size)
                eids = kept
            else:
                trace["triple_fallback"] = "boost (no incident edge of the involved relations)"
                mode = "boost"
            if eids.size == 0:
                return []
        ends = np.unique(np.concatenate([table.src[eids], table.dst[eids]]))
        s = self.index.score_candidates(sq.text, qv, ends, mode=cfg.mode, alpha=cfg.alpha)
        pos_of = {int(v): float(x) for v, x in zip(ends, s, strict=True)}
        base = np.asarray([(pos_of[int(table.src[e])] + pos_of[int(table.dst[e])]) / 2
                           for e in eids], dtype=np.float32)
        match = edge_ok[eids].astype(np.float32) if edge_ok is not None else None
        final = base + cfg.boost * match if (mode == "boost" and match is not None) else base
        items = []
        for p in top_k(final, min(cfg.k_triples, int(eids.size))):
            e = g.edge_at(int(eids[p]))
            t = table.edge_type[int(eids[p])]
            text = f"{g.node(e.source).name} -[{e.relation}]-> {g.node(e.target).name}"
            if e.text and e.text != f"{e.source} {e.relation} {e.target}":
                text += f" ({e.text})"
            items.append(EvidenceItem(
                kind="triple", key=f"{e.source}|{e.relation}|{e.target}", text=text,
                score=float(final[p]), sub_questions=(i,),
                schema_type=table.rel_names[t] if t >= 0 else None, base_score=float(base[p]),
                type_affinity=float(match[p]) if match is not None else None, edge=e,
            ))
        return items

    def _passages(
        self, i: int, items: list[EvidenceItem], cfg: SchemaRetrieverConfig
    ) -> list[EvidenceItem]:
        if cfg.k_passages == 0:
            return []
        g = self.graph
        known = g.passages
        score: dict[str, float] = {}
        for it in items:
            prov = it.node.provenance if it.node is not None else (
                it.edge.provenance if it.edge is not None else ()
            )
            for pid in prov:
                if pid in known and (pid not in score or it.score > score[pid]):
                    score[pid] = it.score
        ranked = sorted(score, key=lambda p: -score[p])[: cfg.k_passages]  # stable: first seen
        return [EvidenceItem(kind="passage", key=p, text=known[p].text, score=score[p],
                             sub_questions=(i,), passage=known[p], base_score=score[p])
                for p in ranked]
