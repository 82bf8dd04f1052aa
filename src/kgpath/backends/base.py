"""The structure-store protocol: a small required interface, defaults, optional capabilities.

A backend says where a graph lives; a method is written once against
:class:`GraphBackend` and asks for anything beyond structure by **capability** instead of
testing the backend's class. Two backends ship:

* :class:`~kgpath.backends.memory.InMemoryBackend` - the CSR arrays of a
  :class:`~kgpath.graph.KnowledgeGraph` (node keys are ``int`` node indices);
* :class:`~kgpath.backends.cypher.CypherBackend` - a Cypher database (node keys are
  :class:`~kgpath.backends.cypher.NodeRow` objects, compared by node id).

**Required structure** (abstract): :meth:`~GraphBackend.node_count`,
:meth:`~GraphBackend.node_by_id`, :meth:`~GraphBackend.nodes_by_name`,
:meth:`~GraphBackend.node` and :meth:`~GraphBackend.neighbours`. **Derived, with defaults**
a backend may override for speed: :meth:`~GraphBackend.reachable` (a breadth-first search
over :meth:`~GraphBackend.neighbours`, same order and parents as
:meth:`KnowledgeGraph.bfs`), :meth:`~GraphBackend.path`,
:meth:`~GraphBackend.passages` (none), :meth:`~GraphBackend.evidence_graph`,
:meth:`~GraphBackend.names` (anchor lookup through :meth:`~GraphBackend.nodes_by_name`),
:meth:`~GraphBackend.bind` and :meth:`~GraphBackend.call_trace`. The template-base shape of
LlamaIndex's ``BasePGRetriever``: implement five methods, get a working store.

**Optional capabilities** are small abstract classes a backend also derives from; a method
asks ``backend.capability(VectorSearch)`` and gets the backend back typed as that
capability, or a :class:`~kgpath.errors.CapabilityError` naming what is missing:

* :class:`VectorSearch` - query embedding and similarity over nodes (Eq. 2 of PCR);
* :class:`PassageSearch` - the shared passage vectors and the nodes citing a passage;
* :class:`InProcessGraph` - the whole graph in this process (walks its CSR arrays);
* :class:`NeighbourhoodPushDown` - batched neighbourhood queries run by the store (a
  method's neighbourhood pushed down, e.g. PathRAG's candidate pool).

The BFS-tree contract (:class:`BFSTree`) is the one :meth:`KnowledgeGraph.bfs` defines: the
anchor first at distance 0, then level by level; ``parent_pos[i]`` is the position of node
``i``'s parent (``-1`` for the anchor). Ties inside a level follow the in-memory rule (see
:mod:`kgpath.backends.cypher.queries`), so every backend returns the same tree.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    Protocol,
    Self,
    TypeAlias,
    TypeVar,
    cast,
    runtime_checkable,
)

import numpy as np

from kgpath.errors import CapabilityError, NodeNotFoundError
from kgpath.graph import Direction, Edge, KnowledgeGraph, Node, Passage
from kgpath.index.linking import NameLookup
from kgpath.ingest.extraction import entity_key

if TYPE_CHECKING:
    from kgpath.embeddings import Embedder
    from kgpath.index.graph_index import GraphIndex
    from kgpath.index.passage_vectors import PassageVectors

__all__ = [
    "BFSTree",
    "BackendNames",
    "EntityRecord",
    "PassageEntityStore",
    "PassageRecord",
    "GraphBackend",
    "InProcessGraph",
    "KeyTree",
    "Keys",
    "NeighbourhoodPushDown",
    "PassageSearch",
    "PathRecord",
    "VectorSearch",
    "parent_chain",
]

K = TypeVar("K")
T = TypeVar("T")
C = TypeVar("C")

#: A collection of node keys: a sequence, or a numpy array of node indices in memory.
Keys: TypeAlias = Sequence[K] | np.ndarray


@runtime_checkable
class BFSTree(Protocol[K]):
    """Reachable nodes in BFS order with hop distances and parent pointers.

    :class:`~kgpath.graph.BFSResult` is one (its ``nodes`` are node indices).
    """

    @property
    def nodes(self) -> Sequence[K]:
        """Node keys in BFS order, the anchor first."""
        ...

    @property
    def dist(self) -> np.ndarray:
        """Hop distance of each node (``int``)."""
        ...

    @property
    def parent_pos(self) -> np.ndarray:
        """Position of each node's BFS parent (``-1`` for the anchor)."""
        ...

    def position_of(self, node: K) -> int:
        """Position of ``node`` in :attr:`nodes` (``-1`` if not reached)."""
        ...


class PathRecord(Protocol):
    """A retrieved node with the edges of its path (e.g. a :class:`~kgpath.methods.pcr.PCRHit`)."""

    @property
    def node(self) -> Node:
        """The node record."""
        ...

    @property
    def edges(self) -> tuple[Edge, ...]:
        """Edges along its path from the anchor."""
        ...


@dataclass(frozen=True)
class KeyTree(Generic[K]):
    """The BFS tree of the default :meth:`GraphBackend.reachable` (any hashable keys)."""

    nodes: list[K]
    dist: np.ndarray
    parent_pos: np.ndarray
    parent_edge: list[Edge | None]
    """The edge from each node's parent (``None`` for the anchor)."""
    place: dict[K, int]

    def position_of(self, node: K) -> int:
        """Position of ``node`` (``-1`` if not reached)."""
        return self.place.get(node, -1)


_BASES: dict[type, frozenset[type]] = {}


def _bases_of(cls: type) -> frozenset[type]:
    """Every class ``cls`` derives from, cached per class.

    PCR asks for a capability several times per query (~60 us at depth 1); a set lookup
    costs a third of an ``isinstance`` on an abstract base class.
    """
    bases = _BASES.get(cls)
    if bases is None:
        bases = _BASES[cls] = frozenset(cls.__mro__)
    return bases


class GraphBackend(ABC, Generic[K, T]):
    """Where a graph lives: ``K`` is its node key type, ``T`` its :class:`BFSTree` type.

    Subclasses implement the five abstract structure methods; everything else has a
    default. Implementations must be safe to call from several threads at once (async
    retrieval runs blocking backends in worker threads); per-retrieval state belongs in
    :meth:`bind`.
    """

    @property
    def name(self) -> str:
        """Short name recorded in traces, e.g. ``"memory"`` or ``"cypher/kuzu"``."""
        return "backend"

    blocking: bool = False
    """True when calls block on I/O (async retrieval then runs them in a thread)."""

    # -- capabilities
    def capability(self, cap: Callable[..., C]) -> C:
        """Return this backend as capability ``cap`` (e.g. :class:`VectorSearch`).

        ``cap`` is a capability class (typed as a callable so that type checkers accept
        an abstract class).

        Raises
        ------
        CapabilityError
            Naming the capability and the backend, when the backend does not offer it.
        """
        if cap in _bases_of(type(self)) or isinstance(self, cast(type, cap)):
            return cast(C, self)
        label = getattr(cap, "__name__", repr(cap))
        raise CapabilityError(
            f"the {self.name!r} backend ({type(self).__name__}) has no {label} capability",
            capability=label)

    def has(self, cap: type) -> bool:
        """Whether :meth:`capability` would return ``cap``."""
        return cap in _bases_of(type(self)) or isinstance(self, cap)

    # -- per retrieval
    def bind(self) -> Self:
        """A view for one retrieval (e.g. counting its queries); default ``self``."""
        return self

    def call_trace(self) -> dict[str, Any]:
        """Extra trace entries of the bound retrieval; default none."""
        return {}

    # -- required structure
    @abstractmethod
    def node_count(self) -> int:
        """Number of nodes in the graph."""

    @abstractmethod
    def node_by_id(self, node_id: str) -> K | None:
        """The node with this id, or ``None``."""

    @abstractmethod
    def nodes_by_name(self, name: str) -> Keys[K]:
        """Nodes whose normalised name equals ``name``'s, in node order.

        Names are compared lower-cased with single spaces (as
        :func:`kgpath.index.linking.find_by_name`).
        """

    @abstractmethod
    def node(self, key: K) -> Node:
        """The node record of ``key``."""

    @abstractmethod
    def neighbours(self, key: K, *, direction: Direction) -> list[tuple[K, Edge]]:
        """``(neighbour, edge)`` of every edge at ``key`` in edge order.

        ``"out"``: edges leaving ``key``; ``"in"``: edges arriving; ``"both"``: the
        ``"out"`` list then the ``"in"`` list.
        """

    # -- derived structure (defaults)
    def reachable(self, anchor: K, *, max_depth: int | None, direction: Direction) -> T:
        """Nodes reachable from ``anchor`` in ``<= max_depth`` hops, as a BFS tree.

        Eq. (1) of PCR. The default is a breadth-first search over :meth:`neighbours`
        with :meth:`KnowledgeGraph.bfs`'s order: each level in discovery order, a level's
        forward edges before its reversed ones (``"both"``), the first edge met is the
        parent edge. O(reached nodes + their edges) calls to :meth:`neighbours`.
        """
        dirs: tuple[Direction, ...] = ("out", "in") if direction == "both" else (direction,)
        nodes, dist, ppos = [anchor], [0], [-1]
        pedge: list[Edge | None] = [None]
        place: dict[Any, int] = {anchor: 0}
        frontier, depth = [anchor], 0
        while frontier and (max_depth is None or depth < max_depth):
            depth += 1
            nxt = []
            for d in dirs:
                for u in frontier:
                    for v, e in self.neighbours(u, direction=d):
                        if v not in place:
                            place[v] = len(nodes)
                            nodes.append(v)
                            dist.append(depth)
                            ppos.append(place[u])
                            pedge.append(e)
                            nxt.append(v)
            frontier = nxt
        return KeyTree(nodes, np.asarray(dist, np.int32), np.asarray(ppos, np.int32),
                       pedge, place)  # type: ignore[return-value]

    def path(self, tree: T, pos: int) -> tuple[tuple[str, ...], tuple[Edge, ...]]:
        """Node ids and edges along the tree path anchor -> ``tree.nodes[pos]``.

        The default reads a :class:`KeyTree` (the default :meth:`reachable`).
        """
        t: Any = tree
        chain = parent_chain(t.parent_pos, pos)
        return (tuple(self.node(t.nodes[i]).id for i in chain),
                tuple(t.parent_edge[i] for i in chain[1:]))

    def passages(self, ids: Sequence[str]) -> list[Passage]:
        """The passages with these ids that the store holds; default none."""
        return []

    def path_node(self, tree: T, node_id: str) -> Node:
        """The record of a node on a tree path (default: looked up by id)."""
        key = self.node_by_id(node_id)
        if key is None:
            raise NodeNotFoundError(
                f"path node {node_id!r} is not in the {self.name!r} backend", key=node_id)
        return self.node(key)

    def evidence_graph(
        self, tree: T, anchor: Node, hits: Sequence[PathRecord]
    ) -> KnowledgeGraph:
        """A graph that resolves the names and cited passages of a result.

        The default builds a small graph of the anchor, the hits and their path nodes and
        edges (:meth:`path_node`), plus the passages the hits cite (:meth:`passages`).
        The in-memory backend returns its whole graph.
        """
        g = KnowledgeGraph()
        cited: dict[str, None] = {}
        for n in (anchor, *(h.node for h in hits)):
            _add_node(g, n)
        for h in hits:
            cited.update(dict.fromkeys(h.node.provenance))
            for e in h.edges:
                for end in (e.source, e.target):
                    if end not in g:
                        _add_node(g, self.path_node(tree, end))
                g.add_edge(e.source, e.target, e.relation, e.text, type=e.type,
                           weight=e.weight, provenance=e.provenance, metadata=e.metadata)
        for p in self.passages(list(cited)) if cited else ():
            g.add_passage(p.id, p.text, p.metadata)
        return g

    def names(self) -> NameLookup:
        """The anchor-name lookup of the entity linker (default: :class:`BackendNames`)."""
        return BackendNames(self)


class BackendNames:
    """:class:`NameLookup` through :meth:`GraphBackend.nodes_by_name`.

    One name query per candidate span; the store's normalisation (lower case, single
    spaces) is kept only when the node's ``entity_key`` equals the span's, so possessives,
    articles, accents and punctuation the key drops do not link. A backend that stores the
    key looks it up instead (``CypherBackend.names``).
    """

    def __init__(self, b: GraphBackend[Any, Any]) -> None:
        self.b = b

    def candidates(self, key: str, span: str) -> list[Any]:
        """The nodes named ``span`` (lower case, single spaces) whose key is ``key``."""
        b = self.b
        return [k for k in b.nodes_by_name(span) if entity_key(b.node(k).name or "") == key]

    def node(self, k: Any) -> Node:
        """The backend's node record."""
        return self.b.node(k)


# ---------------------------------------------------------------------- capabilities
class VectorSearch(ABC, Generic[K]):
    """Capability: query embedding and similarity over the store's nodes."""

    @property
    @abstractmethod
    def modes(self) -> tuple[str, ...]:
        """Scoring modes :meth:`score` supports (``"vector"``, ``"hybrid"``, ``"bm25"``)."""

    @property
    @abstractmethod
    def embedder(self) -> Embedder:
        """The embedder of the node vectors (and of any text compared to the query)."""

    @abstractmethod
    def embed_query(self, query: str) -> np.ndarray:
        """The query embedding (same embedder as the nodes)."""

    @abstractmethod
    async def aembed_query(self, query: str) -> np.ndarray:
        """Async :meth:`embed_query`."""

    @abstractmethod
    def check_query_vector(self, query_vec: Any) -> np.ndarray:
        """A caller-supplied query vector as 1-D float32 (raises on a wrong dimension)."""

    @abstractmethod
    def score(
        self, query: str, query_vec: np.ndarray, candidates: Keys[K], *, mode: str,
        alpha: float,
    ) -> np.ndarray:
        """``sim(q, v)`` (or a hybrid with BM25) for ``candidates``, in order."""

    @abstractmethod
    def most_similar(self, query_vec: np.ndarray) -> K:
        """The node most similar to the query (anchor of last resort)."""

    @abstractmethod
    def global_top(
        self, query: str, query_vec: np.ndarray, k: int, *, mode: str, alpha: float,
        exclude: K | None = None,
    ) -> tuple[Keys[K], np.ndarray, int]:
        """Top-``k`` of all nodes, best first, ties by node order.

        Returns ``(keys, scores, number scored)``.
        """


class PassageSearch(ABC, Generic[K]):
    """Capability: the store's shared passage vectors and the nodes citing a passage."""

    @abstractmethod
    def passage_vectors(self) -> PassageVectors | None:
        """Every passage embedded once per ``(graph, embedder)``; ``None`` without passages."""

    @abstractmethod
    async def apassage_vectors(self) -> PassageVectors | None:
        """Async :meth:`passage_vectors` (missing passages through ``aembed_passages``)."""

    @abstractmethod
    def nodes_citing(self, passage_id: str, vectors: PassageVectors) -> list[K]:
        """Nodes whose provenance cites ``passage_id``, in node order."""


class InProcessGraph(ABC):
    """Capability: the whole graph in this process (a method may walk its CSR arrays)."""

    @property
    @abstractmethod
    def graph(self) -> KnowledgeGraph:
        """The whole graph."""

    @property
    @abstractmethod
    def index(self) -> GraphIndex:
        """Its :class:`~kgpath.index.graph_index.GraphIndex` (vectors, BM25, passages)."""


class NeighbourhoodPushDown(ABC):
    """Capability: batched neighbourhood queries answered by the store.

    Node ids in, plain tuples out, ``batch_size`` ids per round trip: what a method needs
    to fetch only the neighbourhood it will read (PathRAG's pool over a database).
    """

    @abstractmethod
    def adjacent_pairs(
        self, ids: Sequence[str], *, batch_size: int
    ) -> list[tuple[str, str, bool]]:
        """``(node, neighbour, forward)`` once per distinct neighbour and direction.

        For each node in ``ids``; ``forward``: the edge points from ``node`` to
        ``neighbour``.
        """

    @abstractmethod
    def order_and_degree(
        self, ids: Sequence[str], *, directed: bool, batch_size: int
    ) -> dict[str, tuple[Hashable, int]]:
        """``{id: (node order, distinct neighbours)}`` of the ids the store holds.

        The node order is the store's order value (the in-memory node index after
        :func:`~kgpath.backends.cypher.load_graph`), or the id when it has none;
        ``directed`` counts out-neighbours only, else neighbours either way.
        """


@dataclass(frozen=True)
class PassageRecord:
    """A passage as a store holds it: its position, the nodes citing it, its vector."""

    passage: Passage
    order: Hashable
    entities: tuple[str, ...]
    """Ids of the nodes whose provenance cites the passage, in node order."""
    vector: np.ndarray | None


@dataclass(frozen=True)
class EntityRecord:
    """A node with its position in the store's node order."""

    node: Node
    order: Hashable


class PassageEntityStore(ABC):
    """Capability: passages with their vectors, order and citing entities, queried by id.

    What passage-level methods (graph-augmented retrieval) read from a store without
    holding the graph: the exact top of the passages by similarity, records by id, and
    entities by id or by linker key (:func:`~kgpath.ingest.extraction.entity_key`).
    """

    @abstractmethod
    def passage_top(self, query_vec: np.ndarray, n: int) -> list[tuple[str, float]]:
        """The ``n`` passages most similar to ``query_vec``, best first, ties by passage order.

        Scores are the float32 dot product with the stored passage vectors.
        """

    @abstractmethod
    def passage_records(self, ids: Sequence[str]) -> dict[str, PassageRecord]:
        """Records of the passages with these ids that the store holds."""

    @abstractmethod
    def entity_records(self, ids: Sequence[str]) -> dict[str, EntityRecord]:
        """Records of the nodes with these ids that the store holds."""

    @abstractmethod
    def entities_by_key(self, keys: Sequence[str]) -> dict[str, EntityRecord]:
        """Records of every node whose name's entity key is one of ``keys``."""

    def passages_held(self, ids: Sequence[str]) -> set[str]:
        """The ids among ``ids`` of passages the store holds (default: their records)."""
        return set(self.passage_records(ids))


def parent_chain(parent_pos: np.ndarray, pos: int) -> list[int]:
    """Positions along the tree path from the root to ``pos`` (root first)."""
    out = [pos]
    while parent_pos[pos] >= 0:
        pos = int(parent_pos[pos])
        out.append(pos)
    out.reverse()
    return out


def _add_node(g: KnowledgeGraph, n: Node) -> None:
    g.add_node(n.id, n.name, n.text, type=n.type, metadata=n.metadata, provenance=n.provenance)
