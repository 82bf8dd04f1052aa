"""Bundled demo data."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from kgpath.graph import KnowledgeGraph

__all__ = ["load_demo_graph", "demo_corpus"]


def demo_corpus() -> dict[str, Any]:
    """The raw demo corpus (passages, typed node descriptions, triples, sample queries)."""
    text = resources.files("kgpath.data").joinpath("demo_science.json").read_text("utf-8")
    return json.loads(text)


def load_demo_graph() -> KnowledgeGraph:
    """The demo graph: ~37 typed nodes, 50 relations, 10 passages with provenance."""
    data = demo_corpus()
    g = KnowledgeGraph()
    for pid, text in data["passages"].items():
        g.add_passage(pid, text)
    prov: dict[str, list[str]] = {}
    for h, _r, t, ps in data["triples"]:
        prov.setdefault(h, []).extend(ps)
        prov.setdefault(t, []).extend(ps)
    for name, (typ, desc) in data["nodes"].items():
        g.add_node(
            name, name=name, text=desc, type=typ,
            provenance=tuple(dict.fromkeys(prov.get(name, []))),
        )
    for h, r, t, ps in data["triples"]:
        g.add_edge(h, t, relation=r, text=f"{h} {r} {t}", provenance=ps)
    return g
