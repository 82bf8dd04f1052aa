"""``kgpath eval kg --triples``: a supplied triple file as the document graph."""

from __future__ import annotations

import json

import pytest

from kgpath.embeddings import HashingEmbedder
from kgpath.errors import ParseError
from kgpath.eval.hotpotqa import load_hotpotqa
from kgpath.eval.kg_triples import read_triples, triples_graph
from tests.test_kg_eval import _hotpot

LINES = [
    {"title": "Kiss and Tell", "triples": [["Kiss and Tell", "stars", "Shirley Temple"]]},
    {"title": "Shirley Temple", "extracted_triples": [["Shirley Temple", "was", "diplomat"]]},
]


def _write(tmp, rows):
    p = tmp / "triples.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    return p


def test_graph_from_triples_has_every_passage_and_the_provenance(tmp_path):
    data = load_hotpotqa(_hotpot(tmp_path))
    built = triples_graph(data, HashingEmbedder(), _write(tmp_path, LINES),
                          cache_dir=tmp_path / "c")
    g = built.graph
    assert sorted(g.passages) == ["Kiss and Tell", "Paris", "Shirley Temple"]
    assert g.passages["Paris"].text == "Paris. Paris is the capital of France."
    assert set(g.node("Shirley Temple").provenance) == {"Kiss and Tell", "Shirley Temple"}
    assert g.num_nodes == 3 and g.num_edges == 2
    assert built.vectors.passage_vectors.shape[0] == 3
    again = triples_graph(data, HashingEmbedder(), tmp_path / "triples.jsonl",
                          cache_dir=tmp_path / "c")
    assert again.cache == built.cache and again.graph.num_edges == 2  # loaded


@pytest.mark.parametrize("row, match", [
    ({"title": "Nowhere", "triples": []}, "not a corpus title"),
    ({"title": "Paris", "triples": [["a", "b"]]}, "3 strings"),
    ({"title": "Paris", "triples": "a b c"}, "must be a list"),
])
def test_bad_lines_name_the_line(tmp_path, row, match):
    p = _write(tmp_path, [LINES[0], row])
    with pytest.raises(ParseError, match=f"triples.jsonl:2: .*{match}"):
        read_triples(p, {"Kiss and Tell", "Paris"})


def test_cli_triples(tmp_path, capsys):
    from kgpath.cli import main

    d = _hotpot(tmp_path)
    out = tmp_path / "h.json"
    assert main(["eval", "kg", "--data", str(d), "--embedder", "hashing", "--methods",
                 "dense,augmented", "--triples", str(_write(tmp_path, LINES)),
                 "--cache-dir", str(tmp_path / "c"), "--json", str(out), "--no-cache"]) == 0
    doc = json.loads(out.read_text())
    assert doc["methods"]["augmented"]["R@5"] == 100.0
    assert "3 passages" in capsys.readouterr().out
