"""``kgpath eval kg`` on tiny hand-written HotpotQA- and MetaQA-layout folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgpath.embeddings import HashingEmbedder
from kgpath.eval.kg_metaqa import evaluate_metaqa, load_metaqa, metaqa_graph

SHARED = Path("/work/shared/datasets")


def _metaqa(tmp: Path) -> Path:
    (tmp / "kb.txt").write_text(
        "Film A|directed_by|Ann Lee\nFilm A|starred_actors|Bob Stone\n"
        "Film B|starred_actors|Bob Stone\nFilm B|directed_by|Cy Young\n", encoding="utf-8")
    rows = [{"id": "q1", "question": "who directed the films starring [Bob Stone]",
             "anchor": "Bob Stone", "answers": ["Ann Lee", "Cy Young"], "hops": 2,
             "answers_reachable": True},
            {"id": "q2", "question": "which films did [Ann Lee] direct", "anchor": "Ann Lee",
             "answers": ["Film A"], "hops": 1, "answers_reachable": True},
            {"id": "q3", "question": "unreachable [Ann Lee]", "anchor": "Ann Lee",
             "answers": ["Nobody"], "hops": 1, "answers_reachable": False}]
    (tmp / "dev_1hop.jsonl").write_text(
        "\n".join(json.dumps(r) for r in rows if r["hops"] == 1), encoding="utf-8")
    (tmp / "dev_2hop.jsonl").write_text(json.dumps(rows[0]), encoding="utf-8")
    return tmp


def test_metaqa_walk_and_pcr(tmp_path):
    d = _metaqa(tmp_path)
    qs = load_metaqa(d)
    assert [q.id for q in qs] == ["q2", "q3", "q1"]
    assert qs[0].text == "which films did Ann Lee direct"
    g = metaqa_graph(d, HashingEmbedder(), cache_dir=tmp_path / "c")
    assert list((tmp_path / "c").glob("metaqa-*.npy"))
    res = evaluate_metaqa(qs, g, HashingEmbedder(), ["walk", "pcr"])
    # walk, q2 (1 hop from Ann Lee): only Film A -> hit; q1 (2 hops from Bob Stone, both
    # directions): Ann Lee, Cy Young -> the first is an answer either way.
    assert res["walk"].metrics(1) == {"Hits@1": 100.0, "Hits@10": 100.0, "n": 1}
    assert res["walk"].metrics(2) == {"Hits@1": 100.0, "Hits@10": 100.0, "n": 1}
    # PCR at depth 2 from Bob Stone reaches Film A, Film B, Ann Lee, Cy Young: Hits@10 = 1
    assert res["pcr"].metrics(2)["Hits@10"] == 100.0
    assert res["pcr"].errors == 0


def test_cli_metaqa_json(tmp_path, capsys):
    from kgpath.cli import main

    d = _metaqa(tmp_path)
    out = tmp_path / "m.json"
    assert main(["eval", "kg", "--data", str(d), "--embedder", "hashing", "--methods", "walk",
                 "--cache-dir", str(tmp_path / "c"), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["dataset"] == d.name
    assert doc["methods"]["walk"]["Hits@1"] == 100.0
    assert doc["methods"]["walk"]["1hop"]["n"] == 1
    w = doc["methods"]["walk"]
    assert 0 <= w["p50_ms"] <= w["p95_ms"] <= w["max_ms"]  # timing columns (issue 25)
    text = capsys.readouterr().out
    assert "Hits@10" in text and "p50 ms  p95 ms  max ms  set-up s" in text


def test_latency_cells_are_nearest_rank_percentiles():
    from kgpath.eval.kg_eval import latency, percentiles

    ms = [float(x) for x in range(1, 21)]  # 1..20 ms
    # p50: the 10th of 20; p95: the 19th (ceil(0.95 * 20) = 19); max: 20
    assert percentiles(ms) == (10.0, 19.0, 20.0)
    assert latency(ms) == ["10", "19", "20"]
    assert percentiles([]) is None and latency([]) == ["-", "-", "-"]


def _hotpot(tmp: Path) -> Path:
    corpus = {
        "Kiss and Tell": ["Kiss and Tell is a 1945 film starring Shirley Temple."],
        "Shirley Temple": ["Shirley Temple was an American diplomat."],
        "Paris": ["Paris is the capital of France."],
    }
    qs = [{"_id": "a", "question": "What job did the star of Kiss and Tell have?",
           "answer": "diplomat",
           "supporting_facts": [["Kiss and Tell", 0], ["Shirley Temple", 0]]}]
    (tmp / "corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
    (tmp / "questions.json").write_text(json.dumps(qs), encoding="utf-8")
    return tmp


def test_cli_hotpotqa_small(tmp_path, capsys):
    pytest.importorskip("spacy")
    from kgpath.cli import main

    d = _hotpot(tmp_path)
    out = tmp_path / "h.json"
    try:
        rc = main(["eval", "kg", "--data", str(d), "--embedder", "hashing",
                   "--methods", "dense,bm25,augmented,pcr", "--halves",
                   "--cache-dir", str(tmp_path / "c"), "--json", str(out)])
    except Exception as exc:  # pragma: no cover - the spaCy pipeline may be absent
        if type(exc).__name__ == "MissingDependencyError":
            pytest.skip(str(exc))
        raise
    assert rc == 0
    doc = json.loads(out.read_text())
    assert set(doc["methods"]) == {"dense", "bm25", "augmented", "pcr"}
    # three passages, gold = two of them: R@5 is 100 for any method ranking all three
    assert doc["methods"]["dense"]["R@5"] == 100.0
    assert doc["methods"]["augmented"]["R@5"] == 100.0
    assert list((tmp_path / "c").glob("*/stats.json"))  # cached
    text = capsys.readouterr().out
    assert "R@2 q0-" in text and "p50 ms  p95 ms  max ms" in text


def test_hits_scores_halves_split_each_hop_in_file_order():
    from kgpath.eval.kg_metaqa import HitsScores

    s = HitsScores("m", hops=[1, 1, 1, 2, 2], h1=[1.0, 0.0, 0.0, 1.0, 0.0],
                   h10=[1.0, 1.0, 0.0, 1.0, 1.0])
    assert s.metrics(1, 0) == {"Hits@1": 50.0, "Hits@10": 100.0, "n": 2}  # first 2 of 3
    assert s.metrics(1, 1) == {"Hits@1": 0.0, "Hits@10": 0.0, "n": 1}
    assert s.metrics(2, 1)["Hits@1"] == 0.0 and s.metrics()["n"] == 5


def test_cache_key_follows_the_extractor_code(monkeypatch):
    from types import SimpleNamespace

    from kgpath.eval import kg_build

    data = SimpleNamespace(corpus={"T": ["One sentence."]})
    emb = HashingEmbedder()
    before = kg_build._key(data, emb, "spacy")
    assert kg_build._key(data, emb, "spacy") == before  # stable
    monkeypatch.setattr(kg_build, "_extractor_code", lambda: b"edited extractor")
    assert kg_build._key(data, emb, "spacy") != before
