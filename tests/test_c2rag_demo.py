"""The bundled C2RAG demo KG and the demo section run offline."""

from __future__ import annotations

import io
import json

from kgpath import HashingEmbedder
from kgpath.demo import DemoContext
from kgpath.demo.c2rag import demo_questions, load_demo_kg, run
from kgpath.index import GraphIndex
from kgpath.methods.c2rag import ConstraintCheckedRetriever
from kgpath.methods.c2rag.plan import parse_plan


def test_demo_kg_is_consistent() -> None:
    g = load_demo_kg()
    assert len(g.passages) >= 60 and g.num_edges >= 100
    for e in g.edges:  # every triple cites an existing passage
        assert e.provenance and all(p in g.passages for p in e.provenance)
    qs = demo_questions()
    assert len(qs) == 15 and qs[0]["answer"] == "1952"
    for q in qs:
        plan = parse_plan(q["plan"], m=3, source="user")
        assert len(plan.constraints) == 2 and plan.rejected == ()
        assert set(q["gold"]) == set(plan.placeholders)
        for gold in q["gold"].values():
            assert gold is None or gold in g


def test_demo_section_runs_offline_and_labels_its_planners() -> None:
    emb = HashingEmbedder()
    g = load_demo_kg()
    out = io.StringIO()
    run(DemoContext(embedder=emb, graph=g, index=GraphIndex(g, emb), out=out))
    text = out.getvalue()
    assert "Planner: SCRIPTED plan" in text and "nothing is generated offline" in text
    assert "Planner: LLM-FREE FALLBACK" in text
    assert "N_eff" in text and "Evidence blocks (Eq. 16)" in text
    assert "Hop 2 (P2)" in text


def test_every_demo_question_runs_and_serialises() -> None:
    r = ConstraintCheckedRetriever(load_demo_kg(), embedder=HashingEmbedder())
    for q in demo_questions():
        res = r.retrieve(q["query"], plan=q["plan"])
        assert len(res.blocks) == 2
        json.loads(res.to_json())
