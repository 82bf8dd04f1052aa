"""Section 4.1, first half: the query keywords ``K_q``, by LLM (JSON) or offline heuristics."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kgpath.errors import BackendError, ParseError
from kgpath.index.graph_index import check_query
from kgpath.llm import LLM, acall_llm, call_llm, parse_json_response
from kgpath.prompts.pathrag import PATHRAG_KEYWORD_PROMPT

__all__ = [
    "KeywordExtraction",
    "KeywordPrompt",
    "aextract_keywords",
    "extract_keywords",
    "offline_keywords",
    "parse_keyword_split",
    "parse_keywords",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class KeywordExtraction:
    """Keywords ``K_q`` of section 4.1 and where they came from."""

    keywords: tuple[str, ...]
    source: str
    """``"llm"``, ``"offline"`` (no LLM configured) or ``"offline-fallback"``."""
    raw_reply: str | None = None
    error: str | None = None
    """Why the LLM reply was not used (for ``"offline-fallback"``)."""
    high_level: tuple[str, ...] = ()
    """The high-level (global) keywords among :attr:`keywords`: the reply's ``"concepts"``
    or ``"high_level_keywords"`` (LightRAG's split, which PathRAG's ``kg_query`` inherits).
    Offline extraction has none."""

    @property
    def low_level(self) -> tuple[str, ...]:
        """The low-level (entity) keywords: :attr:`keywords` minus :attr:`high_level`."""
        high = set(self.high_level)
        return tuple(k for k in self.keywords if k not in high)


_STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom whose why will with
    would you your yours yourself yourselves did does done tell give list describe explain
    name named many much whether please know""".split()
)
_WORD = re.compile(r"[^\W_][\w'’-]*", re.UNICODE)
_QUOTED = re.compile(r"[\"“”']([^\"“”']{2,80})[\"“”']")


def offline_keywords(query: str, *, max_keywords: int = 12) -> list[str]:
    """LLM-free keyword extraction for section 4.1 (weaker than an LLM; documented).

    Heuristics, in output order: quoted phrases; runs of capitalised words (names, e.g.
    ``"Marie Curie"``; a question word at the start is skipped); then the remaining
    content words after stopword removal, each followed by its bigram with the next
    content word when adjacent. It cannot paraphrase, infer entities the question only
    implies, or produce the high-level concepts an LLM would, so node retrieval is less
    precise than with :func:`extract_keywords` and an LLM. Returns ``[query]`` if nothing
    survives.
    """
    q = check_query(query)
    out: dict[str, None] = {}
    seen: set[str] = set()  # casefolded keywords so far: one set, linear in the query

    def add(kw: str) -> None:
        kw = kw.strip(" \t\n.,;:!?'\"“”’")
        if kw and kw.casefold() not in seen:
            seen.add(kw.casefold())
            out[kw] = None

    for m in _QUOTED.finditer(q):
        add(m.group(1))
    words = [(m.group(0), m.start()) for m in _WORD.finditer(q)]
    run: list[str] = []
    for i, (w, _) in enumerate(words):
        cap = w[:1].isupper() and not (i == 0 and w.casefold() in _STOPWORDS)
        if cap and w.casefold() not in _STOPWORDS | {"i"}:
            run.append(w)
            continue
        if (
            run
            and w.casefold() in {"of", "de", "von", "van", "du", "la", "le"}
            and i + 1 < len(words)
            and words[i + 1][0][:1].isupper()
        ):
            run.append(w)
            continue
        if run:
            add(" ".join(run))
        run = []
    if run:
        add(" ".join(run))
    content = [
        (w, i) for i, (w, _) in enumerate(words) if w.casefold() not in _STOPWORDS and len(w) > 2
    ]
    for j, (w, i) in enumerate(content):
        if len(out) >= max_keywords:
            break  # later keywords are cut anyway: bounded work on any query length
        add(w.lower() if not w[:1].isupper() else w)
        if j + 1 < len(content) and content[j + 1][1] == i + 1:
            add(f"{w} {content[j + 1][0]}")
    kws = list(out)[:max_keywords]
    return kws or [q]


_KEYWORD_KEYS = ("entities", "low_level_keywords", "keywords", "concepts", "high_level_keywords")
_HIGH_KEYS = frozenset({"concepts", "high_level_keywords"})


def parse_keywords(reply: str) -> list[str]:
    """Keywords from an LLM reply to :data:`~kgpath.prompts.pathrag.PATHRAG_KEYWORD_PROMPT`.

    Accepts ``{"entities": [...], "concepts": [...]}``, the LightRAG/PathRAG shape
    ``{"high_level_keywords": [...], "low_level_keywords": [...]}``, ``{"keywords": [...]}``,
    any other string lists in an object, or a bare JSON list; JSON damage is repaired by
    :func:`~kgpath.llm.parse_json_response`. Raises :class:`ParseError` if nothing usable
    is found.
    """
    return parse_keyword_split(reply)[0]


def parse_keyword_split(reply: str) -> tuple[list[str], list[str]]:
    """``(all keywords, the high-level ones)`` from a reply, as :func:`parse_keywords` reads it.

    High-level keywords are those under ``"concepts"`` or ``"high_level_keywords"`` (and not
    already listed as entities); they keep their place in the first list.
    """
    data = parse_json_response(reply)
    lists: list[tuple[bool, Any]] = []
    if isinstance(data, dict):
        keys = [k for k in _KEYWORD_KEYS if k in data] + [k for k in data if k not in _KEYWORD_KEYS]
        for k in keys:
            v = data[k]
            lists.append((k in _HIGH_KEYS, v if isinstance(v, list) else [v]))
    else:
        lists.append((False, data))
    out: dict[str, bool] = {}
    seen: set[str] = set()  # casefolded keywords so far: linear in the reply
    for high, lst in lists:
        for item in lst:
            if isinstance(item, str) and item.strip():
                kw = " ".join(item.split())
                if kw.casefold() not in seen:
                    seen.add(kw.casefold())
                    out[kw] = high
    if not out:
        snippet = reply if len(reply) < 200 else reply[:200] + "..."
        raise ParseError(f"LLM reply contains no keyword strings: {snippet!r}")
    return list(out), [k for k, high in out.items() if high]


KeywordPrompt = str | Callable[[str], str]


def _keyword_prompt_text(prompt: KeywordPrompt, query: str) -> str:
    return prompt(query) if callable(prompt) else prompt.format(query=query)


_STEP = "PathRAG keyword extraction"


def _from_reply(query: str, reply: Any) -> KeywordExtraction:
    try:
        kws, high = parse_keyword_split(reply)
    except ParseError as exc:
        logger.warning("PathRAG keyword reply unusable, offline keywords used: %s", exc)
        return KeywordExtraction(
            tuple(offline_keywords(query)),
            "offline-fallback",
            raw_reply=reply if isinstance(reply, str) else repr(reply),
            error=str(exc),
        )
    return KeywordExtraction(tuple(kws), "llm", raw_reply=reply, high_level=tuple(high))


def _after_failure(query: str, exc: BackendError) -> KeywordExtraction:
    """The documented fallback when the model failed: offline keywords, the reason kept."""
    logger.warning("PathRAG keyword LLM failed, offline keywords used: %s", exc)
    return KeywordExtraction(tuple(offline_keywords(query)), "offline-fallback",
                             error=str(exc))


def extract_keywords(
    query: str, llm: LLM | None = None, *, prompt: KeywordPrompt = PATHRAG_KEYWORD_PROMPT
) -> KeywordExtraction:
    """Section 4.1: keywords ``K_q`` of the query, by LLM (JSON) or offline.

    The model is called through :func:`~kgpath.llm.call_llm` (retries, timeout). Neither
    a malformed or empty reply nor a model that keeps failing raises: the offline extractor
    is used (``source="offline-fallback"``) and the reason recorded in
    :attr:`KeywordExtraction.error`.
    """
    q = check_query(query)
    if llm is None:
        return KeywordExtraction(tuple(offline_keywords(q)), "offline")
    try:
        reply = call_llm(llm, _keyword_prompt_text(prompt, q), step=_STEP)
    except BackendError as exc:
        return _after_failure(q, exc)
    return _from_reply(q, reply)


async def aextract_keywords(
    query: str, llm: LLM | None = None, *, prompt: KeywordPrompt = PATHRAG_KEYWORD_PROMPT
) -> KeywordExtraction:
    """Async :func:`extract_keywords` (:func:`~kgpath.llm.acall_llm`)."""
    q = check_query(query)
    if llm is None:
        return KeywordExtraction(tuple(offline_keywords(q)), "offline")
    try:
        reply = await acall_llm(llm, _keyword_prompt_text(prompt, q), step=_STEP)
    except BackendError as exc:
        return _after_failure(q, exc)
    return _from_reply(q, reply)
