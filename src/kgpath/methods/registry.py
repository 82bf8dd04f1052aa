"""The method registry: every retrieval method kgpath serves, by name, one line each.

A method package declares one :class:`MethodSpec` in its ``spec.py`` (``SPEC``): how to
build its core retriever, its config class, its per-call options, its trace keys. This
module lists the packages (:data:`SPEC_MODULES`, loaded lazily on first use) and
:func:`register` adds one at run time (a plugin, or a test). Everything that serves "any
method" reads the registry: :class:`kgpath.facade.EvidenceRetriever`, both framework
adapters' base classes, :class:`kgpath.testing.RetrieverContractSuite`, ``kgpath eval kg``
and the trace-key check of :class:`kgpath.evidence.Evidence`.

Adding a method
---------------
1. ``kgpath/methods/<name>/`` with a result offering ``evidence(output, k)`` and a
   ``spec.py`` defining ``SPEC = MethodSpec(name="<name>", ...)``;
2. one line in :data:`SPEC_MODULES` (or ``register(SPEC)`` from outside kgpath);
3. one class per adapter: ``class MyRetriever(KgpathRetriever): method = "<name>"``.

Examples
--------
>>> method_names()[:3]
('pcr', 'pathrag', 'c2rag')
>>> method_spec("pcr").k_field
'k'
"""

from __future__ import annotations

import dataclasses
import importlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgpath.errors import ConfigError, short
from kgpath.evidence import (
    KINDS,
    register_trace_keys,
    set_trace_key_loader,
    unregister_trace_keys,
)

__all__ = [
    "SPEC_MODULES",
    "MethodSpec",
    "RegisteredMethods",
    "method_names",
    "method_spec",
    "register",
    "unregister",
]

SPEC_MODULES: Mapping[str, str] = {
    "pcr": "kgpath.methods.pcr.spec",
    "pathrag": "kgpath.methods.pathrag.spec",
    "c2rag": "kgpath.methods.c2rag.spec",
    "schema": "kgpath.methods.schema.spec",
    "traversal": "kgpath.methods.traversal.spec",
    "augmented": "kgpath.methods.augmented.spec",
}
"""The built-in methods: name -> module defining ``SPEC`` (the five papers, then kgpath's
graph-augmented dense retrieval, an extension)."""


@dataclass(frozen=True, kw_only=True)
class MethodSpec:
    """How to build, call, check and test one method's core retriever.

    Attributes
    ----------
    name
        The method's registry name (``EvidenceRetriever(name, ...)``, an adapter's
        ``method``).
    config_cls
        The method's frozen config dataclass; its fields are options everywhere.
    build
        ``build(graph, *, embedder=, llm=, config=, **init_options) -> core retriever``;
        the core has ``retrieve(query, **call)`` and ``aretrieve`` returning a result with
        ``evidence(output, k)``.
    trace_keys
        The trace keys only this method writes, each with its one-line meaning (the generic
        ones are :data:`kgpath.evidence.GENERIC_TRACE_KEYS`).
    init_args
        Constructor options that are not config fields (e.g. ``schema``, ``algorithm``).
    call_args
        Per-call options that are not config fields (e.g. ``anchor``, ``plan``).
    k_field
        Config field set from the facade's ``k`` when not given explicitly.
    call_groups
        Per-call options that replace each other's defaults as a group (PCR's anchor).
    check_defaults
        ``check(core, defaults, check_graph)``: fail at construction on a bad per-call
        default (``check_graph``: also against the graph, e.g. an unknown anchor).
    native_kinds
        The evidence kinds ``output="native"`` yields.
    example
        A question about the bundled demo graph and its per-call arguments: what
        :class:`kgpath.testing.RetrieverContractSuite` runs.
    benchmarks
        The ``kgpath eval kg`` datasets the method runs on by default: ``"hotpotqa"``
        (it ranks passages), ``"metaqa"`` (its native items name answer nodes).
    """

    name: str
    config_cls: type
    build: Callable[..., Any]
    trace_keys: Mapping[str, str] = field(default_factory=dict)
    init_args: frozenset[str] = frozenset()
    call_args: frozenset[str] = frozenset()
    k_field: str | None = None
    call_groups: tuple[frozenset[str], ...] = ()
    check_defaults: Callable[[Any, Mapping[str, Any], bool], None] | None = None
    native_kinds: frozenset[str] = frozenset(KINDS)
    example: tuple[str, Mapping[str, Any]] = ("", {})
    benchmarks: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ConfigError(f"a method name must be an identifier, got {short(self.name)}")
        if not dataclasses.is_dataclass(self.config_cls):
            raise ConfigError(f"{self.name}: config_cls must be a dataclass, "
                              f"got {short(self.config_cls)}")
        if not callable(self.build):
            raise ConfigError(f"{self.name}: build must be callable, got {short(self.build)}")
        bad = sorted(set(self.native_kinds) - set(KINDS))
        if bad:
            raise ConfigError(f"{self.name}: unknown native kinds {bad}; kinds are {KINDS}")
        if self.k_field is not None and self.k_field not in self.config_fields:
            raise ConfigError(f"{self.name}: k_field {self.k_field!r} is not a config field")
        stray = sorted(set().union(*self.call_groups) - self.call_args)
        if stray:
            raise ConfigError(f"{self.name}: call_groups name {stray}, not in call_args")

    @property
    def config_fields(self) -> frozenset[str]:
        """The names of the method's config fields."""
        return frozenset(f.name for f in dataclasses.fields(self.config_cls))


_lock = threading.RLock()
_modules: dict[str, str] = dict(SPEC_MODULES)  # name -> spec module, registration order
_specs: dict[str, MethodSpec] = {}  # loaded (or registered) specs


def method_names() -> tuple[str, ...]:
    """The registered methods: the built-ins in :data:`SPEC_MODULES` order, then plugins."""
    return tuple(_modules)


def method_spec(method: str) -> MethodSpec:
    """The :class:`MethodSpec` of a registered ``method`` (its ``spec.py`` loaded once).

    Raises
    ------
    ConfigError
        If ``method`` is not registered, or its module's ``SPEC`` is not a
        :class:`MethodSpec` of that name.
    """
    spec = _specs.get(method) if isinstance(method, str) else None
    if spec is not None:
        return spec
    if not isinstance(method, str) or method not in _modules:
        raise ConfigError(f"method must be one of {method_names()}, got {method!r}")
    with _lock:
        if method not in _specs:
            module = importlib.import_module(_modules[method])
            spec = getattr(module, "SPEC", None)
            if not isinstance(spec, MethodSpec) or spec.name != method:
                raise ConfigError(f"{_modules[method]}.SPEC must be the MethodSpec of "
                                  f"{method!r}, got {short(spec)}")
            register_trace_keys(method, spec.trace_keys)
            _specs[method] = spec
        return _specs[method]


def register(spec: MethodSpec) -> MethodSpec:
    """Add ``spec`` to the registry (a plugin's or a test's method); returns it.

    Registering the same spec object again is a no-op.

    Raises
    ------
    ConfigError
        If ``spec`` is not a :class:`MethodSpec`, its name is taken by another spec, or one
        of its trace keys is already declared with another meaning.
    """
    if not isinstance(spec, MethodSpec):
        raise ConfigError(f"register takes a MethodSpec, got {short(spec)}")
    with _lock:
        _load_all()  # every registered method's trace keys, to check for a clash
        if spec.name in _modules:
            if _specs.get(spec.name) is spec:
                return spec
            raise ConfigError(f"method {spec.name!r} is already registered "
                              f"({_modules[spec.name]}); unregister it first")
        register_trace_keys(spec.name, spec.trace_keys)
        _modules[spec.name] = getattr(spec.build, "__module__", "<runtime>")
        _specs[spec.name] = spec
    return spec


def unregister(method: str) -> None:
    """Remove ``method`` (and its trace keys) from the registry.

    Raises
    ------
    ConfigError
        If ``method`` is not registered.
    """
    with _lock:
        if method not in _modules:
            raise ConfigError(f"method must be one of {method_names()}, got {method!r}")
        del _modules[method]
        _specs.pop(method, None)
        unregister_trace_keys(method)


def _load_all() -> None:
    """Load every registered spec (the evidence check's hook for not-yet-loaded keys)."""
    for name in method_names():
        method_spec(name)


set_trace_key_loader(_load_all)


class RegisteredMethods(Sequence[str]):
    """A live, read-only view of :func:`method_names` (what ``facade.METHODS`` is).

    Compares equal to the tuple of names, so it reads like the tuple it replaces.
    """

    def __getitem__(self, i: Any) -> Any:
        return method_names()[i]

    def __len__(self) -> int:
        return len(_modules)

    def __iter__(self) -> Iterator[str]:
        return iter(method_names())

    def __contains__(self, name: object) -> bool:
        return name in _modules

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RegisteredMethods):
            return True
        return isinstance(other, (tuple, list)) and tuple(other) == method_names()

    def __hash__(self) -> int:
        return hash(RegisteredMethods)

    def __repr__(self) -> str:
        return repr(method_names())
