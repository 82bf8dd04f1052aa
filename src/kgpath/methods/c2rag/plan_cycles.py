"""C2RAG plan validation: which two-placeholder constraints close a placeholder cycle.

:func:`drop_cycles` keeps the constraints in plan order and rejects each one whose edge
``head -> tail`` would close a directed cycle of the edges kept so far (Eq. 15 needs an
acyclic placeholder graph). Only an edge inside a strongly connected component of *all*
the plan's edges can close a cycle, and such a cycle stays inside the component; so the
components are found first (Tarjan, one pass) and only their edges are checked, with a
dynamic topological order (:class:`PlaceholderDag`). An acyclic plan of any size costs
one pass; a cyclic one near-linear time (a search of the whole graph per edge was
quadratic: 50 s for 3k constraints, issue 23).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kgpath.methods.c2rag.plan import Constraint

__all__ = ["PlaceholderDag", "cyclic_components", "drop_cycles"]


def drop_cycles(kept: list[tuple[int, Constraint]],
                rejected: list[tuple[int, str]]) -> list[tuple[int, Constraint]]:
    """Reject each two-placeholder constraint that closes a directed placeholder cycle.

    The rejection names the cycle (``a -> ... -> a``) through the path a depth-first search
    in sorted order finds among the edges kept so far.
    """
    comp = cyclic_components([(c.head, c.tail) for _, c in kept if c.arity == 2])
    dag = PlaceholderDag()
    out = []
    for i, c in kept:
        if c.arity == 2 and (c.head == c.tail or comp.get(c.head, -1) == comp.get(c.tail, -2)):
            path = dag.add(c.head, c.tail)
            if path is not None:
                cyc = " -> ".join([c.head, *path])
                rejected.append((i, f"constraint closes a placeholder cycle {cyc}"))
                continue
        out.append((i, c))
    return out


def cyclic_components(edges: Sequence[tuple[str, str]]) -> dict[str, int]:
    """Node -> component number, for the nodes of the cyclic strongly connected components.

    Components of two or more nodes, by Tarjan's algorithm, iteratively: linear in the
    edges, no recursion limit.

    Examples
    --------
    >>> sorted(cyclic_components([("c", "a"), ("a", "b"), ("b", "a")]).items())
    [('a', 1), ('b', 1)]
    """
    succ: dict[str, list[str]] = {}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
        succ.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    comp: dict[str, int] = {}
    for root in succ:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = []
        _visit(root, succ, index, low, stack, on_stack, work)
        while work:
            node, it = work[-1]
            for nxt in it:
                if nxt not in index:
                    _visit(nxt, succ, index, low, stack, on_stack, work)
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    up = work[-1][0]
                    low[up] = min(low[up], low[node])
                if low[node] == index[node]:
                    _close(node, stack, on_stack, comp, index[node])
    return comp


def _visit(node: str, succ: dict[str, list[str]], index: dict[str, int], low: dict[str, int],
           stack: list[str], on_stack: set[str], work: list[tuple[str, Iterator[str]]]) -> None:
    index[node] = low[node] = len(index)
    stack.append(node)
    on_stack.add(node)
    work.append((node, iter(succ[node])))


def _close(root: str, stack: list[str], on_stack: set[str], comp: dict[str, int],
           number: int) -> None:
    """Pop the component of ``root``; give it ``number`` when it has two or more nodes."""
    members = []
    while True:
        x = stack.pop()
        on_stack.discard(x)
        members.append(x)
        if x == root:
            break
    if len(members) > 1:
        for x in members:
            comp[x] = number


class PlaceholderDag:
    """The kept placeholder edges with a topological order, kept as edges arrive.

    Pearce and Kelly's dynamic topological sort ("A dynamic topological sort algorithm for
    directed acyclic graphs", JEA 2006): an edge ``a -> b`` with ``a`` before ``b`` cannot
    close a cycle and costs O(1); otherwise only the nodes ordered between ``b`` and ``a``
    are searched, then reordered. A plan of thousands of constraints given in any order is
    checked in near-linear time (a search of the whole graph per edge was quadratic).
    """

    def __init__(self) -> None:
        self.succ: dict[str, set[str]] = {}
        self.pred: dict[str, set[str]] = {}
        self.order: dict[str, int] = {}
        self.lo, self.hi = 0, -1

    def add(self, a: str, b: str) -> list[str] | None:
        """Add ``a -> b``, or return the path ``b -> ... -> a`` it would close (no change)."""
        o = self.order
        if a == b:
            return [a]
        if a not in o:  # a new head goes first, a new tail last: no cycle through either
            if b in o:
                self.lo -= 1
                o[a] = self.lo
            else:
                self.hi += 1
                o[a] = self.hi
        if b not in o:
            self.hi += 1
            o[b] = self.hi
        elif o[a] > o[b]:
            found, forward = self._forward(b, a)
            if found is not None:  # the path a sorted search finds, as the message names it
                return self._forward(b, a, ordered=True)[0]
            self._reorder(forward, self._backward(a, o[b]))
        self.succ.setdefault(a, set()).add(b)
        self.pred.setdefault(b, set()).add(a)
        return None

    def _forward(self, src: str, dst: str,
                 ordered: bool = False) -> tuple[list[str] | None, list[str]]:
        """The path ``src -> ... -> dst`` (else ``None``) and the nodes searched.

        Depth-first with parent pointers, over the nodes ordered before ``dst`` only (no
        other node can reach it), in time bounded by the nodes between ``src`` and ``dst``.
        ``ordered``: successors in sorted order, so the path is the one a sorted search of
        the whole graph finds.
        """
        bound = self.order[dst]
        parent: dict[str, str | None] = {src: None}
        stack = [src]
        while stack:
            node = stack.pop()
            if node == dst:
                out = [node]
                while parent[out[-1]] is not None:
                    out.append(parent[out[-1]])  # type: ignore[arg-type]
                return out[::-1], []
            succ = self.succ.get(node, ())
            for nxt in sorted(succ) if ordered else succ:
                if nxt not in parent and self.order[nxt] <= bound:
                    parent[nxt] = node
                    stack.append(nxt)
        return None, list(parent)

    def _backward(self, src: str, bound: int) -> list[str]:
        """The nodes ordered after ``bound`` that reach ``src``."""
        seen, stack = {src}, [src]
        while stack:
            for prv in self.pred.get(stack.pop(), ()):
                if prv not in seen and self.order[prv] > bound:
                    seen.add(prv)
                    stack.append(prv)
        return list(seen)

    def _reorder(self, forward: list[str], backward: list[str]) -> None:
        """Move the nodes that reach ``a`` before those reached from ``b``, in their slots."""
        o = self.order
        nodes = sorted(backward, key=o.__getitem__) + sorted(forward, key=o.__getitem__)
        for node, slot in zip(nodes, sorted(o[x] for x in nodes), strict=True):
            o[node] = slot
