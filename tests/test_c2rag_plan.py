"""C2RAG planning: schema validation, repairs, rejections with reasons, the LLM-free fallback."""

from __future__ import annotations

import json

import pytest

from kgpath import (
    BackendError,
    ConfigError,
    HashingEmbedder,
    KnowledgeGraph,
    ParseError,
    ScriptedLLM,
)
from kgpath.methods.c2rag import C2RAGConfig, ConstraintCheckedRetriever
from kgpath.methods.c2rag.fallback import fallback_plan, find_entity_mentions
from kgpath.methods.c2rag.plan import (
    PLAN_SCHEMA,
    Constraint,
    Plan,
    normalize_placeholder,
    parse_plan,
)


def c(h: str, r: str, t: str, v: list[str] | None = None) -> dict:
    return {"head": h, "relation": r, "tail": t, "variants": v if v is not None else ["x"]}


def test_valid_plan_round_trip() -> None:
    reply = json.dumps(
        {
            "placeholders": {"?prison": "prison", "?year": "year"},
            "constraints": [
                c("No Cross, No Crown", "written in", "?prison", ["a", "b", "c"]),
                c("?prison", "prison until", "?year", ["d", "e", "f"]),
            ],
        }
    )
    plan = parse_plan(reply, m=3)
    assert plan.source == "llm" and plan.raw == reply
    assert plan.constraints == (
        Constraint("No Cross, No Crown", "written in", "?prison", ("a", "b", "c")),
        Constraint("?prison", "prison until", "?year", ("d", "e", "f")),
    )
    assert plan.p1 == (0,) and plan.p2 == (1,)
    assert plan.placeholders == {"?prison": "prison", "?year": "year"}
    assert plan.repairs == () and plan.rejected == ()
    # R_i is the relation itself plus up to m variants
    assert plan.constraints[0].relation_set(2) == ("written in", "a", "b")
    # the parsed plan parses again to itself
    assert parse_plan(plan, m=3).constraints == plan.constraints


def test_fenced_reply_with_trailing_comma_is_repaired_by_the_json_parser() -> None:
    reply = '```json\n{"constraints": [{"head": "A", "relation": "r", "tail": "?x", ' \
            '"variants": ["s"],},]}\n```'
    plan = parse_plan(reply)
    assert plan.constraints == (Constraint("A", "r", "?x", ("s",)),)
    assert "placeholders not declared; inferred from the constraints" in plan.repairs
    assert plan.placeholders == {"?x": "x"}


@pytest.mark.parametrize(
    "reply, match",
    [
        ("I cannot help with that.", "could not parse JSON"),
        (
            '{"steps_missing": true}',
            "missing 'constraints' list \\(keys present: \\['steps_missing'\\]\\)",
        ),
        ('{"constraints": []}', "'constraints' is empty"),
        ('{"constraints": "A r ?x"}', "missing 'constraints' list"),
        ('"just a string"', "could not parse JSON"),
    ],
)
def test_unusable_replies_are_rejected_with_reason(reply: str, match: str) -> None:
    with pytest.raises(ParseError, match=match):
        parse_plan(reply)


def test_missing_fields_repaired_or_rejected_per_constraint() -> None:
    plan = parse_plan(
        {
            "constraints": [
                {"head": "A", "tail": "?x", "variants": ["born in", "birthplace"]},  # no rel
                {"relation": "r", "tail": "?y", "variants": []},  # no head
                {"head": "B", "relation": "lives in", "tail": "?z"},  # no variants
                {"head": "C", "relation": "r", "tail": "?w", "variants": "only one"},
                ["D", "r2", "?v"],  # list form
                42,
            ]
        }
    )
    assert [(k.head, k.relation, k.tail, k.variants) for k in plan.constraints] == [
        ("A", "born in", "?x", ("birthplace",)),
        ("B", "lives in", "?z", ()),
        ("C", "r", "?w", ("only one",)),
        ("D", "r2", "?v", ()),
    ]
    reasons = dict(plan.rejected)
    assert "missing or empty field 'head'" in reasons[1]
    assert "not an object" in reasons[5]
    assert any("missing relation, used variant 'born in'" in r for r in plan.repairs)
    assert any("no 'variants'" in r for r in plan.repairs)
    assert any("given as a list" in r for r in plan.repairs)


def test_missing_relation_without_variants_rejects_the_constraint() -> None:
    with pytest.raises(ParseError, match="missing or empty field 'relation'"):
        parse_plan({"constraints": [{"head": "A", "tail": "?x"}]})


def test_too_many_variants_are_cut_to_m_and_placeholders_normalised() -> None:
    plan = parse_plan(
        {"constraints": [c("A", "r", "? Birth Place", ["a", "b", "c", "d", "r", "a"])]}, m=2
    )
    k = plan.constraints[0]
    assert k.tail == "?birth_place"
    assert k.variants == ("a", "b")  # duplicates and the relation itself removed, cut to 2
    assert any("cut to m=2" in r for r in plan.repairs)
    assert normalize_placeholder("?Prison") == "?prison"


def test_unknown_placeholder_rejected_when_placeholders_are_declared() -> None:
    plan = parse_plan(
        {
            "placeholders": {"?prison": "prison", "?year": "year"},
            "constraints": [
                c("No Cross, No Crown", "written in", "?prison"),
                c("?prision", "prison until", "?year"),  # typo: unknown placeholder
            ],
        }
    )
    assert len(plan.constraints) == 1
    (idx, reason), = plan.rejected
    assert idx == 1 and "unknown placeholder '?prision'" in reason
    assert any("never used: ['?year']" in r for r in plan.repairs)


def test_constraint_without_placeholder_is_rejected() -> None:
    plan = parse_plan({"constraints": [c("A", "r", "B"), c("A", "r", "?x")]})
    assert dict(plan.rejected)[0] == "constraint 'A r B' has no placeholder"
    assert len(plan.constraints) == 1


def test_no_constant_and_no_bound_variable_is_rejected() -> None:
    with pytest.raises(ParseError, match="no constant and no placeholder bound"):
        parse_plan({"constraints": [c("?a", "r", "?b")]})
    plan = parse_plan({"constraints": [c("A", "r", "?a"), c("?b", "s", "?c")]})
    assert [k.tail for k in plan.constraints] == ["?a"]
    assert "no constant and no placeholder bound" in dict(plan.rejected)[1]


def test_cycles_are_rejected() -> None:
    plan = parse_plan(
        {
            "constraints": [
                c("A", "r", "?a"),
                c("?a", "s", "?b"),
                c("?b", "t", "?a"),  # closes ?a -> ?b -> ?a
                c("?a", "self", "?a"),  # self loop
            ]
        }
    )
    assert len(plan.constraints) == 2
    reasons = dict(plan.rejected)
    assert reasons[2] == "constraint closes a placeholder cycle ?b -> ?a -> ?b"
    assert reasons[3] == "constraint closes a placeholder cycle ?a -> ?a"


def test_duplicates_dropped_and_top_level_list_accepted() -> None:
    plan = parse_plan([c("A", "r", "?x"), c("a", "R", "?x")])
    assert len(plan.constraints) == 1
    assert "top-level JSON list read as the constraint list" in plan.repairs
    assert any("duplicate" in r for r in plan.repairs)


def test_schema_constant_describes_the_required_fields() -> None:
    item = PLAN_SCHEMA["properties"]["constraints"]["items"]
    assert item["required"] == ["head", "relation", "tail", "variants"]
    assert PLAN_SCHEMA["required"] == ["constraints"]


# ---------------------------------------------------------------- fallback plan


def _graph() -> KnowledgeGraph:
    return KnowledgeGraph.from_triples(
        [
            ("No Cross, No Crown", "written in", "Tower of London"),
            ("Tower of London", "located in", "London"),
            ("William Penn", "wrote", "No Cross, No Crown"),
        ],
        passages={"p": "William Penn wrote No Cross, No Crown in the Tower of London."},
        provenance=[["p"], ["p"], ["p"]],
    )


def test_entity_mentions_longest_first_without_overlap() -> None:
    g = _graph()
    q = "Where did William Penn write No Cross, No Crown, near the Tower of London?"
    assert [n for n, _ in find_entity_mentions(q, g)] == [
        "William Penn", "No Cross, No Crown", "Tower of London"
    ]  # "London" is inside "Tower of London" and is not matched separately


def test_fallback_plan_one_constraint_per_entity_sharing_answer() -> None:
    g = _graph()
    plan = fallback_plan("In which castle was No Cross, No Crown written?", g)
    assert plan.source == "fallback" and plan.note == "no LLM planner configured"
    assert plan.constraints == (
        Constraint("No Cross, No Crown", "in which castle was written", "?answer", ()),
    )
    empty = fallback_plan("What is the capital of France?", g)
    assert empty.constraints == () and "no graph entity" in empty.repairs[0]


# ---------------------------------------------------------------- retriever planning paths


def _retriever(llm: object = None, **cfg: object) -> ConstraintCheckedRetriever:
    return ConstraintCheckedRetriever(
        _graph(), embedder=HashingEmbedder(), llm=llm,  # type: ignore[arg-type]
        config=C2RAGConfig(**cfg),  # type: ignore[arg-type]
    )


def test_no_llm_uses_the_fallback_plan() -> None:
    r = _retriever()
    res = r.retrieve("In which castle was No Cross, No Crown written?")
    assert res.plan.source == "fallback"
    assert res.hops[0].anchors[0].node_id == "No Cross, No Crown"


def test_garbage_llm_reply_falls_back_with_reason() -> None:
    llm = ScriptedLLM(["Sure! The answer is the Tower."])
    res = _retriever(llm).retrieve("In which castle was No Cross, No Crown written?")
    assert res.plan.source == "fallback"
    assert res.plan.note.startswith("LLM plan unusable: could not parse JSON")
    assert res.plan.raw == "Sure! The answer is the Tower."
    assert len(res.plan.constraints) == 1


def test_invalid_llm_plan_raises_in_error_mode() -> None:
    llm = ScriptedLLM([json.dumps({"constraints": [c("?a", "r", "?b")]})])
    r = _retriever(llm, on_invalid_plan="error")
    with pytest.raises(ParseError, match="no constant and no placeholder bound"):
        r.retrieve("Who wrote No Cross, No Crown?")


def test_llm_failure_falls_back_or_raises_backend_error() -> None:
    def boom(prompt: str) -> str:
        raise TimeoutError("server down")

    res = _retriever(ScriptedLLM(boom)).retrieve("Who wrote No Cross, No Crown?")
    assert res.plan.source == "fallback"
    # one call path: retried, then a BackendError naming the model, the step and the error
    assert "LLM call failed: LLM kgpath.llm.ScriptedLLM failed in C2RAG planning" in res.plan.note
    assert "after 3 attempt(s): TimeoutError: server down" in res.plan.note
    with pytest.raises(BackendError, match="server down"):
        _retriever(ScriptedLLM(boom), on_invalid_plan="error").retrieve(
            "Who wrote No Cross, No Crown?"
        )


async def test_async_planner_path() -> None:
    plan = {"constraints": [c("No Cross, No Crown", "written in", "?castle")]}
    r = _retriever(ScriptedLLM([json.dumps(plan)]))
    got = await r.aplan("Where was No Cross, No Crown written?")
    assert got.source == "llm" and got.constraints[0].tail == "?castle"


def test_user_plan_missing_fields_raises_parse_error() -> None:
    r = _retriever()
    with pytest.raises(ParseError, match="missing or empty field 'tail'"):
        r.retrieve("q?", plan={"constraints": [{"head": "A", "relation": "r"}]})
    # a user plan skips the LLM entirely
    llm = ScriptedLLM([])
    res = _retriever(llm).retrieve(
        "q?", plan=Plan(constraints=(Constraint("William Penn", "wrote", "?work"),))
    )
    assert llm.prompts == [] and res.plan.source == "user"


def test_planner_prompt_template_is_checked() -> None:
    with pytest.raises(ConfigError, match="planner_prompt"):
        ConstraintCheckedRetriever(_graph(), embedder=HashingEmbedder(),
                                   planner_prompt="Plan {question}")
    r = ConstraintCheckedRetriever(_graph(), embedder=HashingEmbedder(),
                                   planner_prompt="m={m} q={query}")
    assert r.planner_input("hello") == "m=3 q=hello"


def test_anchored_plan_is_public() -> None:
    from kgpath.methods import c2rag

    plan = c2rag.anchored_plan("Which films did Ridley Scott direct?", "Ridley Scott", hops=1)
    assert "anchored_plan" in c2rag.__all__ and plan.constraints[0].head == "Ridley Scott"
