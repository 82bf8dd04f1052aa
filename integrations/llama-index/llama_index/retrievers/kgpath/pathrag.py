"""LlamaIndex adapters for PathRAG (Chen et al., 2025).

Thin wrappers around :class:`kgpath.methods.pathrag.PathRAGRetriever`, which makes every
decision (keywords and node retrieval, section 4.1; resource flow and path reliability,
Eqs. 2-4; the Eq. 5 textual path; the Eq. 6 prompt order):

* :class:`PathRAGRetriever` returns one ``NodeWithScore`` per relational path, score =
  reliability (Eq. 4), text = the textual path (Eq. 5), path structure in metadata.
* :class:`PathOrderPostprocessor` reorders *any* scored node list into ascending score, so
  the most reliable evidence lands at the end of the prompt (Eq. 6). It works after any
  retriever.
* :data:`PATHRAG_QA_TEMPLATE` is the path-QA ``PromptTemplate`` (``{query_str}`` first,
  ``{context_str}`` after it) and :data:`PATHRAG_KEYWORD_TEMPLATE` the keyword prompt;
  both are exposed through ``get_prompts``/``update_prompts`` of the retriever.
* :func:`pathrag_query_engine` wires all three into a ``RetrieverQueryEngine``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

import numpy as np
from llama_index.core.bridge.pydantic import Field
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import PromptTemplate
from llama_index.core.prompts.base import BasePromptTemplate
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.prompts.prompt_type import PromptType
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.retrievers.kgpath._convert import to_kgpath_embedder as _to_embedder
from llama_index.retrievers.kgpath._convert import to_kgpath_llm as _to_llm

from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex
from kgpath.methods.pathrag import PathRAGConfig, PathRAGPath, PathRAGResult
from kgpath.methods.pathrag import PathRAGRetriever as KgPathRAGRetriever
from kgpath.prompts.pathrag import PATHRAG_KEYWORD_PROMPT, PATHRAG_QA_PROMPT

__all__ = [
    "PATHRAG_KEYWORD_TEMPLATE",
    "PATHRAG_QA_TEMPLATE",
    "PathOrderPostprocessor",
    "PathRAGRetriever",
    "path_to_node_with_score",
    "pathrag_query_engine",
]

#: Path-based QA prompt (Eq. 6): the question first, then the retrieved paths in the order
#: the node list has (ascending reliability after :class:`PathOrderPostprocessor`).
PATHRAG_QA_TEMPLATE = PromptTemplate(
    PATHRAG_QA_PROMPT,
    prompt_type=PromptType.QUESTION_ANSWER,
    template_var_mappings={"query_str": "query", "context_str": "paths"},
)

#: Keyword-extraction prompt of section 4.1 (``{query_str}``), answered with JSON.
PATHRAG_KEYWORD_TEMPLATE = PromptTemplate(
    PATHRAG_KEYWORD_PROMPT,
    prompt_type=PromptType.CUSTOM,
    template_var_mappings={"query_str": "query"},
)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def path_to_node_with_score(
    path: PathRAGPath, result: PathRAGResult | None = None
) -> NodeWithScore:
    """Convert one kgpath path into a ``NodeWithScore`` (score = Eq. 4 reliability).

    Text is the Eq. 5 textual path. Metadata: ``path_node_ids``, ``path_node_names``,
    ``path_edges`` (source, target, relation), ``reversed_hops``, ``resources`` (S(v) per
    node, Eq. 2), ``reliability``, ``hops``, ``rank``, ``path`` (compact rendering),
    ``provenance`` (passage ids of nodes and edges), ``kgpath_method``, and from the result
    ``keywords``, ``keyword_source``, ``pool_size``. All metadata is hidden from the LLM
    and embedding text: the textual path already is the context.
    """
    meta: dict[str, Any] = dict(path.to_dict())
    meta["provenance"] = list(path.provenance)
    meta["kgpath_method"] = "pathrag"
    if result is not None:
        meta["keywords"] = list(result.keywords)
        meta["keyword_source"] = result.keyword_source
        meta["pool_size"] = result.trace.get("pool_size")
    meta = _jsonable(meta)
    node = TextNode(
        id_=path.stable_id,
        text=path.text,
        metadata=meta,
        excluded_embed_metadata_keys=list(meta),
        excluded_llm_metadata_keys=list(meta),
    )
    return NodeWithScore(node=node, score=float(path.reliability))


def _query_var(prompt: BasePromptTemplate, names: tuple[str, ...]) -> str:
    """The caller-side variable name of ``prompt`` that receives the first of ``names``."""
    tvars = set(getattr(prompt, "template_vars", []) or [])
    mapping = prompt.template_var_mappings or {}
    for name in names:
        if name in tvars or mapping.get(name) in tvars:
            return name
    raise ConfigError(f"prompt must use one of the variables {names}, it has {sorted(tvars)}")


class PathRAGRetriever(BaseRetriever):
    """LlamaIndex retriever running kgpath's PathRAG.

    Each retrieved relational path becomes a ``NodeWithScore`` (see
    :func:`path_to_node_with_score`), best first. Put :class:`PathOrderPostprocessor` after
    it (or use :func:`pathrag_query_engine`) to get the paper's ascending prompt order.

    Parameters
    ----------
    retriever
        A :class:`kgpath.methods.pathrag.PathRAGRetriever`, or a ``GraphIndex`` /
        ``KnowledgeGraph`` from which one is built with ``embedder``, ``llm``, ``config``.
    embedder
        kgpath ``Embedder`` or LlamaIndex ``BaseEmbedding`` (only when building).
    llm
        Keyword-extraction LLM, kgpath ``LLM`` or LlamaIndex ``LLM`` (only when building);
        ``None`` uses kgpath's offline keyword extractor (weaker).
    config
        :class:`PathRAGConfig` (only when building; default: the paper's N=40, K=15).
    top_k
        Overrides ``K``.
    order
        ``"ranked"`` returns the top-K paths best first; ``"prompt"`` returns the paths the
        core placed in its prompt, in prompt order (ordering policy and token budget applied).
    """

    def __init__(
        self,
        retriever: KgPathRAGRetriever | GraphIndex | KnowledgeGraph,
        *,
        embedder: Any = None,
        llm: Any = None,
        config: PathRAGConfig | None = None,
        top_k: int | None = None,
        order: Literal["ranked", "prompt"] = "ranked",
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if isinstance(retriever, KgPathRAGRetriever):
            if embedder is not None or llm is not None or config is not None:
                raise ConfigError(
                    "embedder/llm/config are only used when building from a graph or index; "
                    "set them on the kgpath PathRAGRetriever instead"
                )
            core = retriever
        elif isinstance(retriever, (GraphIndex, KnowledgeGraph)):
            core = KgPathRAGRetriever(
                retriever, embedder=_to_embedder(embedder), llm=_to_llm(llm), config=config
            )
        else:
            raise ConfigError(
                "retriever must be a kgpath PathRAGRetriever, GraphIndex or KnowledgeGraph, "
                f"got {type(retriever).__name__}"
            )
        if order not in ("ranked", "prompt"):
            raise ConfigError(f"order must be 'ranked' or 'prompt', got {order!r}")
        self._core = core
        self._overrides: dict[str, Any] = {}
        if top_k is not None:
            core.resolve_config(top_k=top_k)  # validates
            self._overrides["top_k"] = top_k
        self._order = order
        self._keyword_template: BasePromptTemplate = PATHRAG_KEYWORD_TEMPLATE
        self._qa_template: BasePromptTemplate = PATHRAG_QA_TEMPLATE
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @property
    def core(self) -> KgPathRAGRetriever:
        """The wrapped kgpath retriever."""
        return self._core

    @property
    def top_k(self) -> int:
        """``K`` used for retrieval."""
        return int(self._overrides.get("top_k", self._core.config.top_k))

    def _nodes(self, result: PathRAGResult) -> list[NodeWithScore]:
        paths = result.paths if self._order == "ranked" else result.prompt_paths
        return [path_to_node_with_score(p, result) for p in paths]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(self._core.retrieve(query_bundle.query_str, **self._overrides))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(await self._core.aretrieve(query_bundle.query_str, **self._overrides))

    # ------------------------------------------------------------------ prompts
    def _get_prompts(self) -> PromptDictType:
        return {"keyword_prompt": self._keyword_template, "path_qa_prompt": self._qa_template}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "keyword_prompt" in prompts:
            kw_tmpl = prompts["keyword_prompt"]
            var = _query_var(kw_tmpl, ("query_str", "query"))
            self._keyword_template = kw_tmpl
            self._core.keyword_prompt = _keyword_formatter(kw_tmpl, var)
        if "path_qa_prompt" in prompts:
            qa_tmpl = prompts["path_qa_prompt"]
            qv = _query_var(qa_tmpl, ("query_str", "query"))
            cv = _query_var(qa_tmpl, ("context_str", "paths"))
            self._qa_template = qa_tmpl
            self._core.qa_prompt = _qa_formatter(qa_tmpl, qv, cv)


def _keyword_formatter(tmpl: BasePromptTemplate, var: str) -> Callable[[str], str]:
    def fmt(query: str) -> str:
        values: dict[str, Any] = {var: query}
        return tmpl.format(**values)

    return fmt


def _qa_formatter(tmpl: BasePromptTemplate, qv: str, cv: str) -> Callable[[str, str], str]:
    def fmt(query: str, paths: str) -> str:
        values: dict[str, Any] = {qv: query, cv: paths}
        return tmpl.format(**values)

    return fmt


class PathOrderPostprocessor(BaseNodePostprocessor):
    """Reorder any scored nodes into ascending score: the best evidence comes last (Eq. 6).

    Works after any retriever. The score is ``node.score`` or, with ``score_key``, a numeric
    metadata value (e.g. ``"reliability"``). Nodes without a score count as least reliable
    and come first. Among equal scores the node ranked earlier in the input ends up later
    (closer to the question's answer slot). ``top_n`` keeps only the ``n`` highest scores.
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
        if self.score_key is None:
            s = node.score
        else:
            s = node.node.metadata.get(self.score_key)
        if s is None:
            return float("-inf")
        if isinstance(s, bool) or not isinstance(s, (int, float, np.number)):
            raise ConfigError(
                f"score {s!r} of node {node.node.node_id!r} (key {self.score_key!r}) "
                "is not a number"
            )
        return float(s)

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if self.top_n is not None and (isinstance(self.top_n, bool) or self.top_n < 0):
            raise ConfigError(f"top_n must be None or an int >= 0, got {self.top_n!r}")
        keyed = [(self._score(n), -i, n) for i, n in enumerate(nodes)]
        if self.top_n is not None:
            keyed = sorted(keyed, key=lambda t: (t[0], t[1]), reverse=True)[: self.top_n]
        keyed.sort(key=lambda t: (t[0], t[1]))
        return [n for _, _, n in keyed]


def pathrag_query_engine(
    retriever: PathRAGRetriever, *, llm: Any = None, **kwargs: Any
) -> RetrieverQueryEngine:
    """Build a ``RetrieverQueryEngine`` with PathRAG's prompt order and path-QA prompt.

    Appends :class:`PathOrderPostprocessor` (ascending reliability) after any
    ``node_postprocessors`` given in ``kwargs``, so nothing reorders the paths afterwards,
    and uses the retriever's ``path_qa_prompt`` as ``text_qa_template`` unless one is
    given. ``llm`` is any LlamaIndex LLM (``None``: LlamaIndex's ``Settings.llm``).
    """
    post = list(kwargs.pop("node_postprocessors", []) or [])
    post.append(PathOrderPostprocessor())
    kwargs.setdefault("text_qa_template", retriever.get_prompts()["path_qa_prompt"])
    return RetrieverQueryEngine.from_args(retriever, llm=llm, node_postprocessors=post, **kwargs)
