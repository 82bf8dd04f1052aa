"""PathRAG: keyword node retrieval, flow-based path pruning, reliability-ordered prompts.

Reference: B. Chen, Z. Guo, Z. Yang, Y. Chen, J. Chen, Z. Liu, C. Shi, C. Yang,
"PathRAG: Pruning Graph-based Retrieval Augmented Generation with Relational Paths", 2025
(shared/papers/pathrag-flow-pruned-paths.txt).

Steps, named after the paper's sections:

1. **Node retrieval (4.1).** :func:`extract_keywords` asks an LLM for keywords ``K_q`` (JSON;
   repaired with :func:`~kgpath.llm.parse_json_response`, else the offline extractor
   :func:`offline_keywords` is used and the fallback recorded). By default the entity
   (low-level) keywords retrieve nodes and the high-level ones retrieve relations
   (:func:`retrieve_relations`), the LightRAG split the authors' ``kg_query`` inherits.
   :func:`retrieve_nodes` embeds the keywords and the node identifiers (names) and
   iterates over the keywords, taking each keyword's next most similar node in turn, until
   ``N`` distinct nodes form ``V_q``, skipping matches below the similarity floor.
2. **Path retrieval (4.2).** By default as the authors' released code computes it
   (``BUPT-GAMMA/PathRAG``, ``PathRAG/operate.py``; :mod:`~kgpath.methods.pathrag.edgeflow`):
   every simple path of at most ``max_hops = 3`` hops between each ordered pair of ``V_q``
   on the undirected graph (:func:`bounded_simple_paths`); within each pair's own path
   subgraph the start sends ``1/deg`` along each edge, a node whose incoming edge carries
   more than ``flow_threshold = 0.3`` forwards ``α · flow / deg`` (Eqs. 2-3 as coded; the
   start is never stopped), and a path's reliability is the mean flow over its edges
   (:func:`edge_flow_reliability`). :func:`edge_flow_pool` sorts all pairs' paths, drops
   paths whose node set was already taken, and keeps the top ``K``. Retrieval warns when
   ``N ≥ |V|``.

   The two readings are strategy objects chosen by name
   (:mod:`~kgpath.methods.pathrag.reliability`: :class:`EdgeFlow`, :class:`LiteralEq4`),
   called the same way in memory and over a database (:mod:`~kgpath.methods.pathrag.cypher`).
   The literal reading (``reliability="literal_eq4"``, :meth:`PathRAGConfig.literal_eq4`)
   is kept: :func:`propagate_resources` runs the resource flow of Eq. (2) over the whole
   graph with the early stop of Eq. (3) and updates every node's resource at most once;
   the edges the resource flowed along form a layered DAG whose start-to-end paths are
   scored by Eq. (4) over node resources, :func:`path_reliability`; :func:`prune_paths`
   keeps the ``paths_per_pair`` most reliable paths per ordered pair and the global top
   ``K``. It ranks by hop count (every 1-hop path scores ``1 + α/deg ≥ 1``, no longer path
   more than about 1.2); ``benchmarks/bench_pathrag_oracle.py`` measures both.
3. **Answer generation (4.3).** :func:`textual_path` concatenates node and edge texts along
   a path (Eq. 5); :func:`build_prompt` puts the query first, then the relations retrieved
   for the high-level keywords (LightRAG's split, section 5.1.3), then the paths in the
   order chosen by a :class:`PathOrdering` policy, by default ascending reliability so the
   most reliable path is last (Eq. 6). Ablation policies of section 5.4 / Appendix D:
   descending, random, hop-first, and the flat node/edge format.

4. **Passages (the prompt's Sources).** ``evidence(output="passages")`` returns the text
   units the authors' code puts beside the paths (:mod:`~kgpath.methods.pathrag.sources`:
   the high-level relations' passages, then the retrieved entities' passages by entity rank,
   ties by relation count), then the paths' provenance; ``passages="paths"`` keeps the
   path-first rule. Options measured on HotpotQA-100 (``benchmarks/bench_pathrag_hotpot.py``):
   ``node_query="joined"`` (the code's single node query), ``exclude_edge_types`` (e.g.
   co-occurrence edges out of the paths), ``unit_order="similarity"`` and ``"question"``
   and ``seed_passages`` (kgpath extensions: the defaults rank every candidate by PCR's
   passage rule and add the question's 5 nearest passages to the candidates,
   :func:`~kgpath.methods.pathrag.sources.seed_text_units`); :meth:`PathRAGConfig.paper`
   keeps the authors' order and candidates.

How "updated at most once" is read (literal reading). Propagation is level-synchronous
(breadth first): a node's resource is set once, in the step in which the flow first reaches
it, to the sum of Eq. (2) over the emitting nodes of the previous step that point to it.
Flow arriving later is ignored, so every candidate path between a pair has the same hop
count and the most reliable ones are found exactly by dynamic programming over the DAG
(:func:`best_paths_from`). ``|N(v,·)|`` counts *distinct* neighbours in both readings;
ties are broken deterministically (node-index order).

Complexity (section 4.4): the literal reading emits from at most ``1/((1-α)·θ)`` nodes per
start; the edge-flow default enumerates bounded simple paths, pruned to branches that can
still reach a retrieved node within ``max_hops``.

Modules, in the paper's order: :mod:`~kgpath.methods.pathrag.config` (:class:`PathRAGConfig`),
:mod:`~kgpath.methods.pathrag.keywords` and :mod:`~kgpath.methods.pathrag.nodes` (4.1),
:mod:`~kgpath.methods.pathrag.flow` (Eqs. 2-3) and :mod:`~kgpath.methods.pathrag.paths`
(Eq. 4, pruning), :mod:`~kgpath.methods.pathrag.edgeflow` (the code's edge flow),
:mod:`~kgpath.methods.pathrag.reliability` (the two as strategies),
:mod:`~kgpath.methods.pathrag.cypher` (the pool pushed down to a store),
:mod:`~kgpath.methods.pathrag.database` (:class:`CypherPathRAG`, the whole method over a
store) and :mod:`~kgpath.methods.pathrag.dbstore` (its store queries),
:mod:`~kgpath.methods.pathrag.prompt` (4.3, Eqs. 5-6, orderings),
:mod:`~kgpath.methods.pathrag.sources` (the text units),
:mod:`~kgpath.methods.pathrag.result` (:class:`PathRAGResult` and its evidence contract) and
:mod:`~kgpath.methods.pathrag.retriever` (:class:`PathRAGRetriever`).
"""

from __future__ import annotations

from kgpath.methods.pathrag.config import DEFAULT_MIN_SIMILARITY_Z, PATHRAG_LT, PathRAGConfig
from kgpath.methods.pathrag.database import CypherPathRAG, store_pathrag_vectors
from kgpath.methods.pathrag.edgeflow import (
    bounded_simple_paths,
    edge_flow_pool,
    edge_flow_reliability,
)
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
    parse_keyword_split,
    parse_keywords,
)
from kgpath.methods.pathrag.nodes import (
    RetrievedNode,
    RetrievedRelation,
    retrieve_nodes,
    retrieve_relations,
)
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
    relation_text,
    textual_path,
)
from kgpath.methods.pathrag.reliability import (
    RELIABILITIES,
    EdgeFlow,
    LiteralEq4,
    ReliabilityStrategy,
    reliability_strategy,
)
from kgpath.methods.pathrag.result import PathRAGResult
from kgpath.methods.pathrag.retriever import PathRAGRetriever

__all__ = [
    "PathRAGConfig",
    "PATHRAG_LT",
    "DEFAULT_MIN_SIMILARITY_Z",
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
    "parse_keyword_split",
    "extract_keywords",
    "aextract_keywords",
    "RetrievedNode",
    "retrieve_nodes",
    "RetrievedRelation",
    "retrieve_relations",
    "bounded_simple_paths",
    "edge_flow_reliability",
    "edge_flow_pool",
    "FlowAdjacency",
    "flow_adjacency",
    "Propagation",
    "propagate_resources",
    "path_reliability",
    "PathCandidate",
    "best_paths_from",
    "CandidatePool",
    "prune_paths",
    "ReliabilityStrategy",
    "EdgeFlow",
    "LiteralEq4",
    "RELIABILITIES",
    "reliability_strategy",
    "PathRAGPath",
    "materialize_path",
    "textual_path",
    "relation_text",
    "build_prompt",
    "PathRAGResult",
    "PathRAGRetriever",
    "CypherPathRAG",
    "store_pathrag_vectors",
]
