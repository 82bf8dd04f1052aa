"""C2RAG binding and propagation (Eq. 13-15).

:func:`induced_entities` is ``E_i(v)`` of a resolved constraint (Eq. 13);
:func:`merge_bindings` consolidates the induced sets of a placeholder into ``E_b(v)``
(Eq. 14: intersection, union when empty); :class:`BindingState` keeps the induced sets as
hops resolve; :func:`ground_constraint` anchors a two-placeholder constraint on the bound
end (Eq. 15), so it can be re-run through Eq. 4-9.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from kgpath.graph import KnowledgeGraph
from kgpath.methods.c2rag.alignment import Anchor, Candidate
from kgpath.methods.c2rag.plan import Constraint, Plan

if TYPE_CHECKING:  # pragma: no cover
    from kgpath.methods.c2rag.hops import HopTrace

__all__ = [
    "BindingState",
    "Grounding",
    "ground_constraint",
    "induced_entities",
    "merge_bindings",
    "per_entity_groundings",
]


def induced_entities(candidates: Sequence[Candidate]) -> tuple[str, ...]:
    """Eq. 13: ``E_i(v)``, the placeholder-side entities of the candidates, in rank order.

    The placeholder side is the end that is not the anchor (Eq. 4 admits both directions).
    """
    return tuple(dict.fromkeys(c.entity for c in candidates))


def merge_bindings(
    sets: Sequence[Sequence[str]],
) -> tuple[tuple[str, ...], Literal["single", "intersection", "union", "empty"]]:
    """Eq. 14: ``E_b(v)`` = ∩ of the induced sets if non-empty, else their ∪.

    Returns the binding (order of first appearance) and which case applied.
    """
    if not sets:
        return (), "empty"
    if len(sets) == 1:
        return tuple(dict.fromkeys(sets[0])), "single"
    common = set(sets[0]).intersection(*map(set, sets[1:]))
    ordered = list(dict.fromkeys(x for s in sets for x in s))
    if common:
        return tuple(x for x in ordered if x in common), "intersection"
    return tuple(ordered), "union"



@dataclass
class BindingState:
    """The induced sets ``E_i(v)`` of every resolved hop, per placeholder (Eq. 13-14)."""

    induced: dict[str, list[tuple[int, tuple[str, ...]]]] = field(default_factory=dict)

    def record(self, hop: HopTrace) -> None:
        """Add ``E_i(v)`` of ``hop`` when it is resolved and solves a placeholder.

        A constraint run as one hop per bound entity (Eq. 15, ``propagation="per_entity"``)
        adds one set per resolved hop, as the authors' code appends one set per hop to
        ``var_to_induced_sets`` (``pipelines/pipeline1.py``), so Eq. 14 intersects them.
        """
        if hop.branches:
            for b in hop.branches:
                self.record(b)
            return
        if hop.state == "resolved" and hop.variable is not None:
            entry = (hop.constraint_index or 0, hop.induced)
            self.induced.setdefault(hop.variable, []).append(entry)

    def current(self) -> dict[str, tuple[str, ...]]:
        """``E_b(v)`` (Eq. 14) of every placeholder induced so far (node ids)."""
        return {v: merge_bindings([s for _, s in sets])[0] for v, sets in self.induced.items()}

    def cases(self) -> dict[str, str]:
        """Which case of Eq. 14 produced each binding."""
        return {v: merge_bindings([s for _, s in sets])[1] for v, sets in self.induced.items()}


@dataclass(frozen=True)
class Grounding:
    """A two-placeholder constraint anchored on its bound end (Eq. 15)."""

    variable: str
    """The placeholder still to solve."""
    anchors: tuple[Anchor, ...]
    """The bound end's entities, as anchors (``via="binding ?var"``)."""
    linearized: str
    """``Lin(τ)`` with the bound end's names substituted."""
    bound: str = ""
    """The bound placeholder the anchors come from."""


def ground_constraint(
    c: Constraint,
    plan: Plan,
    bound: Mapping[str, Sequence[str]],
    graph: KnowledgeGraph | Mapping[str, str],
) -> Grounding | None:
    """Eq. 15: ground ``c`` through the first of its ends with a binding (``None`` if none).

    ``graph`` names the bound nodes: the graph, or a mapping node id -> name.
    """
    ends = [v for v in (c.head, c.tail) if bound.get(v)]
    if not ends:
        return None
    a_var = ends[0]
    var = c.tail if a_var == c.head else c.head

    def name(nid: str) -> str:
        return graph.node(nid).name if isinstance(graph, KnowledgeGraph) else graph[nid]
    anchors = tuple(Anchor(nid, name(nid), None, f"binding {a_var}") for nid in bound[a_var])
    lin = c.linearize({a_var: [a.name for a in anchors]}, plan.placeholders)
    return Grounding(var, anchors, lin, a_var)


def per_entity_groundings(
    g: Grounding, c: Constraint, plan: Plan, limit: int
) -> tuple[Grounding, ...]:
    """Eq. 15 as the authors run it: one grounding per bound entity, the first ``limit``.

    Each is anchored on one entity of ``E_b`` and linearised with its name alone. The
    authors' ``process_item_stage1`` (``pipelines/pipeline1.py``, second pass) loops
    ``for hb in h_bind[: max(1, int(args.top_n))]`` with ``top_n`` = ``K_s`` and calls
    ``run_constraint_retrieval_for_triple`` with ``_instantiate_qt(head_val=name)``;
    ``limit`` is ``K_s`` here. Their binding ids are sorted by node id; here they keep
    their rank order (Eq. 13-14). Their alias expansion of each entity
    (``map_surface_to_entity_ids``) is not reproduced: the anchor is the bound node.
    """
    out = []
    for a in g.anchors[:limit]:
        lin = c.linearize({g.bound: [a.name]}, plan.placeholders)
        out.append(Grounding(g.variable, (a,), lin, g.bound))
    return tuple(out)
