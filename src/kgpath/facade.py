"""One retriever facade over every registered method: options checked once, evidence out.

Both framework adapters delegate here, so argument checking, per-call options, ``k`` and
``output`` behave the same in LlamaIndex and LangChain. :class:`EvidenceRetriever` builds
the method's core retriever from a graph, an embedder, an LLM and keyword options (the
method's config fields plus a few constructor extras) and returns ranked
:class:`~kgpath.evidence.Evidence`. What a method accepts comes from its spec in the
method registry (:mod:`kgpath.methods.registry`); this module names no method.

``k`` cuts the evidence list. Its default, :data:`DEFAULT_K` (5), is the one default of the
core facade and of both adapters (LlamaIndex ``similarity_top_k``, LangChain ``k``); pass
``k=None`` for every item the method returns (hundreds of passages on a large corpus).
For a method whose spec names a ``k_field`` (PCR, schema-guided and graph-augmented
retrieval: the number of native hits), a ``k`` given to the facade also sets that field
unless it is given explicitly, so ``k`` passages are drawn from ``k`` hits; the default
leaves the method's own hit count alone.

``config=`` takes the method's config object, e.g. a preset such as
``PathRAGConfig.for_passages()``; keyword options then override its fields. Unknown
keywords, method names and anchors raise :class:`~kgpath.errors.ConfigError` /
:class:`~kgpath.errors.NodeNotFoundError` with the closest accepted names ("did you
mean"); an adapter passes its framework's names (``hints``) so a keyword of the other
framework is answered with this one's. A graph with no node (e.g. documents in which the
extractor found no entity) fails at construction with
:class:`~kgpath.errors.EmptyGraphError` naming the cause, not at the first query.
:meth:`EvidenceRetriever.from_options` is how both adapters build it: per-call options
given at construction become per-call defaults, a config field ``k`` stays the method's,
and a built core gets its config fields applied to a copy.

``namespace=`` (at construction, or per call) confines retrieval to the documents of a
``GraphIndex`` whose metadata ``namespace_key`` has that value: the method searches that
namespace's own live index (:mod:`kgpath.index.tenants`), equal to one built from those
documents alone and following every later update. A namespace no document has gives
``[]`` (as a metadata filter matching nothing in LlamaIndex or LangChain); with a graph or
an index without a document ledger it raises :class:`~kgpath.errors.ConfigError`.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import difflib
import functools
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import FrameType
from typing import Any

from kgpath.embeddings import default_embedder
from kgpath.errors import ConfigError, EmptyGraphError, NodeNotFoundError
from kgpath.evidence import Evidence, check_output
from kgpath.graph import KnowledgeGraph
from kgpath.index.tenants import NamespacedRetriever, check_namespace, set_path
from kgpath.methods import registry
from kgpath.methods.registry import MethodSpec, RegisteredMethods

__all__ = [
    "DEFAULT_K",
    "METHODS",
    "EvidenceRetriever",
    "anchor_suggestion",
    "check_config",
    "check_k",
    "check_names",
    "check_not_empty",
    "did_you_mean",
    "is_built",
    "merge_call_defaults",
    "method_spec",
    "with_config",
]


METHODS: Sequence[str] = RegisteredMethods()
"""The registered methods, a live view of :func:`kgpath.methods.registry.method_names`:
the five papers' methods, kgpath's graph-augmented dense retrieval (an extension), then
any method registered at run time."""


class _DefaultK(int):
    """The int 5 that marks "``k`` not given" (identity, not value: ``k=5`` is given)."""

    def __repr__(self) -> str:
        return "DEFAULT_K"

    def __reduce__(self) -> str:
        return "DEFAULT_K"  # pickled and copied as the one module constant


DEFAULT_K: int = _DefaultK(5)
"""The default number of evidence items, the same in the core facade and both adapters.

Between the frameworks' own defaults (LlamaIndex ``similarity_top_k=2``, LangChain
``VectorStoreRetriever`` ``k=4``) and the R@5 the evaluations report. Being the default,
it cuts the evidence list only: a method's native hit count (:attr:`MethodSpec.k_field`)
is set by a ``k`` the caller gives. ``k=None`` returns everything the method cites."""


def method_spec(method: str) -> MethodSpec:
    """The :class:`~kgpath.methods.registry.MethodSpec` of a registered ``method``.

    Raises
    ------
    ConfigError
        If ``method`` is not registered (naming the registered ones and the closest).
    """
    try:
        return registry.method_spec(method)
    except ConfigError as exc:
        if not isinstance(method, str) or method in registry.method_names():
            raise
        raise ConfigError(f"{exc}{did_you_mean(method, registry.method_names())}") from None


def did_you_mean(name: str, choices: Any, n: int = 3) -> str:
    """``"; did you mean 'x'?"`` for the ``choices`` closest to ``name`` (difflib), else ``""``.

    >>> did_you_mean("similarity_topk", ["similarity_top_k", "output"])
    "; did you mean 'similarity_top_k'?"
    """
    found = difflib.get_close_matches(str(name), [str(c) for c in choices], n=n, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(f) for f in found)}?" if found else ""


def check_k(k: Any) -> int | None:
    """``k`` if it is a positive int or ``None``; else :class:`ConfigError`."""
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ConfigError(f"k must be a positive int or None, got {k!r}")
    return k


def check_names(names: Any, accepted: frozenset[str], where: str,
                hints: Mapping[str, str] | None = None) -> None:
    """:class:`ConfigError` naming the ``names`` not ``accepted`` and the accepted ones.

    Each unknown name gets its hint from ``hints`` (an adapter's map from the other
    framework's names to its own, e.g. ``{"similarity_top_k": "LangChain's name is
    'k'"}``), else the closest of the accepted names and of the names ``hints`` maps to
    ``""`` (the adapter's own arguments, e.g. ``similarity_top_k``).
    """
    bad = sorted(set(names) - accepted)
    if bad:
        hints = hints or {}
        pool = sorted(accepted | {n for n, h in hints.items() if not h})
        why = "".join(f"; {b!r}: {hints[b]}" if hints.get(b)
                      else did_you_mean(b, pool).replace("; ", f"; {b!r}: ", 1)
                      for b in bad)
        raise ConfigError(f"unknown {where} argument(s) {bad}{why}; accepted: {sorted(accepted)}")


def anchor_suggestion(graph: Any, name: Any) -> str:
    """``"; did you mean ..."`` for the node names and ids closest to a missing anchor."""
    if not isinstance(name, str) or not hasattr(graph, "nodes"):
        return ""
    if graph.num_nodes > 200_000:  # difflib is linear in the names: keep errors fast
        return ""
    names = {n.name for n in graph.nodes if n.name} | {n.id for n in graph.nodes}
    return did_you_mean(name, sorted(names))


def _with_anchor_hint(exc: NodeNotFoundError, graph: Any) -> NodeNotFoundError:
    hint = anchor_suggestion(graph, exc.key)
    return NodeNotFoundError(f"{exc}{hint}", key=exc.key) if hint else exc


def check_not_empty(graph: Any, spec: MethodSpec, *, built: bool = True) -> None:
    """Fail (or warn) at construction, naming the cause, when the graph has no node.

    No node and no passage: :class:`EmptyGraphError`. Passages but no entity (the
    extractor found none) in the graph the ``built`` core searches (the traversal method
    searches a chunk graph it makes from the passages): :class:`EmptyGraphError` for a
    method whose native items are graph items (nodes, paths, triples), else a
    ``UserWarning`` (it ranks the passages without graph links, e.g. graph-augmented
    retrieval falls back to dense search).
    """
    if not isinstance(graph, KnowledgeGraph) or graph.num_nodes:
        return
    n = len(graph.passages)
    if not n:
        raise EmptyGraphError(f"cannot build {spec.name} over an empty graph (no nodes, no "
                              "passages): were any documents given?")
    if not built:
        return
    cause = (f"its {n} passage(s) gave no entity: the extractor found none (an LLM that "
             "replies no JSON, e.g. MockLLM, gives none; try the offline spaCy extractor "
             "(no llm=) or a real LLM)")
    if spec.native_kinds & {"node", "path", "triple"}:
        raise EmptyGraphError(f"cannot build {spec.name} over a graph with no nodes: {cause}"
                              "; the traversal method needs no entities")
    warnings.warn(f"{spec.name}: the graph has no nodes, {cause}; passages are ranked "
                  "without graph links", UserWarning, stacklevel=_caller_level())


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside kgpath and its adapters (the user's)."""
    def ours(name: str) -> bool:
        return name.split(".")[0] in ("kgpath", "langchain_kgpath", "pydantic") \
            or name.startswith("llama_index.retrievers.kgpath")

    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and ours(frame.f_globals.get("__name__") or ""):
        frame, level = frame.f_back, level + 1
    return level


def is_built(graph: Any) -> bool:
    """Whether ``graph`` is an already built core retriever (not a graph or index)."""
    if isinstance(graph, KnowledgeGraph) or type(graph).__name__ == "GraphIndex":
        return False
    return hasattr(graph, "retrieve") and hasattr(graph, "aretrieve")


def check_config(spec: MethodSpec, config: Any) -> Any:
    """``config`` if it is ``None`` or an instance of the method's config class.

    Raises :class:`ConfigError` naming the expected class (and the method whose config
    it is, when it is another registered method's).
    """
    if config is None or isinstance(config, spec.config_cls):
        return config
    owner = next((m for m in registry.method_names()
                  if isinstance(config, registry.method_spec(m).config_cls)), None)
    whose = f" (that is {owner}'s config)" if owner else ""
    raise ConfigError(f"{spec.name}: config must be a {spec.config_cls.__name__}, got "
                      f"{type(config).__name__}{whose}")


def _fields(spec: MethodSpec, config: Any, fields: Mapping[str, Any]) -> Any:
    """``config`` (or the defaults) with ``fields`` replaced, as a :class:`ConfigError`."""
    try:
        if config is None:
            return spec.config_cls(**fields)
        return dataclasses.replace(config, **fields) if fields else config
    except TypeError as exc:  # keyword-only dataclass signature problems
        raise ConfigError(f"{spec.name}: {exc}") from exc


def _k_given(k: int | None) -> bool:
    return k is not None and k is not DEFAULT_K


def with_config(core: Any, spec: MethodSpec, k: int | None, options: dict[str, Any]) -> Any:
    """A built core retriever with the config fields of ``options`` applied (all popped).

    A shallow copy shares the core's index (embeddings, FAISS, BM25) but not its config,
    so the caller's retriever is left untouched. ``options["config"]`` replaces the whole
    config first. A given ``k`` sets :attr:`MethodSpec.k_field` unless ``options`` names it.
    """
    config = check_config(spec, options.pop("config", None))
    bad = sorted(set(options) - spec.config_fields)
    if bad:
        near = "".join(did_you_mean(b, sorted(spec.config_fields)) for b in bad)
        raise ConfigError(f"unknown {spec.name} argument(s) {bad} for a prebuilt retriever"
                          f"{near}; accepted: {sorted(spec.config_fields)}")
    fields = {n: options.pop(n) for n in list(options)}
    if spec.k_field and _k_given(k):
        fields.setdefault(spec.k_field, k)
    if not fields and config is None:
        return core
    core = copy.copy(core)
    core.config = _fields(spec, config if config is not None else core.config, fields)
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


def _build_view(spec: MethodSpec, llm: Any, init: Mapping[str, Any], view: Any,
                config: Any) -> Any:
    """The method's core over one namespace's index (``EmptyGraphError``: nothing there)."""
    check_not_empty(view.graph, spec, built=False)
    core = spec.build(view, embedder=None, llm=llm, config=config, **init)
    check_not_empty(core.graph, spec)
    return core


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
        kgpath protocols (adapters convert framework models first). Without an embedder a
        graph is searched with the bundled offline one (:func:`kgpath.default_embedder`).
    k
        Default number of evidence items: :data:`DEFAULT_K` (5); ``None``: all the method
        returns.
    output
        ``"passages"`` (default) or ``"native"`` (see :mod:`kgpath.evidence`).
    config
        The method's config object, e.g. a preset (``PathRAGConfig.for_passages()``);
        ``options`` override its fields.
    hints
        Argument name -> hint, for names of another framework; ``""`` marks the adapter's
        own arguments, offered as "did you mean" (adapters set it).
    namespace, namespace_key
        Search only the documents whose metadata ``namespace_key`` is ``namespace`` (a
        ``GraphIndex`` built by ``from_documents``; see the module docstring). Per call,
        ``retrieve(query, namespace=...)`` works with any such index.
    **options
        The method's config fields and constructor extras; anything else raises.

    Raises
    ------
    ConfigError
        For an unknown method or option (naming it, the closest and the accepted ones), a
        bad ``k``, ``output`` or ``config``, or an invalid config value.
    EmptyGraphError
        If the graph the method would search has no node (naming the likely cause).

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
                 k: int | None = DEFAULT_K, output: str = "passages", config: Any = None,
                 hints: Mapping[str, str] | None = None, namespace: str | None = None,
                 namespace_key: str = "namespace", **options: Any) -> None:
        self.spec = method_spec(method)
        self.namespace_key = namespace_key
        self._index = graph if type(graph).__name__ == "GraphIndex" else None
        self._recipe: tuple[Any, dict[str, Any]] | None = None  # (llm, init) when building
        self._tenants: NamespacedRetriever | None = None  # per-call namespaces
        self._core_attrs: dict[str, Any] = {}  # set_core_attr, replayed on new cores
        self.defaults: dict[str, Any] = {}
        self.hints: Mapping[str, str] = dict(hints or {})
        self.k = check_k(k)
        self.output = check_output(output)
        config = check_config(self.spec, config)
        if namespace is not None:
            self.core = self._namespaced(graph, embedder, llm, config, options, namespace)
        elif isinstance(graph, (KnowledgeGraph,)) or type(graph).__name__ == "GraphIndex":
            check_not_empty(getattr(graph, "graph", graph), self.spec, built=False)
            self.core = self._build(graph, embedder, llm, config, options)
            check_not_empty(self.core.graph, self.spec)
        elif hasattr(graph, "retrieve") and hasattr(graph, "aretrieve"):
            check_names(options, frozenset(), f"{method} (prebuilt retriever)", self.hints)
            self.core = graph if config is None else with_config(
                graph, self.spec, None, {"config": config})
        else:
            raise ConfigError(
                f"graph must be a KnowledgeGraph, GraphIndex or a {method} retriever, "
                f"got {type(graph).__name__}"
            )

    @classmethod
    def from_options(cls, method: str, graph: Any, *, embedder: Any = None, llm: Any = None,
                     k: int | None = DEFAULT_K, output: str = "passages",
                     options: Mapping[str, Any] | None = None,
                     names: tuple[str, str] = ("embedder", "llm"),
                     convert: tuple[Callable[[Any], Any], Callable[[Any], Any]] = (
                         _identity, _identity),
                     check_anchor: bool = False,
                     configure_built: bool = True,
                     hints: Mapping[str, str] | None = None) -> EvidenceRetriever:
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
          ``algorithm``), against the graph too when ``check_anchor`` (PCR's anchor; a
          missing one names the closest node names).
        * ``options["config"]`` is the method's config object (a preset); ``hints`` map the
          other framework's argument names to this one's, for error messages.
        """
        try:
            return cls._from_options(method, graph, embedder, llm, k, output, options, names,
                                     convert, check_anchor, configure_built, hints)
        except NodeNotFoundError as exc:
            g = graph.graph if hasattr(graph, "graph") else graph
            raise _with_anchor_hint(exc, g) from exc

    @classmethod
    def _from_options(cls, method: str, graph: Any, embedder: Any, llm: Any, k: int | None,
                      output: str, options: Mapping[str, Any] | None,
                      names: tuple[str, str],
                      convert: tuple[Callable[[Any], Any], Callable[[Any], Any]],
                      check_anchor: bool, configure_built: bool,
                      hints: Mapping[str, str] | None) -> EvidenceRetriever:
        spec, opts, built = method_spec(method), dict(options or {}), is_built(graph)
        tenant = {n: opts.pop(n) for n in ("namespace", "namespace_key") if n in opts}
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
            er = cls(method, with_config(graph, spec, k, opts), k=k, output=output,
                     hints=hints, **tenant)
        elif built:
            er = cls(method, graph, k=k, output=output, hints=hints, **tenant, **opts)
        else:
            if "k" in opts and "k" not in spec.config_fields:  # not a config field here
                check_names({"k"}, spec.config_fields | spec.init_args, spec.name, hints)
            cfg_k = {"k": opts.pop("k")} if "k" in opts else {}
            er = cls(method, graph, embedder=convert[0](embedder), llm=convert[1](llm), k=k,
                     output=output, hints=hints, **tenant, **opts)
            if cfg_k:
                er.core = with_config(er.core, spec, None, cfg_k)
        er.defaults = defaults
        if spec.check_defaults is not None:
            spec.check_defaults(er.core, defaults, check_anchor)
        return er

    def _settings(self, llm: Any, config: Any,
                  options: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        """The effective config and the constructor extras of ``options`` (checked)."""
        spec = self.spec
        fields = spec.config_fields
        check_names(options, fields | spec.init_args | {"config"}, spec.name, self.hints)
        cfg_opts = {n: v for n, v in options.items() if n in fields}
        if spec.k_field and _k_given(self.k) and spec.k_field not in cfg_opts:
            cfg_opts[spec.k_field] = self.k
        init = {n: v for n, v in options.items() if n in spec.init_args}
        self._recipe = (llm, init)
        return _fields(spec, config, cfg_opts), init

    def _build(self, graph: Any, embedder: Any, llm: Any, config: Any,
               options: Mapping[str, Any]) -> Any:
        config, init = self._settings(llm, config, options)
        if embedder is None and isinstance(graph, KnowledgeGraph):
            embedder = default_embedder()  # the bundled model, for every method alike
        return self.spec.build(graph, embedder=embedder, llm=llm, config=config, **init)

    def _namespaced(self, graph: Any, embedder: Any, llm: Any, config: Any,
                    options: Mapping[str, Any], namespace: str) -> NamespacedRetriever:
        """The method over one namespace of a ``GraphIndex``, rebuilt as the index changes."""
        check_namespace(namespace, graph)  # ConfigError for a graph or a built retriever
        if embedder is not None:
            raise ConfigError(f"pass embedder=None with namespace={namespace!r}: the "
                              "GraphIndex brings its own embedder")
        config, init = self._settings(llm, config, options)
        return NamespacedRetriever(graph, functools.partial(_build_view, self.spec, llm, init),
                                   namespace=namespace, key=self.namespace_key, config=config)

    def _core(self, opts: dict[str, Any]) -> Any:
        """The core one call runs on: a per-call ``namespace`` (popped) picks its view."""
        namespace = opts.pop("namespace", None)
        if namespace is None:
            return self.core
        if isinstance(self.core, NamespacedRetriever):
            own = self.core.namespace
            if own is not None and namespace != own:  # a tenant's retriever stays its own
                raise ConfigError(f"this retriever is confined to namespace {own!r}, got "
                                  f"namespace={namespace!r}; choose per call on a retriever "
                                  "built without namespace=")
            return self.core.pinned(namespace)
        check_namespace(namespace, self._index if self._index is not None else self.graph)
        if self._recipe is None or self._index is None:
            raise ConfigError(f"namespace={namespace!r} needs a retriever built from a "
                              "GraphIndex, not over a prebuilt core retriever")
        tenants = self._tenants
        if tenants is None or tenants.config is not self.core.config:
            llm, init = self._recipe
            tenants = self._tenants = NamespacedRetriever(
                self._index, functools.partial(_build_view, self.spec, llm, init),
                key=self.namespace_key, config=self.core.config)
            for path, value in self._core_attrs.items():
                tenants.set_attr(path, value)
        return tenants.pinned(namespace)

    def set_core_attr(self, path: str, value: Any) -> None:
        """Set the dotted attribute ``path`` (e.g. a prompt) of every core, now and later.

        The core and every namespace's core, rebuilt or not (the LlamaIndex adapter's
        prompt updates go through here).
        """
        self._core_attrs[path] = value
        for core in (self.core, self._tenants):
            if isinstance(core, NamespacedRetriever):
                core.set_attr(path, value)
            elif core is not None:
                set_path(core, path, value)

    @property
    def namespace(self) -> str | None:
        """The namespace retrieval is confined to (``None``: the whole graph)."""
        return self.core.namespace if isinstance(self.core, NamespacedRetriever) else None

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
        accepted = spec.config_fields | spec.call_args | {"k", "output", "namespace"}
        check_names(kwargs, accepted, f"{spec.name} call", self.hints)
        opts = merge_call_defaults(self.defaults, kwargs, spec.call_groups)
        k = check_k(opts.pop("k", None)) or self.k
        output = check_output(opts.pop("output", None) or self.output)
        if spec.k_field and k is not None and spec.k_field not in opts \
                and kwargs.get("k") is not None:
            opts[spec.k_field] = k
        return k, output, opts

    @contextlib.contextmanager
    def _anchor_hints(self, core: Any) -> Iterator[None]:
        """A per-call anchor ``core``'s graph lacks: the error names its closest node names."""
        try:
            yield
        except NodeNotFoundError as exc:
            raise _with_anchor_hint(exc, core.graph) from exc

    def result(self, query: str, **kwargs: Any) -> Any:
        """The method's full native result (per-call options as in :meth:`retrieve`)."""
        _, _, opts = self.call_args(kwargs)
        core = self._core(opts)
        with self._anchor_hints(core):
            return core.retrieve(query, **opts)

    async def aresult(self, query: str, **kwargs: Any) -> Any:
        """Async :meth:`result`."""
        _, _, opts = self.call_args(kwargs)
        core = self._core(opts)
        with self._anchor_hints(core):
            return await core.aretrieve(query, **opts)

    def retrieve(self, query: str, **kwargs: Any) -> list[Evidence]:
        """Ranked evidence for ``query``.

        ``kwargs``: ``k``, ``output``, ``namespace``, the method's per-call arguments (e.g.
        PCR ``anchor``) and config fields for this call only.
        """
        k, output, opts = self.call_args(kwargs)
        core = self._core(opts)
        with self._anchor_hints(core):
            return list(core.retrieve(query, **opts).evidence(output, k))

    async def aretrieve(self, query: str, **kwargs: Any) -> list[Evidence]:
        """Async :meth:`retrieve` (the core's native async path)."""
        k, output, opts = self.call_args(kwargs)
        core = self._core(opts)
        with self._anchor_hints(core):
            result = await core.aretrieve(query, **opts)
        return list(result.evidence(output, k))

    def retrieve_by_vector(self, query: str, vector: Any, **kwargs: Any) -> list[Evidence]:
        """:meth:`retrieve` with a precomputed query embedding (cores that support it)."""
        k, output, opts = self.call_args(kwargs)
        core = self._core(opts)
        with self._anchor_hints(core):
            res = core.retrieve_by_vector(vector, query=query, **opts)
        return list(res.evidence(output, k))
