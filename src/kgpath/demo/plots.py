"""Demo section: pictures of PCR, PathRAG and C2RAG results (``kgpath demo --plot``).

Writes ``<method>.png`` (when matplotlib is installed: ``pip install 'kgpath[plot]'``) and
``<method>.html`` (always; self-contained, opens offline) into the ``--out`` folder.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from pathlib import Path
from typing import Any

from kgpath.data import demo_corpus
from kgpath.demo import DemoContext
from kgpath.graph import KnowledgeGraph
from kgpath.methods.pcr import PathConstrainedRetriever, PCRConfig

__all__ = ["run"]

logger = logging.getLogger(__name__)


def _have(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def run(ctx: DemoContext) -> None:
    """Render the first demo query's PCR (and PathRAG, C2RAG) results to ``ctx.plot_dir``."""
    ctx.heading("Pictures: retrieval results as PNG and interactive HTML")
    if ctx.plot_dir is None:
        ctx.print("(skipped: run `kgpath demo --plot [--out DIR]` to write the pictures)")
        return
    from kgpath.viz import render

    out_dir = Path(ctx.plot_dir)
    png = _have("matplotlib")
    if not png:
        ctx.print("matplotlib is not installed (pip install 'kgpath[plot]'): HTML only.")
    spec = demo_corpus()["queries"][0]
    written: list[tuple[str, dict[str, Path], str]] = []

    pcr = PathConstrainedRetriever(
        ctx.index,
        config=PCRConfig(k=5, direction=spec.get("direction", "out"),
                         max_depth=spec.get("max_depth")),
    )
    res = pcr.retrieve(spec["query"], anchor_name=spec["anchor_name"])
    written.append(("pcr", render(res, out_dir, "pcr", ctx.graph, png=png),
                    f"anchor {res.anchor.name!r}, {res.reachable_count} reachable, "
                    f"top {len(res.hits)} with their shortest paths"))

    if _have("kgpath.methods.pathrag"):
        from kgpath.demo.pathrag import DEMO_CONFIG
        from kgpath.methods.pathrag import PathRAGRetriever

        pr = PathRAGRetriever(ctx.index, config=DEMO_CONFIG).retrieve(spec["query"])
        written.append(("pathrag", render(pr, out_dir, "pathrag", ctx.graph, png=png),
                        f"{len(pr.paths)} paths with Eq. 4 reliability"))

    if _have("kgpath.methods.c2rag") and _have("kgpath.demo.c2rag"):
        cr, cg = _c2rag(ctx)
        written.append(("c2rag", render(cr, out_dir, "c2rag", cg, png=png),
                        f"{len(cr.hops)} hops: "
                        + ", ".join(f"{h.state}" for h in cr.hops)))

    ctx.print(f"Q: {spec['query']}")
    for name, files, what in written:
        listed = ", ".join(str(p) for p in files.values())
        ctx.print(f"  {name:<8} {what}\n           -> {listed}")


def _c2rag(ctx: DemoContext) -> tuple[Any, KnowledgeGraph]:
    """The C2RAG demo question with its hand-written plan replayed by a ScriptedLLM."""
    from kgpath.demo.c2rag import demo_questions, load_demo_kg
    from kgpath.llm import ScriptedLLM
    from kgpath.methods.c2rag import ConstraintCheckedRetriever
    from kgpath.rerank import EmbeddingReranker

    graph = load_demo_kg()
    q = demo_questions()[0]
    retriever = ConstraintCheckedRetriever(
        graph, embedder=ctx.embedder, llm=ScriptedLLM([json.dumps(q["plan"])]),
        reranker=EmbeddingReranker(ctx.embedder),
    )
    return retriever.retrieve(q["query"]), graph
