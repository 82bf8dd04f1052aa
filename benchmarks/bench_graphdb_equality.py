"""In-memory vs graph-database methods on HotpotQA-100: equal results, and their latency.

Loads the HotpotQA-100 offline document graph (``kgpath eval kg``'s graph:
:func:`kgpath.eval.kg_build.hotpotqa_graph`, cached under ``--cache-dir``; the bundled
embedder through the embedding cache ``KGPATH_CACHE_DIR``, default ``/tmp/evals/cache``,
so nothing is re-embedded but what no run embedded before) into a FalkorDB server it starts
(:class:`kgpath.backends.cypher.falkordb_server.FalkorDBServer`), then runs ``--n``
questions through each method twice, in memory and over the database, and prints per
method: questions, how many gave equal evidence (ids and order of ``evidence("native")``,
then of ``evidence("passages")``; for PathRAG also the same prompt), the largest
``|score difference|`` over both (``inf`` when the lists differ in length), and the p50
milliseconds of each side (the first question, run once before, is a warm-up).

Methods are the entries of :data:`METHODS`: ``name -> (memory builder, database builder)``,
each builder taking the :class:`Setup` and returning ``question -> result`` (a result with
``evidence()``). Adding a method that has a database twin (C2RAG, schema-guided) is one
entry.

* ``pcr``: :class:`~kgpath.methods.pcr.CypherPCR` vs ``PathConstrainedRetriever`` with
  ``PCRConfig.paper()`` (vector scores; the Cypher backend offers ``mode="vector"`` only).
* ``pcr-defaults``: ``CypherPCR`` with the defaults vs the in-memory defaults without
  the propagation re-rank (``rerank=None``): a store keeps the method's passage order.
* ``c2rag``: :class:`~kgpath.methods.c2rag.CypherC2RAG` vs ``ConstraintCheckedRetriever``,
  defaults (the in-memory side with ``rerank=None``, as for PCR).
* ``schema``: :class:`~kgpath.methods.schema.CypherSchemaRetriever` vs
  ``SchemaGuidedRetriever`` with the schema derived from the graph, LLM-free.
* ``augmented``: :class:`~kgpath.methods.augmented.cypher.CypherAugmented` vs
  ``GraphAugmentedRetriever``, defaults.
* ``pathrag``, ``pathrag-paper``, ``pathrag-eq4``: :class:`~kgpath.methods.pathrag.CypherPathRAG`
  vs ``PathRAGRetriever`` with the defaults, ``PathRAGConfig.paper()`` and
  ``PathRAGConfig.literal_eq4()``; offline keywords (no LLM, as ``kgpath eval kg``), so no
  high-level keywords and no relation vectors are needed (``store_pathrag_vectors(...,
  relations=False)`` writes the node-name vectors the paper presets read).
  ``pathrag-cached``: the defaults with ``cache_vectors=True`` (the stored matrices read
  once, not per question).

Usage: ``python benchmarks/bench_graphdb_equality.py [--n 20] [--data DIR] [--cache-dir DIR]``

Runs of 2026-11-27, issue 22 (2 shared cores; 9,557 nodes, 32,544 edges, 1,047 passages;
``load_graph`` 1.4 s; the database side pages through stored vectors: no vector file).
``--n 100 --methods pcr,pcr-defaults,c2rag,schema,augmented``, then the PathRAG presets::

    method          questions eq native eq passages  max|dscore|  p50 ms mem  p50 ms db
    pcr                   100       100         100     0.00e+00         6.7     5992.5
    pcr-defaults          100       100         100     0.00e+00         1.2       57.6
    c2rag                 100       100         100     0.00e+00         4.0      243.9
    schema                100       100         100     0.00e+00         2.4     1209.5
    augmented             100       100         100     1.79e-07         1.3       68.8
    pathrag               100       100         100     0.00e+00         8.5      572.1
    pathrag-paper         100       100         100     0.00e+00        23.9      308.7
    pathrag-eq4           100       100         100     0.00e+00        10.0      266.5
    pathrag-cached        100       100         100     0.00e+00         8.6      124.6

(The PathRAG rows are the run after the edge-into lookups of ``edges_between`` and
``edges_among``, ``--n 100 --methods pathrag,pathrag-paper,pathrag-eq4,pathrag-cached``;
the first runs, 20 questions each, were equal as well.)

Every method equals the in-memory run on every question. Before this run the same bench
found PCR equal on 18 of 20 hit lists and 0 of 20 passage lists: a store fell back to hit
order for passages, and linked question names by lower-cased name instead of entity key
(both fixed: ``kgpath.methods.pcr.passages.stored_passage_vectors``,
``kgpath.backends.base.BackendNames``). PCR ``paper()`` is slow here (unbounded depth walks
~5,700 reachable nodes level by level); ``--scale`` in ``bench_graphdb.py`` measures the
database path with vector files.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("KGPATH_CACHE_DIR", "/tmp/evals/cache")

DATA = Path("/work/shared/datasets/hotpotqa-100")
KGCACHE = Path("/tmp/evals/kgcache")


@dataclass
class Setup:
    """What the builders share: the in-memory index and the loaded database."""

    index: Any
    embedder: Any
    driver: Any
    schema: Any


Runner = Callable[[str], Any]
Builder = Callable[[Setup], Runner]


def _pcr_mem(s: Setup) -> Runner:
    from kgpath.methods.pcr import PathConstrainedRetriever, PCRConfig

    r = PathConstrainedRetriever(s.index, config=PCRConfig.paper())
    return r.retrieve


def _pcr_db(s: Setup) -> Runner:
    from kgpath.methods.pcr import CypherPCR, PCRConfig

    r = CypherPCR(s.driver, embedder=s.embedder, schema=s.schema, config=PCRConfig.paper())
    return r.retrieve


def _aug_mem(s: Setup) -> Runner:
    from kgpath.methods.augmented import GraphAugmentedRetriever

    return GraphAugmentedRetriever(s.index).retrieve


def _aug_db(s: Setup) -> Runner:
    from kgpath.methods.augmented.cypher import CypherAugmented

    return CypherAugmented(s.driver, embedder=s.embedder, schema=s.schema).retrieve


def _pathrag(preset: str, database: bool, cache: bool = False) -> Builder:
    def build(s: Setup) -> Runner:
        from kgpath.methods.pathrag import CypherPathRAG, PathRAGConfig, PathRAGRetriever

        cfg = {"default": PathRAGConfig(), "paper": PathRAGConfig.paper(),
               "eq4": PathRAGConfig.literal_eq4()}[preset]
        if database:
            return CypherPathRAG(s.driver, embedder=s.embedder, schema=s.schema,
                                 config=cfg, cache_vectors=cache).retrieve
        return PathRAGRetriever(s.index, config=cfg).retrieve
    return build


def _pcr_defaults(database: bool) -> Builder:
    def build(s: Setup) -> Runner:
        from kgpath.methods.pcr import CypherPCR, PathConstrainedRetriever, PCRConfig

        if database:  # the defaults; a store keeps PCR's passage order (no re-rank)
            return CypherPCR(s.driver, embedder=s.embedder, schema=s.schema).retrieve
        return PathConstrainedRetriever(s.index, config=PCRConfig(rerank=None)).retrieve
    return build


def _c2rag(database: bool) -> Builder:
    def build(s: Setup) -> Runner:
        from kgpath.methods.c2rag import C2RAGConfig, ConstraintCheckedRetriever, CypherC2RAG

        if database:  # the defaults; a store keeps C2RAG's passage order (no re-rank)
            return CypherC2RAG(s.driver, embedder=s.embedder, schema=s.schema).retrieve
        return ConstraintCheckedRetriever(s.index, config=C2RAGConfig(rerank=None)).retrieve
    return build


def _schema(database: bool) -> Builder:
    def build(s: Setup) -> Runner:
        from kgpath.methods.schema import CypherSchemaRetriever, SchemaGuidedRetriever
        from kgpath.methods.schema.spec import schema_from_graph

        schema = schema_from_graph(s.index.graph)
        if database:
            return CypherSchemaRetriever(s.driver, schema=schema, embedder=s.embedder).retrieve
        return SchemaGuidedRetriever(s.index, schema=schema).retrieve
    return build


METHODS: dict[str, tuple[Builder, Builder]] = {
    "pcr": (_pcr_mem, _pcr_db),
    "pcr-defaults": (_pcr_defaults(False), _pcr_defaults(True)),
    "c2rag": (_c2rag(False), _c2rag(True)),
    "schema": (_schema(False), _schema(True)),
    "augmented": (_aug_mem, _aug_db),
    "pathrag": (_pathrag("default", False), _pathrag("default", True)),
    "pathrag-paper": (_pathrag("paper", False), _pathrag("paper", True)),
    "pathrag-eq4": (_pathrag("eq4", False), _pathrag("eq4", True)),
    "pathrag-cached": (_pathrag("default", False), _pathrag("default", True, cache=True)),
}
"""Method name -> (in-memory builder, database builder)."""


def view(result: Any, output: str) -> tuple[list[str], list[float], str | None]:
    """What is compared: evidence ids (in order), their scores, the prompt if any."""
    ev = result.evidence(output)
    return [f"{e.kind}:{e.id}" for e in ev], [float(e.score) for e in ev], \
        getattr(result, "prompt", None)


def setup(data_dir: Path, cache_dir: Path, server: Any) -> tuple[Setup, list[str], dict]:
    """Build (or load) the graph and index, load them into the server's graph."""
    from kgpath.backends.cypher import load_graph
    from kgpath.backends.cypher.falkordb import FalkorDBDriver
    from kgpath.embed_cache import CachedEmbedder, default_cache_dir
    from kgpath.embeddings import LocalEmbedder
    from kgpath.eval.hotpotqa import load_hotpotqa
    from kgpath.eval.kg_build import hotpotqa_graph
    from kgpath.eval.kg_hotpot import _Queries
    from kgpath.index.graph_index import GraphIndex
    from kgpath.methods.pathrag import store_pathrag_vectors

    data = load_hotpotqa(data_dir)
    embedder = CachedEmbedder(LocalEmbedder(), default_cache_dir())
    built = hotpotqa_graph(data, embedder, cache_dir=cache_dir)
    emb = _Queries(embedder)
    emb.share(built)
    questions = [q.question for q in data.questions]
    emb.fill(questions)
    index = GraphIndex(built.graph, emb).build()
    drv = FalkorDBDriver.connect(server.host, server.port, "bench_equality", timeout=600)
    t0 = time.perf_counter()
    schema = load_graph(drv, index, replace=True)
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    store_pathrag_vectors(drv, index, schema=schema, relations=False)
    t_names = time.perf_counter() - t0
    g = built.graph
    info = {"nodes": g.num_nodes, "edges": g.num_edges, "passages": len(g.passages),
            "load_s": t_load, "name_vectors_s": t_names}
    return Setup(index, emb, drv, schema), questions, info


def compare(s: Setup, questions: list[str], methods: list[str]) -> list[dict[str, Any]]:
    """One row per method: equal results, max score difference, p50 ms of each side."""
    rows = []
    for name in methods:
        mem_b, db_b = METHODS[name]
        mem, db = mem_b(s), db_b(s)
        mem(questions[0])  # warm caches (vectors, CSR) outside the timing
        db(questions[0])
        equal, native, diff, t_mem, t_db = 0, 0, 0.0, [], []
        for q in questions:
            t0 = time.perf_counter()
            a = mem(q)
            t1 = time.perf_counter()
            b = db(q)
            t2 = time.perf_counter()
            t_mem.append((t1 - t0) * 1e3)
            t_db.append((t2 - t1) * 1e3)
            for output in ("native", "passages"):
                (ia, sa, pa), (ib, sb, pb) = view(a, output), view(b, output)
                same = ia == ib and pa == pb
                if output == "native":
                    native += same
                else:
                    equal += same
                if len(sa) == len(sb):
                    diff = max([diff, *(abs(x - y) for x, y in zip(sa, sb, strict=True))])
                else:
                    diff = float("inf")
        rows.append({"method": name, "questions": len(questions), "equal_native": native,
                     "equal": equal,
                     "max_score_diff": diff, "p50_ms_memory": statistics.median(t_mem),
                     "p50_ms_database": statistics.median(t_db)})
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20, help="questions (first N of the set)")
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--cache-dir", type=Path, default=KGCACHE)
    p.add_argument("--methods", default=",".join(METHODS))
    args = p.parse_args(argv)
    from kgpath.backends.cypher.falkordb_server import FalkorDBServer

    warnings.simplefilter("ignore", UserWarning)
    with FalkorDBServer() as server:
        s, questions, info = setup(args.data, args.cache_dir, server)
        print(f"HotpotQA-100 graph: {info['nodes']} nodes, {info['edges']} edges, "
              f"{info['passages']} passages; load_graph {info['load_s']:.1f} s, "
              f"name vectors {info['name_vectors_s']:.1f} s", file=sys.stderr)
        rows = compare(s, questions[: args.n], args.methods.split(","))
        s.driver.close()
    print(f"{'method':<15} {'questions':>9} {'eq native':>9} {'eq passages':>11} "
          f"{'max|dscore|':>12} {'p50 ms mem':>11} {'p50 ms db':>10}")
    for r in rows:
        print(f"{r['method']:<15} {r['questions']:>9} {r['equal_native']:>9} {r['equal']:>11} "
              f"{r['max_score_diff']:>12.2e} {r['p50_ms_memory']:>11.1f} "
              f"{r['p50_ms_database']:>10.1f}")


if __name__ == "__main__":
    main()
