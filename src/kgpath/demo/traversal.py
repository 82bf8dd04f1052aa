"""Demo section: the semantic chunk graph and its seven traversal algorithms.

Builds a chunk graph over the ten demo passages (sentence windows, similarity edges,
keyword themes), then runs every algorithm on one multi-hop question and prints each
path. With ``--plot`` the paths are drawn on a 2-D PCA map of the chunks
(:func:`plot_traversals`, needs ``pip install 'kgpath[plot]'``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kgpath.data import demo_corpus
from kgpath.demo import DemoContext, table
from kgpath.errors import require
from kgpath.graph import KnowledgeGraph
from kgpath.ingest.chunk_graph import ChunkGraphBuilder, ChunkGraphConfig
from kgpath.methods.traversal import (
    ALGORITHMS,
    ChunkGraphView,
    TraversalConfig,
    TraversalResult,
    TraversalRetriever,
    format_traversal,
)

__all__ = ["run", "plot_traversals", "DEMO_QUESTION"]

DEMO_QUESTION = "Which award did the discoverers of radium receive for it?"


def run(ctx: DemoContext) -> None:
    """Build the demo chunk graph and compare the seven algorithms on one question."""
    ctx.heading("Semantic chunk graph + seven traversal algorithms (kg-traversal article)")
    passages = demo_corpus()["passages"]
    # theme *nodes* are skipped to keep the demo to a few seconds; themes stay in metadata
    builder = ChunkGraphBuilder(ctx.embedder, config=ChunkGraphConfig(theme_nodes=False))
    graph = builder.build(passages)
    s = builder.stats
    ctx.print(
        f"graph: {graph!r}; {s.chunks} chunks (3-sentence windows, stride 1), "
        f"{s.sentences} sentences, {s.similarity_edges} similarity edges, "
        f"built in {s.seconds['total']:.2f} s"
    )
    ctx.print(f"themes of p2 (keyword extraction, no LLM): "
              f"{graph.node('doc:p2').metadata['themes']}")
    retriever = TraversalRetriever(graph, embedder=ctx.embedder,
                                   config=TraversalConfig(max_sentences=6, min_sentences=3))
    ctx.print(f"\nQ: {DEMO_QUESTION}   (budget 6 sentences, early stops from 3)")
    results = retriever.retrieve_all(DEMO_QUESTION)
    rows = []
    for name, r in results.items():
        rows.append([name, format_traversal(r, graph), ",".join(r.documents),
                     r.stop_reason.split(":")[0]])
    ctx.print(table(rows, ["algorithm", "path (doc#window, -(cos)-> hop)", "passages",
                           "stop"]))
    best = results["query_traversal"]
    ctx.print("\nquery_traversal's sentences, in extraction order:")
    for sent in best.sentences:
        ctx.print(f"  hop {sent.hop} [{sent.doc_id}] ({sent.query_similarity:.3f}) {sent.text}")
    ctx.print("llm_guided_traversal ran without an LLM: it falls back to the most similar of "
              "the top-5 candidates at every step (recorded in its trace).")
    if ctx.plot_dir is not None:
        try:
            out = plot_traversals(graph, results, ctx.plot_dir / "traversal_paths.png")
        except ImportError as exc:
            ctx.print(f"(no plot: {exc})")
        else:
            ctx.print(f"path picture: {out}")


def plot_traversals(
    graph: KnowledgeGraph,
    results: Mapping[str, TraversalResult],
    path: str | os.PathLike[str],
    *,
    query_vec: np.ndarray | None = None,
    highlight: Sequence[str] = (),
) -> str:
    """Draw each algorithm's path on a 2-D PCA map of the chunk embeddings; save a PNG.

    One panel per algorithm: every chunk is a dot coloured by document, the visited chunks
    are joined by arrows in visiting order and numbered by hop, the anchor is a star;
    ``query_vec`` (optional) is projected as a red cross and the chunks of the documents in
    ``highlight`` (e.g. gold passages) are ringed in green. Returns the written path.
    """
    require("matplotlib", "kgpath[plot]")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    view = ChunkGraphView(graph)
    mean, basis = view.pca(2)
    xy = (view.chunk_emb.astype(np.float64) - mean) @ basis
    docs = sorted(set(view.chunk_doc))
    hl = np.isin(np.asarray(view.chunk_doc, dtype=object), list(highlight))
    colour = {d: plt.get_cmap("tab20")(i % 20) for i, d in enumerate(docs)}
    names = [a for a in ALGORITHMS if a in results] + [a for a in results if a not in ALGORITHMS]
    cols = min(4, max(1, len(names)))
    rows = (len(names) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.8 * rows), squeeze=False)
    for ax in axes.flat[len(names):]:
        ax.axis("off")
    qxy = None if query_vec is None else (np.asarray(query_vec, np.float64) - mean) @ basis
    dot_colours = [colour[d] for d in view.chunk_doc]
    for ax, name in zip(axes.flat, names, strict=False):
        _draw_panel(ax, name, results[name], view, xy, dot_colours, hl, qxy)
    axes.flat[0].legend(loc="best", fontsize=7)
    fig.suptitle(f"Traversal paths for: {next(iter(results.values())).query}", fontsize=10)
    fig.tight_layout()
    out = os.fspath(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _draw_panel(
    ax: Any,
    name: str,
    r: TraversalResult,
    view: ChunkGraphView,
    xy: np.ndarray,
    dot_colours: list[Any],
    hl: np.ndarray,
    qxy: np.ndarray | None,
) -> None:
    """One algorithm's panel: all chunks, the highlighted ones, the path, anchor, query."""
    ax.scatter(xy[:, 0], xy[:, 1], s=14, c=dot_colours, alpha=0.35)
    if hl.any():
        ax.scatter(xy[hl, 0], xy[hl, 1], s=80, facecolors="none", edgecolors="green",
                   linewidths=1.5, zorder=2, label="highlighted documents")
    pts = np.asarray([xy[view.chunk_position(c)] for c in r.path_ids])
    for (x0, y0), (x1, y1) in zip(pts[:-1], pts[1:], strict=True):
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                    arrowprops={"arrowstyle": "->", "color": "black", "lw": 1.2})
    ax.scatter(pts[:, 0], pts[:, 1], s=30, c="black", zorder=3)
    for hop, (x, y) in enumerate(pts[1:], 1):
        ax.annotate(str(hop), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.scatter(pts[:1, 0], pts[:1, 1], s=160, marker="*", c="gold", edgecolors="black",
               zorder=4, label="anchor")
    if qxy is not None:
        ax.scatter([qxy[0]], [qxy[1]], s=90, marker="X", c="red", zorder=4, label="query")
    ax.set_title(f"{name}\n{len(r.path)} chunks, {len(r.documents)} passages", fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
