"""The bulk record path of KnowledgeGraph.load equals add_node/add_edge record by record."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kgpath.graph.saved_files as P
from kgpath import KnowledgeGraph
from kgpath.errors import PersistenceError

ids = st.text(alphabet="abcé 😀", min_size=1, max_size=4).filter(str.strip)


@st.composite
def graphs(draw: st.DrawFn) -> KnowledgeGraph:
    g = KnowledgeGraph()
    pids = draw(st.lists(ids, max_size=3, unique=True))
    for p in pids:
        g.add_passage(p, draw(st.text(max_size=5)))
    nodes = draw(st.lists(ids, min_size=1, max_size=6, unique=True))
    for n in nodes:
        g.add_node(n, name=draw(st.none() | st.text(max_size=4)), text=draw(st.text(max_size=4)),
                   type=draw(st.none() | st.sampled_from(["T", "U"])),
                   metadata={"k": draw(st.integers(0, 3))},
                   provenance=draw(st.lists(st.sampled_from(pids), max_size=2)) if pids else ())
    for _ in range(draw(st.integers(0, 8))):
        g.add_edge(draw(st.sampled_from(nodes)), draw(st.sampled_from(nodes)),
                   relation=draw(st.sampled_from(["r", "s", ""])), text=draw(st.text(max_size=3)),
                   weight=draw(st.floats(0, 5)),
                   provenance=draw(st.lists(st.sampled_from(pids), max_size=2)) if pids else ())
    return g


def _state(g: KnowledgeGraph) -> tuple[object, ...]:
    return (list(g.nodes), list(g.edges), dict(g.passages), len(g), g.num_edges)


@settings(max_examples=60, deadline=None)
@given(g=graphs())
def test_bulk_load_equals_record_by_record_load(tmp_path_factory, g):
    d = tmp_path_factory.mktemp("g") / "g"
    g.save(d)
    used = []
    bulk = P.bulk_records
    P.bulk_records = lambda *a: (used.append(1), bulk(*a))[1]
    try:
        fast = KnowledgeGraph.load(d)
    finally:
        P.bulk_records = bulk
    assert used  # the bulk path ran (and did not fall back: states compared below)
    old = P.SURROGATE_ESCAPE
    try:
        P.SURROGATE_ESCAPE = re.compile(rb"")  # matches everything: the add_node path
        slow = KnowledgeGraph.load(d)
    finally:
        P.SURROGATE_ESCAPE = old
    assert _state(fast) == _state(slow) == _state(g)
    assert [fast.index_of(n.id) for n in g.nodes] == list(range(len(g)))


def test_a_lone_surrogate_goes_through_the_checking_path(tmp_path):
    g = KnowledgeGraph.from_triples([("a", "r", "b")])
    g.save(tmp_path / "g")
    raw = (tmp_path / "g" / "nodes.json").read_text().replace('"name": "a"', '"name": "\\ud800"')
    (tmp_path / "g" / "nodes.json").write_text(raw)
    m = json.loads((tmp_path / "g" / "manifest.json").read_text())

    data = (tmp_path / "g" / "nodes.json").read_bytes()
    m["files"]["nodes.json"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    (tmp_path / "g" / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(PersistenceError, match="lone surrogate"):
        KnowledgeGraph.load(tmp_path / "g")
