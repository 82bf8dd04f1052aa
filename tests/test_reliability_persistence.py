"""Issue 13, persistence: save never destroys data, a complete graph always loads, load
trusts nothing it reads. Includes fault injection (monkeypatched file-system calls failing
at every step) and real SIGKILLs of a saving subprocess."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import kgpath.graph.persistence as P
from kgpath import KnowledgeGraph, PersistenceError

SRC = Path(__file__).resolve().parents[1] / "src"


def graph(n: int) -> KnowledgeGraph:
    g = KnowledgeGraph()
    for i in range(n):
        g.add_node(f"n{i}", text=f"node {i}")
    for i in range(n - 1):
        g.add_edge(f"n{i}", f"n{i + 1}", relation="next")
    g.vectors.set(np.eye(n, 4, dtype=np.float32))
    return g


def leftovers(parent: Path, name: str) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name != name)


# ---------------------------------------------------------------- save refuses foreign data
def test_save_refuses_a_directory_of_user_files(tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    (d / "thesis.tex").write_text("years of work")
    with pytest.raises(PersistenceError, match="not a saved kgpath graph.*thesis.tex"):
        graph(3).save(d)
    assert (d / "thesis.tex").read_text() == "years of work"
    assert leftovers(tmp_path, "docs") == []


def test_save_refuses_a_regular_file(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("keep me")
    with pytest.raises(PersistenceError, match="not a directory"):
        graph(3).save(f)
    assert f.read_text() == "keep me"


def test_save_refuses_a_directory_whose_manifest_is_not_ours(tmp_path):
    d = tmp_path / "g"
    d.mkdir()
    (d / "manifest.json").write_text('{"format": "something else"}')
    with pytest.raises(PersistenceError, match="no valid manifest"):
        graph(3).save(d)
    assert (d / "manifest.json").exists()


def test_save_refuses_a_symlink(tmp_path):
    real = tmp_path / "real"
    graph(3).save(real)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(PersistenceError, match="symbolic link"):
        graph(4).save(link)


def test_save_into_an_empty_directory_and_over_a_graph(tmp_path):
    d = tmp_path / "g"
    d.mkdir()
    graph(3).save(d)
    graph(5).save(d)
    assert len(KnowledgeGraph.load(d)) == 5
    assert leftovers(tmp_path, "g") == []


# ---------------------------------------------------------------- fault injection
class Killed(BaseException):
    """Stands for the process dying at this step."""


STEPS = ["_write_synced", "os.fsync", "_fsync_dir", "_exchange", "os.replace", "rmtree"]


def _inject(monkeypatch, step: str, at: int, calls: list[int]) -> None:
    """Make call number ``at`` of ``step`` raise :class:`Killed`."""
    if step == "os.replace":
        target, name = P.os, "replace"
    elif step == "os.fsync":
        target, name = P.os, "fsync"
    elif step == "rmtree":
        target, name = P.shutil, "rmtree"
    else:
        target, name = P, step
    real = getattr(target, name)

    def wrapper(*a, **k):
        calls[0] += 1
        if calls[0] == at:
            raise Killed(step)
        return real(*a, **k)

    monkeypatch.setattr(target, name, wrapper)


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
@pytest.mark.parametrize("step", STEPS)
def test_failure_at_every_step_leaves_a_complete_graph(tmp_path, monkeypatch, step, exchange):
    d = tmp_path / "g"
    graph(3).save(d)
    if not exchange:
        monkeypatch.setattr(P, "_exchange", lambda a, b: False)
    for at in range(1, 12):
        calls = [0]
        with monkeypatch.context() as m:
            _inject(m, step, at, calls)
            try:
                graph(5).save(d)
            except (Killed, PersistenceError):
                pass
        assert len(KnowledgeGraph.load(d)) in (3, 5), (step, at)
        graph(3).save(d)  # the next save recovers and cleans up
        assert len(KnowledgeGraph.load(d)) == 3
        assert leftovers(tmp_path, "g") == []
        if calls[0] < at:
            break


def test_crash_between_the_two_renames_recovers_on_load(tmp_path):
    """The exact crash of issue 13: old copy moved aside, new one complete but not yet in
    place (the state a SIGKILL between the two renames of the fallback swap leaves)."""
    d = tmp_path / "g"
    graph(3).save(d)
    new = tmp_path / ".g.tmp-abcd1234"
    new.mkdir()
    P._write_graph(graph(5), new)
    os.replace(d, tmp_path / ".g.old-abcd1234")
    partial = tmp_path / ".g.tmp-zzzz9999"  # a killed save that never finished writing
    partial.mkdir()
    (partial / "nodes.json").write_text("[")
    assert len(KnowledgeGraph.load(d)) == 5  # the newest complete graph loads
    graph(6).save(d)  # the next save promotes it, then cleans every leftover
    assert len(KnowledgeGraph.load(d)) == 6
    assert leftovers(tmp_path, "g") == []


_SAVER = textwrap.dedent(
    """
    import sys
    import numpy as np
    import kgpath.graph.persistence as P
    from kgpath import KnowledgeGraph
    if sys.argv[2] == "two-renames":
        P._exchange = lambda a, b: False
    graphs = []
    for n in (3, 5):
        g = KnowledgeGraph()
        for i in range(n):
            g.add_node(f"n{i}", text="x" * 2000)
        g.vectors.set(np.ones((n, 64), dtype=np.float32))
        graphs.append(g)
    graphs[0].save(sys.argv[1])
    print("ready", flush=True)
    i = 0
    while True:
        graphs[i % 2].save(sys.argv[1])
        i += 1
    """
)


@pytest.mark.parametrize("mode", ["renameat2", "two-renames"])
def test_sigkill_during_saves_always_leaves_a_loadable_graph(tmp_path, mode):
    d = tmp_path / "g"
    rng = random.Random(13)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    for _ in range(6):
        proc = subprocess.Popen([sys.executable, "-c", _SAVER, str(d), mode],
                                stdout=subprocess.PIPE, env=env)
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.0, 0.15))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert len(KnowledgeGraph.load(d)) in (3, 5)
    graph(4).save(d)
    assert len(KnowledgeGraph.load(d)) == 4
    assert leftovers(tmp_path, "g") == []


def test_concurrent_saves_serialise(tmp_path):
    d = tmp_path / "g"
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for _ in range(5):
                graph(n).save(d)
                assert len(KnowledgeGraph.load(d)) in (3, 4, 5, 6)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in (3, 4, 5, 6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert leftovers(tmp_path, "g") == []


def test_a_held_lock_gives_a_clear_error(tmp_path, monkeypatch):
    import fcntl

    d = tmp_path / "g"
    fd = os.open(tmp_path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    monkeypatch.setattr(P, "LOCK_TIMEOUT", 0.05)
    try:
        with pytest.raises(PersistenceError, match="another save .* in progress"):
            graph(3).save(d)
    finally:
        os.close(fd)
    graph(3).save(d)


# ---------------------------------------------------------------- load trusts nothing
@pytest.fixture
def saved(tmp_path):
    d = tmp_path / "g"
    graph(3).save(d)
    return d


def _manifest(d: Path) -> dict:
    return json.loads((d / "manifest.json").read_text())


def _write_manifest(d: Path, m) -> None:
    (d / "manifest.json").write_text(json.dumps(m))


@pytest.mark.parametrize(
    "bad",
    [[], "x", 3, {"format": "kgpath.KnowledgeGraph", "format_version": 2},
     {"format_version": 1, "files": {}}, {"format_version": True}],
    ids=["list", "str", "int", "no-files", "no-format", "bool-version"],
)
def test_manifest_of_the_wrong_shape(saved, bad):
    _write_manifest(saved, bad)
    with pytest.raises(PersistenceError):
        KnowledgeGraph.load(saved)


def test_empty_files_map_does_not_skip_checksums(saved):
    m = _manifest(saved)
    m["files"] = {}
    _write_manifest(saved, m)
    with pytest.raises(PersistenceError, match="does not list"):
        KnowledgeGraph.load(saved)


def test_files_not_in_the_map_are_not_read(saved):
    m = _manifest(saved)
    del m["files"]["embeddings.npy"], m["files"]["embedding_mask.npy"]
    _write_manifest(saved, m)
    np.save(saved / "embeddings.npy", np.full((3, 4), 9.0, np.float32))
    g = KnowledgeGraph.load(saved)
    assert g.vectors.missing() == [0, 1, 2]  # the unlisted file was ignored


@pytest.mark.parametrize("name", ["../outside.json", "/etc/passwd", "sub/x.json", ".."])
def test_names_outside_the_directory_are_refused(saved, name):
    m = _manifest(saved)
    m["files"][name] = m["files"]["nodes.json"]
    _write_manifest(saved, m)
    with pytest.raises(PersistenceError, match="unexpected file name"):
        KnowledgeGraph.load(saved)


def test_symlinked_file_is_not_followed(saved, tmp_path):
    outside = tmp_path / "outside.json"
    (saved / "nodes.json").rename(outside)
    (saved / "nodes.json").symlink_to(outside)
    with pytest.raises(PersistenceError, match="symbolic link"):
        KnowledgeGraph.load(saved)


def test_dev_zero_is_not_read(saved):
    (saved / "nodes.json").unlink()
    (saved / "nodes.json").symlink_to("/dev/zero")
    with pytest.raises(PersistenceError, match="symbolic link"):
        KnowledgeGraph.load(saved)


def test_fifo_and_oversize_files_are_refused(saved, monkeypatch):
    (saved / "passages.json").unlink()
    os.mkfifo(saved / "passages.json")
    with pytest.raises(PersistenceError, match="not a regular file"):
        KnowledgeGraph.load(saved)
    (saved / "passages.json").unlink()
    (saved / "passages.json").write_text("[]" + " " * 1000)
    with pytest.raises(PersistenceError, match="checksum of passages.json"):
        KnowledgeGraph.load(saved)


def test_deeply_nested_json_is_a_persistence_error(saved):
    import hashlib

    data = ("[" * 100_000 + "]" * 100_000).encode()
    (saved / "nodes.json").write_bytes(data)
    m = _manifest(saved)
    m["files"]["nodes.json"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    _write_manifest(saved, m)
    with pytest.raises(PersistenceError, match="nested too deeply"):
        KnowledgeGraph.load(saved)
    (saved / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(PersistenceError, match="nested too deeply"):
        KnowledgeGraph.load(saved)


def test_records_of_the_wrong_shape(saved):
    import hashlib

    for payload in (b'{"a": 1}', b"[1, 2]", b'[{"id": 5}]',
                    b'[{"id": "a", "name": "a", "text": "", "provenance": "p"}]'):
        (saved / "nodes.json").write_bytes(payload)
        m = _manifest(saved)
        m["files"]["nodes.json"] = {"sha256": hashlib.sha256(payload).hexdigest(),
                                    "size": len(payload)}
        _write_manifest(saved, m)
        with pytest.raises(PersistenceError):
            KnowledgeGraph.load(saved)


def test_version_1_graphs_still_load(saved):
    """Manifests written before this change (files as bare digests) still load."""
    m = _manifest(saved)
    m["format_version"] = 1
    m["files"] = {k: v["sha256"] for k, v in m["files"].items()}
    del m["embedder"], m["saved_ns"]
    _write_manifest(saved, m)
    assert len(KnowledgeGraph.load(saved)) == 3
