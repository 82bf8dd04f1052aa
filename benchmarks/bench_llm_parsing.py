"""LLM reply parsing is linear: 10x the input costs at most 12x the time (issue 23).

For each parser, one reply of ``n`` items and one of ``10 n`` are parsed (least CPU time of 5
runs each, measured in the same process) and the ratio printed; ``PASS`` when it is <= 12:

- ``LLMExtractor`` on one passage (JSON repair + :func:`~kgpath.ingest.extract.parse.read_reply`
  + records), a reply of ``n`` entities and ``n`` 3-item-list triples;
- :func:`~kgpath.ingest.extract.parse_extraction` (the schema family) on the same reply;
- :func:`~kgpath.llm.parse_json_response` on the reply in a code fence with prose and a
  trailing comma (the repairs);
- :func:`~kgpath.methods.pathrag.keywords.parse_keywords` on ``2 n`` keywords (8k: 13-21 s
  on main, a set rebuilt per keyword).

Informational (not an LLM parser, not owned by this benchmark's change): the name merge of
``graph_from_documents`` on the same reply, printed with the same ratio.

Usage: ``python benchmarks/bench_llm_parsing.py [n]`` (default 1500; the issue's sizes are
4k triples and 8k keywords).
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable

from kgpath.ingest import LLMExtractor, graph_from_documents
from kgpath.ingest.extract import parse_extraction
from kgpath.llm import ScriptedLLM, parse_json_response
from kgpath.methods.pathrag.keywords import parse_keywords

LIMIT = 12.0


def reply(n: int) -> str:
    """``n`` typed entities and ``n`` 3-list triples, as Qwen2.5 answers."""
    return json.dumps({
        "entities": [{"name": f"E{i}", "type": "T"} for i in range(n)],
        "triples": [[f"E{i}", f"r{i % 7}", f"E{i + 1}"] for i in range(n)],
    })  # 10 n = 15k items stays under MAX_REPLY_CHARS (1 MB), as in the issue


def best(fn: Callable[[], object], runs: int = 5) -> float:
    """Least CPU time of ``runs`` calls (CPU, not wall: the machine's CPU quota throttles
    long runs, which would read as super-linear work). As ``timeit`` does, the garbage
    collector is off while a run is timed (and collected before it)."""
    out = []
    for _ in range(runs):
        gc.collect()
        gc.disable()
        try:
            t = time.process_time()
            fn()
            out.append(time.process_time() - t)
        finally:
            gc.enable()
    return min(out)


def cases(n: int) -> dict[str, Callable[[int], Callable[[], object]]]:
    def extractor(m: int) -> Callable[[], object]:
        r = reply(m)

        def run() -> None:
            ex = LLMExtractor(ScriptedLLM(lambda p: r)).extract_passage("p", "text")
            assert len(ex.relations) == m, ex.notes[-1:]  # parsed, not skipped

        return run

    def schema(m: int) -> Callable[[], object]:
        r = reply(m)
        return lambda: parse_extraction(r, "p")

    def repair(m: int) -> Callable[[], object]:
        r = "Here is the JSON:\n```json\n" + reply(m)[:-1] + ",}\n```\nDone."
        return lambda: parse_json_response(r)

    def keywords(m: int) -> Callable[[], object]:
        r = json.dumps({"entities": [f"keyword {i}" for i in range(2 * m)]})
        return lambda: parse_keywords(r)

    return {"LLMExtractor (one passage)": extractor, "parse_extraction": schema,
            "parse_json_response (repairs)": repair, "parse_keywords (2n keywords)": keywords}


def main(argv: list[str] | None = None) -> None:
    argv = argv or []
    n = int(argv[0]) if argv else 1500
    print(f"n = {n} items vs {10 * n}; PASS when time(10n) / time(n) <= {LIMIT}")
    a, b = reply(n), reply(10 * n)
    ref = best(lambda: json.loads(b)) / best(lambda: json.loads(a))
    print(f"reference: json.loads alone (C, linear) scales {ref:.1f}x on this machine "
          f"(memory effects); 'vs ref' = ratio / that")
    print(f"{'parser':<34} {'t(n) s':>9} {'t(10n) s':>9} {'ratio':>7} {'vs ref':>7}  verdict")
    for name, make in cases(n).items():
        small, large = best(make(n)), best(make(10 * n))
        ratio = large / small
        print(f"{name:<34} {small:9.4f} {large:9.4f} {ratio:7.1f} {ratio / ref:7.2f}  "
              f"{'PASS' if ratio <= LIMIT else 'FAIL'}")
    r1, r10 = reply(n // 3), reply(10 * (n // 3))
    small = best(lambda: graph_from_documents([("d", "x")], llm=ScriptedLLM(lambda p: r1)), 1)
    large = best(lambda: graph_from_documents([("d", "x")], llm=ScriptedLLM(lambda p: r10)), 1)
    print(f"{'(info) graph_from_documents merge':<34} {small:9.4f} {large:9.4f} "
          f"{large / small:7.1f}  (n/3 items; the merge is not an LLM parser)")


if __name__ == "__main__":
    main(sys.argv[1:])
