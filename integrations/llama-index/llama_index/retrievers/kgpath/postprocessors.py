"""Node postprocessors: the core sufficiency gate after any retriever, and PathRAG's order.

* :class:`SufficiencyPostprocessor` adapts :class:`kgpath.policies.sufficiency.SufficiencyGate`
  (C2RAG's N_eff check, Eq. 7-9, then a fallback retriever) to any scored node list.
* :class:`PathOrderPostprocessor` puts any scored nodes in ascending score, so the most
  reliable evidence sits last, next to the question (PathRAG Eq. 6).
* :func:`pathrag_query_engine` wires a PathRAG retriever, that order and the path-QA prompt
  into a ``RetrieverQueryEngine``.
"""

from __future__ import annotations

from typing import Any, Literal

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.retrievers.kgpath._base import to_kgpath_embedder

from kgpath.errors import ConfigError
from kgpath.policies.path_order import ascending_order, checked_score
from kgpath.policies.sufficiency import GateDecision, SufficiencyGate, gate_metadata, make_gate

__all__ = ["PathOrderPostprocessor", "SufficiencyPostprocessor", "pathrag_query_engine"]


class SufficiencyPostprocessor(BaseNodePostprocessor):
    """C2RAG's sufficiency check over any nodes, with a fallback retriever (core gate).

    The score of a node is ``NodeWithScore.score``. When no node has one (e.g. behind a
    plain vector-store retriever), the gate scores them with the embedder (``embed_model``,
    else a user-set ``Settings.embed_model``, else kgpath's offline one) and records
    ``kgpath_score_source="embedder"``. An unresolved list (``N_eff > gamma``) runs the
    ``fallback_retriever`` and appends (``mode="append"``) or substitutes (``"replace"``)
    its nodes. Every returned node is a copy whose metadata holds the gate's trace keys
    (``kgpath_gate_state``, ``kgpath_gate_n_eff``, ``kgpath_gate_gamma``, ``kgpath_gate_p``,
    ``kgpath_gate_action``, ``kgpath_gate_source``, ``kgpath_score_source``), hidden from
    the LLM and the embedder. Parameters are :class:`SufficiencyGateConfig`'s.
    """

    gamma: float = Field(default=1.5, description="N_eff threshold gamma (Eq. 9).")
    epsilon: float = Field(default=0.01, description="epsilon of Eq. 7, in score units.")
    top_k: int = Field(default=3, description="K_s: how many top nodes form the distribution.")
    mode: Literal["append", "replace"] = Field(default="append")
    fallback_top_k: int | None = Field(default=None, description="Cap on fallback nodes.")
    score_missing: Literal["embed", "insufficient"] = Field(default="embed")
    fallback_retriever: BaseRetriever | None = Field(default=None, exclude=True)
    embed_model: Any = Field(default=None, exclude=True)
    _gate: SufficiencyGate = PrivateAttr()

    def __init__(self, **data: Any) -> None:
        fb = data.get("fallback_retriever")
        if fb is not None and not isinstance(fb, BaseRetriever):
            raise ConfigError(
                f"fallback_retriever must be a LlamaIndex BaseRetriever, got {type(fb).__name__}"
            )
        gate = make_gate({**data, "fallback_k": data.get("fallback_top_k")},
                         to_kgpath_embedder(data.get("embed_model")))
        super().__init__(**data)
        self._gate = gate

    @classmethod
    def class_name(cls) -> str:
        """Name used by LlamaIndex serialisation."""
        return "KgpathSufficiencyPostprocessor"

    @property
    def gate(self) -> SufficiencyGate:
        """The core gate this postprocessor adapts."""
        return self._gate

    def _inputs(self, nodes: list[NodeWithScore],
                qb: QueryBundle | None) -> tuple[str, list[str], list[float | None]]:
        return (qb.query_str if qb is not None else "", [n.node.get_content() for n in nodes],
                [n.score for n in nodes])

    def _combine(self, nodes: list[NodeWithScore], fallback: list[NodeWithScore] | None,
                 decision: GateDecision) -> list[NodeWithScore]:
        out = []
        pairs = self._gate.combine(nodes, fallback, decision, key=lambda n: n.node.node_id)
        for n, marks in pairs:
            extra = gate_metadata(marks)
            meta, keys = {**n.node.metadata, **extra}, list(extra)
            update = {
                "metadata": meta,
                "excluded_llm_metadata_keys": _extend(n.node.excluded_llm_metadata_keys, keys),
                "excluded_embed_metadata_keys": _extend(n.node.excluded_embed_metadata_keys,
                                                        keys),
            }
            out.append(NodeWithScore(node=n.node.model_copy(update=update), score=n.score))
        return out

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        q, texts, scores = self._inputs(nodes, query_bundle)
        decision = self._gate.decide(q, texts, scores)
        fallback = None
        if decision.use_fallback and self.fallback_retriever and query_bundle is not None:
            fallback = self.fallback_retriever.retrieve(query_bundle)
        return self._combine(nodes, fallback, decision)

    async def _apostprocess_nodes(self, nodes: list[NodeWithScore],
                                  query_bundle: QueryBundle | None = None
                                  ) -> list[NodeWithScore]:
        q, texts, scores = self._inputs(nodes, query_bundle)
        decision = await self._gate.adecide(q, texts, scores)
        fallback = None
        if decision.use_fallback and self.fallback_retriever and query_bundle is not None:
            fallback = await self.fallback_retriever.aretrieve(query_bundle)
        return self._combine(nodes, fallback, decision)


def _extend(keys: list[str], extra: list[str]) -> list[str]:
    return list(dict.fromkeys([*keys, *extra]))


class PathOrderPostprocessor(BaseNodePostprocessor):
    """Reorder any scored nodes into ascending score: the best evidence comes last (Eq. 6).

    The score is ``node.score`` or, with ``score_key``, a numeric metadata value (e.g.
    ``"kgpath_reliability"``). Nodes without a score count as least reliable and come
    first; among equal scores the node ranked earlier ends up later. ``top_n`` keeps only
    the ``n`` highest scores.
    """

    score_key: str | None = Field(
        default=None, description="Metadata key holding the score; None uses node.score."
    )
    top_n: int | None = Field(default=None, description="Keep only the n best nodes.")

    @classmethod
    def class_name(cls) -> str:
        """Class name for serialisation."""
        return "PathOrderPostprocessor"

    def _score(self, node: NodeWithScore) -> float:
        s = node.score if self.score_key is None else node.node.metadata.get(self.score_key)
        return checked_score(s, f"score of node {node.node.node_id!r} (key {self.score_key!r})")

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        return ascending_order(nodes, [self._score(n) for n in nodes], self.top_n)


def pathrag_query_engine(retriever: BaseRetriever, *, llm: Any = None,
                         **kwargs: Any) -> RetrieverQueryEngine:
    """A ``RetrieverQueryEngine`` with PathRAG's prompt order and path-QA prompt.

    Appends :class:`PathOrderPostprocessor` after any ``node_postprocessors`` given, and
    uses the retriever's ``path_qa_prompt`` (else :data:`~.prompts.PATHRAG_QA_TEMPLATE`)
    as ``text_qa_template`` unless one is given.
    """
    from llama_index.retrievers.kgpath.prompts import PATHRAG_QA_TEMPLATE

    post = [*(kwargs.pop("node_postprocessors", None) or []), PathOrderPostprocessor()]
    qa = retriever.get_prompts().get("path_qa_prompt")
    kwargs.setdefault("text_qa_template", qa or PATHRAG_QA_TEMPLATE)
    return RetrieverQueryEngine.from_args(retriever, llm=llm, node_postprocessors=post, **kwargs)
