"""Reading a saved graph's directory without trusting it: the manifest and its files.

The format constants, the manifest's validation and :class:`DirReader` (every file opened
through a directory descriptor, never following a link, checked to be a regular file within
its size, and checksummed) used by :mod:`kgpath.graph.persistence` to save and load; and two
fast paths: :func:`bulk_records` (nodes and edges of a trusted-shape file built without
``add_node``/``add_edge``) and :func:`unchanged_arrays` (array files a save can hard-link
from the previous copy instead of writing them again).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kgpath.errors import PersistenceError
from kgpath.graph import column_io
from kgpath.graph.column_io import COLUMN_FILES, LAYOUT, REQUIRED_COLUMNS
from kgpath.graph.model import Edge, Node

if TYPE_CHECKING:
    from kgpath.graph.knowledge_graph import KnowledgeGraph

__all__ = [
    "ALLOWED", "ARRAYS", "FORMAT", "FORMAT_VERSION", "INDEX_ARRAYS", "INDEX_FILES",
    "INDEX_VERSION", "MANIFEST", "MAX_FILE_BYTES",
    "OBJECTS_VERSION", "REQUIRED", "SURROGATE_ESCAPE", "DirReader", "Missing", "NotBulk",
    "TooLarge", "bulk_records", "linked", "parse_json", "unchanged_arrays", "validate_manifest",
]

FORMAT_VERSION = 4
"""4: a saved index (:meth:`kgpath.index.GraphIndex.save`): the graph's files plus
:data:`INDEX_FILES`; 3: the ``columns`` layout of compact graphs
(:mod:`kgpath.graph.column_io`); 2: per-file sizes, ``saved_ns`` and the ``embedder``
record (``ledger.json``, the document ledger, was added within version 4: an older
version-4 reader refuses such a directory by its unknown file name rather than misread
it). Object graphs are still written as version 2 (a kgpath older than version 3 reads
them), a graph alone never as 4; versions 1 to 3 still load."""
INDEX_VERSION = 4
OBJECTS_VERSION = 2
MAX_FILE_BYTES = 1 << 34
"""Largest data file :func:`load` reads (16 GiB)."""
MAX_MANIFEST_BYTES = 1 << 20

FORMAT = "kgpath.KnowledgeGraph"
MANIFEST = "manifest.json"
REQUIRED = ("nodes.json", "edges.json", "passages.json")
ARRAYS = ("embeddings.npy", "embedding_mask.npy")
INDEX_ARRAYS: dict[str, tuple[tuple[str, ...], int]] = {
    # name: (accepted dtypes, ndim) of the arrays a saved index adds (format version 4)
    "passage_vectors.npy": (("<f4",), 2),
    "text_vectors.npy": (("<f4",), 2),
    "index_node_vectors.npy": (("<f4",), 2),
    "compact_codes.npy": (("<f2", "|i1"), 2),
    "compact_scale.npy": (("<f4",), 1),
    "compact_exact.npy": (("<f2",), 2),
}
INDEX_FILES = ("index.json", "passage_ids.json", "vector_texts.json", "ledger.json",
               *INDEX_ARRAYS)
"""The files a saved index adds to its graph's (read by :mod:`kgpath.index.persist`)."""
ALLOWED = frozenset(REQUIRED + ARRAYS + tuple(COLUMN_FILES) + REQUIRED_COLUMNS + INDEX_FILES)
_SHA_CHARS = frozenset("0123456789abcdef")


class Missing(PersistenceError):
    """A file the manifest lists is absent."""


class TooLarge(PersistenceError):
    """A file is larger than its limit."""


class DirReader:
    """Reads files of one directory through a directory descriptor, never following links."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> DirReader:
        try:
            self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            raise PersistenceError(f"{self.path} is not a saved kgpath graph (no manifest.json)"
                                   ) from None
        except OSError as exc:
            raise PersistenceError(f"{self.path} is not a saved kgpath graph: {exc}") from exc
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)

    def read(self, name: str, limit: int) -> bytes:
        """The bytes of regular file ``name`` (at most ``limit``), or raise."""
        with os.fdopen(self.open(name, limit), "rb") as fh:
            data = fh.read(limit + 1)
        if len(data) > limit:
            raise TooLarge(f"{self.path}: {name} is larger than {limit} bytes")
        return data

    def open(self, name: str, limit: int) -> int:
        """A descriptor of regular file ``name`` of at most ``limit`` bytes (links refused)."""
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(name, flags, dir_fd=self.fd)
        except FileNotFoundError:
            raise Missing(f"{self.path} is truncated: {name} is missing") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PersistenceError(
                    f"{self.path}: {name} is a symbolic link; refusing to follow it"
                ) from None
            raise PersistenceError(f"{self.path}: cannot read {name}: {exc}") from exc
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise PersistenceError(f"{self.path}: {name} is not a regular file")
            if st.st_size > limit:
                raise TooLarge(
                    f"{self.path}: {name} has {st.st_size} bytes, more than the {limit} allowed"
                )
        except BaseException:
            os.close(fd)
            raise
        return fd

    def replaced(self) -> bool:
        """Whether the path now names another directory than the one being read."""
        try:
            a, b = os.fstat(self.fd), os.stat(self.path)
        except OSError:
            return True
        return (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino)

    def manifest(self) -> dict[str, Any]:
        """The validated manifest (see :func:`validate_manifest`)."""
        try:
            raw = self.read(MANIFEST, MAX_MANIFEST_BYTES)
        except Missing:
            raise PersistenceError(
                f"{self.path} is not a saved kgpath graph (no manifest.json)"
            ) from None
        m = parse_json(raw, self.path / MANIFEST)
        return validate_manifest(m, self.path)

    def verify_all(self, manifest: dict[str, Any], names: list[str] | None = None
                   ) -> dict[str, bytes]:
        """Read every listed file (or ``names``), check size and SHA-256, return the bytes."""
        files = manifest["files"]
        return {name: self.verify(name, *files[name]) for name in (names or files)}

    def verify(self, name: str, digest: str, size: int | None) -> bytes:
        """The bytes of ``name`` after checking its size and SHA-256."""
        try:
            data = self.read(name, MAX_FILE_BYTES if size is None else size)
        except TooLarge:
            if size is None:
                raise
            raise PersistenceError(
                f"{self.path} is corrupt: checksum of {name} does not match "
                "(larger than the manifest says)"
            ) from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise PersistenceError(f"{self.path} is corrupt: checksum of {name} does not match")
        return data


def validate_manifest(m: Any, d: Path) -> dict[str, Any]:
    """Check the manifest's shape; return it with ``files`` as ``{name: (sha256, size)}``."""
    where = d / MANIFEST
    if not isinstance(m, dict):
        raise PersistenceError(f"{where} is corrupt: not a JSON object")
    version = m.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise PersistenceError(f"{where} has no integer format_version")
    if version > FORMAT_VERSION:
        raise PersistenceError(
            f"{d} has format_version {version}, newer than this kgpath supports "
            f"({FORMAT_VERSION}); upgrade kgpath"
        )
    if m.get("format") != FORMAT or version < 1:
        raise PersistenceError(f"{where} is corrupt: not a {FORMAT} manifest")
    for key in ("num_nodes", "num_edges", "num_passages"):
        v = m.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise PersistenceError(f"{where} is corrupt: {key} must be an int >= 0, got {v!r}")
    files = m.get("files")
    if not isinstance(files, dict):
        raise PersistenceError(f"{where} is corrupt: 'files' must be an object")
    checked = {name: _file_entry(name, entry, where) for name, entry in files.items()}
    layout = m.get("layout", "objects")
    if layout not in ("objects", LAYOUT) or (layout == LAYOUT and version < 3):
        raise PersistenceError(f"{where} is corrupt: unknown layout {str(layout)[:80]!r}")
    missing = [n for n in (REQUIRED_COLUMNS if layout == LAYOUT else REQUIRED)
               if n not in checked]
    if missing:
        raise PersistenceError(f"{where} is corrupt: 'files' does not list {missing}")
    if version < INDEX_VERSION and any(n in checked for n in INDEX_FILES):
        raise PersistenceError(f"{where} is corrupt: index files in a version {version} graph")
    if sum(n in checked for n in ARRAYS) == 1:
        raise PersistenceError(f"{where} is corrupt: lists only one of {list(ARRAYS)}")
    owner = m.get("embedder")
    if owner is not None and not _valid_owner(owner):
        raise PersistenceError(f"{where} is corrupt: bad 'embedder' record")
    return {**m, "files": checked}


def _file_entry(name: Any, entry: Any, where: Path) -> tuple[str, int | None]:
    if not isinstance(name, str) or name not in ALLOWED:
        raise PersistenceError(
            f"{where} is corrupt: unexpected file name {str(name)[:80]!r} "
            f"(allowed: {sorted(ALLOWED)})"
        )
    digest, size = (entry, None) if isinstance(entry, str) else (None, None)
    if isinstance(entry, dict):
        digest, size = entry.get("sha256"), entry.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= MAX_FILE_BYTES:
            raise PersistenceError(f"{where} is corrupt: bad size for {name}")
    if not isinstance(digest, str) or len(digest) != 64 or not set(digest) <= _SHA_CHARS:
        raise PersistenceError(f"{where} is corrupt: bad SHA-256 for {name}")
    return digest, size


def _valid_owner(owner: Any) -> bool:
    return (
        isinstance(owner, dict)
        and isinstance(owner.get("name"), str)
        and isinstance(owner.get("dim"), int)
        and isinstance(owner.get("fingerprint"), str)
    )


def parse_json(data: bytes, where: Path) -> Any:
    """Parsed JSON, or :class:`PersistenceError` naming ``where``."""
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise PersistenceError(f"{where} is corrupt: JSON nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise PersistenceError(f"{where} is corrupt: {exc}"[:300]) from exc


# ---------------------------------------------------------------------- fast paths
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class NotBulk(Exception):
    """A record the bulk path leaves to ``add_node`` / ``add_edge`` (which name the error)."""


def bulk_records(g: KnowledgeGraph, nodes: list[dict[str, Any]],
                  edges: list[dict[str, Any]]) -> None:
    """Nodes and edges straight into the graph's lists (same checks, no Unicode re-check).

    Provenance ids are checked once per distinct id (a set), not once per record.
    """
    out_nodes: list[Node] = []
    index: dict[str, int] = {}
    cited: set[Any] = set()
    for r in nodes:
        nid, name, text, prov = r["id"], r["name"], r["text"], r.get("provenance", [])
        if (type(nid) is not str or not nid.strip() or nid in index or type(prov) is not list
                or not isinstance(name, (str, type(None))) or (text and not isinstance(text, str))):
            raise NotBulk
        index[nid] = len(out_nodes)
        cited.update(prov)
        out_nodes.append(Node(nid, nid if name is None else name, text or "", r.get("type"),
                              dict(r.get("metadata") or {}), tuple(prov)))
    out_edges: list[Edge] = []
    keys: dict[tuple[str, str, str], int] = {}
    for r in edges:
        src, dst, rel, text, w = r["source"], r["target"], r["relation"], r["text"], r["weight"]
        prov = r.get("provenance", [])
        key = (src, dst, rel)
        if (src not in index or dst not in index or key in keys or type(rel) is not str
                or type(text) is not str or type(prov) is not list or isinstance(w, bool)
                or not isinstance(w, (int, float)) or not np.isfinite(w) or w < 0):
            raise NotBulk
        keys[key] = len(out_edges)
        cited.update(prov)
        out_edges.append(Edge(src, dst, rel, text, r.get("type"), float(w), tuple(prov),
                              dict(r.get("metadata") or {})))
    if not all(type(p) is str and p.strip() for p in cited):
        raise NotBulk
    g._nodes, g._node_index, g._edges, g._edge_key = out_nodes, index, out_edges, keys
    g._csr = None
    g._version += len(out_nodes) + len(out_edges)


def unchanged_arrays(dest: Path, arrays: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """The arrays whose ``.npy`` bytes equal the file of that name already saved at ``dest``.

    A save after a small update then hard-links those files into the new copy instead of
    writing them again (the directory is still swapped in whole; saved files are never
    modified in place, so sharing an inode is safe). The old file is checksummed, not
    trusted: a corrupt one is written afresh.
    """
    try:
        with DirReader(dest) as r:
            files = r.manifest()["files"]
    except (PersistenceError, OSError):
        return {}
    out = {}
    for name, arr in arrays.items():
        want = files.get(name)
        if want is None or want[1] is None:
            continue
        new = column_io.npy_digest(arr)
        if (new["sha256"], new["size"]) == tuple(want) and \
                column_io.file_digest(dest / name) == new:
            out[name] = new
    return out


def linked(src: Path, dst: Path) -> bool:
    """Hard-link ``src`` to ``dst``; False where the file system refuses."""
    try:
        os.link(src, dst, follow_symlinks=False)
    except (OSError, NotImplementedError):
        return False
    return True
