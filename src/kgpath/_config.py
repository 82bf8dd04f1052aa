"""Per-call overrides of frozen config dataclasses, the same way for every method."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import Any, TypeVar

from kgpath.errors import ConfigError

__all__ = ["from_mapping", "with_overrides"]

C = TypeVar("C")


def with_overrides(
    config: C,
    overrides: Mapping[str, Any],
    *,
    label: str,
    none_is_value: Collection[str] | bool = (),
) -> C:
    """Return ``config`` with ``overrides`` applied by ``dataclasses.replace``.

    The replacement re-runs the dataclass's validation, so a bad value raises the config's
    :class:`~kgpath.errors.ConfigError`. A ``None`` override means "not given" and is
    dropped, except for the fields named in ``none_is_value`` (or all fields when it is
    ``True``), where ``None`` is a real value (e.g. ``max_depth=None`` = unlimited).
    Unknown names raise :class:`ConfigError` listing them, prefixed with ``label``.
    """
    if none_is_value is True:
        clean = dict(overrides)
    else:
        keep = () if none_is_value is False else none_is_value
        clean = {k: v for k, v in overrides.items() if v is not None or k in keep}
    unknown = set(clean) - {f.name for f in dataclasses.fields(config)}  # type: ignore[arg-type]
    if unknown:
        raise ConfigError(f"unknown {label} option(s): {sorted(unknown)}")
    return dataclasses.replace(config, **clean) if clean else config  # type: ignore[type-var]


def from_mapping(cls: type[C], value: Mapping[str, Any], *, label: str) -> C:
    """``cls(**value)`` for a plain ``{"field": value}`` given where a config is expected.

    Raises
    ------
    ConfigError
        For a key that is not a field of ``cls`` (listing the fields), or a bad value (the
        config's own validation), prefixed with ``label``.
    """
    fields = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    unknown = sorted(str(k) for k in value if k not in fields)
    if unknown:
        raise ConfigError(f"{label} has unknown field(s) {unknown}; the fields are {fields}")
    return cls(**value)
