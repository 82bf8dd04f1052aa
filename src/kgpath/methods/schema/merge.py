"""Pattern step 6, *merge(evidence)*: one de-duplicated evidence list for the reasoner.

:func:`merge_evidence` de-duplicates items by kind and key (node id, ``(source, relation,
target)``, passage id); a merged item keeps its best score and the indices of every
sub-question that retrieved it. :func:`format_evidence` renders the merged evidence as text
lines tagged with their sub-questions (*reason_over(merge(evidence))*).
:func:`merge_sub_question_runs` is the same merge over any items (the adapters' documents
and nodes, one list per sub-question).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from kgpath.methods.schema.result import EvidenceItem, SchemaResult, SubQuestionResult

__all__ = ["format_evidence", "merge_evidence", "merge_sub_question_runs"]

T = TypeVar("T")


def merge_evidence(
    results: Sequence[SubQuestionResult],
) -> tuple[tuple[EvidenceItem, ...], tuple[EvidenceItem, ...], tuple[EvidenceItem, ...]]:
    """De-duplicate evidence across sub-questions (pattern: *merge(evidence)*).

    Items with the same kind and key merge into one that keeps the record with the highest
    score and the sorted union of sub-question indices. Output: per kind, score descending,
    ties by first appearance (sub-question order, then rank).
    """
    out = []
    for kind in ("nodes", "triples", "passages"):
        best: dict[str, EvidenceItem] = {}
        tags: dict[str, set[int]] = {}
        order: dict[str, int] = {}
        for r in results:
            for it in getattr(r, kind):
                tags.setdefault(it.key, set()).update(it.sub_questions)
                order.setdefault(it.key, len(order))
                if it.key not in best or it.score > best[it.key].score:
                    best[it.key] = it
        merged = [dataclasses.replace(best[k], sub_questions=tuple(sorted(tags[k]))) for k in best]
        merged.sort(key=lambda it: (-it.score, order[it.key]))
        out.append(tuple(merged))
    return out[0], out[1], out[2]


def format_evidence(result: SchemaResult, *, max_chars: int | None = None) -> str:
    """Evidence as text lines tagged with sub-question numbers (1-based), for an answer LLM."""
    lines = []
    for it in result.items:
        tag = ",".join(str(i + 1) for i in it.sub_questions)
        typ = f" ({it.schema_type})" if it.schema_type else ""
        label = "passage " + it.key if it.kind == "passage" else it.kind
        lines.append(f"[{label}{typ}] {it.text} {{sub-question {tag}}}")
    text = "\n".join(lines)
    return text[:max_chars] if max_chars is not None else text


def merge_sub_question_runs(runs: Iterable[Iterable[T]], key: Callable[[T], str],
                            score: Callable[[T], float]) -> list[tuple[T, list[int]]]:
    """Merge per-sub-question results: one item per key, its best score, its sub-questions.

    Returns ``(item, indices)`` pairs: the best-scored item of each key (the first on a
    tie) with the 0-based indices of the runs that returned it, ordered by score, then
    first appearance.

    >>> merge_sub_question_runs([["a", "b"], ["b"]], key=str, score=lambda x: 0.0)
    [('a', [0]), ('b', [0, 1])]
    """
    best: dict[str, T] = {}
    tags: dict[str, list[int]] = {}
    for i, items in enumerate(runs):
        for item in items:
            k = key(item)
            if i not in tags.setdefault(k, []):
                tags[k].append(i)
            if k not in best or score(item) > score(best[k]):
                best[k] = item
    order = {k: n for n, k in enumerate(tags)}
    ranked = sorted(best.items(), key=lambda kv: (-score(kv[1]), order[kv[0]]))
    return [(item, tags[k]) for k, item in ranked]
