"""What to draw for one retrieval result: a small, method-neutral :class:`Picture`.

:mod:`kgpath.viz.build` makes one from a PCR, PathRAG or C2RAG result;
:mod:`kgpath.viz.png` and :mod:`kgpath.viz.html_page` render it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ROLE_ORDER", "PicEdge", "PicHop", "PicNode", "PicPath", "Picture"]

#: Drawing precedence of node roles (lower first): rows within a column, merged roles.
ROLE_ORDER = {"anchor": 0, "hit": 1, "path": 2, "region": 3, "passage": 4}


@dataclass(frozen=True)
class PicNode:
    """A node to draw. ``role``: ``"anchor"``, ``"hit"``, ``"path"``, ``"region"`` or ``"passage"``.

    An ``"anchor"`` node is drawn as a star; what the star means is the picture's
    :attr:`Picture.anchor_kind` (a PathRAG result has retrieved nodes, not anchors). A
    ``"passage"`` node is a C2RAG evidence passage.
    """

    id: str
    name: str
    role: str
    layer: int
    text: str = ""
    score: float | None = None
    hops: int | None = None
    rank: int | None = None
    info: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PicEdge:
    """A directed edge; ``paths`` lists the indices of the :class:`PicPath` using it."""

    source: str
    target: str
    label: str = ""
    paths: tuple[int, ...] = ()
    info: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PicPath:
    """A highlighted path (a PCR shortest path, a PathRAG path, a C2RAG candidate)."""

    index: int
    node_ids: tuple[str, ...]
    label: str
    reliability: float | None = None


@dataclass(frozen=True)
class PicHop:
    """One C2RAG hop: its constraint text, state and the nodes it touched."""

    step: int
    label: str
    state: str
    n_eff: float | None
    node_ids: tuple[str, ...]


@dataclass(frozen=True)
class Picture:
    """Everything needed to draw one retrieval result, independent of the method."""

    method: str
    query: str
    anchors: tuple[str, ...]
    nodes: tuple[PicNode, ...]
    edges: tuple[PicEdge, ...]
    paths: tuple[PicPath, ...] = ()
    hops: tuple[PicHop, ...] = ()
    notes: tuple[str, ...] = ()
    anchor_kind: str = "anchor"
    """What the star nodes are: ``"anchor"`` (PCR, C2RAG) or ``"retrieved node"`` (PathRAG)."""
    answer: str | None = None
    """Id of the highlighted passage node: the one the result's evidence ranks first."""
    hidden_paths: int = 0
    """Paths of the result not drawn (beyond ``max_paths``)."""

    @property
    def title(self) -> str:
        """``"<METHOD>: <query>"`` (query shortened)."""
        q = self.query if len(self.query) <= 90 else self.query[:87] + "..."
        return f"{self.method.upper()}: {q}"

    def node(self, node_id: str) -> PicNode:
        """The drawn node with this id."""
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(node_id)

    def anchor_heading(self, limit: int | None = None) -> str:
        """``"anchor: a"``, ``"anchors: a, b"`` or ``"retrieved nodes: a, b"`` (first ``limit``)."""
        names = self.anchor_names
        head = self.anchor_kind + ("s" if len(names) != 1 else "")
        shown = names if limit is None else names[:limit]
        return f"{head}: " + ", ".join(shown) + (" ..." if len(shown) < len(names) else "")

    @property
    def anchor_names(self) -> tuple[str, ...]:
        """Names of the anchor nodes."""
        by = {n.id: n.name for n in self.nodes}
        return tuple(by.get(a, a) for a in self.anchors)
