"""Relation-chain matching that follows the question (``template_scorer="aligned"``).

**Not in the PCR paper** (a kgpath extension of :mod:`kgpath.methods.pcr.templates`). A
question names its relation chain in paraphrase and in an order of its own: in "who
directed the films written by X" the step next to the anchor ("written by X") comes last in
the text and the answer's step ("who directed") first. Embedding the whole chain as one
text ("something written by something, something directed by something") loses that
order: chains with the same relations in another order (or another relation at the
answer's end) read alike, and MetaQA dev's 3-hop Hits@1 stays at 66. Here each end of the
chain is matched to its own part of the question:

* the **focus** (:func:`question_parts`): the wh-word (what, which, who, whom, whose,
  when, where, how: the answer-type cue) and up to three words after it (or two before it
  when it ends the question: "... were released in which years"), never crossing the
  anchor's name; matched to the chain's *last* step;
* the **anchor context**: up to four words right before the anchor's name (after the
  focus), or after it when fewer than two precede ("who was X written by"); matched to the
  chain's *first* step;
* the whole question, matched to every step (their mean), and the relation words the
  question uses (:func:`~kgpath.methods.pcr.templates.lexical_matches`);
* a prior per step (``chain_length``), so a chain that explains more of the question wins
  ties with its own prefix.

A step is written as its relation label and the relation's most frequent objects
(:func:`relation_texts`: "has tags: bd-r, nudity, ..."; a label alone does not say that
"what words describe X" asks for tags), embedded once per graph and embedder
(:func:`relation_vectors`: the set-up is one embedding pass over the graph's relation
labels); the focus and anchor context cost one query-embedding call per question.
For the focus, a step walked backwards is written with the relation's most frequent
*subjects* instead (its answer end is the subject): "who directed" then prefers
``directed_by`` walked forwards (to directors) over walked backwards (to films). Elsewhere
direction follows from the node types (a film has no ``directed_by`` edge into it).

A chain's score (:func:`chain_scores`), with ``f``/``a``/``q`` the focus, anchor-context and
question vectors and ``r_i`` the step vectors::

    chain_focus·cos(f, r_last) + chain_anchor·cos(a, r_first)
      + chain_relations·mean_i cos(q, r_i) + chain_lexical·lexical + chain_length·len

Where the failures were (MetaQA dev, the whole-chain text scorer, 189 of 785 questions
missed at Hits@1): for 145 the best chain had another relation than the answer's (mostly
at the answer's end: "which person wrote the films directed by ..." ranked the chain ending
in ``starred_actors`` first, its text being as close), 25 a chain of another length, 10 the
same relations in another order, 0 another direction only; in the other 9 the answer's
chain was first but reached more than the answers (two films of one name). With the
answer's chain ranked first, Hits@1 would be 97.5-98.5.

Constants chosen on the first half of MetaQA dev (each hop's reachable questions, file
order), anchor given, ``max_depth`` = the hop count
(:class:`~kgpath.methods.pcr.config.PCRConfig`). Hits@1 1/2/3-hop, first / second half:
whole-chain text (``template_scorer="text"``) 87.9 / 70.1 / 65.4 and 82.7 / 80.2 / 67.5;
this 90.7 / 92.9 / 91.3 and 92.1 / 92.9 / 90.5. The hop count unknown (``max_depth=None``,
chains up to 3 steps for all questions; ``chain_length_open``): text 26.2 / 51.4 / 66.4,
this 76.7 / 64.8 / 83.8 (all dev). No word list of MetaQA's relations and
nothing learnt from answers: only the wh-words (an English closed class), the graph's
relation labels and objects, and five weights.
"""

from __future__ import annotations

import re
import weakref
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kgpath.graph import KnowledgeGraph
from kgpath.methods.pcr.pathscore import humanize_relation

__all__ = ["QuestionParts", "chain_scores", "question_parts", "relation_vectors"]

WH_WORDS = frozenset({"what", "which", "who", "whom", "whose", "when", "where", "how"})
"""Question words that start the answer-type phrase (the focus)."""

FOCUS_AFTER = 3
"""Words kept after the wh-word in the focus."""
CONTEXT_BEFORE = 4
"""Words kept before (or after) the anchor's name in the anchor context."""

_STRIP = "?,.!;:'\"()"


@dataclass(frozen=True)
class QuestionParts:
    """The focus and the anchor context of a question (empty when not found)."""

    focus: str
    anchor_context: str


def _anchor_span(text: str, anchor: str) -> tuple[int, int] | None:
    """Word positions ``[start, end)`` of the anchor's name in the question, if named.

    The name must stand as whole words (case ignored): "Art" is not found in "starred".
    """
    m = re.search(rf"(?<!\w){re.escape(anchor.strip())}(?!\w)", text, re.IGNORECASE) \
        if anchor.strip() else None
    if m is None:
        return None
    at = m.start()
    start = len(text[:at].split())
    return start, start + len(anchor.split())


def question_parts(text: str, anchor: str) -> QuestionParts:
    """The question's focus and anchor context (module docstring).

    Examples
    --------
    >>> question_parts("who directed the films written by Ann Lee", "Ann Lee")
    QuestionParts(focus='who directed the films', anchor_context='written by')
    >>> question_parts("the films written by Ann were released in which years", "Ann")
    QuestionParts(focus='in which years', anchor_context='the films written by')
    >>> question_parts("who was Ann written by", "Ann")
    QuestionParts(focus='who was', anchor_context='was written by')
    """
    toks = text.split()
    n = len(toks)
    low = [t.lower().strip(_STRIP) for t in toks]
    span = _anchor_span(text, anchor)
    a0, a1 = span if span else (n, n)
    wi = next((i for i, w in enumerate(low) if w in WH_WORDS and not a0 <= i < a1), None)
    focus = ""
    if wi is not None:
        hi = min(n, wi + 1 + FOCUS_AFTER)
        if wi < a0:
            hi = min(hi, a0)
        lo = wi
        if hi - wi - 1 < 2:  # the wh-word ends its phrase: take words before it
            lo = max(0, wi - (2 - (hi - wi - 1)))
            if span and a1 <= wi:
                lo = max(lo, a1)
        focus = " ".join(toks[lo:hi])
    context = ""
    if span:
        lo = max(0, a0 - CONTEXT_BEFORE)
        if wi is not None and wi < a0:
            lo = max(lo, wi + 1 + (FOCUS_AFTER if a0 - wi - 1 > FOCUS_AFTER + 1 else 0))
        before = toks[lo:a0]
        after: list[str] = []
        if len(before) < 2:
            hi = min(n, a1 + CONTEXT_BEFORE)
            if wi is not None and wi >= a1:
                hi = min(hi, wi)
            after = toks[a1:hi]
        context = " ".join(before + after)
    return QuestionParts(focus, context)


_RELVECS: dict[int, tuple[int, weakref.ref[KnowledgeGraph], dict[Any, Any]]] = {}


def relation_texts(graph: KnowledgeGraph, examples: int, *, side: str = "out") -> list[str]:
    """Each relation code's text: its label, then its ``examples`` most frequent objects.

    ``side="in"``: its most frequent subjects instead (the text of a step walked backwards,
    whose new node is the relation's subject).

    ``"has tags: bd-r, nudity, ..."``: the targets that most edges of the relation point
    to (ties by node order), by name, from the graph alone. A label says little of what a
    relation holds ("has tags" for "what words describe X"); its common objects say it.
    """
    from kgpath.methods.pcr.templates import relation_codes

    codes, labels = relation_codes(graph)
    texts = [humanize_relation(x) for x in labels]
    if examples <= 0 or not len(codes):
        return texts
    csr = graph.csr()
    n = max(1, graph.num_nodes)
    key = (codes[csr[f"{side}_edges"]].astype(np.int64) * n
           + csr[f"{side}_indices"].astype(np.int64))
    uniq, count = np.unique(key, return_counts=True)
    code, target = uniq // n, uniq % n
    order = np.lexsort((target, -count, code))
    first = np.searchsorted(code[order], np.arange(len(labels)))
    for c in range(len(labels)):
        top = order[first[c]:first[c] + examples]
        top = top[code[top] == c]
        if len(top):
            names = ", ".join(graph.node_at(int(t)).name for t in target[top])
            texts[c] = f"{texts[c]}: {names}"
    return texts


def relation_vectors(graph: KnowledgeGraph, embedder: Any, examples: int) -> np.ndarray:
    """Passage vectors of :func:`relation_texts`: ``R`` rows by code, then ``R`` backwards.

    Row ``code`` is the relation with its objects, row ``R + code`` with its subjects
    (``side="in"``), memoized.

    The memo holds the graph weakly (dropped with it), per graph version, embedder
    fingerprint (:func:`~kgpath.embed_cache.embedder_fingerprint`) and ``examples``: a
    graph's relations are embedded once (one pass over ``R`` short texts), not per question.
    """
    from kgpath.embed_cache import embedder_fingerprint

    hit = _RELVECS.get(id(graph))
    if hit is None or hit[1]() is not graph or hit[0] != graph.version:
        if hit is None or hit[1]() is not graph:
            weakref.finalize(graph, _RELVECS.pop, id(graph), None)
        hit = _RELVECS[id(graph)] = (graph.version, weakref.ref(graph), {})
    if embedder is None:  # the memo entry only (see _label_stems)
        return np.zeros((0, 1), np.float32)
    key = (embedder_fingerprint(embedder), examples)
    if key not in hit[2]:
        texts = relation_texts(graph, examples)
        texts += relation_texts(graph, examples, side="in") if examples > 0 else texts
        hit[2][key] = (np.asarray(embedder.embed_passages(texts), np.float32) if texts
                       else np.zeros((0, 1), np.float32))
    return hit[2][key]


@dataclass(frozen=True)
class StepTable:
    """Per-relation-code step scores of one question (from :func:`step_table`)."""

    focus: np.ndarray
    """Per step id ``2·code + backwards``: the focus against the step's answer end."""
    anchor: np.ndarray
    question: np.ndarray
    query_stems: Counter[str]
    label_stems: Sequence[tuple[str, ...]]
    usable: np.ndarray
    """Per code: does the relation share a stem with the question (lexical candidates)."""


def _label_stems(graph: KnowledgeGraph, labels: Sequence[str]) -> list[tuple[str, ...]]:
    """:func:`~kgpath.methods.pcr.templates.relation_stems` per code, memoized per graph."""
    from kgpath.methods.pcr.templates import relation_stems

    relation_vectors(graph, None, -1)  # the graph's memo entry (nothing embedded)
    memo = _RELVECS[id(graph)][2]
    if "stems" not in memo:
        memo["stems"] = [relation_stems(x) for x in labels]
    return memo["stems"]  # type: ignore[no-any-return]


def step_table(graph: KnowledgeGraph, embedder: Any, labels: Sequence[str], query: str,
               qv: np.ndarray, anchor_name: str, *, examples: int = 5) -> StepTable:
    """Cosines of every relation label to the focus, anchor context and question."""
    from kgpath.methods.pcr.templates import query_stems

    rv = relation_vectors(graph, embedder, examples)
    q = np.asarray(qv, np.float32).reshape(-1)
    parts = question_parts(query, anchor_name)
    texts = [t for t in (parts.focus, parts.anchor_context) if t]
    vecs = list(np.asarray(embedder.embed_queries(texts), np.float32)) if texts else []
    fv = vecs.pop(0) if parts.focus else q
    av = vecs.pop(0) if parts.anchor_context else q
    stems = _label_stems(graph, labels)
    qs = query_stems(query)
    words = set(qs)
    usable = np.fromiter((not words.isdisjoint(ws) for ws in stems), bool, len(stems))
    r = len(labels)
    # the focus meets the answer: a step walked backwards reaches the relation's subjects
    focus = np.stack([rv[:r] @ fv, rv[r:2 * r] @ fv], axis=1).reshape(-1)
    return StepTable(focus, rv[:r] @ av, rv[:r] @ q, qs, stems, usable)


def chain_scores(table: StepTable, chains: Sequence[Sequence[int]], cfg: Any, *,
                 prefix: bool = False) -> np.ndarray:
    """The module docstring's score of each chain (step ids, first step first).

    A step id is ``2·relation code + 1`` for a step walked backwards, ``2·code`` forwards.
    The per-step prior is ``cfg.chain_length`` when ``cfg.max_depth`` is set (the caller
    knows how far the answer is), ``cfg.chain_length_open`` when it is ``None``.

    ``prefix=True`` scores a chain that may still grow (the beam of
    :func:`~kgpath.methods.pcr.templates.beam_templates`): its best focus cosine over all
    its steps stands for the last step's, which is not known yet.
    """
    out = np.zeros(len(chains), np.float32)
    length = cfg.chain_length if cfg.max_depth is not None else cfg.chain_length_open
    lengths = np.fromiter((len(c) for c in chains), np.int64, len(chains))
    for n in np.unique(lengths).tolist():
        rows = np.flatnonzero(lengths == n)
        if n == 0:
            continue
        ids = np.asarray([chains[i] for i in rows.tolist()], np.int64).reshape(len(rows), n)
        c = ids // 2
        focus = table.focus[ids].max(axis=1) if prefix else table.focus[ids[:, -1]]
        s = (cfg.chain_focus * focus + cfg.chain_anchor * table.anchor[c[:, 0]]
             + cfg.chain_relations * table.question[c].mean(axis=1) + length * n)
        if cfg.chain_lexical:
            s = s + cfg.chain_lexical * _lexical(table, c)
        out[rows] = s
    return out


def _lexical(table: StepTable, chains: np.ndarray) -> np.ndarray:
    """:func:`~kgpath.methods.pcr.templates.count_matches` per chain (rows of codes).

    Only chains with a step whose relation shares a stem with the question are counted
    one by one; the others match nothing.
    """
    from kgpath.methods.pcr.templates import count_matches

    out = np.zeros(len(chains), np.float32)
    for i in np.flatnonzero(table.usable[chains].any(axis=1)).tolist():
        out[i] = count_matches(table.query_stems,
                               [table.label_stems[r] for r in chains[i].tolist()])
    return out
