"""Extraction with any LLM: open (entities, then triples) or schema-bounded, cached on disk.

Each passage is one prompt (the hook pair :meth:`LLMExtractor.extract_passage` /
:meth:`LLMExtractor.aextract_passage`, on the LLM's native ``complete`` / ``acomplete``).
Passages run ``max_concurrency`` at a time (threads for the sync path, tasks for the async
path: the :class:`~kgpath.ingest.extractor.Extractor` template). The model is called through
the one call path (:func:`kgpath.llm.call_llm`: provider errors retried with backoff, each
call bounded by a timeout, then a :class:`~kgpath.errors.BackendError`); an unusable reply
is asked again up to ``retries`` times. A passage whose calls failed or whose replies stay
unusable is skipped with the reason recorded in its
:attr:`~kgpath.ingest.extraction.Extraction.notes` (they reach the ingest report) and a
warning naming the passage; when *every* passage of a batch failed on the model, the
:class:`~kgpath.errors.BackendError` is raised instead (a dead backend is an error, a flaky
one a note). Replies are read in every common shape (:mod:`kgpath.ingest.extract.parse`)
and cached by a content hash of (model fingerprint, prompt) in ``cache_dir``, written
atomically, so a re-run never pays twice and two models never share replies.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Generator, Sequence
from typing import Any

from kgpath._files import atomic_write, user_path
from kgpath.errors import BackendError, ConfigError, ParseError, PersistenceError, short
from kgpath.ingest.chunking import TextPassage
from kgpath.ingest.extract.parse import read_reply
from kgpath.ingest.extraction import (
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    OpenExtractor,
)
from kgpath.llm import CallPolicy, acall_llm, as_llm, call_llm, llm_fingerprint, parse_json_response
from kgpath.prompts.ingest import OPEN_EXTRACT_PROMPT

__all__ = ["LLMExtractor"]

logger = logging.getLogger(__name__)


class LLMExtractor(OpenExtractor):
    """Entities and triples from an LLM (see the module docstring).

    Parameters
    ----------
    llm
        Any kgpath :class:`~kgpath.llm.LLM`, or a framework model an installed adapter
        wraps (:func:`kgpath.llm.as_llm`); anything else is a ``ConfigError``.
    schema
        A :class:`~kgpath.ingest.schema.Schema`: use the schema-bounded prompt
        (:data:`~kgpath.prompts.schema.SCHEMA_EXTRACT_PROMPT`) instead of the open one.
    prompt
        Template with ``{text}`` and ``{max_triples}`` (open mode).
    max_triples
        Asked-for upper bound per passage.
    max_concurrency
        Calls in flight at once.
    retries
        Extra attempts after an unusable reply (errors of the model itself are retried by
        the call path, per ``policy``).
    cache_dir
        Directory of cached replies (``None``: no cache), created when the first reply is
        stored; a path that exists and is not a directory is a
        :class:`~kgpath.errors.PersistenceError`, and so is a reply that cannot be written
        (a full disk), never a partial cache file.
    policy
        :class:`~kgpath.llm.CallPolicy` of the model calls (retries, timeout, backoff);
        ``None``: the model's own (:class:`~kgpath.llm.ReliableLLM`) or the default.

    Examples
    --------
    >>> from kgpath.llm import ScriptedLLM
    >>> reply = '{"entities": [{"name": "Curie", "type": "Person"}], "triples": []}'
    >>> ex = LLMExtractor(ScriptedLLM([reply]))
    >>> [e.name for e in ex.extract_passage("p", "Curie.").entities]
    ['Curie']
    """

    name = "llm"

    def __init__(self, llm: Any, *, schema: Any = None, prompt: str = OPEN_EXTRACT_PROMPT,
                 max_triples: int = 20, max_concurrency: int = 4, retries: int = 2,
                 cache_dir: str | os.PathLike[str] | None = None,
                 policy: CallPolicy | None = None) -> None:
        llm = as_llm(llm)
        if policy is not None and not isinstance(policy, CallPolicy):
            raise ConfigError(f"policy must be a kgpath CallPolicy, got {short(policy)}")
        for label, v, low in (("max_triples", max_triples, 1),
                              ("max_concurrency", max_concurrency, 1), ("retries", retries, 0)):
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ConfigError(f"{label} must be an int >= {low}, got {v!r}")
        self.llm, self.schema, self.prompt = llm, schema, prompt
        self.max_triples, self.max_concurrency, self.retries = max_triples, max_concurrency, retries
        self.cache_dir = None if cache_dir is None else user_path(cache_dir, "cache_dir")
        if self.cache_dir is not None and os.path.lexists(self.cache_dir) \
                and not self.cache_dir.is_dir():
            raise PersistenceError(f"cache_dir {str(self.cache_dir)!r} exists and is not a "
                                   "directory")
        self.policy = policy

    # ------------------------------------------------------------------ prompt + cache
    def render(self, text: str) -> str:
        """The prompt for one passage."""
        if self.schema is None:
            return self.prompt.format(text=text, max_triples=self.max_triples)
        from kgpath.prompts.schema import SCHEMA_EXTRACT_PROMPT

        return SCHEMA_EXTRACT_PROMPT.format(schema=self.schema.describe(), evolution_note="",
                                            max_triples=self.max_triples, text=text)

    def _key(self, prompt: str) -> str:
        """Cache key: the model's fingerprint (class + model + temperature) and the prompt."""
        model = llm_fingerprint(self.llm)
        return hashlib.sha256(f"{model}\x1f{prompt}".encode()).hexdigest()

    def _cached(self, prompt: str) -> str | None:
        if self.cache_dir is None:
            return None
        path = self.cache_dir / f"{self._key(prompt)}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data.get("reply") if isinstance(data, dict) else None

    def _store(self, prompt: str, reply: str) -> None:
        if self.cache_dir is None:
            return
        atomic_write(self.cache_dir / f"{self._key(prompt)}.json",
                     json.dumps({"reply": reply}), what="a cached LLM reply")

    # ------------------------------------------------------------------ one passage
    def _attempts(self, passage_id: str,
                  text: str) -> Generator[str, str | BackendError, Extraction]:
        """The attempt loop for one passage, shared by the sync and async paths.

        Yields each prompt that needs a completion and receives the reply, or the
        :class:`BackendError` the call path raised (already retried: the passage is
        skipped); returns the extraction or a recorded skip.
        """
        prompt = self.render(text)
        notes: list[str] = []
        reply = self._cached(prompt)
        for attempt in range(self.retries + 1):
            if reply is None:
                got = yield prompt
                if isinstance(got, BackendError):
                    return self._skip(passage_id, notes, f"{_LLM_FAILED}: {got}")
                reply = got
            ex = self._parse(passage_id, text, reply, notes, attempt)
            if ex is not None:
                self._store(prompt, reply)
                return ex
            reply = None
        return self._skip(passage_id, notes, "skipped: no usable reply")

    @staticmethod
    def _skip(passage_id: str, notes: list[str], why: str) -> Extraction:
        logger.warning("LLM extraction of passage %r: %s", passage_id,
                       "; ".join([*notes, why])[-500:])
        return Extraction(passage_id, notes=(*notes, why), failed=True)

    def _step(self, passage_id: str) -> str:
        return f"extraction of passage {passage_id!r}"

    # ------------------------------------------------------------------ the hook pair
    def extract_passage(self, passage_id: str, text: str) -> Extraction:
        """Extract one passage (:func:`~kgpath.llm.call_llm`; see the module docstring)."""
        gen = self._attempts(passage_id, text)
        try:
            prompt = next(gen)
            while True:
                try:
                    got: str | BackendError = call_llm(
                        self.llm, prompt, step=self._step(passage_id), policy=self.policy)
                except BackendError as exc:
                    got = exc
                prompt = gen.send(got)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    async def aextract_passage(self, passage_id: str, text: str) -> Extraction:
        """Async :meth:`extract_passage` (:func:`~kgpath.llm.acall_llm`)."""
        gen = self._attempts(passage_id, text)
        try:
            prompt = next(gen)
            while True:
                try:
                    got: str | BackendError = await acall_llm(
                        self.llm, prompt, step=self._step(passage_id), policy=self.policy)
                except BackendError as exc:
                    got = exc
                prompt = gen.send(got)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    def extract_passages(self, passages: Sequence[TextPassage]) -> list[Extraction]:
        """The hook over a batch; raises when the model failed on every passage of it."""
        return _check_backend(super().extract_passages(passages))

    async def aextract_passages(self, passages: Sequence[TextPassage]) -> list[Extraction]:
        """Async :meth:`extract_passages`."""
        return _check_backend(await super().aextract_passages(passages))

    def _parse(self, passage_id: str, text: str, reply: str, notes: list[str],
               attempt: int = 0) -> Extraction | None:
        """The reply as an extraction (``None``: unusable, reason noted)."""
        try:
            items = read_reply(parse_json_response(reply))
        except ParseError as exc:
            notes.append(f"attempt {attempt + 1}: unparseable reply: {exc}")
            return None
        sentence = text[:400]
        ents = [ExtractedEntity(e.name, e.type or "Concept", sentence) for e in items.entities]
        named = {e.name.casefold() for e in ents}
        rels = []
        for t in items.triples:
            rels.append(ExtractedRelation(t.head, t.relation, t.tail, "llm", sentence))
            for name, typ in ((t.head, t.head_type), (t.tail, t.tail_type)):
                if typ and name.casefold() not in named:  # typed ends of 5-lists / objects
                    named.add(name.casefold())
                    ents.append(ExtractedEntity(name, typ, sentence))
        return Extraction(passage_id, tuple(ents), tuple(rels), (*notes, *items.notes))


_LLM_FAILED = "skipped: LLM call failed"


def _check_backend(runs: list[Extraction]) -> list[Extraction]:
    """``runs``, or the :class:`BackendError` when the model failed on every passage."""
    failed = [r for r in runs if r.notes and r.notes[-1].startswith(_LLM_FAILED)]
    if runs and len(failed) == len(runs):
        raise BackendError(
            f"the LLM failed on every passage of the batch ({len(runs)}), e.g. "
            f"{runs[0].passage_id!r}: {failed[0].notes[-1][len(_LLM_FAILED) + 2:]}")
    return runs
