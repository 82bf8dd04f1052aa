"""Issue 11: the hand labels are well formed, and the benchmark's scoring rule is right."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LABELS = ROOT / "tests" / "data" / "hotpotqa_labels_50.json"
CORPUS = ROOT.parent / "shared" / "datasets" / "hotpotqa-100" / "corpus.json"


def _bench():
    spec = importlib.util.spec_from_file_location(
        "bench_extraction", ROOT / "benchmarks" / "bench_extraction.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod




def test_labels_well_formed():
    labels = json.loads(LABELS.read_text(encoding="utf-8"))
    assert len(labels) == 50
    assert len({d["title"] for d in labels}) == 50
    for d in labels:
        assert set(d) == {"title", "text", "entities", "triples"}
        assert d["text"].startswith(d["title"] + ". ")
        assert len(d["triples"]) >= 1 and d["entities"]
        low = d["text"].lower()
        for h, r, t in d["triples"]:
            assert r and h.lower() in low and t.lower() in low, (d["title"], h, t)


def test_labels_are_first_50_sorted_titles_of_corpus():
    if not CORPUS.exists():
        pytest.skip("../shared/datasets is absent (fresh clone)")
    corpus = json.loads(CORPUS.read_text(encoding="utf-8"))
    labels = json.loads(LABELS.read_text(encoding="utf-8"))
    assert [d["title"] for d in labels] == sorted(corpus)[:50]
    for d in labels:
        assert d["text"] == f"{d['title']}. {' '.join(corpus[d['title']])}"


def test_names_match_rule():
    b = _bench()
    assert b.names_match("The Curies'", "curies")  # entity_key: article, possessive
    assert b.names_match("Marie Curie", "Curie")  # containment, either way
    assert b.names_match("Curie", "Marie Curie")
    assert not b.names_match("Marie Curie", "Pierre Curie")  # neither a subset
    assert not b.names_match("", "Curie")


def test_score_hand_computed():
    b = _bench()
    gold = [("Marie Curie", "born in", "Warsaw"), ("Curie", "discovered", "polonium"),
            ("Pierre Curie", "married", "Marie Curie")]
    pred = [("Warsaw", "x", "Curie"),  # reversed + containment: gold 0 only
            ("Marie Curie", "y", "radium"),  # no match
            ("Pierre", "z", "Marie Curie")]  # matches gold 2 ("pierre" in "pierre curie")
    # predicted matched: 2 of 3; gold matched: gold 0 and gold 2 -> 2 of 3.
    s = b.score([(pred, gold)])
    assert (s["matched_pred"], s["pred"], s["matched_gold"], s["gold"]) == (2, 3, 2, 3)
    assert s["precision"] == pytest.approx(2 / 3) and s["recall"] == pytest.approx(2 / 3)
    # micro-average over two passages: second passage 0 of 1 predicted, 0 of 2 gold
    s2 = b.score([(pred, gold), ([("a", "r", "b")], [("c", "r", "d"), ("e", "r", "f")])])
    assert s2["precision"] == pytest.approx(2 / 4) and s2["recall"] == pytest.approx(2 / 5)
    e = b.entity_recall([(["Marie Curie", "Warsaw"], ["Curie", "Warsaw", "polonium"])])
    assert (e["matched_gold"], e["gold"]) == (2, 3)


def test_empty_score_is_zero():
    s = _bench().score([([], [])])
    assert s["precision"] == 0.0 and s["recall"] == 0.0


@pytest.mark.spacy
def test_benchmark_runs_on_labels():
    b = _bench()
    labels = json.loads(LABELS.read_text(encoding="utf-8"))[:3]
    out = b.run_hotpot(labels)
    for key in ("all_edges", "no_cooccurrence"):
        assert 0.0 <= out[key]["precision"] <= 1.0 and 0.0 <= out[key]["recall"] <= 1.0
        assert out[key]["gold"] == sum(len(d["triples"]) for d in labels)
    assert out["no_cooccurrence"]["pred"] <= out["all_edges"]["pred"]
    assert out["entities"]["gold"] == sum(len(d["entities"]) for d in labels)


def test_judgements_well_formed():
    b = _bench()
    data = json.loads(b.JUDGEMENTS.read_text(encoding="utf-8"))
    assert "rule" in data["header"]
    titles = {d["title"]: d["text"] for d in json.loads(LABELS.read_text(encoding="utf-8"))}
    for r in data["judgements"]:
        assert r["title"] in titles and isinstance(r["verdict"], bool)
        assert r["verdict"] or r["reason"], r
    verdicts = b.load_judgements(rounds=(1, 2))  # one verdict per (title, pair)
    assert {r["round"] for r in data["judgements"]} == {1, 2}
    keys = [(r["title"], r["head"], r["relation"], r["tail"]) for r in data["judgements"]]
    assert len(keys) == len(set(keys))
    assert len(b.load_judgements()) < len(verdicts)  # round 1 alone by default
    for r in data["judgements"]:
        assert verdicts[(r["title"], frozenset((r["head"], r["tail"])))] == r["verdict"]


def test_judged_precision_hand_computed():
    b = _bench()
    verdicts = {("T", frozenset(("a", "b"))): True, ("T", frozenset(("a", "c"))): False}
    # reversed pair found; false pair; unjudged pair: 1 true of 3, 1 unjudged
    out = b.judged([("T", [("b", "r", "a"), ("a", "r", "c"), ("a", "r", "d")])], verdicts)
    assert (out["true"], out["pred"], out["unjudged"]) == (1, 3, 1)
    assert out["precision"] == pytest.approx(1 / 3)
    assert b.judged([("T", [])], verdicts)["precision"] == 0.0


def test_benchmark_halves_are_the_stated_slices() -> None:
    b = _bench()
    assert [(n, s.start, s.stop) for n, s in b.HALVES] == [
        ("q0-24", 0, 25), ("q25-49", 25, 50), ("all-50", 0, 50)]


@pytest.mark.spacy
def test_benchmark_halves_partition_the_gold() -> None:
    b = _bench()
    labels = json.loads(LABELS.read_text(
        encoding="utf-8"))
    out = b.run_halves(labels)
    for key in ("all_edges", "no_cooccurrence"):
        first, second, both = (out[h][key] for h in ("q0-24", "q25-49", "all-50"))
        assert first["gold"] + second["gold"] == both["gold"] == sum(
            len(d["triples"]) for d in labels)
        assert first["matched_pred"] + second["matched_pred"] == both["matched_pred"]
