"""Semantic chunk graph construction: splitting, windows, blockwise edges, themes, cache."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from kgpath import (
    ConfigError,
    GraphError,
    HashingEmbedder,
    KnowledgeGraph,
    PathConstrainedRetriever,
    ScriptedLLM,
)
from kgpath.embeddings import BaseEmbedder
from kgpath.ingest.chunk_graph import (
    CachedEmbedder,
    ChunkGraphBuilder,
    ChunkGraphConfig,
    KeywordThemes,
    LLMThemes,
    abuild_chunk_graph,
    build_chunk_graph,
    load_chunk_graph,
    save_chunk_graph,
    similarity_edges,
)
from kgpath.ingest.chunking import sliding_windows, split_sentences
from kgpath.ingest.documents import SourceDocument
from kgpath.methods.traversal import ChunkGraphView, query_traversal


class KeywordEmbedder(BaseEmbedder):
    """Counts of a fixed vocabulary (whole lower-case words): hand-computable cosines."""

    def __init__(self, vocab: list[str]) -> None:
        self.vocab = vocab
        self._dim = len(vocab)
        self.batch_size = 1000
        self.show_progress = False
        self.seen: list[str] = []

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        self.seen.extend(texts)
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for r, t in enumerate(texts):
            words = re.findall(r"\w+", t.lower())
            for c, v in enumerate(self.vocab):
                out[r, c] = words.count(v)
            if not out[r].any():
                out[r, -1] = 1.0  # "other" axis so no vector is zero
        return out


# ---------------------------------------------------------------------- step 1
@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("One. Two! Three? Four", ["One.", "Two!", "Three?", "Four"]),
        ("Dr. Smith met J. K. Rowling in the U.S. in 1990. She left.",
         ["Dr. Smith met J. K. Rowling in the U.S. in 1990.", "She left."]),
        ('He said "Stop." Then he went (e.g. home). End',
         ['He said "Stop."', "Then he went (e.g. home).", "End"]),
        ("no capital. after this one", ["no capital. after this one"]),
        ("Para one\n\nPara two. Next.", ["Para one", "Para two.", "Next."]),
        ("3.14 is pi. 2 is even.", ["3.14 is pi.", "2 is even."]),
        ("   ", []),
    ],
)
def test_split_sentences(text, want):
    assert split_sentences(text) == want


def test_split_sentences_rejects_non_text():
    with pytest.raises(GraphError, match="int"):
        split_sentences(3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("n", "window", "stride", "want"),
    [
        (5, 3, 1, [(0, 3), (1, 4), (2, 5)]),
        (3, 3, 1, [(0, 3)]),
        (2, 3, 1, [(0, 2)]),
        (1, 3, 1, [(0, 1)]),
        (0, 3, 1, []),
        (6, 3, 2, [(0, 3), (2, 5), (3, 6)]),
        (7, 3, 3, [(0, 3), (3, 6), (4, 7)]),
        (4, 1, 1, [(0, 1), (1, 2), (2, 3), (3, 4)]),
    ],
)
def test_sliding_windows(n, window, stride, want):
    got = sliding_windows(n, window, stride)
    assert got == want
    covered = {i for s, e in got for i in range(s, e)}
    assert covered == set(range(n))


# ---------------------------------------------------------------------- step 2
def brute_force_edges(emb, groups, k, x):
    sim = emb @ emb.T
    out = set()
    for i in range(len(emb)):
        same = [j for j in range(len(emb)) if groups[j] == groups[i] and j != i]
        other = [j for j in range(len(emb)) if groups[j] != groups[i]]
        for pool, kk, flag in ((same, k, True), (other, x, False)):
            ranked = sorted(pool, key=lambda j: (-sim[i, j], j))[:kk]
            out |= {(i, j, flag) for j in ranked}
    return out, sim


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("block_elements", [1, 37, 1 << 20])
def test_similarity_edges_equal_brute_force_for_any_block_size(seed, block_elements):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, size=7)
    groups = np.repeat(np.arange(7), sizes)
    emb = rng.normal(size=(groups.size, 5)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    src, dst, sim, intra = similarity_edges(
        emb, groups, top_k_intra=2, top_x_inter=3, block_elements=block_elements
    )
    want, full = brute_force_edges(emb, groups, 2, 3)
    got = set(zip(src.tolist(), dst.tolist(), intra.tolist(), strict=True))
    assert got == want
    assert len(got) == src.size  # no duplicates
    np.testing.assert_allclose(sim, full[src, dst], atol=1e-6)
    assert np.all(np.diff(src) >= 0)


def test_similarity_edges_counts_and_hand_values():
    # 2-D: a0 (1,0) and a1 (0,1) in doc 0; b0 (cos 60 deg) alone in doc 1
    s = math.sqrt(3) / 2
    emb = np.array([[1, 0], [0, 1], [0.5, s]], dtype=np.float32)
    src, dst, sim, intra = similarity_edges(emb, np.array([0, 0, 1]), top_k_intra=10,
                                            top_x_inter=1)
    edges = {(a, b): (round(float(v), 4), bool(f))
             for a, b, v, f in zip(src, dst, sim, intra, strict=True)}
    assert edges == {
        (0, 1): (0.0, True), (0, 2): (0.5, False),
        (1, 0): (0.0, True), (1, 2): (round(s, 4), False),
        (2, 1): (round(s, 4), False),
    }


def test_similarity_edges_rejects_non_contiguous_groups():
    emb = np.eye(3, dtype=np.float32)
    with pytest.raises(GraphError, match="contiguous"):
        similarity_edges(emb, np.array([0, 1, 0]))


# ---------------------------------------------------------------------- builder
DOCS = {
    "Alpha": ["Alpha likes red apples.", "Red apples grow in orchards.",
              "Orchards need bees.", "Bees make honey."],
    "Beta": ["Beta studies honey bees.", "Bees dance."],
    "Gamma": "Gamma sells red cars. Cars need fuel. Fuel is costly.",
}


@pytest.fixture
def built():
    b = ChunkGraphBuilder(HashingEmbedder(64), config=ChunkGraphConfig(top_x_inter=2))
    return b, b.build(DOCS)


def test_builder_structure(built):
    b, g = built
    by_type: dict[str, list[str]] = {}
    for n in g.nodes:
        by_type.setdefault(n.type, []).append(n.id)
    assert by_type["document"] == ["doc:Alpha", "doc:Beta", "doc:Gamma"]
    assert by_type["chunk"] == ["chunk:Alpha:0", "chunk:Alpha:1", "chunk:Beta:0", "chunk:Gamma:0"]
    assert len(by_type["sentence"]) == 4 + 2 + 3
    assert set(g.passages) == {"Alpha", "Beta", "Gamma"}
    assert g.passage("Gamma").text == "Gamma sells red cars. Cars need fuel. Fuel is costly."
    assert g.node("chunk:Alpha:1").text == (
        "Red apples grow in orchards. Orchards need bees. Bees make honey.")
    assert g.node("chunk:Alpha:1").metadata["start"] == 1
    assert g.node("sent:Beta:1").provenance == ("Beta",)
    rel = [e.relation for e in g.edges]
    assert rel.count("has_chunk") == 4
    assert rel.count("has_sentence") == 3 + 3 + 2 + 3
    # intra: Alpha's 2 chunks point at each other; inter: 2 per chunk (top_x_inter=2)
    assert rel.count("similar_intra") == 2
    assert rel.count("similar_inter") == 4 * 2
    assert b.stats.chunks == 4 and b.stats.sentences == 9 and b.stats.documents == 3
    assert not g.vectors.missing()
    for e in g.edges:
        if e.type == "similarity":
            assert e.weight == pytest.approx(max(e.metadata["similarity"], 0.0), abs=1e-5)


def test_themes_are_inherited_and_linked(built):
    _, g = built
    themes = g.node("doc:Alpha").metadata["themes"]
    assert len(themes) == 5 and g.node("doc:Alpha").metadata["theme_source"] == "keywords"
    for nid in ("chunk:Alpha:0", "chunk:Alpha:1", "sent:Alpha:3"):
        assert g.node(nid).metadata["themes"] == themes
    for t in themes:
        assert g.edges_between("doc:Alpha", f"theme:{t}")[0].relation == "has_theme"
        assert g.edges_between(f"theme:{t}", "doc:Alpha")[0].relation == "theme_of"
    # one node per distinct theme, listing exactly the documents that have it
    for n in g.nodes:
        if n.type == "theme":
            want = [d for d in ("Alpha", "Beta", "Gamma")
                    if n.name in g.node(f"doc:{d}").metadata["themes"]]
            assert n.metadata["documents"] == want and list(n.provenance) == want


def test_embeddings_are_deduplicated_and_title_prefixed():
    # the article's construction: every node's own text is embedded
    emb = KeywordEmbedder(["a", "b", "other"])
    g = build_chunk_graph({"T": ["a b.", "b."]}, embedder=emb,
                          config=ChunkGraphConfig(theme_nodes=False, embedding="nodes"))
    # doc and its single chunk share the text "T. a b. b."; sentences are "T. a b.", "T. b."
    assert sorted(emb.seen) == sorted(["T. a b. b.", "T. a b.", "T. b."])
    assert len(g) == 4
    np.testing.assert_allclose(g.vectors.matrix[g.index_of("sent:T:1")], [0, 1, 0])
    emb2 = KeywordEmbedder(["a", "b", "other"])
    build_chunk_graph({"T": ["a b.", "b."]}, embedder=emb2,
                      config=ChunkGraphConfig(theme_nodes=False, title_prefix=False,
                                              embedding="nodes"))
    assert sorted(emb2.seen) == sorted(["T. a b. b.", "a b. b.", "a b.", "b."])


def test_sentence_mode_embeds_each_sentence_once_and_derives_the_rest():
    emb = KeywordEmbedder(["a", "b", "other"])
    b = ChunkGraphBuilder(emb, config=ChunkGraphConfig(theme_nodes=False, window=2,
                                                       embedding="sentences"))
    g = b.build({"T": ["a b.", "b.", "a."]})
    assert emb.seen == ["T. a b.", "T. b.", "T. a."] and b.stats.texts_embedded == 3
    r = 1 / math.sqrt(2)
    vec = {n.id: g.vectors.matrix[i] for i, n in enumerate(g.nodes)}
    np.testing.assert_allclose(vec["sent:T:0"], [r, r, 0], atol=1e-6)
    np.testing.assert_allclose(vec["sent:T:1"], [0, 1, 0], atol=1e-6)
    np.testing.assert_allclose(vec["sent:T:2"], [1, 0, 0], atol=1e-6)
    # window (0, 2): (r, r) + (0, 1) = (r, 1 + r), whose direction is 67.5 degrees
    np.testing.assert_allclose(vec["chunk:T:0"], [math.cos(3 * math.pi / 8),
                                                  math.sin(3 * math.pi / 8), 0], atol=1e-6)
    np.testing.assert_allclose(vec["chunk:T:1"], [r, r, 0], atol=1e-6)  # (0,1) + (1,0)
    np.testing.assert_allclose(vec["doc:T"], [r, r, 0], atol=1e-6)  # (1 + r, 1 + r, 0)
    # identical sentence texts are embedded once, whichever document holds them
    emb2 = KeywordEmbedder(["a", "b", "other"])
    g2 = build_chunk_graph({"T": ["a."], "U": ["a."]}, embedder=emb2,
                           config=ChunkGraphConfig(theme_nodes=False, title_prefix=False,
                                                   embedding="sentences"))
    assert emb2.seen == ["a."]
    np.testing.assert_allclose(g2.vectors.matrix[g2.index_of("doc:U")], [1, 0, 0])
    # without sentence nodes the sentences are still embedded to derive the windows
    emb3 = KeywordEmbedder(["a", "b", "other"])
    g3 = build_chunk_graph({"T": ["a b.", "b.", "a."]}, embedder=emb3, config=ChunkGraphConfig(
        theme_nodes=False, sentence_nodes=False, window=2, embedding="sentences"))
    assert emb3.seen == ["T. a b.", "T. b.", "T. a."]
    np.testing.assert_allclose(g3.vectors.matrix[g3.index_of("chunk:T:1")], [r, r, 0], atol=1e-6)


def test_derived_windows_mode_embeds_documents_and_sentences():
    emb = KeywordEmbedder(["a", "b", "other"])
    b = ChunkGraphBuilder(emb, config=ChunkGraphConfig(theme_nodes=False, window=2,
                                                       embedding="derived_windows"))
    g = b.build({"T": ["a b.", "b.", "a."]})
    # the document's own text "T. a b. b. a." (2 a, 2 b) instead of the sum of sentences
    assert emb.seen == ["T. a b.", "T. b.", "T. a.", "T. a b. b. a."]
    r = 1 / math.sqrt(2)
    np.testing.assert_allclose(g.vectors.matrix[g.index_of("doc:T")], [r, r, 0], atol=1e-6)
    np.testing.assert_allclose(g.vectors.matrix[g.index_of("chunk:T:0")],
                               [math.cos(3 * math.pi / 8), math.sin(3 * math.pi / 8), 0],
                               atol=1e-6)
    emb2 = KeywordEmbedder(["a", "b", "other"])
    g2 = build_chunk_graph({"T": ["a a b."]}, embedder=emb2, config=ChunkGraphConfig(
        theme_nodes=False, embedding="derived_windows"))
    assert emb2.seen == ["T. a a b."]  # one-sentence document: one text
    want = np.array([2, 1, 0]) / math.sqrt(5)
    for nid in ("doc:T", "chunk:T:0", "sent:T:0"):
        np.testing.assert_allclose(g2.vectors.matrix[g2.index_of(nid)], want, atol=1e-6)


@pytest.mark.parametrize("mode", ["nodes", "derived_windows", "sentences"])
def test_themes_keep_their_own_vectors(mode):
    g = build_chunk_graph(DOCS, embedder=HashingEmbedder(64),
                          config=ChunkGraphConfig(embedding=mode))
    e = HashingEmbedder(64)
    themes = [(i, n) for i, n in enumerate(g.nodes) if n.type == "theme"]
    assert themes
    want = e.embed_passages([n.search_text for _, n in themes])
    np.testing.assert_allclose(g.vectors.matrix[[i for i, _ in themes]], want, atol=1e-6)


def test_embedding_mode_is_validated():
    with pytest.raises(ConfigError,
                       match="embedding must be 'sentences', 'derived_windows', 'nodes' or 'late'"):
        ChunkGraphConfig(embedding="windows")


def test_similarity_edges_on_keyword_corpus():
    # vocab axes: apple, car, bee. One-sentence docs -> one chunk each.
    emb = KeywordEmbedder(["apple", "car", "bee", "other"])
    docs = {"d1": ["apple apple bee."], "d2": ["apple bee bee."], "d3": ["car."]}
    g = build_chunk_graph(docs, embedder=emb, config=ChunkGraphConfig(
        top_x_inter=1, title_prefix=False, theme_nodes=False))
    # cos(d1, d2) = (2 + 2) / 5 = 0.8; cos(d1, d3) = cos(d2, d3) = 0
    e = g.edges_between("chunk:d1:0", "chunk:d2:0")[0]
    assert e.relation == "similar_inter" and e.weight == pytest.approx(0.8)
    assert g.edges_between("chunk:d2:0", "chunk:d1:0")[0].weight == pytest.approx(0.8)
    (e3,) = g.edges_between("chunk:d3:0", "chunk:d1:0")  # tie at 0 -> lowest index
    assert e3.weight == 0.0 and not g.edges_between("chunk:d3:0", "chunk:d2:0")


def test_input_forms():
    emb = HashingEmbedder(32)
    cfg = ChunkGraphConfig(theme_nodes=False)
    g1 = build_chunk_graph(["First text. Second one.", "Other doc."], embedder=emb, config=cfg)
    from kgpath.ingest.documents import content_digest, content_id

    first = content_id(content_digest("", ["First text.", "Second one."], {}))  # no id: hash
    assert [p for p in g1.passages] == [first, content_id(content_digest("", ["Other doc."], {}))]
    assert g1.node(f"chunk:{first}:0").name == ""
    g2 = build_chunk_graph([("T1", "A b. C d."), SourceDocument("x", "Title X", ("S.",))],
                           embedder=emb, config=cfg)
    assert g2.node("doc:x").name == "Title X" and g2.passage("T1").metadata["title"] == "T1"
    b = ChunkGraphBuilder(emb, config=cfg)
    g3 = b.build({"empty": [], "full": "Some text."})
    assert b.stats.skipped_documents == ["empty"] and "doc:empty" not in g3
    with pytest.raises(GraphError, match="duplicate document id 'a'"):
        build_chunk_graph([("a", "x."), ("a", "y.")], embedder=emb)
    with pytest.raises(GraphError, match="single string"):
        build_chunk_graph("just a string", embedder=emb)
    with pytest.raises(GraphError, match="no document"):
        build_chunk_graph({"e": ""}, embedder=emb)
    with pytest.raises(GraphError, match="non-string sentence 3"):
        build_chunk_graph({"e": ["ok", 3]}, embedder=emb)


def test_chunk_graph_from_documents_reads_every_document_kind():
    from types import SimpleNamespace

    from kgpath.ingest.chunk_graph import chunk_graph_from_documents

    lc = SimpleNamespace(page_content="Bees make honey. Honey is sweet.", id=None,
                         metadata={"title": "Bees"})
    li = SimpleNamespace(node_id="n1", get_content=lambda: "Hives house bees.", metadata={})
    graph, emb = chunk_graph_from_documents(["Ants dig. Ants carry leaves.", lc, li],
                                            embedder=HashingEmbedder(32))
    assert isinstance(emb, HashingEmbedder)
    docs = {n.id: dict(n.metadata) for n in graph.nodes if n.type == "document"}
    from kgpath.ingest.documents import content_digest, content_id

    ants = content_id(content_digest("", ["Ants dig.", "Ants carry leaves."], {}))
    bees = content_id(content_digest("Bees", ["Bees make honey.", "Honey is sweet."],
                                     {"title": "Bees"}))
    assert list(docs) == [f"doc:{ants}", f"doc:{bees}", "doc:n1"]  # content hash or node_id
    assert docs[f"doc:{bees}"]["num_sentences"] == 2 and docs["doc:n1"]["num_sentences"] == 1
    assert graph.node(f"doc:{bees}").name == "Bees"  # the title
    assert graph.passage(bees).metadata == {"title": "Bees"}
    # the one coercer also reads mappings with "text" (the entity graph's forms)
    g2, _ = chunk_graph_from_documents([{"id": "m", "text": "Moths fly.", "title": "M"}],
                                       embedder=emb)
    assert g2.node("doc:m").name == "M"
    with pytest.raises(GraphError, match="document #0"):
        chunk_graph_from_documents([3], embedder=HashingEmbedder(32))


@pytest.mark.parametrize(
    "kwargs",
    [{"window": 0}, {"stride": 0}, {"stride": 4}, {"top_k_intra": -1}, {"num_themes": 1.5},
     {"block_elements": 0}, {"top_x_inter": True}],
)
def test_config_validation(kwargs):
    with pytest.raises(ConfigError):
        ChunkGraphConfig(**kwargs)


def test_config_defaults_follow_article():
    c = ChunkGraphConfig()
    assert (c.window, c.stride, c.top_k_intra, c.num_themes) == (3, 1, 10, 5)


# ---------------------------------------------------------------------- themes
def test_keyword_themes_tfidf_by_hand():
    docs = [
        SourceDocument("1", "", ("Zebra zebra lion.",)),
        SourceDocument("2", "", ("Lion tiger.",)),
    ]
    (t1, src), (t2, _) = KeywordThemes().extract(docs, 2)
    # doc 1 terms: zebra x2, lion, "zebra zebra", "zebra lion"; N = 2
    # idf(df=1) = ln(3/2) + 1 = 1.405, idf(df=2) = 1: zebra 2.81, "zebra zebra" 1.405,
    # "zebra lion" 1.405, lion 1.0. Both bigrams share words with the chosen "zebra"
    # (subset or superset) -> skipped; then lion.
    assert t1 == ["zebra", "lion"] and src == "keywords"
    # doc 2: tiger 1.405, "lion tiger" 1.405 (contains tiger -> skipped), lion 1.0
    assert t2 == ["tiger", "lion"]


def test_llm_themes_and_fallback():
    llm = ScriptedLLM(['["Bee Biology", "honey", "honey"]', "I cannot do that"])
    b = ChunkGraphBuilder(HashingEmbedder(32), llm=llm)
    assert isinstance(b.themes, LLMThemes)
    g = b.build({"Beta": ["Beta studies honey bees.", "Bees dance."],
                 "Gamma": ["Gamma sells red cars."]})
    assert g.node("doc:Beta").metadata["themes"] == ["bee biology", "honey"]
    assert g.node("doc:Beta").metadata["theme_source"] == "llm"
    assert g.node("doc:Gamma").metadata["theme_source"] == "keywords (llm reply unusable)"
    assert g.node("doc:Gamma").metadata["themes"][0] == "gamma"
    assert "Title: Beta" in llm.prompts[0] and "5 main themes" in llm.prompts[0]
    assert "theme:bee biology" in g
    assert b.stats.theme_source == {"llm": 1, "keywords (llm reply unusable)": 1}


class InFlightLLM:
    """Async LLM recording the largest number of concurrent calls."""

    def __init__(self) -> None:
        self.now = self.peak = self.calls = 0

    def complete(self, prompt):
        raise AssertionError("abuild must use acomplete")

    async def acomplete(self, prompt):
        import asyncio

        self.now += 1
        self.calls += 1
        self.peak = max(self.peak, self.now)
        await asyncio.sleep(0.01)
        self.now -= 1
        return '{"themes": ["topic"]}'


async def test_abuild_runs_llm_calls_concurrently():
    llm = InFlightLLM()
    docs = {f"d{i}": [f"Document number {i}."] for i in range(12)}
    g = await abuild_chunk_graph(docs, embedder=HashingEmbedder(32), llm=llm,
                                 config=ChunkGraphConfig(llm_concurrency=5))
    assert llm.calls == 12 and llm.peak == 5
    assert g.node("theme:topic").metadata["documents"] == [f"d{i}" for i in range(12)]
    sync = build_chunk_graph(docs, embedder=HashingEmbedder(32),
                             llm=ScriptedLLM(lambda p: '["topic"]'))
    assert [n.id for n in sync.nodes] == [n.id for n in g.nodes]
    np.testing.assert_allclose(sync.vectors.matrix, g.vectors.matrix)


# ---------------------------------------------------------------------- cache & persistence
class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(32)
        self.texts = 0

    def _embed(self, texts, kind):
        self.texts += len(texts)
        return super()._embed(texts, kind)

    def __repr__(self) -> str:
        return "CountingEmbedder(32)"


def test_cache_dir_reuses_embeddings(tmp_path):
    e1 = CountingEmbedder()
    g1 = build_chunk_graph(DOCS, embedder=e1, cache_dir=tmp_path)
    assert e1.texts > 0
    e2 = CountingEmbedder()
    b = ChunkGraphBuilder(e2, cache_dir=tmp_path)
    g2 = b.build(DOCS)
    assert e2.texts == 0 and b.stats.cache_hits == b.stats.texts_embedded
    np.testing.assert_array_equal(g1.vectors.matrix, g2.vectors.matrix)
    # a new document embeds only its own texts
    # a new one-sentence document embeds one new text: its document, chunk and sentence
    # share the search text "Brand new sentence." (the title "New" already occurs in it)
    e3 = CountingEmbedder()
    build_chunk_graph({**DOCS, "New": ["Brand new sentence."]}, embedder=e3, cache_dir=tmp_path,
                      config=ChunkGraphConfig(theme_nodes=False))
    assert e3.texts == 1


def test_cache_small_slices_and_corruption(tmp_path):
    c = CachedEmbedder(CountingEmbedder(), tmp_path, save_every=2)
    a = c.embed_passages(["x", "y", "z", "x"])
    assert c.misses == 3 and c.hits == 0  # the repeated "x" is embedded once
    assert len(c.segments("passage")) == 2  # slices of save_every = 2
    np.testing.assert_array_equal(a[3], a[0])
    c2 = CachedEmbedder(CountingEmbedder(), tmp_path)
    np.testing.assert_array_equal(c2.embed_passages(["z", "x"]), a[[2, 0]])
    assert c2.embedder.texts == 0 and c2.hits == 2
    # a corrupt segment is ignored (its texts are embedded again) and rewritten
    for seg in c.segments("passage"):
        seg.write_bytes(b"not an npz")
    c3 = CachedEmbedder(CountingEmbedder(), tmp_path)
    np.testing.assert_array_equal(c3.embed_passages(["x"]), a[[0]])
    assert c3.corrupt == 2 and c3.embedder.texts == 1 and c3.misses == 1
    assert len(c3.segments("passage")) == 1
    with pytest.raises(ConfigError):
        CachedEmbedder(CountingEmbedder(), tmp_path, save_every=0)


def test_save_load_roundtrip_keeps_traversal(tmp_path, built):
    _, g = built
    save_chunk_graph(g, tmp_path / "g")
    g2 = load_chunk_graph(tmp_path / "g")
    q = HashingEmbedder(64).embed_queries(["honey bees"])[0]
    assert query_traversal(g2, q).path_ids == query_traversal(g, q).path_ids
    v1, v2 = ChunkGraphView(g), ChunkGraphView(g2)
    np.testing.assert_array_equal(v1.adj, v2.adj)
    with pytest.raises(GraphError, match="not a chunk graph"):
        save_chunk_graph(KnowledgeGraph.from_triples([("a", "r", "b")]), tmp_path / "x")
    KnowledgeGraph.from_triples([("a", "r", "b")]).save(tmp_path / "plain")
    with pytest.raises(GraphError, match="not a chunk graph"):
        load_chunk_graph(tmp_path / "plain")


def test_pcr_runs_on_the_chunk_graph(built):
    _, g = built
    pcr = PathConstrainedRetriever(g, embedder=HashingEmbedder(64))
    res = pcr.retrieve("honey bees", anchor="doc:Beta", k=5)
    assert res.hits and all(h.path[0] == "doc:Beta" for h in res.hits)
    assert res.reachable_count > 1
