"""LangChain adapters for PathRAG (Chen et al., 2025).

Thin wrappers around :class:`kgpath.methods.pathrag.PathRAGRetriever`, which makes every
decision (section 4.1 keywords and nodes; Eqs. 2-4 resource flow and reliability; the Eq. 5
textual path; the Eq. 6 prompt order):

* :class:`PathRAGRetriever` returns one ``Document`` per relational path, best first;
  ``page_content`` is the textual path (Eq. 5) and ``metadata["reliability"]`` its Eq. 4
  score, with the path structure beside it.
* :class:`PathOrderCompressor` reorders *any* scored documents into ascending score so the
  most reliable one is last in the prompt (Eq. 6); it works after any retriever.
* :data:`PATHRAG_CHAT_PROMPT` is the path-QA ``ChatPromptTemplate`` (``{query}`` first,
  then ``{paths}``) and :func:`format_paths` renders documents into ``{paths}``.

See ``cookbook/langchain_pathrag_lcel.py`` for an LCEL chain.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
    Callbacks,
)
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex
from kgpath.methods.pathrag import PathRAGConfig, PathRAGPath, PathRAGResult
from kgpath.methods.pathrag import PathRAGRetriever as CorePathRAG
from kgpath.prompts.pathrag import PATHRAG_PATH_BLOCK, PATHRAG_QA_PROMPT
from langchain_kgpath._convert import as_kgpath_embedder as _to_embedder
from langchain_kgpath._convert import as_kgpath_llm as _to_llm

__all__ = [
    "PATHRAG_CHAT_PROMPT",
    "PathOrderCompressor",
    "PathRAGRetriever",
    "format_paths",
    "path_to_document",
]

#: Path-based QA prompt (Eq. 6). Variables: ``query`` and ``paths`` (see :func:`format_paths`).
PATHRAG_CHAT_PROMPT = ChatPromptTemplate.from_messages([("human", PATHRAG_QA_PROMPT)])

_FIELDS = frozenset(f.name for f in dataclasses.fields(PathRAGConfig))
_LANGCHAIN_CALL_KWARGS = frozenset({"verbose"})
#: Metadata keys :class:`PathOrderCompressor` looks for, in order.
DEFAULT_SCORE_KEYS = ("reliability", "score", "relevance_score", "_similarity_score")


def path_to_document(path: PathRAGPath, result: PathRAGResult | None = None) -> Document:
    """Convert one kgpath path into a ``Document``.

    ``page_content``: the Eq. 5 textual path. ``metadata``: ``reliability`` (Eq. 4),
    ``path_node_ids``, ``path_node_names``, ``path_edges``, ``reversed_hops``, ``resources``
    (S(v) per node, Eq. 2), ``hops``, ``rank``, ``path`` (compact rendering), ``provenance``
    (passage ids), ``kgpath_method``; from the result ``keywords``, ``keyword_source``,
    ``pool_size``. ``id`` is a stable hash of the node ids.
    """
    meta: dict[str, Any] = dict(path.to_dict())
    meta["provenance"] = list(path.provenance)
    meta["kgpath_method"] = "pathrag"
    if result is not None:
        meta["keywords"] = list(result.keywords)
        meta["keyword_source"] = result.keyword_source
        meta["pool_size"] = result.trace.get("pool_size")
    return Document(page_content=path.text, metadata=meta, id=path.stable_id)


def format_paths(documents: Sequence[Document]) -> str:
    """Render documents, in the given order, as the numbered path blocks of ``{paths}``."""
    return "\n".join(
        PATHRAG_PATH_BLOCK.format(number=i, text=d.page_content) for i, d in enumerate(documents, 1)
    )


class PathRAGRetriever(BaseRetriever):
    """LangChain retriever running kgpath's PathRAG; one ``Document`` per relational path.

    Per-call options (keyword arguments of ``invoke``/``ainvoke``, or ``.bind(...)``): ``k``
    (the paper's ``K``) and any :class:`~kgpath.methods.pathrag.PathRAGConfig` field
    (``num_nodes``, ``alpha``, ``theta``, ``direction``, ``max_hops``, ...).
    Documents come best first; follow with :class:`PathOrderCompressor` for the paper's
    ascending prompt order, or set ``order="prompt"`` to get the core's own prompt
    selection and order (ordering policy and token budget applied).

    Examples
    --------
    >>> from kgpath import HashingEmbedder, KnowledgeGraph
    >>> g = KnowledgeGraph.from_triples([("a", "to", "b"), ("b", "to", "c")])
    >>> r = PathRAGRetriever.from_graph(g, HashingEmbedder(), k=2)
    >>> [d.metadata["path_node_ids"] for d in r.invoke("a to c")]
    [['a', 'b'], ['b', 'c']]
    """

    pathrag: CorePathRAG
    """The core kgpath retriever (graph index, embedder, LLM and base config)."""
    k: int = 15
    """Number of paths returned (``K``, paper default 15)."""
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    """:class:`PathRAGConfig` overrides applied to every call."""
    order: Literal["ranked", "prompt"] = "ranked"
    """``"ranked"``: top-K best first; ``"prompt"``: the core's prompt paths in order."""

    def __init__(self, **data: Any) -> None:
        k = data.get("k", 15)
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            raise ConfigError(f"k must be a positive int, got {k!r}")
        if data.get("order", "ranked") not in ("ranked", "prompt"):
            raise ConfigError(f"order must be 'ranked' or 'prompt', got {data['order']!r}")
        super().__init__(**data)
        if "top_k" in self.search_kwargs or "k" in self.search_kwargs:
            raise ConfigError("pass k as the retriever's k field, not in search_kwargs")
        self._overrides({})  # validates search_kwargs

    @classmethod
    def from_graph(
        cls,
        graph: KnowledgeGraph | GraphIndex,
        embedder: Any = None,
        *,
        llm: Any = None,
        k: int = 15,
        **options: Any,
    ) -> PathRAGRetriever:
        """Build the core retriever over ``graph`` and wrap it.

        ``embedder``: ``None`` (offline ``LocalEmbedder``), a kgpath embedder or a LangChain
        ``Embeddings``. ``llm``: ``None`` (offline keyword extractor, weaker), a kgpath LLM or
        any LangChain chat model / LLM. ``options``: :class:`PathRAGConfig` fields become
        the core config; other keywords (``tags``, ``metadata``, ``order``) go to LangChain.
        """
        cfg_opts = {key: v for key, v in options.items() if key in _FIELDS}
        lc_opts = {key: v for key, v in options.items() if key not in _FIELDS}
        unknown = set(lc_opts) - set(cls.model_fields)
        if unknown:
            raise ConfigError(
                f"unknown option(s) {sorted(unknown)}; PathRAG options are {sorted(_FIELDS)}"
            )
        config = PathRAGConfig(**{"top_k": k, **cfg_opts})
        if isinstance(graph, GraphIndex):
            if embedder is not None:
                raise ConfigError("pass embedder=None with a GraphIndex (it has its own)")
            core = CorePathRAG(graph, llm=_to_llm(llm), config=config)
        elif isinstance(graph, KnowledgeGraph):
            core = CorePathRAG(
                graph, embedder=_to_embedder(embedder), llm=_to_llm(llm), config=config
            )
        else:
            raise ConfigError(
                f"graph must be a KnowledgeGraph or GraphIndex, got {type(graph).__name__}"
            )
        return cls(pathrag=core, k=k, **lc_opts)

    def _overrides(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        kw = {key: v for key, v in kwargs.items() if key not in _LANGCHAIN_CALL_KWARGS}
        k = kw.pop("k", None)
        if "top_k" in kw:
            raise ConfigError("pass k, not top_k, to the LangChain PathRAGRetriever")
        out = {**self.search_kwargs, **kw, "top_k": self.k if k is None else k}
        self.pathrag.resolve_config(**out)  # validates names and values (ConfigError)
        return out

    def _documents(self, result: PathRAGResult) -> list[Document]:
        paths = result.paths if self.order == "ranked" else result.prompt_paths
        return [path_to_document(p, result) for p in paths]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """Run core PathRAG; ``kwargs`` are per-call options."""
        return self._documents(self.pathrag.retrieve(query, **self._overrides(kwargs)))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """Run core PathRAG with the LLM's and embedder's async APIs."""
        overrides = self._overrides(kwargs)
        return self._documents(await self.pathrag.aretrieve(query, **overrides))


class PathOrderCompressor(BaseDocumentCompressor):
    """Reorder any scored documents into ascending score: the best evidence comes last.

    The score of a document is the first numeric ``metadata`` value among ``score_keys``
    (default ``reliability``, ``score``, ``relevance_score``, ``_similarity_score``, so it
    works after PathRAG, rerankers and graph retrievers alike). Documents without a score
    count as least reliable and come first. Among equal scores the document ranked earlier
    in the input ends up later. ``top_n`` keeps only the ``n`` highest scores. This is the
    Eq. 6 placement of PathRAG: query first, most reliable evidence last.
    """

    score_keys: tuple[str, ...] = DEFAULT_SCORE_KEYS
    top_n: int | None = None

    def _score(self, doc: Document) -> float:
        for key in self.score_keys:
            if key in doc.metadata and doc.metadata[key] is not None:
                s = doc.metadata[key]
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
