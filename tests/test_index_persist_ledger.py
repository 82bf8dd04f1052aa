"""A reopened index updates by document exactly like the one that was saved.

``GraphIndex.save`` writes the document ledger (``ledger.json``), the extractor's name and
the node-vector mode; ``GraphIndex.load`` restores them. Every check compares with a build
from scratch on the final documents (:func:`assert_same_index` of
``tests/test_document_lifecycle.py``: nodes, edges, passages, node and passage vectors,
retrieval of four methods), in the same process, in a fresh one, and over random
sequences of updates, saves and loads.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgpath import GraphIndex, HashingEmbedder
from kgpath.errors import ConfigError, PersistenceError
from kgpath.index.saved_ledger import SavedExtractor
from tests.test_document_lifecycle import (
    CHUNKING,
    IDS,
    OPS,
    SENTENCES,
    TEXTS,
    Scripted,
    apply,
    assert_same_index,
    build,
)

pytestmark = pytest.mark.filterwarnings("ignore:PathRAG num_nodes:UserWarning")
ROOT = Path(__file__).resolve().parents[1]


def reopen(index: GraphIndex, path: Path, **kw: Any) -> GraphIndex:
    index.save(path)
    return GraphIndex.load(path, **kw)


def test_a_reopened_index_updates_like_the_saved_one(tmp_path: Path) -> None:
    emb = HashingEmbedder(32)
    docs = [("a", SENTENCES[0] + " " + SENTENCES[1]), ("b", SENTENCES[3]),
            ("c", SENTENCES[6])]
    index = build(docs, emb)
    ex = Scripted()
    again = reopen(index, tmp_path / "ix", extractor=ex)
    assert again.ledger is not None and list(again.ledger.documents) == ["a", "b", "c"]
    assert again.ledger.extractor is ex and again.node_vectors == "passage_mean"
    assert again.last_build is None  # the report of a build this process did not make
    assert_same_index(again, docs, emb)
    again.upsert_documents([("b", SENTENCES[5]), ("d", SENTENCES[2])])
    again.delete_documents(["a"])
    again.add_documents([("e", SENTENCES[4])])
    assert ex.calls == [SENTENCES[5], SENTENCES[2], SENTENCES[4]]  # only the new texts
    final = [("b", SENTENCES[5]), ("c", SENTENCES[6]), ("d", SENTENCES[2]),
             ("e", SENTENCES[4])]
    assert_same_index(again, final, emb)
    # the same updates on the index that was saved give the same index
    index.upsert_documents([("b", SENTENCES[5]), ("d", SENTENCES[2])])
    index.delete_documents(["a"])
    index.add_documents([("e", SENTENCES[4])])
    assert list(index.graph.nodes) == list(again.graph.nodes)
    assert list(index.graph.edges) == list(again.graph.edges)


def test_async_updates_of_a_reopened_index_equal_a_rebuild(tmp_path: Path) -> None:
    emb = HashingEmbedder(32)
    docs = [("a", SENTENCES[0]), ("b", SENTENCES[3] + " " + SENTENCES[4])]
    again = reopen(build(docs, emb), tmp_path / "ix", extractor=Scripted())

    async def run() -> None:
        await again.aupsert_documents([("a", SENTENCES[6])])
        await again.aadd_documents([("c", SENTENCES[1])])
        await again.adelete_documents(["b"])

    asyncio.run(run())
    assert_same_index(again, [("a", SENTENCES[6]), ("c", SENTENCES[1])], emb)


def test_text_node_vectors_are_kept_across_a_save(tmp_path: Path) -> None:
    emb = HashingEmbedder(32)
    docs = [("a", SENTENCES[0] + " " + SENTENCES[1]), ("b", SENTENCES[3])]
    again = reopen(build(docs, emb, node_vectors="text"), tmp_path / "ix",
                   extractor=Scripted())
    assert again.node_vectors == "text"
    again.upsert_documents([("a", SENTENCES[4])])
    again.delete_documents(["b"])
    assert_same_index(again, [("a", SENTENCES[4])], emb)


def test_a_saved_failure_is_retried_after_the_load(tmp_path: Path) -> None:
    emb = HashingEmbedder(32)
    index = GraphIndex.from_documents([("a", SENTENCES[0]), ("b", SENTENCES[1])],
                                      embedder=emb, extractor=Scripted(fail=("Warsaw",)),
                                      chunking=CHUNKING)
    ex = Scripted()
    again = reopen(index, tmp_path / "ix", extractor=ex)
    assert again.ledger is not None and again.ledger.failed == {"b"}
    again.add_documents([("c", SENTENCES[5])])
    assert ex.calls == [SENTENCES[1], SENTENCES[5]]
    assert_same_index(again, [("a", SENTENCES[0]), ("b", SENTENCES[1]),
                              ("c", SENTENCES[5])], emb)


def test_without_extractor_a_stand_in_deletes_exactly_and_refuses_to_read(
        tmp_path: Path) -> None:
    emb = HashingEmbedder(32)
    docs = [("a", SENTENCES[0]), ("b", SENTENCES[3] + " " + SENTENCES[4])]
    again = reopen(build(docs, emb), tmp_path / "ix")
    ex = again.ledger.extractor
    assert isinstance(ex, SavedExtractor) and ex.name == "scripted"
    assert ex.cls == "tests.test_document_lifecycle.Scripted"
    again.upsert_documents([("a", SENTENCES[0])])  # unchanged: nothing to read
    again.delete_documents(["a"])
    assert_same_index(again, [("b", SENTENCES[3] + " " + SENTENCES[4])], emb)
    before = list(again.graph.nodes)
    with pytest.raises(ConfigError, match="'scripted'.*extractor="):
        again.add_documents([("c", SENTENCES[6])])
    assert list(again.ledger.documents) == ["b"] and list(again.graph.nodes) == before
    again.add_documents([("c", SENTENCES[6])], extractor=Scripted())  # given per update
    assert_same_index(again, [("b", SENTENCES[3] + " " + SENTENCES[4]),
                              ("c", SENTENCES[6])], emb)
    third = reopen(again, tmp_path / "ix2")  # saved again: still the original's name
    assert third.ledger.extractor.cls == "tests.test_document_lifecycle.Scripted"
    third.delete_documents(["b"])
    assert_same_index(third, [("c", SENTENCES[6])], emb)


def test_an_extractor_of_another_name_is_refused(tmp_path: Path) -> None:
    class Other(Scripted):
        name = "other"

    build([("a", SENTENCES[0])], HashingEmbedder(16)).save(tmp_path / "ix")
    with pytest.raises(ConfigError, match="'scripted'.*'other'"):
        GraphIndex.load(tmp_path / "ix", extractor=Other())
    with pytest.raises(ConfigError, match="dict"):
        GraphIndex.load(tmp_path / "ix", extractor={})


def test_the_spacy_extractor_is_rebuilt_from_its_saved_settings(tmp_path: Path) -> None:
    from kgpath.index.saved_ledger import extractor_record, restore_ledger
    from kgpath.ingest.spacy_extractor import SpacyExtractor

    ex = SpacyExtractor(cooccurrence=False, max_path=3, batch_size=8)
    rec = extractor_record(ex)
    assert rec == {"name": "spacy", "class": "kgpath.ingest.spacy_extractor.SpacyExtractor",
                   "spacy": {"model": "en_core_web_sm", "cooccurrence": False,
                             "concepts": True, "terms": True, "max_path": 3,
                             "batch_size": 8}}
    # a saved index whose record names spaCy gets a SpacyExtractor with those settings
    index = build([("a", SENTENCES[0])], HashingEmbedder(16))
    index.ledger.extractor = ex  # as if built with it (the records are the same family)
    index.save(tmp_path / "ix")
    meta = json.loads((tmp_path / "ix" / "index.json").read_text())
    assert meta["extractor"] == rec and meta["node_vector_mode"] == "passage_mean"
    again = GraphIndex.load(tmp_path / "ix")
    got = again.ledger.extractor
    assert type(got) is SpacyExtractor and extractor_record(got) == rec
    assert callable(restore_ledger)


def test_an_index_without_a_ledger_still_loads_and_updates_by_provenance(
        tmp_path: Path) -> None:
    from kgpath.ingest import graph_from_documents

    g = graph_from_documents([("a", SENTENCES[0]), ("b", SENTENCES[4])], extractor=Scripted())
    index = GraphIndex(g, HashingEmbedder(16))
    index.build()
    again = reopen(index, tmp_path / "ix")
    assert again.ledger is None and not (tmp_path / "ix" / "ledger.json").exists()
    paris = again.graph.node("Paris")
    report = again.delete_documents(["a"])
    assert (report.documents_deleted, report.passages_removed) == (1, 1)
    assert "Marie Curie" not in again.graph
    assert again.graph.node("Paris").provenance == ("b",)
    assert again.graph.node("Paris").text == paris.text  # kept: not a rebuild


def test_a_ledger_that_no_longer_describes_the_graph_is_not_saved(tmp_path: Path) -> None:
    index = build([("a", SENTENCES[0])], HashingEmbedder(16))
    index.graph.add_passage("hand", "Added by hand.")
    with pytest.warns(UserWarning, match="edited directly"):
        index.save(tmp_path / "ix")
    assert GraphIndex.load(tmp_path / "ix").ledger is None


# ---------------------------------------------------------------------- corrupt / forged
def forge(path: Path, edit: Any) -> None:
    """Rewrite ledger.json with ``edit`` applied and fix its checksum in the manifest."""
    f = path / "ledger.json"
    data = f.read_bytes()
    new = edit(data)
    f.write_bytes(new)
    man = json.loads((path / "manifest.json").read_text())
    man["files"]["ledger.json"] = {"sha256": hashlib.sha256(new).hexdigest(),
                                   "size": len(new)}
    (path / "manifest.json").write_text(json.dumps(man))


def _json_edit(fn: Any) -> Any:
    def edit(data: bytes) -> bytes:
        obj = json.loads(data)
        fn(obj)
        return json.dumps(obj).encode()
    return edit


def _text(obj: dict[str, Any]) -> None:
    obj["documents"][0]["passages"][0]["text"] = "Forged text."


def _digest(obj: dict[str, Any]) -> None:
    obj["documents"][0]["digest"] = "0" * 64


def _record(obj: dict[str, Any]) -> None:
    obj["records"] = {}


def _version(obj: dict[str, Any]) -> None:
    obj["version"] = 99


def _order(obj: dict[str, Any]) -> None:
    obj["documents"].reverse()


@pytest.mark.parametrize("edit, match", [
    (lambda b: b[:-7], "ledger.json is corrupt"),
    (lambda b: b"[]", "ledger.json is corrupt"),
    (_json_edit(_version), "ledger.json is corrupt.*version"),
    (_json_edit(_text), "ledger.json does not match.*passages"),
    (_json_edit(_order), "ledger.json does not match.*passages"),
    (_json_edit(_digest), "ledger.json does not match.*digest"),
    (_json_edit(_record), "ledger.json does not match.*record"),
])
def test_a_forged_ledger_is_a_persistence_error_naming_it(tmp_path: Path, edit: Any,
                                                           match: str) -> None:
    docs = [("a", SENTENCES[0] + " " + SENTENCES[1]), ("b", SENTENCES[3])]
    build(docs, HashingEmbedder(16)).save(tmp_path / "ix")
    forge(tmp_path / "ix", edit)
    with pytest.raises(PersistenceError, match=match):
        GraphIndex.load(tmp_path / "ix", extractor=Scripted())


def test_a_corrupt_ledger_is_caught_by_its_checksum(tmp_path: Path) -> None:
    build([("a", SENTENCES[0])], HashingEmbedder(16)).save(tmp_path / "ix")
    f = tmp_path / "ix" / "ledger.json"
    f.write_bytes(f.read_bytes().replace(b"Curie", b"Curia"))
    with pytest.raises(PersistenceError, match="checksum of ledger.json"):
        GraphIndex.load(tmp_path / "ix")


# ---------------------------------------------------------------------- fresh process
def test_a_fresh_process_updates_the_reopened_index_like_a_rebuild(tmp_path: Path) -> None:
    emb = HashingEmbedder(32)
    docs = [("a", SENTENCES[0] + " " + SENTENCES[1]), ("b", SENTENCES[3]),
            ("c", SENTENCES[6])]
    build(docs, emb).save(tmp_path / "ix")
    script = textwrap.dedent(f"""
        from kgpath import GraphIndex
        from tests.test_document_lifecycle import SENTENCES, Scripted
        ex = Scripted()
        index = GraphIndex.load({str(tmp_path / "ix")!r}, extractor=ex)
        index.upsert_documents([("b", SENTENCES[5])])
        index.delete_documents(["c"])
        index.add_documents([("d", SENTENCES[2])])
        assert ex.calls == [SENTENCES[5], SENTENCES[2]], ex.calls
        index.save({str(tmp_path / "out")!r})
    """)
    env_path = f"{ROOT}:{ROOT / 'src'}"
    subprocess.run([sys.executable, "-c", script], check=True, cwd=ROOT,
                   env={"PYTHONPATH": env_path, "OMP_WAIT_POLICY": "PASSIVE",
                        "PATH": "/usr/bin:/bin"}, timeout=300)
    again = GraphIndex.load(tmp_path / "out", extractor=Scripted())
    final = [("a", SENTENCES[0] + " " + SENTENCES[1]), ("b", SENTENCES[5]),
             ("d", SENTENCES[2])]
    assert_same_index(again, final, emb)
    again.delete_documents(["a"])  # and it keeps updating exactly
    assert_same_index(again, final[1:], emb)


# ---------------------------------------------------------------------- property
SAVE = st.tuples(st.just("save"))
SAVES = itertools.count()
STEPS = st.lists(st.one_of(OPS, SAVE), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(start=st.lists(st.tuples(IDS, TEXTS), min_size=1, max_size=3,
                      unique_by=lambda d: d[0]),
       steps=STEPS)
def test_updates_saves_and_loads_in_any_order_equal_a_rebuild(
        tmp_path: Path, start: list[tuple[str, str]], steps: list[tuple[Any, ...]]) -> None:
    emb = HashingEmbedder(32)
    index = build(start, emb)
    model = list(start)
    for step in steps:
        if step[0] == "save":
            path = tmp_path / f"s{next(SAVES)}"
            index = reopen(index, path, extractor=Scripted())
            assert list(index.ledger.documents) == [d for d, _ in model]
        else:
            apply(model, index, step)
    assert_same_index(index, model, emb)
