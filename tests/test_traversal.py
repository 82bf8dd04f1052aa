"""The seven traversal algorithms on hand-made chunk graphs with exact, chosen embeddings.

Main scenario (3-D unit vectors, query q = (1, 0, 0)); every chunk holds one sentence with
the chunk's own vector, so cos(q, s) = cos(q, c):

    A = (0.6, 0.8, 0)            cos(q,A) = 0.60  -> anchor (largest)
    K = (0, 1, 0)                cos(q,K) = 0.00  cos(A,K) = 0.80
    Q = (0.5, 0, sqrt(.75))      cos(q,Q) = 0.50  cos(A,Q) = 0.30
    T = (0.4, 0.6, sqrt(.48))    cos(q,T) = 0.40  cos(A,T) = 0.72
    F = (0.45, -0.6, sqrt(.4375)) cos(q,F) = 0.45 cos(A,F) = -0.21
    D = (0.55, 0, -sqrt(.6975))  cos(q,D) = 0.55  cos(A,D) = 0.33, cos(K,D) = 0

Edges: A-K, A-Q, A-T, A-F, K-D (D is not adjacent to A).

First hop from A, by hand:
    query_traversal       argmax cos(q,c)                  -> Q (0.50)
    kg_traversal          argmax cos(A,c)                  -> K (0.80)
    triangulation_average (0.6 + cos(q,c) + cos(A,c)) / 3  -> K .4667, Q .4667, T .5733,
                                                              F .28 -> T
    triangulation_fulldim 9 * dist^2 = 6 + 2cos(A,c) - 2.4 - 4cos(q,c):
                          K 5.2, Q 2.2, T 3.44, F 1.38     -> F
    basic_retrieval       global cos(q,c) order            -> D (0.55), not adjacent to A
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from kgpath import ConfigError, GraphError, KnowledgeGraph, QueryError, ScriptedLLM
from kgpath.methods.traversal import (
    ALGORITHMS,
    ChunkGraphView,
    KGTraversalPolicy,
    TraversalConfig,
    TraversalRetriever,
    TriangulationGeometric3DPolicy,
    Walk,
    allm_guided_traversal,
    basic_retrieval,
    format_traversal,
    kg_traversal,
    llm_guided_traversal,
    parse_llm_choice,
    query_traversal,
    traverse,
    triangulation_average,
    triangulation_fulldim,
    triangulation_geometric_3d,
)

Q_VEC = np.array([1.0, 0.0, 0.0], dtype=np.float32)
VECS = {
    "A": [0.6, 0.8, 0.0],
    "K": [0.0, 1.0, 0.0],
    "Q": [0.5, 0.0, math.sqrt(0.75)],
    "T": [0.4, 0.6, math.sqrt(0.48)],
    "F": [0.45, -0.6, math.sqrt(0.4375)],
    "D": [0.55, 0.0, -math.sqrt(0.6975)],
}
EDGES = [("A", "K"), ("A", "Q"), ("A", "T"), ("A", "F"), ("K", "D")]
#: Relevance rules never fire: min_sentences == max_sentences.
NO_RULES = TraversalConfig(max_sentences=20, min_sentences=20)
#: ... and candidates come from every visited chunk, so walks do not dead-end at leaves.
NO_RULES_VISITED = TraversalConfig(max_sentences=20, min_sentences=20, frontier="visited")


def hand_graph(
    chunks: dict[str, tuple[list[float], list[str]]],
    sentences: dict[str, list[float]],
    edges: list[tuple[str, str]],
    doc_of: dict[str, str] | None = None,
) -> KnowledgeGraph:
    """A chunk graph written by hand: ``chunks[name] = (vector, [sentence names])``."""
    g = KnowledgeGraph()
    vecs = []
    for name, (vec, _) in chunks.items():
        doc = (doc_of or {}).get(name, name)
        g.add_node(f"chunk:{name}", name=doc, text=f"chunk {name}", type="chunk",
                   metadata={"doc_id": doc, "position": 0}, provenance=(doc,))
        vecs.append(vec)
    sent_doc = {s: (doc_of or {}).get(c, c) for c, (_, ss) in chunks.items() for s in ss}
    for s, vec in sentences.items():
        g.add_node(f"sent:{s}", name=sent_doc[s], text=f"sentence {s}.", type="sentence",
                   metadata={"doc_id": sent_doc[s]}, provenance=(sent_doc[s],))
        vecs.append(vec)
    for name, (_, ss) in chunks.items():
        for s in ss:
            g.add_edge(f"chunk:{name}", f"sent:{s}", "has_sentence")
    for a, b in edges:
        g.add_edge(f"chunk:{a}", f"chunk:{b}", "similar_inter", type="similarity")
    g.vectors.set(np.asarray(vecs, dtype=np.float32))
    return g


@pytest.fixture
def star() -> KnowledgeGraph:
    return hand_graph({k: (v, [k.lower()]) for k, v in VECS.items()},
                      {k.lower(): v for k, v in VECS.items()}, EDGES)


# ---------------------------------------------------------------------- first hop
@pytest.mark.parametrize(
    ("fn", "second"),
    [
        (query_traversal, "Q"),
        (kg_traversal, "K"),
        (triangulation_average, "T"),
        (triangulation_fulldim, "F"),
        (basic_retrieval, "D"),
    ],
)
def test_first_hop_matches_hand_computation(star, fn, second):
    r = fn(star, Q_VEC, config=NO_RULES)
    assert r.path_ids[:2] == ["chunk:A", f"chunk:{second}"]
    assert r.anchor_id == "chunk:A"
    assert r.path[0].reason == "anchor" and r.path[0].transition_similarity is None


def test_scores_recorded_for_first_hop(star):
    r = triangulation_average(star, Q_VEC, config=NO_RULES)
    step = r.path[1]
    assert step.score == pytest.approx((0.6 + 0.4 + 0.72) / 3, abs=1e-6)
    cands = dict(step.candidates)
    assert cands["chunk:K"] == pytest.approx(1.4 / 3, abs=1e-6)
    assert cands["chunk:F"] == pytest.approx(0.28, abs=1e-6)
    assert step.transition_similarity == pytest.approx(0.72, abs=1e-6)
    fd = triangulation_fulldim(star, Q_VEC, config=NO_RULES).path[1]
    assert fd.score == pytest.approx(-math.sqrt(1.38) / 3, abs=1e-6)


def test_full_paths(star):
    # query: A -> Q; Q has no other neighbour -> dead end
    r = query_traversal(star, Q_VEC, config=NO_RULES)
    assert r.path_ids == ["chunk:A", "chunk:Q"]
    assert r.stop_reason.startswith("dead end")
    # frontier "visited": best-first over neighbours of everything visited
    r = query_traversal(star, Q_VEC, config=TraversalConfig(
        max_sentences=20, min_sentences=20, frontier="visited"))
    assert r.path_ids == ["chunk:A", "chunk:Q", "chunk:F", "chunk:T", "chunk:K", "chunk:D"]
    # kg: A -> K (0.8) -> D (cos(K,D) = 0, the only candidate)
    r = kg_traversal(star, Q_VEC, config=NO_RULES)
    assert r.path_ids == ["chunk:A", "chunk:K", "chunk:D"]
    # basic: global cos(q, c) order, edges ignored
    r = basic_retrieval(star, Q_VEC, config=NO_RULES)
    assert r.path_ids == [f"chunk:{c}" for c in "ADQFTK"]
    assert r.stop_reason == "dead end: no unvisited candidate adds a sentence"


def test_visited_frontier_branches_from_the_best_origin():
    # star + edge K-T. kg with frontier="visited": A -> K (cos .8); then candidates
    # T from A (cos .72) or from K (cos(K,T) = .6), Q from A (.3), F from A (-.21),
    # D from K (0) -> T, branching back from A; then Q (.3), D (0), F (-.21).
    g = hand_graph({k: (v, [k.lower()]) for k, v in VECS.items()},
                   {k.lower(): v for k, v in VECS.items()}, [*EDGES, ("K", "T")])
    r = kg_traversal(g, Q_VEC, config=NO_RULES_VISITED)
    assert r.path_ids == [f"chunk:{c}" for c in "AKTQDF"]
    t = r.path[2]
    assert t.origin_id == "chunk:A" and t.transition_similarity == pytest.approx(0.72, abs=1e-6)
    assert dict(t.candidates)["chunk:T"] == pytest.approx(0.72, abs=1e-6)  # best origin kept
    assert r.path[1].origin_id == "chunk:A" and r.path[0].origin_id is None
    assert format_traversal(r).startswith(
        "chunk:A -(0.80)-> chunk:K -(0.72 from chunk:A)-> chunk:T -(0.30 from chunk:A)-> chunk:Q")
    # the article's frontier: from K only D is adjacent and unvisited besides T (cos .6)
    assert kg_traversal(g, Q_VEC, config=NO_RULES).path_ids[:3] == [
        "chunk:A", "chunk:K", "chunk:T"]


def test_sentences_and_documents_follow_extraction_order(star):
    r = basic_retrieval(star, Q_VEC, config=NO_RULES)
    assert [s.id for s in r.sentences] == [f"sent:{c}" for c in "adqftk"]
    assert r.documents == list("ADQFTK")
    assert [s.hop for s in r.sentences] == list(range(6))
    assert r.sentences[1].query_similarity == pytest.approx(0.55, abs=1e-6)
    assert r.text.startswith("sentence a. sentence d.")


def test_geometric_3d_equals_fulldim_when_embeddings_are_3d(star):
    # With d = 3 the 3-D PCA is a rigid motion (centre + rotation): centroid distances are
    # unchanged, so the geometric rule must choose exactly like the full-dimensional one.
    g3 = triangulation_geometric_3d(star, Q_VEC, config=NO_RULES)
    fd = triangulation_fulldim(star, Q_VEC, config=NO_RULES)
    assert g3.path_ids == fd.path_ids
    assert [s.score for s in g3.path[1:]] == pytest.approx([s.score for s in fd.path[1:]])


def test_geometric_3d_matches_reference_pca_in_higher_dimension():
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(12, 8))
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    names = [f"c{i}" for i in range(12)]
    edges = [(names[i], names[j]) for i in range(12) for j in range(i + 1, 12) if (i + j) % 3 == 0]
    g = hand_graph({n: (v.tolist(), [n]) for n, v in zip(names, vecs, strict=True)},
                   {n: v.tolist() for n, v in zip(names, vecs, strict=True)}, edges)
    q = rng.normal(size=8)
    q /= np.linalg.norm(q)
    view = ChunkGraphView(g)
    walk = Walk(view, q, "")
    walk.visit(0, 20)
    cands = np.unique(view.neighbours(0))
    origins = np.zeros(cands.size, dtype=np.int64)
    got = TriangulationGeometric3DPolicy().score(walk, cands, origins, TraversalConfig())
    # reference: PCA by SVD of the centred chunk matrix
    x = vecs - vecs.mean(axis=0)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    w = vt[:3].T
    proj = lambda v: (v - vecs.mean(axis=0)) @ w  # noqa: E731
    want = [-np.linalg.norm((proj(q) + proj(vecs[0]) + proj(vecs[c])) / 3 - proj(q)) for c in cands]
    assert got == pytest.approx(want, abs=1e-5)


# ---------------------------------------------------------------------- stopping rules
# The article-reading rule set (``stopping="article"``, the defaults, spelled out by
# ``TraversalConfig.article_rules()``); the reference code's rules
# (``TraversalConfig.reference_rules()``) are tested in tests/test_traversal_stopping.py.
ARTICLE = TraversalConfig.article_rules


def relevance_graph() -> KnowledgeGraph:
    """Anchor A holds sentences a1 (cos .6) and a2 (cos .2): mean 0.4.

    A's neighbours: B (cos(q,B) = .5, sentence b1 cos .1) and C (cos .25).
    After A: best candidate .5 > mean .4 -> continue to B; mean (.6+.2+.1)/3 = .3;
    then C (.25) < .3 -> stop.
    """
    def v(c: float) -> list[float]:
        return [c, math.sqrt(1 - c * c), 0.0]

    def w(c: float) -> list[float]:
        return [c, 0.0, math.sqrt(1 - c * c)]

    return hand_graph(
        {"A": (v(0.7), ["a1", "a2"]), "B": (w(0.5), ["b1"]), "C": (v(0.25), ["c1"])},
        {"a1": w(0.6), "a2": w(0.2), "b1": v(0.1), "c1": w(0.9)},
        [("A", "B"), ("B", "C"), ("A", "C")],
    )


def test_relevance_stop_rule():
    cfg = ARTICLE(min_sentences=0)
    r = query_traversal(relevance_graph(), Q_VEC, config=cfg)
    assert r.path_ids == ["chunk:A", "chunk:B"]
    assert r.stop_reason.startswith("relevance")
    assert "0.2500" in r.stop_reason and "0.3000" in r.stop_reason
    assert r.trace["mean_extracted_similarity"] == pytest.approx(0.3, abs=1e-6)


def test_relevance_rule_waits_for_min_sentences():
    r = query_traversal(relevance_graph(), Q_VEC, config=ARTICLE(min_sentences=4))
    assert r.path_ids == ["chunk:A", "chunk:B", "chunk:C"]
    assert r.stop_reason.startswith("dead end")


def test_kg_similarity_drop_rule(star):
    # A -> K at cos .8, then D at cos(K, D) = 0 < 0.8 -> stop before D
    r = kg_traversal(star, Q_VEC, config=ARTICLE(min_sentences=0))
    assert r.path_ids == ["chunk:A", "chunk:K"]
    assert r.stop_reason.startswith("similarity drop")


def test_kg_skips_chunks_overlapping_extracted_sentences():
    # windows (s1,s2,s3) and (s2,s3,s4) overlap; kg must not take the overlapping one even
    # though it is the most similar, and jumps to the other document instead.
    e = [1.0, 0.0, 0.0]
    g = hand_graph(
        {"w0": (e, ["s1", "s2", "s3"]), "w1": ([0.99, 0.141067, 0.0], ["s2", "s3", "s4"]),
         "x": ([0.5, 0.0, math.sqrt(0.75)], ["x1"])},
        {"s1": e, "s2": e, "s3": e, "s4": e, "x1": e},
        [("w0", "w1"), ("w0", "x")],
        doc_of={"w0": "doc", "w1": "doc", "x": "other"},
    )
    kg = kg_traversal(g, Q_VEC, config=NO_RULES)
    assert kg.path_ids[:2] == ["chunk:w0", "chunk:x"]
    qt = query_traversal(g, Q_VEC, config=NO_RULES)  # others only skip chunks adding nothing
    assert qt.path_ids[:2] == ["chunk:w0", "chunk:w1"]
    assert qt.path[1].new_sentences == ("sent:s4",)


def test_triangulation_average_stop_rule():
    # A (cos .6) with sentence cos .9; neighbour N: cos(q,N) = .5, cos(A,N) = .3:
    # average (.6 + .5 + .3)/3 = .4667 < mean extracted .9 -> stop
    g = hand_graph(
        {"A": ([0.6, 0.8, 0.0], ["a"]), "N": ([0.5, 0.0, math.sqrt(0.75)], ["n"])},
        {"a": [0.9, math.sqrt(0.19), 0.0], "n": [0.5, 0.0, math.sqrt(0.75)]},
        [("A", "N")],
    )
    r = triangulation_average(g, Q_VEC, config=ARTICLE(min_sentences=0))
    assert r.path_ids == ["chunk:A"]
    assert "0.4667" in r.stop_reason and "0.9000" in r.stop_reason


def test_max_sentences_truncates_mid_chunk(star):
    r = basic_retrieval(star, Q_VEC, config=TraversalConfig(max_sentences=3, min_sentences=3))
    assert len(r) == 3 and r.stop_reason == "max_sentences"
    g = relevance_graph()
    r = query_traversal(g, Q_VEC, config=TraversalConfig(max_sentences=1, min_sentences=1))
    assert [s.id for s in r.sentences] == ["sent:a1"]


def test_max_hops_safety_cap(star):
    r = basic_retrieval(star, Q_VEC, config=TraversalConfig(
        max_sentences=20, min_sentences=20, max_hops=2))
    assert r.path_ids == ["chunk:A", "chunk:D", "chunk:Q"]
    assert r.stop_reason == "max_hops"
    r = basic_retrieval(star, Q_VEC, config=TraversalConfig(max_hops=0))
    assert r.path_ids == ["chunk:A"]


# ---------------------------------------------------------------------- LLM-guided
def test_llm_guided_follows_valid_choice_and_shows_candidates(star):
    llm = ScriptedLLM(['{"choice": 2}', '{"choice": "stop"}'])
    r = llm_guided_traversal(star, Q_VEC, llm=llm, config=NO_RULES_VISITED, query="what?")
    # candidates by cos(q,c): Q .50, F .45, T .40, K .00 -> choice 2 = F
    assert r.path_ids == ["chunk:A", "chunk:F"]
    assert r.stop_reason == "llm: stop"
    assert r.path[1].reason == "llm"
    prompt = llm.prompts[0]
    assert "what?" in prompt and "sentence a." in prompt
    assert "1. [0.500] Q: chunk Q" in prompt and "4. [0.000] K: chunk K" in prompt
    assert r.trace["llm_calls"] == 2 and r.trace["llm_fallbacks"] == 0


def test_llm_guided_shows_at_most_five_candidates():
    names = [f"n{i}" for i in range(7)]
    vecs = {n: [0.5 - 0.05 * i, math.sqrt(1 - (0.5 - 0.05 * i) ** 2), 0.0]
            for i, n in enumerate(names)}
    chunks = {"A": ([0.9, math.sqrt(0.19), 0.0], ["a"]), **{n: (v, [n]) for n, v in vecs.items()}}
    sents = {"a": chunks["A"][0], **vecs}
    g = hand_graph(chunks, sents, [("A", n) for n in names])
    llm = ScriptedLLM(['{"choice": 5}', '{"choice": "stop"}'])
    r = llm_guided_traversal(g, Q_VEC, llm=llm, config=NO_RULES)
    assert r.path_ids == ["chunk:A", "chunk:n4"]
    assert "5. [0.300]" in llm.prompts[0] and "6. [" not in llm.prompts[0]
    assert "from 1 to\n5" in llm.prompts[0]


@pytest.mark.parametrize("reply", ["banana", '{"choice": 9}', '{"choice": 0}', "{}",
                                   '{"choice": true}'])
def test_llm_guided_invalid_reply_falls_back_to_most_similar(star, reply):
    # after the fallback to Q the walk dead-ends (Q's only neighbour is A): one LLM call
    llm = ScriptedLLM([reply, '{"choice": "stop"}'])
    r = llm_guided_traversal(star, Q_VEC, llm=llm, config=NO_RULES)
    assert r.path_ids == ["chunk:A", "chunk:Q"]
    assert r.path[1].reason.startswith("llm_fallback: unusable reply")
    assert r.trace["llm_fallbacks"] == 1 and r.trace["llm_calls"] == 1


def test_llm_guided_stop_is_honoured_before_min_sentences(star):
    r = llm_guided_traversal(star, Q_VEC, llm=ScriptedLLM(["stop"]))
    assert r.path_ids == ["chunk:A"] and r.stop_reason == "llm: stop"


def test_llm_guided_without_llm_is_top5_query_traversal(star):
    r = llm_guided_traversal(star, Q_VEC, config=NO_RULES)
    assert r.path_ids == query_traversal(star, Q_VEC, config=NO_RULES).path_ids
    assert all(s.reason == "llm_fallback: no LLM configured" for s in r.path[1:])
    assert r.trace["llm"] is False and r.trace["llm_calls"] == 0


async def test_llm_guided_async_matches_sync(star):
    # hop 1 among Q .5, F .45, T .4, K 0 -> 3 = T; hop 2 among Q, F, K -> 2 = F; stop
    script = ['{"choice": 3}', "2", "stop"]
    cfg = NO_RULES_VISITED
    sync = llm_guided_traversal(star, Q_VEC, llm=ScriptedLLM(list(script)), config=cfg)
    llm = ScriptedLLM(list(script), delay=0.001)
    asyn = await allm_guided_traversal(star, Q_VEC, llm=llm, config=cfg)
    assert sync.path_ids == asyn.path_ids == ["chunk:A", "chunk:T", "chunk:F"]
    assert sync.stop_reason == asyn.stop_reason == "llm: stop"


@pytest.mark.parametrize(
    ("reply", "want"),
    [('{"choice": 1}', 0), ('```json\n{"choice": "3"}\n```', 2), ("2", 1), ("stop", "stop"),
     ('{"choice": "STOP"}', "stop"), ('{"choice": 6}', None), ("two", None), ("[1]", None)],
)
def test_parse_llm_choice(reply, want):
    assert parse_llm_choice(reply, 5) == want


# ---------------------------------------------------------------------- retriever & errors
class _Table:
    """Query-only embedder returning fixed vectors."""

    dim = 3

    def embed_queries(self, texts):
        return np.tile(Q_VEC, (len(texts), 1))

    def embed_passages(self, texts):
        raise AssertionError("the chunk graph already holds every embedding")

    async def aembed_queries(self, texts):
        return self.embed_queries(texts)

    async def aembed_passages(self, texts):
        return self.embed_passages(texts)


async def test_retriever_dispatches_every_algorithm(star):
    r = TraversalRetriever(star, embedder=_Table(), config=NO_RULES)
    results = r.retrieve_all("query")
    assert set(results) == set(ALGORITHMS)
    assert results["kg_traversal"].path_ids[1] == "chunk:K"
    assert r.retrieve("query", algorithm="triangulation_average").path_ids[1] == "chunk:T"
    a = await r.aretrieve("query", algorithm="triangulation_fulldim")
    assert a.path_ids == results["triangulation_fulldim"].path_ids
    assert a.algorithm == "triangulation_fulldim" and a.trace["algorithm"] == a.algorithm
    # per-call override through dataclasses.replace
    short = r.retrieve("query", algorithm="basic_retrieval", max_sentences=2, min_sentences=2)
    assert len(short) == 2 and r.config is NO_RULES


def test_retriever_errors(star):
    with pytest.raises(ConfigError, match="nope"):
        TraversalRetriever(star, embedder=_Table(), algorithm="nope")
    r = TraversalRetriever(star, embedder=_Table())
    with pytest.raises(ConfigError, match="warp"):
        r.retrieve("q", warp=3)
    with pytest.raises(ConfigError, match="unknown traversal algorithm 'dfs'"):
        r.retrieve("q", algorithm="dfs")
    with pytest.raises(QueryError):
        r.retrieve("   ")


def test_query_dimension_mismatch(star):
    with pytest.raises(GraphError, match="dimension 2"):
        query_traversal(star, np.array([1.0, 0.0]))


def test_view_rejects_graph_without_chunks(chain_graph):
    with pytest.raises(GraphError, match="no 'chunk' nodes"):
        ChunkGraphView(chain_graph)


@pytest.mark.parametrize(
    "kwargs",
    [{"max_sentences": 0}, {"min_sentences": 16}, {"max_hops": -1}, {"frontier": "all"},
     {"llm_candidates": 0}, {"max_sentences": 2.5}, {"pca_components": True},
     {"min_sentences": -1}, {"min_sentences": 2.0}, {"stopping": "paper"}],
)
def test_config_validation(kwargs):
    with pytest.raises(ConfigError):
        TraversalConfig(**kwargs)


def test_config_is_frozen_keyword_only():
    cfg = TraversalConfig()
    assert (cfg.stopping, cfg.max_sentences, cfg.min_sentences, cfg.max_hops) == (
        "article", 15, None, 30)
    assert (cfg.llm_candidates, cfg.pca_components, cfg.gate(8)) == (5, 3, 10)
    assert TraversalConfig.article_rules() == cfg
    ref = TraversalConfig.reference_rules()
    assert (ref.stopping, ref.max_sentences, ref.min_sentences, ref.max_hops) == (
        "reference", 10, None, 20)
    assert (ref.gate(8), ref.gate(0), TraversalConfig.reference_rules(min_sentences=3).gate(8)
            ) == (8, 0, 3)
    assert TraversalConfig.article_rules(max_sentences=12).max_sentences == 12
    with pytest.raises(AttributeError):
        cfg.max_sentences = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        TraversalConfig(15)  # type: ignore[misc]


def test_policy_instance_and_format(star):
    r = traverse(star, Q_VEC, KGTraversalPolicy(), config=NO_RULES)
    assert format_traversal(r) == "chunk:A -(0.80)-> chunk:K -(0.00)-> chunk:D"
    assert format_traversal(r, star) == "A#0 -(0.80)-> K#0 -(0.00)-> D#0"
