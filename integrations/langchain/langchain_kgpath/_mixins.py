"""Small mixins of the adapter's base classes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["FromTextsMixin"]


class FromTextsMixin:
    """``from_texts(texts, **kwargs)``: the retriever's ``from_documents`` for strings."""

    @classmethod
    def from_texts(cls, texts: Iterable[str], **kwargs: Any) -> Any:
        """:meth:`from_documents` for plain strings."""
        return cls.from_documents(list(texts), **kwargs)  # type: ignore[attr-defined]
