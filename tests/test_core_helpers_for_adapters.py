"""The framework-free pieces both adapters share: the facade's construction rules, the
sufficiency gate's helpers, PathRAG's prompt order, the sub-question merge, progress.

Truths are hand-computed on tiny inputs; no framework is imported. The helpers only one
adapter uses are tested with it (``integrations/*/tests``).
"""

from __future__ import annotations

import warnings

import pytest

from kgpath import ConfigError, HashingEmbedder, KnowledgeGraph, NodeNotFoundError
from kgpath._progress import progress_if
from kgpath.facade import (
    EvidenceRetriever,
    check_k,
    is_built,
    merge_call_defaults,
    method_spec,
    with_config,
)
from kgpath.index import GraphIndex
from kgpath.methods.pcr import PathConstrainedRetriever
from kgpath.methods.schema.merge import merge_sub_question_runs
from kgpath.policies import ascending_order, checked_score, gate_metadata, make_gate


def chain() -> KnowledgeGraph:
    """a -> b -> c, each node citing its own passage."""
    return KnowledgeGraph.from_triples(
        [("a", "to", "b"), ("b", "to", "c")],
        {"pa": "a goes to b", "pb": "b goes to c"}, provenance=[["pa"], ["pb"]])


# ====================================================================== facade
def test_check_k_and_is_built() -> None:
    assert check_k(None) is None and check_k(3) == 3
    for bad in (0, -1, True, 2.0, "3"):
        with pytest.raises(ConfigError, match="k must be"):
            check_k(bad)
    g = chain()
    core = PathConstrainedRetriever(g, embedder=HashingEmbedder())
    assert is_built(core)
    assert not is_built(g) and not is_built(GraphIndex(g, HashingEmbedder()))
    assert not is_built(object())


def test_merge_call_defaults_replaces_a_group_as_a_whole() -> None:
    d = {"anchor": "a", "max_depth": 2}
    groups = method_spec("pcr").call_groups  # the groups come from the method's spec
    assert merge_call_defaults(d, {}, groups) == d
    assert merge_call_defaults(d, {"anchor_name": "B"}, groups) == {"max_depth": 2,
                                                                    "anchor_name": "B"}
    assert merge_call_defaults(d, {"anchor": None}, groups) == {"max_depth": 2, "anchor": None}
    assert merge_call_defaults(d, {"max_depth": 1}, groups=()) == {"anchor": "a", "max_depth": 1}
    assert merge_call_defaults(d, {"anchor_name": "B"}) == {**d, "anchor_name": "B"}  # no group


def test_with_config_copies_and_leaves_the_original() -> None:
    core = PathConstrainedRetriever(chain(), embedder=HashingEmbedder())
    spec = method_spec("pcr")
    opts = {"max_depth": 3}
    copy = with_config(core, spec, 2, opts)
    assert opts == {}  # popped
    assert (copy.config.max_depth, copy.config.k) == (3, 2)
    assert core.config.max_depth != 3 and copy.index is core.index
    assert with_config(core, spec, None, {}) is core
    with pytest.raises(ConfigError, match=r"\['colour'\].*prebuilt.*accepted"):
        with_config(core, spec, None, {"colour": 1})


def test_from_options_splits_per_call_defaults_and_keeps_config_k() -> None:
    er = EvidenceRetriever.from_options("pcr", chain(), embedder=HashingEmbedder(), k=1,
                                        options={"anchor": "a", "k": 5, "max_depth": 1})
    assert er.defaults == {"anchor": "a"}
    assert er.core.config.k == 5 and er.core.config.max_depth == 1 and er.k == 1
    # anchor a, one hop: hits a, b -> passages pa (cited by a and b) only, then cut at k=1
    assert [e.id for e in er.retrieve("b")] == ["pa"]
    _, _, opts = er.call_args({"anchor_name": "b"})
    assert "anchor" not in opts and opts["anchor_name"] == "b"


def test_from_options_on_a_built_core() -> None:
    core = PathConstrainedRetriever(chain(), embedder=HashingEmbedder())
    er = EvidenceRetriever.from_options("pcr", core, k=2, options={"max_depth": 1,
                                                                   "anchor": "a"})
    assert er.core is not core and er.core.config.max_depth == 1 and er.core.config.k == 2
    assert er.defaults == {"anchor": "a"}
    with pytest.raises(ConfigError, match=r"prebuilt.*\['max_depth'\]"):
        EvidenceRetriever.from_options("pcr", core, options={"max_depth": 1},
                                       configure_built=False)
    with pytest.raises(ConfigError, match="pass embedding=None.*own embedder"):
        EvidenceRetriever.from_options("pcr", core, embedder=HashingEmbedder(),
                                       names=("embedding", "llm"))
    with pytest.raises(ConfigError, match="pass llm=None"):
        EvidenceRetriever.from_options("pcr", core, llm=object())
    index = GraphIndex(chain(), HashingEmbedder())
    with pytest.raises(ConfigError, match="pass embed_model=None"):
        EvidenceRetriever.from_options("pcr", index, embedder=HashingEmbedder(),
                                       names=("embed_model", "llm"))


def test_from_options_converts_models_only_when_building() -> None:
    seen: list[object] = []

    def convert(x: object) -> object:
        seen.append(x)
        return HashingEmbedder() if x == "mine" else x

    er = EvidenceRetriever.from_options("pcr", chain(), embedder="mine",
                                        convert=(convert, convert))
    assert seen == ["mine", None] and isinstance(er.core.index.embedder, HashingEmbedder)


def test_from_options_checks_defaults_at_construction() -> None:
    g = chain()
    with pytest.raises(NodeNotFoundError, match="'nope'"):
        EvidenceRetriever.from_options("pcr", g, embedder=HashingEmbedder(),
                                       options={"anchor": "nope"}, check_anchor=True)
    with pytest.raises(NodeNotFoundError, match="'Nobody'"):
        EvidenceRetriever.from_options("pcr", g, embedder=HashingEmbedder(),
                                       options={"anchor_name": "Nobody"}, check_anchor=True)
    # not checked without check_anchor, nor with the "similar" policy
    EvidenceRetriever.from_options("pcr", g, embedder=HashingEmbedder(),
                                   options={"anchor": "nope"})
    EvidenceRetriever.from_options("pcr", g, embedder=HashingEmbedder(), check_anchor=True,
                                   options={"anchor": "nope", "unknown_anchor": "similar"})
    core = object.__new__(type("T", (), {"retrieve": None, "aretrieve": None}))
    with pytest.raises(ConfigError, match="astar"):
        EvidenceRetriever.from_options("traversal", core, options={"algorithm": "astar"})


# ====================================================================== gate
def test_make_gate_warns_below_one_and_reads_only_gate_fields() -> None:
    with pytest.warns(UserWarning, match="gamma=0.5 < 1"):
        gate = make_gate({"gamma": 0.5, "top_k": 2, "embedding": "ignored"})
    assert (gate.config.gamma, gate.config.top_k) == (0.5, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert make_gate({}).config.gamma == 1.5
    with pytest.raises(ConfigError, match="gamma"):
        make_gate({"gamma": 0})


def test_gate_metadata_prefixes_and_makes_json_safe() -> None:
    import numpy as np

    out = gate_metadata({"gate_state": "resolved", "gate_n_eff": np.float32(1.5),
                         "gate_p": None})
    assert out == {"kgpath_gate_state": "resolved", "kgpath_gate_n_eff": 1.5,
                   "kgpath_gate_p": None}
    assert type(out["kgpath_gate_n_eff"]) is float


# ====================================================================== scores, order, merge
def test_checked_score() -> None:
    assert checked_score(None, "s") == float("-inf") and checked_score(3, "s") == 3.0
    for bad in ("1", True, float("nan")):
        with pytest.raises(ConfigError, match="what = .* is not a number"):
            checked_score(bad, "what")


def test_ascending_order_puts_the_best_last() -> None:
    # ties: the earlier item ends up later; unscored (-inf) first
    assert ascending_order(list("abcd"), [0.5, float("-inf"), 0.9, 0.5]) == list("bdac")
    assert ascending_order(list("abcd"), [0.5, float("-inf"), 0.9, 0.5], top_n=2) == ["a", "c"]
    assert ascending_order(list("ab"), [1, 2], top_n=0) == []
    for bad in (-1, True, 1.5):
        with pytest.raises(ConfigError, match="top_n"):
            ascending_order(["a"], [1.0], top_n=bad)


def test_merge_sub_question_runs() -> None:
    runs = [[("x", 0.2), ("y", 0.9)], [("x", 0.7), ("z", 0.2)], [("y", 0.1)]]
    merged = merge_sub_question_runs(runs, key=lambda t: t[0], score=lambda t: t[1])
    # y: best 0.9 (runs 0, 2); x: best 0.7 from run 1; z: 0.2, seen after x
    assert merged == [(("y", 0.9), [0, 2]), (("x", 0.7), [0, 1]), (("z", 0.2), [1])]
    tie = merge_sub_question_runs([[("a", 1.0)], [("a", 1.0), ("b", 1.0)]],
                                  key=lambda t: t[0], score=lambda t: t[1])
    assert [t for t, _ in tie] == [("a", 1.0), ("b", 1.0)]


# ====================================================================== progress
def test_progress_if_shows_a_bar_only_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    items = [1, 2, 3]
    assert progress_if(items, False, "x") is items
    assert list(progress_if(items, True, "counting things")) == items
    assert "counting things" in capsys.readouterr().err
