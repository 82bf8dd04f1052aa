"""C2RAG offline path (issues 12 and 14): the anchored chain plan, the LLM-free K_t, one
embedding request per question, and relation vectors embedded once per graph version."""

from __future__ import annotations

import numpy as np
import pytest

from kgpath import ConfigError, HashingEmbedder, KnowledgeGraph
from kgpath.embeddings import BaseEmbedder
from kgpath.methods.c2rag import C2RAGConfig, ConstraintCheckedRetriever
from kgpath.methods.c2rag.fallback import anchored_plan
from kgpath.methods.c2rag.prefetch import plan_texts


class Counting(BaseEmbedder):
    """HashingEmbedder that records every call (kind, texts)."""

    def __init__(self) -> None:
        self.show_progress = False
        self.inner = HashingEmbedder()
        self.calls: list[tuple[str, list[str]]] = []

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        self.calls.append((kind, list(texts)))
        fn = self.inner.embed_queries if kind == "query" else self.inner.embed_passages
        return np.asarray(fn(texts), np.float32)

    def queries(self) -> list[list[str]]:
        return [t for k, t in self.calls if k == "query"]


def films() -> KnowledgeGraph:
    g = KnowledgeGraph()
    triples = [("Heat", "directed_by", "Michael Mann"), ("Heat", "starred_actors", "Al Pacino"),
               ("Collateral", "directed_by", "Michael Mann"),
               ("Collateral", "written_by", "Stuart Beattie"),
               ("Ronin", "starred_actors", "Robert De Niro"),
               ("Heat", "starred_actors", "Robert De Niro")]
    for i, (h, r, t) in enumerate(triples):
        g.add_passage(f"p{i}", f"{h} {r.replace('_', ' ')} {t}.")
        for n in (h, t):
            if n not in g:
                g.add_node(n, name=n)
        g.add_edge(h, t, relation=r, provenance=[f"p{i}"])
    return g


def test_anchored_plan_is_a_chain_from_the_anchor() -> None:
    p = anchored_plan("who wrote the films directed by Michael Mann", "Michael Mann", 3)
    rel = "who wrote the films directed by"
    assert [(c.head, c.relation, c.tail) for c in p.constraints] == [
        ("Michael Mann", rel, "?x1"), ("?x1", rel, "?x2"), ("?x2", rel, "?answer")]
    assert p.source == "fallback" and p.p1 == (0,) and p.p2 == (1, 2)
    assert anchored_plan("Heat", "Heat").constraints[0].relation == "related to"
    with pytest.raises(ConfigError, match="hops"):
        anchored_plan("q", "Heat", 0)
    with pytest.raises(ConfigError, match="anchor"):
        anchored_plan("q", "  ", 1)


def test_plan_texts_lists_every_p1_text_once() -> None:
    g = films()
    cfg = C2RAGConfig().resolve(reranker_given=False)
    r = ConstraintCheckedRetriever(g, embedder=HashingEmbedder())
    p = anchored_plan("who directed Heat", "Heat", 2)
    texts, rels = plan_texts(g, p, "who directed Heat", cfg, lambda s: r._anchors(s, cfg))
    # Heat's Eq. 4 pool (both directions): directed_by, starred_actors (x2); R_1 = "who
    # directed"; the P2 constraint is not known yet; recovery: Lin(τ_1) and q | Lin(τ_1).
    lin = "Heat who directed ?x1 (entity)"
    assert rels == ["directed_by", "starred_actors", "who directed"]
    assert texts == [*rels, lin, "who directed Heat | " + lin]
    texts, rels = plan_texts(g, p, "who directed Heat", cfg, lambda s: r._anchors(s, cfg),
                             known={"directed_by"}, with_recovery=False)
    assert texts == rels == ["starred_actors", "who directed"]


def test_one_query_request_per_question_and_relations_once_per_graph() -> None:
    emb = Counting()
    r = ConstraintCheckedRetriever(films(), embedder=emb)
    r.retrieve("who directed Heat", plan=anchored_plan("who directed Heat", "Heat", 1))
    graph_rels = ["directed_by", "starred_actors", "written_by"]
    assert emb.queries()[0] == graph_rels  # every distinct relation, once, sorted
    assert len(emb.queries()) == 2  # then one request for the question's other texts
    emb.calls.clear()
    r.retrieve("who starred in Ronin", plan=anchored_plan("who starred in Ronin", "Ronin", 1))
    assert len(emb.queries()) == 1
    assert not set(graph_rels) & set(emb.queries()[0])


def test_relation_vectors_graph_and_lazy_give_the_same_result() -> None:
    q = "who starred in Heat"
    plan = anchored_plan(q, "Heat", 1)
    a = ConstraintCheckedRetriever(films(), embedder=HashingEmbedder()).retrieve(q, plan=plan)
    b = ConstraintCheckedRetriever(
        films(), embedder=HashingEmbedder(), config=C2RAGConfig(relation_vectors="lazy")
    ).retrieve(q, plan=plan)
    assert a.hops[0].n_eff == pytest.approx(b.hops[0].n_eff)
    assert [e.id for e in a.evidence()] == [e.id for e in b.evidence()]
    with pytest.raises(ConfigError, match="relation_vectors"):
        C2RAGConfig(relation_vectors="all")  # type: ignore[arg-type]


def test_fallback_plan_keeps_fallback_k_t_passages_user_plan_keeps_k_t() -> None:
    g = films()
    for i in range(6, 12):  # more passages than K_t, none linked to an edge
        g.add_passage(f"p{i}", f"Note {i} about films and actors.")
    r = ConstraintCheckedRetriever(g, embedder=HashingEmbedder())
    # Heat's three candidates tie or nearly tie under S_rel, so the hop stays unresolved
    # at γ = 1 and textual recovery keeps K_t passages.
    fb = r.retrieve("who starred in Heat", gamma=1.0)
    assert fb.plan.source == "fallback" and fb.config.k_t == 5
    assert len(fb.hops[0].recovery.kept) == 5
    user = r.retrieve("who starred in Heat", gamma=1.0, plan={"constraints": [
        {"head": "Heat", "relation": "starred", "tail": "?a", "variants": []}]})
    assert user.config.k_t == 3 and len(user.hops[0].recovery.kept) == 3
    off = ConstraintCheckedRetriever(g, embedder=HashingEmbedder(),
                                     config=C2RAGConfig(fallback_k_t=None))
    assert off.retrieve("who starred in Heat", gamma=1.0).config.k_t == 3
    # min(max(k_t, fallback_k_t), k_t_pool): capped by the pool, never below k_t
    assert C2RAGConfig(fallback_k_t=9).for_plan("fallback").k_t == 8
    assert C2RAGConfig(k_t_pool=4).for_plan("fallback").k_t == 4  # valid, capped
    assert C2RAGConfig(k_t=7).for_plan("fallback").k_t == 7
    assert C2RAGConfig(k_t=2).for_plan("user").k_t == 2


def test_empty_fallback_plan_embeds_only_the_recovery_texts() -> None:
    """No entity named: the plan is empty, only Eq. 11-12 run, so no relation is embedded."""
    calls: list[list[str]] = []

    class Recording(HashingEmbedder):
        def embed_queries(self, texts):  # type: ignore[no-untyped-def]
            calls.append(list(texts))
            return super().embed_queries(texts)

    g = KnowledgeGraph.from_triples(
        [("a", "founded", "b"), ("b", "located in", "c")],
        {"p": "a founded b", "q": "b located in c"}, provenance=[["p"], ["q"]])
    res = ConstraintCheckedRetriever(g, embedder=Recording()).retrieve("who founded zzz?")
    assert res.plan.constraints == ()
    # Lin = the query; Eq. 12's rerank query = query + " | " + Lin (rerank_input default)
    assert calls == [["who founded zzz?", "who founded zzz? | who founded zzz?"]]
