"""Loader for HotpotQA-format data (``questions.json`` + ``corpus.json``).

Format (see ``shared/datasets/README.md``): ``corpus.json`` maps a title to its list of
sentences (a passage is the title plus its joined sentences); ``questions.json`` is a list
of ``{"_id"?, "question", "answer", "supporting_facts": [[title, sent_idx], ...], "type",
"level", ...}``. The gold passages of a question are the distinct titles of its supporting
facts, in first-mention order.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kgpath.errors import ConfigError, GraphError

__all__ = ["HotpotQuestion", "HotpotQADataset", "load_hotpotqa", "passage_recall"]


@dataclass(frozen=True)
class HotpotQuestion:
    """One multi-hop question with its supporting facts."""

    id: str
    question: str
    answer: str
    supporting_facts: tuple[tuple[str, int], ...]
    type: str = ""
    level: str = ""

    @property
    def gold_titles(self) -> tuple[str, ...]:
        """Distinct supporting-fact titles (the gold passages), in first-mention order."""
        return tuple(dict.fromkeys(t for t, _ in self.supporting_facts))


@dataclass(frozen=True)
class HotpotQADataset:
    """The shared corpus (title -> stripped sentences) and the questions."""

    corpus: Mapping[str, tuple[str, ...]]
    questions: tuple[HotpotQuestion, ...]

    def passage_text(self, title: str) -> str:
        """A passage as retrieval baselines see it: ``"<title>. <sentences joined>"``."""
        return f"{title}. {' '.join(self.corpus[title])}"

    def __len__(self) -> int:
        return len(self.questions)


def load_hotpotqa(
    data_dir: str | os.PathLike[str], *, limit: int | None = None
) -> HotpotQADataset:
    """Read a HotpotQA-format folder; ``limit`` keeps the first ``limit`` questions.

    Raises :class:`GraphError` when a file is missing or malformed or a supporting fact
    names a title absent from the corpus (recall would silently be wrong otherwise).
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"limit must be None or a positive int, got {limit!r}")
    d = Path(data_dir)
    try:
        raw_q = json.loads((d / "questions.json").read_text(encoding="utf-8"))
        raw_c = json.loads((d / "corpus.json").read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise GraphError(
            f"{d} is not a HotpotQA-format folder: {Path(exc.filename).name} missing"
        ) from exc
    except json.JSONDecodeError as exc:
        raise GraphError(f"{d}: invalid JSON ({exc})") from exc
    if not isinstance(raw_c, Mapping) or not isinstance(raw_q, Sequence):
        raise GraphError(f"{d}: corpus.json must map titles to sentences, questions.json a list")
    corpus: dict[str, tuple[str, ...]] = {}
    for title, sents in raw_c.items():
        if not isinstance(sents, list) or not all(isinstance(s, str) for s in sents):
            raise GraphError(f"{d}: corpus entry {title!r} is not a list of sentences")
        corpus[str(title)] = tuple(s.strip() for s in sents)
    questions = []
    for i, q in enumerate(raw_q[:limit] if limit else raw_q):
        try:
            facts = tuple((str(t), int(k)) for t, k in q["supporting_facts"])
            item = HotpotQuestion(
                id=str(q.get("_id", q.get("id", i))),
                question=str(q["question"]),
                answer=str(q.get("answer", "")),
                supporting_facts=facts,
                type=str(q.get("type", "")),
                level=str(q.get("level", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise GraphError(f"{d}: question #{i} is malformed ({exc!r})") from exc
        missing = [t for t in item.gold_titles if t not in corpus]
        if missing:
            raise GraphError(f"{d}: question {item.id!r} cites titles not in corpus: {missing}")
        questions.append(item)
    return HotpotQADataset(corpus, tuple(questions))


def passage_recall(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    """``|ranked[:k] ∩ gold| / |gold|`` over distinct passage ids (0 when gold is empty).

    ``ranked`` may repeat ids (e.g. one per retrieved sentence); repeats are dropped
    before cutting at ``k``, so ``k`` counts distinct passages.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"k must be a positive int, got {k!r}")
    g = set(gold)
    if not g:
        return 0.0
    top = list(dict.fromkeys(ranked))[:k]
    return sum(1 for t in top if t in g) / len(g)
