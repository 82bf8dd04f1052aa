"""Seven traversal algorithms over the semantic chunk graph.

Reference: "Novel Knowledge Graph Traversal Algorithms: Enhancing Accuracy in Semantic
Retrieval-Augmented Generation Systems" (shared/papers/kg-traversal-algorithms-article.txt),
section "Knowledge Graph Traversal Algorithms". The article numbers its algorithms 1-7 but
has no equations; docstrings cite "Alg. N, step M" after its numbered steps.

Every algorithm starts at the **anchor**, the chunk most similar to the query, and then
repeatedly picks the next chunk among candidates, extracting that chunk's sentences not seen
before. Notation (all cosines of unit vectors): ``q`` query, ``u`` current chunk, ``c``
candidate chunk, ``s`` sentence; ``E`` the extracted sentences.

==============================  ===========================================  =================
algorithm                       next chunk = argmax over candidates of       candidates
==============================  ===========================================  =================
1 ``basic_retrieval``           ``cos(q, c)``                                every chunk
2 ``query_traversal``           ``cos(q, c)``                                neighbours of u
3 ``kg_traversal``              ``cos(u, c)`` (query ignored)                neighbours of u
                                                                             sharing no
                                                                             sentence with E
4 ``triangulation_average``     ``(cos(q,u) + cos(q,c) + cos(u,c)) / 3``     neighbours of u
5 ``triangulation_geometric_3d``  ``-|| (q3 + u3 + c3)/3 - q3 ||`` in a 3-D  neighbours of u
                                PCA of the chunk embeddings
6 ``triangulation_fulldim``     ``-|| (q + u + c)/3 - q ||``                 neighbours of u
7 ``llm_guided_traversal``      the LLM's choice among the top 5 by          neighbours of u
                                ``cos(q, c)`` (fallback: the first)
==============================  ===========================================  =================

Stopping rules (article, each algorithm's last step):

* budget: at most ``max_sentences`` (15) sentences; the relevance rules below may end the
  walk only once ``min_sentences`` (10) are collected -- our reading of the article's
  "10-15 sentences";
* Alg. 1, 2, 5, 6 and 7 without an LLM: stop when every candidate is less relevant than what
  is extracted, ``max_c cos(q, c) < mean_{s in E} cos(q, s)``;
* Alg. 3: stop when the chosen hop's similarity ``cos(u, c)`` is lower than the previous
  hop's;
* Alg. 4: stop when ``mean_{s in E} cos(q, s)`` exceeds every candidate's triangle average;
* Alg. 7: the LLM may answer ``stop`` (honoured at any time);
* always: a safety cap of ``max_hops`` hops, and "dead end" when no candidate is left.

Chunk adjacency is undirected: a similarity edge ``a -> b`` (b in a's top list) lets the
walk go both ways, since cosine similarity is symmetric.

Complexity per query: ``O(m d)`` once for the query-chunk cosines (``m`` chunks), then per
hop ``O(|candidates| d)``; the walk makes at most ``min(max_hops, max_sentences)`` hops
because each hop adds at least one new sentence.

kgpath extension (not in the article): ``mention_expansion`` (:data:`EXTENSIONS`,
:func:`mention_expansion`) ranks *documents* through the mention layer of
:func:`kgpath.build.chunk_graph.add_mention_edges`. With ``s(d) = cos(q, e_d) + γ [the
question names d's title]`` and ``link(a, b) = 1`` when a sentence of one document names
the other's title, every document is scored by its best two-document chain,
``score(d) = s(d) + max_{a != d} (s(a) + β link(a, b))``, and the best ``max_documents``
are returned with their best sentences. Cost per query ``O(N d + |mention edges|)``.

Package layout (one module per seam of the article):

=====================  ======================================================================
module                 contents
=====================  ======================================================================
``config``             :data:`ALGORITHMS`, :data:`EXTENSIONS`, :class:`TraversalConfig`,
                       :class:`MentionExpansionConfig`
``result``             :class:`TraversalStep`, :class:`TraversedSentence`,
                       :class:`TraversalResult` (and its evidence contract)
``view``               :class:`ChunkGraphView`, the array view every walk reads
``policy``             :class:`Walk` (state) and :class:`TraversalPolicy` (the one hook)
``greedy``             Alg. 1-3: ``basic_retrieval``, ``query_traversal``, ``kg_traversal``
``triangulation``      Alg. 4-6: ``triangulation_average``, ``_geometric_3d``, ``_fulldim``
``llm_guided``         Alg. 7: :class:`LLMGuidedPolicy`, :func:`parse_llm_choice`
``walks``              the shared walk, :func:`traverse` / :func:`atraverse`, entry points
``mentions``           the ``mention_expansion`` extension
``retriever``          :class:`TraversalRetriever`, :func:`format_traversal`
=====================  ======================================================================
"""

from __future__ import annotations

from kgpath.methods.traversal.config import (
    ALGORITHMS,
    EXTENSIONS,
    Frontier,
    MentionExpansionConfig,
    TraversalConfig,
)
from kgpath.methods.traversal.greedy import (
    BasicRetrievalPolicy,
    KGTraversalPolicy,
    QueryTraversalPolicy,
)
from kgpath.methods.traversal.llm_guided import LLMGuidedPolicy, parse_llm_choice
from kgpath.methods.traversal.mentions import (
    MentionLayer,
    chain_scores,
    mention_expansion,
    question_mentions,
    seed_scores,
)
from kgpath.methods.traversal.policy import Choice, TraversalPolicy, Walk
from kgpath.methods.traversal.result import TraversalResult, TraversalStep, TraversedSentence
from kgpath.methods.traversal.retriever import TraversalRetriever, format_traversal
from kgpath.methods.traversal.triangulation import (
    TriangulationAveragePolicy,
    TriangulationFullDimPolicy,
    TriangulationGeometric3DPolicy,
)
from kgpath.methods.traversal.view import ChunkGraphView
from kgpath.methods.traversal.walks import (
    allm_guided_traversal,
    atraverse,
    basic_retrieval,
    check_algorithm,
    kg_traversal,
    llm_guided_traversal,
    make_policy,
    query_traversal,
    traverse,
    triangulation_average,
    triangulation_fulldim,
    triangulation_geometric_3d,
)

__all__ = [
    "ALGORITHMS",
    "EXTENSIONS",
    "MentionExpansionConfig",
    "MentionLayer",
    "mention_expansion",
    "question_mentions",
    "seed_scores",
    "chain_scores",
    "TraversalConfig",
    "TraversalStep",
    "TraversedSentence",
    "TraversalResult",
    "ChunkGraphView",
    "TraversalPolicy",
    "BasicRetrievalPolicy",
    "QueryTraversalPolicy",
    "KGTraversalPolicy",
    "TriangulationAveragePolicy",
    "TriangulationGeometric3DPolicy",
    "TriangulationFullDimPolicy",
    "LLMGuidedPolicy",
    "TraversalRetriever",
    "basic_retrieval",
    "query_traversal",
    "kg_traversal",
    "triangulation_average",
    "triangulation_geometric_3d",
    "triangulation_fulldim",
    "llm_guided_traversal",
    "allm_guided_traversal",
    "parse_llm_choice",
    "make_policy",
    "check_algorithm",
    "traverse",
    "atraverse",
    "format_traversal",
    "Choice",
    "Frontier",
    "Walk",
]
