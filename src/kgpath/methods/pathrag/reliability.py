"""How section 4.2 scores a path: one strategy object per ``PathRAGConfig.reliability`` name.

* :class:`EdgeFlow` (``"edge_flow"``, the default; the authors' code): bounded simple paths
  between each ordered pair of ``V_q``, scored by the mean flow over their edges inside the
  pair's own path subgraph (:func:`~kgpath.methods.pathrag.edgeflow.edge_flow_pool`);
* :class:`LiteralEq4` (``"literal_eq4"``, the paper read literally): one whole-graph
  resource flow (Eqs. 2-3), paths scored by Eq. (4) over node resources
  (:func:`~kgpath.methods.pathrag.paths.prune_paths`).

One hook per family, :meth:`ReliabilityStrategy.pool`, called the same way by the in-memory
retriever (on the whole graph's :class:`~kgpath.methods.pathrag.flow.FlowAdjacency`) and by
the pushed-down pool of :mod:`kgpath.methods.pathrag.cypher` (on the local adjacency of
what the store returned). What that local adjacency must contain depends on the variant, so
a strategy also says which neighbourhood to fetch (:meth:`ReliabilityStrategy.neighbourhood`).
:data:`RELIABILITIES` maps the names :class:`PathRAGConfig` accepts to the strategies;
:func:`reliability_strategy` resolves a name (a strategy object passes through).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from kgpath.errors import ConfigError, short
from kgpath.methods.pathrag.edgeflow import edge_flow_pool
from kgpath.methods.pathrag.flow import FlowAdjacency, propagate_resources
from kgpath.methods.pathrag.paths import CandidatePool, prune_paths

if TYPE_CHECKING:
    from kgpath.methods.pathrag.config import PathRAGConfig
    from kgpath.methods.pathrag.cypher import LocalGraph

__all__ = [
    "RELIABILITIES",
    "EdgeFlow",
    "LiteralEq4",
    "ReliabilityStrategy",
    "reliability_strategy",
]


class ReliabilityStrategy(ABC):
    """How section 4.2 builds and scores the candidate pool (``PathRAGConfig.reliability``)."""

    name: ClassVar[str] = ""
    """The name :class:`PathRAGConfig` accepts for it (recorded in the trace)."""

    def check(self, cfg: PathRAGConfig) -> None:  # noqa: B027 - optional hook
        """Raise :class:`~kgpath.errors.ConfigError` if ``cfg`` cannot be served."""

    @abstractmethod
    def pool(
        self, adj: FlowAdjacency, starts: Sequence[int], cfg: PathRAGConfig
    ) -> CandidatePool:
        """The candidate pool of the retrieved nodes ``starts`` (indices of ``adj``)."""

    @abstractmethod
    def neighbourhood(
        self, local: LocalGraph, starts: list[str], cfg: PathRAGConfig, max_rounds: int
    ) -> tuple[FlowAdjacency, list[str], int]:
        """Fetch what :meth:`pool` reads into ``local``.

        Returns ``(local adjacency, node id of each local index, expansion rounds)``.
        """

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class EdgeFlow(ReliabilityStrategy):
    """The authors' code: mean edge flow inside each pair's path subgraph."""

    name = "edge_flow"

    def check(self, cfg: PathRAGConfig) -> None:
        """Edge flow enumerates bounded simple paths: ``max_hops`` must be set."""
        if cfg.max_hops is None:
            raise ConfigError(
                "max_hops=None needs reliability='literal_eq4'; edge_flow enumerates "
                "bounded simple paths (the authors' code: 3 hops)"
            )

    def pool(
        self, adj: FlowAdjacency, starts: Sequence[int], cfg: PathRAGConfig
    ) -> CandidatePool:
        """:func:`~kgpath.methods.pathrag.edgeflow.edge_flow_pool`."""
        self.check(cfg)
        assert cfg.max_hops is not None  # checked above
        return edge_flow_pool(adj, list(starts), alpha=float(cfg.alpha),
                              threshold=float(cfg.flow_threshold), max_hops=cfg.max_hops)

    def neighbourhood(
        self, local: LocalGraph, starts: list[str], cfg: PathRAGConfig, max_rounds: int
    ) -> tuple[FlowAdjacency, list[str], int]:
        """The ``⌊max_hops/2⌋`` ball around ``V_q`` and the edges among its nodes.

        Every node of a simple path of at most ``max_hops`` hops between two retrieved
        nodes lies within that radius of one of them, so paths outside the ball do not
        exist and the DFS finds the same paths in the same order.
        """
        self.check(cfg)
        assert cfg.max_hops is not None
        radius = cfg.max_hops // 2
        ball, frontier = set(starts), list(starts)
        for _ in range(radius):
            frontier = sorted(local.expand(frontier) - ball)
            ball.update(frontier)
        local.expand_within(sorted(ball), cfg.direction)  # edges between boundary nodes too
        local.restrict(ball)
        adj, names = local.adjacency(cfg.direction, true_degrees=False)
        return adj, names, radius + 1


class LiteralEq4(ReliabilityStrategy):
    """The paper read literally: Eq. (4) over the node resources of one whole-graph flow."""

    name = "literal_eq4"

    def pool(
        self, adj: FlowAdjacency, starts: Sequence[int], cfg: PathRAGConfig
    ) -> CandidatePool:
        """:func:`~kgpath.methods.pathrag.paths.prune_paths`."""
        return prune_paths(adj, list(starts), alpha=float(cfg.alpha), theta=float(cfg.theta),
                           paths_per_pair=cfg.paths_per_pair, max_hops=cfg.max_hops,
                           eq3_at_start=cfg.eq3_at_start)

    def neighbourhood(
        self, local: LocalGraph, starts: list[str], cfg: PathRAGConfig, max_rounds: int
    ) -> tuple[FlowAdjacency, list[str], int]:
        """Expand the emitting nodes lazily until every one of them is expanded.

        Eq. (2) needs ``|N(v,·)|`` of every reached node and the neighbours of every node
        that emits: propagate (Eqs. 2-3) on what is known, fetch the neighbour lists of the
        emitting nodes not yet expanded, repeat (at most one round per flow level).
        """
        need = list(starts)
        for rounds in range(1, max_rounds + 1):
            new = local.expand(need)
            local.learn(sorted(new), cfg.direction)
            adj, names = local.adjacency(cfg.direction, true_degrees=True)
            place = {nid: k for k, nid in enumerate(names)}
            prop = propagate_resources(adj, [place[i] for i in starts], alpha=float(cfg.alpha),
                                       theta=float(cfg.theta), max_hops=cfg.max_hops,
                                       eq3_at_start=cfg.eq3_at_start)
            emitting = {names[k] for k in prop.nodes[prop.emitted].tolist() if k < len(names)}
            need = sorted(emitting - local.expanded)
            if not need:
                return adj, names, rounds
        raise ConfigError(f"the flow did not close within max_rounds={max_rounds} expansions")


RELIABILITIES: dict[str, ReliabilityStrategy] = {
    s.name: s for s in (EdgeFlow(), LiteralEq4())
}
"""The names ``PathRAGConfig.reliability`` accepts and their strategies."""


def reliability_strategy(reliability: str | ReliabilityStrategy) -> ReliabilityStrategy:
    """The strategy named ``reliability`` (a :class:`ReliabilityStrategy` is returned as is)."""
    if isinstance(reliability, ReliabilityStrategy):
        return reliability
    try:
        return RELIABILITIES[reliability]
    except (KeyError, TypeError):
        raise ConfigError(
            f"reliability must be one of {tuple(RELIABILITIES)} or a ReliabilityStrategy, "
            f"got {short(reliability)}"
        ) from None
