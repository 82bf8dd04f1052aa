"""C2RAG retriever: planning (Eq. 1), then every constraint through Eq. 2-16.

:class:`ConstraintCheckedRetriever` plans, runs the ``P_1`` constraints anchored on a
constant (Eq. 2), then grounds the ``P_2`` constraints through bindings until none makes
progress (Eq. 15), and assembles one evidence block per constraint (Eq. 16). The steps are
generators yielding :class:`~kgpath.methods.c2rag.drive.Req`, served by a sync or an async
driver. The graph is read through a :class:`~kgpath.methods.c2rag.access.GraphAccess`
(in memory here; a database in :class:`~kgpath.methods.c2rag.cypher.CypherC2RAG`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgpath._config import with_overrides
from kgpath.embeddings import Embedder, as_embedder, default_embedder
from kgpath.errors import BackendError, ConfigError, ParseError, short
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex, check_query
from kgpath.llm import LLM, acall_llm, as_llm, call_llm
from kgpath.methods.c2rag.access import GraphAccess, MemoryAccess
from kgpath.methods.c2rag.alignment import Anchor, Candidate
from kgpath.methods.c2rag.bindings import (
    BindingState,
    Grounding,
    ground_constraint,
    per_entity_groundings,
)
from kgpath.methods.c2rag.blocks import build_block
from kgpath.methods.c2rag.config import C2RAGConfig
from kgpath.methods.c2rag.drive import COLD_OPS, Req, adrive, aserve_cold, drive, serve_cold
from kgpath.methods.c2rag.hops import HopTrace, merge_branches, rank_candidates, sufficiency_step
from kgpath.methods.c2rag.plan import PLAN_SCHEMA, Constraint, Plan, parse_plan
from kgpath.methods.c2rag.prefetch import plan_texts, prefetch_texts
from kgpath.methods.c2rag.recovery import TextualRecovery
from kgpath.methods.c2rag.result import C2RAGResult
from kgpath.methods.c2rag.scoring import MemoScorer
from kgpath.prompts.c2rag import PLANNER_PROMPT
from kgpath.rerank import EmbeddingReranker, Reranker

__all__ = ["ConstraintCheckedRetriever"]

log = logging.getLogger(__name__)
_PLAN_STEP = "C2RAG planning (Eq. 1)"

PlanInput = Plan | Mapping[str, Any] | Sequence[Any] | str | None


@dataclass
class _Run:
    """One retrieval: its graph view, hops (in order and by constraint) and bindings."""

    acc: GraphAccess
    order: list[HopTrace] = field(default_factory=list)
    by_constraint: dict[int, HopTrace] = field(default_factory=dict)
    bindings: BindingState = field(default_factory=BindingState)

    @property
    def next_step(self) -> int:
        return len(self.order) + 1

    def record(self, hop: HopTrace) -> None:
        self.order.append(hop)
        if hop.constraint_index is not None:
            self.by_constraint[hop.constraint_index] = hop
        self.bindings.record(hop)


@dataclass(frozen=True)
class _HopSpec:
    """What a hop solves: constraint ``ci`` of kind P1/P2, from ``anchors``, for ``var``."""

    ci: int
    constraint: Constraint
    kind: str
    anchors: tuple[Anchor, ...]
    var: str
    lin: str
    step: int
    no_anchor_reason: str = ""
    exclude: frozenset[int] = frozenset()
    """Edge indices left out of the Eq. 4 pool (see :meth:`_per_entity_hop`)."""


def _binding_edges(run: _Run, var: str) -> frozenset[int]:
    """Edge indices of ``C_top`` of every resolved hop that induced ``var`` (Eq. 13)."""
    return frozenset(
        c.edge_index
        for h in run.order
        for b in (h.branches or (h,))
        if b.state == "resolved" and b.variable == var
        for c in b.top
    )


class ConstraintCheckedRetriever:
    """C2RAG retrieval over a :class:`~kgpath.KnowledgeGraph` and its passages.

    Parameters
    ----------
    graph
        The graph (nodes, edges with ``provenance`` passage ids, passages), or a
        :class:`~kgpath.GraphIndex` (its graph and embedder are used).
    embedder
        For relation alignment (Eq. 5) and passage search (Eq. 11). Defaults to the
        ``GraphIndex``'s embedder, else the bundled offline :class:`~kgpath.LocalEmbedder`.
    llm
        Planner (:class:`~kgpath.llm.LLM`). ``None`` uses the LLM-free fallback plan, which
        is weaker (see :func:`~kgpath.methods.c2rag.plan.fallback_plan`).
    config
        :class:`C2RAGConfig`; per-call overrides are keyword arguments of :meth:`retrieve`.
    reranker
        The Eq. 6 / Eq. 12 scorer. Default :class:`~kgpath.EmbeddingReranker` over the
        embedder (offline bi-encoder, weaker than the paper's cross-encoder); pass a
        :class:`~kgpath.CrossEncoderReranker` or :class:`~kgpath.CallableReranker` to use
        your own model.
    planner_prompt
        ``str.format`` template with ``{query}``, ``{m}``, ``{schema}``.

    Examples
    --------
    >>> from kgpath import HashingEmbedder, KnowledgeGraph
    >>> g = KnowledgeGraph.from_triples(
    ...     [("Ada", "born in", "London"), ("London", "capital of", "England")],
    ...     passages={"p": "Ada was born in London."}, provenance=[["p"], ["p"]])
    >>> r = ConstraintCheckedRetriever(g, embedder=HashingEmbedder())
    >>> res = r.retrieve("Where was Ada born?", plan={"constraints": [
    ...     {"head": "Ada", "relation": "born in", "tail": "?place", "variants": []}]})
    >>> res.hops[0].state, res.binding_names["?place"]
    ('resolved', ('London',))
    """

    def __init__(
        self,
        graph: KnowledgeGraph | GraphIndex,
        *,
        embedder: Embedder | None = None,
        llm: LLM | None = None,
        config: C2RAGConfig | None = None,
        reranker: Reranker | None = None,
        planner_prompt: str = PLANNER_PROMPT,
    ) -> None:
        if isinstance(graph, GraphIndex):
            self.graph = graph.graph
            embedder = embedder if embedder is not None else graph.embedder
        elif isinstance(graph, KnowledgeGraph):
            self.graph = graph
        else:
            raise ConfigError(
                f"graph must be a KnowledgeGraph or GraphIndex, got {type(graph).__name__}"
            )
        self._setup(embedder, llm, config, reranker, planner_prompt)
        self._access: GraphAccess = MemoryAccess(self.graph, self.embedder)

    def _setup(
        self,
        embedder: Embedder | None,
        llm: LLM | None,
        config: C2RAGConfig | None,
        reranker: Reranker | None,
        planner_prompt: str,
    ) -> None:
        """Everything but the graph: embedder, planner, scorer, config (shared with stores)."""
        self.embedder: Embedder = (
            as_embedder(embedder) if embedder is not None else default_embedder()
        )
        self.llm = None if llm is None else as_llm(llm)  # ConfigError for llm="gpt"
        self.reranker: Reranker = (
            reranker if reranker is not None else EmbeddingReranker(self.embedder)
        )
        self._reranker_given = reranker is not None
        # the default reranker's scores from vectors embedded once per text (issue 14)
        self._memo_scorer = (
            MemoScorer(self.embedder)
            if not self._reranker_given and type(self.reranker) is EmbeddingReranker
            else None
        )
        self._default_reranker = self.reranker
        if not callable(getattr(self.reranker, "score", None)):
            raise ConfigError(
                f"reranker must implement score(query, texts), got {type(reranker).__name__}"
            )
        if config is not None and not isinstance(config, C2RAGConfig):
            raise ConfigError(f"config must be a C2RAGConfig, got {short(config)}")
        self.config = config or C2RAGConfig()
        self.planner_prompt = planner_prompt
        self._check_prompt(planner_prompt)

    @staticmethod
    def _check_prompt(template: str) -> None:
        try:
            template.format(query="q", m=3, schema="{}")
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(
                f"planner_prompt must be a str.format template using only {{query}}, {{m}}, "
                f"{{schema}} (literal braces doubled): {exc!r}"
            ) from exc

    # ------------------------------------------------------------------ public API
    def retrieve(
        self,
        query: str,
        *,
        plan: PlanInput = None,
        **overrides: Any,
    ) -> C2RAGResult:
        """Run C2RAG for ``query``.

        ``plan`` skips the planner (a :class:`Plan`, plan JSON text, or parsed JSON; it is
        validated like an LLM plan, and an unusable one raises :class:`~kgpath.ParseError`).
        ``overrides`` are :class:`C2RAGConfig` fields for this call only.
        """
        q = check_query(query)
        cfg = self._config(overrides)
        return drive(self._pipeline(q, plan, cfg, self._access.bind()), self._serve)

    async def aretrieve(
        self, query: str, *, plan: PlanInput = None, **overrides: Any
    ) -> C2RAGResult:
        """Async :meth:`retrieve` (LLM, embedder and reranker awaited natively)."""
        q = check_query(query)
        cfg = self._config(overrides)
        return await adrive(self._pipeline(q, plan, cfg, self._access.bind()), self._aserve)

    def plan(self, query: str, **overrides: Any) -> Plan:
        """Only the planning step (Eq. 1): the LLM plan, or the fallback plan."""
        q = check_query(query)
        acc = self._access.bind()
        return drive(self._plan(q, None, self._config(overrides), acc), self._serve)

    async def aplan(self, query: str, **overrides: Any) -> Plan:
        """Async :meth:`plan`."""
        q = check_query(query)
        acc = self._access.bind()
        return await adrive(self._plan(q, None, self._config(overrides), acc), self._aserve)

    def planner_input(self, query: str, **overrides: Any) -> str:
        """Return the exact prompt the planner LLM receives for ``query``."""
        cfg = self._config(overrides)
        return self.planner_prompt.format(
            query=check_query(query), m=cfg.m, schema=json.dumps(PLAN_SCHEMA)
        )

    def _config(self, overrides: Mapping[str, Any]) -> C2RAGConfig:
        cfg = with_overrides(self.config, overrides, label="C2RAG", none_is_value={"rerank"})
        return cfg.resolve(reranker_given=self._reranker_given)

    # ------------------------------------------------------------------ drivers
    def _memo(self) -> MemoScorer | None:
        """The memoising scorer while the default reranker and embedder are in place."""
        memo = self._memo_scorer
        if memo is None or self.reranker is not self._default_reranker:
            return None
        if memo.embedder is not self.embedder or getattr(self.reranker, "embedder", None) \
                is not self.embedder:
            return None
        return memo

    def _remembered(self, req: Req) -> np.ndarray | None:
        """Vectors of an ``embed_queries`` request already embedded by :meth:`_prefetch`."""
        memo = self._memo()
        if memo is None or req.op != "embed_queries" or not req.args[0]:
            return None
        vecs = [memo.query_vector(t) for t in req.args[0]]
        return None if any(v is None for v in vecs) else np.stack(vecs)  # type: ignore[arg-type]

    def _serve(self, req: Req) -> Any:
        if req.op == "store":
            fn, args = req.args
            return fn(*args)
        if (hit := self._remembered(req)) is not None:
            return hit
        if req.op in COLD_OPS:  # shared cold paths, query texts: once for concurrent calls
            return serve_cold(req, self.embedder)
        if req.op == "embed_passages":
            return self.embedder.embed_passages(*req.args)
        if req.op == "score":
            if (memo := self._memo()) is not None:
                query, texts = req.args
                return memo.score(query, texts, self._access.memo_passages())
            return self.reranker.score(*req.args)
        assert self.llm is not None
        return call_llm(self.llm, *req.args, step=_PLAN_STEP)

    async def _aserve(self, req: Req) -> Any:
        if req.op == "store":  # a blocking store query: in a worker thread
            fn, args = req.args
            return await asyncio.to_thread(fn, *args)
        if (hit := self._remembered(req)) is not None:
            return hit
        if req.op in COLD_OPS:
            return await aserve_cold(req, self.embedder)
        if req.op == "embed_passages":
            return await self.embedder.aembed_passages(*req.args)
        if req.op == "score":
            if (memo := self._memo()) is not None:
                query, texts = req.args
                return await memo.ascore(query, texts, self._access.memo_passages())
            ascore = getattr(self.reranker, "ascore", None)
            if ascore is None:
                return self.reranker.score(*req.args)
            return await ascore(*req.args)
        assert self.llm is not None
        return await acall_llm(self.llm, *req.args, step=_PLAN_STEP)

    # ------------------------------------------------------------------ planning
    def _plan(
        self, query: str, given: PlanInput, cfg: C2RAGConfig, acc: GraphAccess
    ) -> Generator[Req, Any, Plan]:
        """Eq. 1: the given plan (validated), the LLM plan, or the LLM-free fallback."""
        if given is not None:
            if isinstance(given, Plan) and given.source == "fallback":
                return given
            src = given.source if isinstance(given, Plan) else "user"
            return parse_plan(given, m=cfg.m, source=src)
        if self.llm is None:
            return (yield from acc.fallback_plan(query, "no LLM planner configured"))
        prompt = self.planner_prompt.format(
            query=query, m=cfg.m, schema=json.dumps(PLAN_SCHEMA)
        )
        reply: str | None = None
        try:
            reply = yield Req("complete", (prompt,))
        except Exception as exc:  # noqa: BLE001 - any backend failure is reported
            reason = f"LLM call failed: {exc}"  # a BackendError from call_llm, retried
            if cfg.on_invalid_plan == "error":
                raise exc if isinstance(exc, BackendError) else BackendError(reason) from exc
        else:
            try:
                return parse_plan(reply if isinstance(reply, str) else str(reply), m=cfg.m)
            except ParseError as exc:
                reason = str(exc)
                if cfg.on_invalid_plan == "error":
                    raise
        log.warning("C2RAG planner: %s; using the LLM-free fallback plan", reason)
        log.warning("C2RAG: LLM plan unusable (%s); LLM-free fallback plan used", reason)
        fb = yield from acc.fallback_plan(query, f"LLM plan unusable: {reason}")
        return dataclasses.replace(fb, raw=reply)

    # ------------------------------------------------------------------ pipeline
    def _pipeline(
        self, query: str, given: PlanInput, cfg: C2RAGConfig, acc: GraphAccess
    ) -> Generator[Req, Any, C2RAGResult]:
        plan = yield from self._plan(query, given, cfg, acc)
        cfg = cfg.for_plan(plan.source)
        run = _Run(acc)
        if not plan.constraints:
            rec = yield from self._recover(query, query, (), cfg, acc)
            run.order.append(
                HopTrace(
                    step=1, constraint_index=None, constraint=None, kind="query",
                    linearized=query, variable=None, gamma=cfg.gamma_value,
                    reason="empty plan: textual recovery over the query", recovery=rec,
                )
            )
        if plan.constraints:  # an empty plan embeds no relation (Eq. 5 never runs)
            yield from acc.prepare(plan)
            if cfg.relation_vectors == "graph":
                yield from acc.graph_relations()
            yield from self._prefetch_plan(query, plan, cfg, acc)
        yield from self._run_p1(query, plan, cfg, run)
        pending = yield from self._run_p2(query, plan, cfg, run)
        yield from self._run_ungrounded(query, plan, cfg, run, pending)
        return (yield from self._assemble(query, plan, cfg, run))

    def _run_p1(
        self, query: str, plan: Plan, cfg: C2RAGConfig, run: _Run
    ) -> Generator[Req, Any, None]:
        """``P_1`` (Eq. 2): single-placeholder constraints, anchored on the constant end."""
        for i in plan.p1:
            c = plan.constraints[i]
            surface = c.tail if c.head_is_var else c.head
            anchors = yield from run.acc.anchors(surface, cfg.top_e)
            spec = _HopSpec(
                i, c, "P1", tuple(anchors), c.placeholders[0],
                c.linearize(types=plan.placeholders), run.next_step,
                f"no graph node matches {surface!r}",
            )
            run.record((yield from self._hop(query, spec, cfg, run.acc)))

    def _run_p2(
        self, query: str, plan: Plan, cfg: C2RAGConfig, run: _Run
    ) -> Generator[Req, Any, list[int]]:
        """``P_2`` (Eq. 15): ground constraints through bindings until none makes progress.

        Returns the constraints never grounded.
        """
        pending = list(plan.p2)
        progress = True
        while pending and progress:
            progress = False
            for i in list(pending):
                c = plan.constraints[i]
                bound = run.bindings.current()
                names = yield from run.acc.names(
                    [n for v in (c.head, c.tail) for n in bound.get(v, ())])
                g = ground_constraint(c, plan, bound, names)
                if g is None:
                    continue
                pending.remove(i)
                progress = True
                spec = _HopSpec(i, c, "P2", g.anchors, g.variable, g.linearized,
                                run.next_step)
                if cfg.propagation == "per_entity" and len(g.anchors) > 1:
                    parts = per_entity_groundings(g, c, plan, cfg.k_s)
                    spec = dataclasses.replace(spec, exclude=_binding_edges(run, g.bound))
                    run.record((yield from self._per_entity_hop(query, spec, parts, cfg,
                                                                run.acc)))
                else:
                    run.record((yield from self._hop(query, spec, cfg, run.acc)))
        return pending

    def _per_entity_hop(
        self, query: str, spec: _HopSpec, parts: Sequence[Grounding], cfg: C2RAGConfig,
        acc: GraphAccess,
    ) -> Generator[Req, Any, HopTrace]:
        """Run Eq. 15: one hop per bound entity, merged.

        The hops come from :func:`per_entity_groundings` and are merged by
        :func:`~kgpath.methods.c2rag.hops.merge_branches`; textual recovery (Eq. 11-12)
        runs once, for the whole constraint, when no branch resolves.

        ``spec.exclude`` holds the edges that bound the placeholder (the ``C_top`` of the
        hops that induced it), a kgpath deviation: anchored on a weak bound entity alone,
        the pool is often just the edge back to the previous anchor (e.g. "On the Origin
        of Species published by John Murray" for ``?author buried in ?place``), a pool of
        one that Eq. 7-9 resolve with ``N_eff = 1`` whatever its score (the authors'
        ``neff_from_logits`` does the same). On the demo KG this made 4 of the tuning
        half's 16 hops resolved-and-wrong at γ = 2 (``benchmarks/bench_c2rag_gamma.py``).
        An edge that grounded one constraint is evidence for it, not a candidate for
        the next.
        """
        branches = []
        for g in parts:
            sub = dataclasses.replace(spec, anchors=g.anchors, lin=g.linearized)
            branches.append((yield from self._hop(query, sub, cfg, acc, recover=False)))
        base = HopTrace(
            step=spec.step, constraint_index=spec.ci, constraint=spec.constraint,
            kind=spec.kind, linearized=spec.lin, variable=spec.var, gamma=cfg.gamma_value,
        )
        hop = merge_branches(base, tuple(branches))
        if hop.state == "resolved":
            return hop
        rec = yield from self._recover(query, spec.lin, hop.anchors, cfg, acc)
        return dataclasses.replace(hop, recovery=rec)

    def _run_ungrounded(
        self, query: str, plan: Plan, cfg: C2RAGConfig, run: _Run, pending: Sequence[int]
    ) -> Generator[Req, Any, None]:
        """Constraints whose placeholders were never bound: textual recovery only."""
        for i in pending:
            c = plan.constraints[i]
            lin = c.linearize(types=plan.placeholders)
            rec = yield from self._recover(query, lin, (), cfg, run.acc)
            run.record(
                HopTrace(
                    step=run.next_step, constraint_index=i, constraint=c, kind="P2",
                    linearized=lin, variable=None, gamma=cfg.gamma_value,
                    reason=f"placeholder never bound: {' and '.join(c.placeholders)}",
                    recovery=rec,
                )
            )

    def _assemble(
        self, query: str, plan: Plan, cfg: C2RAGConfig, run: _Run
    ) -> Generator[Req, Any, C2RAGResult]:
        """Eq. 14 final bindings and the Eq. 16 blocks, in plan order."""
        final = run.bindings.current()
        graph = yield from run.acc.evidence_graph(run.order)
        blocks = tuple(
            build_block(graph, plan, run.by_constraint.get(i), i, final)
            for i in range(len(plan.constraints))
        )
        if not plan.constraints:
            blocks = (build_block(graph, plan, run.order[0], None, final),)
        names = {v: tuple(graph.node(n).name for n in ids) for v, ids in final.items()}
        return C2RAGResult(
            query=query,
            plan=plan,
            hops=tuple(run.order),
            bindings=final,
            binding_cases=run.bindings.cases(),
            blocks=blocks,
            config=cfg,
            binding_names=names,
            graph=graph,
            whole_graph=run.acc.whole_graph,
            store_trace=run.acc.call_trace(),
        )

    def _anchors(self, surface: str, cfg: C2RAGConfig) -> list[Anchor]:
        """Eq. 3 for ``surface``: the top-``E`` anchors (outside a retrieval)."""
        return drive(self._access.bind().anchors(surface, cfg.top_e), self._serve)  # type: ignore[no-any-return]

    def _hop(
        self, query: str, spec: _HopSpec, cfg: C2RAGConfig, acc: GraphAccess, *,
        recover: bool = True,
    ) -> Generator[Req, Any, HopTrace]:
        """Run one constraint through Eq. 4-9.

        Eq. 11-12 follow when it stays unresolved and ``recover`` is set.
        """
        base = HopTrace(
            step=spec.step, constraint_index=spec.ci, constraint=spec.constraint,
            kind=spec.kind, linearized=spec.lin, variable=spec.var, anchors=spec.anchors,
            gamma=cfg.gamma_value,
        )
        pool: list[Candidate] = []
        if spec.anchors:
            found = yield from acc.pool([a.node_id for a in spec.anchors])
            pool = [x for x in found if x.edge_index not in spec.exclude]
        if not spec.anchors:
            hop = dataclasses.replace(base, reason=spec.no_anchor_reason)
        elif not pool:
            names = ", ".join(repr(a.name) for a in spec.anchors)
            hop = dataclasses.replace(base, reason=f"empty neighbourhood around {names}")
        else:
            yield from self._prefetch(pool, spec, query, cfg, acc)
            initial, z = yield from rank_candidates(
                pool, spec.constraint, query, spec.lin, cfg, acc.rel_cache
            )
            hop = sufficiency_step(base, len(pool), initial, z, cfg)
        if hop.state == "resolved" or not recover:
            return hop
        rec = yield from self._recover(query, spec.lin, spec.anchors, cfg, acc)
        return dataclasses.replace(hop, recovery=rec)

    def _prefetch_plan(
        self, query: str, plan: Plan, cfg: C2RAGConfig, acc: GraphAccess
    ) -> Generator[Req, Any, None]:
        """One ``embed_queries`` request for every ``P_1`` hop (:func:`plan_texts`)."""
        if self._memo() is None:
            return
        with_recovery = yield from acc.has_passages()
        anchors: dict[str, list[Anchor]] = {}
        pools: dict[tuple[str, ...], list[Candidate]] = {}
        for i in plan.p1:  # what plan_texts reads, through the access
            c = plan.constraints[i]
            surface = c.tail if c.head_is_var else c.head
            found = anchors[surface] = yield from acc.anchors(surface, cfg.top_e)
            ids = tuple(a.node_id for a in found)
            if ids and ids not in pools:
                pools[ids] = yield from acc.pool(ids)
        texts, rels = plan_texts(
            lambda ids: pools[tuple(ids)], plan, query, cfg, anchors.__getitem__,
            known=acc.rel_cache, with_recovery=with_recovery,
        )
        yield from prefetch_texts(self._memo(), texts, rels, acc)

    def _prefetch(
        self, pool: Sequence[Any], spec: _HopSpec, query: str, cfg: C2RAGConfig,
        acc: GraphAccess,
    ) -> Generator[Req, Any, None]:
        """One ``embed_queries`` request for what Eq. 5-6 will embed, instead of two.

        That is the relations not cached yet and, with the default reranker, its query.
        """
        if self._memo() is None or cfg.scorer != "reranker":
            return
        rels = [x.relation for x in pool] + list(spec.constraint.relation_set(cfg.m))
        missing = [t for t in rels if t not in acc.rel_cache]
        yield from prefetch_texts(self._memo(), [*missing, cfg.rerank_query(query, spec.lin)],
                                  rels, acc)

    # ------------------------------------------------------------------ recovery
    def _recover(
        self, query: str, lin: str, anchors: Sequence[Anchor], cfg: C2RAGConfig,
        acc: GraphAccess,
    ) -> Generator[Req, Any, TextualRecovery]:
        """Eq. 11-12 (:func:`~kgpath.methods.c2rag.recovery.textual_recovery`)."""
        if (yield from acc.has_passages()):  # Eq. 11 embeds Lin(τ), Eq. 12 the rerank query
            yield from prefetch_texts(self._memo(), [lin, cfg.rerank_query(query, lin)], (), acc)
        return (yield from acc.recover(query, lin, anchors, cfg))
