"""LangChain adapters for C2RAG (constraint-checked retrieval with the N_eff check).

* :class:`C2RAGRetriever` - a ``BaseRetriever`` delegating to
  :class:`kgpath.methods.c2rag.ConstraintCheckedRetriever`; documents carry the constraint,
  hop state, N_eff, bindings and recovery flag in ``metadata``.
* :class:`SufficiencyFallbackRetriever` - wraps any ``primary`` retriever whose documents
  carry a score in metadata; when C2RAG's sufficiency check (Eq. 7-9) finds no dominant
  document among the top ``K_s`` it also queries ``fallback`` and marks what it did.
* :class:`SufficiencyCompressor` - the same check as a ``BaseDocumentCompressor`` (for a
  ``ContextualCompressionRetriever`` or an LCEL step).
* :data:`C2RAG_CHAT_PROMPT` - the evidence-block answer prompt (``{context}``, ``{query}``)
  and :func:`format_evidence_blocks`, which renders documents as Eq. 16 blocks.

Every decision is made by the kgpath core; this module converts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.callbacks.base import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from pydantic import Field

from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex
from kgpath.methods.c2rag import (
    C2RAGConfig,
    C2RAGResult,
    ConstraintCheckedRetriever,
    EvidenceBlock,
    SufficiencyCheck,
    check_sufficiency,
    format_blocks,
)
from kgpath.prompts.c2rag import EVIDENCE_HUMAN_PROMPT, EVIDENCE_SYSTEM_PROMPT
from kgpath.rerank import Reranker
from langchain_kgpath._convert import as_kgpath_embedder as _embedder
from langchain_kgpath._convert import as_kgpath_llm as _llm

__all__ = [
    "C2RAGRetriever",
    "SufficiencyFallbackRetriever",
    "SufficiencyCompressor",
    "C2RAG_CHAT_PROMPT",
    "c2rag_result_to_documents",
    "format_evidence_blocks",
]

_C2RAG_FIELDS = frozenset(f.name for f in dataclasses.fields(C2RAGConfig))
_CALL_KWARGS = frozenset({"verbose"})
DEFAULT_SCORE_KEYS = ("score", "relevance_score", "_similarity_score", "similarity_score")

#: The evidence-block answer prompt: system instructions + ``{context}`` and ``{query}``.
C2RAG_CHAT_PROMPT = ChatPromptTemplate.from_messages(
    [("system", EVIDENCE_SYSTEM_PROMPT), ("human", EVIDENCE_HUMAN_PROMPT)]
)

Granularity = Literal["evidence", "block"]


def _json(value: Any) -> Any:
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_json(v) for v in value]
    if hasattr(value, "item"):  # numpy scalar
        return value.item()
    return str(value)


def _block_meta(result: C2RAGResult, b: EvidenceBlock, number: int) -> dict[str, Any]:
    hop = result.hops[0] if b.constraint_index is None else result.hop(b.constraint_index)
    return {
        "kgpath_method": "c2rag",
        "constraint": b.header,
        "constraint_index": b.constraint_index,
        "block": number,
        "state": b.state,
        "n_eff": b.n_eff,
        "gamma": result.config.gamma,
        "bindings": {k: list(v) for k, v in b.bindings.items() if v},
        "recovery_used": b.recovery_used,
        "plan_source": result.plan.source,
        "hop_trace": {
            "step": hop.step,
            "kind": hop.kind,
            "linearized": hop.linearized,
            "anchors": [a.name for a in hop.anchors],
            "pool_size": hop.pool_size,
            "before_rerank": [c.text for c in hop.initial],
            "after_rerank": [[c.text, c.p] for c in hop.top],
            "n_eff": hop.n_eff,
            "reason": hop.reason,
        },
    }


def c2rag_result_to_documents(
    result: C2RAGResult, *, k: int | None = None, granularity: Granularity = "evidence"
) -> list[Document]:
    """Convert a :class:`~kgpath.methods.c2rag.C2RAGResult` to documents.

    ``"evidence"``: one document per evidence item, interleaved across blocks (rank 1 of
    each block first), ``id`` = passage id, ``metadata["score"]`` = Eq. 7 probability
    (structural) or Eq. 12 reranker score (textual). ``"block"``: one document per
    constraint block (Eq. 16), ``metadata["score"]`` = ``1/N_eff`` (0.0 without candidates).
    """
    docs: list[Document] = []
    if granularity == "block":
        for i, b in enumerate(result.blocks, 1):
            lines = format_blocks([b]).split("\n")
            lines[0] = b.header
            meta = _block_meta(result, b, i)
            meta.update(rank=i, score=0.0 if b.n_eff is None else 1.0 / b.n_eff,
                        evidence_ids=[e.id for e in b.evidence])
            docs.append(Document(page_content="\n".join(lines), metadata=_json(meta)))
        return docs[:k] if k is not None else docs
    numbers = {id(b): i for i, b in enumerate(result.blocks, 1)}
    for rank, (b, e) in enumerate(result.ranked_evidence(), 1):
        meta = _block_meta(result, b, numbers[id(b)])
        meta.update(
            rank=rank, score=float(e.score), evidence_kind=e.kind, evidence_source=e.source,
            supporting_triple=e.triple,
        )
        docs.append(Document(page_content=e.text, id=e.id, metadata=_json(meta)))
    return docs[:k] if k is not None else docs


def format_evidence_blocks(documents: Sequence[Document]) -> str:
    """Render documents as Eq. 16 evidence blocks for :data:`C2RAG_CHAT_PROMPT`.

    Documents from :class:`C2RAGRetriever` are grouped by ``metadata["block"]`` (in block
    order) under their constraint and state; any other document goes, in order, into a
    final block of plain evidence.
    """
    blocks: dict[int, list[Document]] = {}
    other: list[Document] = []
    for d in documents:
        n = d.metadata.get("block")
        if isinstance(n, int) and "constraint" in d.metadata:
            blocks.setdefault(n, []).append(d)
        else:
            other.append(d)
    out = []
    for n in sorted(blocks):
        first = blocks[n][0].metadata
        ne = first.get("n_eff")
        status = f"state: {str(first.get('state', '')).upper()} (N_eff " + (
            "n/a)" if ne is None else f"{ne:.2f})"
        )
        bound = "; ".join(f"{v} = {' / '.join(ns)}" for v, ns in
                          (first.get("bindings") or {}).items() if ns)
        if bound:
            status += f"; {bound}"
        if first.get("recovery_used"):
            status += "; evidence from textual recovery"
        lines = [f"[Block {n}] {first['constraint']}", status]
        lines += [f"- [{d.id or i}] {d.page_content}" for i, d in enumerate(blocks[n], 1)]
        out.append("\n".join(lines))
    if other:
        lines = ["[Evidence]"] + [f"- [{d.id or i}] {d.page_content}"
                                  for i, d in enumerate(other, 1)]
        out.append("\n".join(lines))
    return "\n\n".join(out)


def _check_k(k: Any, name: str = "k") -> None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k <= 0):
        raise ConfigError(f"{name} must be a positive int or None, got {k!r}")


class C2RAGRetriever(BaseRetriever):
    """LangChain retriever running kgpath's C2RAG.

    Each document is one evidence passage (or one constraint block with
    ``granularity="block"``). ``metadata``: ``score`` (float), ``rank``, ``kgpath_method``
    (``"c2rag"``), ``constraint`` (``Lin(τ_i)``), ``constraint_index``, ``block``, ``state``
    (``resolved``/``unresolved``), ``n_eff``, ``gamma``, ``bindings``, ``recovery_used``,
    ``plan_source`` (``llm``/``fallback``/``user``), ``hop_trace`` (anchors, candidates before
    and after rerank with Eq. 7 probabilities, reason) and, for evidence,
    ``evidence_kind``, ``evidence_source``, ``supporting_triple``.

    Per-call options (``invoke(query, k=..., gamma=...)``): ``k`` and any
    :class:`~kgpath.methods.c2rag.C2RAGConfig` field.
    """

    c2rag: ConstraintCheckedRetriever
    """The core retriever (graph, embedder, planner LLM, reranker, base config)."""
    k: int | None = None
    """Maximum number of documents (``None``: all evidence)."""
    granularity: Granularity = "evidence"
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    """:class:`C2RAGConfig` overrides applied to every call."""

    def __init__(self, **data: Any) -> None:
        _check_k(data.get("k"))
        if data.get("granularity", "evidence") not in ("evidence", "block"):
            raise ConfigError(
                f"granularity must be 'evidence' or 'block', got {data['granularity']!r}"
            )
        core = data.get("c2rag")
        if not isinstance(core, ConstraintCheckedRetriever):
            raise ConfigError(
                "c2rag must be a kgpath ConstraintCheckedRetriever, got "
                f"{type(core).__name__}; use C2RAGRetriever.from_graph(graph, ...)"
            )
        super().__init__(**data)
        self._options({})  # validates search_kwargs now

    @classmethod
    def from_graph(
        cls,
        graph: KnowledgeGraph | GraphIndex,
        embedder: Any = None,
        *,
        llm: Any = None,
        reranker: Reranker | None = None,
        config: C2RAGConfig | None = None,
        k: int | None = None,
        granularity: Granularity = "evidence",
        **options: Any,
    ) -> C2RAGRetriever:
        """Build the core retriever and wrap it.

        ``embedder``: ``None`` (offline ``LocalEmbedder``), a kgpath embedder or LangChain
        ``Embeddings``. ``llm``: ``None`` (the weaker LLM-free plan), a kgpath LLM or any
        LangChain chat model/LLM (the planner). ``options``: :class:`C2RAGConfig` fields.
        """
        core = ConstraintCheckedRetriever(
            graph, embedder=_embedder(embedder), llm=_llm(llm), reranker=reranker, config=config
        )
        return cls(c2rag=core, k=k, granularity=granularity, search_kwargs=dict(options))

    def _options(self, kwargs: Mapping[str, Any]) -> tuple[int | None, dict[str, Any]]:
        kw = {key: v for key, v in kwargs.items() if key not in _CALL_KWARGS}
        k = kw.pop("k", None)
        _check_k(k)
        overrides = {**self.search_kwargs, **kw}
        unknown = set(overrides) - _C2RAG_FIELDS
        if unknown:
            raise ConfigError(
                f"unknown C2RAG option(s) {sorted(unknown)}; valid: {sorted(_C2RAG_FIELDS)}"
            )
        if overrides:
            dataclasses.replace(self.c2rag.config, **overrides)  # validate values
        return (self.k if k is None else k), overrides

    def retrieve_result(self, query: str, **kwargs: Any) -> C2RAGResult:
        """Run C2RAG and return the full result (plan, per-hop trace, blocks)."""
        _, overrides = self._options(kwargs)
        return self.c2rag.retrieve(query, **overrides)

    async def aretrieve_result(self, query: str, **kwargs: Any) -> C2RAGResult:
        """Async :meth:`retrieve_result`."""
        _, overrides = self._options(kwargs)
        return await self.c2rag.aretrieve(query, **overrides)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """Run C2RAG synchronously; ``kwargs`` are per-call options."""
        k, overrides = self._options(kwargs)
        result = self.c2rag.retrieve(query, **overrides)
        return c2rag_result_to_documents(result, k=k, granularity=self.granularity)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """Run C2RAG with the planner, embedder and reranker awaited natively."""
        k, overrides = self._options(kwargs)
        result = await self.c2rag.aretrieve(query, **overrides)
        return c2rag_result_to_documents(result, k=k, granularity=self.granularity)


# ====================================================================== sufficiency fallback
class _SufficiencyMixin:
    """Shared logic of the fallback retriever and the compressor."""

    gamma: float
    epsilon: float
    top_k: int
    mode: Literal["append", "replace"]
    score_keys: tuple[str, ...]
    fallback_k: int | None

    @staticmethod
    def _validate(data: Mapping[str, Any]) -> None:
        import math

        for name in ("gamma", "epsilon"):
            v = data.get(name, 1.0)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                    or v <= 0:
                raise ConfigError(f"{name} must be a finite number > 0, got {v!r}")
        top = data.get("top_k", 3)
        if isinstance(top, bool) or not isinstance(top, int) or top <= 0:
            raise ConfigError(f"top_k must be a positive int, got {top!r}")
        _check_k(data.get("fallback_k"), "fallback_k")
        if data.get("mode", "append") not in ("append", "replace"):
            raise ConfigError(f"mode must be 'append' or 'replace', got {data['mode']!r}")
        if float(data.get("gamma", 1.5)) < 1:
            import warnings

            warnings.warn(
                f"gamma={data['gamma']} < 1: N_eff >= 1 always, so every list is "
                "insufficient and the fallback always runs",
                UserWarning,
                stacklevel=3,
            )

    def _score(self, doc: Document) -> float | None:
        for key in self.score_keys:
            v = doc.metadata.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return float(v)
        return None

    def check(self, documents: Sequence[Document]) -> SufficiencyCheck:
        """Eq. 7-9 over the ``top_k`` documents that carry a score."""
        return check_sufficiency(
            [self._score(d) for d in documents], gamma=self.gamma, epsilon=self.epsilon,
            k_s=self.top_k,
        )

    def _action(self, res: SufficiencyCheck, has_fallback: bool) -> str:
        if res.state == "resolved":
            return "kept"
        if not has_fallback:
            return "no_fallback_configured"
        return "fallback_appended" if self.mode == "append" else "fallback_replaced"

    def _mark(
        self, docs: Sequence[Document], res: SufficiencyCheck, action: str, source: str
    ) -> list[Document]:
        out = []
        for i, d in enumerate(docs):
            meta = dict(d.metadata)
            meta.update(
                c2rag_state=res.state,
                c2rag_n_eff=res.n_eff,
                c2rag_gamma=res.gamma,
                c2rag_p=res.probability_of(i) if source == "primary" else None,
                c2rag_action=action,
                c2rag_source=source,
            )
            out.append(Document(page_content=d.page_content, id=d.id, metadata=meta))
        return out

    def _combine(
        self,
        primary: Sequence[Document],
        fallback: Sequence[Document] | None,
        res: SufficiencyCheck,
    ) -> list[Document]:
        action = self._action(res, fallback is not None)
        marked = self._mark(primary, res, action, "primary")
        if fallback is None:
            return marked
        fb = list(fallback)[: self.fallback_k] if self.fallback_k else list(fallback)
        fb_marked = self._mark(fb, res, action, "fallback")
        if self.mode == "replace":
            return fb_marked
        seen = {_key(d) for d in marked}
        return marked + [d for d in fb_marked if _key(d) not in seen]


def _key(d: Document) -> str:
    return d.id if d.id else "content:" + d.page_content


class SufficiencyFallbackRetriever(_SufficiencyMixin, BaseRetriever):
    """``primary`` retriever guarded by C2RAG's sufficiency check, with a ``fallback``.

    The ``top_k`` (``K_s``) best documents of ``primary`` - scored by the first numeric
    ``metadata`` key among ``score_keys`` - are normalised by Eq. 7 and
    ``N_eff = 1/Σp²`` (Eq. 8) is compared with ``gamma`` (Eq. 9). If ``N_eff <= gamma``
    the primary documents are returned; otherwise ``fallback`` is also invoked and its
    documents appended (``mode="append"``, duplicates by id/content dropped) or returned
    instead (``mode="replace"``). Unscored documents do not enter the distribution; no
    scored document means insufficient.

    Every returned document is a copy whose metadata holds ``c2rag_state``,
    ``c2rag_n_eff``, ``c2rag_gamma``, ``c2rag_p``, ``c2rag_action`` (``kept``,
    ``fallback_appended``, ``fallback_replaced``) and ``c2rag_source``
    (``primary``/``fallback``). ``k`` (per call too) caps the final list.

    ``epsilon`` is in the scores' units (0.01 for cosine similarities).
    """

    primary: BaseRetriever
    fallback: BaseRetriever
    gamma: float = 1.5
    epsilon: float = 0.01
    top_k: int = 3
    mode: Literal["append", "replace"] = "append"
    score_keys: tuple[str, ...] = DEFAULT_SCORE_KEYS
    fallback_k: int | None = None
    k: int | None = None

    def __init__(
        self,
        primary: BaseRetriever | None = None,
        fallback: BaseRetriever | None = None,
        gamma: float = 1.5,
        **data: Any,
    ) -> None:
        data.update(primary=primary, fallback=fallback, gamma=gamma)
        for name in ("primary", "fallback"):
            if not isinstance(data[name], BaseRetriever):
                raise ConfigError(
                    f"{name} must be a LangChain BaseRetriever, got {type(data[name]).__name__}"
                )
        _check_k(data.get("k"))
        self._validate(data)
        super().__init__(**data)

    def _final(self, docs: list[Document], kwargs: Mapping[str, Any]) -> list[Document]:
        k = kwargs.get("k", self.k)
        _check_k(k)
        return docs[:k] if k is not None else docs

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """Primary retrieval, the check, and the fallback when it fails."""
        cfg = RunnableConfig(callbacks=run_manager.get_child())
        docs = self.primary.invoke(query, config=cfg)
        res = self.check(docs)
        fb = self.fallback.invoke(query, config=cfg) if res.state != "resolved" else None
        return self._final(self._combine(docs, fb, res), kwargs)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """Async: both retrievers are awaited (``ainvoke``)."""
        cfg = RunnableConfig(callbacks=run_manager.get_child())
        docs = await self.primary.ainvoke(query, config=cfg)
        res = self.check(docs)
        fb = await self.fallback.ainvoke(query, config=cfg) if res.state != "resolved" else None
        return self._final(self._combine(docs, fb, res), kwargs)


class SufficiencyCompressor(_SufficiencyMixin, BaseDocumentCompressor):
    """The sufficiency check as a document compressor.

    ``compress_documents(documents, query)`` returns the documents marked as in
    :class:`SufficiencyFallbackRetriever`; when they fail the check and a ``fallback``
    retriever is configured it is invoked with ``query`` and merged in (``mode``). Without
    a fallback the documents are only marked (``c2rag_action="no_fallback_configured"``),
    so a downstream step can branch on ``c2rag_state``.
    """

    fallback: BaseRetriever | None = None
    gamma: float = 1.5
    epsilon: float = 0.01
    top_k: int = 3
    mode: Literal["append", "replace"] = "append"
    score_keys: tuple[str, ...] = DEFAULT_SCORE_KEYS
    fallback_k: int | None = None

    def __init__(self, **data: Any) -> None:
        fb = data.get("fallback")
        if fb is not None and not isinstance(fb, BaseRetriever):
            raise ConfigError(
                f"fallback must be a LangChain BaseRetriever or None, got {type(fb).__name__}"
            )
        self._validate(data)
        super().__init__(**data)

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Check ``documents``; add the fallback's documents when insufficient."""
        res = self.check(documents)
        fb = None
        if res.state != "resolved" and self.fallback is not None:
            fb = self.fallback.invoke(query, config=RunnableConfig(callbacks=callbacks))
        return self._combine(documents, fb, res)

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Async :meth:`compress_documents` (the fallback is awaited)."""
        res = self.check(documents)
        fb = None
        if res.state != "resolved" and self.fallback is not None:
            fb = await self.fallback.ainvoke(query, config=RunnableConfig(callbacks=callbacks))
        return self._combine(documents, fb, res)
