"""The schema-guided retriever: decompose, retrieve sub-questions concurrently by type, merge.

Reference: N. Balic, "Schema-Guided Graph Retrieval for Multi-Hop Reasoning", Awesome
Agentic Patterns, 2026 (shared/papers/schema-guided-graph-retrieval-pattern.txt), solution
steps 4-6 and its pseudo-code::

    plan = decompose_question(question, schema=schema)        # decompose.py
    evidence = parallel_map(plan.sub_questions, sub_q =>      # kgpath._parallel
        retrieve(graph, query=sub_q, type_filter=plan.involved_types))   # typed.py
    answer = reason_over(merge(evidence))                     # merge.py
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from kgpath._config import with_overrides
from kgpath._parallel import aparallel_map, parallel_map
from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex, check_query
from kgpath.ingest.hierarchy import CommunityRouter, Hierarchy
from kgpath.ingest.schema import Schema
from kgpath.llm import LLM
from kgpath.methods.schema.config import SchemaRetrieverConfig
from kgpath.methods.schema.decompose import DecompositionPlan, SchemaDecomposer, SubQuestion
from kgpath.methods.schema.merge import merge_evidence
from kgpath.methods.schema.result import SchemaResult, SubQuestionResult
from kgpath.methods.schema.typed import MemoryAccess, TypedAccess, _TypeTable, retrieve_typed

__all__ = ["SchemaGuidedRetriever", "SchemaSteps", "finish_result"]


class SchemaSteps:
    """Decompose, retrieve sub-questions concurrently, merge: what every store shares.

    Subclasses hold ``config`` and ``decomposer`` and say where the graph lives: the
    typed-retrieval access of one retrieval (:meth:`_access`), query embeddings, and the
    graph of the result (:meth:`_result`). The async hooks default to the sync ones run
    inline (in memory nothing blocks); a store overrides them to use worker threads.
    """

    config: SchemaRetrieverConfig
    decomposer: SchemaDecomposer

    def _config(self, overrides: Mapping[str, Any]) -> SchemaRetrieverConfig:
        return with_overrides(self.config, overrides, label="schema-retriever")

    def _access(self, cfg: SchemaRetrieverConfig) -> TypedAccess:
        raise NotImplementedError

    async def _aaccess(self, cfg: SchemaRetrieverConfig) -> TypedAccess:
        return self._access(cfg)

    def _embed(self, text: str) -> np.ndarray:
        raise NotImplementedError

    async def _aembed(self, text: str) -> np.ndarray:
        raise NotImplementedError

    async def _arun(self, access: TypedAccess, i: int, sq: SubQuestion, qv: np.ndarray,
                    cfg: SchemaRetrieverConfig) -> SubQuestionResult:
        return retrieve_typed(access, i, sq, qv, cfg)

    def _result(self, q: str, plan: DecompositionPlan,
                runs: list[tuple[SubQuestionResult, float, float]], cfg: SchemaRetrieverConfig,
                t0: float, t_plan: float, how: str, access: TypedAccess) -> SchemaResult:
        return finish_result(q, plan, runs, cfg, t0, t_plan, how, getattr(self, "graph", None))

    async def _aresult(self, q: str, plan: DecompositionPlan,
                       runs: list[tuple[SubQuestionResult, float, float]],
                       cfg: SchemaRetrieverConfig, t0: float, t_plan: float, how: str,
                       access: TypedAccess) -> SchemaResult:
        return self._result(q, plan, runs, cfg, t0, t_plan, how, access)

    def decompose(self, question: str, **overrides: Any) -> DecompositionPlan:
        """Return the plan :meth:`retrieve` would use."""
        cfg = self._config(overrides)
        return self.decomposer.decompose(question, max_sub_questions=cfg.max_sub_questions)

    async def adecompose(self, question: str, **overrides: Any) -> DecompositionPlan:
        """Async :meth:`decompose`."""
        cfg = self._config(overrides)
        return await self.decomposer.adecompose(question, max_sub_questions=cfg.max_sub_questions)

    def retrieve(
        self, query: str, *, plan: DecompositionPlan | None = None, **overrides: Any
    ) -> SchemaResult:
        """Decompose (unless ``plan`` is given), retrieve sub-questions on a thread pool, merge.

        ``overrides`` are :class:`SchemaRetrieverConfig` fields for this call (e.g. ``k=3``).
        """
        q = check_query(query)
        cfg = self._config(overrides)
        t0 = time.perf_counter()
        plan = plan or self.decomposer.decompose(q, max_sub_questions=cfg.max_sub_questions)
        t_plan = time.perf_counter()
        access = self._access(cfg)

        def one(job: tuple[int, SubQuestion]) -> SubQuestionResult:
            i, sq = job
            return retrieve_typed(access, i, sq, self._embed(sq.text), cfg)

        runs = parallel_map(one, list(enumerate(plan.sub_questions)),
                            max_workers=cfg.max_concurrency)
        return self._result(q, plan, runs, cfg, t0, t_plan, "threads", access)

    async def aretrieve(
        self, query: str, *, plan: DecompositionPlan | None = None, **overrides: Any
    ) -> SchemaResult:
        """Async :meth:`retrieve`.

        Decomposition and query embeddings are awaited natively; sub-questions are gathered
        with a concurrency bound.
        """
        q = check_query(query)
        cfg = self._config(overrides)
        t0 = time.perf_counter()
        plan = plan or await self.decomposer.adecompose(q, max_sub_questions=cfg.max_sub_questions)
        t_plan = time.perf_counter()
        access = await self._aaccess(cfg)

        async def one(job: tuple[int, SubQuestion]) -> SubQuestionResult:
            i, sq = job
            return await self._arun(access, i, sq, await self._aembed(sq.text), cfg)

        runs = await aparallel_map(one, list(enumerate(plan.sub_questions)),
                                   limit=cfg.max_concurrency)
        return await self._aresult(q, plan, runs, cfg, t0, t_plan, "asyncio", access)


class SchemaGuidedRetriever(SchemaSteps):
    """Decompose with the schema, retrieve sub-questions concurrently by type, merge.

    Parameters
    ----------
    graph
        A :class:`KnowledgeGraph` (wrapped with ``embedder``) or a :class:`GraphIndex`.
    schema
        The schema (the same one used to build the graph); keyword-only.
    embedder
        Used only when ``graph`` is a bare graph.
    llm
        LLM for decomposition; ``None`` uses the LLM-free heuristic.
    config
        :class:`SchemaRetrieverConfig`; per-call overrides are keyword arguments of
        :meth:`retrieve`, applied with ``dataclasses.replace``.
    decomposer
        A custom :class:`SchemaDecomposer` (default: one built from ``schema``/``llm``).
    hierarchy
        Optional :class:`~kgpath.ingest.hierarchy.Hierarchy` for community routing on large
        graphs (see ``route_min_nodes``).

    Examples
    --------
    >>> from kgpath import HashingEmbedder
    >>> from kgpath.ingest.schema import Schema
    >>> from kgpath.data import load_demo_graph
    >>> g = load_demo_graph()
    >>> s = Schema(entities=sorted({n.type for n in g.nodes}))
    >>> r = SchemaGuidedRetriever(g, schema=s, embedder=HashingEmbedder())
    >>> res = r.retrieve("Which place was Marie Curie born in?", k=3)
    >>> {g.node(i).type for i in res.ids} <= {"Place", "Person"}
    True
    """

    def __init__(
        self,
        graph: KnowledgeGraph | GraphIndex,
        *,
        schema: Schema,
        embedder: Any = None,
        llm: LLM | None = None,
        config: SchemaRetrieverConfig | None = None,
        decomposer: SchemaDecomposer | None = None,
        hierarchy: Hierarchy | None = None,
    ) -> None:
        if not isinstance(schema, Schema):
            raise ConfigError(f"schema must be a kgpath Schema, got {type(schema).__name__}")
        self.index = graph if isinstance(graph, GraphIndex) else GraphIndex(graph, embedder)
        self.schema = schema
        self.config = config or SchemaRetrieverConfig()
        self.decomposer = decomposer or SchemaDecomposer(
            schema, llm, graph=self.index.graph, max_sub_questions=self.config.max_sub_questions
        )
        self.hierarchy = hierarchy
        self._table: _TypeTable | None = None
        self._router: CommunityRouter | None = None
        self._router_version = -1
        self._lock = threading.Lock()

    @property
    def graph(self) -> KnowledgeGraph:
        """The underlying graph."""
        return self.index.graph

    # ------------------------------------------------------------------ preparation
    def _prepare(self, cfg: SchemaRetrieverConfig) -> tuple[_TypeTable, CommunityRouter | None]:
        """Build shared structures once, before threads fan out (they are then read-only)."""
        with self._lock:
            self.index.build()
            if cfg.mode != "vector":
                _ = self.index.bm25
            g = self.graph
            if self._table is None or self._table.version != g.version:
                self._table = _TypeTable(g, self.schema)
            router = None
            if self.hierarchy is not None:
                n_base = int((~self._table.layer).sum())
                if n_base >= cfg.route_min_nodes:
                    if self._router is None or self._router_version != g.version:
                        self._router = CommunityRouter(self.hierarchy, g, self.index.embedder)
                        self._router_version = g.version
                    router = self._router
            return self._table, router

    # ------------------------------------------------------------------ steps' hooks
    def _access(self, cfg: SchemaRetrieverConfig) -> MemoryAccess:
        table, router = self._prepare(cfg)
        return MemoryAccess(self.index, table, router)

    def _embed(self, text: str) -> np.ndarray:
        return self.index.embed_query(text)

    async def _aembed(self, text: str) -> np.ndarray:
        return await self.index.aembed_query(text)


def finish_result(
    q: str,
    plan: DecompositionPlan,
    runs: list[tuple[SubQuestionResult, float, float]],
    cfg: SchemaRetrieverConfig,
    t0: float,
    t_plan: float,
    how: str,
    graph: KnowledgeGraph | None,
) -> SchemaResult:
    """Merge the sub-question runs (pattern: *merge(evidence)*) into one result.

    ``graph`` resolves names and passages in :meth:`SchemaResult.evidence` (the whole graph
    in memory; the retrieved part over a database).
    """
    subs = []
    for r, s, e in runs:
        tr = dict(r.trace)
        tr.update(started_s=round(s - t0, 6), ended_s=round(e - t0, 6))
        subs.append(dataclasses.replace(r, trace=tr))
    nodes, triples, passages = merge_evidence(subs)
    trace = _result_trace(plan, cfg, how, t0, t_plan)
    trace["evidence_before_merge"] = sum(
        len(r.nodes) + len(r.triples) + len(r.passages) for r in subs)
    trace["evidence_after_merge"] = len(nodes) + len(triples) + len(passages)
    trace["total_s"] = round(time.perf_counter() - t0, 6)
    return SchemaResult(
        question=q, plan=plan, sub_results=tuple(subs), nodes=nodes, triples=triples,
        passages=passages, config=cfg, trace=trace, graph=graph,
    )


def _result_trace(
    plan: DecompositionPlan, cfg: SchemaRetrieverConfig, how: str, t0: float, t_plan: float
) -> dict[str, Any]:
    """The plan, the settings that shaped the run, and the decomposition time."""
    return {
        "plan_source": plan.source,
        "sub_questions": [s.text for s in plan.sub_questions],
        "involved_types": plan.involved_types.to_dict(),
        "dropped_types": list(plan.dropped),
        "plan_notes": list(plan.notes),
        "type_mode": cfg.type_mode,
        "concurrency": how,
        "max_concurrency": cfg.max_concurrency,
        "decompose_s": round(t_plan - t0, 6),
    }
