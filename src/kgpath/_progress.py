"""One progress-bar policy for every long build step (tqdm, shown on stderr).

A bar appears when a step has more than :data:`PROGRESS_THRESHOLD` items and progress is
enabled; set ``KGPATH_PROGRESS=0`` to silence all bars (e.g. in CI logs). The adapters'
``show_progress`` flags use :func:`progress_if` (a bar whenever the caller asks for one).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sized
from typing import TypeVar

__all__ = ["PROGRESS_THRESHOLD", "progress", "progress_enabled", "progress_if"]

T = TypeVar("T")

#: Steps with more items than this show a bar.
PROGRESS_THRESHOLD = 256


def progress_enabled() -> bool:
    """False when ``KGPATH_PROGRESS`` is set to ``0``/``false``/``no``."""
    return os.environ.get("KGPATH_PROGRESS", "1").strip().lower() not in ("0", "false", "no")


def progress(
    items: Iterable[T],
    *,
    total: int | None = None,
    desc: str,
    unit: str = "it",
    enabled: bool = True,
    threshold: int = PROGRESS_THRESHOLD,
) -> Iterator[T]:
    """Iterate over ``items``, with a tqdm bar when the step is long enough."""
    n = total
    if n is None and isinstance(items, Sized):
        n = len(items)
    if not enabled or not progress_enabled() or n is None or n <= threshold:
        yield from items
        return
    from tqdm.auto import tqdm

    with tqdm(items, total=n, desc=desc, unit=unit) as bar:
        yield from bar


def progress_if(items: Iterable[T], show: bool, desc: str) -> Iterable[T]:
    """``items``, behind a tqdm bar when ``show`` (the adapters' ``show_progress``)."""
    if not show:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, leave=False)  # type: ignore[no-any-return]
