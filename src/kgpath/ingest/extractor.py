"""The one extractor protocol: a template base whose subclasses implement one hook pair.

Every extractor - spaCy (:class:`~kgpath.ingest.spacy_extractor.SpacyExtractor`), any LLM
(:class:`~kgpath.ingest.llm_extractor.LLMExtractor`), schema-bounded
(:class:`~kgpath.ingest.extract.SchemaExtractor`) and pattern
(:class:`~kgpath.ingest.extract.PatternExtractor`) - is an :class:`Extractor`, and
:func:`kgpath.ingest.graph_from_documents` drives any of them the same way::

    records = extractor.extract_passages(passages)        # or await aextract_passages
    extractor.add_to_graph(graph, passages, records, report)

Like LlamaIndex's property-graph sub-retriever base (``retrieve_from_graph`` /
``aretrieve_from_graph`` behind ``_retrieve``), the base owns the loop and a subclass
implements one sync/async pair:

* the **hook pair** :meth:`Extractor.extract_passage` / :meth:`Extractor.aextract_passage`
  reads one passage (the async default runs the sync hook in a worker thread; an extractor
  whose backend has a native async call overrides it);
* the **template** :meth:`Extractor.extract_passages` / :meth:`Extractor.aextract_passages`
  runs the hook over a batch, ``max_concurrency`` at a time, results in input order (a
  batch-native backend such as spaCy's ``nlp.pipe`` overrides the sync one);
* :meth:`Extractor.add_to_graph` writes the records into a graph. It is implemented once
  per record family, not per extractor: :class:`~kgpath.ingest.extraction.OpenExtractor`
  (open vocabulary: names merged by :func:`~kgpath.ingest.extraction.entity_key`; spaCy and
  LLM) and :class:`~kgpath.ingest.extract.BaseSchemaExtractor` (typed records bounded by a
  :class:`~kgpath.ingest.schema.Schema`; schema and pattern).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from kgpath._parallel import aparallel_map, parallel_map
from kgpath.graph import KnowledgeGraph
from kgpath.ingest.chunking import TextPassage

__all__ = ["Extractor", "IngestReport"]

R = TypeVar("R")


@dataclass
class IngestReport:
    """Counts of one ingestion, also logged at INFO.

    The document lifecycle (:mod:`kgpath.index.documents`) also fills the document counts
    (``documents_unchanged``: known and identical, a no-op; ``documents_replaced``;
    ``documents_deleted``), ``passages_removed``, ``passages_extracted`` (extractor calls
    made, retries of failed passages and checkpoint hits excluded: ``passages_resumed``) and
    ``failed``: the passages whose extraction failed (:meth:`Extractor.failed`), retried by
    the next add or upsert. There ``nodes_new`` counts node ids the graph did not have and
    ``edges_added`` the edges that are new or changed (text, provenance, ...).
    """

    documents: int = 0
    passages_new: int = 0
    passages_unchanged: int = 0
    passages_changed: int = 0
    nodes_new: int = 0
    edges_added: int = 0
    notes: list[str] = field(default_factory=list)
    documents_unchanged: int = 0
    documents_replaced: int = 0
    documents_deleted: int = 0
    passages_removed: int = 0
    passages_extracted: int = 0
    passages_resumed: int = 0
    failed: list[str] = field(default_factory=list)


class Extractor(ABC, Generic[R]):
    """Reads passages into records ``R`` and writes records into a graph.

    Subclasses implement :meth:`extract_passage` (and :meth:`aextract_passage` when their
    backend is natively async) and inherit :meth:`add_to_graph` from their record family.

    Attributes
    ----------
    name
        Recorded in the graph's node/edge metadata (``extractor``) by the open family
        (empty: the class name).
    max_concurrency
        Passages read at once by :meth:`extract_passages` (threads) and
        :meth:`aextract_passages` (tasks); ``1`` reads them one after another.
    """

    name: str = ""
    max_concurrency: int = 1

    @abstractmethod
    def extract_passage(self, passage_id: str, text: str) -> R:
        """Read one passage (the sync hook)."""

    async def aextract_passage(self, passage_id: str, text: str) -> R:
        """Async :meth:`extract_passage` (default: the sync hook in a worker thread)."""
        return await asyncio.to_thread(self.extract_passage, passage_id, text)

    def extract_passages(self, passages: Sequence[TextPassage]) -> list[R]:
        """One record per passage, in order, ``max_concurrency`` passages at a time."""
        runs = parallel_map(lambda p: self.extract_passage(p.id, p.text), passages,
                            max_workers=self.max_concurrency)
        return [r for r, _, _ in runs]

    async def aextract_passages(self, passages: Sequence[TextPassage]) -> list[R]:
        """Async :meth:`extract_passages` (the async hook, ``max_concurrency`` at a time)."""

        async def one(p: TextPassage) -> R:
            return await self.aextract_passage(p.id, p.text)

        runs = await aparallel_map(one, passages, limit=self.max_concurrency)
        return [r for r, _, _ in runs]

    def failed(self, record: R) -> bool:
        """Whether ``record`` stands for a failed reading (retried by the next add/upsert).

        Default: the record's ``failed`` attribute (the open family's
        :class:`~kgpath.ingest.extraction.Extraction` has one), else ``False``.
        """
        return bool(getattr(record, "failed", False))

    @abstractmethod
    def add_to_graph(self, graph: KnowledgeGraph, passages: Sequence[TextPassage],
                     records: Sequence[R], report: IngestReport) -> None:
        """Write ``records`` (one per passage, same order) into ``graph``.

        The passages are already in the graph. Counts and notes go into ``report``.
        """
