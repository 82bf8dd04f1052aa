"""Mention layer and the ``mention_expansion`` extension on a hand-written corpus.

Every node of document ``d`` is embedded as the unit vector ``V[d]`` (the hand embedder
below looks for the earliest title in the text; the builder prefixes titles, so a node's
text always starts with, or first names, its own title). The query vector is ``e1``, so
``cos(q, d)`` is the first coordinate of ``V[d]``:

    Alpha Film            0.90   "... It was shot in Beta Town."   -> mentions Beta Town
    Beta Town (village)   0.30
    Delta                 0.32
    Epsilon               0.25   "... older than Zeta."            -> mentions Zeta
    Zeta                  0.20
    Common                0.10   named by Alpha Film, Delta, Epsilon, Zeta (df = 4 of 7)
    Up                    (title too short to match)

Mention edges by hand (sentence -> document): Alpha Film:1 -> Beta Town (village),
Alpha Film:2 -> Common, Delta:1 -> Common, Epsilon:1 -> Zeta, Epsilon:1 -> Common,
Zeta:1 -> Common. "went up" does not link to a document titled "Up" (2 characters).

mention_expansion, β = 0.05, γ = 0.05, max_title_df = 0.5 (Common, df 4 > 3.5, is dropped).
No title is in the question "Where was the film shot?", so s(d) = cos(q, d). The best
unlinked partner of every document but Alpha Film is Alpha Film (0.90); Alpha Film's is
Delta (0.32).

    Alpha Film  max(0.90 + 0.32, 0.90 + 0.30 + 0.05 [Beta]) = 1.25   partner Beta, linked
    Beta Town   0.30 + 0.90 + 0.05                            = 1.25   partner Alpha, linked
    Delta       0.32 + 0.90                                   = 1.22
    Epsilon     max(0.25 + 0.90, 0.25 + 0.20 + 0.05)          = 1.15
    Zeta        max(0.20 + 0.90, 0.20 + 0.25 + 0.05)          = 1.10
    Common      0.10 + 0.90                                   = 1.00

Ranking: Alpha Film, Beta Town (tie at 1.25, broken by s), Delta, Epsilon, Zeta; dense
order would be Alpha Film, Delta, Beta Town, ...

Comparison question "Is Epsilon older than Zeta?" with γ = 1: s(Epsilon) = 1.25,
s(Zeta) = 1.20 (others unchanged). Epsilon = Zeta = 1.25 + 1.20 + 0.05 = 2.50;
Alpha Film = 0.90 + 1.25 = 2.15; Delta = 0.32 + 1.25 = 1.57; Beta = 0.30 + 1.25 = 1.55.
Ranking: Epsilon, Zeta, Alpha Film, Delta, Beta Town.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from kgpath import ConfigError, GraphError, KnowledgeGraph
from kgpath.embeddings import BaseEmbedder
from kgpath.ingest.chunk_graph import (
    EDGE_MENTIONS,
    REL_MENTIONS,
    ChunkGraphBuilder,
    ChunkGraphConfig,
    TitleMatcher,
    add_mention_edges,
    normalize_title,
    title_tokens,
)
from kgpath.ingest.documents import SourceDocument
from kgpath.methods.traversal import (
    EXTENSIONS,
    ChunkGraphView,
    MentionExpansionConfig,
    TraversalRetriever,
    chain_scores,
    format_traversal,
    mention_expansion,
    question_mentions,
    seed_scores,
)


def unit(first: float, axis: int) -> list[float]:
    v = [0.0] * 8
    v[0] = first
    v[axis] = math.sqrt(1 - first * first)
    return v


V = {
    "Alpha Film": unit(0.90, 1),
    "Beta Town (village)": unit(0.30, 2),
    "Delta": unit(0.32, 3),
    "Epsilon": unit(0.25, 4),
    "Zeta": unit(0.20, 5),
    "Common": unit(0.10, 6),
}
#: Keys the embedder looks for (a node's text names its own document first).
KEYS = {"alpha film": "Alpha Film", "beta town": "Beta Town (village)", "delta": "Delta",
        "epsilon": "Epsilon", "zeta": "Zeta", "common": "Common"}
Q = np.asarray([1.0] + [0.0] * 7, dtype=np.float32)

DOCS = [
    SourceDocument("Alpha Film", "Alpha Film", (
        "Alpha Film is a 1986 horror movie.",
        "It was shot in Beta Town.",
        "Its poster is Common.",
    )),
    SourceDocument("Beta Town (village)", "Beta Town (village)", (
        "Beta Town is a small village.",
        "The price of bread went up there.",
    )),
    SourceDocument("Delta", "Delta", ("Delta is a river delta.", "The delta is Common.")),
    SourceDocument("Epsilon", "Epsilon", (
        "Epsilon is a pop band.", "It is older than Zeta and Common.")),
    SourceDocument("Zeta", "Zeta", ("Zeta is a rock band.", "Zeta is Common.")),
    SourceDocument("Common", "Common", ("Common is a word.",)),
    SourceDocument("Up", "Up", ("Up is a film.",)),
]


class HandEmbedder(BaseEmbedder):
    """Vector of the earliest document key in the text; queries all map to ``Q``."""

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        out = []
        for t in texts:
            if kind == "query":
                out.append(Q)
                continue
            low = t.lower()
            hits = [(low.find(k), -len(k), d) for k, d in KEYS.items() if k in low]
            out.append(V[min(hits)[2]] if hits else unit(0.0, 7))
        return np.asarray(out, dtype=np.float32)


CFG = ChunkGraphConfig(window=2, top_k_intra=1, top_x_inter=1, theme_nodes=False)
MCFG = MentionExpansionConfig(link_bonus=0.05, question_bonus=0.05, max_title_df=0.5)


@pytest.fixture(scope="module")
def graph() -> KnowledgeGraph:
    return ChunkGraphBuilder(HandEmbedder(), config=CFG).build(DOCS)


def mention_pairs(g: KnowledgeGraph) -> set[tuple[str, str]]:
    return {(e.source, e.target) for e in g.edges if e.relation == REL_MENTIONS}


# ---------------------------------------------------------------------- normalisation
@pytest.mark.parametrize(
    ("title", "want"),
    [
        ("Lilu (mythology)", "lilu"),
        ("Alexandria International Airport (Louisiana)", "alexandria international airport"),
        ("Pick Me Up (magazine)", "pick me up"),
        ("Woman's Viewpoint", "woman s viewpoint"),
        ("  AC/DC ", "ac dc"),
        ("Foo (bar) baz", "foo bar baz"),  # only a *trailing* parenthetical is dropped
        ("Film (1945 film) (remake)", "film 1945 film"),  # only one
        ("(album)", "album"),  # nothing before the parenthesis: keep its content
        ("Alû", "alû"),
        ("Straße", "strasse"),  # casefold, not lower
        ("", ""),
    ],
)
def test_normalize_title(title, want):
    assert normalize_title(title) == want
    assert title_tokens(title) == tuple(want.split())


def test_normalize_title_rejects_non_strings():
    with pytest.raises(GraphError, match="int"):
        normalize_title(3)  # type: ignore[arg-type]


def test_matcher_whole_words_longest_first_and_skips():
    m = TitleMatcher({
        "NY": "New York", "NYC": "New York City", "G": "Gamma", "U": "Up",
        "Y": "1999", "L1": "Lilu (mythology)", "L2": "Lilu (ancient China)",
    })
    assert sorted(m.skipped) == ["U", "Y"]  # 2 characters; no letter
    assert m.find("New York City Hall") == ["NYC"]  # leftmost-longest, not also "NY"
    assert m.find("new york, then NEW YORK CITY") == ["NY", "NYC"]
    assert m.find("Gammas and alphagamma and gamma-rays") == ["G"]  # 'gamma' token only
    assert m.find("It went up in 1999.") == []
    assert m.find("Lilu is a demon.") == ["L1", "L2"]  # ambiguous titles: both
    assert m.matches("Gamma, Gamma") == [("gamma", ("G",)), ("gamma", ("G",))]
    with pytest.raises(ConfigError, match="min_chars"):
        TitleMatcher({}, min_chars=0)


# ---------------------------------------------------------------------- mention layer
def test_builder_adds_hand_computed_mention_edges(graph):
    assert mention_pairs(graph) == {
        ("sent:Alpha Film:1", "doc:Beta Town (village)"),
        ("sent:Alpha Film:2", "doc:Common"),
        ("sent:Delta:1", "doc:Common"),
        ("sent:Epsilon:1", "doc:Zeta"),
        ("sent:Epsilon:1", "doc:Common"),
        ("sent:Zeta:1", "doc:Common"),
    }
    e = graph.edges_between("sent:Alpha Film:1", "doc:Beta Town (village)")[0]
    assert e.type == EDGE_MENTIONS and e.weight == 1.0
    assert e.metadata["title"] == "beta town"
    assert e.provenance == ("Alpha Film", "Beta Town (village)")


def test_add_mention_edges_on_a_graph_without_them_and_idempotent():
    b = ChunkGraphBuilder(HandEmbedder(),
                          config=ChunkGraphConfig(**{**CFG.__dict__, "mention_edges": False}))
    g = b.build(DOCS)
    assert not mention_pairs(g) and b.stats.mention_edges == 0
    st = add_mention_edges(g)
    assert st.edges == 6 and st.titles == 6 and st.skipped_titles == ["Up"]
    assert st.sources == sum(1 for n in g.nodes if n.type == "sentence")
    assert add_mention_edges(g).edges == 0  # duplicates merge


def test_add_mention_edges_needs_document_nodes():
    g = KnowledgeGraph()
    g.add_node("x", name="x", text="x", type="chunk")
    with pytest.raises(GraphError, match="document"):
        add_mention_edges(g)


def _synthetic_graph(n: int) -> KnowledgeGraph:
    g = KnowledgeGraph()
    for i in range(n):
        g.add_node(f"doc:D{i}", name=f"Entity number{i}", text="", type="document",
                   metadata={"doc_id": f"D{i}"})
    for i in range(n):
        text = (f"Entity number{i} met Entity number{(i + 1) % n} "
                f"and Entity number{(i + 7) % n} in town.")
        g.add_node(f"sent:D{i}:0", name=f"Entity number{i}", text=text, type="sentence",
                   metadata={"doc_id": f"D{i}"}, provenance=(f"D{i}",))
    return g


def test_mention_layer_memory_grows_linearly():
    """Peak memory of building the layer for 4x the documents is far below 16x."""
    peaks = {}
    for n in (300, 1200):
        g = _synthetic_graph(n)
        tracemalloc.start()
        st = add_mention_edges(g)
        peaks[n] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert st.edges == 2 * n
    assert peaks[1200] / peaks[300] < 8  # linear ~4x; an n x n structure would be ~16x


# ---------------------------------------------------------------------- the method
def test_chain_scores_by_hand(graph):
    view = ChunkGraphView(graph)
    layer = view.mention_layer()
    s = seed_scores(layer, Q, question_mentions(layer, "Where was the film shot?"), MCFG)
    pos = layer.doc_pos
    assert s[pos["Alpha Film"]] == pytest.approx(0.90, abs=1e-6)
    assert layer.df[pos["Common"]] == 4 and layer.df[pos["Zeta"]] == 1
    score, keep = chain_scores(layer, s, MCFG)
    want = {"Alpha Film": 1.25, "Beta Town (village)": 1.25, "Delta": 1.22,
            "Epsilon": 1.15, "Zeta": 1.10, "Common": 1.00}
    for d, v in want.items():
        assert score[pos[d]] == pytest.approx(v, abs=1e-6), d
    assert int(keep.sum()) == 2  # the 4 edges into Common (df 4 > 0.5 * 7) are dropped


def test_mention_expansion_order_and_path(graph):
    r = mention_expansion(graph, Q, query="Where was the film shot?", config=MCFG)
    assert r.documents == ["Alpha Film", "Beta Town (village)", "Delta", "Epsilon", "Zeta"]
    assert r.algorithm == "mention_expansion" and r.stop_reason == "max_documents"
    a, b, d = r.path[0], r.path[1], r.path[2]
    assert a.reason == "mentions: Beta Town (village)" and a.origin_id is None
    assert b.reason == "mentioned_by: Alpha Film"
    assert b.origin_id == a.chunk_id and b.transition_similarity == pytest.approx(0.27, abs=1e-5)
    assert d.reason == "seed: dense" and d.transition_similarity is None
    assert [s.score for s in r.path] == pytest.approx([1.25, 1.25, 1.22, 1.15, 1.10], abs=1e-6)
    docs = r.trace["documents"]
    assert docs[1]["partner"] == "Alpha Film" and docs[1]["edge"] == "mentioned_by"
    assert docs[0]["evidence"] == ["sent:Alpha Film:1"]
    # the sentence carrying the link is kept even though it is not the most query-similar
    assert "sent:Alpha Film:1" in {s.id for s in r.sentences if s.doc_id == "Alpha Film"}
    assert all(len(st.new_sentences) <= MCFG.sentences_per_document for st in r.path)
    assert "-(" in format_traversal(r, graph)


def test_question_mentions_seed_comparison_questions(graph):
    cfg = MentionExpansionConfig(link_bonus=0.05, question_bonus=1.0, max_title_df=0.5)
    r = mention_expansion(graph, Q, query="Is Epsilon older than Zeta?", config=cfg)
    assert r.trace["question_mentions"] == ["Epsilon", "Zeta"]
    assert r.documents == ["Epsilon", "Zeta", "Alpha Film", "Delta", "Beta Town (village)"]
    assert [s.score for s in r.path] == pytest.approx([2.5, 2.5, 2.15, 1.57, 1.55], abs=1e-6)
    assert r.path[0].reason == "mentions: Zeta"


def test_without_links_it_is_dense_order(graph):
    cfg = MentionExpansionConfig(max_title_df=0.1, max_documents=3)  # every title dropped
    r = mention_expansion(graph, Q, query="Where was the film shot?", config=cfg)
    assert r.documents == ["Alpha Film", "Delta", "Beta Town (village)"]
    assert r.trace["mention_links"] == 0


def test_config_validation():
    for bad in ({"link_bonus": -0.1}, {"question_bonus": float("nan")},
                {"max_title_df": 0}, {"max_title_df": 1.5}, {"max_documents": 0},
                {"sentences_per_document": True}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            MentionExpansionConfig(**bad)
    with pytest.raises(ConfigError, match="mention_edges"):
        ChunkGraphConfig(mention_edges=1)  # type: ignore[arg-type]


def test_dimension_mismatch(graph):
    with pytest.raises(GraphError, match="dimension 3"):
        mention_expansion(graph, np.ones(3, np.float32))


async def test_retriever_exposes_the_extension_by_name(graph):
    assert EXTENSIONS == ("mention_expansion",)
    r = TraversalRetriever(graph, embedder=HandEmbedder(), algorithm="mention_expansion",
                           mention_config=MCFG)
    sync = r.retrieve("Where was the film shot?")
    assert sync.documents[:2] == ["Alpha Film", "Beta Town (village)"]
    asy = await r.aretrieve("Where was the film shot?")
    assert asy.documents == sync.documents and asy.path == sync.path
    both = r.retrieve_all("Where was the film shot?",
                          algorithms=("query_traversal", "mention_expansion"))
    assert both["mention_expansion"].documents == sync.documents
    assert r.retrieve("Where?", algorithm="query_traversal").algorithm == "query_traversal"


def test_check_algorithm():
    from kgpath.methods.traversal import ALGORITHMS, check_algorithm

    for a in ALGORITHMS + EXTENSIONS:
        assert check_algorithm(a) == a
    with pytest.raises(ConfigError, match="'bfs'"):
        check_algorithm("bfs")
    with pytest.raises(ConfigError, match="'bfs'"):
        TraversalRetriever(KnowledgeGraph(), algorithm="bfs")


async def test_async_build_adds_the_same_mention_layer(graph):
    b = ChunkGraphBuilder(HandEmbedder(), config=CFG)
    g = await b.abuild(DOCS)
    assert mention_pairs(g) == mention_pairs(graph) and b.stats.mention_edges == 6
    assert b.stats.as_dict()["mention_edges"] == 6 and "mention_edges" in b.stats.seconds
