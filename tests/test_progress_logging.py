from __future__ import annotations

import logging

from kgpath import HashingEmbedder, KnowledgeGraph, PathConstrainedRetriever
from kgpath._progress import progress


def test_progress_bar_only_for_long_steps(capsys, monkeypatch):
    assert list(progress(range(5), desc="short")) == [0, 1, 2, 3, 4]
    assert "short" not in capsys.readouterr().err
    assert list(progress(range(300), desc="long step")) == list(range(300))
    assert "long step" in capsys.readouterr().err
    monkeypatch.setenv("KGPATH_PROGRESS", "0")
    assert len(list(progress(range(300), desc="silenced"))) == 300
    assert "silenced" not in capsys.readouterr().err


def test_llm_extraction_shows_progress(capsys):
    from kgpath import ScriptedLLM
    from kgpath.ingest.extract import SchemaExtractor
    from kgpath.ingest.schema import Schema

    schema = Schema.from_dict(
        {"entities": [{"name": "Thing"}], "relations": [
            {"name": "rel", "head": ["Thing"], "tail": ["Thing"]}]}
    )
    llm = ScriptedLLM(lambda prompt: '{"entities": [], "triples": []}')
    SchemaExtractor(schema, llm).extract({f"p{i}": f"text {i}" for i in range(40)})
    assert "extracting passages" in capsys.readouterr().err


def test_fallback_and_persistence_are_logged(caplog, tmp_path):
    g = KnowledgeGraph.from_triples([("a", "r", "b"), ("c", "r", "d")])
    pcr = PathConstrainedRetriever(g, embedder=HashingEmbedder())
    with caplog.at_level(logging.INFO, logger="kgpath"):  # out-edges: nothing past b
        pcr.retrieve("d", anchor="b", fallback="global", direction="out")
        g.save(tmp_path / "g")
        KnowledgeGraph.load(tmp_path / "g")
    text = caplog.text
    assert "global fallback" in text and "'b'" in text
    assert "saved KnowledgeGraph" in text and "loaded KnowledgeGraph" in text
