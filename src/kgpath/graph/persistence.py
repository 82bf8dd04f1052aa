"""Saving and loading a :class:`~kgpath.graph.KnowledgeGraph`: JSON + ``.npy``, atomically.

A saved graph is a directory of ``nodes.json``, ``edges.json``, ``passages.json``, optionally
``embeddings.npy`` + ``embedding_mask.npy`` (never pickled), and a ``manifest.json`` with the
format version, the counts and a SHA-256 of every file.
:meth:`KnowledgeGraph.save <kgpath.graph.KnowledgeGraph.save>` and
:meth:`KnowledgeGraph.load <kgpath.graph.KnowledgeGraph.load>` delegate here.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from kgpath.errors import PersistenceError
from kgpath.graph.knowledge_graph import KnowledgeGraph
from kgpath.graph.model import Edge, Node

__all__ = ["FORMAT_VERSION", "load", "save"]

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1


# ---------------------------------------------------------------------- save
def save(g: KnowledgeGraph, directory: str | os.PathLike[str]) -> None:
    """Write the graph to ``directory`` as JSON + ``.npy``, atomically.

    Files are written into a temporary sibling directory, fsynced, then renamed into
    place; an existing directory is replaced only after the new one is complete.
    A ``manifest.json`` records the format version and a SHA-256 of every file.
    """
    dest = Path(directory)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=dest.parent))
    try:
        files: dict[str, bytes] = {
            "nodes.json": _dumps([_node_record(n) for n in g._nodes]),
            "edges.json": _dumps([_edge_record(e) for e in g._edges]),
            "passages.json": _dumps(
                [{"id": p.id, "text": p.text, "metadata": dict(p.metadata)}
                 for p in g._passages.values()]
            ),
        }
        for name, data in files.items():
            _write_synced(tmp / name, data)
        if g._emb is not None and g._emb_mask is not None:
            g._grow_embeddings()
            arrays = (("embeddings.npy", g._emb), ("embedding_mask.npy", g._emb_mask))
            for name, arr in arrays:
                with open(tmp / name, "wb") as fh:
                    np.save(fh, arr, allow_pickle=False)
                    fh.flush()
                    os.fsync(fh.fileno())
        manifest = {
            "format": "kgpath.KnowledgeGraph",
            "format_version": FORMAT_VERSION,
            "num_nodes": len(g._nodes),
            "num_edges": len(g._edges),
            "num_passages": len(g._passages),
            "files": {p.name: _sha256(p) for p in sorted(tmp.iterdir())},
        }
        _write_synced(tmp / "manifest.json", _dumps(manifest))
        _swap_into_place(tmp, dest)
        logger.info("saved %r to %s", g, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap_into_place(tmp: Path, dest: Path) -> None:
    """Rename the complete ``tmp`` to ``dest``, moving an old ``dest`` aside first."""
    backup = None
    if dest.exists():
        backup = dest.with_name(f".{dest.name}.old-{os.getpid()}")
        os.replace(dest, backup)
    os.replace(tmp, dest)
    if backup is not None:
        shutil.rmtree(backup, ignore_errors=True)


# ---------------------------------------------------------------------- load
def load(
    directory: str | os.PathLike[str], *, cls: type[KnowledgeGraph] = KnowledgeGraph
) -> KnowledgeGraph:
    """Load a graph written by :func:`save`.

    Raises :class:`PersistenceError` if the directory is missing, truncated, corrupt
    (checksum mismatch, bad JSON) or written by a newer format version.
    """
    d = Path(directory)
    manifest, version = _read_manifest(d)
    _verify_files(d, manifest)
    try:
        g = _read_records(d, cls)
        _read_embeddings(d, g)
    except PersistenceError:
        raise
    except (KeyError, TypeError, ValueError, json.JSONDecodeError) as exc:
        raise PersistenceError(f"{d} is corrupt: {exc!r}") from exc
    if len(g) != manifest.get("num_nodes") or g.num_edges != manifest.get("num_edges"):
        raise PersistenceError(f"{d} is corrupt: node/edge counts differ from the manifest")
    logger.info("loaded %r from %s (format version %d)", g, d, version)
    return g


def _read_manifest(d: Path) -> tuple[dict[str, Any], int]:
    """The manifest and its format version; refuses a missing, corrupt or newer one."""
    mpath = d / "manifest.json"
    if not mpath.is_file():
        raise PersistenceError(f"{d} is not a saved kgpath graph (no manifest.json)")
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PersistenceError(f"{mpath} is corrupt: {exc}") from exc
    version = manifest.get("format_version")
    if not isinstance(version, int):
        raise PersistenceError(f"{mpath} has no integer format_version")
    if version > FORMAT_VERSION:
        raise PersistenceError(
            f"{d} has format_version {version}, newer than this kgpath supports "
            f"({FORMAT_VERSION}); upgrade kgpath"
        )
    return manifest, version


def _verify_files(d: Path, manifest: dict[str, Any]) -> None:
    """Every file the manifest lists exists and has the recorded SHA-256."""
    for name, digest in (manifest.get("files") or {}).items():
        p = d / name
        if not p.is_file():
            raise PersistenceError(f"{d} is truncated: {name} is missing")
        if _sha256(p) != digest:
            raise PersistenceError(f"{d} is corrupt: checksum of {name} does not match")


def _read_records(d: Path, cls: type[KnowledgeGraph]) -> KnowledgeGraph:
    """Rebuild passages, nodes and edges from the three JSON files."""
    nodes = json.loads((d / "nodes.json").read_text(encoding="utf-8"))
    edges = json.loads((d / "edges.json").read_text(encoding="utf-8"))
    passages = json.loads((d / "passages.json").read_text(encoding="utf-8"))
    g = cls()
    for p in passages:
        g.add_passage(p["id"], p["text"], p.get("metadata"))
    for r in nodes:
        g.add_node(
            r["id"], name=r["name"], text=r["text"], type=r.get("type"),
            metadata=r.get("metadata"), provenance=r.get("provenance", ()),
        )
    for r in edges:
        g.add_edge(
            r["source"], r["target"], relation=r["relation"], text=r["text"],
            type=r.get("type"), weight=r["weight"], provenance=r.get("provenance", ()),
            metadata=r.get("metadata"),
        )
    return g


def _read_embeddings(d: Path, g: KnowledgeGraph) -> None:
    """Attach ``embeddings.npy`` + ``embedding_mask.npy`` when present (no pickle)."""
    if not (d / "embeddings.npy").is_file():
        return
    emb = np.load(d / "embeddings.npy", allow_pickle=False)
    mask = np.load(d / "embedding_mask.npy", allow_pickle=False)
    if emb.shape[0] != len(g) or mask.shape[0] != len(g):
        raise PersistenceError(f"{d}: embeddings do not match the node count")
    g._emb = np.ascontiguousarray(emb.astype(np.float32, copy=False))
    g._emb_mask = mask.astype(bool, copy=False)


# ---------------------------------------------------------------------- helpers
def _node_record(n: Node) -> dict[str, Any]:
    return {
        "id": n.id, "name": n.name, "text": n.text, "type": n.type,
        "metadata": dict(n.metadata), "provenance": list(n.provenance),
    }


def _edge_record(e: Edge) -> dict[str, Any]:
    return {
        "source": e.source, "target": e.target, "relation": e.relation, "text": e.text,
        "type": e.type, "weight": e.weight, "provenance": list(e.provenance),
        "metadata": dict(e.metadata),
    }


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, indent=None, default=str).encode("utf-8")


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
