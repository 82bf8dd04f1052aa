"""A toy seventh method: the smallest thing that plugs into kgpath, and a plugin's template.

"Word overlap" ranks the graph's passages by how many of the question's words they contain
(ties by passage order). It is not a retrieval method anyone should use; it shows what a
method needs and nothing more: a frozen keyword-only config, a core retriever with the one
constructor shape ``(graph, *, embedder=None, llm=None, config=None)`` and ``retrieve`` /
``aretrieve``, a result with ``evidence(output, k)``, and a :class:`MethodSpec`. Register
it with one line and it runs everywhere a built-in method does (the facade, both adapters,
:class:`~kgpath.testing.RetrieverContractSuite`)::

    from kgpath.methods.registry import register
    from kgpath.testing.toy import SPEC

    register(SPEC)

and, per adapter, ``class ToyRetriever(KgpathRetriever): method = "toy"``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from kgpath.errors import ConfigError
from kgpath.evidence import Evidence, check_output, rank_items
from kgpath.graph import KnowledgeGraph
from kgpath.methods.registry import MethodSpec

__all__ = ["SPEC", "ToyConfig", "ToyResult", "ToyRetriever"]

_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if len(w) >= 3}


@dataclass(frozen=True, kw_only=True)
class ToyConfig:
    """The toy's options.

    Attributes
    ----------
    k
        Number of passages returned.
    min_shared
        A passage must share at least this many question words.
    """

    k: int = 5
    min_shared: int = 1

    def __post_init__(self) -> None:
        for name in ("k", "min_shared"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"{name} must be a positive int, got {v!r}")


@dataclass(frozen=True)
class ToyResult:
    """Ranked ``(passage id, shared words)`` pairs over ``graph``."""

    graph: KnowledgeGraph
    hits: list[tuple[str, list[str]]] = field(default_factory=list)

    def evidence(self, output: str = "passages", k: int | None = None) -> list[Evidence]:
        """The passages, best first (the native unit is the passage too)."""
        check_output(output)
        store = self.graph.passages
        return rank_items((Evidence(pid, store[pid].text, float(len(shared)), "passage",
                                    "toy", trace={"shared_words": shared},
                                    source_metadata=store[pid].metadata)
                           for pid, shared in self.hits), k)


class ToyRetriever:
    """Word-overlap passage ranking (see the module docstring)."""

    def __init__(self, graph: Any, *, embedder: Any = None, llm: Any = None,
                 config: ToyConfig | None = None) -> None:
        self.graph: KnowledgeGraph = graph if isinstance(graph, KnowledgeGraph) else graph.graph
        self.config = config or ToyConfig()

    def retrieve(self, query: str, **overrides: Any) -> ToyResult:
        """Passages sharing the most words with ``query``; ``overrides``: config fields."""
        cfg = dataclasses.replace(self.config, **overrides)
        q = _words(query)
        scored = [(pid, sorted(q & _words(p.text))) for pid, p in self.graph.passages.items()]
        kept = [h for h in scored if len(h[1]) >= cfg.min_shared]
        kept.sort(key=lambda h: -len(h[1]))  # stable: ties keep passage order
        return ToyResult(self.graph, kept[: cfg.k])

    async def aretrieve(self, query: str, **overrides: Any) -> ToyResult:
        """Async :meth:`retrieve` (nothing to await)."""
        return self.retrieve(query, **overrides)


SPEC = MethodSpec(
    name="toy",
    config_cls=ToyConfig,
    build=ToyRetriever,
    trace_keys={"shared_words": "question words the passage contains (toy method)"},
    k_field="k",
    native_kinds=frozenset({"passage"}),
    example=("Which prize did Marie Curie receive?", {}),
)
