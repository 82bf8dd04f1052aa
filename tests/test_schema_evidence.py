"""SchemaResult.evidence: the evidence contract of schema-guided retrieval, by hand."""

from __future__ import annotations

import math

import pytest

from kgpath import KnowledgeGraph
from kgpath.errors import ConfigError
from kgpath.evidence import Evidence, trace_vocabulary
from kgpath.ingest.schema import AttributeType, EntityType, RelationType, Schema
from kgpath.methods.schema import (
    DecompositionPlan,
    EvidenceItem,
    SchemaGuidedRetriever,
    SchemaResult,
    SchemaRetrieverConfig,
)

S19 = math.sqrt(0.19)


def schema() -> Schema:
    return Schema(
        name="t",
        entities=[EntityType(name="Person"), EntityType(name="Award"), EntityType(name="Place")],
        relations=[RelationType(name="received", head=("Person",), tail=("Award",)),
                   RelationType(name="born in", head=("Person",), tail=("Place",))],
        attributes=[AttributeType(name="year", entities=("Award",))],
    )


@pytest.fixture
def curie(table_embedder):
    """cos("q award", .): City 0.9, Prize 0.8, Medal 0.6, Curie 0.0."""
    g = KnowledgeGraph()
    g.add_passage("p1", "Curie was born in the City.", metadata={"title": "birth"})
    g.add_passage("p2", "Curie received the Prize and the Medal.")
    g.add_node("prize", name="Prize", type="Award", provenance=("p2",))
    g.add_node("city", name="City", type="Place", provenance=("p1",))
    g.add_node("medal", name="Medal", type="Award", provenance=("p2",))
    g.add_node("curie", name="Curie", type="Person", provenance=("p1", "p2"))
    g.add_edge("curie", "prize", relation="received", provenance=("p2",))
    g.add_edge("curie", "medal", relation="received", provenance=("p2",))
    g.add_edge("curie", "city", relation="born in", provenance=("p1",))
    emb = table_embedder({
        "Prize": [0.8, 0.6, 0.0], "City": [0.9, S19, 0.0], "Medal": [0.6, 0.8, 0.0],
        "Curie": [0.0, 1.0, 0.0], "q award": [1.0, 0.0, 0.0],
    })
    return SchemaGuidedRetriever(g, schema=schema(), embedder=emb)


def plan(types):
    return DecompositionPlan.from_questions("q award", ["q award"], types, schema=schema())


def rows(evidence):
    return [(e.rank, e.kind, e.id, round(e.score, 6)) for e in evidence]


def test_native_is_nodes_then_triples_then_passages(curie):
    res = curie.retrieve("q award", plan=plan({"nodes": ["Award"]}), k=2)
    ev = res.evidence(output="native")
    # filter keeps prize 0.8, medal 0.6; triples = mean of end cosines (0.8+0)/2, (0.6+0)/2;
    # passage p2 is cited by prize (0.8), medal and both triples -> scored 0.8
    assert rows(ev) == [
        (1, "node", "prize", 0.8), (2, "node", "medal", 0.6),
        (3, "triple", "curie|received|prize", 0.4), (4, "triple", "curie|received|medal", 0.3),
        (5, "passage", "p2", 0.8),
    ]
    assert all(e.method == "schema" and isinstance(e.score, float) for e in ev)
    assert ev[0].trace == {"sub_questions": [0], "schema_type": "Award", "type_affinity": 1.0,
                           "node_id": "prize", "passage_ids": ["p2"]}
    assert ev[0].text == "Prize"
    # no relation in the plan -> no triple type indicator
    assert ev[2].trace == {"sub_questions": [0], "schema_type": "received",
                           "type_affinity": None, "triple": "Curie received Prize",
                           "passage_ids": ["p2"]}
    assert ev[2].text == "Curie -[received]-> Prize"
    assert ev[4].trace == {"sub_questions": [0]}
    assert ev[4].text == "Curie received the Prize and the Medal."
    assert set().union(*(e.trace for e in ev)) <= set(trace_vocabulary())


def test_passages_scored_first_then_provenance_of_ranked_items(curie):
    res = curie.retrieve("q award", plan=plan({}), k=4, k_passages=1)
    # no types: nodes city 0.9, prize 0.8, medal 0.6, curie 0.0; triples born in 0.45,
    # received prize 0.4, received medal 0.3; the typed retrieval scored p1 (city, 0.9) only.
    assert [p.key for p in res.passages] == ["p1"]
    ev = res.evidence()
    # p1 as scored; then provenance, best source first: city -> p1 (listed), prize -> p2
    assert rows(ev) == [(1, "passage", "p1", 0.9), (2, "passage", "p2", 0.8)]
    p1, p2 = ev
    assert p1.text == "Curie was born in the City." and p1.source_metadata == {"title": "birth"}
    assert p1.trace == {"sub_questions": [0],
                        "supporting": ["city", "curie|born in|city", "curie"]}
    # p2 inherits the trace of its best source (node prize) and lists every citing item
    assert p2.trace["node_id"] == "prize" and p2.trace["schema_type"] == "Award"
    assert p2.trace["supporting"] == ["prize", "medal", "curie|received|prize",
                                      "curie|received|medal", "curie"]
    assert [e.id for e in res.evidence("passages", k=1)] == ["p1"]
    meta = p2.metadata()
    assert meta["kgpath_method"] == "schema" and meta["kgpath_rank"] == 2
    assert meta["kgpath_kind"] == "passage" and meta["kgpath_score"] == pytest.approx(0.8)


@pytest.fixture
def ordered(table_embedder):
    """A 0.9 (cites pa), C 0.5 (cites nothing), B 0.1 (cites pb); edge A->C cites pe."""
    g = KnowledgeGraph()
    for pid in ("pa", "pb", "pe"):
        g.add_passage(pid, f"text of {pid}")
    g.add_node("a", name="A", type="Person", provenance=("pa",))
    g.add_node("b", name="B", type="Award", provenance=("pb",))
    g.add_node("c", name="C", type="Award")
    g.add_edge("a", "c", relation="received", provenance=("pe",))
    emb = table_embedder({
        "A": [0.9, S19, 0.0], "B": [0.1, math.sqrt(0.99), 0.0], "C": [0.5, math.sqrt(0.75), 0.0],
        "q award": [1.0, 0.0, 0.0],
    })
    cfg = SchemaRetrieverConfig(k=3, k_passages=0, type_mode="off")
    return SchemaGuidedRetriever(g, schema=schema(), embedder=emb, config=cfg)


def test_sources_ranked_by_score_across_nodes_and_triples(ordered):
    res = ordered.retrieve("q award", plan=plan({}))
    # nodes a 0.9, c 0.5, b 0.1; triple a->c (0.9 + 0.5) / 2 = 0.7; no scored passage
    assert rows(res.evidence("native")) == [
        (1, "node", "a", 0.9), (2, "node", "c", 0.5), (3, "node", "b", 0.1),
        (4, "triple", "a|received|c", 0.7)]
    # by score: a (pa), a->c (pe), c (no provenance: stays a node), b (pb)
    ev = res.evidence()
    assert rows(ev) == [(1, "passage", "pa", 0.9), (2, "passage", "pe", 0.7),
                        (3, "node", "c", 0.5), (4, "passage", "pb", 0.1)]
    assert ev[1].trace["triple"] == "A received C" and ev[1].trace["supporting"] == [
        "a|received|c"]
    assert ev[2].trace["passage_ids"] == []
    assert rows(res.evidence(k=2)) == rows(ev)[:2]


def test_result_iteration_and_items_unchanged(curie):
    res = curie.retrieve("q award", plan=plan({"nodes": ["Award"]}), k=2)
    assert res.graph is curie.graph
    assert res.items == res.nodes + res.triples + res.passages
    assert all(isinstance(it, EvidenceItem) for it in res.items)
    assert [it.key for it in res] == ["prize", "medal"]


def test_without_graph_and_bad_arguments():
    items = dict(sub_questions=(0,))
    res = SchemaResult(
        question="q", plan=plan({}), sub_results=(),
        nodes=(EvidenceItem(kind="node", key="x", text="X", score=0.2, **items),),
        triples=(EvidenceItem(kind="triple", key="x|r|y", text="X r Y", score=0.5, **items),),
        passages=(EvidenceItem(kind="passage", key="p", text="P", score=0.2, **items),),
        config=SchemaRetrieverConfig(),
    )
    # no graph: scored passages, then the nodes and triples themselves by score
    assert rows(res.evidence()) == [(1, "passage", "p", 0.2), (2, "triple", "x|r|y", 0.5),
                                    (3, "node", "x", 0.2)]
    assert res.evidence("native")[1].trace["triple"] == "x r y"
    with pytest.raises(ConfigError, match="output"):
        res.evidence(output="nodes")
    with pytest.raises(ConfigError, match="k must be"):
        res.evidence(k=0)
    assert all(isinstance(e, Evidence) for e in res.evidence("native"))
