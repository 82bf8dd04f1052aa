"""PathRAG: keyword node retrieval, flow-based path pruning, reliability-ordered prompts.

Reference: B. Chen, Z. Guo, Z. Yang, Y. Chen, J. Chen, Z. Liu, C. Shi, C. Yang,
"PathRAG: Pruning Graph-based Retrieval Augmented Generation with Relational Paths", 2025
(shared/papers/pathrag-flow-pruned-paths.txt).

Steps, named after the paper's sections:

1. **Node retrieval (4.1).** :func:`extract_keywords` asks an LLM for keywords ``K_q`` (JSON;
   repaired with :func:`~kgpath.llm.parse_json_response`, else the offline extractor
   :func:`offline_keywords` is used and the fallback recorded). :func:`retrieve_nodes`
   embeds the keywords and the node identifiers (names) and iterates over the keywords,
   taking each keyword's next most similar node in turn, until ``N`` distinct nodes form
   ``V_q``.
2. **Path retrieval (4.2).** For each retrieved start node, :func:`propagate_resources`
   runs the resource flow of Eq. (2) (``S(v_start) = 1``; a node passes
   ``α·S(v)/|N(v,·)|`` to each of its distinct out-neighbours) with the early stop of
   Eq. (3) (a node whose per-neighbour share ``S(v)/|N(v,·)|`` is below ``θ`` does not
   propagate) and updates every node's resource at most once. The edges the resource
   actually flowed along form a layered DAG; every start-to-end path in it is a candidate,
   scored by the reliability of Eq. (4), :func:`path_reliability`.
   :func:`prune_paths` keeps the ``paths_per_pair`` most reliable paths per ordered pair
   and the global top ``K``.
3. **Answer generation (4.3).** :func:`textual_path` concatenates node and edge texts along
   a path (Eq. 5); :func:`build_prompt` puts the query first and the paths after it in the
   order chosen by a :class:`PathOrdering` policy, by default ascending reliability so the
   most reliable path is last (Eq. 6). Ablation policies of section 5.4 / Appendix D:
   descending, random, hop-first, and the flat node/edge format.

How "updated at most once" is read. Propagation is level-synchronous (breadth first): a
node's resource is set once, in the step in which the flow first reaches it, to the sum
of Eq. (2) over the emitting nodes of the previous step that point to it. Flow arriving
later (by a longer route or around a cycle) is ignored. Consequently every candidate path
between a pair has the same hop count, the BFS distance through emitting nodes, and the
most reliable ones are found exactly by dynamic programming over the DAG instead of
enumerating paths (:func:`best_paths_from`).

Other reading choices, each documented where it is implemented: ``|N(v,·)|`` counts
*distinct* neighbours (parallel edges with different relations count once, and the
textual path lists all of them); Eq. (3) is applied to every node including the start
(a start node with more than ``1/θ`` neighbours emits nothing); ties are broken by the
lexicographic order of the node-index sequence, so results are deterministic.

Complexity (section 4.4): at most ``1/((1-α)·θ)`` nodes emit per start node, so path
retrieval is ``O(N² / ((1-α)·θ))`` plus the out-edges of emitting nodes, independent of
``|V|``; each step is a handful of numpy operations on the CSR arrays.

Modules, in the paper's order: :mod:`~kgpath.methods.pathrag.config` (:class:`PathRAGConfig`),
:mod:`~kgpath.methods.pathrag.keywords` and :mod:`~kgpath.methods.pathrag.nodes` (4.1),
:mod:`~kgpath.methods.pathrag.flow` (Eqs. 2-3) and :mod:`~kgpath.methods.pathrag.paths`
(Eq. 4, pruning), :mod:`~kgpath.methods.pathrag.prompt` (4.3, Eqs. 5-6, orderings),
:mod:`~kgpath.methods.pathrag.result` (:class:`PathRAGResult` and its evidence contract) and
:mod:`~kgpath.methods.pathrag.retriever` (:class:`PathRAGRetriever`).
"""

from __future__ import annotations

from kgpath.methods.pathrag.config import PATHRAG_LT, PathRAGConfig
from kgpath.methods.pathrag.flow import (
    FlowAdjacency,
    Propagation,
    flow_adjacency,
    propagate_resources,
)
from kgpath.methods.pathrag.keywords import (
    KeywordExtraction,
    aextract_keywords,
    extract_keywords,
    offline_keywords,
    parse_keywords,
)
from kgpath.methods.pathrag.nodes import RetrievedNode, retrieve_nodes
from kgpath.methods.pathrag.paths import (
    CandidatePool,
    PathCandidate,
    best_paths_from,
    path_reliability,
    prune_paths,
)
from kgpath.methods.pathrag.prompt import (
    ORDERINGS,
    AscendingReliability,
    DescendingReliability,
    FlatFormat,
    HopFirstOrdering,
    PathOrdering,
    PathRAGPath,
    RandomOrdering,
    build_prompt,
    get_ordering,
    materialize_path,
    textual_path,
)
from kgpath.methods.pathrag.result import PathRAGResult
from kgpath.methods.pathrag.retriever import PathRAGRetriever

__all__ = [
    "PathRAGConfig",
    "PATHRAG_LT",
    "PathOrdering",
    "AscendingReliability",
    "DescendingReliability",
    "RandomOrdering",
    "HopFirstOrdering",
    "FlatFormat",
    "ORDERINGS",
    "get_ordering",
    "KeywordExtraction",
    "offline_keywords",
    "parse_keywords",
    "extract_keywords",
    "aextract_keywords",
    "RetrievedNode",
    "retrieve_nodes",
    "FlowAdjacency",
    "flow_adjacency",
    "Propagation",
    "propagate_resources",
    "path_reliability",
    "PathCandidate",
    "best_paths_from",
    "CandidatePool",
    "prune_paths",
    "PathRAGPath",
    "materialize_path",
    "textual_path",
    "build_prompt",
    "PathRAGResult",
    "PathRAGRetriever",
]
