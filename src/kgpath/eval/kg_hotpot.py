"""``kgpath eval kg`` on HotpotQA-format data: passage recall of every method.

The graph is the offline document graph of :func:`kgpath.eval.kg_build.hotpotqa_graph`.

Protocol
--------
Every method ranks the graph's passages; passage ids map to their source title (the
``doc_id`` of a chunk), repeated titles are dropped, and Recall@k is
``|top-k titles ∩ gold| / |gold|``. All methods share one query embedding per question and
the passage vectors embedded once.

* ``dense``: cosine of the question to each passage vector; ``BM25`` over passage texts.
* ``pcr``, ``pathrag``, ``c2rag``: ``EvidenceRetriever(name, index)`` with every option at
  its default (LLM-free: offline keywords, the fallback plan), the library path a user
  calls. The defaults are each method's measured best for passages, the papers' settings
  one preset away: PathRAG's (``PathRAGConfig.paper()`` for the paper's section 4.1); PCR's
  (both directions to depth 1, ``PCRConfig.paper()`` for the paper's reachability) and
  C2RAG's re-rank their passages by graph propagation (``rerank="propagation"``,
  :mod:`kgpath.methods.augmented.rerank`; off in ``PCRConfig.paper()`` and
  ``C2RAGConfig.paper()``).
* ``traversal``: the facade's default traversal on the chunk graph of the same passages
  (built once, cached beside the document graph).
* ``augmented``: :class:`kgpath.methods.augmented.GraphAugmentedRetriever` with the dense
  base and the passage vectors above, its default scorer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kgpath.embeddings import Embedder
from kgpath.eval.hotpotqa import HotpotQADataset, passage_recall
from kgpath.eval.kg_build import BuiltGraph, doc_of_passage
from kgpath.graph import KnowledgeGraph
from kgpath.search.bm25 import BM25Index

__all__ = ["BASELINES", "PassageScores", "evaluate_passages", "method_runners",
           "passage_methods"]

BASELINES = ("dense", "bm25")
"""The two baselines every run starts with (not registered methods)."""
POOL = 20


def passage_methods() -> tuple[str, ...]:
    """The default runs: :data:`BASELINES`, then the registered methods for HotpotQA.

    Those whose spec's :attr:`~kgpath.methods.registry.MethodSpec.benchmarks` names
    ``"hotpotqa"``, in registry order.
    """
    from kgpath.methods.registry import method_names, method_spec

    return BASELINES + tuple(m for m in method_names()
                             if "hotpotqa" in method_spec(m).benchmarks)


@dataclass
class PassageScores:
    """Per-question recall of one method."""

    name: str
    r2: list[float] = field(default_factory=list)
    r5: list[float] = field(default_factory=list)
    seconds: float = 0.0
    errors: int = 0
    ms: list[float] = field(default_factory=list)
    """Milliseconds of each question (``kgpath eval kg``'s p50 / p95 / max columns)."""

    def add(self, titles: Sequence[str], gold: Sequence[str]) -> None:
        """Score one question's ranked titles."""
        self.r2.append(passage_recall(titles, gold, 2))
        self.r5.append(passage_recall(titles, gold, 5))

    def metrics(self, lo: int = 0, hi: int | None = None) -> dict[str, float]:
        """``{"R@2", "R@5"}`` in percent over questions ``lo:hi``."""
        r2, r5 = self.r2[lo:hi], self.r5[lo:hi]
        return {"R@2": round(100 * float(np.mean(r2)), 1) if r2 else float("nan"),
                "R@5": round(100 * float(np.mean(r5)), 1) if r5 else float("nan")}


class _Queries:
    """Embedder wrapper: question vectors memoised, passage vectors shared.

    Questions are embedded once (batched); the passage vectors embedded once are served to
    every method that embeds passage texts (C2RAG's passage index), so no method re-embeds
    the corpus.
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.memo: dict[str, np.ndarray] = {}
        self.passages: dict[str, np.ndarray] = {}

    def share(self, built: BuiltGraph) -> None:
        """Serve ``built``'s passage vectors for its passage texts."""
        g, v = built.graph, built.vectors
        self.passages.update(
            (g.passages[p].text, v.passage_vectors[i]) for i, p in enumerate(v.passage_ids))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Shared vectors for known passage texts; the embedder for the rest."""
        new = [t for t in dict.fromkeys(texts) if t not in self.passages]
        got = dict(zip(new, self.embedder.embed_passages(new), strict=True)) if new else {}
        rows = [self.passages[t] if t in self.passages else got[t] for t in texts]
        return np.stack(rows) if rows else np.zeros((0, 1), np.float32)

    async def aembed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Async :meth:`embed_passages`."""
        return self.embed_passages(texts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.embedder, name)

    @property
    def dim(self) -> int:
        """The wrapped embedder's dimension."""
        return int(self.embedder.dim)

    def __repr__(self) -> str:
        return repr(self.embedder)

    def fill(self, texts: Sequence[str]) -> None:
        new = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if new:
            self.memo.update(zip(new, self.embedder.embed_queries(new), strict=True))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.fill(texts)
        return np.stack([self.memo[t] for t in texts]) if texts else np.zeros((0, 1))

    async def aembed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_queries(texts)


def _titles(graph: KnowledgeGraph, passage_ids: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(doc_of_passage(graph, p) for p in passage_ids))


def _dense(built: BuiltGraph, emb: _Queries) -> Callable[[str], list[str]]:
    ids, mat = built.vectors.passage_ids, built.vectors.passage_vectors

    def run(q: str) -> list[str]:
        s = mat @ emb.embed_queries([q])[0]
        return [ids[i] for i in np.argsort(-s, kind="stable")[:POOL]]
    return run


def _bm25(built: BuiltGraph) -> Callable[[str], list[str]]:
    ids = built.vectors.passage_ids
    idx = BM25Index([built.graph.passages[p].text for p in ids])

    def run(q: str) -> list[str]:
        s = idx.scores(q)
        return [ids[i] for i in np.argsort(-s, kind="stable")[:POOL]]
    return run


def _facade(
    method: str, graph: Any, emb: _Queries | None, **opts: Any
) -> Callable[[str], list[str]]:
    from kgpath.facade import EvidenceRetriever

    r = EvidenceRetriever(method, graph, embedder=emb, k=None, **opts)  # the whole ranking

    def run(q: str) -> list[str]:
        return [e.id for e in r.retrieve(q, output="passages") if e.kind == "passage"]
    return run


def _traversal(built: BuiltGraph, emb: _Queries) -> Callable[[str], list[str]]:
    from kgpath.ingest.chunk_graph import build_chunk_graph, load_chunk_graph, save_chunk_graph

    g = built.graph
    where = built.cache / "chunk_graph" if built.cache is not None else None
    if where is not None and (where / "manifest.json").is_file():
        cg = load_chunk_graph(where)
    else:
        cg = build_chunk_graph([(p.id, p.text) for p in g.passages.values()],
                               embedder=emb.embedder)
        if where is not None:
            save_chunk_graph(cg, where)
    return _facade("traversal", cg, emb)


def _augmented(built: BuiltGraph, emb: _Queries, **cfg: Any) -> Callable[[str], list[str]]:
    from kgpath.methods.augmented import AugmentedConfig, GraphAugmentedRetriever

    r = GraphAugmentedRetriever(built.graph, embedder=emb, vectors=built.vectors,
                                config=AugmentedConfig(k=POOL, **cfg))

    def run(q: str) -> list[str]:
        return r.retrieve(q).passage_ids
    return run


def method_runners(
    built: BuiltGraph, embedder: Embedder, methods: Sequence[str],
    augmented: dict[str, Any] | None = None, pcr: dict[str, Any] | None = None,
) -> dict[str, Callable[[str], list[str]]]:
    """One ``question -> ranked passage ids`` callable per method (built once).

    A registered method without a runner of its own here runs through the facade with its
    defaults (passages, LLM-free).
    """
    from kgpath.index.graph_index import GraphIndex

    emb = embedder if isinstance(embedder, _Queries) else _Queries(embedder)
    emb.share(built)
    index = GraphIndex(built.graph, emb)  # node vectors are already stored: nothing embedded
    dense = _dense(built, emb)
    makers: dict[str, Callable[[], Callable[[str], list[str]]]] = {
        "dense": lambda: dense,
        "bm25": lambda: _bm25(built),
        "pcr": lambda: _facade("pcr", index, None, **(pcr or {})),
        "c2rag": lambda: _facade("c2rag", index, None),
        "traversal": lambda: _traversal(built, emb),
        "augmented": lambda: _augmented(built, emb, **(augmented or {})),
    }
    return {m: makers[m]() if m in makers else _facade(m, index, None) for m in methods}


def evaluate_passages(
    data: HotpotQADataset, built: BuiltGraph, embedder: Embedder,
    methods: Sequence[str] | None = None, *, augmented: dict[str, Any] | None = None,
    pcr: dict[str, Any] | None = None, progress: Callable[[str], None] | None = None,
) -> dict[str, PassageScores]:
    """Recall@2/@5 per method and question (a method that raises scores 0, counted).

    ``methods``: default :func:`passage_methods`.
    """
    methods = passage_methods() if methods is None else methods
    emb = _Queries(embedder)
    emb.fill([q.question for q in data.questions])
    out: dict[str, PassageScores] = {}
    for name, run in method_runners(built, emb, methods, augmented, pcr).items():
        sc = out[name] = PassageScores(name)
        t0 = time.perf_counter()
        for q in data.questions:
            tq = time.perf_counter()
            try:
                ranked = run(q.question)
            except Exception:  # noqa: BLE001 - a method failing on one question is counted
                sc.errors += 1
                ranked = []
            sc.ms.append(1e3 * (time.perf_counter() - tq))
            sc.add(_titles(built.graph, ranked), q.gold_titles)
        sc.seconds = time.perf_counter() - t0
        if progress:
            progress(f"{name}: {sc.metrics()} ({sc.seconds:.1f}s, {sc.errors} errors)")
    return out


def cache_path(built: BuiltGraph) -> Path | None:
    """Folder of the cached document graph (``None`` when not cached)."""
    return built.cache
