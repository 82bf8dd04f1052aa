"""LlamaIndex adapters for C2RAG (constraint-checked retrieval with the N_eff check).

* :class:`C2RAGRetriever` - a ``BaseRetriever`` delegating to
  :class:`kgpath.methods.c2rag.ConstraintCheckedRetriever`; every returned node carries
  its constraint, hop state, N_eff, bindings and recovery flag in metadata.
* :class:`SufficiencyPostprocessor` - a ``BaseNodePostprocessor`` that applies C2RAG's
  sufficiency check (Eq. 7-9) to ANY scored node list and, when the top candidates are not
  concentrated enough (``N_eff > γ``), calls a fallback retriever and records what it did in
  each node's metadata. It plugs into any existing query engine.
* :data:`C2RAG_EVIDENCE_PROMPT` - the evidence-block answer prompt as a ``PromptTemplate``
  (``{context_str}``, ``{query_str}``), exposed with the planner prompt through
  ``get_prompts``/``update_prompts``.

The adapters only convert; every decision is made by the kgpath core.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from llama_index.core.bridge.pydantic import Field
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import PromptTemplate
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.prompts.prompt_type import PromptType
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.retrievers.kgpath._convert import to_kgpath_embedder as _to_embedder
from llama_index.retrievers.kgpath._convert import to_kgpath_llm as _to_llm

from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex
from kgpath.methods.c2rag import (
    C2RAGConfig,
    C2RAGResult,
    ConstraintCheckedRetriever,
    Evidence,
    EvidenceBlock,
    check_sufficiency,
    format_blocks,
)
from kgpath.prompts.c2rag import EVIDENCE_QA_PROMPT, PLANNER_PROMPT
from kgpath.rerank import Reranker

__all__ = [
    "C2RAGRetriever",
    "SufficiencyPostprocessor",
    "C2RAG_EVIDENCE_PROMPT",
    "C2RAG_PLANNER_PROMPT",
    "c2rag_result_to_nodes",
]

_C2RAG_FIELDS = frozenset(f.name for f in dataclasses.fields(C2RAGConfig))

#: The evidence-block answer prompt (Eq. 16 context) with LlamaIndex's variable names.
C2RAG_EVIDENCE_PROMPT = PromptTemplate(
    EVIDENCE_QA_PROMPT.replace("{context}", "{context_str}").replace("{query}", "{query_str}"),
    prompt_type=PromptType.QUESTION_ANSWER,
)

#: The planner prompt (``{query}``, ``{m}``, ``{schema}``).
C2RAG_PLANNER_PROMPT = PromptTemplate(PLANNER_PROMPT, prompt_type=PromptType.CUSTOM)

#: Metadata keys the LLM sees for an evidence node (the rest is trace, hidden from it).
LLM_VISIBLE_KEYS = ("constraint", "state", "bindings")

Granularity = Literal["evidence", "block"]


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _hop_summary(result: C2RAGResult, block: EvidenceBlock) -> dict[str, Any]:
    if block.constraint_index is None:
        hop = result.hops[0]
    else:
        hop = result.hop(block.constraint_index)
    return {
        "step": hop.step,
        "kind": hop.kind,
        "linearized": hop.linearized,
        "anchors": [a.name for a in hop.anchors],
        "pool_size": hop.pool_size,
        "before_rerank": [c.text for c in hop.initial],
        "after_rerank": [[c.text, c.p] for c in hop.top],
        "n_eff": hop.n_eff,
        "state": hop.state,
        "reason": hop.reason,
        "recovery_used": hop.recovery_used,
    }


def _block_trace(result: C2RAGResult, block: EvidenceBlock, number: int) -> dict[str, Any]:
    return {
        "kgpath_method": "c2rag",
        "constraint": block.header,
        "constraint_index": block.constraint_index,
        "block": number,
        "state": block.state,
        "n_eff": block.n_eff,
        "gamma": result.config.gamma,
        "bindings": {k: list(v) for k, v in block.bindings.items() if v},
        "recovery_used": block.recovery_used,
        "plan_source": result.plan.source,
        "hop_trace": _hop_summary(result, block),
    }


def _node(node_id: str, text: str, meta: dict[str, Any]) -> TextNode:
    meta = _jsonable(meta)
    hidden_llm = [k for k, v in meta.items() if k not in LLM_VISIBLE_KEYS or v in (None, {}, [])]
    return TextNode(
        id_=node_id,
        text=text,
        metadata=meta,
        excluded_embed_metadata_keys=list(meta),
        excluded_llm_metadata_keys=hidden_llm,
    )


def c2rag_result_to_nodes(
    result: C2RAGResult, *, k: int | None = None, granularity: Granularity = "evidence"
) -> list[NodeWithScore]:
    """Convert a :class:`~kgpath.methods.c2rag.C2RAGResult` to ``NodeWithScore`` objects.

    ``granularity="evidence"``: one node per evidence item (passage, or triple without a
    passage), deduplicated and interleaved across blocks (``result.ranked_evidence()``) so
    the first ``k`` cover as many constraints as possible; node id = passage id; score = the
    supporting candidate's Eq. 7 probability (structural) or the Eq. 12 reranker score
    (textual recovery). ``granularity="block"``: one node per constraint block (Eq. 16),
    text = the rendered block, score = ``1/N_eff`` (0.0 when the hop had no candidates).
    """
    numbers = {id(b): i for i, b in enumerate(result.blocks, 1)}
    out: list[NodeWithScore] = []
    if granularity == "block":
        for i, b in enumerate(result.blocks, 1):
            digest = hashlib.sha1(
                (result.query + "\x00" + b.header).encode("utf-8")
            ).hexdigest()[:16]
            meta = _block_trace(result, b, i)
            meta["rank"] = i
            meta["evidence_ids"] = [e.id for e in b.evidence]
            score = 0.0 if b.n_eff is None else 1.0 / b.n_eff
            lines = format_blocks([b]).split("\n")
            lines[0] = b.header  # drop the "[Block 1]" label of a one-block rendering
            node = _node(f"c2rag-block-{digest}", "\n".join(lines), meta)
            out.append(NodeWithScore(node=node, score=float(score)))
        return out[:k] if k is not None else out
    for rank, (b, e) in enumerate(result.ranked_evidence(), 1):
        meta = _block_trace(result, b, numbers[id(b)])
        meta.update(_evidence_meta(e, rank))
        out.append(NodeWithScore(node=_node(e.id, e.text, meta), score=float(e.score)))
    return out[:k] if k is not None else out


def _evidence_meta(e: Evidence, rank: int) -> dict[str, Any]:
    return {
        "rank": rank,
        "score": float(e.score),
        "evidence_kind": e.kind,
        "evidence_source": e.source,
        "supporting_triple": e.triple,
    }


class C2RAGRetriever(BaseRetriever):
    """LlamaIndex retriever running kgpath's C2RAG.

    Parameters
    ----------
    retriever
        A :class:`kgpath.methods.c2rag.ConstraintCheckedRetriever`; use :meth:`from_graph`
        to start from a graph.
    similarity_top_k
        Maximum number of nodes returned (``None``: all evidence).
    granularity
        ``"evidence"`` (default): one node per evidence passage; ``"block"``: one node per
        constraint block (Eq. 16), ready to be read in plan order.
    evidence_prompt
        The answer prompt exposed as ``"evidence_prompt"`` by ``get_prompts`` (for a
        response synthesizer's ``text_qa_template``).
    callback_manager, verbose
        Passed to ``BaseRetriever``.
    **config_fields
        :class:`kgpath.methods.c2rag.C2RAGConfig` fields (``gamma``, ``k_s``, ...).

    Metadata of every node: ``kgpath_method`` (``"c2rag"``), ``constraint`` (``Lin(τ_i)``),
    ``constraint_index``, ``block``, ``state`` (``resolved``/``unresolved``), ``n_eff``,
    ``gamma``, ``bindings`` (placeholder -> bound names), ``recovery_used``,
    ``plan_source`` (``llm``/``fallback``/``user``), ``hop_trace`` (anchors, candidates before
    and after rerank with probabilities, reason), ``rank``, ``score``, and for evidence
    nodes ``evidence_kind``, ``evidence_source``, ``supporting_triple``. Only ``constraint``,
    ``state`` and ``bindings`` reach the LLM; none are embedded.

    Per-call options: a ``QueryBundle`` subclass with ``k`` and/or ``options`` attributes
    (such as ``KgpathQueryBundle``) sets ``similarity_top_k`` and config fields for one call.
    """

    def __init__(
        self,
        retriever: ConstraintCheckedRetriever,
        *,
        similarity_top_k: int | None = None,
        granularity: Granularity = "evidence",
        evidence_prompt: PromptTemplate | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **config_fields: Any,
    ) -> None:
        if not isinstance(retriever, ConstraintCheckedRetriever):
            raise ConfigError(
                "retriever must be a kgpath ConstraintCheckedRetriever, got "
                f"{type(retriever).__name__}; use C2RAGRetriever.from_graph(graph, ...)"
            )
        unknown = set(config_fields) - _C2RAG_FIELDS
        if unknown:
            raise ConfigError(
                f"unknown C2RAG option(s) {sorted(unknown)}; valid: {sorted(_C2RAG_FIELDS)}"
            )
        _check_k(similarity_top_k)
        if granularity not in ("evidence", "block"):
            raise ConfigError(f"granularity must be 'evidence' or 'block', got {granularity!r}")
        if config_fields:
            retriever = copy.copy(retriever)  # shares caches and graph, not the config
            retriever.config = dataclasses.replace(retriever.config, **config_fields)
        super().__init__(callback_manager=callback_manager, verbose=verbose)
        self._c2rag = retriever
        self._top_k = similarity_top_k
        self._granularity: Granularity = granularity
        self._evidence_prompt = evidence_prompt or C2RAG_EVIDENCE_PROMPT

    @classmethod
    def from_graph(
        cls,
        graph: KnowledgeGraph | GraphIndex,
        *,
        embedder: Any = None,
        llm: Any = None,
        reranker: Reranker | None = None,
        config: C2RAGConfig | None = None,
        similarity_top_k: int | None = None,
        granularity: Granularity = "evidence",
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **config_fields: Any,
    ) -> C2RAGRetriever:
        """Build from a kgpath graph.

        ``embedder``: ``None`` (kgpath's offline ``LocalEmbedder``), a kgpath embedder or a
        LlamaIndex ``BaseEmbedding``. ``llm``: ``None`` (the weaker LLM-free plan), a kgpath
        LLM or a LlamaIndex ``LLM`` (planner). ``reranker``: a kgpath reranker (default:
        bi-encoder over the embedder).
        """
        core = ConstraintCheckedRetriever(
            graph, embedder=_to_embedder(embedder), llm=_to_llm(llm), reranker=reranker,
            config=config,
        )
        return cls(
            core, similarity_top_k=similarity_top_k, granularity=granularity,
            callback_manager=callback_manager, verbose=verbose, **config_fields,
        )

    @property
    def kgpath_retriever(self) -> ConstraintCheckedRetriever:
        """The wrapped kgpath retriever (call it for a full :class:`C2RAGResult`)."""
        return self._c2rag

    @property
    def config(self) -> C2RAGConfig:
        """The effective :class:`~kgpath.methods.c2rag.C2RAGConfig`."""
        return self._c2rag.config

    # ------------------------------------------------------------------ prompts
    def _get_prompts(self) -> PromptDictType:
        return {
            "planner_prompt": PromptTemplate(self._c2rag.planner_prompt,
                                             prompt_type=PromptType.CUSTOM),
            "evidence_prompt": self._evidence_prompt,
        }

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "planner_prompt" in prompts:
            tmpl = prompts["planner_prompt"].get_template()
            ConstraintCheckedRetriever._check_prompt(tmpl)
            self._c2rag = copy.copy(self._c2rag)
            self._c2rag.planner_prompt = tmpl
        if "evidence_prompt" in prompts:
            p = prompts["evidence_prompt"]
            if not isinstance(p, PromptTemplate):
                p = PromptTemplate(p.get_template(), prompt_type=PromptType.QUESTION_ANSWER)
            self._evidence_prompt = p

    # ------------------------------------------------------------------ retrieval
    def _call(self, qb: QueryBundle) -> tuple[str, int | None, dict[str, Any]]:
        k = getattr(qb, "k", None)
        _check_k(k)
        options = dict(getattr(qb, "options", None) or {})
        return qb.query_str, (k if k is not None else self._top_k), options

    def _convert(self, result: C2RAGResult, k: int | None) -> list[NodeWithScore]:
        if self._verbose:
            states = ", ".join(f"{h.step}:{h.state}" for h in result.hops)
            print(f"C2RAG plan ({result.plan.source}) hops {states}; bindings "
                  f"{dict(result.binding_names)}")
        return c2rag_result_to_nodes(result, k=k, granularity=self._granularity)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Run C2RAG (plan, constraint retrieval, sufficiency check, recovery, binding)."""
        query, k, options = self._call(query_bundle)
        return self._convert(self._c2rag.retrieve(query, **options), k)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Async C2RAG: planner LLM, embedder and reranker awaited natively."""
        query, k, options = self._call(query_bundle)
        return self._convert(await self._c2rag.aretrieve(query, **options), k)

    def retrieve_with_result(self, query: str) -> tuple[list[NodeWithScore], C2RAGResult]:
        """Retrieve and also return the full :class:`C2RAGResult` (plan and per-hop trace)."""
        result = self._c2rag.retrieve(query)
        return self._convert(result, self._top_k), result

    async def aretrieve_with_result(
        self, query: str
    ) -> tuple[list[NodeWithScore], C2RAGResult]:
        """Async :meth:`retrieve_with_result`."""
        result = await self._c2rag.aretrieve(query)
        return self._convert(result, self._top_k), result


def _check_k(k: Any) -> None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k <= 0):
        raise ConfigError(f"similarity_top_k must be a positive int or None, got {k!r}")


# ====================================================================== postprocessor
SUFFICIENCY_KEYS = (
    "c2rag_state",
    "c2rag_n_eff",
    "c2rag_gamma",
    "c2rag_p",
    "c2rag_action",
    "c2rag_source",
)


class SufficiencyPostprocessor(BaseNodePostprocessor):
    """C2RAG's sufficiency check (Eq. 7-9) over any scored nodes, with a fallback retriever.

    The ``top_k`` highest-scored nodes (``K_s``) are turned into a distribution by Eq. 7
    (min-shift plus ``epsilon``) and ``N_eff = 1/Σp²`` (Eq. 8). ``N_eff <= gamma`` means the
    list has a dominant candidate (Prop. A.3: ``p_max >= 1/γ``) and it passes through. Else,
    like C2RAG's textual recovery, the ``fallback_retriever`` (e.g. a plain vector retriever
    over passages) is queried and its nodes are appended (``mode="append"``) or replace the
    list (``mode="replace"``). Nodes without a score do not enter the distribution; a list
    with no scored node is insufficient.

    Every returned node is a copy (the docstore's nodes are never mutated) whose metadata
    records the decision: ``c2rag_state`` (``resolved``/``unresolved``), ``c2rag_n_eff``,
    ``c2rag_gamma``, ``c2rag_p`` (Eq. 7 probability, top nodes only), ``c2rag_source``
    (``primary``/``fallback``) and ``c2rag_action`` (``kept``, ``fallback_appended``,
    ``fallback_replaced``, ``no_fallback_configured``, ``no_query``). These keys are hidden
    from the LLM and the embedder.

    Scores must be on one scale for the check to mean anything; ``epsilon`` is in that
    scale's units (0.01 suits cosine similarities, about 0.5-1 suits cross-encoder logits).
    """

    gamma: float = Field(default=1.5, description="N_eff threshold γ (Eq. 9).")
    epsilon: float = Field(default=0.01, description="ε of Eq. 7, in score units.")
    top_k: int = Field(default=3, description="K_s: how many top nodes form the distribution.")
    mode: Literal["append", "replace"] = Field(default="append")
    fallback_top_k: int | None = Field(
        default=None, description="Keep at most this many fallback nodes."
    )
    fallback_retriever: BaseRetriever | None = Field(default=None, exclude=True)

    def __init__(self, **data: Any) -> None:
        for name in ("gamma", "epsilon"):
            v = data.get(name, 1.0)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                    or v <= 0:
                raise ConfigError(f"{name} must be a finite number > 0, got {v!r}")
        for name in ("top_k", "fallback_top_k"):
            v = data.get(name, 1)
            if v is None and name == "fallback_top_k":
                continue
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ConfigError(f"{name} must be a positive int, got {v!r}")
        if data.get("mode", "append") not in ("append", "replace"):
            raise ConfigError(f"mode must be 'append' or 'replace', got {data['mode']!r}")
        fb = data.get("fallback_retriever")
        if fb is not None and not isinstance(fb, BaseRetriever):
            raise ConfigError(
                f"fallback_retriever must be a LlamaIndex BaseRetriever, got {type(fb).__name__}"
            )
        super().__init__(**data)

    def model_post_init(self, __context: Any) -> None:
        """Warn once that γ < 1 never passes (``N_eff >= 1``, Lemma A.1)."""
        if self.gamma < 1:
            warnings.warn(
                f"gamma={self.gamma} < 1: N_eff >= 1 always, so every list is insufficient "
                "and the fallback always runs",
                UserWarning,
                stacklevel=2,
            )

    @classmethod
    def class_name(cls) -> str:
        """Name used by LlamaIndex serialisation."""
        return "C2RAGSufficiencyPostprocessor"

    # ------------------------------------------------------------------ the check
    def check(self, nodes: Sequence[NodeWithScore]) -> tuple[str, float | None, dict[str, float]]:
        """Return ``(state, N_eff, {node_id: p})`` for the ``top_k`` scored nodes."""
        res = check_sufficiency(
            [n.score for n in nodes], gamma=self.gamma, epsilon=self.epsilon, k_s=self.top_k
        )
        probs = {
            nodes[i].node.node_id: p for i, p in zip(res.top, res.probabilities, strict=True)
        }
        return res.state, res.n_eff, probs

    def _mark(
        self,
        nodes: Sequence[NodeWithScore],
        *,
        state: str,
        n_eff: float | None,
        probs: Mapping[str, float],
        action: str,
        source: str,
    ) -> list[NodeWithScore]:
        out = []
        for n in nodes:
            meta = dict(n.node.metadata)
            meta.update(
                c2rag_state=state,
                c2rag_n_eff=n_eff,
                c2rag_gamma=self.gamma,
                c2rag_p=probs.get(n.node.node_id),
                c2rag_action=action,
                c2rag_source=source,
            )
            update = {
                "metadata": meta,
                "excluded_llm_metadata_keys": _extend(
                    n.node.excluded_llm_metadata_keys, SUFFICIENCY_KEYS
                ),
                "excluded_embed_metadata_keys": _extend(
                    n.node.excluded_embed_metadata_keys, SUFFICIENCY_KEYS
                ),
            }
            out.append(NodeWithScore(node=n.node.model_copy(update=update), score=n.score))
        return out

    def _plan(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None
    ) -> tuple[str, float | None, dict[str, float], str]:
        state, n_eff, probs = self.check(nodes)
        if state == "resolved":
            return state, n_eff, probs, "kept"
        if self.fallback_retriever is None:
            return state, n_eff, probs, "no_fallback_configured"
        if query_bundle is None:
            return state, n_eff, probs, "no_query"
        return state, n_eff, probs, {"append": "fallback_appended",
                                     "replace": "fallback_replaced"}[self.mode]

    def _merge(
        self,
        nodes: list[NodeWithScore],
        fallback: list[NodeWithScore],
        state: str,
        n_eff: float | None,
        probs: dict[str, float],
        action: str,
    ) -> list[NodeWithScore]:
        if self.fallback_top_k is not None:
            fallback = fallback[: self.fallback_top_k]
        fb = self._mark(fallback, state=state, n_eff=n_eff, probs={}, action=action,
                        source="fallback")
        if self.mode == "replace":
            return fb
        primary = self._mark(nodes, state=state, n_eff=n_eff, probs=probs, action=action,
                             source="primary")
        seen = {n.node.node_id for n in primary}
        return primary + [n for n in fb if n.node.node_id not in seen]

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        state, n_eff, probs, action = self._plan(nodes, query_bundle)
        if not action.startswith("fallback_"):
            return self._mark(nodes, state=state, n_eff=n_eff, probs=probs, action=action,
                              source="primary")
        assert self.fallback_retriever is not None and query_bundle is not None
        fallback = self.fallback_retriever.retrieve(query_bundle)
        return self._merge(nodes, fallback, state, n_eff, probs, action)

    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        state, n_eff, probs, action = self._plan(nodes, query_bundle)
        if not action.startswith("fallback_"):
            return self._mark(nodes, state=state, n_eff=n_eff, probs=probs, action=action,
                              source="primary")
        assert self.fallback_retriever is not None and query_bundle is not None
        fallback = await self.fallback_retriever.aretrieve(query_bundle)
        return self._merge(nodes, fallback, state, n_eff, probs, action)


def _extend(keys: Sequence[str], extra: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*keys, *extra]))
