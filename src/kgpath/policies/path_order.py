"""PathRAG's prompt order (Eq. 6) over any scored list: the best evidence last.

PathRAG puts the retrieved paths into the prompt in ascending reliability, so the most
reliable one sits next to the question. The LangChain ``PathOrderCompressor`` and the
LlamaIndex ``PathOrderPostprocessor`` apply the same order to any scored documents or
nodes: they read each item's score with :func:`checked_score` and reorder with
:func:`ascending_order`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from kgpath.errors import ConfigError

__all__ = ["ascending_order", "checked_score"]

T = TypeVar("T")


def checked_score(value: Any, what: str) -> float:
    """``value`` as a float (``None``: ``-inf``); :class:`ConfigError` naming ``what`` else."""
    if value is None:
        return float("-inf")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) \
            or math.isnan(value):
        raise ConfigError(f"{what} = {value!r} is not a number")
    return float(value)


def ascending_order(items: Sequence[T], scores: Sequence[float],
                    top_n: int | None = None) -> list[T]:
    """``items`` in ascending score, the best last: PathRAG's Eq. 6 prompt order.

    Among equal scores the item ranked earlier ends up later; ``top_n`` keeps the ``n``
    highest scores.

    >>> ascending_order(["a", "b", "c"], [0.9, 0.1, 0.9], top_n=2)
    ['c', 'a']
    """
    if top_n is not None and (isinstance(top_n, bool) or not isinstance(top_n, int)
                              or top_n < 0):
        raise ConfigError(f"top_n must be None or an int >= 0, got {top_n!r}")
    keyed = [(s, -i, x) for i, (s, x) in enumerate(zip(scores, items, strict=True))]
    if top_n is not None:
        keyed = sorted(keyed, key=lambda t: (t[0], t[1]), reverse=True)[:top_n]
    keyed.sort(key=lambda t: (t[0], t[1]))
    return [x for _, _, x in keyed]
