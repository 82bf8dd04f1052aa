"""Documents to a knowledge graph in one call: chunk, extract, merge, add.

:func:`graph_from_documents` is what ``GraphIndex.from_documents`` and every adapter's
``from_documents`` call. Passages keep their source id and the document's metadata as
*passage* metadata; entity nodes carry only what extraction found (name, type, the first
sentence that mentions them as text, provenance) and the extractor's name. Adding
documents to an existing graph extends it: existing nodes keep their text (so their
vectors stay valid) and gain provenance; only new nodes have no vector and are embedded
by the next index build.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgpath._progress import progress
from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.ingest.documents import (
    ChunkingConfig,
    TextPassage,
    chunk_document,
    coerce_documents,
)
from kgpath.ingest.extraction import Extraction, Extractor, entity_key, short_form_map

__all__ = [
    "IngestReport",
    "agraph_from_documents",
    "aingest_documents",
    "graph_from_documents",
    "ingest_documents",
]

logger = logging.getLogger(__name__)

COOCCURRENCE_WEIGHT = 0.5
"""Edge weight of co-occurrence relations (syntactic and LLM relations weigh 1.0)."""
_TEXT_CHARS = 400


@dataclass
class IngestReport:
    """Counts of one ingestion, also logged at INFO."""

    documents: int = 0
    passages_new: int = 0
    passages_unchanged: int = 0
    passages_changed: int = 0
    nodes_new: int = 0
    edges_added: int = 0
    notes: list[str] = field(default_factory=list)


def _default_extractor(llm: Any) -> Extractor:
    if llm is not None:
        from kgpath.ingest.llm_extractor import LLMExtractor

        return LLMExtractor(llm)
    from kgpath.ingest.spacy_extractor import SpacyExtractor

    return SpacyExtractor()


def _passages_to_extract(graph: KnowledgeGraph, documents: Iterable[Any],
                         chunking: ChunkingConfig | None,
                         report: IngestReport) -> list[TextPassage]:
    """Chunk, add passages to the graph, return those that are new or changed."""
    docs = coerce_documents(documents)
    report.documents = len(docs)
    todo: list[TextPassage] = []
    for doc in progress(docs, desc="chunking", unit="doc"):
        for p in chunk_document(doc, chunking):
            old = graph.passages.get(p.id)
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


def _doc_key_maps(passages: Sequence[TextPassage],
                  extractions: Sequence[Extraction]) -> dict[str, dict[str, str]]:
    """Per document: short key -> the longer key it abbreviates (same document only)."""
    keys: dict[str, list[str]] = {}
    for p, ex in zip(passages, extractions, strict=True):
        names = [e.name for e in ex.entities]
        names += [n for r in ex.relations for n in (r.head, r.tail)]
        keys.setdefault(p.doc_id, []).extend(entity_key(n) for n in names)
    return {doc: short_form_map(k for k in ks if k) for doc, ks in keys.items()}


class _Merger:
    """Adds extracted entities and relations to the graph, merging names by key."""

    def __init__(self, graph: KnowledgeGraph, extractor_name: str, report: IngestReport):
        self.graph = graph
        self.name = extractor_name
        self.report = report
        self.id_of: dict[str, str] = {}
        for n in graph.nodes:
            self.id_of.setdefault(entity_key(n.name), n.id)
        self.types: dict[str, Counter[str]] = {}

    def node(self, name: str, typ: str | None, sentence: str, passage: str,
             short: dict[str, str]) -> str | None:
        key = entity_key(name)
        if not key:
            return None
        key = short.get(key, key)
        g = self.graph
        nid = self.id_of.get(key)
        if typ:
            self.types.setdefault(key, Counter())[typ] += 1
        if nid is None:
            nid = name.strip()
            while nid in g:  # a different key already uses this surface form
                nid += "'"
            self.id_of[key] = nid
            g.add_node(nid, name.strip(), sentence[:_TEXT_CHARS], type=typ or "Concept",
                       metadata={"extractor": self.name}, provenance=(passage,))
            self.report.nodes_new += 1
            return nid
        old = g.node(nid)
        if passage not in old.provenance or (typ and old.type != self._type(key, old.type)):
            g.add_node(nid, old.name, old.text, type=self._type(key, old.type),
                       metadata=old.metadata, provenance=(*old.provenance, passage)
                       if passage not in old.provenance else old.provenance)
        return nid

    def _type(self, key: str, current: str | None) -> str | None:
        counts = self.types.get(key)
        if not counts:
            return current
        named = {t: c for t, c in counts.items() if t not in ("Concept", "Entity")}
        pool = named or counts
        return max(pool, key=lambda t: (pool[t], t))

    def add(self, passage: TextPassage, ex: Extraction, short: dict[str, str]) -> None:
        for e in ex.entities:
            self.node(e.name, e.type, e.sentence, passage.id, short)
        for r in ex.relations:
            h = self.node(r.head, None, r.sentence, passage.id, short)
            t = self.node(r.tail, None, r.sentence, passage.id, short)
            if h is None or t is None or h == t:
                continue
            weight = COOCCURRENCE_WEIGHT if r.kind == "cooccurrence" else 1.0
            self.graph.add_edge(h, t, r.relation, r.sentence[:_TEXT_CHARS], type=r.kind,
                                weight=weight, provenance=(passage.id,),
                                metadata={"extractor": self.name})
            self.report.edges_added += 1


def _merge(graph: KnowledgeGraph, extractor: Extractor, passages: Sequence[TextPassage],
           extractions: Sequence[Extraction], report: IngestReport) -> KnowledgeGraph:
    if len(extractions) != len(passages):
        raise ValueError(f"extractor {extractor.name!r} returned {len(extractions)} "
                         f"extractions for {len(passages)} passages")
    shorts = _doc_key_maps(passages, extractions)
    merger = _Merger(graph, getattr(extractor, "name", type(extractor).__name__), report)
    for p, ex in zip(passages, extractions, strict=True):
        report.notes.extend(f"{p.id}: {n}" for n in ex.notes)
        merger.add(p, ex, shorts.get(p.doc_id, {}))
    logger.info(
        "from_documents: %d document(s), %d new / %d changed / %d unchanged passage(s), "
        "%d new node(s), %d edge(s) added", report.documents, report.passages_new,
        report.passages_changed, report.passages_unchanged, report.nodes_new,
        report.edges_added,
    )
    return graph


def _batches(passages: Sequence[TextPassage], size: int) -> list[Sequence[TextPassage]]:
    return [passages[i:i + size] for i in range(0, len(passages), size)]


def _prepare(graph: KnowledgeGraph, documents: Iterable[Any], extractor: Extractor | None,
             llm: Any, chunking: ChunkingConfig | None, batch_size: int,
             ) -> tuple[IngestReport, list[TextPassage], Extractor, list[Sequence[TextPassage]]]:
    """Validate, chunk and add passages; the extractor and the batches still to extract."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size must be a positive int, got {batch_size!r}")
    report = IngestReport()
    todo = _passages_to_extract(graph, documents, chunking, report)
    ex = extractor if extractor is not None else _default_extractor(llm)
    return report, todo, ex, _batches(todo, batch_size)


def ingest_documents(
    graph: KnowledgeGraph,
    documents: Iterable[Any],
    *,
    extractor: Extractor | None = None,
    llm: Any = None,
    chunking: ChunkingConfig | None = None,
    batch_size: int = 64,
) -> IngestReport:
    """Add ``documents`` to ``graph`` (see :func:`graph_from_documents`); return the counts."""
    report, todo, ex, batches = _prepare(graph, documents, extractor, llm, chunking, batch_size)
    found = [x for batch in progress(batches, desc="extracting", unit="batch", threshold=1)
             for x in ex.extract(batch)]
    _merge(graph, ex, todo, found, report)
    return report


async def aingest_documents(
    graph: KnowledgeGraph,
    documents: Iterable[Any],
    *,
    extractor: Extractor | None = None,
    llm: Any = None,
    chunking: ChunkingConfig | None = None,
    batch_size: int = 64,
) -> IngestReport:
    """Async :func:`ingest_documents` (the extractor's ``aextract``)."""
    report, todo, ex, batches = _prepare(graph, documents, extractor, llm, chunking, batch_size)
    found = [x for batch in batches for x in await ex.aextract(batch)]
    _merge(graph, ex, todo, found, report)
    return report


def graph_from_documents(
    documents: Iterable[Any],
    *,
    extractor: Extractor | None = None,
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
        Any :class:`~kgpath.ingest.extraction.Extractor`. Default: the LLM extractor when
        ``llm`` is given, else the offline spaCy extractor (``pip install 'kgpath[nlp]'``).
    llm
        A kgpath :class:`~kgpath.llm.LLM` for the default LLM extractor.
    chunking
        :class:`~kgpath.ingest.documents.ChunkingConfig`.
    graph
        Extend this graph instead of a new one (passages with unchanged text are skipped).
    batch_size
        Passages per extractor call (one progress step each).

    Raises
    ------
    GraphError
        For a malformed document collection (naming the bad document).
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
    extractor: Extractor | None = None,
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
