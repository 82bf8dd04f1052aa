"""The user-facing records of a :class:`~kgpath.graph.KnowledgeGraph`: nodes, edges, passages.

These frozen dataclasses are what users read and write; traversal never touches them (it
works on the int32 CSR arrays of :mod:`kgpath.graph.csr`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from kgpath.errors import GraphError, short

__all__ = [
    "Node", "Edge", "Passage", "Direction", "DIRECTIONS", "norm_name", "short", "check_text",
    "check_id", "as_provenance",
]

Direction = Literal["out", "in", "both"]
DIRECTIONS = ("out", "in", "both")


@dataclass(frozen=True)
class Node:
    """A graph node.

    ``text`` is what is embedded and searched; ``name`` is the surface form used for
    anchor lookup by name and for path rendering.
    """

    id: str
    name: str
    text: str = ""
    type: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    provenance: tuple[str, ...] = ()

    @property
    def search_text(self) -> str:
        """Text used for embedding and BM25: the name prefixed when the text lacks it."""
        if not self.text:
            return self.name
        if self.name and self.name.lower() not in self.text.lower():
            return f"{self.name}. {self.text}"
        return self.text


@dataclass(frozen=True)
class Edge:
    """A directed, typed, weighted edge ``source --relation--> target``."""

    source: str
    target: str
    relation: str = ""
    text: str = ""
    type: str | None = None
    weight: float = 1.0
    provenance: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def description(self) -> str:
        """The edge's own text, else its relation label."""
        return self.text or self.relation


@dataclass(frozen=True)
class Passage:
    """A source passage that nodes and edges cite through ``provenance``."""

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


def norm_name(s: str) -> str:
    """Name key for lookup by name: lower case, runs of white space collapsed."""
    return " ".join(str(s).lower().split())


def check_text(value: object, what: str) -> str:
    """``value`` if it is a string encodable as UTF-8 (no lone surrogates), else raise.

    Raises
    ------
    GraphError
        Naming ``what`` and a short form of the value.
    """
    if not isinstance(value, str):
        raise GraphError(f"{what} must be a string, got {type(value).__name__}: {short(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise GraphError(
            f"{what} contains a lone surrogate (not valid Unicode text): {short(value)}"
        ) from None
    return value


def check_id(value: object, what: str) -> str:
    """A valid id: a non-empty, not all-white-space, valid Unicode string."""
    if not isinstance(value, str) or not value.strip():
        raise GraphError(f"{what} must be a non-empty string, got {short(value)}")
    return check_text(value, what)


def as_provenance(value: object, what: str) -> tuple[str, ...]:
    """Passage ids as a tuple.

    A single string is ONE passage id (never split into characters); anything else must be
    an iterable of id strings.
    """
    if value is None:
        return ()
    if isinstance(value, str):
        return (check_id(value, f"{what} provenance"),)
    try:
        items = tuple(value)  # type: ignore[call-overload]
    except TypeError:
        raise GraphError(
            f"{what} provenance must be passage ids, got {short(value)}"
        ) from None
    return tuple(check_id(p, f"{what} provenance id") for p in items)
