"""The reference code's stopping rules (``TraversalConfig.reference_rules()``), by hand.

Reference: the article's code, github.com/glacier-creative-git/knowledge-graph-traversal-
semantic-rag-research, ``utils/algos/*.py`` and ``config.yaml``. Every test below fails
on the article-reading rules (the defaults: 15 sentences, mean-based relevance gated at
10, Alg. 3 with ``<``, no sentence termination); each checks the old outcome too.

Query q = (1, 0, 0); a vector ``v(c)`` / ``w(c)`` has cos(q, .) = c:
``v(c) = (c, sqrt(1-c^2), 0)``, ``w(c) = (c, 0, sqrt(1-c^2))``, so cos(v(a), w(b)) = ab.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from kgpath import KnowledgeGraph
from kgpath.methods.traversal import (
    TraversalConfig,
    basic_retrieval,
    kg_traversal,
    llm_guided_traversal,
    query_traversal,
    triangulation_average,
    triangulation_fulldim,
    triangulation_geometric_3d,
)

Q_VEC = np.array([1.0, 0.0, 0.0], dtype=np.float32)
OLD = TraversalConfig.article_rules
REF = TraversalConfig.reference_rules


def v(c: float) -> list[float]:
    return [c, math.sqrt(1 - c * c), 0.0]


def w(c: float) -> list[float]:
    return [c, 0.0, math.sqrt(1 - c * c)]


def graph(
    chunks: dict[str, tuple[list[float], dict[str, list[float]]]],
    edges: list[tuple[str, str]],
) -> KnowledgeGraph:
    """``chunks[name] = (vector, {sentence name: vector})``; one document per chunk."""
    g = KnowledgeGraph()
    vecs = []
    for name, (vec, _) in chunks.items():
        g.add_node(f"chunk:{name}", name=name, text=f"chunk {name}", type="chunk",
                   metadata={"doc_id": name}, provenance=(name,))
        vecs.append(vec)
    for name, (_, sents) in chunks.items():
        for s, vec in sents.items():
            g.add_node(f"sent:{s}", name=name, text=f"sentence {s}.", type="sentence",
                       metadata={"doc_id": name}, provenance=(name,))
            g.add_edge(f"chunk:{name}", f"sent:{s}", "has_sentence")
            vecs.append(vec)
    for a, b in edges:
        g.add_edge(f"chunk:{a}", f"chunk:{b}", "similar_inter", type="similarity")
    g.vectors.set(np.asarray(vecs, dtype=np.float32))
    return g


def anchor_with(n: int, top: float, rest: float, nb: list[float]) -> KnowledgeGraph:
    """Anchor A = v(.6) holding ``n`` sentences: s0 with cos ``top``, the others ``rest``.

    One neighbour B (vector ``nb``) with one sentence b of B's vector.
    """
    sents = {f"s{i}": w(top if i == 0 else rest) for i in range(n)}
    return graph({"A": (v(0.6), sents), "B": (nb, {"b": nb})}, [("A", "B")])


# ---------------------------------------------------------------------- budget
def test_budget_is_ten_sentences():
    # chain C0 - C1 - ... - C4, cos(q, Ci) = .5 - .05 i, three sentences each at cos .1:
    # max(E) = .1 never beats a candidate, so only the budget ends the walk.
    # reference: 10 sentences (max_results / min_sentence_threshold = 10), after 4 chunks;
    # old default: all 15, stop "max_sentences" at 15.
    chunks = {f"C{i}": (v(0.5 - 0.05 * i), {f"c{i}{j}": w(0.1) for j in range(3)})
              for i in range(5)}
    g = graph(chunks, [(f"C{i}", f"C{i + 1}") for i in range(4)])
    r = query_traversal(g, Q_VEC, config=REF())
    assert len(r) == 10 and r.stop_reason == "max_sentences"
    assert r.path_ids == ["chunk:C0", "chunk:C1", "chunk:C2", "chunk:C3"]
    assert [s.id for s in r.sentences][-1] == "sent:c30"  # cut mid-chunk
    assert len(query_traversal(g, Q_VEC, config=OLD())) == 15
    assert len(query_traversal(g, Q_VEC)) == 15  # the default


# ---------------------------------------------------------------------- Alg. 1-2 relevance
def test_query_traversal_relevance_is_max_based():
    # A holds s0 (cos .6) and s1 (cos .2): max .6, mean .4. Neighbour B: cos(q,B) = .5.
    # reference, rules from the first hop: .6 > .5 -> stop at A.
    # article reading: .5 < mean .4 is false -> continue to B.
    g = anchor_with(2, 0.6, 0.2, w(0.5))
    r = query_traversal(g, Q_VEC, config=REF(min_sentences=0))
    assert r.path_ids == ["chunk:A"]
    assert r.stop_reason == (
        "relevance: best extracted cos(q,s)=0.6000 > best neighbour cos(q,c)=0.5000")
    assert r.trace["max_extracted_similarity"] == pytest.approx(0.6, abs=1e-6)
    assert r.trace["stopping"] == "reference"
    assert query_traversal(g, Q_VEC).trace["stopping"] == "article"  # the default
    assert query_traversal(g, Q_VEC, config=OLD(min_sentences=0)).path_ids == [
        "chunk:A", "chunk:B"]


@pytest.mark.parametrize("fn", [query_traversal, llm_guided_traversal])
def test_query_traversal_gate_is_eight(fn):
    # A holds 8 sentences: s0 cos .6, seven at cos 0 (mean .075); B: cos(q,B) = .5.
    # reference (gate 8 for Alg. 2, and Alg. 7 without an LLM): 8 in, .6 > .5 -> stop at A.
    # old defaults: gate 10 not reached -> B. With 7 sentences the gate holds -> B.
    r = fn(anchor_with(8, 0.6, 0.0, w(0.5)), Q_VEC, config=REF())
    assert r.path_ids == ["chunk:A"] and r.stop_reason.startswith("relevance")
    assert fn(anchor_with(8, 0.6, 0.0, w(0.5)), Q_VEC, config=OLD()).path_ids == [
        "chunk:A", "chunk:B"]
    seven = fn(anchor_with(7, 0.6, 0.0, w(0.5)), Q_VEC, config=REF())
    assert seven.path_ids == ["chunk:A", "chunk:B"]


def test_basic_retrieval_gate_is_five():
    # Same anchors; B is not needed as a neighbour (global candidates) but is the next
    # chunk by cos(q, c) = .5. Gate 5: 5 sentences in, .6 > .5 -> stop; 4 -> go on.
    r = basic_retrieval(anchor_with(5, 0.6, 0.0, w(0.5)), Q_VEC, config=REF())
    assert r.path_ids == ["chunk:A"] and r.stop_reason.startswith("relevance")
    assert basic_retrieval(anchor_with(4, 0.6, 0.0, w(0.5)), Q_VEC, config=REF()).path_ids == [
        "chunk:A", "chunk:B"]
    assert basic_retrieval(anchor_with(5, 0.6, 0.0, w(0.5)), Q_VEC, config=OLD()).path_ids == [
        "chunk:A", "chunk:B"]


# ---------------------------------------------------------------------- Alg. 3
def test_kg_traversal_stops_on_a_tie_without_gate():
    # A = e1, K = e2, D = e3 (exact zeros): A -> K at cos 0 (the only candidate); from K the
    # only candidate D has cos(K, D) = 0 <= previous leap 0 -> stop, 2 sentences in.
    # old: gate 10 and "<" -> on to D; even the article rule from hop 0 goes on (0 < 0 false).
    e = np.eye(3).tolist()
    g = graph({"A": (e[0], {"a": e[0]}), "K": (e[1], {"k": e[1]}), "D": (e[2], {"d": e[2]})},
              [("A", "K"), ("K", "D")])
    r = kg_traversal(g, Q_VEC, config=REF())
    assert r.path_ids == ["chunk:A", "chunk:K"]
    assert r.stop_reason == "similarity drop: next hop cos=0.0000 <= previous hop cos=0.0000"
    assert kg_traversal(g, Q_VEC, config=OLD()).path_ids == ["chunk:A", "chunk:K", "chunk:D"]
    assert kg_traversal(g, Q_VEC, config=OLD(min_sentences=0)).path_ids == [
        "chunk:A", "chunk:K", "chunk:D"]


# ---------------------------------------------------------------------- Alg. 4-6
def termination_graph() -> KnowledgeGraph:
    """A = v(.6) holds a = v(.9) (cos(A,a) = .54 + .8 sqrt(.19) = .888712); B = w(.5).

    cos(A, B) = .3. Alg. 4: sentence (.6 + 2 * .9)/3 = .8 > B (.6 + .5 + .3)/3 = .4667.
    Alg. 6: 9 dist^2 = 6 + 2 cos(u,x) - 4 cos(q,u) - 4 cos(q,x):
    a 6 + 1.777424 - 2.4 - 3.6 = 1.777424, B 6 + .6 - 2.4 - 2 = 2.2 -> a is closer.
    """
    return graph({"A": (v(0.6), {"a": v(0.9)}), "B": (w(0.5), {"b": w(0.5)})}, [("A", "B")])


def test_triangulation_average_sentence_termination():
    r = triangulation_average(termination_graph(), Q_VEC, config=REF())
    assert r.path_ids == ["chunk:A"]
    assert r.stop_reason == ("sentence termination: sentence sent:a of the current chunk "
                             "scores 0.8000 > best neighbour 0.4667")
    # old defaults: one sentence < gate 10 -> on to B (then a dead end)
    assert triangulation_average(termination_graph(), Q_VEC, config=OLD()).path_ids == [
        "chunk:A", "chunk:B"]


@pytest.mark.parametrize("fn", [triangulation_fulldim, triangulation_geometric_3d])
def test_centroid_sentence_termination(fn):
    # with d = 3 the 3-D PCA is a rigid motion, so Alg. 5 scores exactly like Alg. 6
    r = fn(termination_graph(), Q_VEC, config=REF())
    assert r.path_ids == ["chunk:A"]
    sent, cand = -math.sqrt(1.777424) / 3, -math.sqrt(2.2) / 3
    assert r.stop_reason == (f"sentence termination: sentence sent:a of the current chunk "
                             f"scores {sent:.4f} > best neighbour {cand:.4f}")
    assert fn(termination_graph(), Q_VEC, config=OLD()).path_ids == ["chunk:A", "chunk:B"]


@pytest.mark.parametrize("fn", [triangulation_fulldim, triangulation_geometric_3d])
def test_centroid_rules_have_no_relevance_stop(fn):
    # A = v(.6) holds a = A's own vector (cos .6); B = w(.5), cos(A,B) = .3.
    # Sentence a: 6 + 2 - 2.4 - 2.4 = 3.2 > B's 2.2 -> no termination: on to B.
    # old rule for Alg. 5-6 (Alg. 2's, from hop 0): .5 < mean .6 -> stop at A.
    g = graph({"A": (v(0.6), {"a": v(0.6)}), "B": (w(0.5), {"b": w(0.5)})}, [("A", "B")])
    r = fn(g, Q_VEC, config=REF(min_sentences=0))
    assert r.path_ids == ["chunk:A", "chunk:B"] and r.stop_reason.startswith("dead end")
    assert fn(g, Q_VEC, config=OLD(min_sentences=0)).path_ids == ["chunk:A"]


def test_triangulation_average_extracted_triangle_rule():
    # A = v(.6) holds 8 sentences at w(.3); B = w(.5), triangle (.6 + .5 + .3)/3 = .4667.
    # Extracted triangles (cos(q,u) + cos(q,s) + cos(u, c_s))/3 = (.6 + .3 + 1)/3 = .6333
    # > .4667 -> stop once 8 are in; the sentence termination (.6 + .6)/3 = .4 does not fire.
    # With 7 sentences (gate 8) -> B. Old rules: mean .3 < .4667 -> B even from hop 0.
    r = triangulation_average(anchor_with(8, 0.3, 0.3, w(0.5)), Q_VEC, config=REF())
    assert r.path_ids == ["chunk:A"]
    assert r.stop_reason == ("relevance: best extracted triangle average 0.6333 > best "
                             "neighbour triangle average 0.4667")
    assert triangulation_average(anchor_with(7, 0.3, 0.3, w(0.5)), Q_VEC,
                                 config=REF()).path_ids == [
        "chunk:A", "chunk:B"]
    old = triangulation_average(anchor_with(8, 0.3, 0.3, w(0.5)), Q_VEC,
                                config=OLD(min_sentences=0))
    assert old.path_ids == ["chunk:A", "chunk:B"]


def test_integer_min_sentences_gates_every_early_stop():
    # min_sentences = max_sentences turns every early stop off, the termination included
    cfg = REF(max_sentences=20, min_sentences=20)
    for fn in (triangulation_average, triangulation_fulldim, triangulation_geometric_3d):
        assert fn(termination_graph(), Q_VEC, config=cfg).path_ids == ["chunk:A", "chunk:B"]
    assert query_traversal(anchor_with(8, 0.6, 0.0, w(0.5)), Q_VEC, config=cfg).path_ids == [
        "chunk:A", "chunk:B"]


# ---------------------------------------------------------------------- competitors
def test_reference_compares_with_visited_neighbours_too():
    # A = v(.6) holds a = w(.45); B = w(.5) holds b = v(.1); C = v(.3) holds c = w(.3);
    # chain A - B - C, rules from the first hop.
    # At A: .45 > B .5? no -> B. At B: max(E) = .45 against B's neighbours A (.6, visited)
    # and C (.3): .45 > .6 is false -> on to C (then a dead end). Comparing with the
    # unvisited C alone would stop at B (.45 > .3).
    g = graph({"A": (v(0.6), {"a": w(0.45)}), "B": (w(0.5), {"b": v(0.1)}),
               "C": (v(0.3), {"c": w(0.3)})}, [("A", "B"), ("B", "C")])
    r = query_traversal(g, Q_VEC, config=REF(min_sentences=0))
    assert r.path_ids == ["chunk:A", "chunk:B", "chunk:C"]
    assert r.stop_reason.startswith("dead end")
    # the branching walk (kgpath extension) compares with its candidates: stop at B
    branching = REF(min_sentences=0, frontier="visited")
    r = query_traversal(g, Q_VEC, config=branching)
    assert r.path_ids == ["chunk:A", "chunk:B"]
    assert r.stop_reason == (
        "relevance: best extracted cos(q,s)=0.4500 > best candidate cos(q,c)=0.3000")
