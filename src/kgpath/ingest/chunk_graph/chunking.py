"""Step 1 of the article: documents -> sentences -> overlapping windows (chunks).

Article section "Knowledge Graph Architecture", step 1 ("Chunking with Overlap"): every
document is split into sentences (:func:`split_sentences`) and covered by windows of
``window = 3`` consecutive sentences advancing by ``stride = 1`` (:func:`sliding_windows`).
:func:`as_documents` normalises the input forms the builder accepts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgpath.errors import GraphError, short

__all__ = ["SourceDocument", "as_documents", "sliding_windows", "split_sentences"]


@dataclass(frozen=True)
class SourceDocument:
    """One input document: an id, an optional title and its sentences."""

    id: str
    title: str
    sentences: tuple[str, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The sentences joined with single spaces."""
        return " ".join(self.sentences)


_ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st mt ft vs etc e.g i.e cf al no nos vol vols fig figs ed eds
    inc ltd co corp bros dept est approx gen col lt sgt capt cmdr gov sen rep rev hon pres
    jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k u.n a.m p.m ca c""".split()
)
_BOUNDARY = re.compile(r"([.!?]+[\"')\]\u201d\u2019]*)\s+(?=[\"'(\[\u201c\u2018]?[A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Split text into sentences at ``. ! ?`` followed by space and a capital or digit.

    A full stop does not end a sentence after a known abbreviation (``Dr.``, ``e.g.``,
    ``U.S.``) or a single-letter initial (``J. K. Rowling``). Newline-separated blank lines
    also end a sentence. Deterministic and offline; pass pre-split sentences to the builder
    when a corpus already has them (HotpotQA does).
    """
    if not isinstance(text, str):
        raise GraphError(f"document text must be a string, got {type(text).__name__}")
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        para = " ".join(para.split())
        if not para:
            continue
        start = 0
        for m in _BOUNDARY.finditer(para):
            end = m.end(1)
            before = para[start : m.start(1)].rsplit(" ", 1)[-1].lower().lstrip("(\"'")
            if m.group(1).startswith(".") and (
                before in _ABBREVIATIONS or (len(before) == 1 and before.isalpha())
            ):
                continue
            piece = para[start:end].strip()
            if piece:
                out.append(piece)
            start = m.end()
        tail = para[start:].strip()
        if tail:
            out.append(tail)
    return out


def sliding_windows(n: int, window: int = 3, stride: int = 1) -> list[tuple[int, int]]:
    """Half-open sentence ranges ``[start, end)`` of the overlapping chunks.

    Windows of ``window`` sentences start every ``stride`` sentences; a document shorter
    than ``window`` is one chunk; when the stride does not land on the end, a final window
    ending at the last sentence is added so every sentence is covered.

    >>> sliding_windows(5, 3, 1)
    [(0, 3), (1, 4), (2, 5)]
    >>> sliding_windows(2, 3, 1)
    [(0, 2)]
    """
    if n <= 0:
        return []
    if n <= window:
        return [(0, n)]
    out = [(s, s + window) for s in range(0, n - window + 1, stride)]
    if out[-1][1] != n:
        out.append((n - window, n))
    return out


def as_documents(documents: Any) -> list[SourceDocument]:
    """Normalise the accepted input forms to :class:`SourceDocument` (see the builder)."""
    if isinstance(documents, (str, bytes)):
        raise GraphError("documents must be a collection of documents, not a single string")
    if not isinstance(documents, (Mapping, Iterable)):
        raise GraphError(f"documents must be a collection of documents, got {short(documents)}")
    items: list[tuple[str, str, Any, Mapping[str, Any]]] = []
    if isinstance(documents, Mapping):
        for title, body in documents.items():
            items.append((str(title), str(title), body, {}))
    else:
        for i, d in enumerate(documents):
            if isinstance(d, SourceDocument):
                items.append((d.id, d.title, list(d.sentences), d.metadata))
            elif isinstance(d, str):
                items.append((f"doc-{i}", "", d, {}))
            elif isinstance(d, (tuple, list)) and len(d) == 2:
                items.append((str(d[0]), str(d[0]), d[1], {}))
            else:
                raise GraphError(
                    f"document #{i} must be a str, (title, text|sentences) or "
                    f"SourceDocument, got {type(d).__name__}"
                )
    out: list[SourceDocument] = []
    seen: set[str] = set()
    for doc_id, title, body, meta in items:
        if not doc_id:
            raise GraphError("document ids/titles must be non-empty strings")
        if doc_id in seen:
            raise GraphError(f"duplicate document id {doc_id!r}")
        seen.add(doc_id)
        if isinstance(body, str):
            sents = split_sentences(body)
        elif isinstance(body, Sequence):
            sents = []
            for s in body:
                if not isinstance(s, str):
                    raise GraphError(f"document {doc_id!r} has a non-string sentence {s!r}")
                s = " ".join(s.split())
                if s:
                    sents.append(s)
        else:
            raise GraphError(
                f"document {doc_id!r} body must be text or a list of sentences, "
                f"got {type(body).__name__}"
            )
        out.append(SourceDocument(doc_id, title, tuple(sents), dict(meta)))
    return out

