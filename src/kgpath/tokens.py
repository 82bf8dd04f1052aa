"""Token counting with tiktoken, working offline.

Only ``cl100k_base`` and ``o200k_base`` are available without network, from the cache that
llama-index-core bundles. If ``TIKTOKEN_CACHE_DIR`` is unset and that cache exists, it is
used. Without tiktoken, :func:`count_tokens` raises :class:`MissingDependencyError`.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path
from typing import Any

from kgpath.errors import MissingDependencyError

__all__ = ["count_tokens", "get_encoding"]


def _bundled_cache() -> str | None:
    spec = importlib.util.find_spec("llama_index.core")
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        p = Path(loc) / "_static" / "tiktoken_cache"
        if p.is_dir():
            return str(p)
    return None


@functools.lru_cache(maxsize=4)
def get_encoding(name: str = "cl100k_base") -> Any:
    """Return a tiktoken encoding, pointing tiktoken at an offline cache when possible."""
    if "TIKTOKEN_CACHE_DIR" not in os.environ:
        cache = _bundled_cache()
        if cache:
            os.environ["TIKTOKEN_CACHE_DIR"] = cache
    try:
        import tiktoken
    except ImportError as exc:
        raise MissingDependencyError(
            "token counting needs tiktoken: pip install 'kgpath[tokens]'"
        ) from exc
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # noqa: BLE001 - network failure inside tiktoken
        raise MissingDependencyError(
            f"tiktoken encoding {name!r} is not available offline; use 'cl100k_base' or "
            f"'o200k_base' with llama-index-core installed, or set TIKTOKEN_CACHE_DIR ({exc})"
        ) from exc


def count_tokens(text: str, encoding: str = "cl100k_base") -> int:
    """Number of tokens of ``text`` in ``encoding``."""
    return len(get_encoding(encoding).encode(text))
