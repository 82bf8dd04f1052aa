"""Documents to a knowledge graph in one call: coerce, chunk, extract, add.

:func:`graph_from_documents` is what ``GraphIndex.from_documents`` and every adapter's
``from_documents`` call. Documents are read by the one coercer
(:func:`~kgpath.ingest.documents.coerce_documents`) and packed into passages by the one
chunker (:func:`~kgpath.ingest.chunking.chunk_document`); passages keep their source id and
the document's metadata as *passage* metadata. Any :class:`~kgpath.ingest.extractor.Extractor`
then reads the new or changed passages and adds its records to the graph
(:meth:`~kgpath.ingest.extractor.Extractor.add_to_graph`): the open family (spaCy, LLM)
merges names by key, the schema family (schema, pattern) bounds typed records by its
schema, exactly as its own ``extract`` does. Adding documents to an existing graph extends
it; only new nodes have no vector and are embedded by the next index build.

The document lifecycle of an index works on a :class:`~kgpath.ingest.ledger.DocumentLedger`
instead (:func:`plan_documents`, :func:`extract_pending`, :func:`assemble_graph`): the
graph is assembled from the stored records of every passage, in document order, with one
``add_to_graph`` call, which is also what a build from scratch does, so an updated index
equals a rebuild.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from kgpath._progress import progress
from kgpath.errors import ConfigError, DocumentError, short
from kgpath.graph import KnowledgeGraph
from kgpath.ingest.checkpoint import ExtractionCheckpoint
from kgpath.ingest.chunking import (
    ChunkingConfig,
    TextPassage,
    as_chunking,
    chunk_document,
    passage_document,
)
from kgpath.ingest.documents import coerce_documents, content_digest
from kgpath.ingest.extraction import Extraction, OpenExtractor
from kgpath.ingest.extractor import Extractor, IngestReport
from kgpath.ingest.ledger import DocumentLedger, LedgerDocument, text_digest
from kgpath.ingest.replay import OpenAssembly, assemble_open

__all__ = [
    "EXTRACTOR_NAMES",
    "agraph_from_documents",
    "aextract_pending",
    "aingest_documents",
    "as_extractor",
    "assemble_graph",
    "check_extractor",
    "default_extractor",
    "extract_pending",
    "graph_from_documents",
    "ingest_documents",
    "plan_documents",
]

logger = logging.getLogger(__name__)


def default_extractor(llm: Any) -> Extractor[Any]:
    """The LLM extractor when ``llm`` is given, else the offline spaCy extractor."""
    if llm is not None:
        from kgpath.ingest.llm_extractor import LLMExtractor

        return LLMExtractor(llm)
    from kgpath.ingest.spacy_extractor import SpacyExtractor

    return SpacyExtractor()


#: Extractor names :func:`as_extractor` accepts (those that need nothing but ``llm=``).
EXTRACTOR_NAMES = ("spacy", "llm")


def as_extractor(extractor: Any, llm: Any = None) -> Extractor[Any]:
    """The one reading of an ``extractor=`` argument (``llm=`` used by the default).

    ``None`` (the LLM extractor with ``llm``, else spaCy), an
    :class:`~kgpath.ingest.extractor.Extractor`, or a name: ``"spacy"``
    (:class:`~kgpath.ingest.SpacyExtractor` with its defaults) or ``"llm"``
    (:class:`~kgpath.ingest.LLMExtractor` over ``llm``).

    Raises
    ------
    ConfigError
        For anything else, naming the value and what is accepted (the schema and pattern
        extractors need a schema: build them and pass the object).
    """
    if extractor is None:
        return default_extractor(llm)
    if isinstance(extractor, Extractor):
        return extractor
    _check_name(extractor, llm is not None)
    if extractor.strip().lower() == "spacy":
        from kgpath.ingest.spacy_extractor import SpacyExtractor

        return SpacyExtractor()
    return default_extractor(llm)


def _check_name(extractor: object, has_llm: bool) -> None:
    """Raise :class:`ConfigError` unless ``extractor`` is a name :func:`as_extractor` reads."""
    name = extractor.strip().lower() if isinstance(extractor, str) else None
    if name == "spacy" or (name == "llm" and has_llm):
        return
    got = short(extractor) if isinstance(extractor, str) else type(extractor).__name__
    hint = ("; extractor='llm' needs llm=" if name == "llm" else
            "; the schema and pattern extractors need a schema: pass SchemaExtractor(schema, "
            "llm) or PatternExtractor(schema, gazetteer)" if name in ("schema", "pattern")
            else "")
    raise ConfigError(
        f"extractor must be a kgpath.ingest.Extractor (SpacyExtractor, LLMExtractor, "
        f"SchemaExtractor, PatternExtractor or a subclass) or one of the names "
        f"{list(EXTRACTOR_NAMES)}, got {got}{hint}"
    )


def _passages_to_extract(graph: KnowledgeGraph, documents: Iterable[Any],
                         chunking: ChunkingConfig | None,
                         report: IngestReport) -> list[TextPassage]:
    """Chunk, add passages to the graph, return those that are new or changed."""
    docs = coerce_documents(documents)
    report.documents = len(docs)
    todo: list[TextPassage] = []
    held = graph.passages
    owners = {k: passage_document(v.metadata, k) for k, v in held.items()}
    for doc in progress(docs, desc="chunking", unit="doc"):
        for p in chunk_document(doc, chunking):
            old = held.get(p.id)
            owner = owners.setdefault(p.id, doc.id)
            if owner != doc.id:
                raise DocumentError(
                    f"passage id {p.id!r} of document {doc.id!r} is already a passage of "
                    f"document {owner!r}; give one of them another id", document_id=doc.id)
            if old is not None and old.text == p.text:
                report.passages_unchanged += 1
                continue
            if old is None:
                report.passages_new += 1
            else:
                report.passages_changed += 1
            graph.add_passage(p.id, p.text, p.metadata)
            todo.append(p)
    return todo


def _merge(graph: KnowledgeGraph, extractor: Extractor[Any], passages: Sequence[TextPassage],
           records: Sequence[Any], report: IngestReport) -> KnowledgeGraph:
    if len(records) != len(passages):
        name = extractor.name or type(extractor).__name__
        raise ValueError(f"extractor {name!r} returned {len(records)} extractions for "
                         f"{len(passages)} passages")
    extractor.add_to_graph(graph, passages, records, report)
    report.failed += [p.id for p, r in zip(passages, records, strict=True) if extractor.failed(r)]
    logger.info(
        "from_documents: %d document(s), %d new / %d changed / %d unchanged passage(s), "
        "%d new node(s), %d edge(s) added", report.documents, report.passages_new,
        report.passages_changed, report.passages_unchanged, report.nodes_new,
        report.edges_added,
    )
    return graph


def _batches(passages: Sequence[TextPassage], size: int) -> list[Sequence[TextPassage]]:
    return [passages[i:i + size] for i in range(0, len(passages), size)]


def _prepare(graph: KnowledgeGraph, documents: Iterable[Any], extractor: Extractor[Any] | None,
             llm: Any, chunking: ChunkingConfig | None, batch_size: int,
             ) -> tuple[IngestReport, list[TextPassage], Extractor[Any],
                        list[Sequence[TextPassage]]]:
    """Validate, chunk and add passages; the extractor and the batches still to extract."""
    check_extractor(extractor, batch_size, llm)
    report = IngestReport()
    todo = _passages_to_extract(graph, documents, as_chunking(chunking), report)
    ex = as_extractor(extractor, llm)
    return report, todo, ex, _batches(todo, batch_size)


def check_extractor(extractor: object, batch_size: object, llm: Any = True) -> None:
    """Raise :class:`ConfigError` for a bad ``batch_size`` or an unreadable ``extractor``.

    ``extractor`` is checked as :func:`as_extractor` reads it (``"llm"`` needs ``llm``,
    when ``llm`` is passed).
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size must be a positive int, got {batch_size!r}")
    if extractor is not None and not isinstance(extractor, Extractor):
        _check_name(extractor, llm is not None)


def ingest_documents(
    graph: KnowledgeGraph,
    documents: Iterable[Any],
    *,
    extractor: Extractor[Any] | None = None,
    llm: Any = None,
    chunking: ChunkingConfig | None = None,
    batch_size: int = 64,
) -> IngestReport:
    """Add ``documents`` to ``graph`` (see :func:`graph_from_documents`); return the counts."""
    report, todo, ex, batches = _prepare(graph, documents, extractor, llm, chunking, batch_size)
    found = [x for batch in progress(batches, desc="extracting", unit="batch", threshold=1)
             for x in ex.extract_passages(batch)]
    _merge(graph, ex, todo, found, report)
    return report


async def aingest_documents(
    graph: KnowledgeGraph,
    documents: Iterable[Any],
    *,
    extractor: Extractor[Any] | None = None,
    llm: Any = None,
    chunking: ChunkingConfig | None = None,
    batch_size: int = 64,
) -> IngestReport:
    """Async :func:`ingest_documents` (the extractor's ``aextract_passages``)."""
    report, todo, ex, batches = _prepare(graph, documents, extractor, llm, chunking, batch_size)
    found = [x for batch in batches for x in await ex.aextract_passages(batch)]
    _merge(graph, ex, todo, found, report)
    return report


def graph_from_documents(
    documents: Iterable[Any],
    *,
    extractor: Extractor[Any] | None = None,
    llm: Any = None,
    chunking: ChunkingConfig | None = None,
    graph: KnowledgeGraph | None = None,
    batch_size: int = 64,
) -> KnowledgeGraph:
    """Build (or extend) a knowledge graph from raw documents.

    Parameters
    ----------
    documents
        Strings, ``(id, text)`` pairs, mappings with ``text``, LlamaIndex ``Document`` /
        ``TextNode`` or LangChain ``Document`` objects.
    extractor
        Any :class:`~kgpath.ingest.extractor.Extractor`: spaCy, LLM, schema-bounded or
        pattern (a schema extractor adds the same nodes and edges as its own ``extract``).
        Default: the LLM extractor when ``llm`` is given, else the offline spaCy extractor
        (``pip install 'kgpath[nlp]'``).
    llm
        A kgpath :class:`~kgpath.llm.LLM` for the default LLM extractor.
    chunking
        :class:`~kgpath.ingest.chunking.ChunkingConfig`.
    graph
        Extend this graph instead of a new one (passages with unchanged text are skipped).
    batch_size
        Passages per extractor call (one progress step each).

    Raises
    ------
    GraphError
        For a malformed document collection (naming the bad document).
    ConfigError
        For an ``extractor`` that is not an :class:`~kgpath.ingest.extractor.Extractor`.
    MissingDependencyError
        If the default extractor's dependency is missing.

    Examples
    --------
    >>> g = graph_from_documents(["Marie Curie was born in Warsaw."])  # doctest: +SKIP
    >>> [(e.source, e.relation, e.target) for e in g.edges]  # doctest: +SKIP
    [('Marie Curie', 'was born in', 'Warsaw')]
    """
    g = graph if graph is not None else KnowledgeGraph()
    ingest_documents(g, documents, extractor=extractor, llm=llm, chunking=chunking,
                     batch_size=batch_size)
    return g


async def agraph_from_documents(
    documents: Iterable[Any],
    *,
    extractor: Extractor[Any] | None = None,
    llm: Any = None,
    chunking: ChunkingConfig | None = None,
    graph: KnowledgeGraph | None = None,
    batch_size: int = 64,
) -> KnowledgeGraph:
    """Async :func:`graph_from_documents`."""
    g = graph if graph is not None else KnowledgeGraph()
    await aingest_documents(g, documents, extractor=extractor, llm=llm, chunking=chunking,
                            batch_size=batch_size)
    return g


# ---------------------------------------------------------------------- the ledger path
def plan_documents(ledger: DocumentLedger, documents: Iterable[Any], *, replace: bool,
                   chunking: ChunkingConfig | None = None,
                   id_key: str = "id") -> tuple[dict[str, LedgerDocument], IngestReport]:
    """The ledger's documents after adding (``replace=False``) or upserting ``documents``.

    Known documents with identical content are no-ops (``documents_unchanged``); a known id
    with other content is replaced in place when ``replace``, else refused. Nothing is
    changed: the caller installs the returned ``id -> LedgerDocument`` (index order).

    Raises
    ------
    DocumentError
        For a known id with different content when not ``replace``, or a passage id that
        another document already has (a document ``d#0`` beside a chunked ``d``), naming it.
    """
    docs = coerce_documents(documents, id_key=id_key)
    cfg = as_chunking(chunking) or ledger.chunking
    report = IngestReport(documents=len(docs))
    new = dict(ledger.documents)
    for d in docs:
        digest = content_digest(d.title, d.sentences, d.metadata)
        old = ledger.documents.get(d.id)
        if old is not None and old.digest == digest:
            report.documents_unchanged += 1
            continue
        if old is not None and not replace:
            raise DocumentError(
                f"document {d.id!r} is already in the index with different content; "
                f"upsert_documents replaces it", document_id=d.id)
        report.documents_replaced += old is not None
        new[d.id] = LedgerDocument(d, digest, tuple(chunk_document(d, cfg)))
        _count_passages(ledger, new[d.id].passages, report)
    _check_passage_ids(new)
    return new, report


def _count_passages(ledger: DocumentLedger, passages: Sequence[TextPassage],
                    report: IngestReport) -> None:
    for p in passages:
        hit = ledger.records.get(p.id)
        if hit is None:
            report.passages_new += 1
        elif hit[0] == text_digest(p.text):
            report.passages_unchanged += 1
        else:
            report.passages_changed += 1


def _check_passage_ids(documents: dict[str, LedgerDocument]) -> None:
    owner: dict[str, str] = {}
    for doc_id, entry in documents.items():
        for p in entry.passages:
            other = owner.setdefault(p.id, doc_id)
            if other != doc_id:
                raise DocumentError(
                    f"passage id {p.id!r} of document {doc_id!r} is already a passage of "
                    f"document {other!r}; give one of them another id", document_id=doc_id)


def _resume(ledger: DocumentLedger, todo: list[TextPassage],
            checkpoint: ExtractionCheckpoint | None,
            report: IngestReport) -> list[TextPassage]:
    """Take records of ``todo`` from the checkpoint; the passages still to extract."""
    if checkpoint is None:
        return todo
    done = checkpoint.load()
    rest = []
    for p in todo:
        hit = done.get((p.id, text_digest(p.text)))
        if hit is None:
            rest.append(p)
        else:
            ledger.record(p, hit, False)
            report.passages_resumed += 1
    return rest


def _keep(ledger: DocumentLedger, ex: Extractor[Any], batch: Sequence[TextPassage],
          records: Sequence[Any], checkpoint: ExtractionCheckpoint | None,
          report: IngestReport) -> None:
    if len(records) != len(batch):
        raise ValueError(f"extractor {ex.name or type(ex).__name__!r} returned "
                         f"{len(records)} extractions for {len(batch)} passages")
    ok = []
    for p, r in zip(batch, records, strict=True):
        failed = ex.failed(r)
        ledger.record(p, r, failed)
        report.notes.extend(f"{p.id}: {n}" for n in getattr(r, "notes", ()))
        if failed:
            report.failed.append(p.id)
        else:
            ok.append((p, r))
    report.passages_extracted += len(batch)
    if checkpoint is not None:
        checkpoint.write([p for p, _ in ok], [r for _, r in ok])


def _checkpoint(directory: Any, ex: Extractor[Any]) -> ExtractionCheckpoint | None:
    if directory is None:
        return None
    return ExtractionCheckpoint(directory, ex.name or type(ex).__name__)


def extract_pending(ledger: DocumentLedger, extractor: Extractor[Any], *,
                    batch_size: int = 64, checkpoint: Any = None,
                    report: IngestReport | None = None) -> IngestReport:
    """Extract every passage of the ledger without a valid record (new, edited, failed).

    With ``checkpoint`` (a directory) records are first taken from it, and each batch is
    written to it before the next one is read (:mod:`kgpath.ingest.checkpoint`).
    """
    rep = report if report is not None else IngestReport()
    cp = _checkpoint(checkpoint, extractor)
    todo = _resume(ledger, ledger.pending(), cp, rep)
    for batch in progress(_batches(todo, batch_size), desc="extracting", unit="batch",
                          threshold=1):
        _keep(ledger, extractor, batch, extractor.extract_passages(batch), cp, rep)
    return rep


async def aextract_pending(ledger: DocumentLedger, extractor: Extractor[Any], *,
                           batch_size: int = 64, checkpoint: Any = None,
                           report: IngestReport | None = None) -> IngestReport:
    """Async :func:`extract_pending` (the extractor's ``aextract_passages``)."""
    rep = report if report is not None else IngestReport()
    cp = _checkpoint(checkpoint, extractor)
    todo = _resume(ledger, ledger.pending(), cp, rep)
    for batch in _batches(todo, batch_size):
        _keep(ledger, extractor, batch, await extractor.aextract_passages(batch), cp, rep)
    return rep


def assemble_graph(ledger: DocumentLedger, extractor: Extractor[Any]) -> KnowledgeGraph:
    """The graph of the ledger: its passages in order, then every record at once.

    The same calls a build from scratch makes (passages added in document order, one
    ``add_to_graph`` over all of them), so node ids, texts (the first mentioning sentence),
    types (the majority over all mentions), provenance order and edge order are those of a
    rebuild. Open-family records (spaCy, LLM) are merged in one pass by
    :func:`kgpath.ingest.replay.assemble_open` (the same result, checked by a property
    test); other extractors' records go through their ``add_to_graph``.
    """
    passages = list(ledger.passages())
    records = [ledger.records[p.id][1] for p in passages]
    if isinstance(extractor, OpenExtractor) and all(isinstance(r, Extraction) for r in records):
        name = extractor.name or type(extractor).__name__
        if not isinstance(ledger.assembly, OpenAssembly) or ledger.assembly.extractor != name:
            ledger.assembly = OpenAssembly(name)
        return assemble_open(passages, records, name, assembly=ledger.assembly,
                             places=ledger.places())
    g = KnowledgeGraph()
    for p in passages:
        g.add_passage(p.id, p.text, p.metadata)
    if passages:
        extractor.add_to_graph(g, passages, records, IngestReport())
    return g
