"""PCR result types: :class:`PCRHit`, :class:`PCRResult` (the evidence contract)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgpath.evidence import Evidence, check_output, passages_from_sources, rank_items
from kgpath.graph import Edge, KnowledgeGraph, Node
from kgpath.methods.pcr.config import PCRConfig
from kgpath.methods.pcr.passages import PassageContext, question_evidence

__all__ = ["LAZY", "PCRHit", "PCRResult", "format_path"]


LAZY: Any = object()
"""Placeholder for :attr:`PCRHit.path` / :attr:`PCRHit.edges` until first read."""

PathResolver = Callable[[], tuple[tuple[str, ...], tuple[Edge, ...]]]


class _OnFirstRead:
    """Descriptor of :class:`PCRHit`'s ``path`` and ``edges``: stored, or resolved when read.

    A hit made with ``path=LAZY, edges=LAZY, resolve=fn`` calls ``fn()`` (the backend's
    ``path(tree, pos)``) the first time either is read and keeps both; equality, ``repr``,
    pickling and :func:`dataclasses.replace` read them like any field, so a lazy hit is
    indistinguishable from an eager one. The default (class access) is ``()``.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return ()
        value = obj.__dict__[self.name]
        if value is LAZY:
            obj._materialise()
            value = obj.__dict__[self.name]
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.name] = value


@dataclass(frozen=True)
class PCRHit:
    """One retrieved node with its score and structural trace.

    ``path`` and ``edges`` may be resolved on first read (kgpath: PCR builds hits with
    ``resolve=`` so a caller who reads only ids and scores never pays for the paths; issue
    14). Node indices and edge indices of a graph are append-only, so a path read later
    names the same nodes and edges.
    """

    node: Node
    score: float
    hops: int | None
    """Shortest-path length from the (nearest) anchor (``None`` if reached only by global
    fallback)."""
    path: tuple[str, ...] = _OnFirstRead()  # type: ignore[assignment]
    """Node ids of a shortest path anchor -> node (empty if unreachable)."""
    edges: tuple[Edge, ...] = _OnFirstRead()  # type: ignore[assignment]
    """The edges along :attr:`path`."""
    node_score: float | None = None
    """With path-aware scoring (``score="path"|"mixed"``): the node's own score."""
    path_score: float | None = None
    """With path-aware scoring: the query's cosine to the textualised path."""
    resolve: PathResolver | None = field(default=None, repr=False, compare=False)
    """Returns ``(path, edges)`` when they were given as :data:`LAZY`."""

    @classmethod
    def lazy(
        cls, node: Node, score: float, hops: int, resolve: PathResolver,
        node_score: float | None = None, path_score: float | None = None,
    ) -> PCRHit:
        """A hit whose ``path`` and ``edges`` are ``resolve()``'d on first read.

        Fills the fields directly (the frozen ``__init__`` sets them one by one through
        ``object.__setattr__``, several times slower, and PCR builds k of these per query).
        """
        hit = object.__new__(cls)
        hit.__dict__.update(node=node, score=score, hops=hops, path=LAZY, edges=LAZY,
                            node_score=node_score, path_score=path_score, resolve=resolve)
        return hit

    def _materialise(self) -> None:
        d = self.__dict__
        resolve = d["resolve"]
        if resolve is None:
            if d["path"] is not LAZY and d["edges"] is not LAZY:
                return  # another thread resolved both (and dropped the resolver) first
            raise ValueError("PCRHit built with LAZY path/edges needs resolve=")
        path, edges = resolve()
        d["path"], d["edges"] = tuple(path), tuple(edges)
        d["resolve"] = None  # drop the BFS tree the resolver holds (after path and edges)

    def __getstate__(self) -> dict[str, Any]:
        if self.__dict__["path"] is LAZY or self.__dict__["edges"] is LAZY:
            self._materialise()
        return {**self.__dict__, "resolve": None}

    @property
    def id(self) -> str:
        """Node id."""
        return self.node.id

    @property
    def anchor_id(self) -> str | None:
        """Id of the anchor this hit's path starts from (``None`` if unreachable)."""
        return self.path[0] if self.path else None

    def path_text(self, graph: KnowledgeGraph) -> str:
        """Readable path with relation labels, e.g. ``A -[uses]-> B -[runs_on]-> C``."""
        if not self.path:
            return "(not reachable from the anchor)"
        return format_path(graph, self.path, self.edges)


@dataclass(frozen=True)
class PCRResult:
    """PCR output: the hits plus everything needed to explain them."""

    query: str
    anchor: Node
    """The (first) anchor."""
    anchor_resolution: str
    """How the anchor was found: ``"id"``, ``"name"``, ``"linked"``, ``"similarity"`` or a
    fallback note."""
    hits: tuple[PCRHit, ...]
    reachable_count: int
    """``|C_reachable|`` including the anchor(s) (the union over anchors)."""
    fallback_used: bool
    config: PCRConfig
    trace: dict[str, Any] = field(default_factory=dict)
    graph: KnowledgeGraph | None = field(default=None, repr=False, compare=False)
    """Resolves names and passages: the graph itself in memory; from a database backend, a
    small graph of the result's nodes, path edges and cited passages."""
    anchors: tuple[Node, ...] = ()
    """Every anchor, in question order (one unless several were given or linked)."""
    passages: PassageContext | None = field(default=None, repr=False, compare=False)
    """Query vector, shared passage vectors and extra hits for ``passage_order="question"``
    (:mod:`kgpath.methods.pcr.passages`); ``None``: passages in hit order."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.hits)

    def evidence(self, output: str = "passages", k: int | None = None) -> list[Evidence]:
        """The evidence contract (:mod:`kgpath.evidence`).

        ``"native"``: one ``node`` item per hit, in hit order (text: the node's text, else
        its name). ``"passages"`` (a kgpath choice, :mod:`kgpath.methods.pcr.passages`):
        with ``passage_order="question"`` and passage vectors (the index's in memory, the
        stored ones of the cited passages on a graph store), the passages the hits (up to
        ``passage_hits``) and anchors cite, by
        ``passage_weight·cos(q, passage) + (1 − passage_weight)·best citing hit score``;
        otherwise hit order, then each hit's provenance in its stored order. A passage
        takes the trace of the best hit citing it. With ``rerank="propagation"`` (the
        default) and the index's passage vectors (in memory; not database backends) those
        passages are then re-ranked by graph propagation
        (:mod:`kgpath.methods.augmented.rerank`).
        """
        mode = check_output(output)
        nodes = [self._node_evidence(h) for h in self.hits]
        if mode == "native" or self.graph is None:
            return rank_items(nodes, k)
        rerank = (self.config.rerank is not None and self.passages is not None
                  and self.passages.whole_graph)  # in memory: the whole graph to walk
        if self.passages is not None and self.config.passage_order == "question":
            items = question_evidence(self, nodes, self._node_evidence, None if rerank else k)
        else:
            pairs = [(h.node.provenance, e) for h, e in zip(self.hits, nodes)]
            items = passages_from_sources(self.graph, pairs)
        if rerank:
            from kgpath.methods.augmented.rerank import propagation_rerank

            items = propagation_rerank(self.graph, self.query, items, "pcr")
        return rank_items(items, k)

    def _hit_anchor(self, hit: PCRHit) -> Node:
        aid = hit.anchor_id
        return next((a for a in self.anchors if a.id == aid), self.anchor)

    def _node_evidence(self, hit: PCRHit) -> Evidence:
        anchor = self._hit_anchor(hit)
        trace: dict[str, Any] = {
            "anchor_id": anchor.id,
            "anchor_name": anchor.name,
            "anchor_resolution": self.anchor_resolution,
            "node_id": hit.node.id,
            "hops": hit.hops,
            "node_ids": list(hit.path),
            "relations": [e.relation for e in hit.edges],
            "passage_ids": list(hit.node.provenance),
            "fallback": bool(self.fallback_used),
        }
        if self.graph is not None and hit.path:
            trace["path"] = format_path(self.graph, hit.path, hit.edges)
        return Evidence(hit.node.id, hit.node.text or hit.node.name, hit.score, "node",
                        "pcr", trace=trace, source_metadata=hit.node.metadata)

    def __len__(self) -> int:
        return len(self.hits)

    @property
    def ids(self) -> list[str]:
        """Hit node ids in rank order."""
        return [h.id for h in self.hits]


def format_path(graph: KnowledgeGraph, path: Sequence[str], edges: Sequence[Edge]) -> str:
    """Render a node path with its edge labels, showing direction for reversed edges."""
    if not path:
        return ""
    out = graph.node(path[0]).name
    for prev, nxt, e in zip(path, path[1:], edges):
        label = e.relation or ""
        if e.source == prev and e.target == nxt:
            out += f" -[{label}]-> " if label else " -> "
        else:
            out += f" <-[{label}]- " if label else " <- "
        out += graph.node(nxt).name
    return out
