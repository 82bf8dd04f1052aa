"""Extraction with any LLM: open (entities, then triples) or schema-bounded, cached on disk.

Each passage is one prompt (the hook pair :meth:`LLMExtractor.extract_passage` /
:meth:`LLMExtractor.aextract_passage`, on the LLM's native ``complete`` / ``acomplete``).
Passages run ``max_concurrency`` at a time (threads for the sync path, tasks for the async
path: the :class:`~kgpath.ingest.extractor.Extractor` template), calls are retried on
errors and on unparseable replies,
and a reply that stays malformed is skipped with the reason recorded in the passage's
:attr:`~kgpath.ingest.extraction.Extraction.notes`. Replies are cached by a content hash
of (model, prompt) in ``cache_dir``, written atomically, so a re-run never pays twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any

from kgpath.errors import ConfigError, KgpathError, ParseError
from kgpath.ingest.extraction import (
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    OpenExtractor,
)
from kgpath.llm import parse_json_response
from kgpath.prompts.ingest import OPEN_EXTRACT_PROMPT

__all__ = ["LLMExtractor"]

logger = logging.getLogger(__name__)


class LLMExtractor(OpenExtractor):
    """Entities and triples from an LLM (see the module docstring).

    Parameters
    ----------
    llm
        Any kgpath :class:`~kgpath.llm.LLM` (``complete`` / ``acomplete``).
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
        Extra attempts after an error or an unparseable reply.
    cache_dir
        Directory of cached replies (``None``: no cache).

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
                 cache_dir: str | os.PathLike[str] | None = None) -> None:
        if not (hasattr(llm, "complete") and hasattr(llm, "acomplete")):
            raise ConfigError(f"llm must have complete/acomplete, got {type(llm).__name__}")
        for label, v, low in (("max_triples", max_triples, 1),
                              ("max_concurrency", max_concurrency, 1), ("retries", retries, 0)):
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ConfigError(f"{label} must be an int >= {low}, got {v!r}")
        self.llm, self.schema, self.prompt = llm, schema, prompt
        self.max_triples, self.max_concurrency, self.retries = max_triples, max_concurrency, retries
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None

    # ------------------------------------------------------------------ prompt + cache
    def render(self, text: str) -> str:
        """The prompt for one passage."""
        if self.schema is None:
            return self.prompt.format(text=text, max_triples=self.max_triples)
        from kgpath.prompts.schema import SCHEMA_EXTRACT_PROMPT

        return SCHEMA_EXTRACT_PROMPT.format(schema=self.schema.describe(), evolution_note="",
                                            max_triples=self.max_triples, text=text)

    def _key(self, prompt: str) -> str:
        model = f"{type(self.llm).__module__}.{type(self.llm).__name__}:" \
                f"{getattr(self.llm, 'model', '')}"
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
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.cache_dir, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"reply": reply}, fh)
        os.replace(tmp, self.cache_dir / f"{self._key(prompt)}.json")

    # ------------------------------------------------------------------ one passage
    def _attempts(self, passage_id: str,
                  text: str) -> Generator[str, str | KgpathError, Extraction]:
        """The retry loop for one passage, shared by the sync and async paths.

        Yields each prompt that needs a completion and receives the reply, or the
        :class:`KgpathError` the call raised; returns the extraction (or a recorded skip).
        """
        prompt = self.render(text)
        notes: list[str] = []
        reply = self._cached(prompt)
        for attempt in range(self.retries + 1):
            if reply is None:
                got = yield prompt
                if isinstance(got, KgpathError):
                    notes.append(f"attempt {attempt + 1}: {got}")
                    continue
                reply = got
            ex = self._parse(passage_id, text, reply, notes)
            if ex is not None:
                self._store(prompt, reply)
                return ex
            reply = None
        return Extraction(passage_id, notes=(*notes, "skipped: no usable reply"), failed=True)

    # ------------------------------------------------------------------ the hook pair
    def extract_passage(self, passage_id: str, text: str) -> Extraction:
        """Extract one passage (``llm.complete``, retried; see the module docstring)."""
        gen = self._attempts(passage_id, text)
        try:
            prompt = next(gen)
            while True:
                try:
                    got: str | KgpathError = self.llm.complete(prompt)
                except KgpathError as exc:
                    got = exc
                prompt = gen.send(got)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    async def aextract_passage(self, passage_id: str, text: str) -> Extraction:
        """Async :meth:`extract_passage` on the LLM's native ``acomplete``."""
        gen = self._attempts(passage_id, text)
        try:
            prompt = next(gen)
            while True:
                try:
                    got: str | KgpathError = await self.llm.acomplete(prompt)
                except KgpathError as exc:
                    got = exc
                prompt = gen.send(got)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    def _parse(self, passage_id: str, text: str, reply: str,
               notes: list[str]) -> Extraction | None:
        try:
            data = parse_json_response(reply, expect=dict)
        except ParseError as exc:
            notes.append(f"unparseable reply: {exc}")
            return None
        sentence = text[:400]
        ents = []
        for i, e in enumerate(data.get("entities") or []):
            if isinstance(e, dict) and isinstance(e.get("name"), str) and e["name"].strip():
                ents.append(ExtractedEntity(e["name"].strip(), str(e.get("type") or "Concept"),
                                            sentence))
            else:
                notes.append(f"entity #{i} skipped: {e!r:.80}")
        rels = []
        for i, t in enumerate(data.get("triples") or []):
            fields = [t.get(k) for k in ("head", "relation", "tail")] if isinstance(t, dict) else []
            strs = [f.strip() for f in fields if isinstance(f, str)]
            if len(strs) == 3 and all(strs):
                h, r, tl = strs
                rels.append(ExtractedRelation(h, r, tl, "llm", sentence))
            else:
                notes.append(f"triple #{i} skipped: {t!r:.80}")
        return Extraction(passage_id, tuple(ents), tuple(rels), tuple(notes))
