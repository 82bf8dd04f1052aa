"""from_documents(checkpoint=dir): a build killed mid-run (SIGKILL) resumes without
re-extracting finished passages; checkpoint parts are checksummed JSON."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kgpath import GraphIndex, HashingEmbedder
from kgpath.errors import ConfigError
from kgpath.ingest.checkpoint import ExtractionCheckpoint, extraction_to_json
from kgpath.ingest.chunking import TextPassage
from kgpath.ingest.extraction import ExtractedEntity, Extraction
from kgpath.ingest.llm_extractor import LLMExtractor
from kgpath.llm import ScriptedLLM

DOCS = [(f"d{i}", f"Person{i} met Person{i + 1} in City{i % 3}.") for i in range(10)]

# The child: an LLM that answers from the passage text, logs every call to a file and
# kills its own process with SIGKILL at call number KILL_AT (no cleanup, no flush).
CHILD = textwrap.dedent("""
    import json, os, re, signal, sys
    from kgpath import GraphIndex, HashingEmbedder
    from kgpath.ingest.llm_extractor import LLMExtractor
    from kgpath.llm import ScriptedLLM
    from tests.test_extraction_checkpoint import DOCS, reply

    log, checkpoint, kill_at = sys.argv[1], sys.argv[2], int(sys.argv[3])

    def answer(prompt):
        with open(log, "a") as fh:
            fh.write("call\\n")
        with open(log) as fh:
            n = sum(1 for _ in fh)
        if n == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return reply(prompt)

    ex = LLMExtractor(ScriptedLLM(answer), max_concurrency=1)
    GraphIndex.from_documents(DOCS, embedder=HashingEmbedder(16), extractor=ex,
                              batch_size=2, checkpoint=checkpoint)
""")


def reply(prompt: str) -> str:
    """The scripted LLM's answer: the capitalised words of the passage in the prompt."""
    import re

    text = prompt.rsplit("Text:", 1)[-1] if "Text:" in prompt else prompt
    names = [n for n in re.findall(r"\b(?:Person|City)\d+\b", text)]
    return json.dumps({"entities": [{"name": n, "type": "Thing"} for n in names],
                       "triples": [{"head": a, "relation": "met", "tail": b}
                                   for a, b in zip(names, names[1:])]})


def run_child(tmp_path: Path, kill_at: int) -> subprocess.CompletedProcess[bytes]:
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *sys.path])}
    return subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "calls.log"),
                           str(tmp_path / "ckpt"), str(kill_at)],
                          env=env, cwd=root, capture_output=True, timeout=300)


def test_a_killed_build_resumes_without_re_extracting_finished_passages(tmp_path) -> None:
    done = run_child(tmp_path, kill_at=7)  # batches of 2: three batches finished
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]
    assert (tmp_path / "calls.log").read_text().count("call") == 7
    parts = sorted((tmp_path / "ckpt").glob("part-*.json"))
    assert len(parts) == 3 and not list((tmp_path / "ckpt").glob(".tmp-*"))

    llm = ScriptedLLM(reply)
    index = GraphIndex.from_documents(DOCS, embedder=HashingEmbedder(16),
                                      extractor=LLMExtractor(llm, max_concurrency=1),
                                      batch_size=2, checkpoint=tmp_path / "ckpt")
    assert len(llm.prompts) == 4  # passages 7-10 only
    assert index.last_build is not None
    assert (index.last_build.passages_resumed, index.last_build.passages_extracted) == (6, 4)
    fresh = GraphIndex.from_documents(DOCS, embedder=HashingEmbedder(16),
                                      extractor=LLMExtractor(ScriptedLLM(reply)))
    assert list(index.graph.nodes) == list(fresh.graph.nodes)
    assert list(index.graph.edges) == list(fresh.graph.edges)


def test_a_corrupt_part_is_ignored_and_its_passages_extracted_again(tmp_path) -> None:
    cp = ExtractionCheckpoint(tmp_path, "llm")
    p = TextPassage("p", "Person1 met Person2.", "p")
    cp.write([p], [Extraction("p", (ExtractedEntity("Person1", "Thing", p.text),))])
    assert len(ExtractionCheckpoint(tmp_path, "llm").load()) == 1
    assert ExtractionCheckpoint(tmp_path, "spacy").load() == {}  # another extractor's
    part = next(tmp_path.glob("part-*.json"))
    data = json.loads(part.read_text())
    data["records"][0]["record"]["entities"][0][0] = "Mallory"
    part.write_text(json.dumps(data))
    assert ExtractionCheckpoint(tmp_path, "llm").load() == {}  # checksum mismatch
    with pytest.raises(ConfigError, match="dict"):
        extraction_to_json({"not": "an extraction"})  # type: ignore[arg-type]


def test_failed_passages_are_not_checkpointed(tmp_path) -> None:
    llm = ScriptedLLM(lambda prompt: "not json" if "Person3" in prompt else reply(prompt))
    index = GraphIndex.from_documents(DOCS[:4], embedder=HashingEmbedder(16),
                                      extractor=LLMExtractor(llm, max_concurrency=1,
                                                             retries=0),
                                      checkpoint=tmp_path)
    assert index.last_build is not None and index.last_build.failed == ["d2", "d3"]
    stored = ExtractionCheckpoint(tmp_path, "llm").load()
    assert sorted(pid for pid, _ in stored) == ["d0", "d1"]


def test_the_plain_ingestion_reports_failed_passages() -> None:
    from kgpath.graph import KnowledgeGraph
    from kgpath.ingest import ingest_documents

    llm = ScriptedLLM(lambda prompt: "not json" if "Person3" in prompt else reply(prompt))
    report = ingest_documents(KnowledgeGraph(), DOCS[:4],
                              extractor=LLMExtractor(llm, max_concurrency=1, retries=0))
    assert report.failed == ["d2", "d3"]
