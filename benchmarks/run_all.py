"""Run every ``benchmarks/bench_*.py`` (each exposes ``main()``); ``make bench`` calls this.

Speed targets are checked here, by printed ratios against a reference implementation
measured in the same run, never by timing assertions in unit tests.
Usage: ``python benchmarks/run_all.py [name ...]`` (e.g. ``pcr pathrag``).
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    wanted = set(argv)
    for path in sorted(here.glob("bench_*.py")):
        name = path.stem.removeprefix("bench_")
        if wanted and name not in wanted:
            continue
        print(f"\n#### {path.name}", flush=True)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = mod
        spec.loader.exec_module(mod)
        t0 = time.perf_counter()
        mod.main([]) if mod.main.__code__.co_argcount else mod.main()
        print(f"#### {path.name} done in {time.perf_counter() - t0:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
