"""The shared name-key index is never labelled newer than what it holds."""

from __future__ import annotations

from collections.abc import Sequence

from kgpath import KnowledgeGraph
from kgpath.graph import Node
from kgpath.index.linking import EntityLinker, GraphNames, name_key_index


class _ChangedMidBuild(KnowledgeGraph):
    """Another thread adds a node while the index reads the (old) node list."""

    armed = False

    @property
    def nodes(self) -> Sequence[Node]:
        snapshot = super().nodes
        if self.armed:
            self.armed = False
            self.add_node("late", name="Sorbonne")
        return snapshot


def _graph() -> _ChangedMidBuild:
    g = _ChangedMidBuild()
    g.add_node("mc", name="Marie Curie")
    g.armed = True
    return g


def test_index_built_during_a_change_is_rebuilt_next_time():
    g = _graph()
    first = name_key_index(g)
    assert first == {"marie curie": [0]}  # built from the list before the change
    assert name_key_index(g) == {"marie curie": [0], "sorbonne": [1]}  # not served stale


def test_graph_names_and_linker_see_a_change_made_during_the_build():
    g = _graph()
    names = GraphNames(g)
    assert names.candidates("sorbonne", "Sorbonne") == []  # the build saw the old list
    assert names.candidates("sorbonne", "Sorbonne") == [1]
    g2 = _graph()
    linker = EntityLinker(g2)
    assert linker.link("Marie Curie at the Sorbonne")[0].node_id == "mc"
    assert [x.node_id for x in linker.link("the Sorbonne")] == ["late"]
