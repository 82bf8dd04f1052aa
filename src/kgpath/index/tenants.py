"""Tenants: one namespace of a :class:`~kgpath.index.GraphIndex`, live, and retrievers kept in it.

Documents may carry a namespace in their metadata (``{"namespace": "acme"}``, or any
``key``). A retriever given a namespace never returns, traverses through or scores another
namespace's nodes, edges or passages, because it searches **the namespace's own index**:
:func:`namespace_index` assembles it from the stored extraction records of that
namespace's documents and the index's passage vectors (nothing extracted, nothing
embedded), so it equals ``GraphIndex.from_documents`` over those documents alone. An
entity two namespaces mention is a node in each, with only that namespace's provenance,
vector (the mean of its passages there), edges, BM25 statistics and neighbours; no mask
over a shared graph could give that (a shared node's vector and degree would still carry
the other namespace), which is why the restriction is a view, not a filter.

Live: :func:`namespace_view` keeps one view per ``(index, key, namespace)`` and checks it
at each query. When the index changed (``graph.version``, bumped by every
``add_documents`` / ``upsert_documents`` / ``delete_documents``, ``refresh`` and
``use_graph``; a reload is a new index) the namespace's documents and records are
compared with those the view was built from, by identity: a view is rebuilt only when
its own namespace changed, so an update of one tenant rebuilds nothing for the others.
A rebuild costs the namespace's assembly and a passage-mean per node; passage vectors
and the named text sets methods derive (PathRAG's node names and edge texts, C2RAG's
relations) are carried over, and the views of one index share one embedder that
remembers what it embedded (:class:`~kgpath.embed_cache.SharedEmbedder`, bounded), so
a text two namespaces share, or a traversal chunk graph's sentence, is embedded once.

:class:`NamespacedRetriever` is any method's core retriever behind that view: it builds
the method's core over the current view of the namespace it is asked for (its default,
or the ``namespace=`` of one call) and rebuilds it when the view changes. Each call takes
one ``(view, core)`` pair and runs on it, so two threads querying different namespaces
never mix views, and a query keeps the view it started with when an update lands (the
updates themselves run one at a time, as for any index). A namespace no document has
gives an empty result (:class:`EmptyResult`: no evidence), as a metadata filter that
matches nothing does in LlamaIndex and LangChain; a namespace on an index without a
document ledger raises :class:`~kgpath.errors.ConfigError` naming it.

Examples
--------
>>> from kgpath import GraphIndex, HashingEmbedder
>>> index = GraphIndex.from_documents(
...     [{"id": "a", "text": "Ada met Bob.", "metadata": {"namespace": "x"}},
...      {"id": "b", "text": "Ada met Cy.", "metadata": {"namespace": "y"}}],
...     embedder=HashingEmbedder(16))
>>> sorted(namespace_view(index, "x").graph.passages)
['a']
>>> index.add_documents([{"id": "c", "text": "Bob met Dee.", "metadata": {"namespace": "x"}}])
IngestReport(...)
>>> sorted(namespace_view(index, "x").graph.passages)
['a', 'c']
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kgpath.embed_cache import SharedEmbedder
from kgpath.embeddings import Embedder
from kgpath.errors import ConfigError, EmptyGraphError
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_vectors import embed_graph
from kgpath.index.passage_vectors import passage_cache
from kgpath.ingest import IngestReport
from kgpath.ingest.assemble import assemble_graph
from kgpath.ingest.ledger import DocumentLedger

if TYPE_CHECKING:
    from kgpath.index.graph_index import GraphIndex

__all__ = ["EmptyResult", "NamespacedRetriever", "PinnedNamespace", "check_namespace",
           "namespace_index", "namespace_view", "namespaces", "set_path"]

NAMESPACE_KEY = "namespace"


def check_namespace(namespace: Any, index: Any) -> str:
    """``namespace`` if it is a non-empty string and ``index`` keeps a document ledger.

    Raises
    ------
    ConfigError
        For another value, or an index without a ledger (naming the namespace).
    """
    if not isinstance(namespace, str) or not namespace:
        raise ConfigError(f"namespace must be a non-empty string, got {namespace!r}")
    _check_ledger(index, f"namespace {namespace!r}")
    return namespace


def _check_ledger(index: Any, what: str) -> None:
    if getattr(index, "ledger", None) is None:
        raise ConfigError(f"{what} needs a GraphIndex built by from_documents (this "
                          f"{type(index).__name__} has no document ledger, so no namespaces)")


def namespaces(index: GraphIndex, key: str = NAMESPACE_KEY) -> list[str]:
    """The namespaces of ``index``'s documents (metadata ``key``), in first-document order."""
    if index.ledger is None:
        return []
    found = (e.document.metadata.get(key) for e in index.ledger.documents.values())
    return list(dict.fromkeys(ns for ns in found if ns is not None))


def _sub_ledger(full: DocumentLedger, namespace: str, key: str) -> DocumentLedger:
    """The documents of one namespace, with their records, as a ledger of their own."""
    sub = DocumentLedger(full.chunking, full.extractor)
    sub.documents = {d: e for d, e in full.documents.items()
                     if e.document.metadata.get(key) == namespace}
    pids = [p.id for p in sub.passages()]
    sub.records = {pid: full.records[pid] for pid in pids if pid in full.records}
    sub.failed = full.failed & set(pids)
    return sub


def namespace_index(index: GraphIndex, namespace: str, key: str = NAMESPACE_KEY,
                    *, carry: tuple[KnowledgeGraph, ...] = (),
                    embedder: Embedder | None = None) -> GraphIndex:
    """A new index of the documents whose metadata ``key`` is ``namespace`` (a snapshot).

    What :meth:`GraphIndex.for_namespace <kgpath.index.GraphIndex.for_namespace>` returns:
    assembled from the stored records, passage vectors taken from ``index`` (nothing
    extracted, nothing embedded), the named text sets of ``index`` and of the graphs in
    ``carry`` (an earlier view) copied in; ``embedder`` (default: the index's) is the new
    index's, e.g. a :class:`~kgpath.embed_cache.SharedEmbedder` over it. Equal to
    ``GraphIndex.from_documents`` over those documents alone.

    Raises
    ------
    ConfigError
        For a bad namespace or an index without a ledger.
    """
    from kgpath.index.documents import _made

    check_namespace(namespace, index)
    assert index.ledger is not None
    emb = embedder if embedder is not None else index.embedder
    sub = _sub_ledger(index.ledger, namespace, key)
    graph = assemble_graph(sub, index._doc_extractor(None, None))
    if graph.passages:
        pv = index.passage_vectors()
        assert pv is not None
        row = {pid: i for i, pid in enumerate(pv.ids)}
        embed_graph(graph, emb, node_vectors=index.node_vectors,
                    passage_vectors=pv.matrix[[row[pid] for pid in graph.passages]])
        _carry_sets(graph, emb, index, (index.graph, *carry))
    report = IngestReport(documents=len(sub.documents))
    return _made(type(index), graph, emb, sub, index.node_vectors, report)


def _carry_sets(graph: KnowledgeGraph, emb: Embedder, index: GraphIndex,
                sources: tuple[KnowledgeGraph, ...]) -> None:
    """Copy the named text sets (``text -> vector``) of ``sources`` into ``graph``'s cache.

    A set holds vectors by text, so carrying is always right; a method asking for its
    texts of ``graph`` keeps exactly those (:func:`~kgpath.index.passage_vectors.text_vectors`).
    """
    target = passage_cache(graph, emb)
    for src in sources:
        cache = passage_cache(src, index.embedder)
        with cache.lock:
            sets = {name: dict(rows) for name, rows in cache.sets.items()}
        with target.lock:
            for name, rows in sets.items():
                target.sets.setdefault(name, {}).update(rows)


# ---------------------------------------------------------------------- live views
@dataclass
class _View:
    """A namespace's view and what it was built from (compared by identity)."""

    graph: KnowledgeGraph  # the index's graph object and version the view was checked at
    version: int
    ledger: DocumentLedger
    sources: list[Any]
    view: GraphIndex

    def current(self, index: GraphIndex) -> bool:
        return (self.graph is index.graph and self.version == index.graph.version
                and self.ledger is index.ledger)


def _sources(index: GraphIndex, namespace: str, key: str) -> list[Any]:
    """Everything a namespace's view is a function of, as objects to compare by identity.

    Its documents (a changed document is a new ledger entry), each passage's record (a new
    reading is a new record) and failure mark, the extractor, embedder and node-vector mode.
    """
    ledger = index.ledger
    assert ledger is not None
    out: list[Any] = [ledger.extractor, index.embedder, index.node_vectors]
    for doc_id, entry in ledger.documents.items():
        if entry.document.metadata.get(key) != namespace:
            continue
        out += [doc_id, entry]
        for p in entry.passages:
            out += [ledger.records.get(p.id), p.id in ledger.failed]
    return out


def _same(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(x is y or x == y for x, y in zip(a, b))


class _Tenancy:
    """The views of one index, and the one embedder they share (texts remembered)."""

    def __init__(self, embedder: Embedder) -> None:
        self.memo = SharedEmbedder(embedder)
        self.views: dict[tuple[str, str], _View] = {}
        self.locks: dict[tuple[str, str], threading.Lock] = {}  # one builder per namespace


_VIEWS: weakref.WeakKeyDictionary[Any, _Tenancy] = weakref.WeakKeyDictionary()
_VIEWS_LOCK = threading.Lock()


def namespace_view(index: GraphIndex, namespace: str, key: str = NAMESPACE_KEY) -> GraphIndex:
    """The current index of one namespace of ``index``: cached, rebuilt when it changed.

    See the module docstring. Thread-safe: one builder per namespace, namespaces built
    concurrently; a view once returned is never modified, so a caller may keep using it
    while the index moves on.

    Raises
    ------
    ConfigError
        For a bad namespace or an index without a ledger.
    """
    check_namespace(namespace, index)
    with _VIEWS_LOCK:
        tenancy = _VIEWS.get(index)
        if tenancy is None or tenancy.memo.embedder is not index.embedder:
            tenancy = _VIEWS[index] = _Tenancy(index.embedder)
        held = tenancy.views.get((key, namespace))
        if held is not None and held.current(index):
            return held.view
        lock = tenancy.locks.setdefault((key, namespace), threading.Lock())
    with lock:
        return _refreshed(index, tenancy, namespace, key)


def _refreshed(index: GraphIndex, tenancy: _Tenancy, namespace: str, key: str) -> GraphIndex:
    """The namespace's view, rebuilt if its documents changed (under its builder lock)."""
    views = tenancy.views
    held = views.get((key, namespace))
    if held is None or not held.current(index):
        graph, version, ledger = index.graph, index.graph.version, index.ledger
        assert ledger is not None  # stamped before the ledger is read: a later change shows
        sources = _sources(index, namespace, key)
        if held is None or not _same(held.sources, sources):
            carry = () if held is None else (held.view.graph,)
            view = namespace_index(index, namespace, key, carry=carry, embedder=tenancy.memo)
            held = _View(graph, version, ledger, sources, view)
        else:
            held = _View(graph, version, ledger, held.sources, held.view)
        views[(key, namespace)] = held  # one assignment: readers see the old or the new
    return held.view


# ---------------------------------------------------------------------- retrievers
class EmptyResult:
    """The result of a namespace no document has: no evidence, in any output.

    >>> EmptyResult("acme").evidence("passages", 5)
    []
    """

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace

    def __repr__(self) -> str:
        return f"EmptyResult(namespace={self.namespace!r})"

    def evidence(self, output: str = "passages", k: int | None = None) -> list[Any]:
        """No evidence (``output`` and ``k`` are accepted as every result takes them)."""
        return []


Build = Callable[[Any, Any], Any]
"""``build(view_index, config) -> core retriever`` (``EmptyGraphError``: nothing to search)."""


class NamespacedRetriever:
    """A method's core retriever confined to one namespace of a live index.

    Parameters
    ----------
    index
        A :class:`~kgpath.index.GraphIndex` built by ``from_documents`` (it has a ledger).
    build
        ``build(view, config)``: the method's core retriever over a namespace's index
        (:class:`kgpath.facade.EvidenceRetriever` passes the method's constructor); an
        :class:`~kgpath.errors.EmptyGraphError` means "nothing to search": the namespace's
        results are empty.
    namespace
        The default namespace (``None``: each call must name one).
    key
        The document metadata key holding the namespace.
    config
        Passed to ``build`` (:func:`copy.copy` and set another one for a variant).

    Raises
    ------
    ConfigError
        For an index without a ledger or a bad namespace (naming it).

    Notes
    -----
    ``retrieve(query, namespace=None, **options)`` and ``aretrieve`` return the method's
    native result over the namespace's current view (:func:`namespace_view`), or an
    :class:`EmptyResult`. The cores built so far are kept per namespace, one each.
    Attribute reads the wrapper does not answer (e.g. a method's prompt) go to the
    default namespace's core.
    """

    def __init__(self, index: GraphIndex, build: Build, *, namespace: str | None = None,
                 key: str = NAMESPACE_KEY, config: Any = None) -> None:
        if namespace is None:
            _check_ledger(index, "a NamespacedRetriever")
        else:
            check_namespace(namespace, index)
        if not isinstance(key, str) or not key:
            raise ConfigError(f"namespace_key must be a non-empty string, got {key!r}")
        self.source = index
        self.build = build
        self.namespace = namespace
        self.key = key
        self.config = config
        self._cores: dict[str, tuple[GraphIndex, Any]] = {}
        self._attrs: dict[str, Any] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (f"NamespacedRetriever(namespace={self.namespace!r}, key={self.key!r}, "
                f"source={self.source!r})")

    def __copy__(self) -> NamespacedRetriever:
        """A copy with its own cores (a new ``config`` must not reuse the old ones)."""
        out = NamespacedRetriever(self.source, self.build, namespace=self.namespace,
                                  key=self.key, config=self.config)
        out._attrs = dict(self._attrs)
        return out

    def _name(self, namespace: str | None) -> str:
        ns = namespace if namespace is not None else self.namespace
        if ns is None:
            raise ConfigError("no namespace: give namespace= to the retriever or the call")
        return check_namespace(ns, self.source)

    def view(self, namespace: str | None = None) -> GraphIndex:
        """The current index of ``namespace`` (default: the retriever's)."""
        return namespace_view(self.source, self._name(namespace), self.key)

    def core_for(self, namespace: str | None = None) -> Any:
        """The core retriever over ``namespace``'s current view, ``None`` if it is empty."""
        ns = self._name(namespace)
        view = namespace_view(self.source, ns, self.key)
        with self._lock:
            hit = self._cores.get(ns)
        if hit is not None and hit[0] is view:
            return hit[1]
        try:
            core = self.build(view, self.config)
        except EmptyGraphError:
            core = None
        with self._lock:
            for path, value in self._attrs.items():
                if core is not None:
                    set_path(core, path, value)
            self._cores[ns] = (view, core)
        return core

    def set_attr(self, path: str, value: Any) -> None:
        """Set the dotted attribute ``path`` (e.g. a prompt) on every core, now and later."""
        with self._lock:
            self._attrs[path] = value
            for _, core in self._cores.values():
                if core is not None:
                    set_path(core, path, value)

    def pinned(self, namespace: str) -> PinnedNamespace:
        """A view of this retriever fixed on ``namespace`` (what the facade runs a call on)."""
        return PinnedNamespace(self, self._name(namespace))

    @property
    def index(self) -> GraphIndex:
        """The default namespace's current index (what a core's ``index`` would be)."""
        return self.view()

    @property
    def graph(self) -> KnowledgeGraph:
        """The default namespace's current graph."""
        return self.view().graph

    def retrieve(self, query: str, *, namespace: str | None = None, **options: Any) -> Any:
        """The method's result over the namespace (``options``: the method's per-call ones)."""
        core = self.core_for(namespace)
        if core is None:
            return EmptyResult(self._name(namespace))
        return core.retrieve(query, **options)

    async def aretrieve(self, query: str, *, namespace: str | None = None,
                        **options: Any) -> Any:
        """Async :meth:`retrieve` (passages the index lacks embedded on the async API)."""
        await self.source.apassage_vectors()
        core = self.core_for(namespace)
        if core is None:
            return EmptyResult(self._name(namespace))
        return await core.aretrieve(query, **options)

    def retrieve_by_vector(self, vector: Any, *, query: str, namespace: str | None = None,
                           **options: Any) -> Any:
        """:meth:`retrieve` with a query embedding, for cores that take one (else ignored)."""
        core = self.core_for(namespace)
        if core is None:
            return EmptyResult(self._name(namespace))
        if hasattr(core, "retrieve_by_vector"):
            return core.retrieve_by_vector(vector, query=query, **options)
        return core.retrieve(query, **options)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("source", "namespace", "build", "key", "config"):
            raise AttributeError(name)
        core = self.core_for(None) if self.namespace is not None else None
        if core is None:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        return getattr(core, name)

    def cores(self) -> Iterator[tuple[str, Any]]:
        """``(namespace, core)`` of the cores built so far (``None`` for an empty one)."""
        with self._lock:
            items = list(self._cores.items())
        return iter([(ns, core) for ns, (_, core) in items])


class PinnedNamespace:
    """A :class:`NamespacedRetriever` with one namespace: the core one call runs on."""

    def __init__(self, tenants: NamespacedRetriever, namespace: str) -> None:
        self.tenants, self.namespace = tenants, namespace
        self.graph = tenants.view(namespace).graph  # for "did you mean" on a bad anchor

    def retrieve(self, query: str, **options: Any) -> Any:
        """:meth:`NamespacedRetriever.retrieve` in this namespace."""
        return self.tenants.retrieve(query, namespace=self.namespace, **options)

    async def aretrieve(self, query: str, **options: Any) -> Any:
        """:meth:`NamespacedRetriever.aretrieve` in this namespace."""
        return await self.tenants.aretrieve(query, namespace=self.namespace, **options)

    def retrieve_by_vector(self, vector: Any, *, query: str, **options: Any) -> Any:
        """:meth:`NamespacedRetriever.retrieve_by_vector` in this namespace."""
        return self.tenants.retrieve_by_vector(vector, query=query, namespace=self.namespace,
                                               **options)


def set_path(root: Any, path: str, value: Any) -> None:
    """``setattr`` of the dotted attribute ``path`` of ``root`` (``"decomposer.prompt"``)."""
    *rest, last = path.split(".")
    for name in rest:
        root = getattr(root, name)
    setattr(root, last, value)
