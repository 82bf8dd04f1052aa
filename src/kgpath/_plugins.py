"""The adapter distributions' plug-ins: loading their entry points, naming their models.

:func:`kgpath.embeddings.as_embedder` and :func:`kgpath.llm.as_llm` wrap a framework's
model through functions the adapters declare (entry-point groups
``kgpath.embedder_adapters`` and ``kgpath.llm_adapters``), so the core imports no
framework. Both load them the same way: by entry-point name, a broken one skipped. The
LLM wrappers those functions return describe the model they wrap with
:func:`model_fingerprint` (re-exported by :mod:`kgpath.llm`), as :func:`kgpath.llm.llm_fingerprint`
does for any other model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from importlib.metadata import EntryPoint
from typing import Any

__all__ = ["load_plugins", "model_fingerprint"]


def load_plugins(found: Iterable[EntryPoint], what: str,
                 log: logging.Logger) -> tuple[Callable[[Any], Any], ...]:
    """The loaded entry points of ``found``, sorted by name.

    One that fails to load is skipped with a warning on ``log`` naming it as ``what``
    (e.g. ``"embedder adapter"``), so a broken plug-in cannot stop the others.
    """
    loaded = []
    for ep in sorted(found, key=lambda e: e.name):
        try:
            loaded.append(ep.load())
        except Exception as exc:  # noqa: BLE001 - a broken plug-in is skipped, not fatal
            log.warning("skipping %s %r (%s): %s", what, ep.name, ep.value, exc)
    return tuple(loaded)


def model_fingerprint(obj: Any, model: Any) -> str:
    """``module.Class[:model=...][:temperature=...]`` of a model object.

    ``model`` is its model name as its framework spells it (a non-empty string, else
    left out); the temperature is read from ``obj`` when it is a number. The adapters'
    LLM wrappers describe the model they wrap with it.
    """
    cls = type(obj)
    parts = [f"{cls.__module__}.{cls.__qualname__}"]
    if isinstance(model, str) and model:
        parts.append(f"model={model}")
    temp = getattr(obj, "temperature", None)
    if isinstance(temp, (int, float)) and not isinstance(temp, bool):
        parts.append(f"temperature={float(temp)}")
    return ":".join(parts)
