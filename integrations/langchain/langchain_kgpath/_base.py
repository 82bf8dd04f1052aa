"""One LangChain base for every kgpath method, and the one evidence -> Document converter.

:class:`KgpathRetriever` owns ``_get_relevant_documents`` / ``_aget_relevant_documents``
and delegates to :class:`kgpath.facade.EvidenceRetriever`, which checks every option and
per-call argument once for both framework adapters. A method subclass only names its
method. Every document is :func:`evidence_to_document` of one
:class:`~kgpath.evidence.Evidence`: ``page_content`` is the evidence text (source passages
by default), ``metadata`` is :meth:`Evidence.metadata` (the same keys and values as the
LlamaIndex adapter's nodes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from pydantic import Field, PrivateAttr

from kgpath.embeddings import Embedder, default_embedder
from kgpath.errors import ConfigError
from kgpath.evidence import Evidence
from kgpath.facade import DEFAULT_K, EvidenceRetriever
from kgpath.index import GraphIndex
from kgpath.llm import LLM, as_llm
from kgpath.recipes import (
    FromTextsMixin,
    check_documents,
    picklable,
    rebuild,
    recipe,
)
from langchain_kgpath.embeddings import LangChainEmbedder, kgpath_embedder_of
from langchain_kgpath.llms import wrap_llm

__all__ = ["FRAMEWORK_HINTS", "KgpathRetriever", "as_kgpath_embedder", "as_kgpath_llm",
           "evidence_to_document"]

#: Keyword arguments LangChain itself may forward to ``_get_relevant_documents``.
_LANGCHAIN_CALL_KWARGS = frozenset({"verbose"})

#: Argument names of LlamaIndex or of the kgpath core, answered with LangChain's own name
#: (``""``: this adapter's own arguments, offered as "did you mean").
FRAMEWORK_HINTS = {
    **dict.fromkeys(("embedding", "llm", "k", "output", "graph", "options", "tags",
                     "metadata", "namespace"), ""),
    "similarity_top_k": "that is LlamaIndex's name; LangChain's is 'k'",
    "top_k": "LangChain's name is 'k'",
    "embed_model": "that is LlamaIndex's name; LangChain's is 'embedding'",
    "embeddings": "LangChain's name here is 'embedding'",
    "embedder": "that is the kgpath core's name; LangChain's is 'embedding'",
    "search_kwargs": "that is VectorStoreRetriever's argument; pass k= and the method's "
                     "options directly",
}


def evidence_to_document(e: Evidence) -> Document:
    """One evidence item as a LangChain document (text, id, the contract's metadata)."""
    return Document(page_content=e.text, id=e.id, metadata=e.metadata())


def as_kgpath_embedder(embedding: Any) -> Embedder | None:
    """A kgpath embedder for a LangChain ``Embeddings`` or a kgpath embedder (``None`` stays).

    Raises
    ------
    ConfigError
        If ``embedding`` is neither.
    """
    inner = kgpath_embedder_of(embedding)  # a KgpathEmbeddings: its kgpath embedder
    if inner is not None:
        return inner  # type: ignore[no-any-return]
    if embedding is None or isinstance(embedding, Embedder):
        return embedding
    if isinstance(embedding, Embeddings):
        return LangChainEmbedder(embedding)
    raise ConfigError(
        "embedding must be a kgpath Embedder or a LangChain Embeddings, got "
        f"{type(embedding).__name__}: {embedding!r}"
    )


def as_kgpath_llm(llm: Any) -> LLM | None:
    """A kgpath LLM for a LangChain chat model/LLM/runnable or a kgpath LLM (``None`` stays).

    Raises
    ------
    ConfigError
        If ``llm`` is none of these.
    """
    return None if llm is None else (wrap_llm(llm) or as_llm(llm))  # the entry point's own


class KgpathRetriever(FromTextsMixin, BaseRetriever):
    """A kgpath method as a LangChain retriever; subclasses set :attr:`method` only.

    Parameters (keyword arguments; ``from_graph(graph, **kwargs)`` is the same)
    ----------
    graph
        A :class:`~kgpath.KnowledgeGraph`, a :class:`~kgpath.GraphIndex`, or an already
        built core retriever of the method.
    embedding
        LangChain ``Embeddings`` or a kgpath embedder; ``None``: the bundled offline one.
    llm
        LangChain chat model/LLM/runnable or a kgpath LLM (the methods that use one).
    k
        Number of documents: :data:`kgpath.facade.DEFAULT_K` (5), the same default as the
        core facade and the LlamaIndex adapter's ``similarity_top_k``; ``None``: every
        evidence item the method returns.
    output
        ``"passages"`` (source passages with their text) or ``"native"`` (the method's own
        unit: nodes, paths, evidence, sentences); see :mod:`kgpath.evidence`.
    namespace
        With a :class:`~kgpath.GraphIndex` built by ``from_documents`` (e.g.
        ``KgpathGraphStore.as_retriever("pcr", namespace="acme")``): search only the
        documents whose metadata ``namespace`` (or ``namespace_key=``) is this, live (later
        updates are seen; :mod:`kgpath.index.tenants`). Without it, ``invoke(query,
        namespace=...)`` chooses per call; a namespace no document has gives ``[]``.
        Pickled, a namespaced retriever is a copy of that namespace's documents only.
    **options
        ``config=`` (the method's config object or a preset, e.g.
        ``PathRAGConfig.for_passages()``), the method's config fields (overriding the
        config's) and constructor options (e.g. PCR ``anchor``, ``max_depth``), as its
        registered spec declares them (``config_cls``, ``init_args``, ``call_args``;
        :mod:`kgpath.methods.registry`); anything else raises :class:`~kgpath.ConfigError`
        naming it, the closest and the accepted ones (a LlamaIndex name such as
        ``similarity_top_k=`` is answered with LangChain's). Per-call keyword arguments of
        ``invoke``/``ainvoke``/``batch`` (``k``, ``output``, config fields, per-call
        options) are checked the same way.

    Pickling copies the retriever by value, like ``VectorStoreRetriever`` over an
    ``InMemoryVectorStore``: its graph (with its stored vectors), models, ``config`` and
    options, rebuilt on load (the bundled embedder is reloaded, not copied); a retriever
    over a prebuilt core retriever cannot be pickled. Like ``VectorStoreRetriever`` it is
    not LangChain-serialisable (``dumpd`` gives a ``not_implemented`` stub): a graph is
    data, not constructor arguments.

    A new method needs one line here: ``class MyRetriever(KgpathRetriever): method =
    "mine"`` (its spec registered in :mod:`kgpath.methods.registry`).
    """

    method: ClassVar[str] = ""

    graph: Any = None
    embedding: Any = None
    llm: Any = None
    k: int | None = DEFAULT_K
    output: str = "passages"
    namespace: str | None = None
    """Search only this namespace of a ``GraphIndex`` (see the class docstring)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """The method options given at construction (config fields, per-call defaults)."""

    _retriever: EvidenceRetriever = PrivateAttr()
    _recipe: Any = PrivateAttr()

    def __init__(self, **data: Any) -> None:
        fields = set(type(self).model_fields)
        options = {**(data.pop("options", None) or {}),
                   **{n: data.pop(n) for n in list(data) if n not in fields}}
        # per-call options given at construction become call defaults; a built core takes
        # no config options; defaults are checked against the graph now (PCR's anchor)
        tenant = {} if data.get("namespace") is None else {"namespace": data["namespace"]}
        retriever = EvidenceRetriever.from_options(
            self.method, data.get("graph"), embedder=data.get("embedding"),
            llm=data.get("llm"), k=data.get("k", DEFAULT_K),
            output=data.get("output", "passages"), options={**options, **tenant},
            names=("embedding", "llm"), convert=(as_kgpath_embedder, as_kgpath_llm),
            check_anchor=True, configure_built=False, hints=FRAMEWORK_HINTS)
        super().__init__(**{**data, "options": options})
        self._retriever = retriever
        self._recipe = recipe(
            retriever, data.get("graph"), {"embedding": self.embedding, "llm": self.llm},
            options, {"k": data.get("k", DEFAULT_K), "output": self.output,
                      "tags": self.tags, "metadata": self.metadata})

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled by value as its construction recipe (see the class docstring)."""
        return (rebuild, (type(self), picklable(self._recipe, type(self).__name__)))

    @classmethod
    def from_graph(cls, graph: Any, **kwargs: Any) -> KgpathRetriever:
        """Build the retriever over ``graph`` (see the class docstring for ``kwargs``).

        Without ``embedding`` the bundled offline embedder is used.
        """
        return cls(graph=graph, **kwargs)

    @classmethod
    def from_documents(cls, documents: Any, *, embedding: Any = None, llm: Any = None,
                       extractor: Any = None, chunking: Any = None,
                       **kwargs: Any) -> KgpathRetriever:
        """Build a knowledge graph from raw documents, then the retriever over it.

        ``documents``: LangChain ``Document`` objects, strings or ``(id, text)`` pairs. The
        graph comes from :meth:`kgpath.GraphIndex.from_documents`: offline spaCy
        extraction by default, ``llm`` extracts entities and triples when given (and is
        the method's LLM too), ``extractor`` overrides both. ``kwargs`` as the class.
        """
        documents = check_documents(documents)
        emb = as_kgpath_embedder(embedding) or default_embedder()  # embeds the corpus once
        graph = GraphIndex.from_documents(documents, extractor=extractor,
                                          llm=as_kgpath_llm(llm), chunking=chunking,
                                          embedder=emb).graph
        return cls(graph=graph, embedding=emb, llm=llm, **kwargs)

    @property
    def core(self) -> Any:
        """The core kgpath retriever this adapter delegates to."""
        return self._retriever.core

    def _call_kwargs(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        return {n: v for n, v in kwargs.items() if n not in _LANGCHAIN_CALL_KWARGS}

    def result(self, query: str, **kwargs: Any) -> Any:
        """The method's full native result (plan, paths, hops, ...) for ``query``."""
        return self._retriever.result(query, **self._call_kwargs(kwargs))

    async def aresult(self, query: str, **kwargs: Any) -> Any:
        """Async :meth:`result`."""
        return await self._retriever.aresult(query, **self._call_kwargs(kwargs))

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """Ranked evidence as documents; ``kwargs`` are per-call options."""
        found = self._retriever.retrieve(query, **self._call_kwargs(kwargs))
        return [evidence_to_document(e) for e in found]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """Async twin of :meth:`_get_relevant_documents` (the core's native async path)."""
        found = await self._retriever.aretrieve(query, **self._call_kwargs(kwargs))
        return [evidence_to_document(e) for e in found]
