"""Pattern step 4, *decompose_question(question, schema)*: sub-questions plus involved types.

The LLM sees the schema and returns ``{sub_questions: [...], involved_types: {nodes,
relations, attributes}}``. :func:`validate_plan` checks it against the schema: unknown type
names are dropped with a :class:`~kgpath.ingest.schema.SchemaWarning`; extra keys are ignored
and missing keys default (both warned); zero sub-questions or unparsable output fall back to
the whole question. Without an LLM, :func:`heuristic_decomposition` splits on question marks,
semicolons and conjunctions followed by a question word, and detects types by matching schema
names/aliases and graph node names in the text. It is much weaker than an LLM (no
paraphrase, no implicit types) and the plan says ``source="heuristic"``.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kgpath.errors import BackendError, ConfigError, ParseError, short
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import check_query
from kgpath.ingest.hierarchy import is_layer_node
from kgpath.ingest.schema import Schema, SchemaWarning
from kgpath.llm import LLM, acall_llm, as_llm, call_llm, parse_json_response
from kgpath.prompts.schema import SCHEMA_DECOMPOSE_PROMPT
from kgpath.search.bm25 import STOPWORDS

__all__ = [
    "DecompositionPlan",
    "InvolvedTypes",
    "SchemaDecomposer",
    "SubQuestion",
    "heuristic_decomposition",
    "parse_decomposition",
    "split_question",
    "validate_plan",
]

logger = logging.getLogger("kgpath.schema")


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
    """Check a decomposition object against the schema (pattern step 4).

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
        raise ConfigError(f"max_sub_questions must be an int >= 1, got {short(max_sub_questions)}")
    notes: list[str] = []
    dropped: list[str] = []
    data = _check_plan_keys(data, notes)
    plan_types = _validate_types(data.get("involved_types"), schema, dropped, notes)
    subs_raw = _as_list(
        data.get("sub_questions", []), "sub_questions", "using the whole question", notes
    )
    subs, plan_types = _validate_sub_questions(subs_raw, plan_types, schema, dropped, notes)
    if len(subs) > max_sub_questions:
        notes.append(f"{len(subs) - max_sub_questions} sub-question(s) beyond "
                     f"max_sub_questions={max_sub_questions} dropped")
        subs = subs[:max_sub_questions]
    if not subs:
        if "sub_questions" in data:
            _note("decomposition has zero sub-questions; using the whole question", notes)
        subs = [SubQuestion(question, plan_types)]
    return DecompositionPlan(
        question=question, sub_questions=tuple(subs), involved_types=plan_types, source="llm",
        dropped=tuple(dropped), notes=tuple(notes), raw=raw,
    )


def _note(msg: str, notes: list[str]) -> None:
    """Record ``msg`` in the plan's notes and warn with it."""
    notes.append(msg)
    _warn(msg)


def _check_plan_keys(data: object, notes: list[str]) -> Mapping[str, Any]:
    """The top-level object: a bare list read as sub-questions; extra/missing keys noted."""
    if isinstance(data, list):
        data = {"sub_questions": data, "involved_types": None}
        notes.append("reply was a bare list; read as sub_questions")
    if not isinstance(data, Mapping):
        raise ParseError(f"decomposition must be a JSON object, got {type(data).__name__}")
    extra = set(data) - {"sub_questions", "involved_types"}
    if extra:
        _note(f"ignored extra decomposition key(s) {sorted(extra)}", notes)
    for key in ("sub_questions", "involved_types"):
        if key not in data:
            _note(f"decomposition lacks {key!r}; " + (
                "using the whole question" if key == "sub_questions" else "no types used"
            ), notes)
    return data


def _validate_sub_questions(
    items: Sequence[Any],
    plan_types: InvolvedTypes,
    schema: Schema,
    dropped: list[str],
    notes: list[str],
) -> tuple[list[SubQuestion], InvolvedTypes]:
    """Sub-questions as text, de-duplicated; per-item types widen the plan's types."""
    subs: list[SubQuestion] = []
    seen: set[str] = set()
    for item in items:
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
    return subs, plan_types


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


_STEP = "schema question decomposition"


class SchemaDecomposer:
    """Question decomposition with the schema (pattern step 4).

    Parameters
    ----------
    schema
        The same schema used for extraction.
    llm
        Any :class:`kgpath.llm.LLM` (or a framework model, :func:`kgpath.llm.as_llm`),
        called through :func:`kgpath.llm.call_llm`; ``None`` uses
        :func:`heuristic_decomposition`. A model that keeps failing gives the same fallback
        as an unusable reply (the whole question, ``source="fallback"``, the error noted).
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
            raise ConfigError(
                f"max_sub_questions must be an int >= 1, got {short(max_sub_questions)}")
        self.schema = schema
        self.llm = None if llm is None else as_llm(llm)  # ConfigError for llm="gpt"
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
        try:
            reply = call_llm(self.llm, self.build_prompt(q, m), step=_STEP)
        except BackendError as exc:
            return self._after_failure(q, exc)
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
        try:
            reply = await acall_llm(self.llm, self.build_prompt(q, m), step=_STEP)
        except BackendError as exc:
            return self._after_failure(q, exc)
        return parse_decomposition(reply, self.schema, q, max_sub_questions=m, graph=self.graph)

    def _after_failure(self, question: str, exc: BackendError) -> DecompositionPlan:
        """The documented fallback when the model failed: the whole question, noted."""
        _warn(f"decomposition LLM failed ({exc}); using the whole question")
        h = heuristic_decomposition(question, self.schema, graph=self.graph,
                                    max_sub_questions=1, _detector=self._det())
        return dataclasses.replace(h, source="fallback",
                                   notes=(f"LLM call failed: {exc}", *h.notes))

