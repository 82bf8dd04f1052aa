"""Conversions from kgpath results to LangChain :class:`~langchain_core.documents.Document`.

Shared by every retriever in this package. The rule (STYLE habit 6): a document carries the
evidence in ``page_content`` and the method's trace in ``metadata``, with plain JSON types only
(``float`` scores, lists instead of tuples, no numpy scalars), so documents survive
serialisation, LangSmith tracing and vector-store round trips unchanged.

Metadata keys common to every node document
-------------------------------------------
``node_id``, ``name``, ``type``, ``provenance`` (list of passage ids), ``score`` (float), and
``node_metadata`` when the node has its own metadata. Method-specific keys are added by the
caller through ``extra`` (see :func:`pcr_hit_to_document` for PCR's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseLanguageModel

from kgpath import ConfigError, LangChainEmbedder, LangChainLLM
from kgpath.embeddings import Embedder
from kgpath.graph import Edge, KnowledgeGraph, Node
from kgpath.llm import LLM
from kgpath.methods.pcr import PCRHit, PCRResult

__all__ = [
    "as_kgpath_embedder",
    "as_kgpath_llm",
    "jsonable",
    "make_document",
    "node_to_document",
    "path_edges",
    "pcr_hit_to_document",
    "pcr_result_to_documents",
]


def jsonable(value: Any) -> Any:
    """Return ``value`` with tuples/sets as lists, numpy scalars/arrays as Python values.

    Mappings are converted recursively (keys become ``str``); anything else not JSON-native
    is rendered with ``str`` so metadata never holds an object a serialiser would reject.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return [jsonable(v) for v in items]
    return str(value)


def make_document(
    page_content: str,
    *,
    id: str | None = None,  # noqa: A002 - mirrors Document.id
    score: float | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Document:
    """Build a :class:`Document` with JSON-safe metadata and a ``float`` score.

    ``score`` is stored under ``metadata["score"]`` (as a Python ``float``) when given.
    """
    meta = jsonable(dict(metadata or {}))
    if score is not None:
        meta["score"] = float(score)
    return Document(page_content=page_content, id=id, metadata=meta)


def node_to_document(
    node: Node,
    *,
    score: float | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Document:
    """One graph node as a document.

    ``page_content`` is :attr:`kgpath.graph.Node.search_text` (the node text, prefixed by
    its name when the text does not already mention it) - exactly what was embedded and
    scored. ``id`` is the kgpath node id.
    """
    meta: dict[str, Any] = {
        "node_id": node.id,
        "name": node.name,
        "type": node.type,
        "provenance": list(node.provenance),
    }
    if node.metadata:
        meta["node_metadata"] = dict(node.metadata)
    if extra:
        meta.update(extra)
    return make_document(node.search_text, id=node.id, score=score, metadata=meta)


def path_edges(edges: Sequence[Edge]) -> list[list[str]]:
    """Edges along a path as ``[source, relation, target]`` triples (stored direction)."""
    return [[e.source, e.relation, e.target] for e in edges]


def pcr_hit_to_document(
    hit: PCRHit, result: PCRResult, graph: KnowledgeGraph, *, rank: int
) -> Document:
    """Convert a PCR hit to a document whose metadata is the hit's structural trace.

    PCR-specific metadata keys: ``method`` (``"pcr"``), ``rank`` (0-based), ``hops``
    (shortest-path length from the anchor, ``None`` if the node was found only by the global
    fallback of the paper's section 3.5), ``path`` (node ids anchor -> node), ``path_text``
    (names with relation labels), ``path_edges``, ``anchor`` (anchor node id),
    ``anchor_name``, ``anchor_resolution``, ``fallback_used``, ``reachable_count``
    (``|C_reachable|`` of Eq. 1, anchor included) and ``mode`` (Eq. 2 vector score or the
    section 3.4 hybrid).
    """
    return node_to_document(
        hit.node,
        score=hit.score,
        extra={
            "method": "pcr",
            "rank": rank,
            "hops": hit.hops,
            "path": list(hit.path),
            "path_text": hit.path_text(graph),
            "path_edges": path_edges(hit.edges),
            "anchor": result.anchor.id,
            "anchor_name": result.anchor.name,
            "anchor_resolution": result.anchor_resolution,
            "fallback_used": result.fallback_used,
            "reachable_count": result.reachable_count,
            "mode": result.config.mode,
        },
    )


def pcr_result_to_documents(result: PCRResult, graph: KnowledgeGraph) -> list[Document]:
    """All hits of a :class:`~kgpath.methods.pcr.PCRResult`, in rank order."""
    return [pcr_hit_to_document(h, result, graph, rank=i) for i, h in enumerate(result.hits)]

def as_kgpath_embedder(embedder: Any) -> Embedder | None:
    """Return a kgpath :class:`~kgpath.embeddings.Embedder` for ``embedder``.

    ``None`` stays ``None`` (the core then uses its offline default, ``LocalEmbedder``);
    a LangChain :class:`~langchain_core.embeddings.Embeddings` is wrapped in
    :class:`kgpath.LangChainEmbedder`; a kgpath embedder is returned unchanged.

    Raises
    ------
    ConfigError
        If ``embedder`` is neither.
    """
    if embedder is None:
        return None
    if isinstance(embedder, Embeddings):
        return LangChainEmbedder(embedder)
    if isinstance(embedder, Embedder):
        return embedder
    raise ConfigError(
        "embedder must be a kgpath Embedder or a LangChain Embeddings, got "
        f"{type(embedder).__name__}: {embedder!r}"
    )


def as_kgpath_llm(llm: Any) -> LLM | None:
    """Return a kgpath :class:`~kgpath.llm.LLM` for ``llm`` (``None`` stays ``None``).

    A LangChain chat model or LLM, or any runnable with ``invoke``/``ainvoke`` (e.g. a
    ``prompt | model`` chain), is wrapped in :class:`kgpath.LangChainLLM`; a kgpath LLM is
    returned unchanged.

    Raises
    ------
    ConfigError
        If ``llm`` is none of these.
    """
    if llm is None:
        return None
    if isinstance(llm, BaseLanguageModel):
        return LangChainLLM(llm)
    if isinstance(llm, LLM):
        return llm
    if hasattr(llm, "invoke") and hasattr(llm, "ainvoke"):
        return LangChainLLM(llm)
    raise ConfigError(
        f"llm must be None, a kgpath LLM or a LangChain chat model/runnable, "
        f"got {type(llm).__name__}"
    )
