"""A lazy PCRHit read by two threads at once resolves without an error."""

from __future__ import annotations

import pytest

from kgpath.graph import Edge, Node
from kgpath.methods.pcr.result import LAZY, PCRHit


def test_a_second_resolve_after_another_thread_finished_is_a_no_op():
    calls = []
    edge = Edge("a", "b", "knows")

    def resolve():
        calls.append(1)
        return ("a", "b"), (edge,)

    hit = PCRHit.lazy(Node(id="b", name="b"), 0.5, 1, resolve)
    # thread 1 resolves; thread 2 saw path LAZY just before and now materialises too
    hit._materialise()
    hit._materialise()
    assert hit.path == ("a", "b") and hit.edges == (edge,)
    assert calls == [1] and hit.resolve is None


def test_lazy_without_resolver_still_refused():
    hit = PCRHit.lazy(Node(id="b", name="b"), 0.5, 1, None)  # type: ignore[arg-type]
    assert hit.__dict__["path"] is LAZY
    with pytest.raises(ValueError, match="needs resolve="):
        _ = hit.path
