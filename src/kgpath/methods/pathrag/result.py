"""The PathRAG result: paths, prompt, trace, and the evidence contract."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgpath.graph import KnowledgeGraph
from kgpath.methods.pathrag.config import PathRAGConfig
from kgpath.methods.pathrag.nodes import RetrievedNode
from kgpath.methods.pathrag.paths import CandidatePool
from kgpath.methods.pathrag.prompt import PathRAGPath, materialize_path

__all__ = ["PathRAGResult"]


@dataclass(frozen=True)
class PathRAGResult:
    """PathRAG output: the paths, the prompt, and everything needed to explain them.

    ``paths`` are the top-``K`` paths by reliability, most reliable first (``P_1 ... P_K``);
    ``prompt_paths`` are the paths the ordering policy put in the prompt, in prompt order,
    after any token-budget drops. ``empty_reason`` is ``None`` or one of
    ``"fewer_than_two_nodes"`` (fewer than 2 nodes retrieved) and ``"no_path"`` (no flow
    path between any ordered pair); then ``paths`` is empty and the prompt carries the
    query only.
    """

    query: str
    keywords: tuple[str, ...]
    keyword_source: str
    nodes: tuple[RetrievedNode, ...]
    paths: tuple[PathRAGPath, ...]
    prompt_paths: tuple[PathRAGPath, ...]
    context: str
    prompt: str
    config: PathRAGConfig
    empty_reason: str | None = None
    trace: dict[str, Any] = field(default_factory=dict)
    pool: CandidatePool | None = field(default=None, repr=False, compare=False)
    graph: KnowledgeGraph | None = field(default=None, repr=False, compare=False)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)

    def candidates(self) -> list[PathRAGPath]:
        """Every candidate path of the pool (materialised on demand), most reliable first."""
        if self.pool is None or self.graph is None:
            return list(self.paths)
        return [materialize_path(self.graph, c, i) for i, c in enumerate(self.pool, 1)]

    def token_count(self, encoding: str | None = None) -> int:
        """Tokens in :attr:`prompt` (tiktoken, offline encodings only)."""
        from kgpath.tokens import count_tokens

        return count_tokens(self.prompt, encoding or self.config.encoding)
