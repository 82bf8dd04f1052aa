"""Demo section: raw documents -> an offline knowledge graph -> passages as evidence."""

from __future__ import annotations

import time

from kgpath.demo import DemoContext, table
from kgpath.errors import MissingDependencyError

QUESTION = "Where was the ore for radium mined?"


def run(ctx: DemoContext) -> None:
    """Build a graph from the demo's ten passages with the offline extractor, then retrieve."""
    from kgpath.data import demo_corpus
    from kgpath.facade import EvidenceRetriever
    from kgpath.ingest import entity_key, graph_from_documents

    ctx.heading("From raw documents: an offline graph in one call, passages as evidence")
    corpus = demo_corpus()
    t0 = time.perf_counter()
    try:
        graph = graph_from_documents(list(corpus["passages"].items()))
    except MissingDependencyError as exc:
        ctx.print(f"(skipped: {exc})")
        return
    gold = {frozenset((entity_key(h), entity_key(t))) for h, _, t, _ in corpus["triples"]}
    got = {frozenset((entity_key(graph.node(e.source).name), entity_key(graph.node(e.target).name)))
           for e in graph.edges}
    ctx.print(f"graph_from_documents(10 passages) -> {graph} in "
              f"{time.perf_counter() - t0:.1f} s (spaCy, no LLM); it links "
              f"{len(gold & got)}/{len(gold)} of the hand-written triples' entity pairs")
    ctx.print(f"\nQ: {QUESTION}   (top passage of each method, output='passages')")
    rows = []
    for method in ("pcr", "pathrag", "c2rag"):
        ev = EvidenceRetriever(method, graph, embedder=ctx.embedder, k=1).retrieve(QUESTION)
        text = ev[0].text if ev else "(nothing)"
        cut = text[:90] + ("..." if len(text) > 90 else "")
        rows.append([method, ev[0].id if ev else "-", cut])
    ctx.print(table(rows, ["method", "passage", "text"]))
