"""Demo section: PCR (vector and hybrid) on the demo corpus, with paths."""

from __future__ import annotations

from kgpath.data import demo_corpus
from kgpath.demo import DemoContext, table
from kgpath.methods.pcr import PathConstrainedRetriever, PCRConfig

__all__ = ["run"]


def run(ctx: DemoContext) -> None:
    """Print PCR results (vector, then hybrid) for the demo queries, with their paths."""
    ctx.heading("PCR: path-constrained retrieval (vector and hybrid BM25+vector, alpha=0.7)")
    for spec in demo_corpus()["queries"]:
        direction = spec.get("direction", "out")
        for mode in ("vector", "hybrid"):
            pcr = PathConstrainedRetriever(
                ctx.index, config=PCRConfig(
                    k=4, mode=mode, direction=direction, max_depth=spec.get("max_depth")
                )
            )
            res = pcr.retrieve(spec["query"], anchor_name=spec["anchor_name"])
            ctx.print()
            ctx.print(
                f"Q: {spec['query']}\n   anchor={res.anchor.name!r} ({res.anchor_resolution}), "
                f"mode={mode}, direction={direction}, max_depth={spec.get('max_depth')}, "
                f"reachable={res.reachable_count} nodes"
                + (" [global fallback]" if res.fallback_used else "")
            )
            rows = [
                [i + 1, h.node.name, h.score, h.hops, h.path_text(ctx.graph)]
                for i, h in enumerate(res.hits)
            ]
            ctx.print(table(rows, ["#", "node", "score", "hops", "path from anchor"]))
