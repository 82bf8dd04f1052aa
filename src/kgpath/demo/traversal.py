"""Demo section: the semantic chunk graph and its seven traversal algorithms.

Builds a chunk graph over the ten demo passages (sentence windows, similarity edges,
keyword themes), then runs every algorithm on one multi-hop question and prints each
path. With ``--plot`` the paths are drawn on a 2-D PCA map of the chunks
(:func:`kgpath.viz.traversal.plot_traversals`, needs ``pip install 'kgpath[plot]'``).
"""

from __future__ import annotations

from kgpath.data import demo_corpus
from kgpath.demo import DemoContext, table
from kgpath.ingest.chunk_graph import ChunkGraphBuilder, ChunkGraphConfig
from kgpath.methods.traversal import (
    TraversalConfig,
    TraversalRetriever,
    format_traversal,
)
from kgpath.viz.traversal import plot_traversals

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
