"""Which rows of a :class:`~kgpath.backends.cypher.CypherSync` push changed, and how.

Row digests are tuples ``(content digest, position, ...)`` (node: vector bytes and name;
edge: nothing more; passage: citing entities and vector bytes), as ``CypherSync._rows``
makes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["file_changed", "moved"]


def file_changed(old: Mapping[Any, Any], now: Mapping[Any, tuple[dict[str, Any], Any]],
                 parts: tuple[int, int]) -> bool:
    """Whether the file rows of ``now`` differ: ids, or digest ``parts`` of a row.

    ``(1, 2)``: position and vector (a vector file); ``(1, 3)``: position and name (the
    name token index); ``(0, 1)`` of edges: content and rank, ``(3, 3)`` of nodes: name
    (the edge vector file, whose relation texts read both).
    """
    if len(old) != len(now):
        return True
    a, b = parts
    for k, (_, d) in now.items():
        was = old.get(k)
        if was is None or was[a] != d[a] or was[b] != d[b]:
            return True
    return False


def moved(keys: list[Any], old: dict[Any, Any],
          now: dict[Any, Any]) -> tuple[list[Any], list[Any]]:
    """Split changed rows into those that only moved and the rest (new or changed).

    A row that only moved (same content, citing entities and vector, another position)
    gets its order property rewritten, not the whole row.
    """
    only, rest = [], []
    for k in keys:
        was, new = old.get(k), now[k][1]
        if was is not None and was[0] == new[0] and was[2:] == new[2:]:
            only.append(k)
        else:
            rest.append(k)
    return only, rest
