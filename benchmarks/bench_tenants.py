"""Namespaced retrieval on HotpotQA-100 split into tenants, against per-tenant indexes.

The 994 HotpotQA-100 passages are split round-robin into ``--tenants`` namespaces (10) and
indexed once (``GraphIndex.from_documents``; a regex extractor, capitalised runs related in
order, and the 256-d hashing embedder, so that the numbers measure the tenant machinery,
not a model). In the same run it prints, per method (PCR, PathRAG, C2RAG, augmented):

* ``steady``: p50 query latency of ``EvidenceRetriever(method, index, namespace=ns)`` over
  ``--queries`` questions, and the ratio against a retriever over the namespace's own
  snapshot index (``index.for_namespace(ns)``, the reference; results must be equal);
* ``after update``: one document added to namespace ``ns``: the first query's latency (the
  view and the method's core rebuilt) against building the reference from scratch
  (``GraphIndex.from_documents`` over the namespace's documents, the retriever, one query);
* ``other tenant``: the first query of another namespace after that update (nothing of it
  is rebuilt), as a ratio of its steady latency;
* texts the embedder embedded for the update and the queries after it.

Usage: ``python benchmarks/bench_tenants.py [--tenants N] [--queries N] [--limit N]``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "hotpotqa-100"
METHODS = ("pcr", "pathrag", "c2rag", "augmented")


def _data(limit: int | None) -> Any:
    from kgpath.eval.hotpotqa import load_hotpotqa

    root = DATA if DATA.is_dir() else Path("/work/shared/datasets/hotpotqa-100")
    if not root.is_dir():
        sys.exit(f"no HotpotQA-100 data at {root}")
    data = load_hotpotqa(root)
    titles = list(data.corpus)[:limit] if limit else list(data.corpus)
    return data, titles


def _extractor() -> Any:
    from kgpath.ingest.extraction import (
        ExtractedEntity,
        ExtractedRelation,
        Extraction,
        OpenExtractor,
    )

    class Capitals(OpenExtractor):
        name = "capitals"

        def extract_passage(self, passage_id: str, text: str) -> Extraction:
            names = re.findall(r"[A-Z][a-z]+(?: [A-Z][a-z]+)*", text)[:12]
            ents = tuple(ExtractedEntity(n, "Thing", text) for n in names)
            rels = tuple(ExtractedRelation(a, "then", b, "svo", text)
                         for a, b in zip(names, names[1:]))
            return Extraction(passage_id, ents, rels)

    return Capitals()


def _counting() -> Any:
    """The 256-d hashing embedder, counting the passage texts it embeds."""
    from kgpath import HashingEmbedder

    class Counting(HashingEmbedder):
        texts = 0

        def embed_passages(self, texts: Any) -> Any:
            self.texts += len(texts)
            return super().embed_passages(texts)

    return Counting(256)


def _p50(fn: Any, questions: list[str]) -> tuple[float, list[Any]]:
    times, out = [], []
    for q in questions:
        t0 = time.perf_counter()
        out.append([(e.id, round(e.score, 5)) for e in fn(q)])
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def _docs(titles: list[str], data: Any, n: int) -> list[dict[str, Any]]:
    return [{"id": t, "text": data.passage_text(t), "metadata": {"namespace": f"t{i % n}"}}
            for i, t in enumerate(titles)]


def main() -> None:
    from kgpath import GraphIndex
    from kgpath.facade import EvidenceRetriever

    os.environ.setdefault("KGPATH_PROGRESS", "0")
    ap = argparse.ArgumentParser()
    ap.add_argument("--tenants", type=int, default=10)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args()
    data, titles = _data(args.limit)
    questions = [q.question for q in list(data.questions)[:args.queries]]
    docs, emb, ex = _docs(titles[1:], data, args.tenants), _counting(), _extractor()
    t0 = time.perf_counter()
    index = GraphIndex.from_documents(docs, embedder=emb, extractor=ex)
    print(f"{len(docs)} passages in {args.tenants} namespaces, indexed in "
          f"{time.perf_counter() - t0:.1f}s")
    print(f"{'method':10} {'steady p50':>11} {'ref p50':>9} {'ratio':>6} {'after update':>13} "
          f"{'rebuild ref':>12} {'ratio':>6} {'other tenant':>13} {'embedded':>9}")
    for m, method in enumerate(METHODS):
        ns, other = f"t{m % args.tenants}", f"t{(m + 1) % args.tenants}"
        mine = EvidenceRetriever(method, index, namespace=ns, k=5)
        theirs = EvidenceRetriever(method, index, namespace=other, k=5)
        ref = EvidenceRetriever(method, index.for_namespace(ns), k=5)
        mine.retrieve(questions[0]), ref.retrieve(questions[0]), theirs.retrieve(questions[0])
        steady, got = _p50(mine.retrieve, questions)
        ref_p50, want = _p50(ref.retrieve, questions)
        other_p50, _ = _p50(theirs.retrieve, questions)
        assert got == want, method
        new = {"id": f"{titles[0]}#{method}", "text": data.passage_text(titles[0]),
               "metadata": {"namespace": ns}}
        before = emb.texts
        index.add_documents([new])
        t0 = time.perf_counter()
        mine.retrieve(questions[0])
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        theirs.retrieve(questions[0])
        other_first = time.perf_counter() - t0
        t0 = time.perf_counter()
        own = [d for d in docs if d["metadata"]["namespace"] == ns] + [new]
        rebuilt = GraphIndex.from_documents(own, embedder=_counting(), extractor=ex)
        EvidenceRetriever(method, rebuilt, k=5).retrieve(questions[0])
        rebuild = time.perf_counter() - t0
        docs.append(new)
        print(f"{method:10} {steady * 1e3:9.2f}ms {ref_p50 * 1e3:7.2f}ms {steady / ref_p50:5.2f}x "
              f"{first * 1e3:11.1f}ms {rebuild * 1e3:10.1f}ms {first / rebuild:5.2f}x "
              f"{other_first / other_p50:12.2f}x {emb.texts - before:9d}")


if __name__ == "__main__":
    main()
