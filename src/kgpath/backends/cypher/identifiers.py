"""The only text kgpath splices into Cypher: validated identifiers and depth bounds.

Every value (node ids, names, id lists, paging keys) travels as a query parameter. Labels,
relationship types and property names cannot be parameters in Cypher, so they are validated
against ``[A-Za-z_][A-Za-z0-9_]*`` and back-quoted; variable-length depth bounds are
validated ``int``. A hostile node name is therefore data, never query text.
"""

from __future__ import annotations

import re

from kgpath.errors import ConfigError

__all__ = ["quote_identifier", "check_hops", "norm_name"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # used with fullmatch: no trailing newline


def quote_identifier(name: object, what: str = "identifier") -> str:
    """Back-quote a label / relationship type / property name after validating it.

    Only ``[A-Za-z_][A-Za-z0-9_]*`` is accepted, so the quoted form can never close the
    quotes or inject query text. Raises :class:`ConfigError` naming the bad value.
    """
    if not isinstance(name, str) or not _IDENT.fullmatch(name):
        raise ConfigError(
            f"{what} must match [A-Za-z_][A-Za-z0-9_]* to be used in a Cypher query, "
            f"got {name!r}"
        )
    return f"`{name}`"


def check_hops(h: object) -> int:
    """A variable-length depth bound written into query text: an ``int >= 1``."""
    if isinstance(h, bool) or not isinstance(h, int) or h < 1:
        raise ConfigError(f"a variable-length depth bound must be an int >= 1, got {h!r}")
    return h


def norm_name(s: str) -> str:
    """Same normalisation as :func:`kgpath.index.linking.find_by_name` (a parameter value)."""
    return " ".join(str(s).lower().split())
