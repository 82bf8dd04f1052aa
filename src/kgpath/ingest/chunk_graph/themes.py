"""Step 3 of the article: hierarchical attributes, ``num_themes`` themes per document.

Article section "Knowledge Graph Architecture", step 3 ("Hierarchical Attributes"): each
document gets 5 core themes, passed down to its chunks and sentences. Themes come from an
LLM when one is configured (:class:`LLMThemes`), otherwise from TF-IDF keyphrases
(:class:`KeywordThemes`: the documented, weaker offline path). Both sit behind one hook,
:class:`ThemeExtractor`.
"""

from __future__ import annotations

import asyncio
import math
import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Sequence

from kgpath.errors import BackendError, ParseError
from kgpath.ingest.documents import SourceDocument
from kgpath.llm import LLM, acall_llm, as_llm, call_llm, parse_json_response
from kgpath.prompts.traversal import THEME_EXTRACTION_PROMPT

__all__ = ["KeywordThemes", "LLMThemes", "ThemeExtractor"]

_THEME_STOP = frozenset(
    """a about above after again against all also although am among an and another any are
    as at be became because been before being below between both but by can could did do
    does doing during each early either else first for former from further had has have
    having he her here hers him his how however i if in include included including into is
    it its itself known later latter less many may me more most much must my near neither
    no nor not now of off often on once one only or other our out over own part per same
    second several she should since so some such than that the their them then there these
    they third this those though three through thus to too two under until up upon us used
    using very via was we well were what when where whether which while who whom whose why
    will with within without would year years you your also named called based became""".split()
)
_WORD = re.compile(r"[^\W\d_][\w'-]*", re.UNICODE)


class ThemeExtractor(ABC):
    """Policy hook: produce up to ``num_themes`` themes for every document."""

    #: Label recorded in ``document`` node metadata (``theme_source``).
    name: str = "themes"

    @abstractmethod
    def extract(
        self, docs: Sequence[SourceDocument], num_themes: int
    ) -> list[tuple[list[str], str]]:
        """Return ``(themes, source_label)`` per document, in input order."""

    async def aextract(
        self, docs: Sequence[SourceDocument], num_themes: int
    ) -> list[tuple[list[str], str]]:
        """Async :meth:`extract` (default: run the sync version in a thread)."""
        return await asyncio.to_thread(self.extract, docs, num_themes)


class KeywordThemes(ThemeExtractor):
    """Offline themes: the top TF-IDF unigrams and bigrams of each document.

    ``score(t, d) = tf(t, d) * (log((1 + N) / (1 + df(t))) + 1)`` over lower-cased words
    (stop words and numbers dropped); bigrams are adjacent kept words. A candidate whose
    words are all inside an already chosen theme (or vice versa) is skipped. This is the
    documented, weaker LLM-free path: keyphrases, not abstractive topics.
    """

    name = "keywords"

    @staticmethod
    def _terms(doc: SourceDocument) -> list[str]:
        terms: list[str] = []
        for part in ([doc.title] if doc.title else []) + list(doc.sentences):
            words = [w.lower().strip("'-") for w in _WORD.findall(part)]
            prev: str | None = None
            for w in words:
                if len(w) < 3 or w in _THEME_STOP:
                    prev = None
                    continue
                terms.append(w)
                if prev is not None:
                    terms.append(f"{prev} {w}")
                prev = w
        return terms

    def extract(
        self, docs: Sequence[SourceDocument], num_themes: int
    ) -> list[tuple[list[str], str]]:
        """TF-IDF keyphrases per document (see the class docstring)."""
        per_doc = [Counter(self._terms(d)) for d in docs]
        df: Counter[str] = Counter()
        for c in per_doc:
            df.update(c.keys())
        n = len(docs)
        out: list[tuple[list[str], str]] = []
        for c in per_doc:
            first = {t: i for i, t in enumerate(c)}  # Counter keeps first-seen order
            scored = sorted(
                c.items(),
                key=lambda kv: (
                    -kv[1] * (math.log((1 + n) / (1 + df[kv[0]])) + 1.0),
                    first[kv[0]],
                ),
            )
            chosen: list[str] = []
            for term, _ in scored:
                words = set(term.split())
                if any(words <= set(t.split()) or set(t.split()) <= words for t in chosen):
                    continue
                chosen.append(term)
                if len(chosen) == num_themes:
                    break
            out.append((chosen, self.name))
        return out


_STEP = "chunk-graph theme extraction"


class LLMThemes(ThemeExtractor):
    """Themes from an LLM (article step 3), one call per document.

    A reply that does not parse to a list of strings falls back to :class:`KeywordThemes`
    for that document; the fallback is recorded as ``"keywords (llm reply unusable)"``.
    """

    name = "llm"

    def __init__(self, llm: LLM, *, max_chars: int = 4000, concurrency: int = 8) -> None:
        self.llm = as_llm(llm)
        self.max_chars = max_chars
        self.concurrency = concurrency
        self._fallback = KeywordThemes()

    def prompt(self, doc: SourceDocument, num_themes: int) -> str:
        """Fill :data:`THEME_EXTRACTION_PROMPT` for one document."""
        return THEME_EXTRACTION_PROMPT.format(
            num_themes=num_themes, title=doc.title or doc.id, text=doc.text[: self.max_chars]
        )

    @staticmethod
    def _parse(reply: str, num_themes: int) -> list[str] | None:
        try:
            val = parse_json_response(reply, expect=(list, dict))
        except ParseError:
            return None
        if isinstance(val, dict):
            val = val.get("themes")
        if not isinstance(val, list):
            return None
        themes = []
        for t in val:
            if isinstance(t, str) and " ".join(t.split()):
                themes.append(" ".join(t.lower().split()))
        themes = list(dict.fromkeys(themes))[:num_themes]
        return themes or None

    def _finish(
        self, docs: Sequence[SourceDocument], replies: list[str], num_themes: int
    ) -> list[tuple[list[str], str]]:
        fallback: list[tuple[list[str], str]] | None = None
        out: list[tuple[list[str], str]] = []
        for i, reply in enumerate(replies):
            themes = self._parse(reply, num_themes)
            if themes is None:
                if fallback is None:
                    fallback = self._fallback.extract(docs, num_themes)
                out.append((fallback[i][0], "keywords (llm reply unusable)"))
            else:
                out.append((themes, self.name))
        return out

    def extract(
        self, docs: Sequence[SourceDocument], num_themes: int
    ) -> list[tuple[list[str], str]]:
        """One sync LLM call per document."""
        replies = []
        for d in docs:
            try:  # a model that keeps failing: the keyword themes, as for an unusable reply
                replies.append(call_llm(self.llm, self.prompt(d, num_themes), step=_STEP))
            except BackendError:
                replies.append("")
        return self._finish(docs, replies, num_themes)

    async def aextract(
        self, docs: Sequence[SourceDocument], num_themes: int
    ) -> list[tuple[list[str], str]]:
        """Concurrent async LLM calls (at most ``concurrency`` in flight)."""
        sem = asyncio.Semaphore(self.concurrency)

        async def one(d: SourceDocument) -> str:
            async with sem:
                try:
                    return await acall_llm(self.llm, self.prompt(d, num_themes), step=_STEP)
                except BackendError:
                    return ""

        replies = list(await asyncio.gather(*(one(d) for d in docs)))
        return self._finish(docs, replies, num_themes)

