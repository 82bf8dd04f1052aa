"""Merges and parsers are linear: 10x the input costs at most 12x the time (issue 23).

Each case runs on an input of ``n`` items and one of ``10 n`` (least CPU time of a few runs,
garbage collector off while timed, as ``timeit`` does; both sizes in the same process) and
prints ``t(10n) / t(n)``; ``PASS`` when it is <= 12. A linear reference (a dict of ``n`` vs
``10 n`` split strings, the same memory pattern as a name merge) is measured first and
printed with each ratio divided by it: on a shared machine even linear work grows a little
faster than its input (caches), which the second column removes.

Cases (the issue's, at its sizes by default):

- ``short_form_map``: 8k entity names of one document (first + last names, lone last and
  first names, so every key is looked up as a short form): 29 s on main, 16k > 120 s;
- the whole extraction path (``graph_from_documents`` with ``LLMExtractor``) on one reply
  of 4k triples vs one of 40k (two-word names and their last word, so the per-document name
  merge works; compact JSON, under the 1 MB reply cap): 10 s for 4k on main;
- ``parse_keywords`` on 4k vs 40k keywords (13-21 s for 8k before issue 23's first pass);
- ``parse_plan`` on 3k vs 30k constraints given as parsed JSON (30k is over the reply cap
  as text), in five shapes: a placeholder chain given back to front, the chain shuffled,
  the shuffled chain with back edges that close cycles (one strongly connected component
  of all placeholders: the cycle check is Pearce-Kelly's dynamic order there, expected
  O(n log n) on a random order, so this row may read 13-14x), constraints with undeclared
  placeholders, and chains no constant grounds (50 s for 3k on main).

Usage: ``python benchmarks/bench_linear.py [scale]`` (default 1.0: the sizes above;
``0.25`` for a quick run).
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from typing import Any

from bench_llm_parsing import best  # least CPU time of a few runs, collector off

from kgpath.ingest import graph_from_documents
from kgpath.ingest.extraction import short_form_map
from kgpath.llm import MAX_REPLY_CHARS, ScriptedLLM
from kgpath.methods.c2rag.plan import parse_plan
from kgpath.methods.pathrag.keywords import parse_keywords

LIMIT = 12.0


def names(n: int) -> list[str]:
    """``n`` entity keys of one document: full names, lone last names, lone first names."""
    full = [f"first{i} last{i % (n // 3 + 1)}" for i in range(n)]
    return full + [f"last{i}" for i in range(n // 3)] + [f"first{i}" for i in range(0, n, 2)]


def reply(n: int) -> str:
    """One LLM reply of ``n`` triples between two-word names and their last words."""
    triples = [[f"A {i:x}", "r", f"{(i * 7919) % n:x}"] for i in range(n)]
    text = json.dumps({"triples": triples}, separators=(",", ":"))
    assert len(text) <= MAX_REPLY_CHARS, len(text)
    return text


def plan(n: int, shape: str) -> dict[str, Any]:
    """A plan of about ``n`` constraints in one of four shapes (see the module docstring)."""
    def c(h: str, t: str, r: str = "r") -> dict[str, Any]:
        return {"head": h, "relation": r, "tail": t, "variants": ["v"]}

    if shape == "chain, back to front":
        cs = [c(f"?v{i}", f"?v{i + 1}") for i in reversed(range(n))] + [c("X", "?v0")]
    elif shape == "shuffled chain":
        cs = [c(f"?v{i}", f"?v{i + 1}") for i in range(n)]
        random.Random(0).shuffle(cs)
        cs.append(c("X", "?v0"))
    elif shape == "shuffled chain + cycles":
        cs = [c(f"?v{i}", f"?v{i + 1}") for i in range(n)]
        random.Random(0).shuffle(cs)
        cs += [c(f"?v{i + 5}", f"?v{i}", "back") for i in range(0, n, 3)] + [c("X", "?v0")]
    elif shape == "undeclared placeholders":
        decl = {f"?v{i}": "thing" for i in range(n)}
        return {"placeholders": decl,
                "constraints": [c("X", f"?u{i}", f"r{i}") for i in range(n)] + [c("X", "?v0")]}
    else:  # ungroundable chains
        cs = [c(f"?v{i}", f"?v{i + 1}") for i in reversed(range(n))] + [c("X", f"?w{n}")]
    return {"constraints": cs}


def cases(scale: float) -> list[tuple[str, int, Callable[[int], Callable[[], object]]]]:
    def sfm(m: int) -> Callable[[], object]:
        keys = names(m)
        return lambda: short_form_map(keys)

    def extraction(m: int) -> Callable[[], object]:
        r = reply(m)
        return lambda: graph_from_documents([("d", "text")], llm=ScriptedLLM(lambda p: r))

    def keywords(m: int) -> Callable[[], object]:
        r = json.dumps({"keywords": [f"kw {i:x}" for i in range(m)]}, separators=(",", ":"))
        return lambda: parse_keywords(r)

    def plans(shape: str) -> Callable[[int], Callable[[], object]]:
        def make(m: int) -> Callable[[], object]:
            data = plan(m, shape)
            return lambda: parse_plan(data)
        return make

    out = [("short_form_map (names)", int(8000 * scale), sfm),
           ("LLM extraction path (triples)", int(4000 * scale), extraction),
           ("parse_keywords (keywords)", int(4000 * scale), keywords)]
    out += [(f"parse_plan: {s}", int(3000 * scale), plans(s))
            for s in ("chain, back to front", "shuffled chain", "shuffled chain + cycles",
                      "undeclared placeholders", "ungroundable chains")]
    return out


def main(argv: list[str] | None = None) -> None:
    argv = argv or []
    scale = float(argv[0]) if argv else 1.0
    print(f"PASS when time(10n) / time(n) <= {LIMIT}; CPU seconds, best of 3 (10n: of 2)")
    small, large = names(8000), names(80000)
    ref = best(lambda: {k: k.split() for k in large}, 3) / best(
        lambda: {k: k.split() for k in small}, 3)
    print(f"linear reference (dict of split names, 8k vs 80k): {ref:.1f}x on this machine; "
          f"'vs ref' = ratio / that")
    print(f"{'case':<42} {'n':>6} {'t(n) s':>9} {'t(10n) s':>9} {'ratio':>6} {'vs ref':>7}  "
          "verdict")
    for label, n, make in cases(scale):
        t1 = best(make(n), 3)
        t10 = best(make(10 * n), 2)
        ratio = t10 / t1
        print(f"{label:<42} {n:>6} {t1:9.3f} {t10:9.3f} {ratio:6.1f} {ratio / ref:7.2f}  "
              f"{'PASS' if ratio <= LIMIT else 'FAIL'}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
