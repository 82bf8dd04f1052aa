"""Fixtures for the LlamaIndex adapter tests: a small hand-written graph with chosen vectors.

The toy graph (directed; every node carries a hand-chosen unit embedding in 3-d)::

    x -[links]-> a -[founded]-> b -[employs]-> c -[wrote]-> e -[cites]-> e (self-loop)
                 a -[owns]----> d              c -[reports_to]-> b        (cycle b <-> c)
    y (isolated)

Embeddings: a=(0,1,0) b=(.6,.8,0) c=(.8,.6,0) d=(0,0,1) e=(1,0,0) x=(1,0,0) y=(.96,.28,0).
Queries: "east" -> (1,0,0), "north" -> (0,1,0), "up" -> (0,0,1).

Hand-computed truth, anchor ``a``, direction ``out``:

* reachable set (Eq. 1) with hops: a:0, b:1, d:1, c:2, e:3 (x and y are not reachable);
* unique shortest paths: b=[a,b], d=[a,d], c=[a,b,c], e=[a,b,c,e];
* "east" scores (Eq. 2, cosine): e=1.0, c=0.8, b=0.6, a=0, d=0 (x=1.0 and y=0.96 would win a
  global search but are outside the reachable set);
* "north" scores: a=1.0, b=0.8, c=0.6, d=0, e=0.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from kgpath import KnowledgeGraph
from kgpath.embeddings import BaseEmbedder
from kgpath.methods.pcr import PathConstrainedRetriever as CorePCR
from kgpath.methods.pcr import PCRConfig

QUERIES = {
    "east": [1.0, 0.0, 0.0],
    "north": [0.0, 1.0, 0.0],
    "up": [0.0, 0.0, 1.0],
    "Carol chemist": [0.8, 0.6, 0.0],  # for BM25-mode tests (PCR embeds the query anyway)
    # the passages (PCR's passage_order="question" embeds them once per graph): p1 "north",
    # p2 "east", so the question order of the passages equals their hit order for both
    "Acme founded Beta Labs, which employs Carol.": [0.0, 1.0, 0.0],
    "Carol wrote an essay on catalysis.": [1.0, 0.0, 0.0],
}

NODES = {
    # id: (name, text, type, embedding, provenance, metadata)
    "a": ("Acme", "Acme is a holding company.", "company", [0, 1, 0], ("p1",),
          {"source": "registry"}),
    "b": ("Beta Labs", "Beta Labs is a research lab.", "lab", [0.6, 0.8, 0], ("p1",), {}),
    "c": ("Carol", "Carol is a chemist.", "person", [0.8, 0.6, 0], ("p1", "p2"),
          {"hops": "user value that the trace must override"}),
    "d": ("Depot", "Depot is a warehouse.", "place", [0, 0, 1], (), {}),
    "e": ("Essay", "Essay on catalysis.", "document", [1, 0, 0], ("p2",), {}),
    "x": ("Xeno", "Xeno is an outside firm.", "company", [1, 0, 0], (), {}),
    "y": ("Yard", "Yard is an isolated site.", "place", [0.96, 0.28, 0], (), {}),
}

EDGES = [
    ("a", "b", "founded"),
    ("b", "c", "employs"),
    ("c", "e", "wrote"),
    ("a", "d", "owns"),
    ("x", "a", "links"),
    ("c", "b", "reports_to"),
    ("e", "e", "cites"),
    ("a", "b", "founded"),  # exact duplicate: merged by the graph
]

#: Hand-computed reachable set from "a" (out) with hop distances and shortest paths.
REACH_FROM_A = {
    "a": (0, ["a"]),
    "b": (1, ["a", "b"]),
    "d": (1, ["a", "d"]),
    "c": (2, ["a", "b", "c"]),
    "e": (3, ["a", "b", "c", "e"]),
}
EAST_SCORES = {"e": 1.0, "c": 0.8, "b": 0.6, "a": 0.0, "d": 0.0, "x": 1.0, "y": 0.96}
NORTH_SCORES = {"a": 1.0, "b": 0.8, "c": 0.6, "d": 0.0, "e": 0.0, "x": 0.0, "y": 0.28}


class QueryTableEmbedder(BaseEmbedder):
    """Embeds only the known queries (nodes carry stored vectors); records sync/async use.

    ``_aembed`` is native (no thread), so a test can tell the async path was awaited.
    """

    def __init__(self) -> None:
        self._dim = 3
        self.batch_size = 64
        self.show_progress = False
        self.calls: list[tuple[str, str, tuple[str, ...]]] = []

    def _lookup(self, texts: list[str]) -> np.ndarray:
        try:
            return np.array([QUERIES[t] for t in texts], dtype=np.float32)
        except KeyError as exc:
            raise AssertionError(f"no vector chosen for {exc.args[0]!r}") from None

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        self.calls.append(("sync", kind, tuple(texts)))
        return self._lookup(texts)

    async def _aembed(self, texts: list[str], kind: str) -> np.ndarray:
        self.calls.append(("async", kind, tuple(texts)))
        return self._lookup(texts)


def build_toy_graph() -> KnowledgeGraph:
    g = KnowledgeGraph()
    g.add_passage("p1", "Acme founded Beta Labs, which employs Carol.")
    g.add_passage("p2", "Carol wrote an essay on catalysis.")
    for nid, (name, text, typ, emb, prov, meta) in NODES.items():
        g.add_node(nid, name=name, text=text, type=typ, provenance=prov, metadata=meta,
                   embedding=emb)
    for s, t, r in EDGES:
        g.add_edge(s, t, relation=r, provenance=("p1",))
    return g


@pytest.fixture
def toy() -> SimpleNamespace:
    """The hand-computed truth (module constants) for tests."""
    return SimpleNamespace(
        REACH_FROM_A=REACH_FROM_A, EAST_SCORES=EAST_SCORES, NORTH_SCORES=NORTH_SCORES
    )


@pytest.fixture
def toy_graph() -> KnowledgeGraph:
    return build_toy_graph()


@pytest.fixture
def query_embedder() -> QueryTableEmbedder:
    return QueryTableEmbedder()


@pytest.fixture
def core_pcr(toy_graph: KnowledgeGraph, query_embedder: QueryTableEmbedder) -> CorePCR:
    # the paper's reachability (out-edges, unlimited depth): the hand-computed truth
    return CorePCR(toy_graph, embedder=query_embedder, config=PCRConfig.paper())
