"""The framework-free pieces both adapters share: facade construction rules, adapter helpers.

Truths are hand-computed on tiny inputs; no framework is imported.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import pytest

from kgpath import ConfigError, HashingEmbedder, KnowledgeGraph, NodeNotFoundError
from kgpath.adapter_support import (
    FromTextsMixin,
    PropertyGraphReader,
    ascending_order,
    attr_owner,
    checked_score,
    entity_names,
    entity_properties,
    first_score,
    gate_metadata,
    llm_label,
    make_gate,
    merge_sub_question_runs,
    permissive_schema,
    relation_properties,
    schema_triples,
    to_core_template,
)
from kgpath.facade import (
    EvidenceRetriever,
    check_k,
    is_built,
    merge_call_defaults,
    method_spec,
    with_config,
)
from kgpath.index import GraphIndex
from kgpath.ingest.schema import EntityType, RelationType, Schema
from kgpath.methods.pcr import PathConstrainedRetriever


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
    opts = {"max_depth": 1}
    copy = with_config(core, spec, 2, opts)
    assert opts == {}  # popped
    assert (copy.config.max_depth, copy.config.k) == (1, 2)
    assert core.config.max_depth != 1 and copy.index is core.index
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
def test_first_score_and_checked_score() -> None:
    meta = {"score": "high", "relevance_score": True, "x": 2, "y": 0.5}
    assert first_score(meta, ("score", "relevance_score", "x", "y")) == 2.0
    assert first_score(meta, ("missing",)) is None
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


# ====================================================================== schema labels
def test_llm_labels_and_schema_triples() -> None:
    schema = Schema(name="s", entities=(EntityType(name="person"), EntityType(name="city")),
                    relations=(RelationType(name="born in", head=("person",), tail=("city",)),
                               RelationType(name="knows")))
    assert llm_label("born in") == "BORN_IN"
    assert schema_triples(schema) == [
        ("PERSON", "BORN_IN", "CITY"),
        ("PERSON", "KNOWS", "PERSON"), ("PERSON", "KNOWS", "CITY"),
        ("CITY", "KNOWS", "PERSON"), ("CITY", "KNOWS", "CITY"),
    ]


def test_permissive_schema() -> None:
    s = permissive_schema(["PERSON", "Person", "", "CITY"], ["BORN_IN", "born in"],
                          name="seen", where="x")
    assert s.name == "seen"
    assert [e.name for e in s.entities] == ["PERSON", "CITY"]  # first spelling of each key
    assert [r.name for r in s.relations] == ["BORN_IN"] and s.relations[0].head == ()
    with pytest.raises(ConfigError, match="no typed entities found in the nodes"):
        permissive_schema([""], [], name="n", where="the nodes")


# ====================================================================== prompts, documents
def test_attr_owner_and_to_core_template() -> None:
    root = SimpleNamespace(decomposer=SimpleNamespace(prompt="P"))
    owner, attr = attr_owner(root, "decomposer.prompt")
    assert owner is root.decomposer and attr == "prompt"
    assert attr_owner(root, "decomposer") == (root, "decomposer")
    names = {"query_str": "query", "context_str": "paths"}
    assert to_core_template("Q {query_str} P {paths}", names, "qa") == "Q {query} P {paths}"
    with pytest.raises(ConfigError, match=r"qa must use.*missing \['paths'\]"):
        to_core_template("Q {query_str}", names, "qa")


def test_from_texts_mixin_calls_from_documents_with_a_list() -> None:
    class R(FromTextsMixin):
        @classmethod
        def from_documents(cls, documents: object, **kw: object) -> tuple[object, object]:
            return documents, kw

    assert R.from_texts(iter(["a", "b"]), k=1) == (["a", "b"], {"k": 1})


# ====================================================================== property graphs
def test_property_graph_reader_builds_in_order_with_provenance() -> None:
    r = PropertyGraphReader()
    r.chunks["c1"] = ("Curie lived in Paris.", {"file": "x"})
    r.entity("Marie Curie", "Marie Curie", "PERSON", {"triplet_source_id": "c0",
                                                      "age": 66, "description": "chemist"})
    r.entity("Paris", "Paris", "entity", {"kgpath_id": "paris", "kgpath_provenance": ["c1"]})
    r.relation("Marie Curie", "Paris", "LIVED_IN", {"weight": 2, "triplet_source_id": "c1",
                                                    "since": 1891})
    r.relation("c1", "Marie Curie", "MENTIONS", {})  # a chunk end: a mention
    r.relation("Marie Curie", "Nowhere", "X", {})  # dangling: skipped
    g = r.build(include_chunks=True, embeddings=False)
    curie, paris = g.node("Marie Curie"), g.node("paris")
    assert (curie.type, curie.text, dict(curie.metadata)) == ("PERSON", "chemist", {"age": 66})
    # its own source, then the chunks that mention it, then its relations' sources
    assert list(curie.provenance) == ["c0", "c1"]
    assert paris.type is None and list(paris.provenance) == ["c1"]  # exact: kgpath wrote it
    (edge,) = g.edges
    assert (edge.source, edge.target, edge.relation, edge.weight) == (
        "Marie Curie", "paris", "LIVED_IN", 2.0)
    assert dict(edge.metadata) == {"since": 1891} and list(edge.provenance) == ["c1"]
    assert list(g.passages) == ["c1"]
    bare = r.build(include_chunks=False, embeddings=False)
    assert not bare.passages and not bare.node("Marie Curie").provenance


def test_entity_names_and_properties_round_trip() -> None:
    g = KnowledgeGraph()
    g.add_passage("p", "text")
    g.add_node("1", name="Paris", text="capital", provenance=["p"], metadata={"k": 1})
    g.add_node("2", name="Paris")
    g.add_node("3", name="Lyon")
    g.add_edge("1", "3", relation="near", text="close", weight=0.5, provenance=["p"])
    names = entity_names(g)
    assert names == {"1": "1", "2": "2", "3": "Lyon"}  # "Paris" is not unique
    props = entity_properties(g.node("1"), names["1"])
    assert props == {"k": 1, "kgpath_id": "1", "kgpath_name": "Paris",
                     "description": "capital", "kgpath_provenance": ["p"],
                     "triplet_source_id": "p"}
    assert entity_properties(g.node("3"), "Lyon") == {"kgpath_id": "3"}
    (edge,) = g.edges
    assert relation_properties(edge) == {"weight": 0.5, "description": "close",
                                         "kgpath_provenance": ["p"], "triplet_source_id": "p"}
