"""One exception root for everything kgpath raises on purpose.

Every error names the offending value in its message, so a user reading a traceback
knows what to change without opening the source.
"""

from __future__ import annotations

__all__ = [
    "KgpathError",
    "ConfigError",
    "CapabilityError",
    "NodeNotFoundError",
    "EmptyGraphError",
    "GraphError",
    "DocumentError",
    "EmbeddingError",
    "QueryError",
    "ParseError",
    "PersistenceError",
    "MissingDependencyError",
    "BackendError",
    "short",
]


class KgpathError(Exception):
    """Root of every exception raised by kgpath."""


class ConfigError(KgpathError, ValueError):
    """A configuration value is out of its allowed range or of the wrong kind."""


class CapabilityError(ConfigError):
    """A method asked a graph backend for a capability it does not offer.

    ``capability`` names it (e.g. ``"VectorSearch"``); the message names the backend too.
    """

    def __init__(self, message: str, *, capability: str | None = None) -> None:
        super().__init__(message)
        self.capability = capability


class GraphError(KgpathError, ValueError):
    """The graph is malformed (edge to an unknown node, bad weight, ...)."""


class DocumentError(GraphError):
    """A document operation names a document wrongly; ``document_id`` names it.

    An id already holding other content (``add_documents``), an unknown id
    (``delete_documents``), or an id that collides with another document's passage id.
    """

    def __init__(self, message: str, *, document_id: str | None = None) -> None:
        super().__init__(message)
        self.document_id = document_id


class NodeNotFoundError(KgpathError, KeyError):
    """A node id or name does not exist in the graph."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class EmptyGraphError(GraphError):
    """An operation needs at least one node but the graph has none."""


class EmbeddingError(KgpathError, ValueError):
    """Embeddings are missing, contain NaN/inf, or have the wrong dimension."""


class QueryError(KgpathError, ValueError):
    """The query itself is unusable (empty, not a string, ...)."""


class ParseError(KgpathError, ValueError):
    """Text produced by an LLM (or a file) could not be parsed into the expected structure."""


class PersistenceError(KgpathError, OSError):
    """A saved graph is unreadable, or a save is refused or failed.

    Unreadable: truncated, corrupt, unsafe (symlinks, special files, oversize) or of a newer
    format version. Refused: the path holds something that is not a saved graph.
    """


class MissingDependencyError(KgpathError, ImportError):
    """An optional dependency is needed; the message says which extra to install."""


class BackendError(KgpathError, RuntimeError):
    """An external backend (embedding API, LLM, database) failed or is unreachable."""


def short(value: object, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, for error messages.

    Messages name the bad value without dumping a whole object (a pydantic model's repr can
    run to pages).
    """
    try:
        r = repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not hide the real error
        r = f"<{type(value).__name__}>"
    return r if len(r) <= limit else r[: limit - 3] + "..."


def require(module: str, extra: str) -> object:
    """Import an optional dependency or raise an actionable :class:`MissingDependencyError`.

    Parameters
    ----------
    module
        Importable module name, e.g. ``"openai"``.
    extra
        The pip requirement that provides it, e.g. ``"kgpath[openai]"``.
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - exercised via monkeypatch in tests
        raise MissingDependencyError(
            f"optional dependency {module!r} is not installed; run: pip install '{extra}'"
        ) from exc
