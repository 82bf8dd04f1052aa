"""The sufficiency gate: C2RAG's N_eff check (Eq. 7-9) over any scored list, then a fallback.

One policy, written once; the LangChain retriever/compressor and the LlamaIndex
postprocessor only adapt it. Given a query and the texts (and scores, if any) another
retriever returned, :meth:`SufficiencyGate.decide` normalises the top ``K_s`` scores
(Eq. 7), computes ``N_eff = 1 / Σ p²`` (Eq. 8) and calls the list resolved when
``N_eff <= γ`` (Eq. 9). When the list is not resolved, the caller runs its fallback and
:meth:`SufficiencyGate.combine` merges the two lists (``append`` or ``replace``).

Missing scores
--------------
An ordinary vector-store retriever often returns documents without a score. With
``score_missing="embed"`` (the default) the gate then scores *every* item itself as the
cosine between the query and the item text under its embedder (the bundled offline
embedder when none is given) and records ``score_source="embedder"`` in each item's
marks, so the check is never silently "always fall back". ``score_missing="insufficient"``
keeps the paper's literal behaviour (no usable score: unresolved, fall back).

Adapters
--------
The adapters expose the :data:`GATE_FIELDS` of :class:`SufficiencyGateConfig` as their own
fields, build the gate with :func:`make_gate` and write an item's marks into its metadata
with :func:`gate_metadata`, so the gamma warning and the ``kgpath_*`` keys are written once.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import numpy as np

from kgpath.errors import ConfigError, short
from kgpath.evidence import METADATA_PREFIX, jsonable
from kgpath.methods.c2rag import SufficiencyCheck, check_sufficiency

__all__ = [
    "GATE_FIELDS",
    "GateDecision",
    "SufficiencyGate",
    "SufficiencyGateConfig",
    "gate_metadata",
    "make_gate",
]

T = TypeVar("T")
ScoreSource = Literal["given", "embedder", "none"]


@dataclass(frozen=True, kw_only=True)
class SufficiencyGateConfig:
    """Gate parameters; defaults are C2RAG's (γ = 1.5, ε = 0.01, K_s = 3).

    Attributes
    ----------
    gamma
        γ of Eq. 9: resolved iff ``N_eff <= gamma``. Below 1 nothing ever resolves.
    epsilon
        ε of Eq. 7, in the scores' units (0.01 for cosine similarities).
    top_k
        ``K_s``: how many best-scored items enter the distribution.
    mode
        ``"append"`` the fallback's items after the primary ones (duplicates dropped) or
        ``"replace"`` the primary list with them.
    fallback_k
        Cap on the fallback's items (``None``: all).
    score_missing
        ``"embed"`` (score unscored lists with the embedder) or ``"insufficient"``.
    """

    gamma: float = 1.5
    epsilon: float = 0.01
    top_k: int = 3
    mode: Literal["append", "replace"] = "append"
    fallback_k: int | None = None
    score_missing: Literal["embed", "insufficient"] = "embed"

    def __post_init__(self) -> None:
        for name in ("gamma", "epsilon"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                    or v <= 0:
                raise ConfigError(f"{name} must be a finite number > 0, got {short(v)}")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 1:
            raise ConfigError(f"top_k must be a positive int, got {short(self.top_k)}")
        fk = self.fallback_k
        if fk is not None and (isinstance(fk, bool) or not isinstance(fk, int) or fk < 1):
            raise ConfigError(f"fallback_k must be a positive int or None, got {short(fk)}")
        if self.mode not in ("append", "replace"):
            raise ConfigError(f"mode must be 'append' or 'replace', got {short(self.mode)}")
        if self.score_missing not in ("embed", "insufficient"):
            raise ConfigError(
                f"score_missing must be 'embed' or 'insufficient', got {short(self.score_missing)}"
            )


@dataclass(frozen=True)
class GateDecision:
    """The outcome of one check: Eq. 7-9 plus where the scores came from."""

    check: SufficiencyCheck
    score_source: ScoreSource
    scores: tuple[float | None, ...] = field(default=())
    """The score of every input item as used (given, or computed by the embedder)."""

    @property
    def state(self) -> str:
        """``"resolved"`` or ``"unresolved"`` (Eq. 9)."""
        return self.check.state

    @property
    def n_eff(self) -> float | None:
        """Eq. 8 (``None`` when no item had a usable score)."""
        return self.check.n_eff

    @property
    def use_fallback(self) -> bool:
        """True when the list is not resolved."""
        return self.check.state != "resolved"

    def action(self, has_fallback: bool, mode: str) -> str:
        """``kept``, ``no_fallback_configured``, ``fallback_appended`` or ``fallback_replaced``."""
        if not self.use_fallback:
            return "kept"
        if not has_fallback:
            return "no_fallback_configured"
        return "fallback_appended" if mode == "append" else "fallback_replaced"

    def marks(self, position: int | None, source: str, action: str) -> dict[str, Any]:
        """Trace keys for one item (``position`` in the primary list, ``None`` for fallback)."""
        p = self.check.probability_of(position) if position is not None else None
        return {
            "gate_state": self.state,
            "gate_n_eff": self.n_eff,
            "gate_gamma": self.check.gamma,
            "gate_p": p,
            "gate_action": action,
            "gate_source": source,
            "score_source": self.score_source,
        }


class SufficiencyGate:
    """C2RAG's sufficiency check as a reusable gate (see the module docstring).

    Parameters
    ----------
    config
        :class:`SufficiencyGateConfig`.
    embedder
        A kgpath :class:`~kgpath.embeddings.Embedder` used only to score unscored lists;
        ``None`` loads the bundled offline embedder on first need.

    Examples
    --------
    >>> gate = SufficiencyGate()
    >>> d = gate.decide("q", ["a", "b", "c"], [0.9, 0.1, 0.1])
    >>> d.state, round(d.n_eff, 2), d.score_source
    ('resolved', 1.05, 'given')
    """

    def __init__(self, config: SufficiencyGateConfig | None = None, *,
                 embedder: Any = None) -> None:
        if config is not None and not isinstance(config, SufficiencyGateConfig):
            raise ConfigError(
                f"config must be a SufficiencyGateConfig, got {type(config).__name__}"
            )
        self.config = config or SufficiencyGateConfig()
        self._embedder = embedder

    @property
    def embedder(self) -> Any:
        """The embedder that scores unscored lists (loaded lazily)."""
        if self._embedder is None:
            from kgpath.embeddings import default_embedder

            self._embedder = default_embedder()
        return self._embedder

    def _needs_scores(self, texts: Sequence[str], scores: Sequence[float | None] | None) -> bool:
        if self.config.score_missing != "embed" or not texts:
            return False
        return scores is None or all(_usable(s) is None for s in scores)

    def _finish(self, scores: Sequence[float | None], source: ScoreSource) -> GateDecision:
        cfg = self.config
        res = check_sufficiency(scores, gamma=cfg.gamma, epsilon=cfg.epsilon, k_s=cfg.top_k)
        if res.n_eff is None:
            source = "none"
        return GateDecision(res, source, tuple(scores))

    def decide(self, query: str, texts: Sequence[str],
               scores: Sequence[float | None] | None = None) -> GateDecision:
        """Check one list; scores it with the embedder first when it carries none.

        Raises
        ------
        ConfigError
            If ``scores`` and ``texts`` differ in length.
        """
        given = _given(texts, scores)
        if not self._needs_scores(texts, scores):
            return self._finish(given, "given")
        q = self.embedder.embed_queries([query])
        m = self.embedder.embed_passages(list(texts))
        return self._finish(_cosines(q, m), "embedder")

    async def adecide(self, query: str, texts: Sequence[str],
                      scores: Sequence[float | None] | None = None) -> GateDecision:
        """Async :meth:`decide` (the embedder's native async calls)."""
        given = _given(texts, scores)
        if not self._needs_scores(texts, scores):
            return self._finish(given, "given")
        q = await self.embedder.aembed_queries([query])
        m = await self.embedder.aembed_passages(list(texts))
        return self._finish(_cosines(q, m), "embedder")

    def combine(
        self,
        primary: Sequence[T],
        fallback: Sequence[T] | None,
        decision: GateDecision,
        *,
        key: Callable[[T], str],
    ) -> list[tuple[T, dict[str, Any]]]:
        """Merge the primary and fallback lists; each item with its trace marks.

        ``fallback`` is ``None`` when the fallback did not run (or none is configured).
        """
        mode = self.config.mode
        action = decision.action(fallback is not None, mode)
        out = [(item, decision.marks(i, "primary", action)) for i, item in enumerate(primary)]
        if fallback is None:
            return out
        fb = list(fallback)[: self.config.fallback_k] if self.config.fallback_k else list(fallback)
        fb_marked = [(item, decision.marks(None, "fallback", action)) for item in fb]
        if mode == "replace":
            return fb_marked
        seen = {key(item) for item, _ in out}
        return out + [(item, m) for item, m in fb_marked if key(item) not in seen]


#: :class:`SufficiencyGateConfig` fields an adapter exposes.
GATE_FIELDS = ("gamma", "epsilon", "top_k", "mode", "fallback_k", "score_missing")


def make_gate(values: Mapping[str, Any], embedder: Any = None, *,
              stacklevel: int = 3) -> SufficiencyGate:
    """The gate from the :data:`GATE_FIELDS` among ``values`` (others use defaults).

    Warns when ``gamma < 1``: ``N_eff >= 1`` always (Lemma A.1), so every list is
    insufficient and the fallback always runs.
    """
    cfg = SufficiencyGateConfig(**{n: values[n] for n in GATE_FIELDS if n in values})
    if cfg.gamma < 1:
        warnings.warn(f"gamma={cfg.gamma} < 1: N_eff >= 1 always, so every list is "
                      "insufficient and the fallback always runs", UserWarning,
                      stacklevel=stacklevel)
    return SufficiencyGate(cfg, embedder=embedder)


def gate_metadata(marks: Mapping[str, Any]) -> dict[str, Any]:
    """The gate's marks of one item as ``kgpath_*`` metadata (JSON-safe values)."""
    return {METADATA_PREFIX + k: jsonable(v) for k, v in marks.items()}


def _usable(s: Any) -> float | None:
    if s is None or isinstance(s, bool) or not isinstance(s, (int, float, np.number)):
        return None
    f = float(s)
    return f if math.isfinite(f) else None


def _given(texts: Sequence[str], scores: Sequence[float | None] | None) -> list[float | None]:
    if scores is None:
        return [None] * len(texts)
    if len(scores) != len(texts):
        raise ConfigError(f"got {len(scores)} scores for {len(texts)} texts")
    return [_usable(s) for s in scores]


def _cosines(q: np.ndarray, m: np.ndarray) -> list[float | None]:
    q = np.asarray(q, dtype=np.float32).reshape(-1)
    m = np.asarray(m, dtype=np.float32)
    qn = float(np.linalg.norm(q)) or 1.0
    mn = np.linalg.norm(m, axis=1)
    mn[mn == 0] = 1.0
    return [float(x) for x in (m @ q) / (mn * qn)]
