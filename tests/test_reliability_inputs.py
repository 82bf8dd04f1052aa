"""Issue 13, inputs that slipped through and small defects a new user hit: each now gives a
typed kgpath error naming the bad value, or a documented fallback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from kgpath import (
    ConfigError,
    GraphError,
    HashingEmbedder,
    KnowledgeGraph,
    NodeNotFoundError,
    ParseError,
    QueryError,
)
from kgpath.cli import main
from kgpath.graph import from_networkx
from kgpath.index import GraphIndex
from kgpath.llm import MAX_JSON_DEPTH, json_depth, parse_json_response
from kgpath.methods.pcr import PathConstrainedRetriever

ROOT = Path(__file__).resolve().parents[1]


def small() -> KnowledgeGraph:
    return KnowledgeGraph.from_triples(
        [("honey bee", "makes", "honey"), ("honey", "sweetens", "tea")],
        {"p1": "Bees make honey."}, provenance=[["p1"], ["p1"]],
    )


# ---------------------------------------------------------------- builders
def test_from_arrays_texts_shorter_than_ids():
    with pytest.raises(GraphError, match="texts has 1 entries, node_ids has 3"):
        KnowledgeGraph.from_arrays(["a", "b", "c"], [0], [1], texts=["only a"])


@pytest.mark.parametrize("bad", ["", "   ", "\t\n"])
def test_from_arrays_empty_or_blank_id(bad):
    with pytest.raises(GraphError, match=r"node_ids\[1\] must be a non-empty string"):
        KnowledgeGraph.from_arrays(["a", bad], [0], [1])


def test_from_arrays_float_endpoints_are_refused_not_truncated():
    with pytest.raises(GraphError, match="sources must be .*integer"):
        KnowledgeGraph.from_arrays(["a", "b"], [0.9], [1])
    with pytest.raises(GraphError, match="targets must be .*integer"):
        KnowledgeGraph.from_arrays(["a", "b"], np.array([0]), np.array([1.0]))


def test_from_arrays_relations_must_match_edges():
    with pytest.raises(GraphError, match="relations has 2 entries, sources has 1"):
        KnowledgeGraph.from_arrays(["a", "b"], [0], [1], relations=["r", "s"])


def test_from_networkx_does_not_merge_1_and_string_1():
    nxg = nx.DiGraph()
    nxg.add_node(1, text="integer one")
    nxg.add_node("1", text="string one")
    with pytest.raises(GraphError, match="1 and '1' both become the kgpath id '1'"):
        from_networkx(nxg)


def test_a_provenance_string_is_one_passage_id():
    g = KnowledgeGraph()
    g.add_passage("p12", "text")
    g.add_node("a", provenance="p12")
    assert g.node("a").provenance == ("p12",)
    g2 = KnowledgeGraph.from_triples([("a", "r", "b")], {"p12": "t"}, provenance=["p12"])
    assert g2.edges[0].provenance == ("p12",) and g2.node("a").provenance == ("p12",)


def test_blank_ids_are_refused():
    g = KnowledgeGraph()
    for call in (lambda: g.add_node("  "), lambda: g.add_passage(" \t", "x")):
        with pytest.raises(GraphError, match="non-empty string"):
            call()


@pytest.mark.parametrize("weight", [None, "heavy", float("nan"), -1.0, True])
def test_bad_weights_are_graph_errors(weight):
    g = small()
    with pytest.raises(GraphError, match="invalid weight"):
        g.add_edge("honey", "tea", relation="x", weight=weight)


def test_unhashable_anchors_are_node_not_found():
    g = small()
    assert ["honey"] not in g
    pcr = PathConstrainedRetriever(g, embedder=HashingEmbedder())
    for anchor in (["honey"], {"honey": 1}):
        with pytest.raises(NodeNotFoundError):
            pcr.retrieve("tea", anchor=anchor)


def test_lone_surrogates_are_typed_errors(tmp_path):
    g = small()
    with pytest.raises(GraphError, match="lone surrogate"):
        g.add_node("x", text="bad \udc80 text")
    with pytest.raises(GraphError, match="lone surrogate"):
        g.add_passage("p2", "bad \ud800")
    with pytest.raises(QueryError, match="lone surrogate"):
        GraphIndex(g, HashingEmbedder()).search("tea \udc80", 1)
    g.save(tmp_path / "g")  # the graph stayed clean and saves
    assert len(KnowledgeGraph.load(tmp_path / "g")) == len(g)


def test_unencodable_metadata_fails_save_cleanly(tmp_path):
    g = small()
    g.add_node("m", metadata={"note": "\udc80"})
    from kgpath import PersistenceError

    with pytest.raises(PersistenceError, match="saving the graph"):
        g.save(tmp_path / "g")
    assert sorted(os.listdir(tmp_path)) == []


# ---------------------------------------------------------------- index / hybrid
@pytest.mark.parametrize("mode", ["hybrid", "bm25", "vector"])
@pytest.mark.parametrize("cand", [[0, 99], [-1, 0], [0.5]])
def test_candidate_indices_are_range_checked(mode, cand):
    index = GraphIndex(small(), HashingEmbedder())
    with pytest.raises(ConfigError, match="candidate"):
        index.search("honey", 2, candidates=cand, mode=mode)


def test_score_candidates_range_checked():
    index = GraphIndex(small(), HashingEmbedder())
    qv = index.embed_query("honey")
    with pytest.raises(ConfigError, match="out of range"):
        index.score_candidates("honey", qv, np.array([-1]), mode="hybrid")


def test_config_errors_name_a_short_value():
    class Huge:
        def __repr__(self):
            return "Huge(" + "x" * 5000 + ")"

    index = GraphIndex(small(), HashingEmbedder())
    with pytest.raises(ConfigError) as info:
        index.search("honey", Huge())
    assert "k must be a positive int" in str(info.value) and len(str(info.value)) < 200
    with pytest.raises(ConfigError) as info:
        HashingEmbedder(Huge())
    assert "dim" in str(info.value) and len(str(info.value)) < 200
    with pytest.raises(ConfigError) as info:
        GraphIndex(small(), Huge())
    assert "embedder must be" in str(info.value) and len(str(info.value)) < 400


# ---------------------------------------------------------------- LLM JSON
def test_deeply_nested_llm_json_is_a_parse_error():
    for reply in ("[" * 100_000, "[" * 5000 + "]" * 5000, '{"a":' * 3000 + "1" + "}" * 3000):
        with pytest.raises(ParseError, match="MAX_JSON_DEPTH"):
            parse_json_response(reply)
    assert parse_json_response('{"a": "[[[[{{{{"}') == {"a": "[[[[{{{{"}
    assert json_depth('{"a": [1, {"b": "]]]"}]}') == 3
    ok = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert isinstance(parse_json_response(ok), list)


def test_oversize_llm_reply_is_a_parse_error():
    with pytest.raises(ParseError, match="MAX_REPLY_CHARS"):
        parse_json_response('{"a": "' + "x" * 2_000_000 + '"}')


def test_the_four_llm_parsers_raise_parse_error_or_fall_back():
    from kgpath.ingest.extract import parse_extraction
    from kgpath.methods.c2rag.plan import parse_plan
    from kgpath.methods.pathrag.keywords import parse_keywords

    deep = '{"entities": ' + "[" * 50_000 + "]" * 50_000 + "}"
    parsers = (parse_keywords, parse_plan, lambda reply: parse_extraction(reply, "p1"))
    for parse in parsers:
        try:
            parse(deep)
        except ParseError:
            pass
        except Exception as exc:  # noqa: BLE001
            pytest.fail(f"{parse} raised {type(exc).__name__}")


# ---------------------------------------------------------------- viz, CLI, cookbook
def test_viz_render_accepts_the_readme_signature(tmp_path):
    from kgpath.viz import render

    g = small()
    res = PathConstrainedRetriever(g, embedder=HashingEmbedder()).retrieve("tea", anchor="honey")
    out = render(res, g, tmp_path / "out.html")
    assert out["html"].is_file() and "<html" in out["html"].read_text().lower()
    with pytest.raises(ConfigError, match=r"\.png or \.html"):
        render(res, g, tmp_path / "out.txt")


def test_kgpath_info_is_a_real_command(capsys, tmp_path):
    assert main(["info"]) == 0
    assert "kgpath " in capsys.readouterr().out
    small().save(tmp_path / "g")
    assert main(["info", str(tmp_path / "g")]) == 0
    assert "nodes=3" in capsys.readouterr().out
    assert main(["info", str(tmp_path / "missing")]) == 1
    assert "kgpath: error" in capsys.readouterr().err


def test_property_graph_recipe_skips_without_the_ladybug_store():
    """``find_spec`` of a dotted name raises when the parent package is missing."""
    pytest.importorskip("llama_index.core")
    code = (
        "import sys, runpy\n"
        "sys.modules['llama_index.graph_stores'] = None  # not installed\n"
        f"runpy.run_path({str(ROOT / 'cookbook' / 'llamaindex_property_graph.py')!r}, "
        "run_name='__main__')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src"), str(ROOT / "integrations" / "llama-index")])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "push-down part skipped" in proc.stdout
