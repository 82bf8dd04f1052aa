"""The PathRAG result: paths, prompt, trace, and the evidence contract."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgpath.evidence import Evidence, check_output, passages_from_sources, rank_items
from kgpath.graph import KnowledgeGraph
from kgpath.methods.pathrag.config import PathRAGConfig
from kgpath.methods.pathrag.nodes import RetrievedNode, RetrievedRelation
from kgpath.methods.pathrag.paths import CandidatePool
from kgpath.methods.pathrag.prompt import PathRAGPath, materialize_path
from kgpath.methods.pathrag.sources import TextUnit

__all__ = ["PathRAGResult"]


@dataclass(frozen=True)
class PathRAGResult:
    """PathRAG output: the paths, the prompt, and everything needed to explain them.

    ``paths`` are the top-``K`` paths by reliability, most reliable first (``P_1 ... P_K``);
    ``prompt_paths`` are the paths the ordering policy put in the prompt, in prompt order,
    after any token-budget drops. ``empty_reason`` is ``None`` or one of
    ``"fewer_than_two_nodes"`` (fewer than 2 nodes retrieved) and ``"no_path"`` (no flow
    path between any ordered pair); then ``paths`` is empty and the prompt carries the
    query only (plus any :attr:`relations`). :meth:`evidence` gives the paths (or their
    source passages) as the evidence contract of :mod:`kgpath.evidence`.
    """

    query: str
    keywords: tuple[str, ...]
    keyword_source: str
    nodes: tuple[RetrievedNode, ...]
    paths: tuple[PathRAGPath, ...]
    prompt_paths: tuple[PathRAGPath, ...]
    context: str
    prompt: str
    config: PathRAGConfig
    empty_reason: str | None = None
    trace: dict[str, Any] = field(default_factory=dict)
    pool: CandidatePool | None = field(default=None, repr=False, compare=False)
    graph: KnowledgeGraph | None = field(default=None, repr=False, compare=False)
    relations: tuple[RetrievedRelation, ...] = ()
    """Relations retrieved for the high-level keywords (the keyword split), in prompt order;
    they open the prompt's context, right after the query (section 5.1.3). They are not
    evidence items."""
    text_units: tuple[TextUnit, ...] = ()
    """The passages the authors' code puts in its prompt's Sources table, selected as it
    does (:mod:`kgpath.methods.pathrag.sources`): the relations' passages, then the retrieved
    entities' passages by entity rank and relation count (by ``unit_order``; the default also
    ranks in the question's nearest passages, ``seed_passages``). kgpath returns them as passage
    evidence (``evidence(output="passages")``); its own :attr:`prompt` holds the relations
    and paths of sections 5.1.3 and Eq. 5-6, not this table, so a reader's chain feeds
    them through the retriever's documents instead."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)

    def candidates(self) -> list[PathRAGPath]:
        """Every candidate path of the pool (materialised on demand), most reliable first."""
        if self.pool is None or self.graph is None:
            return list(self.paths)
        return [materialize_path(self.graph, c, i) for i, c in enumerate(self.pool, 1)]

    def token_count(self, encoding: str | None = None) -> int:
        """Tokens in :attr:`prompt` (tiktoken, offline encodings only)."""
        from kgpath.tokens import count_tokens

        return count_tokens(self.prompt, encoding or self.config.encoding)

    def evidence(self, output: str = "passages", k: int | None = None) -> list[Evidence]:
        """The evidence contract (:mod:`kgpath.evidence`), ranked by path reliability (Eq. 4).

        ``"native"``: one ``path`` item per path of :attr:`paths`, in that order
        (``P_1`` first); id :attr:`PathRAGPath.stable_id`, text the Eq. (5) textual path,
        score the reliability, trace ``node_ids``, ``relations``, ``path``, ``hops``,
        ``reliability``, ``passage_ids`` (the path's provenance) and ``node_id`` (its start).
        ``"passages"`` (``config.passages="text_units"``, the default): the prompt's Sources
        as the authors' code selects them, :attr:`text_units` (``combine_contexts`` of
        ``PathRAG/operate.py``: the high-level relations' passages in relation order, then
        the retrieved entities' passages by entity rank, ties by relation count); each
        scored by the keyword similarity of the entity or relation that brought it in,
        with ``node_id`` (or ``node_ids`` and ``relations`` for a relation) and
        ``supporting``; seeded passages (a kgpath extension, ``seed: True`` in the trace:
        :func:`~kgpath.methods.pathrag.sources.seed_text_units`) rank among them. The
        paths' own provenance follows (a kgpath addition,
        so a path's source is never lost), then, as ``path`` items, paths citing no passage.
        ``config.passages="paths"`` (kgpath before issue 12): the paths most reliable
        first, then each path's provenance (its nodes' passages, then its edges'), scored
        and traced by the most reliable path citing it. Without a graph: the native items.

        Fallback: when no path was found (:attr:`empty_reason` is set) but nodes were
        retrieved, the items are the retrieved nodes of section 4.1, in retrieval order, as
        ``node`` items scored by their keyword similarity (``0.0`` for nodes given by id),
        ``fallback: True`` in the trace; ``"passages"`` expands them the same way.

        Raises
        ------
        ConfigError
            If ``output`` is not ``"passages"`` or ``"native"``, or ``k`` is not a positive
            int or ``None``.

        Examples
        --------
        >>> from kgpath import HashingEmbedder, KnowledgeGraph
        >>> from kgpath.methods.pathrag import PathRAGRetriever
        >>> g = KnowledgeGraph.from_triples([("a", "to", "b")], {"p": "a goes to b"},
        ...                                 provenance=[["p"]])
        >>> res = PathRAGRetriever(g, embedder=HashingEmbedder()).retrieve_from_nodes(
        ...     "a?", ["a", "b"])
        >>> [(e.kind, e.id, e.text, e.score) for e in res.evidence()]
        [('passage', 'p', 'a goes to b', 0.0)]
        >>> [(e.kind, e.text) for e in res.evidence("native")]
        [('path', 'a | a to b | b')]
        """
        mode = check_output(output)
        if self.paths:
            items = [(p, _path_evidence(p)) for p in self.paths]
            native = [e for _, e in items]
            items.sort(key=lambda t: (-t[0].reliability, t[0].rank))  # P_1 first
            pairs = [(p.provenance, e) for p, e in items]
        else:  # documented fallback: the retrieved nodes of section 4.1
            pairs = [(n.node.provenance, _node_evidence(n)) for n in self.nodes]
            native = [e for _, e in pairs]
        if mode == "native" or self.graph is None:
            return rank_items(native, k)
        head: list[Evidence] = []
        if self.config.passages == "text_units":
            head = [_unit_evidence(self.graph, u) for u in self.text_units]
        return rank_items([*head, *passages_from_sources(self.graph, pairs)], k)


def _path_evidence(path: PathRAGPath) -> Evidence:
    """One ``path`` item: the Eq. (5) text, scored by the Eq. (4) reliability."""
    trace: dict[str, Any] = {
        "node_ids": list(path.ids),
        "relations": [e.relation for e in path.edges],
        "path": path.describe(),
        "hops": path.hops,
        "reliability": float(path.reliability),
        "passage_ids": list(path.provenance),
        "node_id": path.start.id,
    }
    return Evidence(path.stable_id, path.text, path.reliability, "path", "pathrag", trace=trace)


def _node_evidence(node: RetrievedNode) -> Evidence:
    """One fallback ``node`` item for a retrieved node of ``V_q`` (no path was found)."""
    trace: dict[str, Any] = {
        "node_id": node.id,
        "passage_ids": list(node.node.provenance),
        "fallback": True,
    }
    return Evidence(node.id, node.node.text or node.node.name, node.similarity, "node",
                    "pathrag", trace=trace, source_metadata=node.node.metadata)


def _unit_evidence(graph: KnowledgeGraph, unit: TextUnit) -> Evidence:
    """One ``passage`` item of the prompt's Sources (:mod:`~kgpath.methods.pathrag.sources`)."""
    p = graph.passages[unit.passage_id]
    trace: dict[str, Any] = {"supporting": list(unit.supporting)}
    if unit.edge is None:
        trace["node_id"] = unit.node_id
        if unit.seeded:  # one of the question's nearest passages (sources.seed_text_units)
            trace["seed"] = True
    else:  # a relation of the keyword split
        trace.update(node_ids=[unit.edge.source, unit.edge.target],
                     relations=[unit.edge.relation])
    return Evidence(unit.passage_id, p.text, unit.similarity, "passage", "pathrag",
                    trace=trace, source_metadata=p.metadata)
