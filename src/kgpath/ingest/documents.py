"""The one document coercer: every accepted input form -> :class:`SourceDocument`.

Both constructions read documents through :func:`coerce_documents`: the entity graph
(:func:`kgpath.ingest.graph_from_documents`, which then packs sentences into passages) and
the semantic chunk graph (:func:`kgpath.ingest.chunk_graph.build_chunk_graph`, which covers
them with windows). Accepted documents:

========================================  ==================  ==========  ==============
input                                     id                  title       metadata
========================================  ==================  ==========  ==============
plain string                              ``<prefix><i>``     ``""``      ``{}``
``(id, text or [sentences])`` pair        ``id``              ``id``      ``{}``
mapping with ``text`` (``id``,            ``id`` or default   ``title``   ``metadata``
``title``, ``metadata`` optional)
LangChain ``Document``                    ``id``, else        ``metadata  ``metadata``
                                          ``metadata["id"]``  ["title"]``
LlamaIndex ``Document`` / ``TextNode``    ``node_id``         (same)      ``metadata``
:class:`SourceDocument`                   its own             its own     its own
========================================  ==================  ==========  ==============

A whole collection may also be a mapping ``{id: text or [sentences]}`` (the id is also the
title). Framework documents are recognised by their attributes (``page_content``;
``get_content`` + ``node_id``), so neither framework is imported. The default id prefix is
``"doc"`` for the entity graph (``doc0``) and ``"doc-"`` for the chunk graph (``doc-0``):
the two id schemes predate this module and stored graphs use them.

Text is split into sentences once, here, with :func:`kgpath.ingest.chunking.split_sentences`;
pre-split sentences are kept as given (whitespace normalised, empty ones dropped).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgpath.errors import GraphError, short
from kgpath.ingest.chunking import split_sentences

__all__ = ["SourceDocument", "coerce_documents"]


@dataclass(frozen=True)
class SourceDocument:
    """One input document: an id, a title (may be empty), its sentences and metadata."""

    id: str
    title: str
    sentences: tuple[str, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The sentences joined with single spaces."""
        return " ".join(self.sentences)

    @classmethod
    def from_text(cls, id: str, text: str, *, title: str = "",  # noqa: A002
                  metadata: Mapping[str, Any] | None = None) -> SourceDocument:
        """A document whose ``text`` is split with :func:`split_sentences`.

        >>> SourceDocument.from_text("d", "One. Two.").sentences
        ('One.', 'Two.')
        """
        return cls(id, title, tuple(split_sentences(text)), dict(metadata or {}))


_Fields = tuple[str, str, Any, Mapping[str, Any]]
"""``(id, title, text or sentences, metadata)`` of one input document, not yet checked."""


def _from_object(doc: Any, i: int, prefix: str) -> _Fields | None:
    """LlamaIndex Document/TextNode or LangChain Document, by attribute."""
    if hasattr(doc, "page_content"):  # LangChain Document
        text, ident = doc.page_content, getattr(doc, "id", None)
    elif hasattr(doc, "get_content") and hasattr(doc, "node_id"):  # LlamaIndex node
        text, ident = doc.get_content(), getattr(doc, "node_id", None)
    else:
        return None
    meta = dict(getattr(doc, "metadata", None) or {})
    return str(ident or meta.get("id") or f"{prefix}{i}"), str(meta.get("title", "")), text, meta


def _fields(doc: Any, i: int, prefix: str) -> _Fields:
    if isinstance(doc, SourceDocument):
        return doc.id, doc.title, list(doc.sentences), doc.metadata
    if isinstance(doc, str):
        return f"{prefix}{i}", "", doc, {}
    if isinstance(doc, Mapping):
        if "text" not in doc:
            raise GraphError(f"document #{i} is a mapping without 'text': {sorted(doc)}")
        meta = dict(doc.get("metadata") or {})
        title = str(doc.get("title") or meta.get("title") or "")
        return str(doc.get("id") or f"{prefix}{i}"), title, doc["text"], meta
    obj = _from_object(doc, i, prefix)
    if obj is not None:
        return obj
    if isinstance(doc, Sequence) and len(doc) == 2:
        return str(doc[0]), str(doc[0]), doc[1], {}
    raise GraphError(
        f"document #{i} must be a string, an (id, text or sentences) pair, a mapping with "
        f"'text', a SourceDocument, or a LlamaIndex/LangChain document; "
        f"got {type(doc).__name__}"
    )


def _sentences(doc_id: str, body: Any) -> tuple[str, ...]:
    """Split text, or normalise pre-split sentences (whitespace, empty ones dropped)."""
    if isinstance(body, str):
        return tuple(split_sentences(body))
    if not isinstance(body, Sequence):
        raise GraphError(f"document {doc_id!r} text must be a string or a list of sentences, "
                         f"got {type(body).__name__}")
    out = []
    for s in body:
        if not isinstance(s, str):
            raise GraphError(f"document {doc_id!r} has a non-string sentence {s!r}")
        s = " ".join(s.split())
        if s:
            out.append(s)
    return tuple(out)


def coerce_documents(documents: Any, *, id_prefix: str = "doc") -> list[SourceDocument]:
    """Return one :class:`SourceDocument` per input document (see the module docstring).

    Parameters
    ----------
    documents
        A collection of documents in any accepted form, or a mapping ``{id: text}``.
    id_prefix
        Ids of documents that bring none are ``<id_prefix><position>``.

    Raises
    ------
    GraphError
        For a single string instead of a collection, an unknown document type, an empty
        or duplicate id, or a text that is neither a string nor a list of strings (each
        naming the bad document).

    Examples
    --------
    >>> [d.id for d in coerce_documents(["a b", ("x", "c d")])]
    ['doc0', 'x']
    >>> coerce_documents({"Bees": ["Bees fly.", "  Bees  sting. "]})[0].sentences
    ('Bees fly.', 'Bees sting.')
    """
    if isinstance(documents, (str, bytes)):
        raise GraphError("documents must be a collection of documents, got a single string")
    if not isinstance(documents, Iterable):
        raise GraphError(f"documents must be a collection of documents, got {short(documents)}")
    items: list[_Fields]
    if isinstance(documents, Mapping):
        items = [(str(k), str(k), body, {}) for k, body in documents.items()]
    else:
        items = [_fields(d, i, id_prefix) for i, d in enumerate(documents)]
    out: list[SourceDocument] = []
    seen: set[str] = set()
    for i, (doc_id, title, body, meta) in enumerate(items):
        if not doc_id:
            raise GraphError(f"document #{i} has an empty id")
        if doc_id in seen:
            raise GraphError(f"duplicate document id {doc_id!r}")
        seen.add(doc_id)
        out.append(SourceDocument(doc_id, title, _sentences(doc_id, body), dict(meta)))
    return out
