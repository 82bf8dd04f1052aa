"""Path-aware scoring (kgpath extension): textualised paths, one embedding call, mixing."""

from __future__ import annotations

import pytest

from kgpath import ConfigError, GraphIndex, KnowledgeGraph
from kgpath.backends.cypher import EmbeddedCypherDriver, load_graph
from kgpath.graph import Edge
from kgpath.methods.pcr import (
    CypherPCR,
    PathConstrainedRetriever,
    humanize_relation,
    mix_scores,
    textualize_path,
)

NAMES = {"mc": "Marie Curie", "wa": "Warsaw", "so": "Sorbonne"}
Q = "where was she born"
VECS = {
    Q: [1.0, 0.0],
    # node texts: Sorbonne looks most like the question on its own
    "Marie Curie": [0.0, 1.0],           # node 0.0; also the anchor's path of length 0
    "Warsaw": [0.0, 1.0],                # node 0.0
    "Sorbonne": [0.6, 0.8],              # node 0.6
    # path texts
    "Marie Curie born in Warsaw": [0.8, 0.6],        # path 0.8
    "Marie Curie worked at Sorbonne": [0.0, 1.0],    # path 0.0
    "something born in something": [0.6, 0.8],       # relations-only texts
    "something worked at something": [0.8, 0.6],
}


@pytest.fixture
def graph() -> KnowledgeGraph:
    g = KnowledgeGraph()
    for nid, name in NAMES.items():
        g.add_node(nid, name=name)
    g.add_edge("mc", "wa", relation="born_in")
    g.add_edge("mc", "so", relation="worked_at")
    return g


def test_textualize_path_keeps_edge_direction_and_masks():
    born = Edge("mc", "wa", "born_in")
    assert textualize_path(["mc", "wa"], [born], NAMES) == "Marie Curie born in Warsaw"
    # walked backwards: the triple is still written in its own direction
    assert textualize_path(["wa", "mc"], [born], NAMES) == "Marie Curie born in Warsaw"
    assert textualize_path(["wa", "mc"], [born], NAMES, mask=True) == "something born in something"
    two = [born, Edge("mc", "so", "worked_at")]
    assert textualize_path(["wa", "mc", "so"], two, NAMES) == (
        "Marie Curie born in Warsaw, Marie Curie worked at Sorbonne")
    assert textualize_path(["mc"], [], NAMES) == "Marie Curie"
    assert textualize_path([], [], NAMES) == ""
    assert humanize_relation("  has_imdb__rating ") == "has imdb rating"
    assert humanize_relation(None) == "related to"
    assert mix_scores([0.8], [0.0], 0.25).tolist() == [pytest.approx(0.2)]


def test_node_path_and_mixed_rankings_hand_computed(graph, table_embedder):
    emb = table_embedder(VECS)
    pcr = PathConstrainedRetriever(graph, embedder=emb)
    node = pcr.retrieve(Q, anchor="mc")
    assert node.ids == ["so", "mc", "wa"]  # 0.6, then ties 0.0 in BFS order
    emb.calls.clear()
    path = pcr.retrieve(Q, anchor="mc", score="path")
    assert path.ids == ["wa", "mc", "so"]  # 0.8, then ties 0.0 in BFS order
    assert [round(h.score, 4) for h in path.hits] == [0.8, 0.0, 0.0]
    assert (path.hits[0].node_score, path.hits[0].path_score) == pytest.approx((0.0, 0.8))
    # one query embedding, one call for all path texts
    assert [k for k, _ in emb.calls] == ["query", "passage"]
    assert sorted(emb.calls[1][1]) == sorted(
        ["Marie Curie", "Marie Curie born in Warsaw", "Marie Curie worked at Sorbonne"])
    assert path.trace["score"] == "path"
    mixed = pcr.retrieve(Q, anchor="mc", score="mixed")  # 0.7·path + 0.3·node
    assert mixed.ids == ["wa", "so", "mc"]
    assert [round(h.score, 4) for h in mixed.hits] == [0.56, 0.18, 0.0]
    half = pcr.retrieve(Q, anchor="mc", score="mixed", path_weight=0.5)
    assert [round(h.score, 4) for h in half.hits] == [0.4, 0.3, 0.0]
    light = pcr.retrieve(Q, anchor="mc", score="mixed", path_weight=0.25)
    assert light.ids == ["so", "wa", "mc"]  # 0.45, 0.2, 0.0
    assert [round(h.score, 4) for h in light.hits] == [0.45, 0.2, 0.0]


def test_relations_only_texts_are_shared_and_embedded_once(graph, table_embedder):
    graph.add_node("kr", name="Krakow")
    graph.add_edge("mc", "kr", relation="born_in")  # same relation chain as Warsaw
    emb = table_embedder({**VECS, "Krakow": [0.0, 1.0]})
    pcr = PathConstrainedRetriever(graph, embedder=emb)
    emb.calls.clear()
    res = pcr.retrieve(Q, anchor="mc", score="path", path_text="relations")
    assert res.ids == ["so", "wa", "kr", "mc"]  # 0.8, 0.6, 0.6 (BFS order), 0.0
    texts = emb.calls[-1][1]
    assert sorted(texts) == sorted(
        ["Marie Curie", "something born in something", "something worked at something"])


def test_path_options_validated(graph, table_embedder):
    pcr = PathConstrainedRetriever(graph, embedder=table_embedder(VECS))
    for bad in (dict(score="paths"), dict(path_weight=1.5), dict(path_text="names"),
                dict(path_weight=True)):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            pcr.retrieve(Q, anchor="mc", **bad)


def test_path_scores_same_on_the_cypher_backend(graph, table_embedder, tmp_path):
    emb = table_embedder(VECS)
    idx = GraphIndex(graph, emb)
    drv = EmbeddedCypherDriver.open(tmp_path / "db")
    try:
        schema = load_graph(drv, idx)
        db = CypherPCR(drv, embedder=emb, schema=schema)
        for kw in (dict(score="path"), dict(score="mixed"), dict(score="path", max_depth=0)):
            a = PathConstrainedRetriever(idx).retrieve(Q, anchor="mc", **kw)
            b = db.retrieve(Q, anchor="mc", **kw)
            assert [(h.id, h.path) for h in b.hits] == [(h.id, h.path) for h in a.hits]
            assert [h.score for h in b.hits] == pytest.approx([h.score for h in a.hits])
    finally:
        drv.close()


def test_async_path_scoring_embeds_off_the_event_loop(graph, table_embedder):
    import asyncio
    import threading

    emb = table_embedder(VECS)
    seen: list[str] = []
    sync_embed = emb.embed_passages

    def recording(texts):
        seen.append(threading.current_thread().name)
        return sync_embed(texts)

    emb.embed_passages = recording
    pcr = PathConstrainedRetriever(graph, embedder=emb)

    async def run():
        loop_thread = threading.current_thread().name
        res = await pcr.aretrieve(Q, anchor="mc", score="path")
        return loop_thread, res

    loop_thread, res = asyncio.run(run())
    assert res.ids == pcr.retrieve(Q, anchor="mc", score="path").ids == ["wa", "mc", "so"]
    assert seen and seen[0] != loop_thread  # the path texts were embedded in a worker
