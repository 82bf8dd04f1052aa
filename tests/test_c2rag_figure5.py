"""C2RAG end to end on a hand-written KG shaped like the paper's Figure 5 (Appendix G).

The embedder and the reranker are lookup tables, so every number below is computed by
hand from Eq. 3-14 with ε = 0.01 (the default):

Hop 1, τ0 = (No Cross, No Crown, written during imprisonment in, ?prison)
  anchors (Eq. 3): "No Cross, No Crown" (3/3), "Crown Jewels" (1/3)
  pool (Eq. 4): 7 edges of the book (6 out, 1 in) + 2 of Crown Jewels = 9
  S_rel (Eq. 5) = first coordinate of the relation vector; top-8 drops the last 0 ("kept at")
  z (Eq. 6) top-3: 0.90 (Tower of London), 0.30 (The White Tower), 0.29 (London)
  p (Eq. 7) = [0.62, 0.02, 0.01] / 0.65 = [62, 2, 1] / 65
  N_eff (Eq. 8) = 65² / (62² + 2² + 1²) = 4225 / 3849 ≈ 1.0977 <= 1.5 -> Resolved
Hop 2, τ1 = (?prison, used as a prison until, ?year), grounded on E_b(?prison)
  z top-3: 0.512 (built in), 0.511 (served as), 0.510 (location)
  p = [12, 11, 10] / 33, N_eff = 33² / 365 = 1089 / 365 ≈ 2.9836 > 1.5 -> Unresolved
  recovery (Eq. 11-12): S_txt top-8 of 11 passages, rerank keeps the 1952 sentence first.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest

from kgpath import KnowledgeGraph, ScriptedLLM
from kgpath.embeddings import BaseEmbedder
from kgpath.methods.c2rag import C2RAGConfig, ConstraintCheckedRetriever
from kgpath.rerank import CallableReranker

# The reranker protocol returns float32, so probabilities match to ~1e-6 relative.
QUERY = (
    "What year did the prison where No Cross, No Crown was written stop being used as a "
    "prison?"
)

PLAN = {
    "placeholders": {"?prison": "prison", "?year": "year"},
    "constraints": [
        {
            "head": "No Cross, No Crown",
            "relation": "written during imprisonment in",
            "tail": "?prison",
            "variants": [
                "written while imprisoned at",
                "composed during incarceration in",
                "written in prison at",
            ],
        },
        {
            "head": "?prison",
            "relation": "used as a prison until",
            "tail": "?year",
            "variants": [
                "imprisonment ended in",
                "ceased being a prison in",
                "closed as a prison in",
            ],
        },
    ],
}

PASSAGES = {
    "p_penn": "William Penn wrote No Cross, No Crown in 1668 while he was locked in the "
    "Tower of London.",
    "p_prison": "The castle held state prisoners for centuries and was last used as a "
    "prison in 1952.",
    "p_palace": "Early in its history the fortress was a grand palace and royal residence.",
    "p_white": "The White Tower, the keep at the centre of the castle, was begun in 1078.",
    "p_london": "The Tower of London stands on the north bank of the Thames in London.",
    "p_tourism": "Millions of tourists visit the Tower of London every year.",
    "p_flambard": "Ranulf Flambard was the first prisoner held in the Tower, in 1100.",
    "p_medieval": "Throughout the Middle Ages the Tower was used for imprisonment.",
    "p_bridge": "Tower Bridge crosses the Thames near the Tower of London.",
    "p_hamlets": "Tower Hamlets is the London borough that contains the Tower.",
    "p_jewels": "The Crown Jewels are kept in the Jewel House at the Tower of London.",
}

# (head, relation, tail, provenance); order matters for positions (ties break by position).
TRIPLES = [
    ("No Cross, No Crown", "written during imprisonment in", "Tower of London", ["p_penn"]),
    ("No Cross, No Crown", "written in", "London", ["p_penn"]),
    ("No Cross, No Crown", "related to", "Tower Bridge", ["p_bridge"]),
    ("No Cross, No Crown", "composed during incarceration in", "Tower Hamlets", ["p_hamlets"]),
    ("No Cross, No Crown", "written while imprisoned at", "The White Tower", ["p_penn"]),
    ("No Cross, No Crown", "published in", "1669", []),
    ("No Cross, No Crown", "genre", "religious tract", []),
    ("William Penn", "wrote", "No Cross, No Crown", ["p_penn"]),
    ("Crown Jewels", "kept at", "Tower of London", ["p_jewels"]),
    ("Tower of London", "built in", "1078", ["p_white"]),
    ("Tower of London", "served as", "royal residence", ["p_palace"]),
    ("Tower of London", "location", "London", ["p_london"]),
    ("Tower of London", "attracts", "tourists", ["p_tourism"]),
    ("Tower of London", "held prisoners", "Ranulf Flambard", ["p_flambard"]),
    ("Tower of London", "used for imprisonment during", "Middle Ages", ["p_medieval"]),
]


def build_graph() -> KnowledgeGraph:
    g = KnowledgeGraph()
    for pid, text in PASSAGES.items():
        g.add_passage(pid, text)
    for h, _, t, _ in TRIPLES:
        for name in (h, t):
            if name not in g:
                g.add_node(name, name=name)
    for h, r, t, prov in TRIPLES:
        g.add_edge(h, t, relation=r, provenance=prov)
    return g


def _unit(*coords: tuple[int, float]) -> list[float]:
    v = [0.0] * 8
    for i, x in coords:
        v[i] = x
    return v


# axis 0: "written while imprisoned"; axis 4: "stopped being a prison"; axis 5: recovery query
VECTORS: dict[str, list[float]] = {
    # tau0's relation set R_0 (relation + 3 variants): all on axis 0
    "written during imprisonment in": _unit((0, 1.0)),
    "written while imprisoned at": _unit((0, 1.0)),
    "composed during incarceration in": _unit((0, 1.0)),
    "written in prison at": _unit((0, 1.0)),
    "written in": _unit((0, 0.6), (1, 0.8)),
    "related to": _unit((3, 1.0)),
    "published in": _unit((1, 1.0)),
    "genre": _unit((3, 1.0)),
    "wrote": _unit((1, 1.0)),
    "kept at": _unit((2, 1.0)),
    # tau1's relation set: all on axis 4
    "used as a prison until": _unit((4, 1.0)),
    "imprisonment ended in": _unit((4, 1.0)),
    "ceased being a prison in": _unit((4, 1.0)),
    "closed as a prison in": _unit((4, 1.0)),
    "used for imprisonment during": _unit((3, 0.6), (4, 0.8)),
    "held prisoners": _unit((3, 0.8), (4, 0.6)),
    "built in": _unit((2, 0.96), (4, 0.28)),
    "served as": _unit((2, 0.96), (4, 0.28)),
    "location": _unit((2, 0.96), (4, 0.28)),
    "attracts": _unit((3, 1.0)),
    # Lin(tau1) grounded (pool binding and dominant binding) -> axis 5
    "Tower of London or The White Tower or London used as a prison until ?year": _unit(
        (5, 1.0)
    ),
    "Tower of London used as a prison until ?year": _unit((5, 1.0)),
    # passages: S_txt = their axis-5 coordinate
    PASSAGES["p_penn"]: _unit((5, 0.6), (6, 0.8)),
    PASSAGES["p_prison"]: _unit((5, 0.96), (6, 0.28)),
    PASSAGES["p_palace"]: _unit((5, 0.8), (6, 0.6)),
    PASSAGES["p_white"]: _unit((5, 0.6), (6, 0.8)),
    PASSAGES["p_london"]: _unit((5, 0.28), (6, 0.96)),
    PASSAGES["p_tourism"]: _unit((5, 0.28), (6, 0.96)),
    PASSAGES["p_flambard"]: _unit((5, 0.6), (6, 0.8)),
    PASSAGES["p_medieval"]: _unit((5, 0.8), (6, 0.6)),
    PASSAGES["p_bridge"]: _unit((7, 1.0)),
    PASSAGES["p_hamlets"]: _unit((7, 1.0)),
    PASSAGES["p_jewels"]: _unit((7, 1.0)),
}


class TableEmbedder(BaseEmbedder):
    """Looks every text up in a table; an unexpected text fails the test loudly."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table
        self.show_progress = False
        self._dim = len(next(iter(table.values())))
        self.calls: list[tuple[str, list[str]]] = []

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        self.calls.append((kind, list(texts)))
        missing = [t for t in texts if t not in self.table]
        if missing:
            raise AssertionError(f"unexpected text to embed: {missing}")
        return np.array([self.table[t] for t in texts], dtype=np.float32)


HOP1_SCORES: dict[str, float] = {
    # hop 1 candidates Lin(c)
    "No Cross, No Crown written during imprisonment in Tower of London": 0.90,
    "No Cross, No Crown written while imprisoned at The White Tower": 0.30,
    "No Cross, No Crown written in London": 0.29,
    "No Cross, No Crown composed during incarceration in Tower Hamlets": 0.20,
    "No Cross, No Crown related to Tower Bridge": 0.10,
    "No Cross, No Crown published in 1669": 0.05,
    "No Cross, No Crown genre religious tract": 0.01,
    "William Penn wrote No Cross, No Crown": 0.02,
}

HOP2_SCORES: dict[str, float] = {
    # hop 2 candidates (the reranker reads the grounded tau1 in its query)
    "Tower of London built in 1078": 0.512,
    "Tower of London served as royal residence": 0.511,
    "Tower of London location London": 0.510,
    "Tower of London used for imprisonment during Middle Ages": 0.500,
    "Tower of London held prisoners Ranulf Flambard": 0.490,
    "Tower of London attracts tourists": 0.300,
    "Crown Jewels kept at Tower of London": 0.100,
    "No Cross, No Crown written during imprisonment in Tower of London": 0.200,
    # passages (Eq. 12)
    PASSAGES["p_prison"]: 0.90,
    PASSAGES["p_palace"]: 0.70,
    PASSAGES["p_white"]: 0.60,
    PASSAGES["p_medieval"]: 0.50,
    PASSAGES["p_penn"]: 0.20,
    PASSAGES["p_flambard"]: 0.40,
    PASSAGES["p_london"]: 0.10,
    PASSAGES["p_tourism"]: 0.05,
    PASSAGES["p_bridge"]: 0.0,
    PASSAGES["p_hamlets"]: 0.0,
    PASSAGES["p_jewels"]: 0.0,
}


class TableReranker(CallableReranker):
    def __init__(self) -> None:
        self.queries: list[str] = []
        super().__init__(self._fn)

    def _fn(self, query: str, texts: Sequence[str]) -> list[float]:
        self.queries.append(query)
        table = HOP2_SCORES if "used as a prison until" in query else HOP1_SCORES
        missing = [t for t in texts if t not in table]
        if missing:
            raise AssertionError(f"unexpected text to rerank: {missing}")
        return [table[t] for t in texts]


def make(binding: str = "pool", **cfg: object):
    llm = ScriptedLLM([json.dumps(PLAN)])
    emb = TableEmbedder(VECTORS)
    rr = TableReranker()
    r = ConstraintCheckedRetriever(
        build_graph(), embedder=emb, llm=llm, reranker=rr,
        config=C2RAGConfig(binding=binding, **cfg),  # type: ignore[arg-type]
    )
    return r, llm, emb, rr


def test_figure5_trace_pool_binding() -> None:
    # Eq. 15 with every bound entity pooled into one hop (the pre-issue-12 default, kept
    # as propagation="pooled"); the per-entity default is tested in test_c2rag_scorer.py
    r, llm, emb, rr = make(propagation="pooled")
    res = r.retrieve(QUERY)

    # the plan came from the scripted LLM, asked with the query and m = 3
    assert res.plan.source == "llm"
    assert len(llm.prompts) == 1 and QUERY in llm.prompts[0]
    assert "exactly 3 other ways" in llm.prompts[0]
    assert [c.relation for c in res.plan.constraints] == [
        "written during imprisonment in", "used as a prison until"
    ]

    h1, h2 = res.hops
    # ---- hop 1: Eq. 3 anchors
    assert h1.kind == "P1" and h1.variable == "?prison"
    assert [(a.node_id, a.coverage) for a in h1.anchors] == [
        ("No Cross, No Crown", 1.0), ("Crown Jewels", pytest.approx(1 / 3))
    ]
    # Eq. 4 pool and Eq. 5 top-R = 8 (the 9th, "kept at", has S_rel 0 and the last position)
    assert h1.pool_size == 9
    assert [c.relation for c in h1.initial] == [
        "written during imprisonment in", "composed during incarceration in",
        "written while imprisoned at", "written in", "related to", "published in", "genre",
        "wrote",
    ]
    assert [c.s_rel for c in h1.initial] == pytest.approx([1, 1, 1, 0.6, 0, 0, 0, 0])
    # the in-edge (William Penn wrote the book) induces William Penn, not the anchor
    assert h1.initial[-1].entity == "William Penn"
    # Eq. 6-8
    assert [c.entity for c in h1.top] == ["Tower of London", "The White Tower", "London"]
    assert [c.z for c in h1.top] == pytest.approx([0.90, 0.30, 0.29])
    assert list(h1.probabilities) == pytest.approx([62 / 65, 2 / 65, 1 / 65], rel=1e-5)
    assert h1.n_eff == pytest.approx(4225 / 3849, rel=1e-5)
    assert h1.state == "resolved" and h1.recovery is None
    # Eq. 13 (pool): every entity of C_top, best first
    assert h1.induced == ("Tower of London", "The White Tower", "London")

    # ---- hop 2: grounded through the binding of ?prison (Eq. 15)
    assert h2.kind == "P2" and h2.variable == "?year"
    assert [a.node_id for a in h2.anchors] == ["Tower of London", "The White Tower", "London"]
    assert all(a.via == "binding ?prison" and a.coverage is None for a in h2.anchors)
    assert h2.linearized == (
        "Tower of London or The White Tower or London used as a prison until ?year"
    )
    assert h2.pool_size == 10
    assert [c.relation for c in h2.initial] == [
        "used for imprisonment during", "held prisoners", "built in", "served as", "location",
        "attracts", "written during imprisonment in", "kept at",
    ]
    assert [c.text for c in h2.top] == [
        "Tower of London built in 1078",
        "Tower of London served as royal residence",
        "Tower of London location London",
    ]
    assert list(h2.probabilities) == pytest.approx([12 / 33, 11 / 33, 10 / 33], rel=1e-4)
    assert h2.n_eff == pytest.approx(1089 / 365, rel=1e-4)
    assert h2.n_eff == pytest.approx(2.98, abs=0.01)  # "nearly uniform, N_eff ≈ 3"
    assert h2.state == "unresolved" and h2.induced == ()

    # ---- textual recovery for tau1 (Eq. 11-12)
    rec = h2.recovery
    assert rec is not None and rec.scope == "all"
    assert rec.query_text == h2.linearized
    assert [x.passage_id for x in rec.pool] == [
        "p_prison", "p_palace", "p_medieval", "p_penn", "p_white", "p_flambard", "p_london",
        "p_tourism",
    ]
    assert [x.s_txt for x in rec.pool] == pytest.approx([0.96, 0.8, 0.8, 0.6, 0.6, 0.6, 0.28,
                                                         0.28])
    assert [x.passage_id for x in rec.kept] == ["p_prison", "p_palace", "p_white"]
    assert "1952" in rec.kept[0].text

    # reranker inputs are q ‖ Lin(τ) (Eq. 6 and Eq. 12)
    assert rr.queries[0] == QUERY + " | No Cross, No Crown written during imprisonment in ?prison"
    assert rr.queries[-1] == QUERY + " | " + h2.linearized

    # ---- bindings and blocks (Eq. 14, 16)
    assert res.bindings == {"?prison": ("Tower of London", "The White Tower", "London")}
    assert res.binding_cases == {"?prison": "single"}
    assert res.unbound == ("?year",)
    b1, b2 = res.blocks
    assert b1.header == "No Cross, No Crown written during imprisonment in ?prison"
    assert b1.state == "resolved" and not b1.recovery_used
    # the three structural candidates all cite p_penn: one passage, scored by the top p
    assert [(e.id, e.source) for e in b1.evidence] == [("p_penn", "structural")]
    assert b1.evidence[0].score == pytest.approx(62 / 65, rel=1e-5)
    assert b2.state == "unresolved" and b2.recovery_used
    assert [e.id for e in b2.evidence] == ["p_prison", "p_palace", "p_white"]
    assert [e.score for e in b2.evidence] == pytest.approx([0.9, 0.7, 0.6])
    assert "1952" in res.context and "[Block 2] ?prison used as a prison until ?year" in (
        res.context
    )
    # the JSON trace is serialisable and holds the same numbers
    t = json.loads(res.to_json())
    assert t["hops"][0]["n_eff"] == pytest.approx(4225 / 3849, rel=1e-5)
    assert t["hops"][1]["recovery_used"] is True


def test_figure5_dominant_binding_binds_tower_of_london_only() -> None:
    r, *_ = make(binding="dominant")
    res = r.retrieve(QUERY)
    h1, h2 = res.hops
    assert h1.induced == ("Tower of London",)
    assert res.binding_names == {"?prison": ("Tower of London",)}
    assert [a.node_id for a in h2.anchors] == ["Tower of London"]
    assert h2.linearized == "Tower of London used as a prison until ?year"
    assert h2.pool_size == 8  # 6 own edges + 2 in-edges
    assert h2.n_eff == pytest.approx(1089 / 365, rel=1e-4) and h2.state == "unresolved"
    assert h2.recovery is not None and h2.recovery.kept[0].passage_id == "p_prison"


async def test_figure5_async_equals_sync() -> None:
    r1, *_ = make()
    r2, *_ = make()
    sync = r1.retrieve(QUERY)
    asyn = await r2.aretrieve(QUERY)
    assert asyn.trace == sync.trace
    assert asyn.context == sync.context


def test_figure5_recovery_scope_anchor_filters_passages() -> None:
    # Only passages linked to the anchor are searched: cited by one of its edges, or
    # containing every token of its name.
    r, *_ = make(binding="dominant", recovery_scope="anchor")
    res = r.retrieve(QUERY)
    rec = res.hops[1].recovery
    assert rec is not None and rec.scope == "anchor"
    # Tower of London's edges cite p_white, p_palace, p_london, p_tourism, p_flambard,
    # p_medieval, p_penn, p_jewels; the 1952 passage names no anchor and is cited by no
    # edge (the missing bridge), so anchor-scoped recovery cannot find it.
    assert "p_prison" not in [x.passage_id for x in rec.pool]
    assert {x.passage_id for x in rec.pool} <= {
        "p_white", "p_palace", "p_london", "p_tourism", "p_flambard", "p_medieval",
        "p_penn", "p_jewels", "p_bridge", "p_hamlets",
    }


def test_rerank_input_constraint_sends_lin_tau_only() -> None:
    r, _, _, rr = make(binding="dominant", rerank_input="constraint")
    res = r.retrieve(QUERY)
    assert rr.queries[0] == "No Cross, No Crown written during imprisonment in ?prison"
    assert rr.queries[-1] == "Tower of London used as a prison until ?year"
    # the scripted scores do not depend on the query prefix: same decisions
    assert [h.state for h in res.hops] == ["resolved", "unresolved"]
