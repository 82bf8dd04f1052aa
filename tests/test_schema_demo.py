"""The `kgpath demo --sections schema` section runs offline and prints honest labels."""

from __future__ import annotations

import io

from kgpath import GraphIndex, HashingEmbedder
from kgpath.data import demo_corpus, load_demo_graph
from kgpath.demo import DemoContext
from kgpath.demo.schema import demo_schema, run


def test_demo_schema_covers_the_demo_corpus():
    s = demo_schema()
    data = demo_corpus()
    types = {name: typ for name, (typ, _) in data["nodes"].items()}
    # every hand-written triple of the corpus is allowed by the demo schema
    for h, r, t, _ in data["triples"]:
        assert s.allows(types[h], r, types[t]), (h, r, t)
    assert set(types.values()) == set(s.names("entity"))


def test_demo_section_runs_and_labels_llm_free_paths():
    g = load_demo_graph()
    emb = HashingEmbedder()
    out = io.StringIO()
    run(DemoContext(embedder=emb, graph=g, index=GraphIndex(g, emb), out=out))
    text = out.getvalue()
    assert "LLM-FREE PatternExtractor" in text and "LLM-FREE heuristic" in text
    # the pattern extractor is embedder-independent: 9 triples, 7 of them gold
    assert "9        7        0.78       0.14" in text
    assert "where was the ore of radium mined?" in text
    assert "Louvain communities (seed 0)" in text
    for mode in ("off", "filter", "boost"):
        assert f"\n{mode} " in text
