"""What one C2RAG question will embed, gathered before the first hop (issue 14).

The bundled embedder's cost is nearly linear in the number of texts, plus a fixed cost
per call (thread wake-up; about 12 ms per call on a busy 2-core machine against about
26 ms per short text). :func:`plan_texts` lists, for every ``P_1`` constraint of a plan,
the texts Eq. 5, Eq. 6, Eq. 11 and Eq. 12 will embed as queries, so the retriever can
ask for them in one request instead of one or two per hop. Only ``P_1`` constraints are
known before any hop runs: a ``P_2`` constraint's anchors are the bindings of earlier
hops (Eq. 15), so its texts are embedded when it is grounded, as before.

The recovery texts (``Lin(τ)`` for Eq. 11, the rerank query for Eq. 12) are needed only
when the hop stays unresolved, which the check decides after Eq. 5-9; they are included
speculatively (``with_recovery``), costing two short texts per constraint that resolves.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Generator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kgpath.errors import BackendError
from kgpath.graph import KnowledgeGraph
from kgpath.methods.c2rag.alignment import Anchor, Candidate, candidate_pool
from kgpath.methods.c2rag.config import C2RAGConfig
from kgpath.methods.c2rag.drive import Req
from kgpath.methods.c2rag.plan import Plan

if TYPE_CHECKING:
    from kgpath.methods.c2rag.access import GraphAccess

__all__ = ["plan_texts", "prefetch_texts"]


def plan_texts(
    graph: KnowledgeGraph | Callable[[list[str]], Sequence[Candidate]],
    plan: Plan,
    query: str,
    cfg: C2RAGConfig,
    anchors: Callable[[str], Sequence[Anchor]],
    *,
    known: Container[str] = (),
    with_recovery: bool = True,
) -> tuple[list[str], list[str]]:
    """Return ``(texts, relations)``: the query texts of the plan's ``P_1`` hops.

    ``relations`` are the KG relations of every Eq. 4 pool and the constraints' relation
    sets ``R_i`` (Eq. 5), minus those in ``known``; ``texts`` holds them plus, per
    constraint, the Eq. 6 rerank query (``scorer="reranker"``) and, with
    ``with_recovery``, ``Lin(τ)`` and the Eq. 12 rerank query. An empty plan recovers
    over the query itself. Duplicates are removed, order kept. ``graph`` gives the Eq. 4
    pools: the graph, or a function of the anchor ids (a store's pools, fetched already).
    """
    def pools(ids: list[str]) -> Sequence[Candidate]:
        if isinstance(graph, KnowledgeGraph):
            return candidate_pool(graph, ids)
        return graph(ids)

    texts: list[str] = []
    rels: list[str] = []
    if not plan.constraints and with_recovery:
        texts += [query, cfg.rerank_query(query, query)]
    for i in plan.p1:
        c = plan.constraints[i]
        found = anchors(c.tail if c.head_is_var else c.head)
        pool = pools([a.node_id for a in found]) if found else []
        lin = c.linearize(types=plan.placeholders)
        if pool:
            rels += [x.relation for x in pool] + list(c.relation_set(cfg.m))
            if cfg.scorer == "reranker":
                texts.append(cfg.rerank_query(query, lin))
        if with_recovery:
            texts += [lin, cfg.rerank_query(query, lin)]
    rels = [r for r in dict.fromkeys(rels) if r not in known]
    return list(dict.fromkeys([*rels, *texts])), rels


def prefetch_texts(
    memo: Any, texts: Sequence[str], rels: Sequence[str], acc: GraphAccess
) -> Generator[Req, Any, None]:
    """Embed (``embed_queries``) the texts ``memo`` does not remember yet, in one request.

    Those in ``rels`` also go to the access's relation cache (Eq. 5). ``memo``: the
    retriever's remembered vectors (:class:`~kgpath.methods.c2rag.scoring.MemoScorer`), or
    ``None`` (nothing to batch).
    """
    if memo is None:
        return
    rel_set = set(rels)
    missing = list(dict.fromkeys(
        t for t in texts if memo.query_vector(t) is None or
        (t in rel_set and t not in acc.rel_cache)
    ))
    if len(missing) < 2:
        return  # nothing to batch: the usual requests follow
    vecs = np.asarray((yield Req("embed_queries", (missing,))), dtype=np.float32)
    if vecs.shape[0] != len(missing):
        raise BackendError(f"embedder returned {vecs.shape[0]} vectors for {len(missing)} texts")
    memo.remember_queries(missing, vecs)
    for t, v in zip(missing, vecs, strict=True):
        if t in rel_set:
            acc.rel_cache[t] = v
