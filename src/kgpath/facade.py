"""One retriever facade over every registered method: options checked once, evidence out.

Both framework adapters delegate here, so argument checking, per-call options, ``k`` and
``output`` behave the same in LlamaIndex and LangChain. :class:`EvidenceRetriever` builds
the method's core retriever from a graph, an embedder, an LLM and keyword options (the
method's config fields plus a few constructor extras) and returns ranked
:class:`~kgpath.evidence.Evidence`. What a method accepts comes from its spec in the
method registry (:mod:`kgpath.methods.registry`); this module names no method.

``k`` cuts the evidence list. For a method whose spec names a ``k_field`` (PCR,
schema-guided and graph-augmented retrieval: the number of native hits), a ``k`` given to
the facade also sets that field unless it is given explicitly, so ``k`` passages are drawn
from ``k`` hits.
:meth:`EvidenceRetriever.from_options` is how both adapters build it: per-call options
given at construction become per-call defaults, a config field ``k`` stays the method's,
and a built core gets its config fields applied to a copy.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kgpath.errors import ConfigError
from kgpath.evidence import Evidence, check_output
from kgpath.graph import KnowledgeGraph
from kgpath.methods import registry
from kgpath.methods.registry import MethodSpec, RegisteredMethods

__all__ = [
    "METHODS",
    "EvidenceRetriever",
    "check_k",
    "check_names",
    "is_built",
    "merge_call_defaults",
    "method_spec",
    "with_config",
]


METHODS: Sequence[str] = RegisteredMethods()
"""The registered methods, a live view of :func:`kgpath.methods.registry.method_names`:
the five papers' methods, kgpath's graph-augmented dense retrieval (an extension), then
any method registered at run time."""


def method_spec(method: str) -> MethodSpec:
    """The :class:`~kgpath.methods.registry.MethodSpec` of a registered ``method``.

    Raises
    ------
    ConfigError
        If ``method`` is not registered (naming the registered ones).
    """
    return registry.method_spec(method)


def check_k(k: Any) -> int | None:
    """``k`` if it is a positive int or ``None``; else :class:`ConfigError`."""
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ConfigError(f"k must be a positive int or None, got {k!r}")
    return k


def check_names(names: Any, accepted: frozenset[str], where: str) -> None:
    """:class:`ConfigError` naming the ``names`` not ``accepted`` and the accepted ones."""
    bad = sorted(set(names) - accepted)
    if bad:
        raise ConfigError(
            f"unknown {where} argument(s) {bad}; accepted: {sorted(accepted)}"
        )


def is_built(graph: Any) -> bool:
    """Whether ``graph`` is an already built core retriever (not a graph or index)."""
    if isinstance(graph, KnowledgeGraph) or type(graph).__name__ == "GraphIndex":
        return False
    return hasattr(graph, "retrieve") and hasattr(graph, "aretrieve")


def with_config(core: Any, spec: MethodSpec, k: int | None, options: dict[str, Any]) -> Any:
    """A built core retriever with the config fields of ``options`` applied (all popped).

    A shallow copy shares the core's index (embeddings, FAISS, BM25) but not its config,
    so the caller's retriever is left untouched. ``k`` sets :attr:`MethodSpec.k_field`
    unless ``options`` names it.
    """
    bad = sorted(set(options) - spec.config_fields)
    if bad:
        raise ConfigError(f"unknown {spec.name} argument(s) {bad} for a prebuilt retriever; "
                          f"accepted: {sorted(spec.config_fields | spec.call_args)}")
    fields = {n: options.pop(n) for n in list(options)}
    if spec.k_field and k is not None:
        fields.setdefault(spec.k_field, k)
    if not fields:
        return core
    core = copy.copy(core)
    core.config = dataclasses.replace(core.config, **fields)
    return core


def merge_call_defaults(defaults: Mapping[str, Any], call: Mapping[str, Any],
                        groups: tuple[frozenset[str], ...] = ()) -> dict[str, Any]:
    """Per-call arguments over the defaults; a call naming one of a group drops all its defaults.

    ``groups`` are the method's :attr:`~kgpath.methods.registry.MethodSpec.call_groups`.

    >>> anchor = frozenset({"anchor", "anchor_name"})
    >>> merge_call_defaults({"anchor": "a", "max_depth": 2}, {"anchor_name": "B"}, (anchor,))
    {'max_depth': 2, 'anchor_name': 'B'}
    """
    kept = dict(defaults)
    for group in groups:
        if group & call.keys():
            kept = {n: v for n, v in kept.items() if n not in group}
    return {**kept, **call}


def _identity(x: Any) -> Any:
    return x


class EvidenceRetriever:
    """A method's core retriever behind the evidence contract.

    Parameters
    ----------
    method
        A registered method (:data:`METHODS`).
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
        self.defaults: dict[str, Any] = {}
        self.k = check_k(k)
        self.output = check_output(output)
        if isinstance(graph, (KnowledgeGraph,)) or type(graph).__name__ == "GraphIndex":
            self.core = self._build(graph, embedder, llm, options)
        elif hasattr(graph, "retrieve") and hasattr(graph, "aretrieve"):
            check_names(options, frozenset(), f"{method} (prebuilt retriever)")
            self.core = graph
        else:
            raise ConfigError(
                f"graph must be a KnowledgeGraph, GraphIndex or a {method} retriever, "
                f"got {type(graph).__name__}"
            )

    @classmethod
    def from_options(cls, method: str, graph: Any, *, embedder: Any = None, llm: Any = None,
                     k: int | None = None, output: str = "passages",
                     options: Mapping[str, Any] | None = None,
                     names: tuple[str, str] = ("embedder", "llm"),
                     convert: tuple[Callable[[Any], Any], Callable[[Any], Any]] = (
                         _identity, _identity),
                     check_anchor: bool = False,
                     configure_built: bool = True) -> EvidenceRetriever:
        """The facade as the framework adapters build it.

        * Per-call options among ``options`` (the spec's ``call_args``: PCR ``anchor``,
          traversal ``algorithm``, ...) become per-call defaults (:attr:`defaults`, merged
          by :meth:`call_args`); with a built core, which takes no constructor options,
          every per-call option does.
        * A built core refuses an embedder or an LLM and a ``GraphIndex`` an embedder (it
          has its own); the message uses the adapter's argument ``names``. ``convert``
          turns the framework's models into kgpath ones, only when building.
        * A config field named ``k`` (PCR, schema: native hits) is the method's, not the
          facade's ``k`` (evidence items); a built core gets config fields (and ``k`` as
          its hit count) on a copy, or, without ``configure_built``, refuses them.
        * Defaults are checked now by the spec's ``check_defaults`` (e.g. the traversal
          ``algorithm``), against the graph too when ``check_anchor`` (PCR's anchor).
        """
        spec, opts, built = method_spec(method), dict(options or {}), is_built(graph)
        defaults = {n: opts.pop(n) for n in list(opts)
                    if n in spec.call_args and (built or n not in spec.init_args)}
        if embedder is not None and (built or type(graph).__name__ == "GraphIndex"):
            raise ConfigError(f"pass {names[0]}=None with a GraphIndex or a built retriever "
                              "(it has its own embedder; models are only used when building "
                              "from a graph)")
        if llm is not None and built:
            raise ConfigError(f"pass {names[1]}=None with a built retriever (it has its own; "
                              "models are only used when building from a graph)")
        if built and configure_built:
            er = cls(method, with_config(graph, spec, k, opts), k=k, output=output)
        elif built:
            er = cls(method, graph, k=k, output=output, **opts)
        else:
            cfg_k = {"k": opts.pop("k")} if "k" in opts else {}
            er = cls(method, graph, embedder=convert[0](embedder), llm=convert[1](llm), k=k,
                     output=output, **opts)
            if cfg_k:
                er.core = with_config(er.core, spec, None, cfg_k)
        er.defaults = defaults
        if spec.check_defaults is not None:
            spec.check_defaults(er.core, defaults, check_anchor)
        return er

    def _build(self, graph: Any, embedder: Any, llm: Any, options: Mapping[str, Any]) -> Any:
        spec = self.spec
        fields = spec.config_fields
        check_names(options, fields | spec.init_args, spec.name)
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

    def call_args(self, kwargs: Mapping[str, Any]) -> tuple[int | None, str, dict[str, Any]]:
        """``(k, output, core options)`` of one call: ``kwargs`` over :attr:`defaults`.

        Raises :class:`ConfigError` for an unknown argument (naming the accepted ones), a
        bad ``k`` or ``output``.
        """
        spec = self.spec
        accepted = spec.config_fields | spec.call_args | {"k", "output"}
        check_names(kwargs, accepted, f"{spec.name} call")
        opts = merge_call_defaults(self.defaults, kwargs, spec.call_groups)
        k = check_k(opts.pop("k", None)) or self.k
        output = check_output(opts.pop("output", None) or self.output)
        if spec.k_field and k is not None and spec.k_field not in opts \
                and kwargs.get("k") is not None:
            opts[spec.k_field] = k
        return k, output, opts

    def result(self, query: str, **kwargs: Any) -> Any:
        """The method's full native result (per-call options as in :meth:`retrieve`)."""
        _, _, opts = self.call_args(kwargs)
        return self.core.retrieve(query, **opts)

    async def aresult(self, query: str, **kwargs: Any) -> Any:
        """Async :meth:`result`."""
        _, _, opts = self.call_args(kwargs)
        return await self.core.aretrieve(query, **opts)

    def retrieve(self, query: str, **kwargs: Any) -> list[Evidence]:
        """Ranked evidence for ``query``.

        ``kwargs``: ``k``, ``output``, the method's per-call arguments (e.g. PCR
        ``anchor``) and config fields for this call only.
        """
        k, output, opts = self.call_args(kwargs)
        return list(self.core.retrieve(query, **opts).evidence(output, k))

    async def aretrieve(self, query: str, **kwargs: Any) -> list[Evidence]:
        """Async :meth:`retrieve` (the core's native async path)."""
        k, output, opts = self.call_args(kwargs)
        result = await self.core.aretrieve(query, **opts)
        return list(result.evidence(output, k))

    def retrieve_by_vector(self, query: str, vector: Any, **kwargs: Any) -> list[Evidence]:
        """:meth:`retrieve` with a precomputed query embedding (cores that support it)."""
        k, output, opts = self.call_args(kwargs)
        return list(self.core.retrieve_by_vector(vector, query=query, **opts).evidence(output, k))
