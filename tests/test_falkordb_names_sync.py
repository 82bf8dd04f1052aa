"""The name token index beside the database follows document updates (``DatabaseIndex``).

Truth: after every push (add, upsert, delete, a rename that keeps the node count, by document
and by id), the index in ``vector_dir`` holds exactly what a fresh
:func:`~kgpath.backends.cypher.names.write_name_tokens` of the updated graph holds (ids in
order, every token's postings, the token count), and ``CypherC2RAG`` over the database (one
made before the updates, and a fresh one) returns what the in-memory C2RAG returns over the
updated index (``assert_same`` of ``tests/test_falkordb_c2rag.py``: plan, hops, bindings,
blocks, evidence; passage metadata as a mapping), reading names from the index (no
``CONTAINS`` scan). A push whose statements fail leaves the previous index readable and
unchanged; the retried push writes the new one. The files alone, and the staging on the
embedded engine, need no server.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from kgpath import BackendError, GraphIndex, HashingEmbedder
from kgpath.backends.cypher import CypherBackend, EmbeddedCypherDriver
from kgpath.backends.cypher import sync as syncmod
from kgpath.backends.cypher.names import (
    NameTokenFiles,
    NameTokens,
    NameTokenWriter,
    name_tokens,
    stage_name_tokens,
    write_name_tokens,
)
from kgpath.backends.cypher.sync import DatabaseIndex
from kgpath.errors import PersistenceError
from kgpath.ingest import ChunkingConfig
from kgpath.methods.c2rag import C2RAGResult, ConstraintCheckedRetriever, CypherC2RAG
from kgpath.testing.falkordb import fail_statement
from tests.test_falkordb_c2rag import Recorder, close, evidence_rows
from tests.test_falkordb_delete import Capitalised

_days = itertools.count(1)
SENTENCES = [
    "Marie Curie met Pierre Curie in Paris",
    "Curie worked in Warsaw",
    "Pierre Curie taught Einstein",
    "Einstein visited Warsaw and Paris",
    "Bohr met Einstein",
    "Niels Bohr lived in Copenhagen",
    "Lise Meitner wrote to Bohr",
    "Curies met Bohr",
    "The Curies lived in Copenhagen",
]
QUESTIONS = ["Who did Marie Curie meet in Paris?", "Where did Curie work?",
             "Who taught Einstein?", "Where did Niels Bohr live?", "Who met The Curies?",
             "Who is Niels Henrik Bohr?", "Where is Copenhagen?"]


def text(*sentences: str) -> str:
    """Sentences made distinct by a day number (equal passage texts tie in the scores)."""
    return " ".join(f"{s} on day {next(_days)}." for s in sentences)


def build(docs: list[tuple[str, str]], emb: Any) -> GraphIndex:
    return GraphIndex.from_documents(docs, embedder=emb, extractor=Capitalised(),
                                     chunking=ChunkingConfig(max_chars=60))


def index_rows(directory: Any, vocab: set[str]) -> tuple[list[str], int, dict[str, list[int]]]:
    """Ids in order, the token count and the postings of ``vocab`` (read through the header)."""
    idx = NameTokens(directory)
    try:
        return idx.ids(range(idx.count)), idx.tokens, {t: idx.lookup(t).tolist() for t in vocab}
    finally:
        idx.close()


def vocabulary(index: GraphIndex) -> set[str]:
    return {t for n in index.graph.nodes for t in name_tokens(n.name)}


def assert_index_is_fresh(vector_dir: Path, index: GraphIndex, ref_dir: Path,
                          extra: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    """The index equals a fresh write of the graph (and lists nothing for ``extra`` tokens
    the graph no longer holds)."""
    g = index.graph
    write_name_tokens(ref_dir, [n.id for n in g.nodes], [n.name for n in g.nodes])
    vocab = vocabulary(index) | set(extra) | {"zzz"}
    assert index_rows(vector_dir, vocab) == index_rows(ref_dir, vocab)


def assert_equal(a: C2RAGResult, b: C2RAGResult) -> None:
    """``assert_same`` of ``tests/test_falkordb_c2rag.py``, passage metadata as a mapping.

    The database stores a passage's metadata as JSON with sorted keys; in memory a document
    passage keeps ``{"doc_id", "chunk_index"}`` in insertion order (the same mapping).
    """
    assert b.plan == a.plan
    trace = {k: v for k, v in b.trace.items() if k not in ("backend", "seconds", "queries")}
    close(a.trace, trace, "trace")  # plan, hops (candidates, scores, recovery), bindings
    assert (b.bindings, b.binding_cases, b.binding_names) == (
        a.bindings, a.binding_cases, a.binding_names)
    close([dataclasses.asdict(x) for x in a.blocks], [dataclasses.asdict(x) for x in b.blocks],
          "blocks")
    assert b.context == a.context and not b.whole_graph
    plain = dataclasses.replace(a, config=dataclasses.replace(a.config, rerank=None))
    for output in ("passages", "native"):
        rows = [[*r[:4], sorted(r[4].items()), r[5]] for r in evidence_rows(plain, output)]
        close(rows, [[*r[:4], sorted(r[4].items()), r[5]] for r in evidence_rows(b, output)],
              output)


def data_files(directory: Path) -> set[str]:
    return {f for f in os.listdir(directory) if f.startswith("names") and
            not f.endswith(".json")}


# -- the files alone --------------------------------------------------------------------------
def test_names_a_reader_keeps_its_generation_and_the_directory_follows(tmp_path):
    write_name_tokens(tmp_path, ["a", "b"], ["Marie Curie", "Pierre Curie"])
    files = NameTokenFiles(tmp_path)
    held = files.current()
    assert held is files.current() and held.generation == 1
    write_name_tokens(tmp_path, ["c", "a", "b"], ["Curie's lab", "Marie", None])
    assert held.lookup("curie").tolist() == [0, 1] and held.ids([0, 1]) == ["a", "b"]
    now = files.current()
    assert now is not held and (now.count, now.generation) == (3, 2)
    assert now.lookup("curie").tolist() == [0] and now.lookup("b").tolist() == [2]
    assert now.ids([0, 1, 2]) == ["c", "a", "b"]
    assert len(data_files(tmp_path)) == 6  # one generation (held keeps the old one open)
    os.unlink(tmp_path / "names.json")
    with pytest.raises(BackendError, match="no name index"):
        files.current()


def test_names_a_staged_index_is_invisible_until_published(tmp_path):
    write_name_tokens(tmp_path, ["a"], ["Bohr"])
    before = data_files(tmp_path)
    staged = stage_name_tokens(tmp_path, ["x", "y"], ["Einstein", "Niels Bohr"])
    assert NameTokens(tmp_path).ids([0]) == ["a"] and NameTokens(tmp_path).count == 1
    staged.discard()
    assert data_files(tmp_path) == before and NameTokens(tmp_path).lookup("bohr").tolist() == [0]
    with pytest.raises(RuntimeError, match="boom"):
        with NameTokenWriter(tmp_path) as w:
            w.append(["z"], ["Zed"])
            raise RuntimeError("boom")
    assert data_files(tmp_path) == before
    staged = stage_name_tokens(tmp_path, ["x", "y"], ["Einstein", "Niels Bohr"])
    staged.publish()
    assert NameTokens(tmp_path).lookup("bohr").tolist() == [1]
    assert len(data_files(tmp_path)) == 6 and NameTokens(tmp_path).generation == 2


def test_names_first_format_index_is_still_read_and_replaced(tmp_path):
    """A header without ``stem`` names ``names.<ext>`` (indexes written before generations)."""
    write_name_tokens(tmp_path, ["a", "b"], ["Marie Curie", "Bohr"])
    for f in data_files(tmp_path):
        os.rename(tmp_path / f, tmp_path / ("names" + f[f.index("."):]))
    head = json.loads((tmp_path / "names.json").read_text())
    del head["generation"], head["stem"]
    (tmp_path / "names.json").write_text(json.dumps(head))
    old = NameTokens(tmp_path)
    assert old.generation == 0 and old.lookup("bohr").tolist() == [1]
    write_name_tokens(tmp_path, ["c"], ["Curie"])
    assert not (tmp_path / "names.tok").exists() and len(data_files(tmp_path)) == 6
    assert NameTokens(tmp_path).ids([0]) == ["c"] and NameTokens(tmp_path).generation == 1


def test_names_concurrent_readers_never_see_a_torn_index(tmp_path):
    """Generation g names g + 1 nodes ``g:i`` all ``w<g>``: while 30 generations are
    published, readers (one NameTokenFiles, and fresh opens) always see one whole index."""
    def write(g: int) -> None:
        write_name_tokens(tmp_path, [f"{g}:{i}" for i in range(g + 1)], [f"w{g}"] * (g + 1),
                          chunk=3)

    write(0)
    files, seen, stop = NameTokenFiles(tmp_path), [], threading.Event()

    def read() -> None:
        while not stop.is_set():
            for idx in (files.current(), NameTokens(tmp_path)):
                g = idx.count - 1
                assert idx.tokens == 1 and idx.lookup(f"w{g}").tolist() == list(range(g + 1))
                assert idx.ids(range(g + 1)) == [f"{g}:{i}" for i in range(g + 1)]
                seen.append(g)

    with ThreadPoolExecutor(2) as pool:
        readers = [pool.submit(read) for _ in range(2)]
        for g in range(1, 31):
            write(g)
        stop.set()
        for r in readers:
            r.result()  # re-raises a reader's assertion
    assert seen and files.current().count == 31


# -- staging through pushes, on the embedded engine --------------------------------------------
def test_names_sync_stages_only_when_names_move(tmp_path, monkeypatch):
    emb = HashingEmbedder(16)
    docs = [("a", text(SENTENCES[0])), ("b", text(SENTENCES[5]))]
    drv = EmbeddedCypherDriver.open(tmp_path / "db")
    try:
        vdir = tmp_path / "v"
        db = DatabaseIndex(build(docs, emb), drv, vector_dir=vdir)
        assert NameTokens(vdir).generation == 1  # load writes it
        assert_index_is_fresh(vdir, db.index, tmp_path / "ref")
        db.upsert_documents([("a", text(SENTENCES[0]))])  # new text, same nodes and names
        assert NameTokens(vdir).generation == 1
        old = vocabulary(db.index)
        db.add_documents([("c", text(SENTENCES[6]))])
        assert NameTokens(vdir).generation == 2
        assert_index_is_fresh(vdir, db.index, tmp_path / "ref")
        db.index.graph.add_node("Bohr", name="Niels Henrik Bohr")  # same id, count kept
        db.push()
        assert NameTokens(vdir).generation == 3 and NameTokens(vdir).lookup("henrik").size == 1
        assert_index_is_fresh(vdir, db.index, tmp_path / "ref", old)

        def no_disk(*args: Any, **kw: Any) -> Any:
            raise PersistenceError("disk full (test)")

        real = drv.run
        sent = itertools.count()
        monkeypatch.setattr(drv, "run", lambda *a, **k: (next(sent), real(*a, **k))[1])
        monkeypatch.setattr(syncmod, "stage_name_tokens", no_disk)
        before = data_files(vdir)
        db.index.graph.add_node("Bohr", name="Bohr")
        with pytest.raises(PersistenceError, match="disk full"):
            db.push()
        assert next(sent) == 0 and data_files(vdir) == before  # no statement, no new file
        monkeypatch.undo()
        db.delete_documents(["a"])
        assert NameTokens(vdir).generation == 4
        assert_index_is_fresh(vdir, db.index, tmp_path / "ref", old)
        os.unlink(vdir / "names.json")  # no index: the next push writes one
        db.push()
        assert NameTokens(vdir).generation == 1
        assert_index_is_fresh(vdir, db.index, tmp_path / "ref", old)
    finally:
        drv.close()


def test_names_sync_embedded_c2rag_follows_a_rename(tmp_path):
    emb = HashingEmbedder(64)
    drv = EmbeddedCypherDriver.open(tmp_path / "db")
    try:
        db = DatabaseIndex(build([("a", text(SENTENCES[7])), ("b", text(SENTENCES[8]))], emb),
                           drv, vector_dir=tmp_path / "v")
        c2 = CypherC2RAG(drv, embedder=emb, schema=db.schema, vectors=tmp_path / "v")
        names = [n.name for n in db.index.graph.nodes]
        db.upsert_documents([("a", text("The " + SENTENCES[7]))])  # Curies -> The Curies
        assert len(names) == len(db.index.graph) and names != [n.name for n in db.index.graph.nodes]
        mem = ConstraintCheckedRetriever(db.index)
        for q in QUESTIONS:
            assert_equal(mem.retrieve(q), c2.retrieve(q))
    finally:
        drv.close()


# -- FalkorDB ---------------------------------------------------------------------------------
def assert_c2rag_follows(db: DatabaseIndex, readers: list[CypherC2RAG], ref_dir: Path,
                         extra: set[str]) -> int:
    """The index is fresh and C2RAG over the database equals memory; returns how many
    questions found an anchor."""
    assert_index_is_fresh(db.vector_dir, db.index, ref_dir, extra)  # type: ignore[arg-type]
    if not len(db.index.graph):
        return 0
    anchored = 0
    fresh = CypherC2RAG(db.driver, embedder=db.embedder, schema=db.schema,
                        vectors=db.vector_dir)
    mem = ConstraintCheckedRetriever(db.index)
    with Recorder(db.driver) as rec:
        for q in QUESTIONS:
            want = mem.retrieve(q)
            anchored += bool(want.hops and want.hops[0].anchors)
            for c2 in [*readers, fresh]:
                assert_equal(want, c2.retrieve(q))
    assert rec.queries and not any("CONTAINS" in q for q in rec.queries)
    return anchored


def apply(model: list[tuple[str, str]], db: DatabaseIndex, rnd: random.Random) -> None:
    """One random update that succeeds (add of a new id, upsert, delete of a held id)."""
    held = [d for d, _ in model]
    kind = rnd.choice(["add", "upsert", "delete"] if held else ["add"])
    body = text(*rnd.sample(SENTENCES, rnd.randint(1, 3)))
    if kind == "delete":
        doc = rnd.choice(held)
        db.delete_documents([doc])
        model[:] = [d for d in model if d[0] != doc]
    elif kind == "upsert":
        doc = rnd.choice(held)
        db.upsert_documents([(doc, body)])
        model[:] = [(d, body if d == doc else t) for d, t in model]
    else:
        doc = f"d{next(_days)}"
        db.add_documents([(doc, body)])
        model.append((doc, body))


@pytest.mark.falkordb
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_names_sync_random_updates_equal_in_memory(falkordb_graphs, tmp_path, seed):
    emb = HashingEmbedder(64)
    rnd = random.Random(seed)
    model = [(f"s{i}", text(*rnd.sample(SENTENCES, 2))) for i in range(3)]
    drv = falkordb_graphs()
    db = DatabaseIndex(build(model, emb), drv, vector_dir=tmp_path / "v")
    reader = CypherC2RAG(CypherBackend(drv, embedder=emb, schema=db.schema,
                                       vectors=tmp_path / "v"))  # made once, before updates
    seen: set[str] = set()
    anchored = 0
    for _ in range(6):
        seen |= vocabulary(db.index)
        anchored += assert_c2rag_follows(db, [reader], tmp_path / "ref", seen)
        apply(model, db, rnd)
    assert anchored + assert_c2rag_follows(db, [reader], tmp_path / "ref", seen) >= 10


@pytest.mark.falkordb
def test_names_sync_renames_that_keep_the_node_count(falkordb_graphs, tmp_path):
    """By document ("Curies" becomes "The Curies": a new id at the same order) and by id
    (the node ``Bohr`` renamed in place): the count is unchanged, the new name is found by
    its new tokens and no longer by its old ones."""
    emb = HashingEmbedder(64)
    docs = [("a", text(SENTENCES[7])), ("b", text(SENTENCES[8])), ("c", text(SENTENCES[4]))]
    drv = falkordb_graphs()
    db = DatabaseIndex(build(docs, emb), drv, vector_dir=tmp_path / "v")
    reader = CypherC2RAG(drv, embedder=emb, schema=db.schema, vectors=tmp_path / "v")
    seen = vocabulary(db.index)
    assert_c2rag_follows(db, [reader], tmp_path / "ref", seen)
    count = len(db.index.graph)
    db.upsert_documents([("a", text("The " + SENTENCES[7]))])
    assert len(db.index.graph) == count and db.index.graph.node_at(0).id == "The Curies"
    assert_c2rag_follows(db, [reader], tmp_path / "ref", seen)
    assert reader.retrieve("Who met The Curies?").hops[0].anchors
    db.index.graph.add_node("Bohr", name="Niels Henrik Bohr")
    db.push()
    assert len(db.index.graph) == count and NameTokens(db.vector_dir).lookup("henrik").size
    assert_c2rag_follows(db, [reader], tmp_path / "ref", seen)
    anchors = reader.retrieve("Who is Niels Henrik Bohr?").hops[0].anchors
    assert "Bohr" in {a.node_id for a in anchors}


@pytest.mark.falkordb
def test_names_sync_a_failed_push_keeps_the_old_index(falkordb_graphs, tmp_path, monkeypatch):
    emb = HashingEmbedder(64)
    docs = [("a", text(SENTENCES[0])), ("b", text(SENTENCES[3])), ("c", text(SENTENCES[5]))]
    drv = falkordb_graphs()
    vdir = tmp_path / "v"
    db = DatabaseIndex(build(docs, emb), drv, vector_dir=vdir)
    reader = CypherC2RAG(drv, embedder=emb, schema=db.schema, vectors=vdir)
    seen = vocabulary(db.index)
    head, before = (vdir / "names.json").read_text(), data_files(vdir)
    rows = index_rows(vdir, seen)
    held = NameTokenFiles(vdir).current()
    restore = fail_statement(monkeypatch, drv, at=2)  # the push's third statement fails
    with pytest.raises(BackendError, match="connection lost"):
        db.delete_documents(["a"])
    restore()
    assert (vdir / "names.json").read_text() == head and data_files(vdir) == before
    assert index_rows(vdir, seen) == rows  # the old index, whole and readable
    db.push()  # the update the index kept
    assert held.ids(range(held.count)) == rows[0]  # a holder keeps its generation
    assert NameTokens(vdir).generation == held.generation + 1
    assert_c2rag_follows(db, [reader], tmp_path / "ref", seen)
