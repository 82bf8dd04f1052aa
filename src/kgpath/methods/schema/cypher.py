"""Schema-guided retrieval over a graph database: :class:`CypherSchemaRetriever`.

:class:`StoreAccess` answers the questions of the typed-retrieval seam
(:class:`~kgpath.methods.schema.typed.TypedAccess`) with queries on a
:class:`~kgpath.backends.cypher.CypherBackend` over a graph written by
:func:`~kgpath.backends.cypher.load_graph`; the shared code of
:mod:`~kgpath.methods.schema.typed` filters, ranks and merges. Per sub-question it fetches:

* **typed candidates** (filter mode): nodes whose ``type`` is one of the store's spellings
  of the involved entity types (``WHERE n.type IN $labels``; spellings from one
  ``DISTINCT`` query per retrieval, resolved through the schema), or, with relation types
  only, the ends of the edges of those types (the same on ``type``/``relation``). A
  ``metadata["schema_type"]`` overrides the type inside JSON text, so rows whose metadata
  *may* override (a ``"schema_type"`` key other than one equal to the own type, null or
  empty) come too: a superset, then every row is checked by the in-memory rules
  (:func:`~kgpath.methods.schema.typed.node_schema_type`, layer nodes, attributes, the
  relation indicator from the rows' incident edges, or, when the rows are over a tenth of
  the graph, from one scan of the involved relations' edges: HotpotQA-100, filter mode,
  p50 2.7 s -> 1.2 s, 0.8 s with a vector file). Attribute-only constraints are not
  pushed down (keys inside the JSON): the nodes are paged through and checked.
* **boost / off / filter fallback**: every base node is scored, as in memory, on keyset
  pages in node order, each page keeping its top ``k`` (ties by node order). **With a node
  vector file** (``CypherBackend(..., vectors=)``, :mod:`kgpath.backends.cypher.vectors`)
  and no attribute type: the file's exact top ``k`` by base score (ties by row = node
  order; layer nodes excluded) plus ``C+``, the nodes whose ``t(v)`` may be above 0 (typed
  rows and involved relations' ends, fetched as the filter fetches them), in one block:
  every node left out has ``k`` nodes ahead of it (:meth:`StoreAccess._file_block`), so
  the top ``k`` of ``base + β·t(v)`` is exact (no node page crosses the wire).
  Attribute types live in the JSON metadata: those still page through the nodes.
  Measured (``benchmarks/bench_graphdb.py --scale``, boost mode, an untyped generated
  graph): 10^5 nodes p50 17 / p95 40 ms (paged instead: 6.4 s, that database holding no
  vectors); 10^6 nodes / 10^7 edges p50 76 / p95 142 ms, peak RSS 78 MB (the first typed
  question also reads the graph-wide facts: 1.3 s once).
* **routed communities** (a hierarchy on a large graph): the members, by id.
* the **vectors** of those nodes (the stored ones, the same float32 dot product), the
  **edges at the hits** with their other ends, and the **cited passages**, by id.

Graph-wide inputs: the schema and the hierarchy are the caller's, as in memory; the
LLM-free decomposition matches node names, so it reads the store's node names and types
once per retriever, and so are the graph-wide facts a sub-question needs (the store's type
spellings, its base-node count, the nodes whose metadata may override their type: a scan
each); :meth:`CypherSchemaRetriever.refresh` reads them again. Equal to the
in-memory retriever on the graph the database was loaded from (``load_graph``'s node and
edge order break ties) for ``mode="vector"`` and a float32 vector index. BM25 and hybrid
scores need corpus statistics the database does not keep (:class:`ConfigError`).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from kgpath.backends.base import GraphBackend
from kgpath.backends.cypher import CypherBackend, CypherSchema
from kgpath.backends.cypher.vectors import VectorFiles
from kgpath.embeddings import Embedder
from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.ingest.hierarchy import Hierarchy
from kgpath.ingest.schema import Schema
from kgpath.llm import LLM
from kgpath.methods.schema.config import SchemaRetrieverConfig
from kgpath.methods.schema.decompose import DecompositionPlan, SchemaDecomposer, SubQuestion
from kgpath.methods.schema.result import SchemaResult, SubQuestionResult, part_graph
from kgpath.methods.schema.retriever import SchemaSteps, finish_result
from kgpath.methods.schema.store_access import (
    MemberRouter,
    NameCatalog,
    StoreAccess,
    StoreFacts,
)
from kgpath.methods.schema.typed import (
    TypedAccess,
    retrieve_typed,
)

__all__ = ["CypherSchemaRetriever", "StoreAccess"]


class CypherSchemaRetriever(SchemaSteps):
    """Schema-guided retrieval on a graph database (see the module docstring).

    Same configuration, plan, :class:`~kgpath.methods.schema.SchemaResult` and evidence as
    :class:`~kgpath.methods.schema.SchemaGuidedRetriever` on the graph the database was
    loaded from; only what each sub-question reaches is fetched.

    Parameters
    ----------
    store
        A :class:`~kgpath.backends.cypher.CypherBackend`, or a driver (anything
        :func:`~kgpath.backends.cypher.as_cypher_driver` accepts).
    schema
        The schema (keyword-only), as in memory.
    embedder
        Embeds questions (for a driver); the model of the stored node vectors.
    llm, config, decomposer, hierarchy
        As :class:`~kgpath.methods.schema.SchemaGuidedRetriever`. Without ``decomposer``,
        the LLM-free decomposition (and the fallback of an LLM one) matches the store's
        node names, read once (:meth:`refresh`).
    cypher_schema
        Where fields live (for a driver; default: what ``load_graph`` writes).
    vectors
        For a driver: the vector directory of ``CypherBackend(..., vectors=)`` (a backend
        brings its own). Candidates are then scored from the node vector file, and a scan
        of every node (boost / off / the filter's fallback) reads the file instead of
        paging the nodes (see the module docstring).

    Raises
    ------
    ConfigError
        For a store that is not a Cypher backend, or (when retrieving) ``mode`` other
        than ``"vector"``.

    Examples
    --------
    >>> import os, tempfile
    >>> from kgpath import GraphIndex, HashingEmbedder
    >>> from kgpath.backends.cypher import EmbeddedCypherDriver, load_graph
    >>> from kgpath.data import load_demo_graph
    >>> from kgpath.methods.schema import SchemaGuidedRetriever
    >>> from kgpath.methods.schema.spec import schema_from_graph
    >>> drv = EmbeddedCypherDriver.open(os.path.join(tempfile.mkdtemp(), "db"))
    >>> index = GraphIndex(load_demo_graph(), HashingEmbedder())
    >>> _ = load_graph(drv, index)
    >>> s = schema_from_graph(index.graph)
    >>> db = CypherSchemaRetriever(drv, schema=s, embedder=index.embedder)
    >>> q = "Which place was Marie Curie born in?"
    >>> db.retrieve(q).ids == SchemaGuidedRetriever(index, schema=s).retrieve(q).ids
    True
    >>> drv.close()
    """

    def __init__(
        self,
        store: Any,
        *,
        schema: Schema,
        embedder: Embedder | None = None,
        llm: LLM | None = None,
        config: SchemaRetrieverConfig | None = None,
        decomposer: SchemaDecomposer | None = None,
        hierarchy: Hierarchy | None = None,
        cypher_schema: CypherSchema | None = None,
        vectors: VectorFiles | str | os.PathLike[str] | None = None,
    ) -> None:
        if not isinstance(schema, Schema):
            raise ConfigError(f"schema must be a kgpath Schema, got {type(schema).__name__}")
        if not isinstance(store, GraphBackend):
            store = CypherBackend(store, embedder=embedder, schema=cypher_schema,
                                  vectors=vectors)
        if not isinstance(store, CypherBackend):
            raise ConfigError(
                f"CypherSchemaRetriever needs a CypherBackend, got {type(store).__name__}; "
                "use SchemaGuidedRetriever for a graph in memory")
        self.backend = store
        self.schema = schema
        self.config = config or SchemaRetrieverConfig()
        self.catalog = NameCatalog(store)
        self.facts = StoreFacts()
        self.decomposer = decomposer or SchemaDecomposer(
            schema, llm, graph=self.catalog,  # type: ignore[arg-type]  # reads .nodes only
            max_sub_questions=self.config.max_sub_questions)
        self.hierarchy = hierarchy
        self._router: MemberRouter | None = None
        self._lock = threading.Lock()

    def refresh(self) -> None:
        """Read the store's node names and graph-wide facts again (after the database changed).

        The facts: type spellings, base-node count, nodes whose metadata may override.
        """
        self.catalog.clear()
        self.facts.clear()
        if self.decomposer.graph is self.catalog:
            self.decomposer._detector = None

    def _config(self, overrides: Mapping[str, Any]) -> SchemaRetrieverConfig:
        cfg = super()._config(overrides)
        if cfg.mode != "vector":
            raise ConfigError(
                f"the database scores mode='vector' only (BM25 needs corpus statistics the "
                f"database does not keep), got mode={cfg.mode!r}")
        return cfg

    def _access(self, cfg: SchemaRetrieverConfig) -> StoreAccess:
        """One retrieval's access; routes through the hierarchy on a large enough graph."""
        access = StoreAccess(self.backend.bind(), self.schema, facts=self.facts)
        if self.hierarchy is not None and access.base_count() >= cfg.route_min_nodes:
            with self._lock:
                if self._router is None:
                    self._router = MemberRouter(self.hierarchy, self.backend.embedder)
            access.router = self._router
        return access

    async def _aaccess(self, cfg: SchemaRetrieverConfig) -> StoreAccess:
        return await asyncio.to_thread(self._access, cfg)

    def _embed(self, text: str) -> np.ndarray:
        return self.backend.embed_query(text)

    async def _aembed(self, text: str) -> np.ndarray:
        return await self.backend.aembed_query(text)

    async def _arun(self, access: TypedAccess, i: int, sq: SubQuestion, qv: np.ndarray,
                    cfg: SchemaRetrieverConfig) -> SubQuestionResult:
        return await asyncio.to_thread(retrieve_typed, access, i, sq, qv, cfg)

    def _result(self, q: str, plan: DecompositionPlan,
                runs: list[tuple[SubQuestionResult, float, float]], cfg: SchemaRetrieverConfig,
                t0: float, t_plan: float, how: str, access: TypedAccess) -> SchemaResult:
        """The in-memory merge, with the retrieved part as the result's graph."""
        store = cast(StoreAccess, access)  # what _access built
        graph = _evidence_graph(store, [r for r, _, _ in runs])
        res = finish_result(q, plan, runs, cfg, t0, t_plan, how, graph)
        res.trace.update(store.b.call_trace())
        return res

    async def _aresult(self, q: str, plan: DecompositionPlan,
                       runs: list[tuple[SubQuestionResult, float, float]],
                       cfg: SchemaRetrieverConfig, t0: float, t_plan: float, how: str,
                       access: TypedAccess) -> SchemaResult:
        return await asyncio.to_thread(self._result, q, plan, runs, cfg, t0, t_plan, how,
                                       access)


def _evidence_graph(access: StoreAccess, runs: Sequence[SubQuestionResult]) -> KnowledgeGraph:
    """The retrieved part: :func:`~kgpath.methods.schema.result.part_graph` from the store."""
    cited = list(dict.fromkeys(p for r in runs for it in (*r.nodes, *r.triples)
                               for p in it.provenance))
    return part_graph(runs, lambda i: access.rows[i].node,
                      access.passages(cited) if cited else {})
