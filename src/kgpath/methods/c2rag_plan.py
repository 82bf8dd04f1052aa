"""Backward-compatible alias of :mod:`kgpath.methods.c2rag.plan` (C2RAG section 3.2).

The plan types, validation and the LLM-free fallback plan live in the C2RAG package now;
this module re-exports them so ``from kgpath.methods.c2rag_plan import parse_plan`` keeps
working.
"""

from __future__ import annotations

from kgpath.methods.c2rag.fallback import fallback_plan, find_entity_mentions
from kgpath.methods.c2rag.plan import (
    PLAN_SCHEMA,
    Constraint,
    Plan,
    is_placeholder,
    normalize_placeholder,
    parse_plan,
    tokens,
)

__all__ = [
    "PLAN_SCHEMA",
    "Constraint",
    "Plan",
    "tokens",
    "is_placeholder",
    "normalize_placeholder",
    "parse_plan",
    "fallback_plan",
    "find_entity_mentions",
]
