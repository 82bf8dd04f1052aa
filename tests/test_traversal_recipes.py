"""The traversal demo section and cookbook recipe run offline and draw the path picture."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from kgpath import HashingEmbedder, KnowledgeGraph
from kgpath.demo import DemoContext
from kgpath.demo import traversal as demo_traversal
from kgpath.index import GraphIndex

ROOT = Path(__file__).resolve().parents[1]


def test_demo_section_prints_every_algorithm(tmp_path):
    emb = HashingEmbedder()
    out = io.StringIO()
    g = KnowledgeGraph.from_triples([("a", "r", "b")])
    ctx = DemoContext(embedder=emb, graph=g, index=GraphIndex(g, emb), out=out,
                      plot_dir=tmp_path)
    demo_traversal.run(ctx)
    text = out.getvalue()
    for name in ("basic_retrieval", "query_traversal", "kg_traversal", "triangulation_average",
                 "triangulation_geometric_3d", "triangulation_fulldim", "llm_guided_traversal"):
        assert name in text
    assert demo_traversal.DEMO_QUESTION in text
    if "no plot" not in text:
        assert (tmp_path / "traversal_paths.png").stat().st_size > 1000


@pytest.mark.slow
def test_cookbook_compare_traversals_runs(tmp_path):
    pytest.importorskip("matplotlib", reason="the picture needs kgpath[plot]")
    png = tmp_path / "paths.png"
    res = subprocess.run(
        [sys.executable, str(ROOT / "cookbook" / "compare_traversals.py"), "--embedder",
         "hashing", "--out", str(png)],
        capture_output=True, text=True, timeout=300, check=True,
    )
    assert "gold passages: p2, p3" in res.stdout
    assert res.stdout.count("llm_guided_traversal") == 2  # table row + path line
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
