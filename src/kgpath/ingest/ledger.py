"""What an index keeps of its documents: their order, their passages, each passage's record.

A :class:`DocumentLedger` is the memory behind the document lifecycle
(:mod:`kgpath.index.documents`): the documents of an index in order (each with the digest
of its content, :func:`~kgpath.ingest.documents.content_digest`, and its passages), and the
extraction record of every passage, keyed by passage id and the SHA-256 of the text it was
read from. The graph is a function of the ledger: :func:`kgpath.ingest.assemble.assemble_graph`
adds the passages in document order and hands every record to the extractor's
``add_to_graph`` at once, exactly as a build from scratch does, so an index updated by any
sequence of add / upsert / delete equals one built from its final documents, and nothing
is extracted twice.

Passages whose extraction failed (:meth:`~kgpath.ingest.extractor.Extractor.failed`) keep
their record (it adds nothing to the graph) and are listed in :attr:`DocumentLedger.failed`;
the next add or upsert reads them again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kgpath.ingest.chunking import ChunkingConfig, TextPassage, as_chunking
from kgpath.ingest.documents import SourceDocument

__all__ = ["DocumentLedger", "LedgerDocument", "ledger_from_json", "ledger_to_json", "text_digest"]


def text_digest(text: str) -> str:
    """SHA-256 (hex) of a passage text: the key its extraction record is valid for."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class LedgerDocument:
    """One document of an index: the document, its content digest and its passages."""

    document: SourceDocument
    digest: str
    passages: tuple[TextPassage, ...]


class DocumentLedger:
    """The documents of an index in order and the extraction record of each passage.

    Attributes
    ----------
    documents
        ``document id -> LedgerDocument`` in index order (the order a rebuild reads them).
    records
        ``passage id -> (text digest, record)``: the extractor's record of that text.
    failed
        Passage ids whose record is a failed reading (retried by the next add/upsert).
    chunking
        The chunking the documents were split with (used when an update gives none).
    extractor
        The extractor that reads new passages when an update gives none.
    """

    def __init__(self, chunking: ChunkingConfig | None = None, extractor: Any = None) -> None:
        self.documents: dict[str, LedgerDocument] = {}
        self.records: dict[str, tuple[str, Any]] = {}
        self.failed: set[str] = set()
        self.chunking = as_chunking(chunking)
        self.extractor = extractor
        self._seq: dict[str, int] = {}
        self._next = 0
        self.assembly: Any = None
        """The incremental merge state (:class:`~kgpath.ingest.replay.OpenAssembly`)."""

    def __repr__(self) -> str:
        return (f"DocumentLedger(documents={len(self.documents)}, records={len(self.records)}, "
                f"failed={len(self.failed)})")

    def passages(self) -> Iterator[TextPassage]:
        """Every passage, documents in order, each document's passages in order."""
        for entry in self.documents.values():
            yield from entry.passages

    def places(self) -> list[tuple[int, int]]:
        """``(document sequence number, passage index)`` of every passage, in order.

        A document keeps its number while it stays (an upsert keeps its place), new ones
        get larger numbers, so places only grow: an incremental assembly never renumbers.
        """
        for doc_id in [d for d in self._seq if d not in self.documents]:
            del self._seq[doc_id]
        out = []
        for doc_id, entry in self.documents.items():
            if doc_id not in self._seq:
                self._seq[doc_id] = self._next
                self._next += 1
            out += [(self._seq[doc_id], j) for j in range(len(entry.passages))]
        return out

    def owners(self) -> dict[str, str]:
        """``passage id -> document id``."""
        return {p.id: doc_id for doc_id, e in self.documents.items() for p in e.passages}

    def pending(self) -> list[TextPassage]:
        """Passages without a record for their current text, or whose reading failed."""
        out = []
        for p in self.passages():
            hit = self.records.get(p.id)
            if hit is None or hit[0] != text_digest(p.text) or p.id in self.failed:
                out.append(p)
        return out

    def record(self, passage: TextPassage, record: Any, failed: bool) -> None:
        """Store the record of ``passage``'s current text."""
        self.records[passage.id] = (text_digest(passage.text), record)
        if failed:
            self.failed.add(passage.id)
        else:
            self.failed.discard(passage.id)

    def forget_unused(self) -> None:
        """Drop records (and failures) of passages no document holds any more."""
        live = {p.id for p in self.passages()}
        for pid in [p for p in self.records if p not in live]:
            del self.records[pid]
        self.failed &= live


LEDGER_FORMAT = "kgpath-document-ledger"
LEDGER_VERSION = 1


def ledger_to_json(ledger: DocumentLedger) -> dict[str, Any]:
    """A JSON-able dict of ``ledger`` (documents, passages, records, failures; no pickle).

    For whoever saves an index (``GraphIndex.save``): with the ledger restored
    (:func:`ledger_from_json`), a reopened index updates by document exactly like the one
    that was saved. Records must be the open family's
    :class:`~kgpath.ingest.extraction.Extraction` (:class:`~kgpath.errors.ConfigError`
    otherwise); the extractor itself is not saved (pass it to :func:`ledger_from_json`).
    """
    from kgpath.ingest.checkpoint import extraction_to_json

    docs = []
    for doc_id, e in ledger.documents.items():
        d = e.document
        docs.append({"id": doc_id, "title": d.title, "sentences": list(d.sentences),
                     "metadata": dict(d.metadata), "digest": e.digest,
                     "passages": [{"id": p.id, "text": p.text, "metadata": dict(p.metadata)}
                                  for p in e.passages]})
    cfg = ledger.chunking
    return {
        "format": LEDGER_FORMAT, "version": LEDGER_VERSION, "documents": docs,
        "records": {pid: {"text_sha256": sha, "record": extraction_to_json(r)}
                    for pid, (sha, r) in ledger.records.items()},
        "failed": sorted(ledger.failed),
        "chunking": None if cfg is None else {"max_chars": cfg.max_chars,
                                              "overlap_sentences": cfg.overlap_sentences,
                                              "min_chars": cfg.min_chars},
    }


def ledger_from_json(data: Any, extractor: Any = None) -> DocumentLedger:
    """The :class:`DocumentLedger` written by :func:`ledger_to_json`.

    Raises
    ------
    PersistenceError
        For another format, a newer version or a malformed field (naming it).
    """
    from kgpath.errors import PersistenceError
    from kgpath.ingest.checkpoint import extraction_from_json

    if not isinstance(data, dict) or data.get("format") != LEDGER_FORMAT:
        raise PersistenceError(f"not a {LEDGER_FORMAT}: {str(data)[:80]!r}")
    if data.get("version") != LEDGER_VERSION:
        raise PersistenceError(f"{LEDGER_FORMAT} version {data.get('version')!r} is not "
                               f"{LEDGER_VERSION}")
    try:
        cfg = ChunkingConfig(**data["chunking"]) if data["chunking"] else None
        ledger = DocumentLedger(cfg, extractor)
        for d in data["documents"]:
            doc = SourceDocument(str(d["id"]), str(d["title"]),
                                 tuple(str(s) for s in d["sentences"]), dict(d["metadata"]))
            passages = tuple(TextPassage(str(p["id"]), str(p["text"]), doc.id,
                                         dict(p["metadata"])) for p in d["passages"])
            ledger.documents[doc.id] = LedgerDocument(doc, str(d["digest"]), passages)
        for pid, r in data["records"].items():
            ledger.records[str(pid)] = (str(r["text_sha256"]), extraction_from_json(r["record"]))
        ledger.failed = {str(p) for p in data["failed"]}
    except (KeyError, TypeError, ValueError) as exc:
        raise PersistenceError(f"malformed {LEDGER_FORMAT}: {exc!r}") from exc
    return ledger
