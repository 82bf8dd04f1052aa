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

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
    Callbacks,
)
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from pydantic import PrivateAttr

from kgpath.errors import ConfigError
from kgpath.evidence import METADATA_PREFIX
from kgpath.policies.sufficiency import GateDecision, SufficiencyGate, SufficiencyGateConfig
from langchain_kgpath._base import as_kgpath_embedder

__all__ = ["PathOrderCompressor", "SufficiencyCompressor", "SufficiencyFallbackRetriever"]

#: Metadata keys read as a document's score, in order.
SCORE_KEYS = ("kgpath_score", "score", "relevance_score", "_similarity_score",
              "similarity_score")
_GATE_FIELDS = ("gamma", "epsilon", "top_k", "mode", "fallback_k", "score_missing")


def _score_of(doc: Document, keys: Sequence[str]) -> float | None:
    for key in keys:
        v = doc.metadata.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return None


def _doc_key(d: Document) -> str:
    return d.id if d.id else "content:" + d.page_content


class _GateAdapter:
    """What the fallback retriever and the compressor share: build, decide, mark."""

    gamma: float
    epsilon: float
    top_k: int
    mode: Literal["append", "replace"]
    fallback_k: int | None
    score_missing: Literal["embed", "insufficient"]
    score_keys: tuple[str, ...]
    embedding: Any
    _gate: SufficiencyGate

    @classmethod
    def _make_gate(cls, data: Mapping[str, Any]) -> SufficiencyGate:
        fields = cls.model_fields  # type: ignore[attr-defined]
        cfg = SufficiencyGateConfig(**{n: data.get(n, fields[n].default) for n in _GATE_FIELDS})
        if cfg.gamma < 1:
            warnings.warn(f"gamma={cfg.gamma} < 1: N_eff >= 1 always, so every list is "
                          "insufficient and the fallback always runs", UserWarning, stacklevel=4)
        return SufficiencyGate(cfg, embedder=as_kgpath_embedder(data.get("embedding")))

    def _inputs(self, docs: Sequence[Document]) -> tuple[list[str], list[float | None]]:
        return [d.page_content for d in docs], [_score_of(d, self.score_keys) for d in docs]

    def _decide(self, query: str, docs: Sequence[Document]) -> GateDecision:
        return self._gate.decide(query, *self._inputs(docs))

    async def _adecide(self, query: str, docs: Sequence[Document]) -> GateDecision:
        return await self._gate.adecide(query, *self._inputs(docs))

    def _combine(self, primary: Sequence[Document], fallback: Sequence[Document] | None,
                 decision: GateDecision) -> list[Document]:
        out = []
        for d, marks in self._gate.combine(primary, fallback, decision, key=_doc_key):
            meta = {**d.metadata, **{METADATA_PREFIX + k: v for k, v in marks.items()}}
            out.append(Document(page_content=d.page_content, id=d.id, metadata=meta))
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
    gamma: float = 1.5
    epsilon: float = 0.01
    top_k: int = 3
    mode: Literal["append", "replace"] = "append"
    fallback_k: int | None = None
    score_missing: Literal["embed", "insufficient"] = "embed"
    score_keys: tuple[str, ...] = SCORE_KEYS
    embedding: Any = None
    k: int | None = None

    _gate: SufficiencyGate = PrivateAttr()

    def __init__(self, primary: Any = None, fallback: Any = None, gamma: float = 1.5,
                 **data: Any) -> None:
        _check_retriever("primary", primary)
        _check_retriever("fallback", fallback)
        _check_k(data.get("k"))
        gate = self._make_gate({**data, "gamma": gamma})
        super().__init__(**{**data, "primary": primary, "fallback": fallback, "gamma": gamma})
        self._gate = gate

    def _final(self, docs: list[Document], kwargs: Mapping[str, Any]) -> list[Document]:
        k = kwargs.get("k", self.k)
        _check_k(k)
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
    gamma: float = 1.5
    epsilon: float = 0.01
    top_k: int = 3
    mode: Literal["append", "replace"] = "append"
    fallback_k: int | None = None
    score_missing: Literal["embed", "insufficient"] = "embed"
    score_keys: tuple[str, ...] = SCORE_KEYS
    embedding: Any = None

    _gate: SufficiencyGate = PrivateAttr()

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


def _check_k(k: Any) -> None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k <= 0):
        raise ConfigError(f"k must be a positive int or None, got {k!r}")


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
        for key in self.score_keys:
            s = doc.metadata.get(key)
            if s is None:
                continue
            if isinstance(s, bool) or not isinstance(s, (int, float)) or math.isnan(s):
                raise ConfigError(
                    f"metadata[{key!r}] = {s!r} of document {doc.id!r} is not a number"
                )
            return float(s)
        return float("-inf")

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Return ``documents`` in ascending score (see the class docstring)."""
        if self.top_n is not None and (isinstance(self.top_n, bool) or self.top_n < 0):
            raise ConfigError(f"top_n must be None or an int >= 0, got {self.top_n!r}")
        keyed = [(self._score(d), -i, d) for i, d in enumerate(documents)]
        if self.top_n is not None:
            keyed = sorted(keyed, key=lambda t: (t[0], t[1]), reverse=True)[: self.top_n]
        keyed.sort(key=lambda t: (t[0], t[1]))
        return [d for _, _, d in keyed]
