"""Result types of the traversals and their evidence contract (:mod:`kgpath.evidence`).

A traversal returns the sentences it extracted, in extraction order, and the path of
chunks that produced them (article section "Knowledge Graph Traversal Algorithms": every
algorithm "extracts sentences from each visited chunk"). :meth:`TraversalResult.evidence`
turns them into ranked :class:`~kgpath.evidence.Evidence`: the sentences themselves, or the
documents (passages) they came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kgpath.evidence import Evidence, check_output, rank_items
from kgpath.methods.traversal.config import TraversalConfig

if TYPE_CHECKING:  # pragma: no cover
    from kgpath.graph import KnowledgeGraph, Passage

__all__ = ["TraversalResult", "TraversalStep", "TraversedSentence"]

METHOD = "traversal"


@dataclass(frozen=True)
class TraversalStep:
    """One visited chunk of the walk (hop 0 is the anchor)."""

    hop: int
    chunk_id: str
    doc_id: str
    score: float
    """The policy score that selected this chunk (anchor: ``cos(q, anchor)``)."""
    query_similarity: float
    """``cos(q, chunk)``."""
    transition_similarity: float | None
    """``cos(origin, chunk)``; ``None`` for the anchor."""
    new_sentences: tuple[str, ...]
    """Sentence node ids first extracted at this step."""
    reason: str
    """``"anchor"``, ``"policy"``, ``"llm"`` or ``"llm_fallback: ..."``."""
    origin_id: str | None = None
    """The visited chunk this hop started from (the previous chunk unless
    ``frontier="visited"`` branched); ``None`` for the anchor."""
    candidates: tuple[tuple[str, float], ...] = ()
    """Best-scored candidates at this step (chunk id, policy score), best first."""


@dataclass(frozen=True)
class TraversedSentence:
    """One extracted sentence, in extraction order."""

    id: str
    text: str
    doc_id: str
    chunk_id: str
    hop: int
    query_similarity: float


@dataclass(frozen=True)
class TraversalResult:
    """Sentences in extraction order plus the traversal path that produced them."""

    query: str
    algorithm: str
    anchor_id: str
    sentences: tuple[TraversedSentence, ...]
    path: tuple[TraversalStep, ...]
    stop_reason: str
    config: TraversalConfig
    trace: dict[str, Any] = field(default_factory=dict)

    graph: KnowledgeGraph | None = field(default=None, repr=False, compare=False)
    """The chunk graph walked (resolves passage text in :meth:`evidence`)."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.sentences)

    def __len__(self) -> int:
        return len(self.sentences)

    @property
    def path_ids(self) -> list[str]:
        """Visited chunk ids in order (anchor first)."""
        return [s.chunk_id for s in self.path]

    @property
    def documents(self) -> list[str]:
        """Document (passage) ids in the order their first sentence was extracted."""
        return list(dict.fromkeys(s.doc_id for s in self.sentences))

    @property
    def text(self) -> str:
        """The extracted sentences joined with spaces (the context for an LLM)."""
        return " ".join(s.text for s in self.sentences)

    def evidence(self, output: str = "passages", k: int | None = None) -> list[Evidence]:
        """The evidence contract (:mod:`kgpath.evidence`), best first, cut at ``k``.

        ``"native"``: one ``sentence`` item per extracted sentence, in extraction order
        (score ``cos(q, s)``; trace ``doc_id``, ``chunk_id``, ``hops`` = the hop that
        extracted it, ``query_similarity``, ``anchor_id``).

        ``"passages"`` (default): one ``passage`` item per document, in the order its first
        sentence was extracted (:attr:`documents`), with the passage's source text from
        ``graph.passages`` (a graph built by :func:`~kgpath.ingest.chunk_graph.build_chunk_graph`
        stores every document as a passage under its document id); score = the best
        ``cos(q, s)`` of its extracted sentences; trace ``sentence_ids`` (extraction order),
        ``anchor_id``, ``hops`` (hop of its first sentence) and ``doc_id``. A document that
        is not a passage of the graph (or every document when :attr:`graph` is ``None``)
        gets the text of its extracted sentences joined with spaces instead.

        Both outputs carry the passage's own metadata (``source_metadata``) when the graph
        has the passage.

        Examples
        --------
        >>> s = TraversedSentence("sent:A:0", "A is red.", "A", "chunk:A:0", 0, 0.75)
        >>> r = TraversalResult("q", "query_traversal", "chunk:A:0", (s,), (), "max_hops",
        ...                     TraversalConfig())
        >>> [(e.kind, e.id, e.text, e.score) for e in r.evidence()]
        [('passage', 'A', 'A is red.', 0.75)]
        """
        mode = check_output(output)
        store = self.graph.passages if self.graph is not None else {}
        if mode == "native":
            return rank_items((self._sentence_evidence(s, store) for s in self.sentences), k)
        return rank_items(self._passage_evidence(store), k)

    def _sentence_evidence(self, s: TraversedSentence, store: Mapping[str, Passage]) -> Evidence:
        trace = {
            "doc_id": s.doc_id,
            "chunk_id": s.chunk_id,
            "hops": s.hop,
            "query_similarity": s.query_similarity,
            "anchor_id": self.anchor_id,
        }
        passage = store.get(s.doc_id)
        meta = passage.metadata if passage is not None else {}
        return Evidence(s.id, s.text, s.query_similarity, "sentence", METHOD, trace=trace,
                        source_metadata=meta)

    def _passage_evidence(self, store: Mapping[str, Passage]) -> list[Evidence]:
        by_doc: dict[str, list[TraversedSentence]] = {}
        for s in self.sentences:
            by_doc.setdefault(s.doc_id, []).append(s)
        out = []
        for doc_id, sents in by_doc.items():  # first-extraction order (= self.documents)
            passage = store.get(doc_id)
            text = passage.text if passage is not None else " ".join(s.text for s in sents)
            trace = {
                "sentence_ids": [s.id for s in sents],
                "anchor_id": self.anchor_id,
                "hops": sents[0].hop,
                "doc_id": doc_id,
            }
            out.append(Evidence(
                doc_id, text, max(s.query_similarity for s in sents), "passage", METHOD,
                trace=trace, source_metadata=passage.metadata if passage is not None else {},
            ))
        return out
