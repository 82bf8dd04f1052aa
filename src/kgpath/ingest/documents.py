"""Documents in, passages out: input coercion and sentence-aware chunking.

Accepted documents: plain strings (ids ``doc0, doc1, ...``), ``(id, text)`` pairs,
mappings with ``text`` (and optional ``id``/``metadata``), LlamaIndex ``Document`` /
``TextNode`` objects and LangChain ``Document`` objects (recognised by their attributes,
so neither framework is imported). Each document is split into passages at sentence
boundaries; a passage keeps its source id and the document's metadata as *passage*
metadata (plus ``doc_id`` and ``chunk_index``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgpath.errors import ConfigError, GraphError, short
from kgpath.ingest.chunk_graph.chunking import split_sentences

__all__ = [
    "ChunkingConfig",
    "SourceDocument",
    "TextPassage",
    "chunk_document",
    "coerce_documents",
    "split_sentences",
]

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


@dataclass(frozen=True)
class SourceDocument:
    """One input document: id, text and its own metadata."""

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TextPassage:
    """A chunk of a document: the unit extraction reads and retrievers return."""

    id: str
    text: str
    doc_id: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


def _from_object(doc: Any, i: int) -> SourceDocument | None:
    """LlamaIndex Document/TextNode or LangChain Document, by attribute."""
    if hasattr(doc, "page_content"):  # LangChain Document
        text, ident = doc.page_content, getattr(doc, "id", None)
    elif hasattr(doc, "get_content") and hasattr(doc, "node_id"):  # LlamaIndex node
        text, ident = doc.get_content(), getattr(doc, "node_id", None)
    else:
        return None
    meta = dict(getattr(doc, "metadata", None) or {})
    return SourceDocument(str(ident or meta.get("id") or f"doc{i}"), text, meta)


def _coerce_one(doc: Any, i: int) -> SourceDocument:
    if isinstance(doc, SourceDocument):
        return doc
    if isinstance(doc, str):
        return SourceDocument(f"doc{i}", doc)
    if isinstance(doc, Mapping):
        if "text" not in doc:
            raise GraphError(f"document #{i} is a mapping without 'text': {sorted(doc)}")
        return SourceDocument(str(doc.get("id") or f"doc{i}"), doc["text"],
                              dict(doc.get("metadata") or {}))
    obj = _from_object(doc, i)
    if obj is not None:
        return obj
    if isinstance(doc, Sequence) and len(doc) == 2:
        return SourceDocument(str(doc[0]), doc[1])
    raise GraphError(
        f"document #{i} must be a string, (id, text), a mapping with 'text', or a "
        f"LlamaIndex/LangChain document; got {type(doc).__name__}"
    )


def coerce_documents(documents: Iterable[Any]) -> list[SourceDocument]:
    """Return :class:`SourceDocument` objects, validating ids and texts.

    Raises
    ------
    GraphError
        For a single string instead of a collection, an unknown document type, a
        non-string text, or a duplicate id.

    Examples
    --------
    >>> [d.id for d in coerce_documents(["a b", ("x", "c d")])]
    ['doc0', 'x']
    """
    if isinstance(documents, str):
        raise GraphError("documents must be a collection of documents, got a single string")
    if not isinstance(documents, Iterable):
        raise GraphError(f"documents must be a collection of documents, got {short(documents)}")
    out: list[SourceDocument] = []
    seen: set[str] = set()
    for i, doc in enumerate(documents):
        d = _coerce_one(doc, i)
        if not isinstance(d.text, str):
            raise GraphError(f"document {d.id!r} text must be a string, "
                             f"got {type(d.text).__name__}")
        if d.id in seen:
            raise GraphError(f"duplicate document id {d.id!r}")
        seen.add(d.id)
        out.append(d)
    return out


def chunk_document(doc: SourceDocument, config: ChunkingConfig | None = None) -> list[TextPassage]:
    """Split one document into passages of whole sentences.

    A document that fits in one passage keeps its id as the passage id; otherwise the
    passages are ``<id>#0``, ``<id>#1``, ...

    Examples
    --------
    >>> cfg = ChunkingConfig(max_chars=50)
    >>> [p.id for p in chunk_document(SourceDocument("d", "One two three. " * 6), cfg)]
    ['d#0', 'd#1']
    """
    cfg = config or ChunkingConfig()
    sents = split_sentences(doc.text)
    groups: list[list[str]] = []
    cur: list[str] = []
    size = 0
    for s in sents:
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
                    {**dict(doc.metadata), "doc_id": doc.id, "chunk_index": i})
        for i, g in enumerate(groups)
    ]
