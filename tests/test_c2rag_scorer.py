"""C2RAG after issue 12: the offline S_rel scorer, per-scorer γ/ε, one Eq. 15 hop per bound
entity, and passage vectors shared by every retriever of a (graph, embedder) pair.

Every number is computed by hand from Eq. 5-9 (ε = 0.01).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from kgpath import HashingEmbedder, KnowledgeGraph
from kgpath.embeddings import BaseEmbedder
from kgpath.index import GraphIndex
from kgpath.index.passage_vectors import passage_cache
from kgpath.methods.c2rag import C2RAGConfig, ConstraintCheckedRetriever
from kgpath.rerank import CallableReranker


def _pipeline_fixtures():  # the hand-scored graph and reranker of test_c2rag_pipeline.py
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "_c2rag_pipeline_fixtures", Path(__file__).with_name("test_c2rag_pipeline.py")
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.Table, mod.build_graph, mod.plan


Table, build_graph, plan = _pipeline_fixtures()


class RelEmbedder(BaseEmbedder):
    """Relation strings -> fixed unit vectors; anything else -> (0, 0, 1)."""

    TABLE = {"born in": (1.0, 0.0, 0.0), "lives in": (0.8, 0.6, 0.0), "works at": (0.0, 1.0, 0.0)}

    def __init__(self) -> None:
        self.show_progress = False
        self.calls: list[tuple[str, list[str]]] = []

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        self.calls.append((kind, list(texts)))
        return np.asarray([self.TABLE.get(t, (0.0, 0.0, 1.0)) for t in texts], np.float32)


def tiny() -> KnowledgeGraph:
    return KnowledgeGraph.from_triples(
        [("Ann", "born in", "Oslo"), ("Ann", "lives in", "Rome"), ("Ann", "works at", "Acme")]
    )


def _raise(query: str, texts: Sequence[str]) -> list[float]:
    raise AssertionError("the relation scorer must not call the reranker")


def test_relation_scorer_n_eff_by_hand() -> None:
    # S_rel (Eq. 5) = cos to "born in": Oslo 1.0, Rome 0.8, Acme 0.0 = z.
    # Eq. 7: z - min + ε = (1.01, 0.81, 0.01), sum 1.83.
    # Eq. 8: N_eff = 1.83² / (1.01² + 0.81² + 0.01²) = 3.3489 / 1.6763 ≈ 1.99779.
    n_eff = 1.83**2 / (1.01**2 + 0.81**2 + 0.01**2)
    res = ConstraintCheckedRetriever(tiny(), embedder=RelEmbedder()).retrieve(
        "Where was Ann born?", plan=plan(("Ann", "born in", "?city")), gamma=2.0,
        epsilon=0.01,
    )
    h = res.hops[0]
    assert res.config.scorer == "relation" and res.config.gamma == 2.0
    assert res.config.epsilon == 0.01
    assert [c.entity for c in h.top] == ["Oslo", "Rome", "Acme"]
    assert [c.z for c in h.top] == pytest.approx([1.0, 0.8, 0.0], abs=1e-6)
    assert list(h.probabilities) == pytest.approx([1.01 / 1.83, 0.81 / 1.83, 0.01 / 1.83],
                                                  rel=1e-5)
    assert h.n_eff == pytest.approx(n_eff, rel=1e-5)
    assert h.state == "resolved"  # 1.99779 <= γ = 2.0 (the S_rel default before)
    # the same scores at the reranker's γ = 1.5 are unresolved
    assert ConstraintCheckedRetriever(tiny(), embedder=RelEmbedder()).retrieve(
        "q?", plan=plan(("Ann", "born in", "?city")), gamma=1.5
    ).hops[0].state == "unresolved"


def test_relation_scorer_defaults_eps_003_gamma_25_by_hand() -> None:
    # z = S_rel = (1.0, 0.8, 0.0). Eq. 7 with ε = 0.03: (1.03, 0.83, 0.03), sum 1.89.
    # Eq. 8: N_eff = 1.89² / (1.03² + 0.83² + 0.03²) = 3.5721 / 1.7507 ≈ 2.04038.
    res = ConstraintCheckedRetriever(tiny(), embedder=RelEmbedder()).retrieve(
        "Where was Ann born?", plan=plan(("Ann", "born in", "?city"))
    )
    h = res.hops[0]
    assert (res.config.gamma, res.config.epsilon) == (2.5, 0.03)
    assert list(h.probabilities) == pytest.approx([1.03 / 1.89, 0.83 / 1.89, 0.03 / 1.89],
                                                  rel=1e-5)
    assert h.n_eff == pytest.approx(3.5721 / 1.7507, rel=1e-5)
    assert h.state == "resolved"  # 2.04038 <= γ = 2.5
    # three tied relations: N_eff = 3 > 2.5 whatever ε, unresolved
    tied = KnowledgeGraph.from_triples(
        [("Zed", "born in", "Lyon"), ("Zed", "born in", "Nice"), ("Zed", "born in", "Metz")]
    )
    h = ConstraintCheckedRetriever(tied, embedder=RelEmbedder()).retrieve(
        "q?", plan=plan(("Zed", "born in", "?city"))
    ).hops[0]
    assert h.n_eff == pytest.approx(3.0) and h.state == "unresolved"


def test_relation_scorer_never_calls_the_reranker_and_reranker_path_is_kept() -> None:
    r = ConstraintCheckedRetriever(tiny(), embedder=RelEmbedder(),
                                   reranker=CallableReranker(_raise))
    res = r.retrieve("q?", plan=plan(("Ann", "born in", "?city")), scorer="relation",
                     epsilon=0.01)
    assert res.hops[0].n_eff == pytest.approx(1.83**2 / 1.6763, rel=1e-5)
    # a given reranker is the default scorer, at the paper's γ = 1.5
    rr = CallableReranker(lambda q, ts: [0.9 if "Oslo" in t else 0.1 for t in ts])
    res = ConstraintCheckedRetriever(tiny(), embedder=RelEmbedder(), reranker=rr).retrieve(
        "q?", plan=plan(("Ann", "born in", "?city"))
    )
    assert (res.config.scorer, res.config.gamma) == ("reranker", 1.5)
    # z = (0.9, 0.1, 0.1): p = (0.81, 0.01, 0.01) / 0.83
    assert res.hops[0].n_eff == pytest.approx(0.83**2 / (0.81**2 + 2 * 0.01**2), rel=1e-5)


def test_scorer_is_validated() -> None:
    from kgpath import ConfigError

    with pytest.raises(ConfigError, match="scorer must be"):
        C2RAGConfig(scorer="cosine")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="propagation must be"):
        C2RAGConfig(propagation="all")  # type: ignore[arg-type]


def test_one_hop_per_bound_entity() -> None:
    # Hop 1 (reranker Table): Dave -> C_top (Paris 0.9, Acme 0.1), resolved; pool binding
    # binds ?city = (Paris, Acme). Eq. 15 then runs one hop per entity:
    #  Paris: "Paris capital of ?country"; pool = capital of France 0.9, twin city of Rome 0,
    #    on river Seine 0 (Dave born in Paris bound ?city: left out). p = (0.91, 0.01,
    #    0.01) / 0.93, N_eff = 0.93² / (0.91² + 2·0.01²) ≈ 1.04419 -> resolved.
    #  Acme: "Acme capital of ?country"; its only edge (Dave works at Acme) bound ?city:
    #    empty pool -> unresolved.
    r = ConstraintCheckedRetriever(build_graph(), embedder=HashingEmbedder(),
                                   reranker=Table())
    res = r.retrieve(
        "q?", plan=plan(("Dave", "born in", "?city"), ("?city", "capital of", "?country"))
    )
    h2 = res.hop(1)
    paris, acme = h2.branches
    assert [a.node_id for a in paris.anchors] == ["Paris"]
    assert paris.linearized == "Paris capital of ?country" and paris.pool_size == 3
    assert [c.entity for c in paris.top] == ["France", "Rome", "Seine"]
    assert paris.n_eff == pytest.approx(0.93**2 / (0.91**2 + 2 * 0.01**2), rel=1e-5)
    assert paris.state == "resolved" and paris.recovery is None
    assert [a.node_id for a in acme.anchors] == ["Acme"]
    assert acme.linearized == "Acme capital of ?country"
    assert acme.pool_size == 0 and acme.state == "unresolved" and acme.recovery is None
    assert acme.reason == "empty neighbourhood around 'Acme'"
    # the constraint: resolved because one branch is; N_eff and C_top of that branch
    assert h2.state == "resolved" and h2.n_eff == paris.n_eff and h2.top == paris.top
    assert [a.node_id for a in h2.anchors] == ["Paris", "Acme"]
    assert h2.linearized == "Paris or Acme capital of ?country"
    assert res.bindings["?country"] == ("France", "Rome", "Seine")
    assert res.binding_cases["?country"] == "single"
    # pooled: one hop anchored on both entities (the back-edges stay in its pool)
    pooled = r.retrieve(
        "q?", plan=plan(("Dave", "born in", "?city"), ("?city", "capital of", "?country")),
        propagation="pooled",
    ).hop(1)
    assert pooled.branches == () and [a.node_id for a in pooled.anchors] == ["Paris", "Acme"]
    assert pooled.pool_size == 5  # Paris: 3 out + Dave born in; Acme: Dave works at


def test_passage_vectors_are_embedded_once_per_graph_and_embedder() -> None:
    g = build_graph()
    emb = RelEmbedder()
    q = plan(("Zed", "born in", "?city"))  # three equal candidates: recovery runs
    for _ in range(2):  # two retrievers, same (graph, embedder)
        ConstraintCheckedRetriever(g, embedder=emb, reranker=Table()).retrieve("q?", plan=q)
    passage_calls = [c for c in emb.calls if c[0] == "passage"]
    assert len(passage_calls) == 1 and len(passage_calls[0][1]) == len(g.passages)
    # the GraphIndex hands out the same vectors, without embedding again
    pv = GraphIndex(g, emb).passage_vectors()
    assert pv is not None and pv.ids == tuple(g.passages)
    assert len([c for c in emb.calls if c[0] == "passage"]) == 1
    # a new passage: only it is embedded
    g.add_passage("new", "A new record.")
    ConstraintCheckedRetriever(g, embedder=emb, reranker=Table()).retrieve("q?", plan=q)
    assert [c for c in emb.calls if c[0] == "passage"][-1] == ("passage", ["A new record."])
    assert passage_cache(g, emb) is passage_cache(g, emb)
