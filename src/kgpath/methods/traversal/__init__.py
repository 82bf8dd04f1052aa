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

Stopping rules. The article states them in words (each algorithm's last step); its
reference code (github.com/glacier-creative-git/knowledge-graph-traversal-semantic-rag-research,
``utils/algos/*.py``, ``config.yaml``) makes them exact. ``TraversalConfig.stopping``
chooses the rule set and ``TraversalConfig.reference_rules()`` the reference's rules and
budget together. The default stays the article reading: the reference rules stop early
enough to cost passage recall on HotpotQA-100 (numbers in ``TraversalConfig``'s
docstring). ``max(E)`` is ``max_{s in E} cos(q, s)``, ``mean(E)`` the mean.

=====================  ==========================================  ===========================
rule                   ``"reference"`` (``reference_rules()``)     ``"article"`` (default)
=====================  ==========================================  ===========================
budget                 ``max_sentences`` 10 (``max_results``,      15 (the article's "10-15")
                       ``min_sentence_threshold``)
gate                   ``min_sentences=None``: per rule, below     10 before any early stop
Alg. 1 (gate 5),       stop if ``max(E) > max_c cos(q, c)``        ``max_c cos(q,c) < mean(E)``
Alg. 2, 7 w/o LLM (8)
Alg. 3 (no gate)       stop if ``max_c cos(u,c) <= previous hop``  ``<`` previous hop
Alg. 4                 (gate 8) stop if ``max_{s in E} (cos(q,u)   ``mean(E) >`` best triangle
                       + cos(q,s) + cos(u,c_s))/3 >`` best
                       triangle; (no gate) sentence termination
Alg. 5, 6              sentence termination only (no gate)         as Alg. 2
Alg. 7 with an LLM     the LLM's ``stop`` only                     the same
always                 ``max_hops`` (20, ``max_safety_hops``),     ``max_hops`` 30, dead end
                       dead end
=====================  ==========================================  ===========================

*Sentence termination* (reference Alg. 4-6): the sentences of the current chunk are scored
by the algorithm's own triangle rule next to the candidate chunks (Alg. 4: ``(cos(q,u) +
2 cos(q,s))/3``, ``cos(q,s)`` standing in for ``cos(u,s)`` as in the reference; Alg. 5-6:
the centroid distance with ``s`` in place of ``c``); the walk ends when a sentence wins.
The reference rules of Alg. 2 and 4-6 compare with every neighbour of the current chunk,
visited ones included (``TraversalPolicy.competitors``; with ``frontier="visited"``, the
walk's candidates). An integer ``min_sentences`` gates every early stop alike
(``min_sentences = max_sentences`` turns them all off). Deviations from the reference
code, each documented on its rule: a chunk adding no sentence is never visited, ``c_s`` is
the chunk ``s`` was extracted from, and the best extracted similarity starts at ``-inf``,
not 0. ``TraversalConfig.article_rules()`` spells the defaults out.

Chunk adjacency is undirected: a similarity edge ``a -> b`` (b in a's top list) lets the
walk go both ways, since cosine similarity is symmetric.

Complexity per query: ``O(m d)`` once for the query-chunk cosines (``m`` chunks), then per
hop ``O(|candidates| d)``; the walk makes at most ``min(max_hops, max_sentences)`` hops
because each hop adds at least one new sentence.

kgpath extension (not in the article): ``mention_expansion`` (:data:`EXTENSIONS`,
:func:`mention_expansion`) ranks *documents* through the mention layer of
:func:`kgpath.ingest.chunk_graph.add_mention_edges`. With ``s(d) = cos(q, e_d) + γ [the
question names d's title]`` and ``link(a, b) = 1`` when a sentence of one document names
the other's title, every document is scored by its best two-document chain,
``score(d) = s(d) + max_{a != d} (s(a) + β link(a, b))``, and the best ``max_documents``
are returned with their best sentences. Cost per query ``O(N d + |mention edges|)``.

On a graph database (issue 22): not offered, by decision. The walks read a chunk graph the
process builds itself (:mod:`kgpath.ingest.chunk_graph` computes the similarity edges from
every chunk vector in memory), and each hop depends on the previous choice, so a database
would add one round trip per hop without saving memory. Measured on the HotpotQA-100 chunk
graph (994 passages: 2,456 chunks, 4,137 sentences, 384-d vectors, chunk degree mean 10.8,
max 43; 100 questions, article rules) against FalkorDB (localhost, 2 loaded cores):

* hops per query, mean (max): basic 4.7 (7), query 4.4 (7), kg 3.7 (7), triangulation
  average 6.3 (9), geometric 3-D 4.2 (6), full-dim 4.4 (7), LLM-guided without LLM 4.4 (7);
  in memory a whole query takes 11-18 ms (median, query embedding included);
* one hop's data (neighbour chunks, their vectors, their sentences and vectors) in one
  query: 3.9 ms median (17 ms p90; 14 ms as four simple queries; a bare round trip 0.19 ms);
* the anchor is ``argmax_c cos(q, c)`` over *every* chunk (and Alg. 1's candidates are every
  chunk at every hop; Alg. 5 needs a PCA of all chunk vectors): an exact scan of the 2,456
  stored chunk vectors costs 109 ms per query; a database vector index would make it
  approximate and the result no longer the in-memory one.

So a database walk costs about 109 + 5 x 4 ms, roughly ten times the in-memory query, for
vectors (~10 MB here) the builder already holds. The part that would make sense - the
per-hop neighbourhood as passage-passage edges - is cheap only once the anchor comes from
an (approximate) vector index; kgpath does not trade exactness for that.

Package layout (one module per seam of the article):

=====================  ======================================================================
module                 contents
=====================  ======================================================================
``config``             :data:`ALGORITHMS`, :data:`EXTENSIONS`, :class:`TraversalConfig`
                       (and its two stopping rule sets), :class:`MentionExpansionConfig`
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
    ARTICLE_MIN_SENTENCES,
    EXTENSIONS,
    STOPPING_RULES,
    Frontier,
    MentionExpansionConfig,
    Stopping,
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
    "ARTICLE_MIN_SENTENCES",
    "EXTENSIONS",
    "STOPPING_RULES",
    "Stopping",
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
