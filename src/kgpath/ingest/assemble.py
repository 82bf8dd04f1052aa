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
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from kgpath._progress import progress
from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.ingest.chunking import ChunkingConfig, TextPassage, chunk_document
from kgpath.ingest.documents import coerce_documents
from kgpath.ingest.extractor import Extractor, IngestReport

__all__ = [
    "agraph_from_documents",
    "aingest_documents",
    "graph_from_documents",
    "ingest_documents",
]

logger = logging.getLogger(__name__)


def _default_extractor(llm: Any) -> Extractor[Any]:
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


def _merge(graph: KnowledgeGraph, extractor: Extractor[Any], passages: Sequence[TextPassage],
           records: Sequence[Any], report: IngestReport) -> KnowledgeGraph:
    if len(records) != len(passages):
        name = extractor.name or type(extractor).__name__
        raise ValueError(f"extractor {name!r} returned {len(records)} extractions for "
                         f"{len(passages)} passages")
    extractor.add_to_graph(graph, passages, records, report)
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
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size must be a positive int, got {batch_size!r}")
    if extractor is not None and not isinstance(extractor, Extractor):
        raise ConfigError(
            f"extractor must be a kgpath.ingest.Extractor (SpacyExtractor, LLMExtractor, "
            f"SchemaExtractor, PatternExtractor or a subclass), got {type(extractor).__name__}"
        )
    report = IngestReport()
    todo = _passages_to_extract(graph, documents, chunking, report)
    ex = extractor if extractor is not None else _default_extractor(llm)
    return report, todo, ex, _batches(todo, batch_size)


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
