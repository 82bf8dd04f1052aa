"""HotpotQA loader, passage recall, and ``kgpath eval traversal`` end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kgpath import ConfigError, GraphError, HashingEmbedder
from kgpath.cli import main as cli_main
from kgpath.eval.hotpotqa import HotpotQADataset, load_hotpotqa, passage_recall
from kgpath.eval.traversal_eval import (
    build_hotpotqa_graph,
    evaluate_traversal,
    format_report,
)
from kgpath.methods.traversal import ALGORITHMS, TraversalConfig

CORPUS = {
    "Zorbian Empire": ["The Zorbian Empire was founded by Queen Mira.",
                       " It ruled the northern valleys.", " Its capital was Tessel."],
    "Queen Mira": ["Queen Mira was born in Tessel.", " She spoke four languages."],
    "Tessel": ["Tessel is a river port.", " The port exports copper.",
               " Copper mines lie east of Tessel.", " Tessel has a cathedral."],
    "Copper": ["Copper is a reddish metal.", " It conducts electricity."],
    "Violin": ["The violin has four strings.", " It is played with a bow."],
    "Bow (music)": ["A bow is strung with horsehair."],
}
QUESTIONS = [
    {"_id": "q1", "question": "Where was the founder of the Zorbian Empire born?",
     "answer": "Tessel", "type": "bridge", "level": "easy",
     "supporting_facts": [["Zorbian Empire", 0], ["Queen Mira", 0]]},
    {"_id": "q2", "question": "What are the strings of a violin bow made of?",
     "answer": "horsehair", "type": "bridge", "level": "easy",
     "supporting_facts": [["Violin", 1], ["Bow (music)", 0], ["Violin", 0]]},
]


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "corpus.json").write_text(json.dumps(CORPUS))
    (tmp_path / "questions.json").write_text(json.dumps(QUESTIONS))
    return tmp_path


def test_passage_recall_by_hand():
    assert passage_recall(["a", "b", "c"], ["c", "d"], 2) == 0.0
    assert passage_recall(["a", "b", "c"], ["c", "d"], 5) == 0.5
    # repeats are collapsed before cutting at k: distinct passages a, c
    assert passage_recall(["a", "a", "a", "c"], ["c"], 2) == 1.0
    assert passage_recall([], ["x"], 2) == 0.0 and passage_recall(["x"], [], 2) == 0.0
    with pytest.raises(ConfigError):
        passage_recall(["a"], ["a"], 0)


def test_loader(folder):
    data = load_hotpotqa(folder)
    assert len(data) == 2 and data.questions[1].gold_titles == ("Violin", "Bow (music)")
    assert data.corpus["Queen Mira"] == ("Queen Mira was born in Tessel.",
                                         "She spoke four languages.")
    assert data.passage_text("Copper") == (
        "Copper. Copper is a reddish metal. It conducts electricity.")
    assert len(load_hotpotqa(folder, limit=1)) == 1
    with pytest.raises(ConfigError):
        load_hotpotqa(folder, limit=0)


def test_loader_errors(tmp_path, folder):
    with pytest.raises(GraphError, match="questions.json missing"):
        load_hotpotqa(tmp_path / "nowhere")
    bad = [dict(QUESTIONS[0], supporting_facts=[["Atlantis", 0]])]
    (folder / "questions.json").write_text(json.dumps(bad))
    with pytest.raises(GraphError, match="Atlantis"):
        load_hotpotqa(folder)
    (folder / "questions.json").write_text(json.dumps([{"question": "no facts"}]))
    with pytest.raises(GraphError, match="malformed"):
        load_hotpotqa(folder)


def test_evaluate_on_synthetic_data(folder):
    data = load_hotpotqa(folder)
    emb = HashingEmbedder(128)
    graph, stats = build_hotpotqa_graph(data, emb)
    assert stats["documents"] == 6
    # the corpus's own sentence split is kept: sentence ids match supporting facts
    assert graph.node("sent:Queen Mira:0").text == "Queen Mira was born in Tessel."
    rep = evaluate_traversal(data, graph, emb, config=TraversalConfig(min_sentences=0))
    names = [m.name for m in rep.methods]
    assert names[:3] == ["BM25", "dense", "hybrid (α=0.7)"]
    assert names[3:10] == list(ALGORITHMS)
    assert names[10].startswith("PCR") and names[11].startswith("PathRAG")
    bm25 = rep.methods[0]
    # q1 shares "Zorbian Empire" / "founder" words with its gold pair; q2 "violin", "bow"
    assert bm25.r2 == [1.0, 1.0] and bm25.r5 == [1.0, 1.0]
    for m in rep.methods:
        assert len(m.r2) == 2 and all(0.0 <= v <= 1.0 for v in m.r2 + m.r5)
        assert all(a <= b for a, b in zip(m.r2, m.r5, strict=True))
    qt = rep.methods[names.index("query_traversal")]
    assert all(0 <= v <= 1 for v in qt.sf_recall) and qt.sentences
    text = format_report(rep)
    assert "reference 54.5/75.5" in text and "triangulation_geometric_3d" in text


def test_cli_runs_on_synthetic_data(folder, capsys, tmp_path):
    gdir = tmp_path / "graph"
    args = ["eval", "traversal", "--data", str(folder), "--embedder", "hashing",
            "--graph", str(gdir), "--algorithms", "query_traversal,kg_traversal", "--no-pathrag"]
    assert cli_main(args) == 0
    out = capsys.readouterr().out
    assert "building chunk graph over 6 passages" in out
    assert "query_traversal" in out and "PCR (anchor = best dense passage)" in out
    assert "triangulation_average" not in out and "PathRAG" not in out
    assert cli_main(args) == 0  # second run loads the saved graph
    assert f"loading chunk graph from {gdir}" in capsys.readouterr().out


def test_unknown_algorithm(folder):
    data = load_hotpotqa(folder)
    graph, _ = build_hotpotqa_graph(data, HashingEmbedder(64))
    with pytest.raises(ConfigError, match="bfs"):
        evaluate_traversal(data, graph, HashingEmbedder(64), algorithms=["bfs"])


@pytest.mark.slow
@pytest.mark.dataset
def test_hotpotqa_subset_runs(datasets):
    """Five real questions on a 60-passage slice of the corpus (HashingEmbedder, offline)."""
    full = load_hotpotqa(datasets / "hotpotqa-100", limit=5)
    keep = list(dict.fromkeys(t for q in full.questions for t in q.gold_titles))
    keep += [t for t in full.corpus if t not in keep][: 60 - len(keep)]
    data = HotpotQADataset({t: full.corpus[t] for t in keep}, full.questions)
    emb = HashingEmbedder(256)
    graph, _ = build_hotpotqa_graph(data, emb)
    rep = evaluate_traversal(data, graph, emb, pathrag=False)
    dense = rep.methods[1]
    # dense recall recomputed independently from the document embeddings
    doc = {t: graph.vectors.matrix[graph.index_of(f"doc:{t}")] for t in keep}
    qv = emb.embed_queries([q.question for q in data.questions])
    want = []
    for q, v in zip(data.questions, qv, strict=True):
        ranked = sorted(keep, key=lambda t, v=v: -float(doc[t] @ v))
        want.append(passage_recall(ranked, q.gold_titles, 5))
    assert dense.r5 == pytest.approx(want)
    assert np.isfinite([np.mean(m.r5) for m in rep.methods]).all()
