"""Schema-bounded extraction: LLM path with a scripted model, LLM-free pattern path, evolution."""

from __future__ import annotations

import json
import logging

import pytest

from kgpath import KnowledgeGraph, ScriptedLLM
from kgpath.errors import ConfigError, GraphError, ParseError
from kgpath.ingest.extract import (
    ExtractionConfig,
    PatternExtractor,
    SchemaExtractor,
    TypedEntity,
    TypedTriple,
    assemble_graph,
    normalize_passages,
    parse_extraction,
)
from kgpath.ingest.schema import AttributeType, EntityType, EvolutionPolicy, Schema


def schema() -> Schema:
    return Schema(
        entities=[EntityType(name="Person", aliases=("scientist",)), "Element", "Award", "Place"],
        relations=[("Person", "discovered", "Element"), ("Person", "received", "Award"),
                   ("Person", "born in", "Place")],
        attributes=[AttributeType(name="year", entities=("Award",))],
    )


PASSAGES = {
    "p1": "Marie Curie discovered radium. She was born in Warsaw.",
    "p2": "Marie Curie received the Nobel Prize in 1911.",
}


def reply(entities=(), triples=(), proposals=()):
    return json.dumps({"entities": list(entities), "triples": list(triples),
                       "proposals": list(proposals)})


def T(h, ht, r, t, tt, conf=1.0):  # noqa: N802
    return {"head": h, "head_type": ht, "relation": r, "tail": t, "tail_type": tt,
            "confidence": conf}


def scripted_by_passage(replies: dict[str, str]) -> ScriptedLLM:
    def fn(prompt: str) -> str:
        for key, rep in replies.items():
            if key in prompt:
                return rep
        raise AssertionError(f"unexpected prompt {prompt[-80:]!r}")
    return ScriptedLLM(fn)


def test_llm_extraction_keeps_schema_types_and_provenance_and_drops_off_schema():
    llm = scripted_by_passage({
        "discovered radium": reply(
            entities=[{"name": "Marie Curie", "type": "scientist", "description": "physicist"}],
            triples=[T("Marie Curie", "Person", "discovered", "radium", "Element"),
                     T("Marie Curie", "Person", "born in", "Warsaw", "Place"),
                     T("Marie Curie", "Person", "ate", "bread", "Food"),          # off-schema
                     T("radium", "Element", "discovered", "Marie Curie", "Person")],  # bad ends
        ),
        "Nobel Prize in 1911": reply(
            entities=[{"name": "Nobel Prize in Chemistry", "type": "award",
                       "attributes": {"year": 1911, "colour": "gold"}}],
            triples=[T("marie curie", "person", "RECEIVED", "Nobel Prize in Chemistry", "Award")],
        ),
    })
    res = SchemaExtractor(schema(), llm).extract(PASSAGES)
    g = res.graph
    assert len(llm.prompts) == 2 and all("Entity types:" in p for p in llm.prompts)
    assert sorted(n.id for n in g.nodes) == [
        "Marie Curie", "Nobel Prize in Chemistry", "Warsaw", "radium"]
    curie = g.node("Marie Curie")
    assert curie.type == "Person" and curie.metadata["schema_type"] == "Person"
    assert curie.provenance == ("p1", "p2")  # both passages mention her (case-folded merge)
    assert curie.text == "physicist"
    prize = g.node("Nobel Prize in Chemistry")
    assert prize.metadata["attributes"] == {"year": 1911}
    assert prize.provenance == ("p2",)
    edges = {(e.source, e.relation, e.target): e for e in g.edges}
    assert set(edges) == {("Marie Curie", "discovered", "radium"),
                          ("Marie Curie", "born in", "Warsaw"),
                          ("Marie Curie", "received", "Nobel Prize in Chemistry")}
    e = edges[("Marie Curie", "received", "Nobel Prize in Chemistry")]
    assert e.type == "received" and e.metadata["schema_type"] == "received"
    assert e.provenance == ("p2",)
    reasons = sorted(r.reason for r in res.rejected)
    assert reasons == [
        "attribute 'colour' is not allowed on type 'Award'",
        "relation 'discovered' does not allow head type 'Element' (allowed: ['Person'])",
        "tail type 'Food' is not in the schema",
    ]
    assert set(g.passages) == {"p1", "p2"}
    assert res.evolution is None and res.trace["evolution"] == "off"


def test_non_strict_keeps_off_schema_items_marked():
    llm = ScriptedLLM([reply(triples=[T("A", "Person", "ate", "B", "Food")])])
    res = SchemaExtractor(schema(), llm, config=ExtractionConfig(strict=False)).extract(["text"])
    [e] = res.graph.edges
    assert e.type is None and e.metadata["schema_type"] is None
    assert e.metadata["off_schema"] == "tail type 'Food' is not in the schema"
    assert res.graph.node("A").type == "Person"
    assert res.rejected == ()


@pytest.mark.parametrize(
    "text",
    [
        "```json\n" + reply(triples=[T("A", "Person", "discovered", "X", "Element")]) + "\n```",
        'Sure! {"triples": [["A", "Person", "discovered", "X", "Element"],],}',
        '[{"subject": "A", "subject_type": "Person", "predicate": "discovered", "object": "X",'
        ' "object_type": "Element"}]',
        '{"entities": [{"name": "A", "type": "Person"}, {"name": "X", "type": "Element"}],'
        ' "triples": [["A", "discovered", "X"]]}',
    ],
)
def test_parse_variants_give_the_same_triple(text):
    pe = parse_extraction(text, "p9")
    [t] = pe.triples
    assert (t.head, t.head_type, t.relation, t.tail, t.tail_type, t.source) == (
        "A", "Person", "discovered", "X", "Element", "p9")


def test_parse_notes_bad_items_and_caps():
    text = json.dumps({
        "triples": [T("A", "Person", "discovered", f"X{i}", "Element", conf="high")
                    for i in range(3)] + ["junk", {"head": "A"}],
        "entities": "nope", "extra": 1,
        "proposals": [{"kind": "class", "name": "Q"}],
    })
    pe = parse_extraction(text, "p", max_triples=2)
    assert len(pe.triples) == 2 and pe.triples[0].confidence == 1.0
    notes = " | ".join(pe.notes)
    for needle in ("extra key", "entities is not a list", "unknown shape", "lacks a head",
                   "beyond max_triples", "proposal #0 ignored", "not a number"):
        assert needle in notes
    with pytest.raises(ParseError):
        parse_extraction("no json here", "p")


def test_unparsable_reply_skipped_and_recorded_or_raised(caplog):
    llm = ScriptedLLM(["this is not json"])
    with caplog.at_level(logging.WARNING, logger="kgpath.extract"):
        res = SchemaExtractor(schema(), llm).extract({"p1": "x"})
    assert res.trace["parse_failures"] == ["p1"] and len(res.graph) == 0
    assert "p1" in caplog.text
    strict = SchemaExtractor(schema(), ScriptedLLM(["nope"]),
                             config=ExtractionConfig(on_parse_error="raise"))
    with pytest.raises(ParseError, match="passage 'p1'"):
        strict.extract({"p1": "x"})


def test_evolution_off_by_default_and_adopts_above_threshold():
    def rep(i):
        return reply(
            triples=[T(f"Person{i}", "Person", "discovered", f"Iso{i}", "Isotope", 0.9),
                     T(f"Person{i}", "Person", "discovered", f"El{i}", "Element")],
            proposals=[{"kind": "entity", "name": "Isotope", "confidence": 0.9},
                       {"kind": "entity", "name": "Comet", "confidence": 0.95}] if i == 0 else [],
        )
    passages = {f"p{i}": f"passage {i}" for i in range(3)}
    # default: schema fixed, isotope triples rejected, no proposal considered
    llm = scripted_by_passage({f"passage {i}": rep(i) for i in range(3)})
    res = SchemaExtractor(schema(), llm).extract(passages)
    assert res.schema is not None and res.schema.resolve("entity", "Isotope") is None
    assert len(res.triples) == 3 and res.graph.num_edges == 3
    # with a policy: Isotope has 3 supporting passages (1 explicit + implicit votes);
    # the relation discovered: Person -> Isotope is still disallowed by the schema, so those
    # triples stay rejected - evolution adds types, it never loosens existing relations
    llm = scripted_by_passage({f"passage {i}": rep(i) for i in range(3)})
    cfg = ExtractionConfig(evolution=EvolutionPolicy(min_support=3, min_confidence=0.8))
    res = SchemaExtractor(schema(), llm, config=cfg).extract(passages)
    assert [c.name for c in res.evolution.adopted] == ["Isotope"]
    assert {c.name: c.reason for c in res.evolution.rejected} == {
        "Comet": "support 1 < min_support 3"}
    assert res.schema.version == 2 and res.trace["seed_schema_version"] == 1
    assert "may suggest" in llm.prompts[0]  # the evolution note is in the prompt
    assert all("does not allow tail type 'Isotope'" in r.reason for r in res.rejected)


def test_evolution_adopts_new_relation_and_readmits_its_triples():
    def rep(i):
        return reply(triples=[T(f"P{i}", "Person", "studied", f"Place{i}", "Place", 0.9)])
    llm = ScriptedLLM([rep(i) for i in range(3)])
    cfg = ExtractionConfig(evolution=EvolutionPolicy(min_support=3), max_concurrency=1)
    res = SchemaExtractor(schema(), llm, config=cfg).extract([f"t{i}" for i in range(3)])
    assert [c.name for c in res.evolution.adopted] == ["studied"]
    assert res.schema.allows("Person", "studied", "Place")
    assert res.graph.num_edges == 3 and res.rejected == ()
    assert {e.type for e in res.graph.edges} == {"studied"}
    # with only two passages the same relation is rejected and its triples stay out
    llm = ScriptedLLM([rep(i) for i in range(2)])
    res = SchemaExtractor(schema(), llm, config=cfg).extract([f"t{i}" for i in range(2)])
    assert res.evolution.adopted == () and res.graph.num_edges == 0
    assert res.schema.history[-1].reason == "support 2 < min_support 3"


async def test_async_extraction_matches_sync():
    def fn(prompt):
        if "radium" in prompt:
            return reply(triples=[T("Marie Curie", "Person", "discovered", "radium", "Element")])
        return reply(triples=[T("Marie Curie", "Person", "received", "Nobel", "Award")])
    sync = SchemaExtractor(schema(), ScriptedLLM(fn)).extract(PASSAGES)
    asy = await SchemaExtractor(schema(), ScriptedLLM(fn)).aextract(PASSAGES)
    assert [(e.source, e.relation, e.target, e.provenance) for e in sync.graph.edges] == [
        (e.source, e.relation, e.target, e.provenance) for e in asy.graph.edges]


def test_pattern_extractor_llm_free():
    gaz = {"Marie Curie": "Person", "Pierre Curie": "Person", "radium": "Element",
           "polonium": "Element", "Warsaw": "Place"}
    text = {"p1": "Marie Curie discovered polonium and radium; Pierre Curie was born in Warsaw.",
            "p2": "Radium discovered Marie Curie."}
    res = PatternExtractor(schema(), gaz).extract(text)
    got = sorted((t.head, t.relation, t.tail, t.source) for t in res.triples)
    # second passage: head/tail types do not fit 'discovered' (Element -> Person): no triple
    assert got == [
        ("Marie Curie", "discovered", "polonium", "p1"),
        ("Marie Curie", "discovered", "radium", "p1"),
        ("Pierre Curie", "born in", "Warsaw", "p1"),
    ]
    assert res.graph.node("radium").provenance == ("p1", "p2")


def test_pattern_extractor_from_graph_gazetteer():
    g = KnowledgeGraph()
    g.add_node("mc", name="Marie Curie", type="Person")
    g.add_node("ra", name="radium", type="Element")
    g.add_node("zz", name="zebra", type="Animal")  # not in the schema: ignored
    ex = PatternExtractor(schema(), g)
    assert ex.gazetteer == {"Marie Curie": "Person", "radium": "Element"}
    with pytest.raises(ConfigError):
        PatternExtractor(schema(), ["Marie Curie"])  # type: ignore[arg-type]


def test_assemble_graph_extends_existing_graph_and_reports_conflicts():
    g = KnowledgeGraph()
    g.add_passage("p0", "old")
    g.add_node("Marie Curie", type="Person", provenance=("p0",), metadata={"schema_type": "Person"})
    res = assemble_graph(
        schema(),
        [TypedEntity(name="marie curie", type="Place", source="p1")],  # conflicting type
        [TypedTriple(head="Marie Curie", head_type="Person", relation="discovered",
                     tail="radium", tail_type="Element", source="p1")],
        passages={"p1": "new"}, graph=g,
    )
    assert res.graph is g
    assert g.node("Marie Curie").provenance == ("p0", "p1")
    assert g.node("Marie Curie").type == "Person"
    assert res.trace["type_conflicts"] == [
        {"node": "Marie Curie", "kept": "Person", "ignored": "Place", "source": "p1"}]
    assert set(g.passages) == {"p0", "p1"}


def test_bad_inputs():
    with pytest.raises(ConfigError, match="needs an LLM"):
        SchemaExtractor(schema(), None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="Schema"):
        SchemaExtractor({"entities": []}, ScriptedLLM([]))  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        ExtractionConfig(max_triples_per_passage=0)
    with pytest.raises(ConfigError):
        ExtractionConfig(on_parse_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(GraphError, match="duplicate passage id"):
        normalize_passages([("a", "x"), ("a", "y")])
    with pytest.raises(GraphError, match="single string"):
        normalize_passages("text")  # type: ignore[arg-type]
    assert normalize_passages(["x", "y"]) == [("p0", "x"), ("p1", "y")]


# ---------------------------------------------------------------------- one protocol
def _graph_view(g: KnowledgeGraph) -> tuple[list, list]:
    nodes = [(n.id, n.name, n.text, n.type, dict(n.metadata), n.provenance) for n in g.nodes]
    edges = [(e.source, e.relation, e.target, e.text, e.type, e.weight, dict(e.metadata),
              e.provenance) for e in g.edges]
    return nodes, edges


def _full_reply_llm() -> ScriptedLLM:
    return scripted_by_passage({
        "discovered radium": reply(
            entities=[{"name": "Marie Curie", "type": "scientist", "description": "physicist"}],
            triples=[T("Marie Curie", "Person", "discovered", "radium", "Element"),
                     T("Marie Curie", "Person", "born in", "Warsaw", "Place"),
                     T("Marie Curie", "Person", "ate", "bread", "Food")],
        ),
        "Nobel Prize in 1911": reply(
            triples=[T("marie curie", "person", "RECEIVED", "Nobel Prize", "Award")],
        ),
    })


def test_schema_extractor_through_graph_from_documents_gives_its_own_graph():
    from kgpath.ingest import Extractor, graph_from_documents, ingest_documents

    own = SchemaExtractor(schema(), _full_reply_llm()).extract(PASSAGES).graph
    ex = SchemaExtractor(schema(), _full_reply_llm())
    assert isinstance(ex, Extractor) and ex.name == "schema"
    g = graph_from_documents(list(PASSAGES.items()), extractor=ex)
    assert _graph_view(g) == _graph_view(own)
    assert set(g.passages) == set(own.passages) == {"p1", "p2"}
    # the ingest path adds the chunking metadata to passages; the nodes and edges are equal
    assert g.passage("p1").metadata == {"doc_id": "p1", "chunk_index": 0}
    report = ingest_documents(KnowledgeGraph(), list(PASSAGES.items()),
                              extractor=SchemaExtractor(schema(), _full_reply_llm()))
    assert (report.nodes_new, report.edges_added) == (4, 3)
    assert report.notes == ["1 item(s) rejected by the schema"]


async def test_schema_family_async_ingest_matches_sync():
    from kgpath.ingest import agraph_from_documents, graph_from_documents

    docs = list(PASSAGES.items())
    cfg = ExtractionConfig(evolution=EvolutionPolicy(min_support=1, min_confidence=0.0))
    s = graph_from_documents(docs, extractor=SchemaExtractor(schema(), _full_reply_llm(),
                                                             config=cfg))
    a = await agraph_from_documents(docs, extractor=SchemaExtractor(schema(), _full_reply_llm(),
                                                                    config=cfg))
    assert _graph_view(a) == _graph_view(s)
    assert "bread" in s  # evolution adopted "Food" on the ingest path too


def test_pattern_extractor_through_graph_from_documents_gives_its_own_graph():
    from kgpath.ingest import graph_from_documents

    gaz = {"Marie Curie": "Person", "radium": "Element", "Warsaw": "Place"}
    text = {"p1": "Marie Curie discovered radium. Marie Curie was born in Warsaw."}
    own = PatternExtractor(schema(), gaz).extract(text).graph
    ex = PatternExtractor(schema(), gaz)
    assert ex.name == "pattern"
    g = graph_from_documents(list(text.items()), extractor=ex)
    assert _graph_view(g) == _graph_view(own) and g.num_edges == 2


def test_pattern_extractor_reads_punctuation_pieces_not_sentences():
    # "Dr." ends a piece for the pattern extractor (split_at_punctuation) although
    # split_sentences keeps "Dr. Bohr ..." whole: the cue "discovered" after the break has
    # no head before it in its piece, so no triple (pinned: its results depend on it)
    gaz = {"Marie Curie": "Person", "radium": "Element"}
    res = PatternExtractor(schema(), gaz).extract({"p": "Marie Curie met Dr. discovered radium"})
    assert res.triples == ()
    res = PatternExtractor(schema(), gaz).extract({"p": "Marie Curie met Mr discovered radium"})
    assert [(t.head, t.tail) for t in res.triples] == [("Marie Curie", "radium")]
