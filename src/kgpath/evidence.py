"""The one result contract: ranked evidence items with a trace, the same for every method.

Every method's result offers :meth:`evidence` (``result.evidence(output="passages")``),
a list of :class:`Evidence` ranked best first. The text of an item is what an LLM should
read; the trace explains why it was retrieved, under one key vocabulary: the generic keys
here (:data:`GENERIC_TRACE_KEYS`) plus the keys each registered method declares in its
spec (``kgpath/methods/<method>/spec.py``; :func:`trace_vocabulary` lists them all). An
:class:`Evidence` refuses a key outside that union, naming the key and the method. Both
framework adapters convert an :class:`Evidence` with :meth:`Evidence.metadata`, so
LlamaIndex nodes and LangChain documents carry the same keys and values.

This module is below the methods and imports none: the method registry
(:mod:`kgpath.methods.registry`) declares each method's keys with
:func:`register_trace_keys`.

Outputs
-------
``output="passages"`` (the default)
    Source passages with their text, ranked by a rule each method documents on its
    result's ``evidence`` (the six built-in methods: PCR, PathRAG, C2RAG, schema-guided,
    traversal and graph-augmented retrieval; ARCHITECTURE.md has the table). When the
    graph cites no passage for an item, that item is returned in its native kind
    instead, so nothing retrieved is lost.
``output="native"``
    The method's own unit: PCR nodes, PathRAG paths, C2RAG evidence (passages and
    triples), schema nodes then triples then passages, traversal sentences,
    graph-augmented passages.

Metadata keys
-------------
:meth:`Evidence.metadata` returns the source passage's own metadata (flat, unprefixed) and
the kgpath keys, all prefixed ``kgpath_`` so they never collide with a user's keys:
``kgpath_method``, ``kgpath_kind``, ``kgpath_id``, ``kgpath_rank`` (1-based),
``kgpath_score`` (float), and ``kgpath_<key>`` for every trace key present.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from kgpath.errors import ConfigError, short

if TYPE_CHECKING:  # pragma: no cover
    from kgpath.graph import KnowledgeGraph

__all__ = [
    "KINDS",
    "METADATA_PREFIX",
    "OUTPUTS",
    "GENERIC_TRACE_KEYS",
    "Evidence",
    "EvidenceKind",
    "Output",
    "check_output",
    "jsonable",
    "passages_from_sources",
    "rank_items",
    "register_trace_keys",
    "set_trace_key_loader",
    "trace_vocabulary",
    "unregister_trace_keys",
]

EvidenceKind = Literal["passage", "node", "path", "triple", "sentence"]
Output = Literal["passages", "native"]

KINDS: tuple[str, ...] = ("passage", "node", "path", "triple", "sentence")
OUTPUTS: tuple[str, ...] = ("passages", "native")
METADATA_PREFIX = "kgpath_"

GENERIC_TRACE_KEYS: Mapping[str, str] = {
    # structure
    "anchor_id": "id of the node the search started from",
    "node_id": "the graph node an item is (native) or was reached through (passages)",
    "node_ids": "node ids along the path that produced the item, start first",
    "relations": "relation labels along that path",
    "path": "the path rendered as text, e.g. 'A -[uses]-> B'",
    "hops": "number of edges from the anchor or path start (int); None if unreachable",
    "triple": "Lin(c) of the supporting triple",
    "fallback": "True when the item came from a documented fallback, not the method proper",
    "query_similarity": "cos(q, item)",
    # provenance
    "passage_ids": "passages an item cites (its provenance), first-seen order",
    "supporting": "ids of the native items that brought a passage in, best first",
    # sufficiency gate (kgpath.policies.sufficiency), usable on any method
    "gate_state": "the gate's verdict on the list the item came in: resolved or unresolved",
    "gate_n_eff": "the gate's Eq. 8 N_eff over that list (None when nothing was scored)",
    "gate_gamma": "the gate's gamma (Eq. 9)",
    "gate_p": "Eq. 7 probability of the item in the gate's distribution (None outside its top)",
    "gate_action": "kept, no_fallback_configured, fallback_appended or fallback_replaced",
    "gate_source": "primary or fallback: which retriever the item came from",
    "score_source": "given, embedder (the gate scored the list itself) or none",
}
"""Trace keys any method may write; a method's own keys are declared in its spec."""

_method_keys: dict[str, Mapping[str, str]] = {}  # method -> its declared keys
_known: frozenset[str] = frozenset(GENERIC_TRACE_KEYS)  # the union, rebuilt on change
_loader: Callable[[], None] | None = None


def register_trace_keys(method: str, keys: Mapping[str, str]) -> None:
    """Declare the trace keys ``method`` writes (the method registry calls this).

    Raises
    ------
    ConfigError
        If a key is generic, or declared by another method with another meaning (one key,
        one meaning), or a key or meaning is not a string.
    """
    global _known
    for key, meaning in keys.items():
        if not isinstance(key, str) or not isinstance(meaning, str):
            raise ConfigError(f"{method}: a trace key and its meaning are strings, "
                              f"got {short(key)}: {short(meaning)}")
        if key in GENERIC_TRACE_KEYS:
            raise ConfigError(f"{method}: trace key {key!r} is generic (GENERIC_TRACE_KEYS); "
                              "do not declare it again")
        for other, theirs in _method_keys.items():
            if other != method and key in theirs and theirs[key] != meaning:
                raise ConfigError(f"{method}: trace key {key!r} already means "
                                  f"{theirs[key]!r} for {other!r}")
    _method_keys[method] = dict(keys)
    _known = frozenset(GENERIC_TRACE_KEYS).union(*_method_keys.values())


def unregister_trace_keys(method: str) -> None:
    """Forget the trace keys of ``method`` (the registry calls this on ``unregister``)."""
    global _known
    _method_keys.pop(method, None)
    _known = frozenset(GENERIC_TRACE_KEYS).union(*_method_keys.values())


def set_trace_key_loader(loader: Callable[[], None] | None) -> None:
    """Install the hook that loads every registered method's keys (the registry's).

    :class:`Evidence` calls it once before rejecting a key, so a key of a method whose spec
    was not loaded yet is still known; this module imports no method.
    """
    global _loader
    _loader = loader


def trace_vocabulary() -> dict[str, str]:
    """Every known trace key with its meaning: generic, then each registered method's.

    Examples
    --------
    >>> trace_vocabulary()["reliability"]
    'Eq. 4 path reliability of the path that produced the item'
    """
    if _loader is not None:
        _loader()
    out = dict(GENERIC_TRACE_KEYS)
    for keys in list(_method_keys.values()):
        out.update(keys)
    return out


def _check_trace(trace: Mapping[str, Any], method: str) -> None:
    if _known.issuperset(trace):
        return
    if _loader is not None:
        _loader()
        if _known.issuperset(trace):
            return
    unknown = sorted(set(trace) - _known, key=str)
    raise ConfigError(f"unknown trace key(s) {unknown} in evidence of method {method!r}; "
                      "known keys: GENERIC_TRACE_KEYS and the trace_keys of the registered "
                      "methods' specs (kgpath.evidence.trace_vocabulary())")


def jsonable(value: Any) -> Any:
    """Return ``value`` with tuples/sets as lists and numpy scalars as Python values.

    Mappings are converted recursively (keys become ``str``); anything else not JSON-native
    is rendered with ``str``, so metadata never holds an object a serialiser would reject.

    Examples
    --------
    >>> jsonable({"a": (1, np.float32(0.5)), "b": {"x"}})
    {'a': [1, 0.5], 'b': ['x']}
    """
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return [jsonable(v) for v in sorted(value, key=str)]
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return str(value)


@dataclass(frozen=True)
class Evidence:
    """One ranked piece of evidence: what the LLM reads, and why it was retrieved.

    Attributes
    ----------
    id
        Passage id, node id, path id, ``"source|relation|target"`` or sentence id.
    text
        The evidence text (a passage's source text where the graph has passages).
    score
        The method's score for this item (higher is better), a Python ``float``.
    kind
        One of :data:`KINDS`.
    method
        The registered method's name (:func:`kgpath.methods.registry.method_names`).
    rank
        1-based position in the ranked list.
    trace
        Keys from :func:`trace_vocabulary` only, JSON-friendly values.
    source_metadata
        The passage's (or node's) own metadata, passed through unprefixed.
    """

    id: str
    text: str
    score: float
    kind: EvidenceKind
    method: str
    rank: int = 1
    trace: Mapping[str, Any] = field(default_factory=dict)
    source_metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"evidence kind must be one of {KINDS}, got {short(self.kind)}")
        _check_trace(self.trace, self.method)
        score = float(self.score)
        object.__setattr__(self, "score", score if math.isfinite(score) else 0.0)

    def metadata(self) -> dict[str, Any]:
        """Flat, JSON-safe metadata: the source's own keys, then the ``kgpath_`` keys.

        Examples
        --------
        >>> e = Evidence("p1", "text", 0.5, "passage", "pcr", trace={"hops": 1})
        >>> sorted(e.metadata())
        ['kgpath_hops', 'kgpath_id', 'kgpath_kind', 'kgpath_method', 'kgpath_rank', 'kgpath_score']
        """
        meta: dict[str, Any] = {
            str(k): v for k, v in jsonable(dict(self.source_metadata)).items()
            if not str(k).startswith(METADATA_PREFIX)
        }
        meta.update({
            "kgpath_method": self.method,
            "kgpath_kind": self.kind,
            "kgpath_id": self.id,
            "kgpath_rank": int(self.rank),
            "kgpath_score": float(self.score),
        })
        for key, value in self.trace.items():
            meta[METADATA_PREFIX + key] = jsonable(value)
        return meta


def check_output(output: str) -> Output:
    """Validate an ``output`` option.

    Raises
    ------
    ConfigError
        If ``output`` is not one of :data:`OUTPUTS`.
    """
    if output not in OUTPUTS:
        raise ConfigError(f"output must be one of {OUTPUTS}, got {short(output)}")
    return output  # type: ignore[return-value]


def rank_items(items: Iterable[Evidence], k: int | None = None) -> list[Evidence]:
    """Number ``items`` 1..n in the given order (deduplicated by ``(kind, id)``), cut at ``k``.

    Raises
    ------
    ConfigError
        If ``k`` is not a positive int or ``None``.
    """
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ConfigError(f"k must be a positive int or None, got {short(k)}")
    out: list[Evidence] = []
    seen: set[tuple[str, str]] = set()
    for item in items:
        key = (item.kind, item.id)
        if key in seen:
            continue
        seen.add(key)
        out.append(_with_rank(item, len(out) + 1))
        if k is not None and len(out) >= k:
            break
    return out


def _with_rank(item: Evidence, rank: int) -> Evidence:
    if item.rank == rank:
        return item
    return Evidence(item.id, item.text, item.score, item.kind, item.method, rank,
                    item.trace, item.source_metadata)


def passages_from_sources(
    graph: KnowledgeGraph,
    sources: Sequence[tuple[Sequence[str], Evidence]],
) -> list[Evidence]:
    """Expand ranked native items into passages: each item's provenance, first-seen order.

    ``sources`` pairs each native item (best first) with the passage ids it cites. A passage
    takes the score and trace of the first (best) item citing it, plus ``supporting`` (every
    citing item's id, best first) and ``passage_ids``. An item citing no passage that the
    graph holds is kept in its native kind, so nothing retrieved is dropped.

    Examples
    --------
    >>> from kgpath.graph import KnowledgeGraph
    >>> g = KnowledgeGraph.from_triples([("a", "to", "b")], {"p": "a goes to b"},
    ...                                 provenance=[["p"]])
    >>> n = Evidence("a", "a", 0.9, "node", "pcr")
    >>> [e.id for e in passages_from_sources(g, [(["p"], n), (["p"], n)])]
    ['p']
    """
    store = graph.passages
    by_id: dict[str, Evidence] = {}
    support: dict[str, list[str]] = {}
    order: list[tuple[str, str]] = []  # (kind, id) in first-seen order
    for passage_ids, item in sources:
        cited = [p for p in dict.fromkeys(passage_ids) if p in store]
        if not cited:
            order.append((item.kind, item.id))
            by_id.setdefault(f"{item.kind}\x1f{item.id}", item)
            continue
        for pid in cited:
            if pid not in support:
                support[pid] = []
                order.append(("passage", pid))
                p = store[pid]
                trace = dict(item.trace)
                if item.kind == "node":
                    trace.setdefault("node_id", item.id)
                by_id[f"passage\x1f{pid}"] = Evidence(
                    pid, p.text, item.score, "passage", item.method, 1, trace, p.metadata
                )
            if item.id not in support[pid]:
                support[pid].append(item.id)
    out = []
    for kind, ident in order:
        ev = by_id[f"{kind}\x1f{ident}"]
        if kind == "passage":
            trace = {**ev.trace, "supporting": list(support[ident])}
            ev = Evidence(ev.id, ev.text, ev.score, ev.kind, ev.method, 1, trace,
                          ev.source_metadata)
        out.append(ev)
    return rank_items(out)
