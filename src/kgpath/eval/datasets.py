"""Locating and loading the benchmark data in ``../shared/datasets``.

The data is not shipped with kgpath. :func:`shared_datasets_dir` looks, in order, at
``$KGPATH_DATASETS``, then ``<repo>/../shared/datasets`` (the layout of this project's
checkouts). Tests that need it skip cleanly when it returns ``None``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from kgpath.errors import GraphError

__all__ = ["shared_datasets_dir", "PathRAG6Query", "load_pathrag6_queries", "PATHRAG6_DOMAINS"]

PATHRAG6_DOMAINS = ("tech", "legal", "bio", "microservices", "citations", "medical")


def shared_datasets_dir() -> Path | None:
    """The shared datasets folder, or ``None`` when it is absent (a user's fresh clone)."""
    env = os.environ.get("KGPATH_DATASETS")
    if env:
        p = Path(env)
        return p if p.is_dir() else None
    here = Path(__file__).resolve()
    for parent in here.parents:
        cand = parent.parent / "shared" / "datasets"
        if (parent / "pyproject.toml").is_file() and cand.is_dir():
            return cand
    return None


@dataclass(frozen=True)
class PathRAG6Query:
    """One PathRAG-6 query with its anchor and ground-truth relevant node ids."""

    id: str
    domain: str
    anchor: str
    query: str
    relevant: tuple[str, ...]


def load_pathrag6_queries(data_dir: str | os.PathLike[str]) -> dict[str, list[PathRAG6Query]]:
    """Read ``queries.json`` of a PathRAG-6-format folder, grouped by domain."""
    path = Path(data_dir) / "queries.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise GraphError(f"{data_dir} has no queries.json (not PathRAG-6 format)") from exc
    out: dict[str, list[PathRAG6Query]] = {}
    for domain, items in raw.items():
        out[domain] = [
            PathRAG6Query(
                id=str(q["id"]), domain=domain, anchor=str(q["anchor"]),
                query=str(q["query"]), relevant=tuple(q["relevant_nodes"]),
            )
            for q in items
        ]
    return out
