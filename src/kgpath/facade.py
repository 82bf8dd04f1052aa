"""One retriever facade over the five methods: options checked once, evidence out.

Both framework adapters delegate here, so argument checking, per-call options, ``k`` and
``output`` behave the same in LlamaIndex and LangChain. :class:`EvidenceRetriever` builds
the method's core retriever from a graph, an embedder, an LLM and keyword options (the
method's config fields plus a few constructor extras) and returns ranked
:class:`~kgpath.evidence.Evidence`.

``k`` cuts the evidence list. For PCR and schema-guided retrieval, whose config field
``k`` is the number of native hits, a ``k`` given to the facade also sets that field
unless it is given explicitly, so ``k`` passages are drawn from ``k`` hits.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kgpath.errors import ConfigError
from kgpath.evidence import Evidence, check_output
from kgpath.graph import KnowledgeGraph

__all__ = ["METHODS", "EvidenceRetriever", "MethodSpec", "method_spec"]


@dataclass(frozen=True)
class MethodSpec:
    """How to build and call one method's core retriever."""

    name: str
    config_cls: type
    build: Callable[..., Any]
    """``build(graph, embedder=, llm=, config=, **init_options) -> core retriever``."""
    init_args: frozenset[str] = frozenset()
    """Constructor options that are not config fields (e.g. ``schema``, ``algorithm``)."""
    call_args: frozenset[str] = frozenset()
    """Per-call options that are not config fields (e.g. ``anchor``, ``plan``)."""
    k_field: str | None = None
    """Config field set from ``k`` when not given explicitly."""

    @property
    def config_fields(self) -> frozenset[str]:
        """The names of the method's config fields."""
        return frozenset(f.name for f in dataclasses.fields(self.config_cls))


def _build_pcr(graph: Any, *, embedder: Any, llm: Any, config: Any, **kw: Any) -> Any:
    from kgpath.methods.pcr import PathConstrainedRetriever

    return PathConstrainedRetriever(graph, embedder=embedder, config=config, **kw)


def _build_pathrag(graph: Any, *, embedder: Any, llm: Any, config: Any, **kw: Any) -> Any:
    from kgpath.methods.pathrag import PathRAGRetriever

    return PathRAGRetriever(graph, embedder=embedder, llm=llm, config=config, **kw)


def _build_c2rag(graph: Any, *, embedder: Any, llm: Any, config: Any, **kw: Any) -> Any:
    from kgpath.methods.c2rag import ConstraintCheckedRetriever

    return ConstraintCheckedRetriever(graph, embedder=embedder, llm=llm, config=config, **kw)


def schema_from_graph(graph: KnowledgeGraph) -> Any:
    """A schema derived from a graph's node types and relation labels.

    Used when a schema-guided retriever is built without a schema; weaker than a designed
    schema (no descriptions or aliases), documented as such.
    """
    from kgpath.build.schema import Schema

    types = sorted({n.type for n in graph.nodes if n.type}) or ["Entity"]
    rels = sorted({e.relation for e in graph.edges if e.relation})
    return Schema.from_dict({"entities": types, "relations": [{"name": r} for r in rels]})


def _build_schema(graph: Any, *, embedder: Any, llm: Any, config: Any, **kw: Any) -> Any:
    from kgpath.methods.schema import SchemaGuidedRetriever

    schema = kw.pop("schema", None)
    if schema is None:
        g = graph if isinstance(graph, KnowledgeGraph) else graph.graph
        schema = schema_from_graph(g)
    return SchemaGuidedRetriever(graph, schema, embedder=embedder, llm=llm, config=config,
                                 **kw)


def _build_traversal(graph: Any, *, embedder: Any, llm: Any, config: Any, **kw: Any) -> Any:
    from kgpath.methods.traversal import TraversalRetriever

    g = graph if isinstance(graph, KnowledgeGraph) else graph.graph
    if isinstance(graph, KnowledgeGraph) and not any(n.type == "chunk" for n in g.nodes):
        graph = _chunk_graph_of(g, embedder)
    return TraversalRetriever(graph, embedder=embedder, llm=llm, config=config, **kw)


def _chunk_graph_of(graph: KnowledgeGraph, embedder: Any) -> KnowledgeGraph:
    """The article's chunk graph over a knowledge graph's passages (traversal needs one)."""
    from kgpath.build.chunk_graph import build_chunk_graph

    if not graph.passages:
        raise ConfigError(
            "traversal needs a chunk graph or a graph with passages; this graph has neither"
        )
    docs = [(p.id, p.text) for p in graph.passages.values()]
    return build_chunk_graph(docs, embedder=embedder)


def _specs() -> dict[str, MethodSpec]:
    from kgpath.methods.c2rag import C2RAGConfig
    from kgpath.methods.pathrag import PathRAGConfig
    from kgpath.methods.pcr import PCRConfig
    from kgpath.methods.schema import SchemaRetrieverConfig
    from kgpath.methods.traversal import TraversalConfig

    return {
        "pcr": MethodSpec("pcr", PCRConfig, _build_pcr,
                          call_args=frozenset({"anchor", "anchor_name"}), k_field="k"),
        "pathrag": MethodSpec("pathrag", PathRAGConfig, _build_pathrag,
                              init_args=frozenset({"keyword_prompt", "qa_prompt"})),
        "c2rag": MethodSpec("c2rag", C2RAGConfig, _build_c2rag,
                            init_args=frozenset({"reranker", "planner_prompt"}),
                            call_args=frozenset({"plan"})),
        "schema": MethodSpec("schema", SchemaRetrieverConfig, _build_schema,
                             init_args=frozenset({"schema", "decomposer", "hierarchy"}),
                             call_args=frozenset({"plan"}), k_field="k"),
        "traversal": MethodSpec("traversal", TraversalConfig, _build_traversal,
                                init_args=frozenset({"algorithm", "llm_prompt",
                                                     "mention_config"}),
                                call_args=frozenset({"algorithm"})),
    }


METHODS: tuple[str, ...] = ("pcr", "pathrag", "c2rag", "schema", "traversal")


def method_spec(method: str) -> MethodSpec:
    """The :class:`MethodSpec` of ``method`` (one of :data:`METHODS`).

    Raises
    ------
    ConfigError
        If ``method`` is unknown.
    """
    if method not in METHODS:
        raise ConfigError(f"method must be one of {METHODS}, got {method!r}")
    return _specs()[method]


def _check_k(k: Any) -> int | None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ConfigError(f"k must be a positive int or None, got {k!r}")
    return k


def _unknown(names: Any, accepted: frozenset[str], where: str) -> None:
    bad = sorted(set(names) - accepted)
    if bad:
        raise ConfigError(
            f"unknown {where} argument(s) {bad}; accepted: {sorted(accepted)}"
        )


class EvidenceRetriever:
    """A method's core retriever behind the evidence contract.

    Parameters
    ----------
    method
        One of :data:`METHODS`.
    graph
        A :class:`~kgpath.graph.KnowledgeGraph` or :class:`~kgpath.index.GraphIndex`, or an
        already built core retriever of that method (then ``embedder``/``llm``/options must
        not be given).
    embedder, llm
        kgpath protocols (adapters convert framework models first).
    k
        Default number of evidence items (``None``: all the method returns).
    output
        ``"passages"`` (default) or ``"native"`` (see :mod:`kgpath.evidence`).
    **options
        The method's config fields and constructor extras; anything else raises.

    Raises
    ------
    ConfigError
        For an unknown method or option (naming it and the accepted ones), a bad ``k`` or
        ``output``, or an invalid config value.

    Examples
    --------
    >>> from kgpath import HashingEmbedder
    >>> g = KnowledgeGraph.from_triples([("a", "to", "b")], {"p": "a goes to b"},
    ...                                 provenance=[["p"]])
    >>> r = EvidenceRetriever("pcr", g, embedder=HashingEmbedder(), k=1)
    >>> [(e.id, e.kind) for e in r.retrieve("where does a go", anchor="a")]
    [('p', 'passage')]
    """

    def __init__(self, method: str, graph: Any, *, embedder: Any = None, llm: Any = None,
                 k: int | None = None, output: str = "passages", **options: Any) -> None:
        self.spec = method_spec(method)
        self.k = _check_k(k)
        self.output = check_output(output)
        if isinstance(graph, (KnowledgeGraph,)) or type(graph).__name__ == "GraphIndex":
            self.core = self._build(graph, embedder, llm, options)
        elif hasattr(graph, "retrieve") and hasattr(graph, "aretrieve"):
            _unknown(options, frozenset(), f"{method} (prebuilt retriever)")
            self.core = graph
        else:
            raise ConfigError(
                f"graph must be a KnowledgeGraph, GraphIndex or a {method} retriever, "
                f"got {type(graph).__name__}"
            )

    def _build(self, graph: Any, embedder: Any, llm: Any, options: Mapping[str, Any]) -> Any:
        spec = self.spec
        fields = spec.config_fields
        _unknown(options, fields | spec.init_args, spec.name)
        cfg_opts = {n: v for n, v in options.items() if n in fields}
        if spec.k_field and self.k is not None and spec.k_field not in cfg_opts:
            cfg_opts[spec.k_field] = self.k
        try:
            config = spec.config_cls(**cfg_opts)
        except TypeError as exc:  # keyword-only dataclass signature problems
            raise ConfigError(f"{spec.name}: {exc}") from exc
        init = {n: v for n, v in options.items() if n in spec.init_args}
        return spec.build(graph, embedder=embedder, llm=llm, config=config, **init)

    @property
    def graph(self) -> KnowledgeGraph:
        """The graph the core retriever searches."""
        return self.core.graph  # type: ignore[no-any-return]

    def _call(self, kwargs: Mapping[str, Any]) -> tuple[int | None, str, dict[str, Any]]:
        spec = self.spec
        accepted = spec.config_fields | spec.call_args | {"k", "output"}
        _unknown(kwargs, accepted, f"{spec.name} call")
        opts = dict(kwargs)
        k = _check_k(opts.pop("k", None)) or self.k
        output = check_output(opts.pop("output", None) or self.output)
        if spec.k_field and k is not None and spec.k_field not in opts \
                and kwargs.get("k") is not None:
            opts[spec.k_field] = k
        return k, output, opts

    def result(self, query: str, **kwargs: Any) -> Any:
        """The method's full native result (per-call options as in :meth:`retrieve`)."""
        _, _, opts = self._call(kwargs)
        return self.core.retrieve(query, **opts)

    async def aresult(self, query: str, **kwargs: Any) -> Any:
        """Async :meth:`result`."""
        _, _, opts = self._call(kwargs)
        return await self.core.aretrieve(query, **opts)

    def retrieve(self, query: str, **kwargs: Any) -> list[Evidence]:
        """Ranked evidence for ``query``.

        ``kwargs``: ``k``, ``output``, the method's per-call arguments (e.g. PCR
        ``anchor``) and config fields for this call only.
        """
        k, output, opts = self._call(kwargs)
        return list(self.core.retrieve(query, **opts).evidence(output, k))

    async def aretrieve(self, query: str, **kwargs: Any) -> list[Evidence]:
        """Async :meth:`retrieve` (the core's native async path)."""
        k, output, opts = self._call(kwargs)
        result = await self.core.aretrieve(query, **opts)
        return list(result.evidence(output, k))
