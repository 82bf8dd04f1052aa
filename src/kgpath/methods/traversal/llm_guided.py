"""Alg. 7 of the article (``llm_guided_traversal``): an LLM chooses the next chunk.

Article section "Knowledge Graph Traversal Algorithms", algorithm 7: the top 5 candidates
by ``cos(q, c)`` (step 1) are shown to the LLM with the extracted sentences (step 2); it
picks one or stops (step 3); an unusable reply falls back to the most similar candidate
(step 4).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from kgpath.errors import BackendError, ParseError
from kgpath.llm import LLM, acall_llm, call_llm, parse_json_response
from kgpath.methods.traversal.config import TraversalConfig
from kgpath.methods.traversal.policy import Choice, TraversalPolicy, Walk, argmax
from kgpath.prompts.traversal import LLM_TRAVERSAL_PROMPT

__all__ = ["LLMGuidedPolicy", "parse_llm_choice"]


class LLMGuidedPolicy(TraversalPolicy):
    """Alg. 7 (``llm_guided_traversal``): an LLM picks among the top-5 query-similar neighbours.

    The prompt (:data:`~kgpath.prompts.traversal.LLM_TRAVERSAL_PROMPT`) shows the query,
    the extracted sentences, and the candidates' previews with their ``cos(q, c)``. The
    reply ``{"choice": N}`` visits candidate N, ``{"choice": "stop"}`` ends the walk; an
    unusable reply falls back to the most similar candidate (step 4) and is recorded.

    Without an LLM (``llm=None``) every step takes that fallback and the relevance stop
    of Alg. 2 applies: the walk equals ``query_traversal`` restricted to the top 5. This is
    the documented LLM-free path; it adds no judgement of its own.
    """

    name = "llm_guided_traversal"

    def __init__(self, llm: LLM | None = None, *, prompt: str = LLM_TRAVERSAL_PROMPT) -> None:
        self.llm = llm
        self.template = prompt

    def limit(self, walk: Walk, cands: np.ndarray, config: TraversalConfig) -> np.ndarray:
        """Keep the ``llm_candidates`` most query-similar candidates (step 1), best first."""
        order = np.lexsort((cands, -walk.q_chunk[cands]))
        return order[: config.llm_candidates]

    def score(
        self, walk: Walk, cands: np.ndarray, origins: np.ndarray, config: TraversalConfig
    ) -> np.ndarray:
        """``cos(q, c)`` (what the LLM is shown, and the fallback order)."""
        return walk.q_chunk[cands]

    def stop_reason(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> str | None:
        """With an LLM the model decides when to stop; without one, Alg. 2's rule."""
        if self.llm is not None:
            return None
        return super().stop_reason(walk, cands, scores, config)

    def prompt(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> str:
        """Fill the prompt template (:data:`LLM_TRAVERSAL_PROMPT`) for this step (step 2)."""
        v = walk.view
        n = config.preview_chars
        extracted = "\n".join(f"- {_clip(v.sent_text[s], n)}" for s in walk.extracted)
        lines = []
        for i, (c, sc) in enumerate(zip(cands.tolist(), scores.tolist(), strict=True), 1):
            title = v.graph.node_at(int(v.chunk_nodes[c])).name
            body = _clip(v.graph.node_at(int(v.chunk_nodes[c])).text, n)
            lines.append(f"{i}. [{sc:.3f}] {title}: {body}" if title else f"{i}. [{sc:.3f}] {body}")
        return self.template.format(
            query=walk.query,
            num_sentences=len(walk.extracted),
            extracted=extracted or "(nothing yet)",
            candidates="\n".join(lines),
            num_candidates=len(lines),
        )

    def _decide(self, reply: str, cands: np.ndarray, scores: np.ndarray) -> Choice:
        parsed = parse_llm_choice(reply, len(cands))
        if parsed == "stop":
            return Choice(None, "llm: stop")
        if isinstance(parsed, int):
            return Choice(parsed, "llm")
        snippet = reply if len(reply) <= 60 else reply[:60] + "..."
        return Choice(argmax(cands, scores), f"llm_fallback: unusable reply {snippet!r}")

    def choose(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> Choice:
        """Ask the LLM (sync); fall back to the most similar candidate."""
        if self.llm is None:
            return Choice(argmax(cands, scores), "llm_fallback: no LLM configured")
        walk.llm_calls += 1
        try:  # the one call path: retried, bounded, then the most similar candidate
            reply = call_llm(self.llm, self.prompt(walk, cands, scores, config), step=_STEP)
        except BackendError as exc:
            return Choice(argmax(cands, scores), f"llm_fallback: {exc}")
        return self._decide(reply, cands, scores)

    async def achoose(
        self, walk: Walk, cands: np.ndarray, scores: np.ndarray, config: TraversalConfig
    ) -> Choice:
        """Ask the LLM (native async); fall back to the most similar candidate."""
        if self.llm is None:
            return Choice(argmax(cands, scores), "llm_fallback: no LLM configured")
        walk.llm_calls += 1
        try:
            reply = await acall_llm(self.llm, self.prompt(walk, cands, scores, config), step=_STEP)
        except BackendError as exc:
            return Choice(argmax(cands, scores), f"llm_fallback: {exc}")
        return self._decide(reply, cands, scores)


_STEP = "LLM-guided traversal"


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3].rstrip() + "..."


def parse_llm_choice(reply: str, num_candidates: int) -> int | Literal["stop"] | None:
    """Read an LLM reply to :data:`LLM_TRAVERSAL_PROMPT`.

    Returns a 0-based candidate position, ``"stop"``, or ``None`` when the reply is
    unusable (no JSON ``choice``, out-of-range number, anything else). A bare number or
    the bare word ``stop`` is accepted too.
    """
    value: Any
    try:
        obj = parse_json_response(reply, expect=dict)
        value = obj.get("choice", obj.get("next"))
    except ParseError:
        value = reply.strip().strip(".").strip()
    if isinstance(value, str):
        v = value.strip().lower()
        if v == "stop":
            return "stop"
        if v.isdigit():
            value = int(v)
        else:
            return None
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value - 1 if 1 <= value <= num_candidates else None

