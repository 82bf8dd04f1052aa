"""A content-addressed on-disk cache of passage embeddings for the chunk-graph builder.

Not in the article: building the graph over a corpus embeds every chunk and sentence, and
re-runs (another ``top_x_inter``, a rebuilt graph) should not pay for that again.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kgpath.embeddings import Embedder
from kgpath.errors import ConfigError, EmbeddingError, PersistenceError

__all__ = ["CachedEmbedder"]


class CachedEmbedder:
    """Wrap an embedder with a content-addressed on-disk cache of passage embeddings.

    Vectors are stored in ``<cache_dir>/<key>.npz`` (``keys``: SHA-256 hex of each text,
    ``vectors``: float32), rewritten atomically after each call that embedded new texts,
    loaded with ``allow_pickle=False``. ``key`` identifies the model: by default a hash of
    ``repr(embedder)`` (give ``cache_key`` when the repr is not stable across runs).
    Queries are never cached. New texts are embedded and saved in slices of ``save_every``
    so an interrupted run keeps what it finished. Progress bars come from the wrapped
    embedder (one per slice).
    """

    def __init__(
        self,
        embedder: Embedder,
        cache_dir: str | os.PathLike[str],
        *,
        cache_key: str | None = None,
        save_every: int = 2048,
    ) -> None:
        if isinstance(save_every, bool) or not isinstance(save_every, int) or save_every < 1:
            raise ConfigError(f"save_every must be an int >= 1, got {save_every!r}")
        self.save_every = save_every
        self.embedder = embedder
        self.cache_dir = Path(cache_dir)
        ident = cache_key if cache_key is not None else repr(embedder)
        digest = hashlib.sha256(ident.encode("utf-8")).hexdigest()[:16]
        self.path = self.cache_dir / f"embeddings-{digest}.npz"
        self._rows: dict[str, int] | None = None
        self._vectors: np.ndarray | None = None
        self.hits = 0
        self.misses = 0

    @property
    def dim(self) -> int:
        """Dimension of the wrapped embedder."""
        return self.embedder.dim

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.embedder!r}, cache={str(self.path)!r})"

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def _load(self) -> None:
        if self._rows is not None:
            return
        self._rows, self._vectors = {}, None
        if not self.path.is_file():
            return
        try:
            with np.load(self.path, allow_pickle=False) as z:
                keys, vecs = z["keys"], z["vectors"]
        except (OSError, ValueError, KeyError) as exc:
            raise PersistenceError(f"embedding cache {self.path} is corrupt: {exc!r}") from exc
        if keys.shape[0] != vecs.shape[0]:
            raise PersistenceError(f"embedding cache {self.path}: keys/vectors length differ")
        self._rows = {str(k): i for i, k in enumerate(keys.tolist())}
        self._vectors = np.asarray(vecs, dtype=np.float32)

    def _save(self) -> None:
        assert self._rows is not None and self._vectors is not None
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        keys = np.array(sorted(self._rows, key=self._rows.__getitem__), dtype="U64")
        fd, tmp = tempfile.mkstemp(prefix=".emb-", suffix=".npz", dir=self.cache_dir)
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, keys=keys, vectors=self._vectors)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _lookup(self, texts: Sequence[str]) -> tuple[list[str], list[str]]:
        self._load()
        assert self._rows is not None
        keys = [self._key(t) for t in texts]
        missing: dict[str, str] = {}
        for k, t in zip(keys, texts, strict=True):
            if k not in self._rows and k not in missing:
                missing[k] = t
        self.hits += len(texts) - sum(1 for k in keys if k in missing)
        self.misses += len(missing)
        return keys, list(missing.values())

    def _store(self, new_texts: list[str], vecs: np.ndarray) -> None:
        assert self._rows is not None
        if not new_texts:
            return
        vecs = np.asarray(vecs, dtype=np.float32)
        base = 0 if self._vectors is None else self._vectors.shape[0]
        if self._vectors is not None and vecs.shape[1] != self._vectors.shape[1]:
            raise EmbeddingError(
                f"embedder returned dimension {vecs.shape[1]}, cache {self.path} holds "
                f"{self._vectors.shape[1]}"
            )
        self._vectors = vecs if self._vectors is None else np.vstack([self._vectors, vecs])
        for i, t in enumerate(new_texts):
            self._rows[self._key(t)] = base + i
        self._save()

    def _gather(self, keys: list[str]) -> np.ndarray:
        assert self._rows is not None and self._vectors is not None
        return self._vectors[[self._rows[k] for k in keys]]

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages, reading and extending the cache."""
        keys, missing = self._lookup(texts)
        for i in range(0, len(missing), self.save_every):
            part = missing[i : i + self.save_every]
            self._store(part, self.embedder.embed_passages(part))
        if not keys:
            return np.zeros((0, self.dim), np.float32)
        return self._gather(keys)

    async def aembed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Async :meth:`embed_passages`."""
        keys, missing = self._lookup(texts)
        for i in range(0, len(missing), self.save_every):
            part = missing[i : i + self.save_every]
            self._store(part, await self.embedder.aembed_passages(part))
        if not keys:
            return np.zeros((0, self.dim), np.float32)
        return self._gather(keys)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Pass-through (queries are not cached)."""
        return self.embedder.embed_queries(texts)

    async def aembed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Pass-through (queries are not cached)."""
        return await self.embedder.aembed_queries(texts)

