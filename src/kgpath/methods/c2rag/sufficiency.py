"""C2RAG sufficiency check (Eq. 7-10): whether one candidate is dominant enough to bind.

:func:`normalize_scores` turns the reranker scores of ``C_top`` into probabilities (Eq. 7,
min-shift + ε); :func:`effective_candidates` is ``N_eff = 1/Σp²`` (Eq. 8 / Eq. 10, Lemma
A.1-A.2); :func:`sufficiency_state` resolves a constraint iff ``N_eff <= γ`` (Eq. 9).
:func:`check_sufficiency` applies the three to any scored list; the core sufficiency policy
and both framework adapters use it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kgpath.errors import BackendError, ConfigError, short
from kgpath.methods.c2rag.config import State

__all__ = [
    "SufficiencyCheck",
    "check_sufficiency",
    "effective_candidates",
    "normalize_scores",
    "sufficiency_state",
]


def normalize_scores(z: Sequence[float] | np.ndarray, epsilon: float) -> np.ndarray:
    """Eq. 7: ``p_c = (z_c - min z + ε) / Σ_c' (z_c' - min z + ε)`` (float64).

    Equal scores give the uniform distribution; ε > 0 keeps the lowest candidate's weight
    above zero.
    """
    arr = np.asarray(z, dtype=np.float64).reshape(-1)
    if arr.size == 0:
        return arr
    if not np.isfinite(arr).all():
        raise BackendError(f"reranker scores must be finite, got {arr.tolist()}")
    if not epsilon > 0:
        raise ConfigError(f"epsilon must be > 0, got {short(epsilon)}")
    shifted = arr - arr.min() + epsilon
    return shifted / shifted.sum()


def effective_candidates(p: Sequence[float] | np.ndarray) -> float:
    """Eq. 8 / Eq. 17: ``N_eff = 1 / Σ_c p_c²``.

    ``1 <= N_eff <= n`` (Lemma A.1): 1 for a point mass, ``n`` for the uniform
    distribution; and ``max_c p_c >= 1 / N_eff`` (Lemma A.2).

    >>> effective_candidates([0.25, 0.25, 0.25, 0.25])
    4.0
    """
    arr = np.asarray(p, dtype=np.float64).reshape(-1)
    if arr.size == 0:
        raise ConfigError("N_eff is undefined for an empty candidate set")
    if (arr < 0).any() or not np.isfinite(arr).all():
        raise ConfigError(f"probabilities must be finite and >= 0, got {arr.tolist()}")
    if not math.isclose(float(arr.sum()), 1.0, rel_tol=1e-6, abs_tol=1e-9):
        raise ConfigError(f"probabilities must sum to 1, got sum {float(arr.sum())!r}")
    return float(1.0 / np.square(arr).sum())


def sufficiency_state(n_eff: float | None, gamma: float) -> State:
    """Eq. 9: ``"resolved"`` iff ``N_eff <= γ`` (an empty pool, ``None``, is unresolved)."""
    if n_eff is None:
        return "unresolved"
    return "resolved" if n_eff <= gamma else "unresolved"



@dataclass(frozen=True)
class SufficiencyCheck:
    """Eq. 7-9 applied to an arbitrary scored list (see :func:`check_sufficiency`)."""

    state: State
    n_eff: float | None
    """``None`` when no item had a usable score."""
    top: tuple[int, ...]
    """Positions (in the input) of the ``k_s`` best-scored items, best first."""
    probabilities: tuple[float, ...]
    """Eq. 7 probabilities of :attr:`top`."""
    gamma: float

    def probability_of(self, position: int) -> float | None:
        """Eq. 7 probability of input item ``position`` (``None`` if not in the top)."""
        for pos, p in zip(self.top, self.probabilities, strict=True):
            if pos == position:
                return p
        return None


def check_sufficiency(
    scores: Sequence[float | None],
    *,
    gamma: float = 1.5,
    epsilon: float = 0.01,
    k_s: int = 3,
) -> SufficiencyCheck:
    """C2RAG's sufficiency check on any scored list (Eq. 7-9 over its top-``K_s``).

    Items whose score is ``None`` or not finite are ignored; with no usable score the
    list is unresolved and ``n_eff`` is ``None``. This is what the LlamaIndex and LangChain
    "sufficiency fallback" adapters apply to other retrievers' results.

    >>> check_sufficiency([0.29, 0.9, None, 0.3]).top
    (1, 3, 0)
    """
    if isinstance(k_s, bool) or not isinstance(k_s, int) or k_s <= 0:
        raise ConfigError(f"k_s must be a positive int, got {short(k_s)}")
    if not isinstance(gamma, (int, float)) or not math.isfinite(gamma) or gamma <= 0:
        raise ConfigError(f"gamma must be a finite number > 0, got {short(gamma)}")
    usable = [
        (i, float(s)) for i, s in enumerate(scores)
        if s is not None and not isinstance(s, bool) and math.isfinite(float(s))
    ]
    if not usable:
        return SufficiencyCheck("unresolved", None, (), (), float(gamma))
    usable.sort(key=lambda x: (-x[1], x[0]))
    top = usable[:k_s]
    p = normalize_scores([s for _, s in top], epsilon)
    n_eff = effective_candidates(p)
    return SufficiencyCheck(
        sufficiency_state(n_eff, gamma), n_eff, tuple(i for i, _ in top),
        tuple(float(x) for x in p), float(gamma),
    )

