"""Schema data model: validation, lookup, persistence, evolution with thresholds and history."""

from __future__ import annotations

import json
import logging

import pytest

from kgpath.errors import ConfigError, KgpathError, PersistenceError
from kgpath.ingest.schema import (
    AttributeType,
    EntityType,
    EvolutionPolicy,
    RelationType,
    Schema,
    SchemaError,
    TypeProposal,
    aggregate_proposals,
    evolve_schema,
    type_key,
)


def small_schema() -> Schema:
    return Schema(
        name="s",
        entities=[EntityType(name="Person", aliases=("scientist",)), "Element", "Award"],
        relations=[
            RelationType(name="discovered", head=("Person",), tail=("Element",),
                         aliases=("found",)),
            ("Person", "received", "Award"),
        ],
        attributes=[AttributeType(name="year", entities=("Award",))],
    )


# ---------------------------------------------------------------- validation / bad input
def test_relation_naming_unknown_type_is_rejected_with_the_name():
    with pytest.raises(SchemaError, match=r"relation type 'discovered' names unknown tail type "
                                          r"'Elemnt'"):
        Schema(entities=["Person", "Element"], relations=[("Person", "discovered", "Elemnt")])


def test_attribute_naming_unknown_type_is_rejected():
    msg = "attribute type 'year' names unknown entity type 'Prize'"
    with pytest.raises(SchemaError, match=msg):
        Schema(entities=["Award"], attributes=[AttributeType(name="year", entities=("Prize",))])


@pytest.mark.parametrize("entities", [[], ()])
def test_empty_schema_is_rejected(entities):
    with pytest.raises(SchemaError, match="empty"):
        Schema(entities=entities)
    with pytest.raises(SchemaError, match="empty"):
        Schema.from_dict({"entities": []})
    with pytest.raises(SchemaError, match="empty"):
        Schema.from_dict({})


def test_schema_error_is_a_config_error_and_kgpath_error():
    assert issubclass(SchemaError, ConfigError)
    assert issubclass(SchemaError, KgpathError)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"entities": ["Person", "person"]}, "duplicate entity type"),
        ({"entities": [EntityType(name="A", aliases=("x",)), EntityType(name="B", aliases=("X",))]},
         "alias 'X' is already used by entity type 'A'"),
        ({"entities": [""]}, "non-empty string"),
        ({"entities": "Person"}, "must be a list"),
        ({"entities": ["Person"], "relations": [42]}, "cannot read a relation type"),
        ({"entities": ["Person"], "version": 0}, "version"),
    ],
)
def test_malformed_schemas(kwargs, match):
    with pytest.raises(SchemaError, match=match):
        Schema(**kwargs)


def test_from_dict_rejects_unknown_keys_and_newer_format():
    with pytest.raises(SchemaError, match="unknown schema key"):
        Schema.from_dict({"entities": ["A"], "entity_types": []})
    with pytest.raises(SchemaError, match="format_version 99"):
        Schema.from_dict({"entities": ["A"], "format_version": 99})


# ---------------------------------------------------------------- lookup
def test_resolution_is_case_space_and_alias_insensitive():
    s = small_schema()
    assert s.resolve("entity", "SCIENTIST") == "Person"
    assert s.resolve("entity", "  person ") == "Person"
    assert s.resolve("relation", "Found") == "discovered"
    assert s.resolve("relation", "discovered_by") is None
    assert type_key("Nobel_Prize - x") == "nobel prize x"
    assert s.resolve("entity", 3) is None  # type: ignore[arg-type]


def test_check_triple_reasons():
    s = small_schema()
    ok = (("Person", "discovered", "Element"), "")
    assert s.check_triple("scientist", "found", "element") == ok
    assert s.check_triple("Person", "discovered", "Award")[1] == (
        "relation 'discovered' does not allow tail type 'Award' (allowed: ['Element'])"
    )
    assert "head type 'Robot'" in s.check_triple("Robot", "discovered", "Element")[1]
    assert "relation 'ate'" in s.check_triple("Person", "ate", "Element")[1]
    assert s.allows("Person", "received", "Award")
    assert not s.allows("Award", "received", "Person")


def test_attribute_allowed_only_on_declared_types():
    s = small_schema()
    assert s.attribute_allowed("Award", "YEAR") == "year"
    assert s.attribute_allowed("Person", "year") is None


def test_relation_with_empty_ends_allows_any_type():
    s = Schema(entities=["A", "B"], relations=["related to"])
    assert s.allows("A", "related to", "B") and s.allows("B", "related to", "A")


def test_head_tail_written_as_alias_are_canonicalised():
    s = Schema(entities=[EntityType(name="Person", aliases=("human",))],
               relations=[("human", "knows", "PERSON")])
    assert s.relations[0].head == ("Person",) and s.relations[0].tail == ("Person",)


def test_describe_mentions_every_type_and_allowed_ends():
    text = small_schema().describe()
    for needle in ("Person", "Element", "Award", "discovered: Person -> Element",
                   "received: Person -> Award", "year (on Award)", "also: scientist"):
        assert needle in text


# ---------------------------------------------------------------- persistence
def test_json_round_trip(tmp_path):
    s = small_schema()
    s.save(tmp_path / "schema.json")
    back = Schema.load(tmp_path / "schema.json")
    assert back == s
    data = json.loads((tmp_path / "schema.json").read_text())
    assert data["format_version"] == 1 and data["format"] == "kgpath.Schema"


def test_yaml_round_trip(tmp_path):
    pytest.importorskip("yaml")
    s = small_schema()
    s.save(tmp_path / "schema.yaml")
    assert "entities:" in (tmp_path / "schema.yaml").read_text()
    assert Schema.load(tmp_path / "schema.yaml") == s


def test_hand_written_dict_forms():
    s = Schema.from_dict({
        "entities": {"Person": "a human", "Place": ""},
        "relations": [["Person", "born in", "Place"]],
    })
    assert s.entities[0].description == "a human"
    assert s.allows("Person", "born in", "Place")


def test_load_errors(tmp_path):
    with pytest.raises(PersistenceError, match="does not exist"):
        Schema.load(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(PersistenceError, match="not valid JSON"):
        Schema.load(bad)
    lst = tmp_path / "list.json"
    lst.write_text("[1, 2]")
    with pytest.raises(PersistenceError, match="does not hold a mapping"):
        Schema.load(lst)


# ---------------------------------------------------------------- evolution
def P(kind, name, source, confidence=0.9, **kw):  # noqa: N802 - short test helper
    return TypeProposal(kind=kind, name=name, source=source, confidence=confidence, **kw)


def test_aggregation_counts_distinct_sources_and_averages_confidence():
    agg = aggregate_proposals([
        P("entity", "Isotope", "p1", 1.0),
        P("entity", "isotope", "p1", 0.6),   # same passage: support stays 1 for p1
        P("entity", "ISOTOPE", "p2", 0.8),
        P("entity", "Isotope", "", 0.4),     # anonymous: counts once
    ])
    assert len(agg) == 1
    a = agg[0]
    assert a.name == "Isotope" and a.support == 3
    assert a.confidence == pytest.approx((1.0 + 0.6 + 0.8 + 0.4) / 4)
    assert a.sources == ("p1", "p2")


def test_below_threshold_rejected_and_logged_above_adopted(caplog):
    s = small_schema()
    props = (
        [P("entity", "Isotope", f"p{i}", 0.9) for i in range(3)]       # support 3, conf 0.9
        + [P("entity", "Laboratory", f"p{i}", 0.95) for i in range(2)]  # support 2 < 3
        + [P("entity", "Rumour", f"p{i}", 0.5) for i in range(5)]       # conf 0.5 < 0.8
    )
    with caplog.at_level(logging.INFO, logger="kgpath.schema"):
        res = evolve_schema(s, props, EvolutionPolicy(min_support=3, min_confidence=0.8))
    assert [c.name for c in res.adopted] == ["Isotope"]
    reasons = {c.name: c.reason for c in res.rejected}
    assert reasons == {
        "Laboratory": "support 2 < min_support 3",
        "Rumour": "confidence 0.500 < min_confidence 0.8",
    }
    new = res.schema
    assert new.resolve("entity", "isotope") == "Isotope"
    assert new.resolve("entity", "Laboratory") is None
    assert new.version == s.version + 1
    # decision order: support descending (Rumour 5, Isotope 3, Laboratory 2)
    assert [(c.action, c.name, c.support) for c in new.history] == [
        ("rejected", "Rumour", 5), ("adopted", "Isotope", 3), ("rejected", "Laboratory", 2),
    ]
    assert all(c.schema_version == 2 for c in new.history)
    logged = caplog.text
    assert "adopted entity type 'Isotope'" in logged
    assert "rejected entity type 'Laboratory'" in logged
    # the seed schema is unchanged (immutable)
    assert s.resolve("entity", "Isotope") is None and s.history == ()


def test_exact_threshold_is_adopted():
    res = evolve_schema(small_schema(), [P("entity", "Isotope", f"p{i}", 0.8) for i in range(3)],
                        EvolutionPolicy(min_support=3, min_confidence=0.8))
    assert [c.name for c in res.adopted] == ["Isotope"]


def test_relation_may_use_entity_type_adopted_in_same_round():
    props = [P("entity", "Isotope", f"p{i}") for i in range(3)] + [
        P("relation", "decays into", f"p{i}", head=("Isotope",), tail=("Element",))
        for i in range(3)
    ] + [P("relation", "orbits", f"p{i}", head=("Planet",), tail=("Element",)) for i in range(3)]
    res = evolve_schema(small_schema(), props, EvolutionPolicy())
    assert {c.name for c in res.adopted} == {"Isotope", "decays into"}
    assert res.schema.allows("Isotope", "decays into", "Element")
    [orbit] = res.rejected
    assert orbit.name == "orbits" and "Planet" in orbit.reason


def test_existing_kind_and_cap_rules():
    props = (
        [P("entity", "scientist", f"p{i}") for i in range(3)]        # alias of Person
        + [P("attribute", "mass", f"p{i}") for i in range(4)]
        + [P("entity", "Isotope", f"p{i}") for i in range(4)]
        + [P("entity", "Mineral", f"p{i}") for i in range(3)]
    )
    res = evolve_schema(small_schema(), props,
                        EvolutionPolicy(kinds=("entity",), max_new_types=1))
    reasons = {c.name: c.reason for c in res.rejected}
    assert [c.name for c in res.adopted] == ["Isotope"]  # best supported wins the single slot
    assert reasons["scientist"] == "entity type 'scientist' is already in the schema"
    assert "may not evolve" in reasons["mass"]
    assert "max_new_types=1" in reasons["Mineral"]


def test_no_adoption_keeps_version_but_logs_history():
    res = evolve_schema(small_schema(), [P("entity", "X", "p1")], EvolutionPolicy())
    assert res.schema.version == 1 and len(res.schema.history) == 1
    assert res.schema.history[0].action == "rejected"


def test_history_saved_and_reloaded(tmp_path):
    s = small_schema()
    s2 = s.evolve([P("entity", "Isotope", f"p{i}") for i in range(3)]
                  + [P("entity", "Moon", "p1")], EvolutionPolicy())
    s3 = s2.evolve([P("relation", "decays into", f"q{i}", head=("Isotope",), tail=("Element",))
                    for i in range(3)], EvolutionPolicy())
    path = tmp_path / "evolved.json"
    s3.save(path)
    back = Schema.load(path)
    assert back == s3
    assert back.version == 3
    assert [(c.action, c.name, c.schema_version) for c in back.history] == [
        ("adopted", "Isotope", 2), ("rejected", "Moon", 2), ("adopted", "decays into", 3),
    ]
    assert back.history[2].details["head"] == ["Isotope"]
    assert back.history[0].details["sources"] == ["p0", "p1", "p2"]


@pytest.mark.parametrize(
    "kwargs", [{"min_support": 0}, {"min_confidence": 1.5}, {"kinds": ("class",)},
               {"max_new_types": -1}, {"min_support": True}],
)
def test_bad_policy(kwargs):
    with pytest.raises(ConfigError):
        EvolutionPolicy(**kwargs)


@pytest.mark.parametrize("kwargs", [{"kind": "class", "name": "x"}, {"kind": "entity", "name": ""},
                                    {"kind": "entity", "name": "x", "confidence": 2}])
def test_bad_proposal(kwargs):
    with pytest.raises(SchemaError):
        TypeProposal(**kwargs)
