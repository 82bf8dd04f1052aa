"""``kgpath eval traversal``: the seven traversal algorithms on HotpotQA-format data.

Protocol
--------
1. Build the semantic chunk graph (:mod:`kgpath.ingest.chunk_graph`) over the whole corpus,
   one document per title, keeping the corpus's own sentence split.
2. For every question, run each algorithm from its anchor chunk, map the extracted
   sentences back to their passage titles, and rank passages by the order in which they
   are first reached. Passage Recall@k = ``|top-k passages ∩ gold| / |gold|`` (gold = the
   distinct supporting-fact titles); a method that reaches fewer than ``k`` passages is
   scored on what it reached.
3. Baselines on the same corpus and embedder: BM25 over passages (title + text), dense
   (cosine to the document embedding), hybrid (``0.7·cos + 0.3·BM25/max BM25``, PCR paper
   section 3.4).
4. PCR on the chunk graph, anchored at the best dense passage's document node, ``k = 50``
   nodes (all node types compete; passages ranked by first appearance); PathRAG on the
   chunk graph (offline keywords, ``node_match="text"``), passages ranked by first
   appearance along its paths, most reliable path first.

5. ``mention_expansion`` (kgpath extension, not one of the article's seven): documents
   ranked by their best two-document chain through the mention layer
   (:func:`kgpath.methods.traversal.mention_expansion`). A loaded graph without ``mentions``
   edges gets them first (:func:`kgpath.ingest.chunk_graph.add_mention_edges`, timed), so
   PCR and PathRAG run on the graph *with* the mention layer unless ``--no-mentions``.
   ``--halves`` adds Recall@2/@5 on the first and second half of the questions (the
   extension's defaults were chosen on the first half of HotpotQA-100 only).

Extra columns: mean passages reached, mean sentences returned, supporting-fact recall (the
fraction of gold supporting sentences among the returned sentences; traversals only) and
milliseconds per query (query embedding excluded, it is shared).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kgpath.embeddings import Embedder
from kgpath.errors import ConfigError
from kgpath.eval.hotpotqa import HotpotQADataset, load_hotpotqa, passage_recall
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex
from kgpath.index.hybrid import hybrid_scores
from kgpath.ingest.chunk_graph import (
    NODE_THEME,
    REL_MENTIONS,
    ChunkGraphBuilder,
    ChunkGraphConfig,
    add_mention_edges,
    load_chunk_graph,
    save_chunk_graph,
)
from kgpath.ingest.documents import SourceDocument
from kgpath.methods.traversal import (
    ALGORITHMS,
    EXTENSIONS,
    ChunkGraphView,
    MentionExpansionConfig,
    TraversalConfig,
    TraversalResult,
    mention_expansion,
    traverse,
)
from kgpath.search.bm25 import BM25Index
from kgpath.search.vector import top_k

__all__ = [
    "MethodScores",
    "TraversalEvalReport",
    "build_hotpotqa_graph",
    "evaluate_traversal",
    "format_report",
    "format_halves",
    "main",
    "REFERENCE",
]

#: Reference figures for hotpotqa-100 with the bundled embedder (issue 6): (R@2, R@5) in %.
REFERENCE = {"BM25": (54.5, 75.5), "dense": (71.0, 87.5)}


@dataclass
class MethodScores:
    """Per-question results of one method."""

    name: str
    r2: list[float] = field(default_factory=list)
    r5: list[float] = field(default_factory=list)
    passages: list[int] = field(default_factory=list)
    sentences: list[int] = field(default_factory=list)
    sf_recall: list[float] = field(default_factory=list)
    seconds: float = 0.0
    note: str = ""

    def add(self, ranked: Sequence[str], gold: Sequence[str]) -> None:
        """Score one question's ranked passage ids."""
        distinct = list(dict.fromkeys(ranked))
        self.r2.append(passage_recall(distinct, gold, 2))
        self.r5.append(passage_recall(distinct, gold, 5))
        self.passages.append(len(distinct))

    def row(self) -> list[str]:
        """Table row: method, R@2, R@5, passages, sentences, SF recall, ms/query, note."""
        n = max(1, len(self.r2))
        return [
            self.name,
            f"{100 * np.mean(self.r2):.1f}" if self.r2 else "-",
            f"{100 * np.mean(self.r5):.1f}" if self.r5 else "-",
            f"{np.mean(self.passages):.1f}" if self.passages else "-",
            f"{np.mean(self.sentences):.1f}" if self.sentences else "-",
            f"{100 * np.mean(self.sf_recall):.1f}" if self.sf_recall else "-",
            f"{1e3 * self.seconds / n:.1f}" if self.r2 else "-",
            self.note,
        ]


@dataclass
class TraversalEvalReport:
    """All methods' scores plus how the graph was built."""

    questions: int
    methods: list[MethodScores]
    graph_summary: str
    build_stats: dict[str, Any] | None
    embedder: str
    config: TraversalConfig
    mention_stats: dict[str, Any] | None = None


class _MemoQueries:
    """Embedder wrapper memoising query embeddings (each question is embedded once)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._memo: dict[str, np.ndarray] = {}

    @property
    def dim(self) -> int:
        return self.embedder.dim

    def __repr__(self) -> str:
        return repr(self.embedder)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        new = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if new:
            for t, v in zip(new, self.embedder.embed_queries(new), strict=True):
                self._memo[t] = v
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self._memo[t] for t in texts])

    async def aembed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.embedder.embed_passages(texts)

    async def aembed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return await self.embedder.aembed_passages(texts)


def build_hotpotqa_graph(
    data: HotpotQADataset,
    embedder: Embedder,
    *,
    config: ChunkGraphConfig | None = None,
    cache_dir: str | Path | None = None,
) -> tuple[KnowledgeGraph, dict[str, Any]]:
    """Chunk graph over the corpus (one document per title, the corpus's sentences)."""
    docs = [SourceDocument(t, t, s) for t, s in data.corpus.items()]
    b = ChunkGraphBuilder(embedder, config=config, cache_dir=cache_dir)
    g = b.build(docs)
    return g, b.stats.as_dict()


@contextmanager
def _clock(scores: MethodScores) -> Iterator[None]:
    """Add the block's wall time to ``scores.seconds``."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        scores.seconds += time.perf_counter() - t0


def evaluate_traversal(
    data: HotpotQADataset,
    graph: KnowledgeGraph,
    embedder: Embedder,
    *,
    algorithms: Sequence[str] = ALGORITHMS,
    config: TraversalConfig | None = None,
    baselines: bool = True,
    pcr: bool = True,
    pathrag: bool = True,
    pcr_k: int = 50,
    build_stats: dict[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
    extensions: Sequence[str] = EXTENSIONS,
    mention_config: MentionExpansionConfig | None = None,
    mentions: bool = True,
) -> TraversalEvalReport:
    """Score every method on every question (see the module docstring).

    ``mentions=True`` adds the mention layer to ``graph`` in place when it has none;
    ``mentions=False`` runs without it (and skips the extensions, which need it).
    """
    cfg = config or TraversalConfig()
    _check_names(algorithms, extensions)
    say = progress or (lambda _msg: None)
    mention_stats = _ensure_mentions(graph, say) if mentions else None
    emb = _MemoQueries(embedder)
    questions = [q.question for q in data.questions]
    say(f"embedding {len(questions)} questions")
    qvecs = emb.embed_queries(questions)
    view = ChunkGraphView(graph)
    titles = [t for t in data.corpus if f"doc:{t}" in graph]
    doc_idx = np.asarray([graph.index_of(f"doc:{t}") for t in titles], dtype=np.int64)
    doc_emb = graph.vectors.matrix[doc_idx]
    methods: list[MethodScores] = []
    if baselines:
        methods.extend(_baseline_rows(data, titles, doc_emb, qvecs))
    methods.extend(_traversal_rows(data, view, qvecs, algorithms, cfg, say))
    index = GraphIndex(graph, emb)
    if pcr:
        methods.append(_pcr_row(data, index, titles, doc_emb, qvecs, pcr_k, say))
    if pathrag:
        methods.append(_pathrag_row(data, index, say))
    mcfg = mention_config or MentionExpansionConfig()
    for a in extensions if mentions else ():
        methods.append(_extension_row(a, data, view, qvecs, cfg, mcfg, say))
    return TraversalEvalReport(
        questions=len(data.questions),
        methods=methods,
        graph_summary=repr(graph),
        build_stats=build_stats,
        embedder=repr(embedder),
        config=cfg,
        mention_stats=mention_stats,
    )


def _check_names(algorithms: Sequence[str], extensions: Sequence[str]) -> None:
    """Raise :class:`ConfigError` naming an unknown algorithm or extension."""
    for a in algorithms:
        if a not in ALGORITHMS:
            raise ConfigError(f"unknown traversal algorithm {a!r}; choose from {ALGORITHMS}")
    for a in extensions:
        if a not in EXTENSIONS:
            raise ConfigError(f"unknown traversal extension {a!r}; choose from {EXTENSIONS}")


def _ensure_mentions(
    graph: KnowledgeGraph, say: Callable[[str], None]
) -> dict[str, Any] | None:
    """Add the mention layer when ``graph`` has none; its stats and peak memory, else None."""
    if any(e.relation == REL_MENTIONS for e in graph.edges):
        return None
    say("adding the mention layer to the loaded graph")
    import tracemalloc

    tracemalloc.start()
    try:
        ms = add_mention_edges(graph)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return {**ms.as_dict(), "peak_mib": round(peak / 2**20, 2)}


def _baseline_rows(
    data: HotpotQADataset, titles: list[str], doc_emb: np.ndarray, qvecs: np.ndarray
) -> list[MethodScores]:
    """BM25, dense and hybrid (α = 0.7) over the passages, top 5 each."""
    bm25 = BM25Index([data.passage_text(t) for t in titles])
    rows = {name: MethodScores(name) for name in ("BM25", "dense", "hybrid (α=0.7)")}
    bm, de, hy = rows["BM25"], rows["dense"], rows["hybrid (α=0.7)"]
    for q, qv in zip(data.questions, qvecs, strict=True):
        with _clock(bm):
            b = bm25.scores(q.question)
        with _clock(de):
            cos = doc_emb @ qv
        with _clock(hy):
            h = hybrid_scores(cos, b, 0.7)
        for m, s in ((bm, b), (de, cos), (hy, h)):
            m.add([titles[i] for i in top_k(s, 5)], q.gold_titles)
    for name, (r2, r5) in REFERENCE.items():
        rows[name].note = f"reference {r2:.1f}/{r5:.1f}"
    return list(rows.values())


def _add_sentences(m: MethodScores, result: TraversalResult, gold: set[str]) -> None:
    """Record a traversal result's sentence count and supporting-fact recall."""
    m.sentences.append(len(result.sentences))
    m.sf_recall.append(len(gold & {s.id for s in result.sentences}) / max(1, len(gold)))


def _gold_sentences(data: HotpotQADataset) -> dict[str, set[str]]:
    """Sentence node ids of every question's supporting facts."""
    return {q.id: {f"sent:{t}:{k}" for t, k in q.supporting_facts} for q in data.questions}


def _traversal_rows(
    data: HotpotQADataset,
    view: ChunkGraphView,
    qvecs: np.ndarray,
    algorithms: Sequence[str],
    cfg: TraversalConfig,
    say: Callable[[str], None],
) -> list[MethodScores]:
    """One row per article algorithm: passages in first-extraction order."""
    gold_s = _gold_sentences(data)
    rows = []
    for a in algorithms:
        say(f"running {a}")
        m = MethodScores(a)
        for q, qv in zip(data.questions, qvecs, strict=True):
            with _clock(m):
                r = traverse(view, qv, a, config=cfg, query=q.question)
            m.add(r.documents, q.gold_titles)
            _add_sentences(m, r, gold_s[q.id])
        if a == "llm_guided_traversal":
            m.note = "no LLM: falls back to the most similar candidate"
        rows.append(m)
    return rows


def _pcr_row(
    data: HotpotQADataset,
    index: GraphIndex,
    titles: list[str],
    doc_emb: np.ndarray,
    qvecs: np.ndarray,
    pcr_k: int,
    say: Callable[[str], None],
) -> MethodScores:
    """PCR anchored at the best dense passage's document node, ``k = pcr_k`` nodes."""
    from kgpath.methods.pcr import PathConstrainedRetriever

    say("running PCR")
    m = MethodScores("PCR (anchor = best dense passage)", note=f"k={pcr_k} nodes")
    retr = PathConstrainedRetriever(index)
    for q, qv in zip(data.questions, qvecs, strict=True):
        anchor = f"doc:{titles[int(np.argmax(doc_emb @ qv))]}"
        with _clock(m):
            res = retr.retrieve(q.question, anchor=anchor, k=pcr_k)
        m.add(_passages_of(h.node for h in res.hits), q.gold_titles)
    return m


def _pathrag_row(
    data: HotpotQADataset, index: GraphIndex, say: Callable[[str], None]
) -> MethodScores:
    """PathRAG with offline keywords: passages along its paths, most reliable first."""
    try:
        from kgpath.methods.pathrag import PathRAGConfig, PathRAGRetriever
    except ImportError:
        return MethodScores("PathRAG", note="kgpath.methods.pathrag not available")
    say("running PathRAG")
    m = MethodScores("PathRAG (offline keywords)", note="node_match=text, N=40, K=15")
    prag = PathRAGRetriever(index, config=PathRAGConfig(node_match="text"))
    for q in data.questions:
        with _clock(m):
            pres = prag.retrieve(q.question)
        m.add(_passages_of(n for p in pres.paths for n in p.nodes), q.gold_titles)
    return m


def _extension_row(
    a: str,
    data: HotpotQADataset,
    view: ChunkGraphView,
    qvecs: np.ndarray,
    cfg: TraversalConfig,
    mcfg: MentionExpansionConfig,
    say: Callable[[str], None],
) -> MethodScores:
    """The kgpath ``mention_expansion`` extension (mention layer built outside the clock)."""
    say(f"running {a}")
    view.mention_layer(mcfg.min_title_chars)  # built once, outside the clock (as the view)
    m = MethodScores(
        a, note=f"kgpath ext.: β={mcfg.link_bonus:g}, γ={mcfg.question_bonus:g}, "
        f"df≤{mcfg.max_title_df:g}",
    )
    gold_s = _gold_sentences(data)
    for q, qv in zip(data.questions, qvecs, strict=True):
        with _clock(m):
            r = mention_expansion(view, qv, query=q.question, config=mcfg,
                                  traversal_config=cfg)
        m.add(r.documents, q.gold_titles)
        _add_sentences(m, r, gold_s[q.id])
    return m


def _passages_of(nodes: Any) -> list[str]:
    """Passage ids of nodes in order (theme nodes, which span documents, are skipped)."""
    out: list[str] = []
    for n in nodes:
        if n.type == NODE_THEME or not n.provenance:
            continue
        out.append(n.provenance[0])
    return list(dict.fromkeys(out))


def format_report(report: TraversalEvalReport) -> str:
    """The evaluation table as plain text."""
    from kgpath._tables import table

    head = [
        f"HotpotQA passage recall: {report.questions} questions, embedder {report.embedder}",
        f"chunk graph: {report.graph_summary}",
    ]
    if report.build_stats:
        s = report.build_stats
        head.append(
            f"build: {s['chunks']} chunks, {s['sentences']} sentences, {s['themes']} themes, "
            f"{s['similarity_edges']} similarity edges, {s['seconds'].get('total', 0):.1f} s"
        )
    if report.mention_stats:
        ms = report.mention_stats
        head.append(
            f"mention layer added to the loaded graph: {ms['edges']} edges from "
            f"{ms['sources']} sentences to {ms['titles']} titles, {ms['seconds']:.2f} s, "
            f"peak {ms['peak_mib']:.1f} MiB (tracemalloc)"
        )
    c = report.config
    head.append(
        f"traversal config: max_sentences={c.max_sentences}, min_sentences={c.min_sentences}, "
        f"max_hops={c.max_hops}, frontier={c.frontier}"
    )
    rows = [m.row() for m in report.methods]
    headers = ["method", "R@2", "R@5", "passages", "sentences", "SF-recall", "ms/q", "note"]
    return "\n".join(head) + "\n\n" + table(rows, headers)


def format_halves(report: TraversalEvalReport) -> str:
    """Recall@2/@5 of every method on the first and second half of the questions."""
    from kgpath._tables import table

    rows = []
    for m in report.methods:
        if not m.r2:
            continue
        h = len(m.r2) // 2
        cells = [m.name]
        for lo, hi in ((0, h), (h, len(m.r2))):
            cells += [f"{100 * np.mean(m.r2[lo:hi]):.1f}" if hi > lo else "-",
                      f"{100 * np.mean(m.r5[lo:hi]):.1f}" if hi > lo else "-"]
        rows.append(cells)
    h = report.questions // 2
    headers = ["method", f"R@2 q0-{h - 1}", f"R@5 q0-{h - 1}",
               f"R@2 q{h}-{report.questions - 1}", f"R@5 q{h}-{report.questions - 1}"]
    return table(rows, headers)


def _parser() -> argparse.ArgumentParser:
    """The command line of ``kgpath eval traversal``."""
    p = argparse.ArgumentParser(
        prog="kgpath eval traversal",
        description="Passage Recall@2/@5 of the seven traversal algorithms, BM25, dense, "
        "hybrid, PCR and PathRAG on HotpotQA-format data.",
    )
    p.add_argument("--data", required=True, help="folder with questions.json and corpus.json")
    p.add_argument("--embedder", default="local", choices=["local", "hashing"])
    p.add_argument("--limit", type=int, default=None, help="first N questions only")
    p.add_argument("--cache-dir", default=None,
                   help="on-disk embedding cache (default: kgpath.embed_cache.default_cache_dir())")
    p.add_argument("--no-cache", action="store_true", help="embed everything afresh")
    p.add_argument("--stopping", default="article", choices=["article", "reference"],
                   help="traversal stopping rules (TraversalConfig.stopping)")
    p.add_argument("--graph", default=None,
                   help="load the chunk graph from this folder if present, else build and save")
    p.add_argument("--algorithms", default=",".join(ALGORITHMS), help="comma list")
    p.add_argument("--top-x", type=int, default=ChunkGraphConfig().top_x_inter,
                   help="cross-document edges per chunk (graph build)")
    p.add_argument("--max-sentences", type=int, default=TraversalConfig().max_sentences)
    p.add_argument("--min-sentences", type=int, default=TraversalConfig().min_sentences)
    p.add_argument("--frontier", default="current", choices=["current", "visited"])
    p.add_argument("--no-pcr", action="store_true")
    p.add_argument("--no-pathrag", action="store_true")
    p.add_argument("--no-mentions", action="store_true",
                   help="no mention layer and no mention_expansion row")
    p.add_argument("--halves", action="store_true",
                   help="also print R@2/@5 on the first and second half of the questions")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``kgpath eval traversal``."""
    args = _parser().parse_args(argv)

    from kgpath.embeddings import HashingEmbedder, LocalEmbedder

    data = load_hotpotqa(args.data, limit=args.limit)
    embedder: Embedder = LocalEmbedder() if args.embedder == "local" else HashingEmbedder()
    if not args.no_cache:  # on by default for the command line: a re-run never re-embeds
        from kgpath.embed_cache import CachedEmbedder, default_cache_dir

        embedder = CachedEmbedder(embedder, args.cache_dir or default_cache_dir())
    gcfg = ChunkGraphConfig(top_x_inter=args.top_x, mention_edges=not args.no_mentions)
    tcfg = TraversalConfig(max_sentences=args.max_sentences, min_sentences=args.min_sentences,
                           frontier=args.frontier, stopping=args.stopping)
    stats: dict[str, Any] | None = None
    if args.graph and (Path(args.graph) / "manifest.json").is_file():
        print(f"loading chunk graph from {args.graph}", flush=True)
        graph = load_chunk_graph(args.graph)
    else:
        print(f"building chunk graph over {len(data.corpus)} passages ...", flush=True)
        graph, stats = build_hotpotqa_graph(data, embedder, config=gcfg)
        if args.graph:
            save_chunk_graph(graph, args.graph)
    report = evaluate_traversal(
        data, graph, embedder,
        algorithms=[a.strip() for a in args.algorithms.split(",") if a.strip()],
        config=tcfg, pcr=not args.no_pcr, pathrag=not args.no_pathrag, build_stats=stats,
        progress=lambda msg: print(msg, flush=True), mentions=not args.no_mentions,
    )
    print()
    print(format_report(report))
    if args.halves:
        print()
        print(format_halves(report))
    return 0

