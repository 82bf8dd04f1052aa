"""Result types of schema-guided retrieval and its evidence contract.

:class:`EvidenceItem` is one node, triple or passage retrieved for one or more
sub-questions; :class:`SubQuestionResult` holds one sub-question's evidence before the merge;
:class:`SchemaResult` the merged evidence (pattern: *reason_over(merge(evidence))*) plus the
plan and traces, and :attr:`SchemaResult.evidence` the ranked :class:`~kgpath.evidence.Evidence`
list every kgpath method offers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kgpath.evidence import Evidence, check_output, passages_from_sources, rank_items
from kgpath.graph import Edge, KnowledgeGraph, Node, Passage
from kgpath.methods.schema.config import SchemaRetrieverConfig
from kgpath.methods.schema.decompose import DecompositionPlan, InvolvedTypes

__all__ = [
    "EvidenceItem",
    "EvidenceKind",
    "SchemaResult",
    "SubQuestionResult",
    "part_graph",
]

EvidenceKind = Literal["node", "triple", "passage"]
METHOD = "schema"


@dataclass(frozen=True)
class EvidenceItem:
    """One piece of evidence (a node, a triple or a passage) with its trace."""

    kind: EvidenceKind
    key: str
    """Node id, ``"source|relation|target"``, or passage id."""
    text: str
    score: float
    sub_questions: tuple[int, ...]
    """Indices into :attr:`DecompositionPlan.sub_questions` this item was retrieved for."""
    schema_type: str | None = None
    base_score: float = 0.0
    """Score before the type bonus."""
    type_affinity: float | None = None
    """``t(v)`` (nodes) or ``[type(e) ∈ R]`` (triples); ``None`` when no types applied."""
    node: Node | None = None
    edge: Edge | None = None
    passage: Passage | None = None

    @property
    def provenance(self) -> tuple[str, ...]:
        """Passage ids the node or edge cites (``()`` for passages and bare items)."""
        if self.node is not None:
            return tuple(self.node.provenance)
        if self.edge is not None:
            return tuple(self.edge.provenance)
        return ()


@dataclass(frozen=True)
class SubQuestionResult:
    """Evidence for one sub-question, before merging."""

    index: int
    question: str
    types: InvolvedTypes
    nodes: tuple[EvidenceItem, ...]
    triples: tuple[EvidenceItem, ...]
    passages: tuple[EvidenceItem, ...]
    trace: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SchemaResult:
    """Merged evidence of all sub-questions plus the plan and per-sub-question traces."""

    question: str
    plan: DecompositionPlan
    sub_results: tuple[SubQuestionResult, ...]
    nodes: tuple[EvidenceItem, ...]
    triples: tuple[EvidenceItem, ...]
    passages: tuple[EvidenceItem, ...]
    config: SchemaRetrieverConfig
    trace: dict[str, Any] = field(default_factory=dict)
    graph: KnowledgeGraph | None = field(default=None, repr=False, compare=False)

    @property
    def items(self) -> tuple[EvidenceItem, ...]:
        """Merged items: nodes, then triples, then passages."""
        return self.nodes + self.triples + self.passages

    def evidence(self, output: str = "passages", k: int | None = None) -> list[Evidence]:
        """The evidence contract: ranked :class:`~kgpath.evidence.Evidence`.

        ``output="native"``
            The merged items as the result holds them: nodes, then triples, then passages
            (kinds ``node``/``triple``/``passage``; id = the item's key; score = its merged
            score). Trace: ``sub_questions`` (0-based indices), and for nodes and triples
            ``schema_type``, ``type_affinity`` and ``passage_ids`` (the node's or edge's
            provenance), plus ``node_id`` (nodes) or ``triple`` (triples, ``"head relation
            tail"`` with node names).
        ``output="passages"`` (default)
            First the passages the typed retrieval scored (:attr:`passages`, by score; each
            already carries the best score of the items citing it), then the provenance of
            the ranked nodes and triples, taken best first (nodes and triples ordered by
            score, a node before a triple on a tie) through
            :func:`~kgpath.evidence.passages_from_sources`, so a passage not yet listed is
            scored by its best source and inherits that source's trace. A passage is listed
            once (first place wins); ``supporting`` names the nodes/triples citing it. A node
            or triple citing no passage the graph holds stays in its native kind.

        Ranks are 1-based, the list is cut at ``k``. Without the graph (a hand-built result),
        the scored passages are followed by the nodes and triples themselves. The merged
        :class:`EvidenceItem` s themselves are :attr:`items`.
        """
        mode = check_output(output)
        if mode == "native":
            return rank_items((self._native(it) for it in self.items), k)
        sources = sorted(
            ((it, self._native(it)) for it in self.nodes + self.triples),
            key=lambda pair: -pair[0].score,
        )  # stable: nodes before triples on ties, each in its merged order
        support = _supporting(self.passages, [it for it, _ in sources])
        scored = [self._passage(it, support.get(it.key, [])) for it in self.passages]
        if self.graph is None:
            expanded = [ev for _, ev in sources]
        else:
            expanded = passages_from_sources(self.graph, [(it.provenance, ev)
                                                          for it, ev in sources])
        return rank_items(scored + expanded, k)

    def _native(self, it: EvidenceItem) -> Evidence:
        trace: dict[str, Any] = {"sub_questions": list(it.sub_questions)}
        meta: Any = {}
        if it.kind == "passage":
            meta = it.passage.metadata if it.passage is not None else {}
            return Evidence(it.key, it.text, it.score, "passage", METHOD, trace=trace,
                            source_metadata=meta)
        trace.update(schema_type=it.schema_type, type_affinity=it.type_affinity)
        if it.kind == "node":
            trace["node_id"] = it.key
            meta = it.node.metadata if it.node is not None else {}
        else:
            trace["triple"] = self._linearise(it)
            meta = it.edge.metadata if it.edge is not None else {}
        trace["passage_ids"] = list(it.provenance)
        return Evidence(it.key, it.text, it.score, it.kind, METHOD, trace=trace,
                        source_metadata=meta)

    def _passage(self, it: EvidenceItem, supporting: list[str]) -> Evidence:
        ev = self._native(it)
        if not supporting:
            return ev
        return Evidence(ev.id, ev.text, ev.score, ev.kind, ev.method,
                        trace={**ev.trace, "supporting": supporting},
                        source_metadata=ev.source_metadata)

    def _linearise(self, it: EvidenceItem) -> str:
        """``"head relation tail"`` with node names (ids when the graph lacks them)."""
        if it.edge is None:
            return " ".join(it.key.split("|"))
        e, g = it.edge, self.graph
        head, tail = e.source, e.target
        if g is not None and e.source in g and e.target in g:
            head, tail = g.node(e.source).name, g.node(e.target).name
        return f"{head} {e.relation} {tail}"

    @property
    def ids(self) -> list[str]:
        """Merged node ids in rank order."""
        return [n.key for n in self.nodes]

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[EvidenceItem]:
        return iter(self.nodes)


def _supporting(
    passages: Sequence[EvidenceItem], sources: Sequence[EvidenceItem]
) -> dict[str, list[str]]:
    """For each scored passage, the keys of the ranked nodes/triples citing it, best first."""
    wanted = {p.key for p in passages}
    out: dict[str, list[str]] = {}
    for it in sources:
        for pid in it.provenance:
            if pid in wanted and it.key not in out.setdefault(pid, []):
                out[pid].append(it.key)
    return out


def part_graph(
    runs: Sequence[SubQuestionResult], node_of: Callable[[str], Node],
    passages: Mapping[str, Passage],
) -> KnowledgeGraph:
    """The graph a result's evidence reads when the whole graph is elsewhere (a database).

    The retrieved nodes, the triples with their end nodes (``node_of(id)`` for ends that
    were not retrieved) and ``passages`` (those the items cite): what
    :meth:`SchemaResult.evidence` resolves names and passage text from.
    """
    g = KnowledgeGraph()
    nodes = {it.node.id: it.node for r in runs for it in r.nodes if it.node is not None}
    edges = {it.key: it.edge for r in runs for it in r.triples if it.edge is not None}
    for e in edges.values():
        for end in (e.source, e.target):
            if end not in nodes:
                nodes[end] = node_of(end)
    for n in nodes.values():
        g.add_node(n.id, n.name, n.text, type=n.type, metadata=n.metadata,
                   provenance=n.provenance)
    for e in edges.values():
        g.add_edge(e.source, e.target, e.relation, e.text, type=e.type, weight=e.weight,
                   provenance=e.provenance, metadata=e.metadata)
    for p in passages.values():
        g.add_passage(p.id, p.text, p.metadata)
    return g
