"""Graph-augmented retrieval over a database: :class:`CypherAugmented`.

The method (:mod:`kgpath.methods.augmented.fusion`) reads, per question, only a small part
of the corpus, which this module fetches from a store with the
:class:`~kgpath.backends.base.PassageEntityStore` capability (a
:class:`~kgpath.backends.cypher.CypherBackend` over a graph written by
:func:`~kgpath.backends.cypher.load_graph` from a ``GraphIndex``: passages carry their
vector, order and citing entities), then runs the in-memory fusion on that part:

1. the exact top ``N = max(seeds, k) + 2`` passages by dense score (a paged scan of the
   stored passage vectors, as the in-memory base scores every passage);
2. the nodes whose entity key is one of the keys the entity linker looks up for the
   question (every n-gram span), and the passages they cite (when cited by at most
   ``max_entity_passages`` passages);
3. every entity of those candidate passages (and, for ``expansion="neighbours"``, their
   graph neighbours), each entity's passage count over the whole store, every passage of
   the entities cited at most ``max_entity_passages`` times, and those passages' entities
   (for their lead entity).

Why this equals the in-memory result: the seeds are the top ``seeds`` passages by
``s'(d)``, and every passage whose ``s'`` exceeds its dense score is a named entity's
passage, so the seeds are in step 1 or 2; every link of a seed goes through an entity of
step 3 to a passage fetched there; the lead entity of every fetched passage is among its
fetched entities; passage counts are the store's, not the fetched part's. A passage left
out is unlinked and unnamed, so its chain score is ``s(d) + s'(a₁)`` (``a₁`` the best
seed), and at least ``k`` fetched passages of step 1 score as high and come first on ties:
the top ``k`` are all fetched. Node and passage order (ties) are the store's order values,
kept by sorting the fetched part.

Not pushed down: ``base=`` retrievers and custom linkers (use the in-memory retriever).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kgpath._config import with_overrides
from kgpath.backends.base import (
    EntityRecord,
    GraphBackend,
    NeighbourhoodPushDown,
    PassageEntityStore,
    PassageRecord,
)
from kgpath.backends.cypher import CypherBackend, CypherSchema
from kgpath.backends.cypher.vectors import VectorFiles
from kgpath.embeddings import Embedder
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import check_query
from kgpath.index.graph_vectors import GraphVectors
from kgpath.index.linking import EntityLinker
from kgpath.methods.augmented.config import AugmentedConfig
from kgpath.methods.augmented.fusion import PassageEntityIndex
from kgpath.methods.augmented.result import AugmentedResult
from kgpath.methods.augmented.retriever import GraphAugmentedRetriever

__all__ = ["CypherAugmented"]


class _SpanKeys:
    """A name lookup that records every key the entity linker asks for and finds nothing."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def candidates(self, key: str, span: str) -> list[Any]:
        self.keys.append(key)
        return []

    def node(self, k: Any) -> Any:  # pragma: no cover - never called: nothing is found
        raise KeyError(k)


def query_keys(query: str) -> list[str]:
    """Every entity key the default :class:`EntityLinker` may look up for ``query``.

    Examples
    --------
    >>> sorted(query_keys("Did Marie Curie visit Paris?"))[:3]
    ['curie', 'curie visit', 'curie visit paris']
    """
    rec = _SpanKeys()
    EntityLinker(None, names=rec).match(query)
    return list(dict.fromkeys(rec.keys))


class _StoreCounts(PassageEntityIndex):
    """The passage-entity index of the fetched part, with the store's passage counts."""

    def __init__(self, graph: KnowledgeGraph, passage_ids: Sequence[str],
                 counts: Mapping[int, int]) -> None:
        super().__init__(graph, passage_ids)
        self._counts = counts

    def df(self, entity: int) -> int:
        """Passages citing ``entity`` in the whole store (fetched part's count otherwise)."""
        return self._counts.get(entity, super().df(entity))


class _Part(GraphAugmentedRetriever):
    """The in-memory retriever over the fetched part (store-wide passage counts)."""

    def __init__(self, graph: KnowledgeGraph, counts: Mapping[str, int], vectors: GraphVectors,
                 embedder: Any, config: AugmentedConfig) -> None:
        super().__init__(graph, embedder=embedder, config=config, vectors=vectors)
        self._counts = {graph.index_of(e): c for e, c in counts.items() if e in graph}

    def _entity_index(self) -> PassageEntityIndex:
        ids = tuple(self.graph.passages)
        if self._index is None or self._index.version != self.graph.version:
            self._index = _StoreCounts(self.graph, ids, self._counts)
        return self._index


class _Fixed:
    """An embedder answering one known query vector (the question is embedded once)."""

    def __init__(self, vec: np.ndarray) -> None:
        self.vec = vec

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.vec[None, :]


class CypherAugmented:
    """Graph-augmented passage retrieval over a database (see the module docstring).

    Parameters
    ----------
    store
        A driver (anything :func:`~kgpath.backends.cypher.as_cypher_driver` accepts) or a
        backend with the :class:`~kgpath.backends.base.PassageEntityStore` capability.
    embedder
        Embeds the question; must be the model the stored passage vectors were made with.
    schema
        Where fields live (for a driver).
    config
        :class:`AugmentedConfig` (per-call overrides in :meth:`retrieve`).
    vectors
        For a driver: passage (and node) vector files beside the database
        (:class:`~kgpath.backends.cypher.vectors.VectorFiles` or their directory, written by
        ``load_graph(..., vector_dir=...)`` or kept by ``DatabaseIndex(...,
        vector_dir=...)``). Step 1's dense top ``N`` is then an exact chunked scan of the
        passage file instead of a paged scan of the stored passage vectors, and passages
        stored without a vector are read from it. Same result. (A backend passed as
        ``store`` brings its own.)

    Examples
    --------
    >>> from kgpath import GraphIndex, HashingEmbedder
    >>> from kgpath.backends.cypher import EmbeddedCypherDriver, load_graph
    >>> from kgpath.data import load_demo_graph
    >>> import tempfile, os
    >>> drv = EmbeddedCypherDriver.open(os.path.join(tempfile.mkdtemp(), "db"))
    >>> index = GraphIndex(load_demo_graph(), HashingEmbedder())
    >>> schema = load_graph(drv, index)
    >>> db = CypherAugmented(drv, embedder=index.embedder, schema=schema)
    >>> mem = GraphAugmentedRetriever(index)
    >>> q = "Who discovered radium?"
    >>> db.retrieve(q).passage_ids == mem.retrieve(q).passage_ids
    True
    >>> drv.close()
    """

    def __init__(self, store: Any, *, embedder: Embedder | None = None,
                 schema: CypherSchema | None = None,
                 config: AugmentedConfig | None = None,
                 vectors: VectorFiles | str | os.PathLike[str] | None = None) -> None:
        if not isinstance(store, GraphBackend):
            store = CypherBackend(store, embedder=embedder, schema=schema, vectors=vectors)
        elif vectors is not None:
            from kgpath.errors import ConfigError

            raise ConfigError("vectors= is for a driver; a backend passed as store brings its "
                              f"own (got {type(store).__name__} and vectors={vectors!r})")
        self.backend: PassageEntityStore = store.capability(PassageEntityStore)
        self._graph_backend = store
        self.embedder = embedder if embedder is not None else getattr(store, "embedder", None)
        self.config = config or AugmentedConfig()

    def retrieve(self, query: str, **overrides: Any) -> AugmentedResult:
        """Ranked passages for ``query`` (equal to :class:`GraphAugmentedRetriever`'s)."""
        q = check_query(query)
        cfg = with_overrides(self.config, overrides, label="augmented")
        if self.embedder is None:
            from kgpath.errors import ConfigError

            raise ConfigError("CypherAugmented needs the embedder of the stored passage vectors")
        qv = np.asarray(self.embedder.embed_queries([q])[0], np.float32)
        passages, entities, edges, counts = self._gather(q, qv, cfg)
        graph, vectors = _part_graph(passages, entities, edges)
        if not graph.passages:
            return AugmentedResult(q, (), (), (), cfg, graph=graph)
        return _Part(graph, counts, vectors, _Fixed(qv), cfg).retrieve(q)

    async def aretrieve(self, query: str, **overrides: Any) -> AugmentedResult:
        """Async :meth:`retrieve` (the blocking queries run in a worker thread)."""
        return await asyncio.to_thread(self.retrieve, query, **overrides)

    def _counts(self, entities: Mapping[str, EntityRecord]) -> dict[str, int]:
        """Store-wide number of passages citing each entity."""
        prov = {p for r in entities.values() for p in r.node.provenance}
        held = self.backend.passages_held(sorted(prov)) if prov else set()
        return {e: len(set(r.node.provenance) & held) for e, r in entities.items()}

    def _gather(self, q: str, qv: np.ndarray, cfg: AugmentedConfig) -> tuple[
            dict[str, PassageRecord], dict[str, EntityRecord], list[tuple[str, str, bool]],
            dict[str, int]]:
        """Steps 1-3 of the module docstring."""
        b, cap = self.backend, cfg.max_entity_passages
        top = [pid for pid, _ in b.passage_top(qv, max(cfg.seeds, cfg.k) + 2)]
        ents: dict[str, EntityRecord] = (
            dict(b.entities_by_key(query_keys(q))) if cfg.use_query_entities else {})
        counts = self._counts(ents)
        wanted = set(top) | {p for e, r in ents.items() if counts[e] <= cap
                             for p in r.node.provenance}
        passages = b.passage_records(sorted(wanted))
        first = {e for r in passages.values() for e in r.entities} | set(ents)
        ents.update(b.entity_records(sorted(first - ents.keys())))
        edges: list[tuple[str, str, bool]] = []
        expanded = first & ents.keys()
        if cfg.expansion == "neighbours":
            push = self._graph_backend.capability(NeighbourhoodPushDown)
            edges = push.adjacent_pairs(sorted(expanded), batch_size=5000)
            nbs = {y for _, y, _ in edges}
            ents.update(b.entity_records(sorted(nbs - ents.keys())))
            expanded |= nbs & ents.keys()
        counts.update(self._counts({e: ents[e] for e in expanded if e not in counts}))
        more = {p for e in expanded if counts[e] <= cap for p in ents[e].node.provenance}
        passages.update(b.passage_records(sorted(more - passages.keys())))
        leads = {e for r in passages.values() for e in r.entities}
        ents.update(b.entity_records(sorted(leads - ents.keys())))
        return passages, ents, edges, counts

    def __repr__(self) -> str:
        return f"CypherAugmented({self._graph_backend!r}, k={self.config.k})"


def _part_graph(passages: Mapping[str, PassageRecord], entities: Mapping[str, EntityRecord],
                edges: Sequence[tuple[str, str, bool]]) -> tuple[KnowledgeGraph, GraphVectors]:
    """The fetched part as a graph in store order, with the stored passage vectors."""
    g = KnowledgeGraph()
    ordered = sorted(passages.values(), key=lambda r: r.order)  # type: ignore[arg-type,return-value]
    for r in ordered:
        g.add_passage(r.passage.id, r.passage.text, r.passage.metadata)
    for e in sorted(entities.values(), key=lambda r: r.order):  # type: ignore[arg-type,return-value]
        n = e.node
        g.add_node(n.id, n.name, n.text, type=n.type, metadata=n.metadata,
                   provenance=n.provenance)
    for a, nb, forward in edges:
        if a in g and nb in g:
            g.add_edge(*((a, nb) if forward else (nb, a)))
    vecs = [r.vector for r in ordered]
    dim = next((v.shape[0] for v in vecs if v is not None), 0)
    mat = np.asarray([v if v is not None else np.zeros(dim, np.float32) for v in vecs],
                     dtype=np.float32).reshape(len(ordered), dim)
    return g, GraphVectors(tuple(g.passages), mat, np.zeros((0, dim), np.float32))
