"""Resumable extraction: records of finished passages written to a directory as JSON.

``GraphIndex.from_documents(docs, checkpoint=dir)`` writes the records of each extracted
batch to ``dir`` before reading the next one; a build killed at passage 900 of 1,000 and
started again with the same ``dir`` reads the finished passages' records back and extracts
only the rest. Each batch is one file ``part-<n>.json``, written to a temporary file,
fsynced and renamed into place (a killed or failed write leaves no partial part; a full
disk is a :class:`~kgpath.errors.PersistenceError`), holding a format
tag and version, the extractor's name, the records and the SHA-256 of the records' JSON; a
part that fails its checksum or does not parse is ignored (its passages are extracted
again) with a warning. Never pickled.

A record is valid for one text: it is stored with the SHA-256 of the passage text it was
read from, so an edited document is extracted again. Failed readings are not stored.
Records are the open family's :class:`~kgpath.ingest.extraction.Extraction` (spaCy, LLM);
other record types are refused with :class:`~kgpath.errors.ConfigError`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kgpath._files import atomic_write, check_directory, user_path
from kgpath.errors import ConfigError
from kgpath.ingest.chunking import TextPassage
from kgpath.ingest.extraction import ExtractedEntity, ExtractedRelation, Extraction
from kgpath.ingest.ledger import text_digest

__all__ = ["ExtractionCheckpoint", "extraction_from_json", "extraction_to_json"]

logger = logging.getLogger(__name__)

FORMAT = "kgpath-extraction-checkpoint"
VERSION = 1
_MAX_PART_BYTES = 256 * 1024 * 1024


def extraction_to_json(record: Extraction) -> dict[str, Any]:
    """A JSON-able dict of an :class:`Extraction` (see :func:`extraction_from_json`)."""
    if not isinstance(record, Extraction):
        raise ConfigError(
            f"checkpoint stores the open family's Extraction records (spaCy, LLM), got "
            f"{type(record).__name__}"
        )
    return {
        "passage_id": record.passage_id,
        "entities": [[e.name, e.type, e.sentence] for e in record.entities],
        "relations": [[r.head, r.relation, r.tail, r.kind, r.sentence]
                      for r in record.relations],
        "notes": list(record.notes),
    }


def extraction_from_json(data: dict[str, Any]) -> Extraction:
    """The :class:`Extraction` written by :func:`extraction_to_json`.

    >>> ex = Extraction("p", (ExtractedEntity("Curie", "Person", "Curie won."),))
    >>> extraction_from_json(json.loads(json.dumps(extraction_to_json(ex)))) == ex
    True
    """
    return Extraction(
        str(data["passage_id"]),
        tuple(ExtractedEntity(str(n), str(t), str(s)) for n, t, s in data["entities"]),
        tuple(ExtractedRelation(str(h), str(r), str(t), str(k), str(s))
              for h, r, t, k, s in data["relations"]),
        tuple(str(n) for n in data["notes"]),
    )


def _digest(records: list[Any]) -> str:
    blob = json.dumps(records, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ExtractionCheckpoint:
    """The checkpoint directory of one build (see the module docstring).

    Parameters
    ----------
    directory
        Created if missing; must not be a file.
    extractor_name
        Recorded in every part; parts of another extractor are not read.
    """

    def __init__(self, directory: str | os.PathLike[str], extractor_name: str) -> None:
        self.directory = check_directory(user_path(directory, "checkpoint"), "checkpoint path")
        self.extractor_name = extractor_name
        self._next = 1 + max((self._number(p) for p in self._parts()), default=-1)

    @staticmethod
    def _number(path: Path) -> int:
        try:
            return int(path.stem.split("-", 1)[1])
        except (IndexError, ValueError):
            return -1

    def _parts(self) -> list[Path]:
        return sorted(p for p in self.directory.glob("part-*.json")
                      if p.is_file() and not p.is_symlink())

    def load(self) -> dict[tuple[str, str], Extraction]:
        """``(passage id, text digest) -> record`` of every valid part."""
        out: dict[tuple[str, str], Extraction] = {}
        for path in self._parts():
            try:
                if path.stat().st_size > _MAX_PART_BYTES:
                    raise ValueError("part too large")
                data = json.loads(path.read_text(encoding="utf-8"))
                if (data.get("format"), data.get("version")) != (FORMAT, VERSION):
                    raise ValueError(f"not a version {VERSION} {FORMAT}")
                if data.get("extractor") != self.extractor_name:
                    continue
                if _digest(data["records"]) != data.get("sha256"):
                    raise ValueError("checksum mismatch")
                for item in data["records"]:
                    key = (str(item["passage_id"]), str(item["text_sha256"]))
                    out[key] = extraction_from_json(item["record"])
            except (OSError, ValueError, KeyError, TypeError) as exc:
                logger.warning("checkpoint part %s ignored (its passages are extracted "
                               "again): %s", path, exc)
        return out

    def write(self, passages: Sequence[TextPassage], records: Sequence[Any]) -> None:
        """Write one part holding ``records`` (one per passage), atomically."""
        items = [{"passage_id": p.id, "text_sha256": text_digest(p.text),
                  "record": extraction_to_json(r)} for p, r in zip(passages, records, strict=True)]
        if not items:
            return
        body = {"format": FORMAT, "version": VERSION, "extractor": self.extractor_name,
                "sha256": _digest(items), "records": items}
        atomic_write(self.directory / f"part-{self._next:06d}.json",
                     json.dumps(body, ensure_ascii=False), what="a checkpoint part")
        self._next += 1
