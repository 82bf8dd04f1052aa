"""LangChain adapters for schema-guided retrieval (kgpath.methods.schema).

Reference: N. Balic, "Schema-Guided Graph Retrieval for Multi-Hop Reasoning", 2026.

* :class:`SchemaGuidedRetriever` - a ``BaseRetriever`` delegating to the core: schema-aware
  decomposition, typed (filter/boost) retrieval per sub-question run concurrently, merged and
  de-duplicated evidence. Each :class:`~langchain_core.documents.Document` is one evidence
  item (node, triple or passage) with the trace - including the sub-questions it answers - in
  ``metadata``.
* LCEL building blocks for the recipe *decompose -> parallel retrieve -> answer*
  (``cookbook/langchain_schema_lcel.py``): :func:`decompose_runnable` (question -> validated
  plan), :func:`merge_sub_question_documents` (per-sub-question document lists -> one
  de-duplicated, tagged list), :func:`format_documents` and :func:`answer_prompt`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import Field, PrivateAttr

from kgpath.build.hierarchy import Hierarchy
from kgpath.build.schema import Schema
from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex
from kgpath.methods.schema import (
    DecompositionPlan,
    EvidenceItem,
    SchemaDecomposer,
    SchemaResult,
    SchemaRetrieverConfig,
)
from kgpath.methods.schema import SchemaGuidedRetriever as CoreSchemaGuidedRetriever
from kgpath.prompts.schema import SCHEMA_ANSWER_PROMPT, SCHEMA_DECOMPOSE_PROMPT
from langchain_kgpath._convert import as_kgpath_embedder as _to_embedder
from langchain_kgpath._convert import as_kgpath_llm as _to_llm

__all__ = [
    "SchemaGuidedRetriever",
    "answer_prompt",
    "decompose_runnable",
    "evidence_to_document",
    "format_documents",
    "merge_sub_question_documents",
]

EvidenceKind = Literal["node", "triple", "passage"]
_KINDS: tuple[EvidenceKind, ...] = ("node", "triple", "passage")
_CFG_FIELDS = frozenset(SchemaRetrieverConfig.__dataclass_fields__)
_LANGCHAIN_CALL_KWARGS = frozenset({"verbose"})


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, str, int, float)):
        return v
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [_jsonable(x) for x in v]
    return str(v)


def evidence_to_document(item: EvidenceItem, result: SchemaResult) -> Document:
    """One merged evidence item as a ``Document``.

    ``id``: the node id, ``"triple:<source>|<relation>|<target>"`` or ``"passage:<id>"``.
    ``metadata``: ``kgpath_method="schema"``, ``evidence_kind``, ``schema_type``, ``score``,
    ``base_score``, ``type_affinity``, ``sub_questions`` (0-based indices),
    ``sub_question_texts``, ``plan_source``, ``provenance``, plus ``node_id``/``name``/``type``
    for nodes and ``source``/``relation``/``target`` for triples.
    """
    meta: dict[str, Any] = {
        "kgpath_method": "schema",
        "evidence_kind": item.kind,
        "schema_type": item.schema_type,
        "score": float(item.score),
        "base_score": float(item.base_score),
        "type_affinity": item.type_affinity,
        "sub_questions": list(item.sub_questions),
        "sub_question_texts": [result.plan.sub_questions[i].text for i in item.sub_questions],
        "plan_source": result.plan.source,
    }
    if item.node is not None:
        doc_id = item.node.id
        meta.update(node_id=item.node.id, name=item.node.name, type=item.node.type,
                    provenance=list(item.node.provenance))
    elif item.edge is not None:
        doc_id = f"triple:{item.key}"
        e = item.edge
        meta.update(source=e.source, relation=e.relation, target=e.target,
                    provenance=list(e.provenance))
    else:
        doc_id = f"passage:{item.key}"
        meta.update(passage_id=item.key, provenance=[item.key])
    return Document(page_content=item.text, id=doc_id, metadata=_jsonable(meta))


class SchemaGuidedRetriever(BaseRetriever):
    """LangChain retriever running kgpath's schema-guided retrieval.

    Returns at most ``k`` documents: the merged evidence of all sub-questions, ranked by
    score across kinds (ties keep nodes before triples before passages), restricted to
    ``include``. Per-call options (keyword arguments of ``invoke``/``ainvoke``): ``k``, any
    :class:`~kgpath.methods.schema.SchemaRetrieverConfig` field, ``involved_types`` (a
    mapping ``{nodes, relations, attributes}``: skip decomposition, retrieve the query as one
    sub-question with these types - what the LCEL recipe uses per sub-question) or ``plan``
    (a ready :class:`~kgpath.methods.schema.DecompositionPlan`).

    The last :class:`~kgpath.methods.schema.SchemaResult` is available as
    :attr:`last_result`.
    """

    core: CoreSchemaGuidedRetriever
    """The kgpath retriever (graph index, schema, decomposer, config)."""
    k: int = 10
    """Maximum number of documents returned."""
    include: tuple[EvidenceKind, ...] = _KINDS
    """Evidence kinds returned."""
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    """:class:`SchemaRetrieverConfig` overrides applied to every call."""

    _last: SchemaResult | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        k = data.get("k", 10)
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            raise ConfigError(f"k must be a positive int, got {k!r}")
        inc = tuple(data.get("include", _KINDS))
        if not inc or any(x not in _KINDS for x in inc):
            raise ConfigError(f"include must be a non-empty subset of {_KINDS}, got {inc!r}")
        if not isinstance(data.get("core"), CoreSchemaGuidedRetriever):
            raise ConfigError(
                "core must be a kgpath.methods.schema.SchemaGuidedRetriever; "
                "use SchemaGuidedRetriever.from_graph(...)"
            )
        super().__init__(**data)
        unknown = set(self.search_kwargs) - _CFG_FIELDS
        if unknown:
            raise ConfigError(f"unknown schema-retriever option(s) {sorted(unknown)}")
        self.core._config(self.search_kwargs)

    @classmethod
    def from_graph(
        cls,
        graph: KnowledgeGraph | GraphIndex,
        schema: Schema,
        *,
        llm: Any = None,
        embeddings: Any = None,
        config: SchemaRetrieverConfig | None = None,
        hierarchy: Hierarchy | None = None,
        decompose_prompt: str = SCHEMA_DECOMPOSE_PROMPT,
        **fields: Any,
    ) -> SchemaGuidedRetriever:
        """Build the core retriever and wrap it.

        ``llm``: a LangChain chat model/LLM (wrapped with :class:`kgpath.LangChainLLM`), a
        kgpath LLM, or ``None`` for the LLM-free heuristic decomposer. ``embeddings``: LangChain
        ``Embeddings``, a kgpath embedder, or ``None`` (offline ``LocalEmbedder``).
        ``fields``: ``k``, ``include``, ``search_kwargs``, ``tags``, ``metadata``, ...
        """
        index = graph if isinstance(graph, GraphIndex) else GraphIndex(
            graph, _to_embedder(embeddings))
        cfg = config or SchemaRetrieverConfig()
        dec = SchemaDecomposer(schema, _to_llm(llm), graph=index.graph,
                               max_sub_questions=cfg.max_sub_questions, prompt=decompose_prompt)
        core = CoreSchemaGuidedRetriever(index, schema, config=cfg, decomposer=dec,
                                         hierarchy=hierarchy)
        return cls(core=core, **fields)

    @property
    def last_result(self) -> SchemaResult | None:
        """The core result of the most recent call."""
        return self._last

    def _options(self, kwargs: Mapping[str, Any]) -> tuple[int, dict[str, Any], Any]:
        kw = {k: v for k, v in kwargs.items() if k not in _LANGCHAIN_CALL_KWARGS}
        k = kw.pop("k", None)
        k = self.k if k is None else k
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            raise ConfigError(f"k must be a positive int, got {k!r}")
        plan = kw.pop("plan", None)
        types = kw.pop("involved_types", None)
        if plan is not None and types is not None:
            raise ConfigError("pass either plan or involved_types, not both")
        if plan is not None and not isinstance(plan, DecompositionPlan):
            raise ConfigError(f"plan must be a DecompositionPlan, got {type(plan).__name__}")
        overrides = {**self.search_kwargs, **kw}
        self.core._config(overrides)  # ConfigError naming unknown options / bad values
        return k, overrides, plan if plan is not None else types

    def _plan(self, query: str, spec: Any) -> DecompositionPlan | None:
        if spec is None or isinstance(spec, DecompositionPlan):
            return spec
        if not isinstance(spec, Mapping):
            raise ConfigError(f"involved_types must be a mapping, got {spec!r}")
        return DecompositionPlan.from_questions(query, [query], spec, schema=self.core.schema)

    def _documents(self, res: SchemaResult, k: int) -> list[Document]:
        self._last = res
        items = [it for it in res.evidence if it.kind in self.include]
        items.sort(key=lambda it: -it.score)
        return [evidence_to_document(it, res) for it in items[:k]]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """Decompose, retrieve sub-questions on a thread pool, merge (core ``retrieve``)."""
        k, overrides, spec = self._options(kwargs)
        res = self.core.retrieve(query, plan=self._plan(query, spec), **overrides)
        return self._documents(res, k)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """Async twin: native async decomposition/embeddings, sub-questions gathered."""
        k, overrides, spec = self._options(kwargs)
        res = await self.core.aretrieve(query, plan=self._plan(query, spec), **overrides)
        return self._documents(res, k)


# ---------------------------------------------------------------------- LCEL pieces
def decompose_runnable(
    schema: Schema,
    llm: Any = None,
    *,
    graph: KnowledgeGraph | None = None,
    max_sub_questions: int = 4,
    prompt: str = SCHEMA_DECOMPOSE_PROMPT,
) -> Runnable[str, DecompositionPlan]:
    """A runnable ``question -> DecompositionPlan`` (sync and native async).

    Same validation as the core: types outside ``schema`` dropped with a warning, malformed
    output repaired or replaced by the whole question; ``llm=None`` uses the LLM-free
    heuristic.
    """
    dec = SchemaDecomposer(schema, _to_llm(llm), graph=graph,
                           max_sub_questions=max_sub_questions, prompt=prompt)

    async def adecompose(q: str) -> DecompositionPlan:
        return await dec.adecompose(q)

    return RunnableLambda(dec.decompose, afunc=adecompose, name="schema_decompose")


def merge_sub_question_documents(
    plan: DecompositionPlan, results: Sequence[Sequence[Document]]
) -> list[Document]:
    """Merge per-sub-question documents: de-duplicate, keep the best score, tag sub-questions.

    Identity is the document ``id`` (else its ``page_content``). Scores are read from
    ``metadata["score"]`` (missing = lowest). Output copies carry ``sub_questions`` and
    ``sub_question_texts`` (the union over the sub-questions that returned them) and are
    ordered by score, then first appearance.
    """
    if len(results) != len(plan.sub_questions):
        raise ConfigError(
            f"{len(results)} result list(s) for {len(plan.sub_questions)} sub-question(s)"
        )
    best: dict[str, Document] = {}
    tags: dict[str, list[int]] = {}
    order: dict[str, int] = {}

    def score(d: Document) -> float:
        s = d.metadata.get("score")
        return float(s) if isinstance(s, (int, float)) else float("-inf")

    for i, docs in enumerate(results):
        for d in docs:
            key = d.id or d.page_content
            tags.setdefault(key, [])
            if i not in tags[key]:
                tags[key].append(i)
            order.setdefault(key, len(order))
            if key not in best or score(d) > score(best[key]):
                best[key] = d
    out = []
    for key, d in best.items():
        meta = dict(d.metadata)
        meta["sub_questions"] = tags[key]
        meta["sub_question_texts"] = [plan.sub_questions[i].text for i in tags[key]]
        out.append(Document(page_content=d.page_content, id=d.id, metadata=meta))
    out.sort(key=lambda d: (-score(d), order[d.id or d.page_content]))
    return out


def format_documents(docs: Sequence[Document]) -> str:
    """Evidence lines ``[kind (type)] text {sub-question 1,2}`` for the answer prompt."""
    lines = []
    for d in docs:
        m = d.metadata
        kind = m.get("evidence_kind", "document")
        typ = f" ({m['schema_type']})" if m.get("schema_type") else ""
        tag = ",".join(str(i + 1) for i in m.get("sub_questions", []))
        lines.append(f"[{kind}{typ}] {d.page_content}" + (f" {{sub-question {tag}}}" if tag
                                                           else ""))
    return "\n".join(lines)


def answer_prompt() -> ChatPromptTemplate:
    """Return the core answer prompt as a ``ChatPromptTemplate``.

    Variables: ``question``, ``sub_questions``, ``evidence``.
    """
    return ChatPromptTemplate.from_template(SCHEMA_ANSWER_PROMPT)
