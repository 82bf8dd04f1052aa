"""The one chunker: text -> sentences -> passages (retrieval units) or windows (chunk graph).

Both constructions split text with the same :func:`split_sentences`, so a sentence is the
same string wherever it appears:

* **Passages** (:func:`chunk_document`, :class:`ChunkingConfig`): whole sentences packed
  up to ``max_chars`` characters, optionally overlapping; the unit extraction reads and
  retrievers return (:func:`kgpath.ingest.graph_from_documents`).
* **Windows** (:func:`sliding_windows`): step 1 of the chunk-graph article ("Chunking with
  Overlap", :mod:`kgpath.ingest.chunk_graph`): ``window = 3`` consecutive sentences advancing
  by ``stride = 1``.

One other splitter lives here, with its difference named: :func:`split_at_punctuation`,
the plain split after ``. ! ? ;`` that the LLM-free
:class:`~kgpath.ingest.extract.PatternExtractor` reads cues within. It also splits after an
abbreviation and at semicolons, so its pieces differ from :func:`split_sentences`; it is
kept as is because the pattern extractor's triples depend on it. (The spaCy extractor reads
its parser's own sentences inside a passage: they come with the dependency parse.)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kgpath._config import from_mapping
from kgpath.errors import ConfigError, GraphError, short

if TYPE_CHECKING:
    from kgpath.ingest.documents import SourceDocument

__all__ = [
    "PASSAGE_KEYS",
    "ChunkingConfig",
    "TextPassage",
    "as_chunking",
    "chunk_document",
    "passage_document",
    "user_metadata",
    "sliding_windows",
    "split_at_punctuation",
    "split_sentences",
]


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


_PUNCTUATION = re.compile(r"(?<=[.!?;])\s+")


def split_at_punctuation(text: str) -> list[str]:
    """Split after every ``. ! ? ;`` followed by whitespace (no abbreviation rules).

    The pattern extractor's sentence reading. Unlike :func:`split_sentences` it splits after
    ``Dr.`` or an initial, at semicolons and before a lower-case word, does not end a piece
    at a blank line without punctuation, and keeps the whitespace inside a piece.

    >>> split_at_punctuation("Dr. Curie discovered radium; Bohr did not.")
    ['Dr.', 'Curie discovered radium;', 'Bohr did not.']
    >>> split_sentences("Dr. Curie discovered radium; Bohr did not.")
    ['Dr. Curie discovered radium; Bohr did not.']
    """
    return _PUNCTUATION.split(text)


@dataclass(frozen=True, kw_only=True)
class ChunkingConfig:
    """How documents become passages.

    Attributes
    ----------
    max_chars
        A passage holds whole sentences up to this many characters (a longer sentence
        is a passage of its own).
    overlap_sentences
        Sentences repeated at the start of the next passage of the same document.
    min_chars
        Documents (after stripping) shorter than this are skipped with a log line.
    """

    max_chars: int = 1200
    overlap_sentences: int = 0
    min_chars: int = 1

    def __post_init__(self) -> None:
        for name, low in (("max_chars", 50), ("overlap_sentences", 0), ("min_chars", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ConfigError(f"{name} must be an int >= {low}, got {v!r}")


def as_chunking(value: Any) -> ChunkingConfig | None:
    """The one reading of a ``chunking=`` argument.

    ``None`` (the default chunking), a :class:`ChunkingConfig`, a mapping of its fields
    (``{"max_chars": 100}``) or an int (``max_chars``).

    Raises
    ------
    ConfigError
        For anything else, or a mapping with an unknown field, naming the value.

    Examples
    --------
    >>> as_chunking({"max_chars": 100}) == as_chunking(100) == ChunkingConfig(max_chars=100)
    True
    """
    if value is None or isinstance(value, ChunkingConfig):
        return value
    if isinstance(value, Mapping):
        return from_mapping(ChunkingConfig, value, label="chunking")
    if isinstance(value, int) and not isinstance(value, bool):
        return ChunkingConfig(max_chars=value)
    raise ConfigError(
        f"chunking must be a kgpath ChunkingConfig, a dict of its fields (e.g. "
        f"{{'max_chars': 1200}}) or an int (max_chars), got {short(value)}"
    )


#: Metadata keys the chunker gives every passage (``"doc_id"``: the document's id,
#: ``"chunk_index"``: the passage's number in it). A document whose own metadata already
#: holds one of them with another value keeps its value; kgpath's goes under
#: ``"kgpath_" + key`` instead (:func:`passage_document` reads it back).
PASSAGE_KEYS = ("doc_id", "chunk_index")


def _passage_metadata(doc_meta: Mapping[str, Any], doc_id: str, index: int) -> dict[str, Any]:
    """The document's metadata with kgpath's keys added, never overwriting the user's."""
    out = dict(doc_meta)
    for key, ours in zip(PASSAGE_KEYS, (doc_id, index), strict=True):
        if key in out and out[key] != ours:
            out[f"kgpath_{key}"] = ours
        else:
            out[key] = ours
    return out


def passage_document(metadata: Mapping[str, Any], default: str) -> str:
    """The id of the document a passage came from (``default`` when not recorded).

    Examples
    --------
    >>> passage_document({"doc_id": "mine", "kgpath_doc_id": "d"}, "p")
    'd'
    """
    return str(metadata.get("kgpath_doc_id", metadata.get("doc_id", default)))


def user_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A passage's metadata without what the chunker added: the document's own metadata.

    Examples
    --------
    >>> user_metadata({"doc_id": "mine", "kgpath_doc_id": "d", "chunk_index": 0, "a": 1})
    {'doc_id': 'mine', 'a': 1}
    """
    added = {f"kgpath_{k}" if f"kgpath_{k}" in metadata else k for k in PASSAGE_KEYS}
    return {k: v for k, v in metadata.items() if k not in added}


@dataclass(frozen=True)
class TextPassage:
    """A chunk of a document: the unit extraction reads and retrievers return."""

    id: str
    text: str
    doc_id: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


def chunk_document(doc: SourceDocument, config: ChunkingConfig | None = None) -> list[TextPassage]:
    """Split one document into passages of whole sentences.

    A document that fits in one passage keeps its id as the passage id; otherwise the
    passages are ``<id>#0``, ``<id>#1``, ... Each passage's metadata is the document's plus
    :data:`PASSAGE_KEYS` (a user's own ``doc_id`` / ``chunk_index`` is kept). ``config``
    is read by :func:`as_chunking`.

    Examples
    --------
    >>> from kgpath.ingest.documents import SourceDocument
    >>> cfg = ChunkingConfig(max_chars=50)
    >>> [p.id for p in chunk_document(SourceDocument.from_text("d", "One two three. " * 6), cfg)]
    ['d#0', 'd#1']
    """
    cfg = as_chunking(config) or ChunkingConfig()
    groups: list[list[str]] = []
    cur: list[str] = []
    size = 0
    for s in doc.sentences:
        if cur and size + len(s) + 1 > cfg.max_chars:
            groups.append(cur)
            cur = cur[len(cur) - cfg.overlap_sentences:] if cfg.overlap_sentences else []
            size = sum(len(x) + 1 for x in cur)
        cur.append(s)
        size += len(s) + 1
    if cur:
        groups.append(cur)
    single = len(groups) == 1
    return [
        TextPassage(doc.id if single else f"{doc.id}#{i}", " ".join(g), doc.id,
                    _passage_metadata(doc.metadata, doc.id, i))
        for i, g in enumerate(groups)
    ]
