"""Every cookbook recipe runs as a script and exits 0 (offline: OpenAI variables unset).

Recipes are collected from ``cookbook/*.py`` when the tests are collected, so a recipe added
by anyone is run without touching this file. Each runs in a fresh interpreter, in a temporary
working directory, with a time limit. The OpenAI-compatible recipe is also run against a small
local HTTP server that speaks the two endpoints it uses, to exercise its ``base_url`` path.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

COOKBOOK = Path(__file__).resolve().parents[1] / "cookbook"
RECIPES = sorted(COOKBOOK.glob("*.py"))
TIMEOUT = 600
OFFLINE_ENV = {k: v for k, v in os.environ.items()
               if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE")}


def run_recipe(path: Path, cwd: Path, env: dict[str, str] | None = None,
               args: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(path), *args], cwd=cwd, env=env or OFFLINE_ENV,
        capture_output=True, text=True, timeout=TIMEOUT,
    )


@pytest.mark.slow
@pytest.mark.parametrize("recipe", RECIPES, ids=[p.name for p in RECIPES])
def test_recipe_runs(recipe: Path, tmp_path: Path) -> None:
    proc = run_recipe(recipe, tmp_path)
    tail = f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, f"{recipe.name} failed:\n{tail}"
    assert proc.stdout.strip(), f"{recipe.name} printed nothing"
    # no warning the library raises about what the recipe itself asks for (issue 24)
    own = [ln for ln in proc.stderr.splitlines() if "UserWarning:" in ln or "SchemaWarning:" in ln]
    assert own == [], f"{recipe.name} triggers kgpath's own warnings:\n{own}"


def test_recipes_exist() -> None:
    names = {p.name for p in RECIPES}
    assert {"offline.py", "openai_compatible.py", "llamaindex_property_graph.py"} <= names


def test_openai_recipe_skips_without_configuration(tmp_path: Path) -> None:
    proc = run_recipe(COOKBOOK / "openai_compatible.py", tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.startswith("skipped: set OPENAI_API_KEY")


@pytest.mark.slow
def test_offline_recipe_writes_pictures_and_agrees_with_the_database(tmp_path: Path) -> None:
    proc = run_recipe(COOKBOOK / "offline.py", tmp_path, args=(str(tmp_path / "out"),))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "out" / "offline_pcr.html").stat().st_size > 1000
    assert "PCR from 'radium'" in proc.stdout
    if "embedded" in proc.stdout:
        assert "same hits as in memory" in proc.stdout


# ---------------------------------------------------------------------- fake OpenAI server
class FakeOpenAI(BaseHTTPRequestHandler):
    """``/v1/embeddings`` (hashed bag of words) and ``/v1/chat/completions`` (canned)."""

    calls: list[tuple[str, dict]] = []

    def log_message(self, *args: object) -> None:  # keep test output clean
        return

    def _send(self, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    @staticmethod
    def _vector(text: str, dim: int = 32) -> np.ndarray:
        v = np.zeros(dim, dtype=np.float32)
        for w in text.lower().split():
            v[int(hashlib.md5(w.encode()).hexdigest(), 16) % dim] += 1.0
        v[0] += 1e-3
        return v / np.linalg.norm(v)

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeOpenAI.calls.append((self.path, req))
        if self.path.endswith("/embeddings"):
            texts = req["input"] if isinstance(req["input"], list) else [req["input"]]
            data = []
            for i, t in enumerate(texts):
                vec = self._vector(t)
                emb = (base64.b64encode(vec.tobytes()).decode()
                       if req.get("encoding_format") == "base64" else vec.tolist())
                data.append({"object": "embedding", "index": i, "embedding": emb})
            self._send({"object": "list", "data": data, "model": req["model"],
                        "usage": {"prompt_tokens": 1, "total_tokens": 1}})
            return
        prompt = req["messages"][-1]["content"]
        if "JSON:" in prompt:
            reply = json.dumps({"entities": ["radium", "Marie Curie"], "concepts": ["award"]})
        else:
            reply = "The Nobel Prize in Chemistry 1911 (fake server)."
        self._send({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": req["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": reply}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })


@pytest.mark.slow
def test_openai_recipe_against_a_compatible_server(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    FakeOpenAI.calls = []
    try:
        env = dict(OFFLINE_ENV, OPENAI_BASE_URL=f"http://127.0.0.1:{server.server_port}/v1",
                   KGPATH_CHAT_MODEL="fake-chat", KGPATH_EMBED_MODEL="fake-embed")
        proc = run_recipe(COOKBOOK / "openai_compatible.py", tmp_path, env=env)
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "PathRAG keywords (llm): radium, Marie Curie, award" in proc.stdout
    assert "The Nobel Prize in Chemistry 1911 (fake server)." in proc.stdout
    paths = [p for p, _ in FakeOpenAI.calls]
    assert any(p.endswith("/embeddings") for p in paths)
    assert sum(p.endswith("/chat/completions") for p in paths) == 2  # keywords + answer
    assert all(req["model"] in ("fake-chat", "fake-embed") for _, req in FakeOpenAI.calls)
