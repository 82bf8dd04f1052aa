"""Document policies: the core sufficiency gate as a retriever and a compressor; path order.

* :class:`SufficiencyFallbackRetriever` and :class:`SufficiencyCompressor` adapt
  :class:`kgpath.policies.sufficiency.SufficiencyGate` (C2RAG's Eq. 7-9 over any scored
  list, then a fallback). A document's score is the first numeric ``metadata`` value among
  ``score_keys``; when no document has one (e.g. ``InMemoryVectorStore.as_retriever()``)
  the gate scores them with ``embedding`` and records ``kgpath_score_source="embedder"``.
  Every returned document is a copy carrying the gate's trace as ``kgpath_gate_state``,
  ``kgpath_gate_n_eff``, ``kgpath_gate_gamma``, ``kgpath_gate_p``, ``kgpath_gate_action``,
  ``kgpath_gate_source`` and ``kgpath_score_source``.
* :class:`PathOrderCompressor` puts any scored documents in ascending score, the most
  reliable last (PathRAG's Eq. 6 prompt order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
    Callbacks,
)
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, PrivateAttr

from kgpath.errors import ConfigError
from kgpath.facade import check_k
from kgpath.policies.path_order import ascending_order, checked_score
from kgpath.policies.sufficiency import (
    GATE_FIELDS,
    GateDecision,
    SufficiencyGate,
    gate_metadata,
    make_gate,
)
from langchain_kgpath._base import as_kgpath_embedder

__all__ = ["PathOrderCompressor", "SufficiencyCompressor", "SufficiencyFallbackRetriever"]

#: Metadata keys read as a document's score, in order.
SCORE_KEYS = ("kgpath_score", "score", "relevance_score", "_similarity_score",
              "similarity_score")


def first_score(metadata: Mapping[str, Any], keys: Sequence[str]) -> float | None:
    """The first numeric value among ``keys`` of ``metadata`` (non-numbers skipped)."""
    for key in keys:
        v = metadata.get(key)
        if isinstance(v, (int, float, np.number)) and not isinstance(v, bool):
            return float(v)
    return None


def _doc_key(d: Document) -> str:
    return d.id if d.id else "content:" + d.page_content


class _GateAdapter(BaseModel):
    """What the fallback retriever and the compressor share: gate fields, decide, mark."""

    gamma: float = 1.5
    epsilon: float = 0.01
    top_k: int = 3
    mode: Literal["append", "replace"] = "append"
    fallback_k: int | None = None
    score_missing: Literal["embed", "insufficient"] = "embed"
    score_keys: tuple[str, ...] = SCORE_KEYS
    embedding: Any = None

    _gate: SufficiencyGate = PrivateAttr()

    @classmethod
    def _make_gate(cls, data: Mapping[str, Any]) -> SufficiencyGate:
        fields = cls.model_fields
        return make_gate({n: data.get(n, fields[n].default) for n in GATE_FIELDS},
                         as_kgpath_embedder(data.get("embedding")), stacklevel=5)

    def _inputs(self, docs: Sequence[Document]) -> tuple[list[str], list[float | None]]:
        return [d.page_content for d in docs], [first_score(d.metadata, self.score_keys)
                                                for d in docs]

    def _decide(self, query: str, docs: Sequence[Document]) -> GateDecision:
        return self._gate.decide(query, *self._inputs(docs))

    async def _adecide(self, query: str, docs: Sequence[Document]) -> GateDecision:
        return await self._gate.adecide(query, *self._inputs(docs))

    def _combine(self, primary: Sequence[Document], fallback: Sequence[Document] | None,
                 decision: GateDecision) -> list[Document]:
        out = []
        for d, marks in self._gate.combine(primary, fallback, decision, key=_doc_key):
            out.append(Document(page_content=d.page_content, id=d.id,
                                metadata={**d.metadata, **gate_metadata(marks)}))
        return out


def _check_retriever(name: str, value: Any, optional: bool = False) -> None:
    if (value is None and optional) or isinstance(value, BaseRetriever):
        return
    raise ConfigError(f"{name} must be a LangChain BaseRetriever"
                      f"{' or None' if optional else ''}, got {type(value).__name__}")


class SufficiencyFallbackRetriever(_GateAdapter, BaseRetriever):
    """``primary`` guarded by the sufficiency gate; ``fallback`` runs when it is not resolved.

    ``mode="append"`` adds the fallback's documents after the primary ones (duplicates by
    id/content dropped), ``"replace"`` returns them instead; ``fallback_k`` caps them and
    ``k`` (per call too) the final list. Gate parameters as in
    :class:`~kgpath.policies.sufficiency.SufficiencyGateConfig`.
    """

    primary: BaseRetriever
    fallback: BaseRetriever
    k: int | None = None

    def __init__(self, primary: Any = None, fallback: Any = None, gamma: float = 1.5,
                 **data: Any) -> None:
        _check_retriever("primary", primary)
        _check_retriever("fallback", fallback)
        check_k(data.get("k"))
        gate = self._make_gate({**data, "gamma": gamma})
        super().__init__(**{**data, "primary": primary, "fallback": fallback, "gamma": gamma})
        self._gate = gate

    def _final(self, docs: list[Document], kwargs: Mapping[str, Any]) -> list[Document]:
        k = check_k(kwargs.get("k", self.k))
        return docs[:k] if k is not None else docs

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """Primary retrieval, the gate, and the fallback when it is not resolved."""
        cfg = RunnableConfig(callbacks=run_manager.get_child())
        docs = self.primary.invoke(query, config=cfg)
        decision = self._decide(query, docs)
        fb = self.fallback.invoke(query, config=cfg) if decision.use_fallback else None
        return self._final(self._combine(docs, fb, decision), kwargs)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """Async: both retrievers and the gate's embedder are awaited."""
        cfg = RunnableConfig(callbacks=run_manager.get_child())
        docs = await self.primary.ainvoke(query, config=cfg)
        decision = await self._adecide(query, docs)
        fb = await self.fallback.ainvoke(query, config=cfg) if decision.use_fallback else None
        return self._final(self._combine(docs, fb, decision), kwargs)


class SufficiencyCompressor(_GateAdapter, BaseDocumentCompressor):
    """The sufficiency gate as a document compressor.

    Marks the documents as :class:`SufficiencyFallbackRetriever` does; when they are not
    resolved and ``fallback`` is set, its documents for ``query`` are merged in (``mode``).
    Without a fallback the documents are only marked
    (``kgpath_gate_action="no_fallback_configured"``).
    """

    fallback: BaseRetriever | None = None

    def __init__(self, **data: Any) -> None:
        _check_retriever("fallback", data.get("fallback"), optional=True)
        gate = self._make_gate(data)
        super().__init__(**data)
        self._gate = gate

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Gate ``documents``; add the fallback's documents when not resolved."""
        decision = self._decide(query, documents)
        fb = None
        if decision.use_fallback and self.fallback is not None:
            fb = self.fallback.invoke(query, config=RunnableConfig(callbacks=callbacks))
        return self._combine(documents, fb, decision)

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Async :meth:`compress_documents` (gate embedder and fallback awaited)."""
        decision = await self._adecide(query, documents)
        fb = None
        if decision.use_fallback and self.fallback is not None:
            fb = await self.fallback.ainvoke(query, config=RunnableConfig(callbacks=callbacks))
        return self._combine(documents, fb, decision)


class PathOrderCompressor(BaseDocumentCompressor):
    """Reorder any scored documents into ascending score: the best evidence comes last.

    The score is the first ``metadata`` value among ``score_keys`` (kgpath's
    ``kgpath_reliability`` and ``kgpath_score``, then ``reliability``, ``score``,
    ``relevance_score``, ``_similarity_score``). Unscored documents come first; among equal
    scores the one ranked earlier in the input ends up later. ``top_n`` keeps the ``n``
    highest. This is PathRAG's Eq. 6 placement: query first, most reliable evidence last.
    """

    score_keys: tuple[str, ...] = ("kgpath_reliability", "kgpath_score", "reliability",
                                   "score", "relevance_score", "_similarity_score")
    top_n: int | None = None

    def _score(self, doc: Document) -> float:
        key = next((k for k in self.score_keys if doc.metadata.get(k) is not None), None)
        return checked_score(None if key is None else doc.metadata[key],
                             f"metadata[{key!r}] of document {doc.id!r}")

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Return ``documents`` in ascending score (see the class docstring)."""
        return ascending_order(documents, [self._score(d) for d in documents], self.top_n)
