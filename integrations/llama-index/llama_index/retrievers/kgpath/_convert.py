"""Conversions between kgpath results and LlamaIndex objects.

Every kgpath LlamaIndex adapter (PCR, PathRAG, C2RAG, ...) turns a kgpath hit into a
``NodeWithScore`` the same way, so the helpers live here:

* :func:`make_text_node` builds a ``TextNode`` whose metadata holds the node's own metadata
  plus a kgpath *trace* (hops, path, anchor, ...). Trace keys are hidden from the embedding
  text, and all but a short list (:data:`LLM_METADATA_KEYS`) are hidden from the LLM prompt,
  so a long path or a list of passage ids does not bloat the context window.
* :func:`kg_node_to_text_node` does the same starting from a kgpath :class:`~kgpath.Node`.
* :func:`pcr_hit_trace`, :func:`pcr_hit_to_node_with_score` and :func:`pcr_result_to_nodes`
  convert a :class:`~kgpath.PCRResult`.
* :func:`to_kgpath_embedder` / :func:`to_kgpath_llm` accept a kgpath backend or a
  LlamaIndex one (wrapped), shared by every adapter's constructor.
* :class:`KgpathQueryBundle` carries per-call options (anchor, ``k``, config fields) through
  LlamaIndex's ``retrieve(query_bundle)`` entry point; :func:`query_call_args` unpacks it.

Metadata values are made JSON-friendly (tuples become lists, numpy scalars become Python
numbers) so nodes survive a LlamaIndex docstore round trip.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.base import BaseLLM as LlamaIndexBaseLLM
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from kgpath import ConfigError, LlamaIndexEmbedder, LlamaIndexLLM
from kgpath.embeddings import Embedder
from kgpath.graph import KnowledgeGraph, Node
from kgpath.llm import LLM
from kgpath.methods.pcr import PCRHit, PCRResult

__all__ = [
    "to_kgpath_embedder",
    "to_kgpath_llm",
    "LLM_METADATA_KEYS",
    "KgpathQueryBundle",
    "to_jsonable",
    "make_text_node",
    "kg_node_to_text_node",
    "pcr_hit_trace",
    "pcr_hit_to_node_with_score",
    "pcr_result_to_nodes",
    "query_call_args",
]

#: Trace keys shown to the LLM by default: the node type and the readable path
#: (``Marie Curie -[discovered]-> radium``), which explains *why* the node is in the context.
LLM_METADATA_KEYS: tuple[str, ...] = ("type", "path_text")


def to_jsonable(value: Any) -> Any:
    """Return ``value`` with tuples/sets as lists, numpy values as Python values, recursively."""
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def make_text_node(
    *,
    node_id: str,
    text: str,
    trace: Mapping[str, Any],
    metadata: Mapping[str, Any] | None = None,
    llm_metadata_keys: Sequence[str] = LLM_METADATA_KEYS,
) -> TextNode:
    """Build a ``TextNode`` carrying ``metadata`` plus a kgpath ``trace``.

    Parameters
    ----------
    node_id
        The node id (kept stable: the kgpath id, so the same graph node always maps to the
        same LlamaIndex node).
    text
        The node's content.
    trace
        kgpath trace fields. They win over ``metadata`` keys of the same name. All of them
        are excluded from the embedding text; those not in ``llm_metadata_keys`` (and those
        whose value is ``None`` or empty) are excluded from the LLM text.
    metadata
        The node's own metadata, visible to both embedder and LLM (LlamaIndex's default).
    llm_metadata_keys
        Trace keys the LLM should see.
    """
    meta: dict[str, Any] = dict(metadata or {})
    clean_trace = {str(k): to_jsonable(v) for k, v in trace.items()}
    meta.update(clean_trace)
    visible = set(llm_metadata_keys)
    hidden_llm = [
        k for k, v in clean_trace.items() if k not in visible or v is None or v in ("", [])
    ]
    return TextNode(
        id_=node_id,
        text=text,
        metadata=meta,
        excluded_embed_metadata_keys=list(clean_trace),
        excluded_llm_metadata_keys=hidden_llm,
    )


def kg_node_to_text_node(
    node: Node,
    *,
    trace: Mapping[str, Any] | None = None,
    text: str | None = None,
    llm_metadata_keys: Sequence[str] = LLM_METADATA_KEYS,
) -> TextNode:
    """Convert a kgpath :class:`~kgpath.Node` to a ``TextNode`` with id = the kgpath id.

    The text defaults to :attr:`Node.search_text` (the name followed by the description,
    exactly what kgpath embedded). The base trace is ``kgpath_node_id``, ``name``, ``type``
    and ``provenance`` (passage ids); ``trace`` adds to or overrides it.
    """
    base: dict[str, Any] = {
        "kgpath_node_id": node.id,
        "name": node.name,
        "type": node.type,
        "provenance": list(node.provenance),
    }
    base.update(trace or {})
    return make_text_node(
        node_id=node.id,
        text=node.search_text if text is None else text,
        trace=base,
        metadata=node.metadata,
        llm_metadata_keys=llm_metadata_keys,
    )


def pcr_hit_trace(
    hit: PCRHit, result: PCRResult, graph: KnowledgeGraph, *, rank: int
) -> dict[str, Any]:
    """Return the per-node trace of one PCR hit (everything PCR decided about it).

    Keys: ``kgpath_method`` (``"pcr"``), ``rank`` (1-based), ``score``, ``score_mode``,
    ``hops`` (shortest-path length from the anchor, ``None`` if the node came from the global
    fallback of section 3.5), ``path`` (node ids anchor -> node), ``path_relations`` (edge
    relation labels along it), ``path_text``, ``anchor_id``, ``anchor_name``,
    ``anchor_resolution``, ``fallback_used``, ``reachable_count`` (``|C_reachable|`` of
    Eq. 1, anchor included).
    """
    return {
        "kgpath_method": "pcr",
        "rank": rank,
        "score": float(hit.score),
        "score_mode": result.config.mode,
        "hops": hit.hops,
        "path": list(hit.path),
        "path_relations": [e.relation for e in hit.edges],
        "path_text": hit.path_text(graph),
        "anchor_id": result.anchor.id,
        "anchor_name": result.anchor.name,
        "anchor_resolution": result.anchor_resolution,
        "fallback_used": result.fallback_used,
        "reachable_count": result.reachable_count,
    }


def pcr_hit_to_node_with_score(
    hit: PCRHit,
    result: PCRResult,
    graph: KnowledgeGraph,
    *,
    rank: int,
    llm_metadata_keys: Sequence[str] = LLM_METADATA_KEYS,
) -> NodeWithScore:
    """One PCR hit as a ``NodeWithScore`` (float score = the Eq. 2 / hybrid score)."""
    node = kg_node_to_text_node(
        hit.node,
        trace=pcr_hit_trace(hit, result, graph, rank=rank),
        llm_metadata_keys=llm_metadata_keys,
    )
    return NodeWithScore(node=node, score=float(hit.score))


def pcr_result_to_nodes(
    result: PCRResult,
    graph: KnowledgeGraph,
    *,
    llm_metadata_keys: Sequence[str] = LLM_METADATA_KEYS,
) -> list[NodeWithScore]:
    """All hits of a :class:`~kgpath.PCRResult`, in rank order."""
    return [
        pcr_hit_to_node_with_score(
            h, result, graph, rank=i + 1, llm_metadata_keys=llm_metadata_keys
        )
        for i, h in enumerate(result.hits)
    ]


@dataclass
class KgpathQueryBundle(QueryBundle):
    """A ``QueryBundle`` with per-call kgpath options.

    Pass it wherever LlamaIndex takes a query (``retriever.retrieve``, ``aretrieve``,
    ``query_engine.query``): the bundle reaches the retriever unchanged. ``None`` means "use
    the retriever's default". Query transforms that build a fresh ``QueryBundle`` drop these
    fields.

    Attributes
    ----------
    anchor
        Anchor node id for this call.
    anchor_name
        Anchor node name for this call (used when ``anchor`` is ``None``).
    k
        Number of results for this call.
    options
        Any other config fields of the method for this call (e.g. ``{"max_depth": 2}``).
    """

    anchor: str | None = None
    anchor_name: str | None = None
    k: int | None = None
    options: dict[str, Any] = field(default_factory=dict)


def query_call_args(
    query_bundle: QueryBundle,
    *,
    anchor: str | None = None,
    anchor_name: str | None = None,
) -> tuple[str, dict[str, Any]]:
    """Split a (possibly :class:`KgpathQueryBundle`) query into ``(query_str, kwargs)``.

    ``kwargs`` always holds ``anchor`` and ``anchor_name``: the bundle's pair when it names
    either one, else the defaults given here (so a per-call name replaces a default id).
    Per-call ``k`` and ``options`` are added when set; their validation is left to the
    kgpath method's config (a bad value raises :class:`~kgpath.ConfigError`).
    """
    kwargs: dict[str, Any] = {"anchor": anchor, "anchor_name": anchor_name}
    if isinstance(query_bundle, KgpathQueryBundle):
        if query_bundle.anchor is not None or query_bundle.anchor_name is not None:
            kwargs["anchor"] = query_bundle.anchor
            kwargs["anchor_name"] = query_bundle.anchor_name
        kwargs.update(query_bundle.options)
        if query_bundle.k is not None:
            kwargs["k"] = query_bundle.k
    return query_bundle.query_str, kwargs


def to_kgpath_embedder(embedder: Any) -> Embedder | None:
    """Return a kgpath :class:`~kgpath.Embedder` for ``embedder``.

    ``None`` stays ``None`` (kgpath then uses its offline default, ``LocalEmbedder``); a
    LlamaIndex ``BaseEmbedding`` is wrapped in :class:`kgpath.LlamaIndexEmbedder` (query vs
    text embeddings and native async kept); a kgpath embedder is returned as is.
    """
    if embedder is None:
        return None
    if isinstance(embedder, BaseEmbedding):
        return LlamaIndexEmbedder(embedder)
    if isinstance(embedder, Embedder):
        return embedder
    raise ConfigError(
        "embedder must be None, a kgpath Embedder or a LlamaIndex BaseEmbedding, "
        f"got {type(embedder).__name__}: {embedder!r}"
    )


def to_kgpath_llm(llm: Any) -> LLM | None:
    """Return a kgpath :class:`~kgpath.LLM` for ``llm`` (``None`` stays ``None``).

    A LlamaIndex LLM is checked first and wrapped in :class:`kgpath.LlamaIndexLLM`: it also
    has ``complete``/``acomplete``, but they return response objects, not strings.
    """
    if llm is None:
        return None
    if isinstance(llm, LlamaIndexBaseLLM):
        return LlamaIndexLLM(llm)
    if isinstance(llm, LLM):
        return llm
    raise ConfigError(
        f"llm must be None, a kgpath LLM or a LlamaIndex LLM, got {type(llm).__name__}"
    )
