"""Section 4.3: retrieved paths, their text (Eq. 5), ordering policies and the prompt (Eq. 6).

:class:`PathOrdering` policies choose which paths enter the prompt and in which order
(Eq. 6 ascending reliability by default; the ablations of section 5.4 / Appendix D).
"""

from __future__ import annotations

import hashlib
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from kgpath.errors import ConfigError, KgpathError, short
from kgpath.graph import Edge, KnowledgeGraph, Node
from kgpath.prompts.pathrag import PATHRAG_FLAT_BLOCK, PATHRAG_PATH_BLOCK, PATHRAG_QA_PROMPT

if TYPE_CHECKING:  # pragma: no cover
    from kgpath.methods.pathrag.paths import PathCandidate

__all__ = [
    "ORDERINGS",
    "AscendingReliability",
    "DescendingReliability",
    "FlatFormat",
    "HopFirstOrdering",
    "PathOrdering",
    "PathRAGPath",
    "QAPrompt",
    "RandomOrdering",
    "build_prompt",
    "get_ordering",
    "materialize_path",
    "relation_text",
    "textual_path",
]


class PathOrdering(ABC):
    """Prompt policy of section 4.3 / Appendix D: which paths, in which order, how rendered.

    Subclasses implement :meth:`arrange`; :meth:`render` defaults to one numbered block
    per path (Eq. 5 text) and is overridden by :class:`FlatFormat`.
    """

    name: ClassVar[str] = ""

    @abstractmethod
    def arrange(self, pool: Sequence[PathCandidate], k: int, rng: random.Random) -> list[int]:
        """Positions into ``pool`` (ranked most reliable first) in prompt order, first to last."""

    def render(self, paths: Sequence[PathRAGPath], rng: random.Random) -> list[str]:
        """Context blocks for ``paths`` (already in prompt order)."""
        return [PATHRAG_PATH_BLOCK.format(number=i, text=p.text) for i, p in enumerate(paths, 1)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self).__name__)


class AscendingReliability(PathOrdering):
    """Eq. (6): the top-K paths by reliability, least reliable first, most reliable last."""

    name = "ascending"

    def arrange(self, pool: Sequence[PathCandidate], k: int, rng: random.Random) -> list[int]:
        """Top-``k`` positions reversed (``P_K, ..., P_1``)."""
        return list(range(min(k, len(pool))))[::-1]


class DescendingReliability(PathOrdering):
    """Ablation: the top-K paths with the most reliable first."""

    name = "descending"

    def arrange(self, pool: Sequence[PathCandidate], k: int, rng: random.Random) -> list[int]:
        """Top-``k`` positions in rank order (``P_1, ..., P_K``)."""
        return list(range(min(k, len(pool))))


class RandomOrdering(PathOrdering):
    """Ablation (Appendix D.1, "random"): the top-K paths in a seeded random order.

    Appendix D.1 says "randomly select K paths"; the ablation studies ordering, so this
    policy permutes the K retrieved paths rather than sampling the candidate pool.
    """

    name = "random"

    def arrange(self, pool: Sequence[PathCandidate], k: int, rng: random.Random) -> list[int]:
        """Shuffle the top-``k`` positions."""
        idx = list(range(min(k, len(pool))))
        rng.shuffle(idx)
        return idx


class HopFirstOrdering(PathOrdering):
    """Ablation (Appendix D.1, "hop-first"): fewest hops are most important.

    The whole candidate pool is sorted by hop count (random order within a hop count),
    the first ``K`` are selected and placed so that the fewest-hop paths come last.
    """

    name = "hop_first"

    def arrange(self, pool: Sequence[PathCandidate], k: int, rng: random.Random) -> list[int]:
        """``k`` fewest-hop positions, most important last."""
        keys = [(c.hops, rng.random(), i) for i, c in enumerate(pool)]
        keys.sort()
        chosen = [i for _, _, i in keys[:k]]
        return chosen[::-1]


class FlatFormat(AscendingReliability):
    """Ablation (Appendix D.2, "flat"): nodes and edges listed without path structure.

    The top-K paths are split into their distinct node and edge texts, which are listed in
    a seeded random order.
    """

    name = "flat"

    def render(self, paths: Sequence[PathRAGPath], rng: random.Random) -> list[str]:
        """One block per distinct node or edge text, shuffled."""
        items: dict[str, None] = {}
        for p in paths:
            for n in p.nodes:
                items.setdefault(_node_text(n), None)
            for group, a, b in zip(p.hop_edges, p.nodes, p.nodes[1:], strict=False):
                for e in group:
                    items.setdefault(_edge_text(e, a, b), None)
        texts = list(items)
        rng.shuffle(texts)
        return [PATHRAG_FLAT_BLOCK.format(text=t) for t in texts]


#: Built-in ordering policies by name.
ORDERINGS: dict[str, type[PathOrdering]] = {
    c.name: c
    for c in (
        AscendingReliability,
        DescendingReliability,
        RandomOrdering,
        HopFirstOrdering,
        FlatFormat,
    )
}


def get_ordering(ordering: str | PathOrdering) -> PathOrdering:
    """Return the policy for a name in :data:`ORDERINGS` or a :class:`PathOrdering`."""
    if isinstance(ordering, PathOrdering):
        return ordering
    if isinstance(ordering, str) and ordering in ORDERINGS:
        return ORDERINGS[ordering]()
    raise ConfigError(
        f"ordering must be one of {sorted(ORDERINGS)} or a PathOrdering, got {short(ordering)}"
    )


@dataclass(frozen=True)
class PathRAGPath:
    """A retrieved relational path with everything that explains its score.

    ``edges[i]`` is the graph edge used for hop ``i`` (``nodes[i] -> nodes[i+1]``; in
    undirected mode it may point backwards, see ``reversed_hops``); ``hop_edges[i]``
    lists every edge between the two nodes (parallel relations), all of which appear in
    the textual path. With ``reliability="literal_eq4"``, ``resources[i]`` is
    ``S(nodes[i])`` from the start node's propagation (Eq. 2) and ``reliability`` is
    Eq. (4) over them; with ``"edge_flow"``, ``resources = (1.0, f_1, ..., f_h)`` (the unit
    at the start, then the flow each edge carried) and ``reliability`` is the mean of
    ``f_1..f_h``. ``rank`` 1 is ``P_1``, the most reliable path.
    """

    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    hop_edges: tuple[tuple[Edge, ...], ...]
    reversed_hops: tuple[bool, ...]
    resources: tuple[float, ...]
    reliability: float
    rank: int
    text: str

    @property
    def ids(self) -> tuple[str, ...]:
        """Node ids along the path."""
        return tuple(n.id for n in self.nodes)

    @property
    def hops(self) -> int:
        """``|E_P|``."""
        return len(self.edges)

    @property
    def provenance(self) -> tuple[str, ...]:
        """Passage ids cited by the path's nodes, then its edges (first-seen order)."""
        prov: dict[str, None] = {}
        for n in self.nodes:
            prov.update(dict.fromkeys(n.provenance))
        for group in self.hop_edges:
            for e in group:
                prov.update(dict.fromkeys(e.provenance))
        return tuple(prov)

    @property
    def stable_id(self) -> str:
        """A short id derived from the node ids (same path -> same id across runs)."""
        digest = hashlib.sha1("\x1f".join(self.ids).encode("utf-8")).hexdigest()[:16]
        return f"pathrag-{digest}"

    @property
    def start(self) -> Node:
        """First node."""
        return self.nodes[0]

    @property
    def end(self) -> Node:
        """Last node."""
        return self.nodes[-1]

    def describe(self) -> str:
        """Compact rendering such as ``A -[rel]-> B <-[rel2]- C``."""
        out = self.nodes[0].name
        for e, rev, nxt in zip(self.edges, self.reversed_hops, self.nodes[1:], strict=False):
            label = e.relation
            if rev:
                out += f" <-[{label}]- " if label else " <- "
            else:
                out += f" -[{label}]-> " if label else " -> "
            out += nxt.name
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly structure (used by the adapters' metadata)."""
        return {
            "path_node_ids": list(self.ids),
            "path_node_names": [n.name for n in self.nodes],
            "path_edges": [
                {"source": e.source, "target": e.target, "relation": e.relation} for e in self.edges
            ],
            "reversed_hops": list(self.reversed_hops),
            "resources": list(self.resources),
            "reliability": self.reliability,
            "hops": self.hops,
            "rank": self.rank,
            "path": self.describe(),
        }


def _node_text(node: Node) -> str:
    return " ".join(node.search_text.split())


def _edge_text(edge: Edge, a: Node, b: Node) -> str:
    if edge.text:
        return " ".join(edge.text.split())
    src, dst = (a, b) if edge.source == a.id else (b, a)
    if edge.relation:
        return f"{src.name} {edge.relation} {dst.name}"
    return f"{src.name} is linked to {dst.name}"


def relation_text(graph: KnowledgeGraph, edge: Edge) -> str:
    """One retrieved relation as text: ``"<source> <relation> <target>: <edge text>"``.

    The authors' relation store embeds keywords, both endpoints and the description
    (``extract_entities`` in ``PathRAG/operate.py``); this is the same information.
    """
    src, dst = graph.node(edge.source), graph.node(edge.target)
    head = f"{src.name} {edge.relation} {dst.name}" if edge.relation else (
        f"{src.name} is linked to {dst.name}"
    )
    body = " ".join(edge.text.split())
    return f"{head}: {body}" if body and body != head else head


def textual_path(
    path_nodes: Sequence[Node], hop_edges: Sequence[Sequence[Edge]], sep: str = " | "
) -> str:
    """Eq. (5): ``t_P = concat([t_v0; t_e0; t_v1; ...])`` joined by ``sep``.

    Node text is :attr:`Node.search_text` (its name prefixed when the text lacks it); edge
    text is :attr:`Edge.text`, else ``"<source> <relation> <target>"``. Parallel edges of
    one hop are joined with ``"; "``.
    """
    parts = [_node_text(path_nodes[0])]
    for group, a, b in zip(hop_edges, path_nodes, path_nodes[1:], strict=False):
        parts.append("; ".join(_edge_text(e, a, b) for e in group))
        parts.append(_node_text(b))
    return sep.join(parts)


def materialize_path(graph: KnowledgeGraph, cand: PathCandidate, rank: int) -> PathRAGPath:
    """Turn a compact candidate into a :class:`PathRAGPath` with nodes, edges and Eq. (5) text."""
    csr = graph.csr()
    nodes = tuple(graph.node_at(i) for i in cand.nodes)
    edges: list[Edge] = []
    groups: list[tuple[Edge, ...]] = []
    revs: list[bool] = []
    for u, v in zip(cand.nodes, cand.nodes[1:], strict=False):
        fwd = _edges_between(csr, u, v)
        back = _edges_between(csr, v, u)
        if fwd:
            group = [graph.edge_at(e) for e in fwd + back]
            rev = False
        elif back:
            group = [graph.edge_at(e) for e in back]
            rev = True
        else:  # pragma: no cover - candidates come from the adjacency
            raise KgpathError(f"no edge between node indices {u} and {v}")
        edges.append(group[0])
        groups.append(tuple(group))
        revs.append(rev)
    return PathRAGPath(
        nodes=nodes,
        edges=tuple(edges),
        hop_edges=tuple(groups),
        reversed_hops=tuple(revs),
        resources=cand.resources,
        reliability=cand.reliability,
        rank=rank,
        text=textual_path(nodes, groups),
    )


def _edges_between(csr: dict[str, np.ndarray], u: int, v: int) -> list[int]:
    lo, hi = int(csr["out_indptr"][u]), int(csr["out_indptr"][u + 1])
    sel = csr["out_indices"][lo:hi] == v
    return [int(e) for e in np.sort(csr["out_edges"][lo:hi][sel])]


QAPrompt = str | Callable[[str, str], str]


def build_prompt(query: str, blocks: Sequence[str], template: QAPrompt = PATHRAG_QA_PROMPT) -> str:
    """Eq. (6): ``concat([q; t_PK; ...; t_P1])`` through the QA template.

    ``blocks`` are already in prompt order (see :class:`PathOrdering`); ``template`` is a
    format string with ``{query}`` and ``{paths}`` or a callable ``(query, paths) -> str``.
    """
    paths = "\n".join(blocks) if blocks else "(no relational paths were found)"
    if callable(template):
        return template(query, paths)
    return template.format(query=query, paths=paths)
