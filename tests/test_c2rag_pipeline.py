"""C2RAG pipeline: intersection/union binding, two-placeholder propagation, bad input."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from kgpath import BackendError, ConfigError, HashingEmbedder, KnowledgeGraph, QueryError
from kgpath.methods.c2rag import C2RAGConfig, ConstraintCheckedRetriever
from kgpath.rerank import CallableReranker

TRIPLES = [
    # intersection / union
    ("Alice", "friend of", "Xavier"),
    ("Alice", "friend of", "Yara"),
    ("Alice", "friend of", "Zoe"),
    ("Bob", "colleague of", "Yara"),
    ("Bob", "colleague of", "Walt"),
    ("Bob", "colleague of", "Vera"),
    ("Carol", "knows", "Uma"),
    ("Carol", "knows", "Tess"),
    # propagation chain
    ("Dave", "born in", "Paris"),
    ("Dave", "works at", "Acme"),
    ("Paris", "capital of", "France"),
    ("Paris", "twin city of", "Rome"),
    ("Paris", "on river", "Seine"),
    ("France", "continent", "Europe"),
    ("France", "currency", "Euro"),
    # ambiguous start
    ("Zed", "born in", "Lyon"),
    ("Zed", "born in", "Nice"),
    ("Zed", "born in", "Metz"),
]

SCORES = {
    "Alice friend of Xavier": 0.90, "Alice friend of Yara": 0.10, "Alice friend of Zoe": 0.05,
    "Bob colleague of Walt": 0.90, "Bob colleague of Yara": 0.20,
    "Bob colleague of Vera": 0.10,
    "Carol knows Uma": 0.90, "Carol knows Tess": 0.10,
    "Dave born in Paris": 0.90, "Dave works at Acme": 0.10,
    "Paris capital of France": 0.90, "Paris twin city of Rome": 0.20,
    "Paris on river Seine": 0.10,
    "France continent Europe": 0.90, "France currency Euro": 0.15,
    "Zed born in Lyon": 0.50, "Zed born in Nice": 0.50, "Zed born in Metz": 0.50,
}


def build_graph(passages: bool = True) -> KnowledgeGraph:
    g = KnowledgeGraph()
    if passages:
        for i, (h, r, t) in enumerate(TRIPLES):
            g.add_passage(f"p{i}", f"Record {i}: {h} is {r} {t}.")
    for h, _, t in TRIPLES:
        for n in (h, t):
            if n not in g:
                g.add_node(n, name=n)
    g.add_node("Hermit", name="Hermit")  # no edges at all
    for i, (h, r, t) in enumerate(TRIPLES):
        g.add_edge(h, t, relation=r, provenance=[f"p{i}"] if passages else [])
    return g


RELATION = {f"{h} {r} {t}": r for h, r, t in TRIPLES}
STOP = {"of", "in", "at", "on", "to"}


class Table(CallableReranker):
    """A scripted cross-encoder: a triple keeps its table score only when a content word
    of its relation occurs in Lin(τ) (the part of the reranker query after " | ");
    otherwise it scores 0. Passages score 0."""

    def __init__(self) -> None:
        super().__init__(self._fn)

    @staticmethod
    def _fn(query: str, texts: Sequence[str]) -> list[float]:
        lin = set(query.split(" | ", 1)[1].lower().split())
        out = []
        for t in texts:
            rel = RELATION.get(t)
            ok = rel is not None and bool((set(rel.split()) - STOP) & lin)
            out.append(SCORES[t] if ok else 0.0)
        return out


def retriever(graph: KnowledgeGraph | None = None, reranker=None, **cfg: object):
    return ConstraintCheckedRetriever(
        graph or build_graph(), embedder=HashingEmbedder(),
        reranker=reranker or Table(), config=C2RAGConfig(**cfg),  # type: ignore[arg-type]
    )


def plan(*cons: tuple[str, str, str]) -> dict:
    return {"constraints": [{"head": h, "relation": r, "tail": t, "variants": []}
                            for h, r, t in cons]}


# ---------------------------------------------------------------- Eq. 13-14


def test_intersection_binding_and_pools_filtered_to_it() -> None:
    res = retriever().retrieve(
        "Who is Alice's friend and Bob's colleague?",
        plan=plan(("Alice", "friend of", "?x"), ("Bob", "colleague of", "?x")),
    )
    h1, h2 = res.hops
    assert h1.state == h2.state == "resolved"
    # Eq. 13: each resolved constraint induces all of C_top; the dominant ones differ
    assert h1.induced == ("Xavier", "Yara", "Zoe")
    assert h2.induced == ("Walt", "Yara", "Vera")
    # Eq. 14: the non-empty intersection wins
    assert res.bindings == {"?x": ("Yara",)}
    assert res.binding_cases == {"?x": "intersection"}
    # Ĉ_top keeps only candidates consistent with E_b(?x): their provenance is the evidence
    assert [e.id for e in res.blocks[0].evidence] == ["p1"]  # Alice friend of Yara
    assert [e.id for e in res.blocks[1].evidence] == ["p3"]  # Bob colleague of Yara
    assert res.blocks[0].evidence[0].triple == "Alice friend of Yara"
    assert res.blocks[0].bindings == {"?x": ("Yara",)}


def test_union_binding_when_intersection_is_empty() -> None:
    res = retriever().retrieve(
        "Who is Alice's friend and known by Carol?",
        plan=plan(("Alice", "friend of", "?x"), ("Carol", "knows", "?x")),
    )
    assert [h.state for h in res.hops] == ["resolved", "resolved"]
    assert res.binding_cases == {"?x": "union"}
    assert res.bindings["?x"] == ("Xavier", "Yara", "Zoe", "Uma", "Tess")
    # with the union every candidate is consistent, so no evidence is dropped
    assert [e.id for e in res.blocks[0].evidence] == ["p0", "p1", "p2"]
    assert [e.id for e in res.blocks[1].evidence] == ["p6", "p7"]


# ---------------------------------------------------------------- Eq. 15


def test_two_placeholder_constraints_propagate_until_no_progress() -> None:
    # listed in an order that cannot be run front to back: P1 goes first, then the two
    # P2 constraints as soon as one of their ends is bound
    res = retriever(binding="dominant").retrieve(
        "On which continent is the country whose capital Dave was born in?",
        plan=plan(
            ("?country", "continent", "?continent"),
            ("?city", "capital of", "?country"),
            ("Dave", "born in", "?city"),
        ),
    )
    assert [(h.step, h.constraint_index, h.kind) for h in res.hops] == [
        (1, 2, "P1"), (2, 1, "P2"), (3, 0, "P2")
    ]
    assert [h.state for h in res.hops] == ["resolved"] * 3
    assert res.binding_names == {
        "?city": ("Paris",), "?country": ("France",), "?continent": ("Europe",)
    }
    h2 = res.hop(1)
    assert [a.node_id for a in h2.anchors] == ["Paris"] and h2.variable == "?country"
    assert h2.linearized == "Paris capital of ?country"
    assert res.hop(0).linearized == "France continent ?continent"
    assert res.unbound == ()
    # blocks follow the plan order (Eq. 16), not the execution order
    assert [b.constraint_index for b in res.blocks] == [0, 1, 2]
    assert [e.id for e in res.blocks[0].evidence] == ["p13"]


def test_two_placeholder_constraint_bound_at_its_tail() -> None:
    res = retriever(binding="dominant").retrieve(
        "Which city is the capital of the country ...",
        plan=plan(("Dave", "born in", "?city"), ("?country", "has capital", "?city")),
    )
    h = res.hop(1)
    assert h.kind == "P2" and h.variable == "?country"
    assert h.linearized == "?country has capital Paris"
    assert res.binding_names["?country"] == ("France",)


def test_pool_binding_propagates_every_entity_of_c_top() -> None:
    res = retriever().retrieve(
        "q?", plan=plan(("Dave", "born in", "?city"), ("?city", "capital of", "?country"))
    )
    # Dave has two edges: C_top = (Paris, Acme), both bound under Eq. 13
    assert res.hop(0).induced == ("Paris", "Acme")
    assert [a.node_id for a in res.hop(1).anchors] == ["Paris", "Acme"]


# ---------------------------------------------------------------- bad input


def test_placeholder_never_bound() -> None:
    res = retriever().retrieve(
        "Which country has as capital the city where Zed was born?",
        plan=plan(("Zed", "born in", "?city"), ("?city", "capital of", "?country")),
    )
    h1, h2 = res.hops
    assert h1.state == "unresolved" and h1.recovery_used
    assert h2.kind == "P2" and h2.state == "unresolved"
    assert h2.reason == "placeholder never bound: ?city and ?country"
    assert h2.anchors == () and h2.top == () and h2.recovery_used
    assert res.unbound == ("?city", "?country") and res.bindings == {}
    assert len(res.blocks) == 2 and res.blocks[1].recovery_used


def test_all_reranker_scores_equal_gives_uniform_and_unresolved() -> None:
    res = retriever().retrieve("Where was Zed born?", plan=plan(("Zed", "born in", "?city")))
    h = res.hops[0]
    assert list(h.probabilities) == pytest.approx([1 / 3] * 3)
    assert h.n_eff == pytest.approx(3.0)
    assert h.state == "unresolved" and h.reason == "N_eff 3.000 > gamma 1.5"
    assert h.recovery is not None and len(h.recovery.kept) == 3
    # raising γ above 3 resolves the same hop (per-call override)
    again = retriever().retrieve("Where was Zed born?", plan=plan(("Zed", "born in", "?city")),
                                 gamma=3.0)
    assert again.hops[0].state == "resolved"


def test_anchor_not_in_graph() -> None:
    res = retriever().retrieve("Where was Zyzzx born?", plan=plan(("Zyzzx", "born in", "?c")))
    h = res.hops[0]
    assert h.anchors == () and h.pool_size == 0
    assert h.reason == "no graph node matches 'Zyzzx'"
    assert h.state == "unresolved" and h.recovery_used
    assert res.blocks[0].evidence and all(e.source == "textual" for e in res.blocks[0].evidence)


def test_empty_neighbourhood() -> None:
    res = retriever().retrieve("Who visits the Hermit?", plan=plan(("?who", "visits", "Hermit")))
    h = res.hops[0]
    assert [a.node_id for a in h.anchors] == ["Hermit"]
    assert h.pool_size == 0 and h.n_eff is None
    assert h.reason == "empty neighbourhood around 'Hermit'"
    assert h.state == "unresolved" and h.recovery_used


def test_gamma_below_one_never_resolves() -> None:
    with pytest.warns(UserWarning, match="no constraint will ever be Resolved"):
        r = retriever(gamma=0.5)
    res = r.retrieve("Where was Dave born?", plan=plan(("Dave", "born in", "?city")))
    h = res.hops[0]
    assert h.n_eff is not None and h.n_eff >= 1.0
    assert h.state == "unresolved" and h.recovery_used
    # even a single candidate (point mass, N_eff = 1) is unresolved when γ < 1
    one = KnowledgeGraph.from_triples([("Solo", "born in", "Oslo")])
    with pytest.warns(UserWarning):
        r1 = retriever(one, gamma=0.5)
    h1 = r1.retrieve("q?", plan=plan(("Solo", "born in", "?c"))).hops[0]
    assert h1.n_eff == 1.0 and h1.state == "unresolved"
    # ... and resolved at γ = 1
    h1b = retriever(one).retrieve("q?", plan=plan(("Solo", "born in", "?c")), gamma=1.0).hops[0]
    assert h1b.state == "resolved"


def test_graph_without_passages_recovers_nothing_but_does_not_fail() -> None:
    res = retriever(build_graph(passages=False)).retrieve(
        "Where was Zed born?", plan=plan(("Zed", "born in", "?city"))
    )
    rec = res.hops[0].recovery
    assert rec is not None and rec.scope == "none: the graph has no passages"
    assert rec.kept == () and res.blocks[0].evidence == ()
    assert "(no evidence found)" in res.context


def test_resolved_triple_without_provenance_is_its_own_evidence() -> None:
    res = retriever(build_graph(passages=False)).retrieve(
        "Where was Dave born?", plan=plan(("Dave", "born in", "?city"))
    )
    ev = res.blocks[0].evidence
    assert [(e.kind, e.text) for e in ev] == [
        ("triple", "Dave born in Paris"), ("triple", "Dave works at Acme")
    ]


def test_reranker_returning_wrong_count_raises_backend_error() -> None:
    bad = CallableReranker(lambda q, ts: [0.0])
    with pytest.raises(BackendError, match="returned 1 scores for 2 texts"):
        retriever(reranker=bad).retrieve("q?", plan=plan(("Dave", "born in", "?city")))


def test_bad_query_and_unknown_override() -> None:
    r = retriever()
    with pytest.raises(QueryError):
        r.retrieve("   ")
    with pytest.raises(ConfigError, match="unknown C2RAG option"):
        r.retrieve("q?", plan=plan(("Dave", "born in", "?city")), k=3)
    with pytest.raises(ConfigError, match="KnowledgeGraph or GraphIndex"):
        ConstraintCheckedRetriever("not a graph", embedder=HashingEmbedder())  # type: ignore[arg-type]


def test_empty_fallback_plan_uses_query_recovery() -> None:
    res = retriever().retrieve("What is the meaning of everything?")
    assert res.plan.source == "fallback" and res.plan.constraints == ()
    (h,) = res.hops
    assert h.kind == "query" and h.recovery_used
    assert len(res.blocks) == 1 and res.blocks[0].header.startswith("(no constraint)")


# ---------------------------------------------------------------- evidence ordering, async


def test_ranked_evidence_interleaves_blocks() -> None:
    res = retriever().retrieve(
        "q?", plan=plan(("Alice", "friend of", "?x"), ("Carol", "knows", "?x"))
    )
    ids = [e.id for _, e in res.ranked_evidence()]
    assert ids == ["p0", "p6", "p1", "p7", "p2"]


class AsyncOnlyScores(Table):
    def __init__(self) -> None:
        super().__init__()
        self.async_calls = 0

    async def ascore(self, query: str, texts: Sequence[str]):  # type: ignore[override]
        self.async_calls += 1
        return self.score(query, texts)


async def test_aretrieve_uses_async_backends_and_matches_sync() -> None:
    rr = AsyncOnlyScores()
    p = plan(("?country", "continent", "?continent"), ("?city", "capital of", "?country"),
             ("Dave", "born in", "?city"))
    a = await retriever(reranker=rr).aretrieve("q?", plan=p)
    s = retriever().retrieve("q?", plan=p)
    assert rr.async_calls >= 3
    assert json.loads(a.to_json()) == json.loads(s.to_json())


def test_cross_encoder_reranker_receives_query_constraint_candidate_pairs() -> None:
    from kgpath.rerank import CrossEncoderReranker

    class FakeCrossEncoder:
        def __init__(self) -> None:
            self.pairs: list[tuple[str, str]] = []

        def predict(self, pairs: list[tuple[str, str]]) -> list[float]:
            self.pairs.extend(pairs)
            return [3.0 if "Paris" in b else -2.0 for _, b in pairs]  # logit-like scores

    model = FakeCrossEncoder()
    res = retriever(reranker=CrossEncoderReranker(model), epsilon=0.5).retrieve(
        "Where was Dave born?", plan=plan(("Dave", "born in", "?city"))
    )
    assert model.pairs[0] == ("Where was Dave born? | Dave born in ?city", "Dave born in Paris")
    # z = [3, -2], ε = 0.5 -> p = [5.5, 0.5] / 6, N_eff = 36 / 30.5
    h = res.hops[0]
    assert list(h.probabilities) == pytest.approx([5.5 / 6, 0.5 / 6])
    assert h.n_eff == pytest.approx(36 / 30.5) and h.state == "resolved"
