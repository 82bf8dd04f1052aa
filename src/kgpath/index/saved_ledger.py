"""The document ledger of a saved index: written by ``GraphIndex.save``, checked by ``load``.

An index built by :meth:`~kgpath.index.GraphIndex.from_documents` keeps a
:class:`~kgpath.ingest.ledger.DocumentLedger` (its documents in order and every passage's
extraction record). :func:`ledger_files` adds it to a save as ``ledger.json``
(:func:`kgpath.ingest.ledger.ledger_to_json`) and records in ``index.json`` the node-vector
mode (``node_vector_mode``) and the extractor (``extractor``: its name and class, and for the
bundled spaCy extractor its settings). :func:`restore_ledger` reads them back, so that a
reopened index updates by document exactly like the one that was saved.

What is not saved, because it is derived: the ledger's incremental merge state
(:class:`~kgpath.ingest.replay.OpenAssembly`, rebuilt from the records by the first update:
one merge pass, nothing extracted or embedded) and its document sequence numbers (only
their order matters, which is the documents' order); ``last_build`` (the report of a build
this process did not make) is ``None`` after a load.

The extractor itself is never saved (no pickle). On load, ``extractor=`` is used when
given (its name must be the saved one: the open family writes it into node and edge
metadata); otherwise the bundled :class:`~kgpath.ingest.spacy_extractor.SpacyExtractor` is
rebuilt from its saved settings; any other extractor (an LLM's, a custom one) is replaced
by a stand-in of the same name: deletions and updates whose passages are all known work,
and reading a new passage raises :class:`~kgpath.errors.ConfigError` asking for
``extractor=`` (at load or on the update).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgpath.errors import ConfigError, PersistenceError
from kgpath.ingest.assemble import as_extractor
from kgpath.ingest.documents import content_digest
from kgpath.ingest.extraction import Extraction, OpenExtractor
from kgpath.ingest.extractor import Extractor
from kgpath.ingest.ledger import DocumentLedger, ledger_from_json, ledger_to_json

if TYPE_CHECKING:
    from kgpath.graph import KnowledgeGraph
    from kgpath.index.graph_index import GraphIndex

__all__ = ["LEDGER_FILE", "ledger_files", "restore_ledger"]

LEDGER_FILE = "ledger.json"
_MODES = ("passage_mean", "text")
_SPACY = ("kgpath.ingest.spacy_extractor", "SpacyExtractor")
_SPACY_KEYS = {"model": str, "cooccurrence": bool, "concepts": bool, "terms": bool,
               "max_path": int, "batch_size": int}


# ---------------------------------------------------------------------- save
def ledger_files(index: GraphIndex, meta: dict[str, Any], files: dict[str, Any]) -> None:
    """Add ``node_vector_mode`` and ``extractor`` to ``meta`` and ``ledger.json`` to ``files``.

    A ledger that does not describe the graph's passages (the graph was edited by hand) or
    whose records are not the open family's is not saved, with a :class:`UserWarning`: the
    reopened index then updates through the non-exact path of an index without a ledger.
    """
    meta["node_vector_mode"] = index.node_vectors
    ledger = index.ledger
    if ledger is None:
        return
    why = _unsaveable(ledger, index.graph)
    if why is None:
        try:
            data = ledger_to_json(ledger)
        except ConfigError as exc:
            why = str(exc)
    if why is not None:
        warnings.warn(f"the index's document ledger is not saved ({why}); the reopened "
                      "index updates without it (not equal to a rebuild)", UserWarning,
                      stacklevel=3)
        return
    meta["extractor"] = extractor_record(ledger.extractor)
    files[LEDGER_FILE] = json.dumps(data, ensure_ascii=False, default=str).encode("utf-8")


def _unsaveable(ledger: DocumentLedger, graph: KnowledgeGraph) -> str | None:
    if not all(isinstance(r, Extraction) for _, r in ledger.records.values()):
        return "its records are not the open family's Extraction"
    if _passages(ledger) != [(pid, p.text) for pid, p in graph.passages.items()]:
        return "it does not describe the graph's passages: the graph was edited directly"
    return None


def _passages(ledger: DocumentLedger) -> list[tuple[str, str]]:
    return [(p.id, p.text) for p in ledger.passages()]


def extractor_record(extractor: Any) -> dict[str, Any] | None:
    """The saved description of ``extractor``: name, class, and spaCy's settings."""
    if extractor is None:
        return None
    if isinstance(extractor, SavedExtractor):  # reopened without it: keep what was saved
        return {"name": extractor.name, "class": extractor.cls}
    cls = type(extractor)
    rec: dict[str, Any] = {"name": extractor.name or cls.__name__,
                           "class": f"{cls.__module__}.{cls.__qualname__}"}
    if (cls.__module__, cls.__qualname__) == _SPACY and isinstance(extractor.model, str):
        rec["spacy"] = {k: getattr(extractor, k) for k in _SPACY_KEYS}
    return rec


# ---------------------------------------------------------------------- load
def restore_ledger(d: Path, index: GraphIndex, meta: dict[str, Any], extra: dict[str, Any],
                   extractor: Any) -> None:
    """Set ``index.node_vectors`` and ``index.ledger`` from a saved index (see the module).

    Raises
    ------
    PersistenceError
        For a ``ledger.json`` that is malformed or does not describe the saved graph
        (naming the file), or a malformed record in ``index.json``.
    ConfigError
        For an ``extractor`` that is no extractor or whose name is not the saved one.
    """
    mode = meta.get("node_vector_mode", "passage_mean")
    if mode not in _MODES:
        raise PersistenceError(f"{d / 'index.json'} is corrupt: node_vector_mode {mode!r}")
    index.node_vectors = mode
    raw = extra.get(LEDGER_FILE)
    if raw is None:
        return
    where = d / LEDGER_FILE
    rec = meta.get("extractor")
    if rec is not None and not (isinstance(rec, dict) and isinstance(rec.get("name"), str)
                                and isinstance(rec.get("class"), str)):
        raise PersistenceError(f"{d / 'index.json'} is corrupt: bad 'extractor' record")
    ex = _extractor(rec, extractor)
    try:
        ledger = ledger_from_json(json.loads(raw.decode("utf-8")), ex)
    except Exception as exc:  # noqa: BLE001 - any failure reading it: corrupt
        raise PersistenceError(f"{where} is corrupt: {exc}"[:300]) from exc
    problem = _mismatch(ledger, index.graph)
    if problem:
        raise PersistenceError(f"{where} does not match the saved index: {problem}"[:300])
    index.ledger = ledger


def _mismatch(ledger: DocumentLedger, graph: KnowledgeGraph) -> str:
    """Why ``ledger`` cannot be the saved graph's (forged or mixed files), or ``""``."""
    for doc_id, e in ledger.documents.items():
        doc = e.document
        if e.digest != content_digest(doc.title, doc.sentences, doc.metadata):
            return f"document {doc_id!r} does not have the content digest it lists"
        if any(p.doc_id != doc_id for p in e.passages):
            return f"document {doc_id!r} lists another document's passage"
    if _passages(ledger) != [(pid, p.text) for pid, p in graph.passages.items()]:
        return "its passages are not the graph's (ids, texts, order)"
    if any(pid not in ledger.records for pid, _ in _passages(ledger)):
        return "a passage has no extraction record"
    if not all(isinstance(r, Extraction) for _, r in ledger.records.values()):
        return "a record is not an Extraction"
    return ""


def _extractor(rec: dict[str, Any] | None, given: Any) -> Extractor[Any] | None:
    if given is not None:
        given = as_extractor(given)  # an Extractor or a name ("spacy"), else ConfigError
        name = given.name or type(given).__name__
        if rec is not None and name != rec["name"]:
            raise ConfigError(f"the index was saved with the extractor {rec['name']!r} "
                              f"({rec['class']}); extractor= is {name!r}, which would "
                              f"write other graphs: pass an extractor named {rec['name']!r}")
        return given
    if rec is None:
        return None
    spacy = rec.get("spacy")
    if isinstance(spacy, dict) and set(spacy) == set(_SPACY_KEYS) and all(
            type(spacy[k]) is t for k, t in _SPACY_KEYS.items()):
        from kgpath.ingest.spacy_extractor import SpacyExtractor

        return SpacyExtractor(**spacy)
    return SavedExtractor(rec["name"], rec["class"])


class SavedExtractor(OpenExtractor):
    """Stands for an extractor a saved index names but kgpath cannot rebuild (no pickle).

    It merges records under the saved name (deletions and updates of known passages are
    exact); reading a passage raises :class:`~kgpath.errors.ConfigError`.
    """

    def __init__(self, name: str, cls: str) -> None:
        self.name = name
        self.cls = cls

    def __repr__(self) -> str:
        return f"SavedExtractor(name={self.name!r}, cls={self.cls!r})"

    def extract_passage(self, passage_id: str, text: str) -> Extraction:
        """Refuse: the saved index's extractor was not given."""
        raise ConfigError(
            f"passage {passage_id!r} needs the extractor {self.name!r} ({self.cls}) the "
            "index was saved with, which kgpath cannot rebuild; pass extractor= to "
            "GraphIndex.load or to this update (llm= for the LLM extractor)")
