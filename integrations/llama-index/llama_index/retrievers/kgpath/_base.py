"""The one LlamaIndex base retriever and the one evidence -> ``NodeWithScore`` converter.

Every kgpath retriever for LlamaIndex is a :class:`KgpathRetriever` that names its method;
the base owns ``_retrieve``/``_aretrieve`` and delegates to the framework-free
:class:`kgpath.facade.EvidenceRetriever`, which checks every option and returns ranked
:class:`kgpath.evidence.Evidence`. :func:`evidence_to_node` turns one item into a
``NodeWithScore`` whose metadata is exactly :meth:`Evidence.metadata` (the same keys and
values a LangChain ``Document`` gets). Modelled on LlamaIndex's ``BasePGRetriever``: a
template base whose subclasses fill in one hook (here, the method name).

Models
------
``embed_model`` is a LlamaIndex ``BaseEmbedding`` or a kgpath ``Embedder``; when ``None``,
LlamaIndex's ``Settings.embed_model`` is used if the user set one, else kgpath's bundled
offline embedder (an unset ``Settings`` never triggers LlamaIndex's OpenAI default).
``llm`` likewise falls back to a user-set ``Settings.llm``, else ``None`` (the method's
LLM-free path).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.utils import print_text
from llama_index.retrievers.kgpath.embeddings import LlamaIndexEmbedder, kgpath_embedder_of
from llama_index.retrievers.kgpath.llms import wrap_llm
from llama_index.retrievers.kgpath.prompts import attr_owner, to_core_template

from kgpath.embeddings import Embedder, default_embedder
from kgpath.errors import ConfigError
from kgpath.evidence import METADATA_PREFIX, Evidence
from kgpath.facade import DEFAULT_K, EvidenceRetriever, merge_call_defaults
from kgpath.index import GraphIndex
from kgpath.llm import LLM, as_llm
from kgpath.recipes import (
    FromTextsMixin,
    check_documents,
    picklable,
    rebuild,
    recipe,
)

__all__ = [
    "FRAMEWORK_HINTS",
    "INTERNAL_METADATA_KEYS",
    "KgpathQueryBundle",
    "KgpathRetriever",
    "evidence_to_node",
    "query_call_args",
    "to_kgpath_embedder",
    "to_kgpath_llm",
]


#: Argument names of LangChain or of the kgpath core, answered with LlamaIndex's own name
#: (``""``: this adapter's own arguments, offered as "did you mean").
FRAMEWORK_HINTS = {
    **dict.fromkeys(("embed_model", "llm", "similarity_top_k", "output", "llm_metadata_keys",
                     "callback_manager", "verbose", "namespace"), ""),
    "embedding": "that is LangChain's name; LlamaIndex's is 'embed_model'",
    "embeddings": "LlamaIndex's name is 'embed_model'",
    "embedder": "that is the kgpath core's name; LlamaIndex's is 'embed_model'",
    "k": "that is LangChain's name; LlamaIndex's is 'similarity_top_k'",
    "top_k": "LlamaIndex's name is 'similarity_top_k'",
    "search_kwargs": "that is LangChain's VectorStoreRetriever argument; pass "
                     "similarity_top_k= and the method's options directly",
}

#: Metadata kgpath's chunker adds to every passage (the document id, the chunk's number):
#: kept in the node's metadata, hidden from the LLM and the embedding text like the
#: ``kgpath_`` keys.
INTERNAL_METADATA_KEYS = ("doc_id", "chunk_index")


def _or_settings(value: Any, slot: str) -> Any:
    """``value``, else what the user set in ``Settings`` (read from its private slot).

    The slot is ``None`` unless set, so an unset ``Settings`` never triggers LlamaIndex's
    OpenAI default.
    """
    if value is None:
        from llama_index.core import Settings

        value = getattr(Settings, slot)
    return value


def to_kgpath_embedder(embed_model: Any) -> Embedder | None:
    """A kgpath embedder for ``embed_model`` (``None``: a user-set ``Settings.embed_model``).

    Returns ``None`` when neither is set (the core then loads its offline default).
    """
    embed_model = _or_settings(embed_model, "_embed_model")
    inner = kgpath_embedder_of(embed_model)  # a KgpathEmbedding: its kgpath embedder
    if inner is not None:
        return inner  # type: ignore[no-any-return]
    if isinstance(embed_model, BaseEmbedding):
        return LlamaIndexEmbedder(embed_model)
    if embed_model is None or isinstance(embed_model, Embedder):
        return embed_model  # type: ignore[no-any-return]
    raise ConfigError("embed_model must be None, a kgpath Embedder or a LlamaIndex "
                      f"BaseEmbedding, got {type(embed_model).__name__}")


def to_kgpath_llm(llm: Any) -> LLM | None:
    """A kgpath LLM for ``llm`` (``None``: a user-set ``Settings.llm``, else ``None``).

    A LlamaIndex LLM is wrapped by :func:`~.llms.wrap_llm` (the function this distribution
    registers as its ``kgpath.llm_adapters`` entry point, so the core wraps it the same
    way); anything else goes to :func:`kgpath.llm.as_llm`, which raises
    :class:`~kgpath.errors.ConfigError` naming a value that is no LLM.
    """
    llm = _or_settings(llm, "_llm")
    return None if llm is None else (wrap_llm(llm) or as_llm(llm))


def evidence_to_node(e: Evidence, llm_metadata_keys: Sequence[str] = ()) -> NodeWithScore:
    """One evidence item as a ``NodeWithScore`` (id, text, ``e.metadata()``, float score).

    The ``kgpath_`` keys and kgpath's own passage keys (:data:`INTERNAL_METADATA_KEYS`)
    are hidden from the embedding text and, except those named in ``llm_metadata_keys``
    (e.g. ``("kgpath_path",)``), from the LLM prompt; the source document's own metadata
    stays visible, as LlamaIndex does by default.
    """
    meta = e.metadata()
    trace = [k for k in meta
             if k.startswith(METADATA_PREFIX) or k in INTERNAL_METADATA_KEYS]
    shown = set(llm_metadata_keys)
    node = TextNode(
        id_=e.id, text=e.text, metadata=meta,
        excluded_embed_metadata_keys=trace,
        excluded_llm_metadata_keys=[k for k in trace if k not in shown],
    )
    return NodeWithScore(node=node, score=float(e.score))


@dataclass
class KgpathQueryBundle(QueryBundle):
    """A ``QueryBundle`` with per-call kgpath options (it passes through query engines).

    ``anchor``/``anchor_name`` (PCR), ``k`` and ``options`` (any per-call argument of the
    method, e.g. ``{"max_depth": 2}`` or ``{"output": "native"}``); ``None`` means the
    retriever's default. Unknown options raise :class:`kgpath.ConfigError`.
    """

    anchor: str | None = None
    anchor_name: str | None = None
    k: int | None = None
    options: dict[str, Any] = field(default_factory=dict)


def query_call_args(
    query_bundle: QueryBundle, defaults: Mapping[str, Any] | None = None,
    groups: tuple[frozenset[str], ...] = (),
) -> tuple[str, dict[str, Any]]:
    """Split a (possibly :class:`KgpathQueryBundle`) query into ``(query_str, kwargs)``.

    ``defaults`` are the retriever's per-call defaults; a call naming one option of a group
    (the method spec's ``call_groups``, e.g. PCR's ``anchor`` / ``anchor_name``) replaces
    all the group's defaults.
    """
    call: dict[str, Any] = {}
    if isinstance(query_bundle, KgpathQueryBundle):
        call.update(query_bundle.options)
        for name in ("anchor", "anchor_name", "k"):
            if getattr(query_bundle, name) is not None:
                call[name] = getattr(query_bundle, name)
    return query_bundle.query_str, merge_call_defaults(defaults or {}, call, groups)


def build_evidence_retriever(method: str, graph: Any, *, embed_model: Any, llm: Any,
                             k: int | None, output: str,
                             options: Mapping[str, Any]) -> EvidenceRetriever:
    """:meth:`EvidenceRetriever.from_options` with LlamaIndex's model names and fallbacks."""
    return EvidenceRetriever.from_options(
        method, graph, embedder=embed_model, llm=llm, k=k, output=output, options=options,
        names=("embed_model", "llm"), convert=(to_kgpath_embedder, to_kgpath_llm),
        hints=FRAMEWORK_HINTS)


class KgpathRetriever(FromTextsMixin, BaseRetriever):
    """Base LlamaIndex retriever over one kgpath method; subclasses set :attr:`method`.

    Parameters
    ----------
    graph
        A :class:`kgpath.KnowledgeGraph`, a :class:`kgpath.GraphIndex`, or a built core
        retriever of the method (then ``embed_model``, ``llm`` and build options must not be
        given).
    embed_model, llm
        See the module docstring (``Settings`` fallbacks).
    similarity_top_k
        Number of nodes returned: :data:`kgpath.facade.DEFAULT_K` (5), the same default as
        the core facade and the LangChain adapter's ``k``; ``None``: all the method
        returns.
    output
        ``"passages"`` (default: source passages with their text) or ``"native"`` (the
        method's own unit: PCR nodes, PathRAG paths, ...); see :mod:`kgpath.evidence`.
    llm_metadata_keys
        ``kgpath_`` metadata keys the answer LLM may see (default none).
    namespace
        With a :class:`kgpath.GraphIndex` built by ``from_documents`` (e.g.
        ``KgpathIndex.as_retriever("pcr", namespace="acme")``): search only the documents
        whose metadata ``namespace`` (or ``namespace_key=``) is this, live (later updates
        are seen; :mod:`kgpath.index.tenants`). Without it, ``retrieve_with(query,
        namespace=...)`` chooses per call; a namespace no document has gives ``[]``.
        Pickled, a namespaced retriever is a copy of that namespace's documents only.
    callback_manager, verbose
        As for any LlamaIndex retriever.
    **options
        ``config=`` (the method's config object or a preset, e.g.
        ``PathRAGConfig.for_passages()``), the method's config fields (overriding the
        config's), constructor extras and per-call defaults (e.g. PCR's ``anchor``), as its
        registered spec declares them (``config_cls``, ``init_args``, ``call_args``;
        :mod:`kgpath.methods.registry`); anything else raises :class:`kgpath.ConfigError`
        naming the closest and the accepted ones (a LangChain name such as
        ``embedding=`` is answered with LlamaIndex's). Per call, pass a
        :class:`KgpathQueryBundle`.

    Notes
    -----
    Pickling copies the retriever by value: its graph (with its stored vectors), models,
    ``config`` and options, rebuilt on load (the bundled embedder is reloaded, not
    copied); a retriever over a prebuilt core retriever cannot be pickled.

    A new method needs one line here: ``class MyRetriever(KgpathRetriever): method =
    "mine"`` (its spec registered in :mod:`kgpath.methods.registry`).
    """

    method: ClassVar[str] = ""
    #: prompt name -> (core attribute path, {LlamaIndex variable: core variable})
    prompt_attrs: ClassVar[Mapping[str, tuple[str, Mapping[str, str]]]] = {}

    def __init__(self, graph: Any, *, embed_model: Any = None, llm: Any = None,
                 similarity_top_k: int | None = DEFAULT_K, output: str = "passages",
                 llm_metadata_keys: Sequence[str] = (), namespace: str | None = None,
                 callback_manager: CallbackManager | None = None, verbose: bool = False,
                 **options: Any) -> None:
        tenant = {} if namespace is None else {"namespace": namespace}
        self._er = build_evidence_retriever(self.method, graph, embed_model=embed_model,
                                            llm=llm, k=similarity_top_k, output=output,
                                            options={**options, **tenant})
        self._llm_metadata_keys = tuple(llm_metadata_keys)
        self._recipe = recipe(self._er, graph, {"embed_model": embed_model, "llm": llm},
                              options, {"similarity_top_k": similarity_top_k,
                                        "output": output, "verbose": verbose,
                                        "llm_metadata_keys": self._llm_metadata_keys})
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled by value as its construction recipe (see the class docstring)."""
        return (rebuild, (type(self), picklable(self._recipe, type(self).__name__)))

    @classmethod
    def from_graph(cls, graph: Any, **kwargs: Any) -> KgpathRetriever:
        """Build from a kgpath graph (or ``GraphIndex``); keyword arguments as the class.

        Without ``embed_model`` (and no ``Settings.embed_model``) the bundled offline
        embedder is used, as everywhere in kgpath.
        """
        return cls(graph, **kwargs)

    @classmethod
    def from_documents(cls, documents: Any, *, embed_model: Any = None, llm: Any = None,
                       extractor: Any = None, chunking: Any = None,
                       **kwargs: Any) -> KgpathRetriever:
        """Build a knowledge graph from raw documents, then the retriever over it.

        ``documents``: LlamaIndex ``Document``/``TextNode`` objects, strings or ``(id,
        text)`` pairs. The graph comes from :meth:`kgpath.GraphIndex.from_documents`:
        offline spaCy extraction by default, ``llm`` extracts entities and triples when
        given (and is the method's LLM too), ``extractor`` overrides both. ``kwargs`` as
        the class.
        """
        documents = check_documents(documents)
        emb = to_kgpath_embedder(embed_model) or default_embedder()  # embeds the corpus once
        graph = GraphIndex.from_documents(documents, extractor=extractor,
                                          llm=to_kgpath_llm(llm) if llm else None,
                                          chunking=chunking, embedder=emb).graph
        return cls(graph, embed_model=emb, llm=llm, **kwargs)

    @property
    def kgpath_retriever(self) -> Any:
        """The core retriever (call it directly for the method's full native result)."""
        return self._er.core

    @property
    def config(self) -> Any:
        """The core retriever's effective config (before per-call options)."""
        return self._er.core.config

    @property
    def graph(self) -> Any:
        """The kgpath graph being searched."""
        return self._er.graph

    @property
    def namespace(self) -> str | None:
        """The namespace this retriever is confined to (``None``: the whole graph)."""
        return self._er.namespace

    @property
    def similarity_top_k(self) -> int | None:
        """Default number of nodes returned."""
        return self._er.k

    def _args(self, query_bundle: QueryBundle) -> tuple[str, dict[str, Any]]:
        return query_call_args(query_bundle)

    def result(self, query: QueryBundle | str, **kwargs: Any) -> Any:
        """The method's native result for ``query`` (per-call options as keywords)."""
        q, kw = self._args(query if isinstance(query, QueryBundle) else QueryBundle(query))
        return self._er.result(q, **{**kw, **kwargs})

    async def aresult(self, query: QueryBundle | str, **kwargs: Any) -> Any:
        """Async :meth:`result`."""
        q, kw = self._args(query if isinstance(query, QueryBundle) else QueryBundle(query))
        return await self._er.aresult(q, **{**kw, **kwargs})

    def _nodes(self, items: Sequence[Evidence]) -> list[NodeWithScore]:
        if self._verbose:
            first = items[0].trace if items else {}
            print_text(f"kgpath {self.method}: {len(items)} items"
                       + (f", anchor {first['anchor_id']!r}" if "anchor_id" in first else "")
                       + "\n", color="llama_lavender")
        return [evidence_to_node(e, self._llm_metadata_keys) for e in items]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Run the method and convert its evidence.

        A bundle's own embedding is used when the core can search by vector, as
        LlamaIndex's ``VectorIndexRetriever`` does.
        """
        q, kw = self._args(query_bundle)
        if query_bundle.embedding is not None and hasattr(self._er.core, "retrieve_by_vector"):
            return self._nodes(self._er.retrieve_by_vector(q, query_bundle.embedding, **kw))
        return self._nodes(self._er.retrieve(q, **kw))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Async :meth:`_retrieve` (the core's native async path)."""
        q, kw = self._args(query_bundle)
        if query_bundle.embedding is not None and hasattr(self._er.core, "retrieve_by_vector"):
            await self._er.core.index.abuild()
            return self._nodes(self._er.retrieve_by_vector(q, query_bundle.embedding, **kw))
        return self._nodes(await self._er.aretrieve(q, **kw))

    def retrieve_with(self, query: str, **options: Any) -> list[NodeWithScore]:
        """``retrieve`` with per-call options (``k``, ``anchor``, config fields, ...).

        Goes through ``BaseRetriever.retrieve`` in a :class:`KgpathQueryBundle`, so
        callbacks and instrumentation fire.
        """
        return self.retrieve(KgpathQueryBundle(query, options=options))

    async def aretrieve_with(self, query: str, **options: Any) -> list[NodeWithScore]:
        """Async :meth:`retrieve_with`."""
        return await self.aretrieve(KgpathQueryBundle(query, options=options))

    # ------------------------------------------------------------------ prompts
    def _get_prompts(self) -> PromptDictType:
        out: PromptDictType = {}
        for name, (path, names) in self.prompt_attrs.items():
            value = getattr(*attr_owner(self._er.core, path))
            if isinstance(value, str):  # LlamaIndex variable names map onto the core's
                out[name] = PromptTemplate(value, template_var_mappings=dict(names))
        return out

    def _update_prompts(self, prompts: PromptDictType) -> None:
        for name, tmpl in prompts.items():
            if name not in self.prompt_attrs:
                continue
            if not isinstance(tmpl, (BasePromptTemplate, str)):
                raise ConfigError(f"{name} must be a PromptTemplate, got {type(tmpl).__name__}")
            path, names = self.prompt_attrs[name]
            text = tmpl if isinstance(tmpl, str) else tmpl.get_template()
            self._er.set_core_attr(path, to_core_template(text, names, name))
