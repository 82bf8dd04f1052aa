"""The one document coercer: every accepted input form -> :class:`SourceDocument`.

Both constructions read documents through :func:`coerce_documents`: the entity graph
(:func:`kgpath.ingest.graph_from_documents`, which then packs sentences into passages) and
the semantic chunk graph (:func:`kgpath.ingest.chunk_graph.build_chunk_graph`, which covers
them with windows). Accepted documents:

========================================  ===================  ==========  ==============
input                                     id                   title       metadata
========================================  ===================  ==========  ==============
plain string                              content hash         ``""``      ``{}``
``(id, text or [sentences])`` pair        ``id``               ``id``      ``{}``
mapping with ``text`` (``id``,            ``id``, else hash    ``title``   ``metadata``
``title``, ``metadata`` optional)
LangChain ``Document``                    ``id``, else         ``metadata  ``metadata``
                                          ``metadata[id_key]`` ["title"]``
                                          (``"id"``), else hash
LlamaIndex ``Document`` / ``TextNode``    ``node_id`` (``id_``  (same)      ``metadata``
                                          / ``doc_id``)
:class:`SourceDocument`                   its own              its own     its own
========================================  ===================  ==========  ==============

A whole collection may also be a mapping ``{id: text or [sentences]}`` (the id is also the
title). Framework documents are recognised by their attributes (``page_content``;
``get_content`` + ``node_id``), so neither framework is imported.

**Identity.** A document is the id its user gave it; a document without one is named by its
content (:func:`content_id`: ``<prefix>-`` and 16 hex digits of the SHA-256 of its title,
sentences and metadata), never by its position, so adding ``["Einstein ..."]`` after
``["Curie ..."]`` adds a second document instead of replacing the first. The same document
twice in one collection (same id, same content) is kept once; the same id with different
content is an error. :func:`content_digest` is the fingerprint the document lifecycle
(:mod:`kgpath.index.documents`) compares to tell an unchanged document from an edited one.

Text is split into sentences once, here, with :func:`kgpath.ingest.chunking.split_sentences`;
pre-split sentences are kept as given (whitespace normalised, empty ones dropped).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgpath.errors import GraphError, short
from kgpath.ingest.chunking import split_sentences

__all__ = ["SourceDocument", "coerce_documents", "content_digest", "content_id"]


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


_Fields = tuple[str | None, str, Any, Mapping[str, Any]]
"""``(id or None, title, text or sentences, metadata)`` of one input document, not checked."""


def content_digest(title: str, sentences: Sequence[str], metadata: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of a document's content: title, sentences and metadata (not its id).

    Metadata values that JSON cannot hold are hashed through ``str``.

    >>> content_digest("", ["One."], {}) == content_digest("", ("One.",), {})
    True
    """
    blob = json.dumps([title, list(sentences), dict(metadata)], sort_keys=True,
                      ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def content_id(digest: str, prefix: str = "doc") -> str:
    """The id of a document that brings none: ``<prefix>-<16 hex digits of its digest>``.

    >>> content_id("0123456789abcdef0123")
    'doc-0123456789abcdef'
    """
    return f"{prefix.rstrip('-')}-{digest[:16]}"


def _from_object(doc: Any, id_key: str) -> _Fields | None:
    """LlamaIndex Document/TextNode or LangChain Document, by attribute."""
    if hasattr(doc, "page_content"):  # LangChain Document
        text, ident = doc.page_content, getattr(doc, "id", None)
    elif hasattr(doc, "get_content") and hasattr(doc, "node_id"):  # LlamaIndex node
        text, ident = doc.get_content(), getattr(doc, "node_id", None)
    else:
        return None
    meta = dict(getattr(doc, "metadata", None) or {})
    given = ident or meta.get(id_key)
    return (str(given) if given else None), str(meta.get("title", "")), text, meta


def _fields(doc: Any, i: int, id_key: str) -> _Fields:
    if isinstance(doc, SourceDocument):
        return doc.id, doc.title, list(doc.sentences), doc.metadata
    if isinstance(doc, str):
        return None, "", doc, {}
    if isinstance(doc, Mapping):
        if "text" not in doc:
            raise GraphError(f"document #{i} is a mapping without 'text': {sorted(doc)}")
        meta = dict(doc.get("metadata") or {})
        title = str(doc.get("title") or meta.get("title") or "")
        given = doc.get("id") or doc.get(id_key) or meta.get(id_key)
        return (str(given) if given else None), title, doc["text"], meta
    obj = _from_object(doc, id_key)
    if obj is not None:
        return obj
    if isinstance(doc, Sequence) and len(doc) == 2:
        if not str(doc[0]):
            raise GraphError(f"document #{i} has an empty id")
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


def coerce_documents(documents: Any, *, id_prefix: str = "doc",
                     id_key: str = "id") -> list[SourceDocument]:
    """Return one :class:`SourceDocument` per input document (see the module docstring).

    Parameters
    ----------
    documents
        A collection of documents in any accepted form, or a mapping ``{id: text}``.
    id_prefix
        Documents that bring no id are ``<id_prefix>-<content hash>`` (:func:`content_id`).
    id_key
        The metadata key (or mapping key) that holds a document's id when the document has
        no id of its own (a LangChain ``Document`` without ``id``; e.g. ``"source"``).

    Raises
    ------
    GraphError
        For a single string instead of a collection, an unknown document type, an empty
        id, the same id twice with different content, or a text that is neither a string
        nor a list of strings (each naming the bad document).

    Examples
    --------
    >>> [d.id for d in coerce_documents(["a b", ("x", "c d")])]
    ['doc-e57ff74c27522d0f', 'x']
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
        items = [_fields(d, i, id_key) for i, d in enumerate(documents)]
    out: list[SourceDocument] = []
    seen: dict[str, SourceDocument] = {}
    for i, (given, title, body, meta) in enumerate(items):
        if given is not None and not given:
            raise GraphError(f"document #{i} has an empty id")
        sentences = _sentences(given or f"#{i}", body)
        doc_id = given or content_id(content_digest(title, sentences, meta), id_prefix)
        if not doc_id:
            raise GraphError(f"document #{i} has an empty id")
        doc = SourceDocument(doc_id, title, sentences, dict(meta))
        if doc_id in seen:
            if seen[doc_id] == doc:
                continue  # the same document twice: kept once
            raise GraphError(f"duplicate document id {doc_id!r} with different content")
        seen[doc_id] = doc
        out.append(doc)
    return out
