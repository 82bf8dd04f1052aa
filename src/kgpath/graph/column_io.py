"""The ``columns`` layout: a compact graph saved and loaded as arrays (format version 3).

A compact graph (:mod:`kgpath.graph.columns`) is saved as the arrays it already holds, never
as one JSON record per node or edge, and loads back compact without making a
:class:`~kgpath.graph.model.Node` or :class:`~kgpath.graph.model.Edge` object:

================================  =========  ====================================================
file                              dtype      content
================================  =========  ====================================================
``node_ids.npy``                  uint8      UTF-8 bytes of every node id, concatenated
``node_id_offsets.npy``           int64      ``n + 1`` offsets into it (id ``j`` is a slice)
``node_texts.npy`` + offsets      uint8/i64  node texts, the same way (absent: all ``""``)
``edge_sources.npy``/``_targets``  int32      edge endpoints, rows of ``node_ids``
``edge_relations.npy``            int32      codes into ``relations.json`` (absent: all ``""``)
``relations.json``                JSON       the relation table (a list of strings)
``passages.json``                 JSON       passages, as in the object layout
``embeddings.npy`` + mask         f32/bool   node vectors, as in the object layout
================================  =========  ====================================================

The manifest (``manifest.json``, the small JSON header of every saved graph) says
``"layout": "columns"`` and ``"format_version": 3``, with the SHA-256 and size of every file;
saving, the atomic swap and the refusal to replace anything but a saved graph are those of
:mod:`kgpath.graph.persistence`. Every ``.npy`` is written with ``allow_pickle=False`` by
:func:`numpy.save` through a hashing writer (no second copy of an array) and read back
straight into its array: the header is parsed and checked first (dtype, ``C`` order, rank,
and header + data == the file's size, so a forged shape never allocates), then the bytes
are read into the array and checksummed in place. Loading then checks offsets (start at 0,
non-decreasing, ids non-empty, end at the blob's size, every string boundary on a UTF-8
character), unique ids, endpoints in ``[0, n)`` and relation codes within the table, and
raises :class:`~kgpath.errors.PersistenceError` naming the file.

Not memory-mapped, by measurement: loading reads every byte to verify its checksum, which
makes a map resident anyway (2·10^5 x 384 float32 embeddings, 292 MB: RSS +303 MB read into
memory, +293 MB as a map after the checksum pass). Each array is read once, into its final
array; only the UTF-8 check of a string column briefly decodes that column whole.
``benchmarks/bench_compact.py --roundtrip`` prints the RSS after loading in a fresh process
next to the RSS after building.
This is a kgpath extension, not from a paper.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from tokenize import TokenError
from typing import TYPE_CHECKING, Any

import numpy as np

from kgpath._files import write_chunked
from kgpath.errors import GraphError, PersistenceError
from kgpath.graph.columns import (
    EdgeColumns,
    HashIndex,
    NodeColumns,
    StringColumn,
    attach_columns,
    fill_columns,
)

if TYPE_CHECKING:
    from kgpath.graph.knowledge_graph import KnowledgeGraph

__all__ = [
    "COLUMN_FILES", "COLUMNS_VERSION", "LAYOUT", "REQUIRED_COLUMNS", "check_fits",
    "column_arrays", "file_digest", "npy_digest", "npy_header", "read_columns", "relation_bytes",
    "to_compact", "write_npy",
]

LAYOUT = "columns"
COLUMNS_VERSION = 3
#: Every array file of the layout: its dtype and rank.
COLUMN_FILES: Mapping[str, tuple[np.dtype[Any], int]] = {
    "node_ids.npy": (np.dtype(np.uint8), 1),
    "node_id_offsets.npy": (np.dtype(np.int64), 1),
    "node_texts.npy": (np.dtype(np.uint8), 1),
    "node_text_offsets.npy": (np.dtype(np.int64), 1),
    "edge_sources.npy": (np.dtype(np.int32), 1),
    "edge_targets.npy": (np.dtype(np.int32), 1),
    "edge_relations.npy": (np.dtype(np.int32), 1),
    "embeddings.npy": (np.dtype(np.float32), 2),
    "embedding_mask.npy": (np.dtype(np.bool_), 1),
}
REQUIRED_COLUMNS = ("node_ids.npy", "node_id_offsets.npy", "edge_sources.npy",
                    "edge_targets.npy", "relations.json", "passages.json")
_CHUNK = 1 << 24  # bytes read per call


# ---------------------------------------------------------------------- save
def column_arrays(g: KnowledgeGraph) -> tuple[dict[str, np.ndarray], list[str]]:
    """The arrays a compact graph saves (the ones it holds, no copies) and its relation table."""
    nodes, edges = g._nodes, g._edges
    assert isinstance(nodes, NodeColumns) and isinstance(edges, EdgeColumns)
    out = {"node_ids.npy": nodes.ids.blob, "node_id_offsets.npy": nodes.ids.offsets,
           "edge_sources.npy": edges.src, "edge_targets.npy": edges.dst}
    if nodes.texts is not None:
        out["node_texts.npy"] = nodes.texts.blob
        out["node_text_offsets.npy"] = nodes.texts.offsets
    if edges.rel is not None:
        out["edge_relations.npy"] = edges.rel
    return out, list(edges.relations)


class _HashingFile(io.RawIOBase):
    """A write-only file that hashes what :func:`numpy.save` writes (in <= 16 MB chunks)."""

    def __init__(self, fh: Any) -> None:
        self.fh, self.sha, self.size = fh, hashlib.sha256(), 0

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        view = memoryview(b).cast("B")
        self.sha.update(view)
        self.fh.write(view)
        self.size += view.nbytes
        return view.nbytes


class _Descriptor:
    """``write`` of every byte to a file descriptor (a short write raises, see write_all)."""

    def __init__(self, fd: int, what: str) -> None:
        self.fd, self.what = fd, what

    def write(self, b: Any) -> int:
        view = memoryview(b).cast("B")
        write_chunked(self.fd, view, what=self.what)
        return view.nbytes


def write_npy(path: Path, arr: np.ndarray) -> dict[str, Any]:
    """Write ``arr`` as ``.npy`` (no pickle), fsynced; return its ``{"sha256", "size"}``.

    Raises :class:`~kgpath.errors.PersistenceError` on a failed or short write.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        out = _HashingFile(_Descriptor(fd, str(path)))
        np.save(out, np.ascontiguousarray(arr), allow_pickle=False)
        os.fsync(fd)
    finally:
        os.close(fd)
    return {"sha256": out.sha.hexdigest(), "size": out.size}


class _Discard:
    def write(self, b: Any) -> int:
        return len(memoryview(b))


def npy_digest(arr: np.ndarray) -> dict[str, Any]:
    """The ``{"sha256", "size"}`` :func:`write_npy` would record, without writing."""
    out = _HashingFile(_Discard())
    np.save(out, np.ascontiguousarray(arr), allow_pickle=False)
    return {"sha256": out.sha.hexdigest(), "size": out.size}


def file_digest(path: Path) -> dict[str, Any] | None:
    """``{"sha256", "size"}`` of the regular file at ``path`` (not followed if a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    sha, size = hashlib.sha256(), 0
    with os.fdopen(fd, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            sha.update(chunk)
            size += len(chunk)
    return {"sha256": sha.hexdigest(), "size": size}


# ---------------------------------------------------------------------- load
def read_columns(r: Any, manifest: dict[str, Any], cls: type[KnowledgeGraph]) -> KnowledgeGraph:
    """Build a compact graph from the verified files of reader ``r`` (a ``_DirReader``)."""
    files = manifest["files"]
    arrays = {name: read_npy(r, name, *files[name]) for name in files if name in COLUMN_FILES}
    d = r.path
    n, m = manifest["num_nodes"], manifest["num_edges"]
    ids = _strings(d, arrays, "node_ids.npy", "node_id_offsets.npy", n, nonempty=True)
    index = HashIndex(ids, _id_hashes(d, ids))
    dup = index.first_duplicate()
    if dup is not None:
        raise PersistenceError(f"{d / 'node_ids.npy'} is corrupt: id {dup!r} appears twice")
    texts = None
    if "node_texts.npy" in arrays or "node_text_offsets.npy" in arrays:
        texts = _strings(d, arrays, "node_texts.npy", "node_text_offsets.npy", n)
    relations = _relation_table(d, r.verify("relations.json", *files["relations.json"]))
    src, dst = (_rows(d, arrays, f"edge_{e}.npy", m, n) for e in ("sources", "targets"))
    rel = arrays.get("edge_relations.npy")
    if rel is not None:
        rel = _rows(d, arrays, "edge_relations.npy", m, len(relations))
    g = cls()
    attach_columns(g, ids, index, texts, src, dst, rel, relations)
    g._version += 1
    _attach_embeddings(d, arrays, g)
    return g


def read_npy(r: Any, name: str, digest: str, size: int | None,
             spec: tuple[tuple[str, ...], int] | None = None) -> np.ndarray:
    """Array file ``name`` of reader ``r``: header checked, then read and checksummed in place.

    ``spec`` (accepted dtypes, ndim) for a file outside :data:`COLUMN_FILES` (a saved
    index's vectors).
    """
    where = r.path / name
    if spec is None:
        want, ndim = COLUMN_FILES[name]
    else:
        ndim = spec[1]
        want = _header_dtype(r, name, size, spec[0])
    if size is None:
        raise PersistenceError(f"{where} is corrupt: the manifest gives no size")
    fd = r.open(name, size)
    with os.fdopen(fd, "rb", buffering=0) as fh:
        if os.fstat(fh.fileno()).st_size != size:
            raise PersistenceError(f"{where} is corrupt: size differs from the manifest")
        shape, fortran, dtype, start = npy_header(fh, where)
        if dtype != want or fortran or len(shape) != ndim:
            raise PersistenceError(
                f"{where} is corrupt: expected a C-order {ndim}-D {want} array, got "
                f"{'F-order ' if fortran else ''}{len(shape)}-D {dtype}"
            )
        check_fits(shape, want, start, size, where)
        fh.seek(0)
        sha = hashlib.sha256(fh.read(start))
        arr = np.empty(shape, dtype=want)
        view = arr.reshape(-1).view(np.uint8).data
        for a in range(0, view.nbytes, _CHUNK):
            part = view[a:a + _CHUNK]
            _read_exactly(fh, part, where)
            sha.update(part)
    if sha.hexdigest() != digest:
        raise PersistenceError(f"{r.path} is corrupt: checksum of {name} does not match")
    return arr


def _header_dtype(r: Any, name: str, size: int | None, accepted: tuple[str, ...]
                  ) -> np.dtype[Any]:
    """The dtype in ``name``'s header when it is one of ``accepted`` (else the first)."""
    if size is None:
        return np.dtype(accepted[0])
    with os.fdopen(r.open(name, size), "rb", buffering=0) as fh:
        _, _, dtype, _ = npy_header(fh, r.path / name)
    return dtype if dtype.str in accepted else np.dtype(accepted[0])


def npy_header(fh: Any, where: Path) -> tuple[tuple[int, ...], bool, np.dtype[Any], int]:
    """Shape, Fortran order, dtype and data offset of the ``.npy`` in ``fh``.

    Raises :class:`PersistenceError` for a bad header; :func:`check_fits` then refuses a
    forged shape before anything is allocated.
    """
    try:
        major, _ = np.lib.format.read_magic(fh)
        header = (np.lib.format.read_array_header_1_0 if major == 1
                  else np.lib.format.read_array_header_2_0)
        shape, fortran, dtype = header(fh)
    except (ValueError, OSError, SyntaxError, TokenError, RecursionError) as exc:
        # TokenError: numpy re-tokenises a version 1/2 header that is not a Python literal
        raise PersistenceError(f"{where} is corrupt: bad .npy header ({exc})"[:300]) from exc
    return shape, fortran, dtype, fh.tell()


def check_fits(shape: tuple[int, ...], dtype: np.dtype[Any], start: int, size: int,
               where: Path) -> None:
    """:class:`PersistenceError` unless header (``start`` bytes) + data is ``size`` bytes.

    In Python integers: a shape too large for int64, or negative, is refused as well.
    """
    if any(k < 0 for k in shape) or start + math.prod(shape) * dtype.itemsize != size:
        raise PersistenceError(f"{where} is corrupt: shape {shape} does not fit the file"[:300])


def _read_exactly(fh: Any, part: memoryview, where: Path) -> None:
    got = 0
    while got < part.nbytes:
        k = fh.readinto(part[got:])
        if not k:
            raise PersistenceError(f"{where} is truncated")
        got += k


def _strings(d: Path, arrays: dict[str, np.ndarray], blob_name: str, off_name: str, n: int,
             *, nonempty: bool = False) -> StringColumn:
    """A checked :class:`StringColumn`: offsets, UTF-8 and character boundaries."""
    if blob_name not in arrays or off_name not in arrays:
        raise PersistenceError(f"{d} is corrupt: {blob_name} needs {off_name} and vice versa")
    blob, off = arrays[blob_name], arrays[off_name]
    where = d / off_name
    if off.shape[0] != n + 1 or off[0] != 0 or off[-1] != blob.shape[0]:
        raise PersistenceError(
            f"{where} is corrupt: expected {n + 1} offsets from 0 to {blob.shape[0]}"
        )
    step = np.diff(off)
    if (step <= 0).any() if nonempty else (step < 0).any():
        raise PersistenceError(f"{where} is corrupt: offsets must increase"
                               f"{' (ids are non-empty)' if nonempty else ''}")
    del step
    starts = off[:-1][off[:-1] < blob.shape[0]]
    if ((blob[starts] & 0xC0) == 0x80).any():
        raise PersistenceError(f"{where} is corrupt: an offset splits a UTF-8 character")
    try:
        blob.tobytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PersistenceError(f"{d / blob_name} is corrupt: not UTF-8 ({exc})"[:300]) from exc
    return StringColumn(blob, off)


def _id_hashes(d: Path, ids: StringColumn) -> np.ndarray:
    """``hash()`` of every id (per process: never saved); white-space-only ids are refused."""
    out = np.empty(len(ids), dtype=np.int64)
    for a, block in ids.blocks():
        if not all(map(str.strip, block)):
            j = a + [bool(s.strip()) for s in block].index(False)
            raise PersistenceError(f"{d / 'node_ids.npy'} is corrupt: id {j} is white space")
        out[a:a + len(block)] = np.fromiter(map(hash, block), dtype=np.int64, count=len(block))
    return out


def _rows(d: Path, arrays: dict[str, np.ndarray], name: str, m: int, bound: int) -> np.ndarray:
    """An ``int32`` array of ``m`` values in ``[0, bound)``."""
    if name not in arrays:
        raise PersistenceError(f"{d} is corrupt: {name} is missing")
    a = arrays[name]
    if a.shape[0] != m:
        raise PersistenceError(f"{d / name} is corrupt: {a.shape[0]} rows, the manifest "
                               f"says {m} edges")
    if m and (int(a.min()) < 0 or int(a.max()) >= bound):
        raise PersistenceError(f"{d / name} is corrupt: a value is outside [0, {bound})")
    return a


def _relation_table(d: Path, data: bytes) -> list[str]:
    try:
        table = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise PersistenceError(f"{d / 'relations.json'} is corrupt: {exc}"[:300]) from exc
    if not isinstance(table, list) or not all(isinstance(x, str) for x in table):
        raise PersistenceError(f"{d / 'relations.json'} is corrupt: not a list of strings")
    return table


def _attach_embeddings(d: Path, arrays: dict[str, np.ndarray], g: KnowledgeGraph) -> None:
    emb, mask = arrays.get("embeddings.npy"), arrays.get("embedding_mask.npy")
    if emb is None or mask is None:
        return
    if emb.shape[0] != len(g) or mask.shape[0] != len(g):
        raise PersistenceError(f"{d / 'embeddings.npy'} is corrupt: "
                               f"{emb.shape[0]} rows for {len(g)} nodes")
    g._emb, g._emb_mask = emb, mask


# ---------------------------------------------------------------------- conversion
def to_compact(g: KnowledgeGraph) -> KnowledgeGraph:
    """``g`` (object mode) as a compact graph, or :class:`GraphError` naming what it can't hold.

    The compact mode (:mod:`kgpath.graph.columns`) cannot hold node names other than the
    id, types, metadata, provenance, edge texts or weights other than 1.0.
    """
    if g.compact:
        return g
    for nd in g._nodes:
        _compactable("node", nd.id, name=nd.name != nd.id, type=nd.type is not None,
                     metadata=bool(nd.metadata), provenance=bool(nd.provenance))
    for e in g._edges:
        _compactable("edge", f"{e.source} -> {e.target}", text=bool(e.text),
                     type=e.type is not None, weight=e.weight != 1.0,
                     metadata=bool(e.metadata), provenance=bool(e.provenance))
    ix = g._node_index
    src = np.fromiter((ix[e.source] for e in g._edges), dtype=np.int64, count=g.num_edges)
    dst = np.fromiter((ix[e.target] for e in g._edges), dtype=np.int64, count=g.num_edges)
    out = type(g)()
    fill_columns(out, [nd.id for nd in g._nodes], src, dst,
                 relations=[e.relation for e in g._edges], texts=[nd.text for nd in g._nodes])
    out._passages = dict(g._passages)
    out._emb, out._emb_mask, out._emb_owner = g._emb, g._emb_mask, g._emb_owner
    out._version = g._version + 1
    return out


def _compactable(kind: str, key: str, **holds: bool) -> None:
    bad = [field for field, has in holds.items() if has]
    if bad:
        raise GraphError(
            f"{kind} {key!r} has {', '.join(bad)}, which the compact mode cannot hold "
            "(it keeps ids, node texts, relations and vectors); load with compact=False"
        )


def relation_bytes(relations: Sequence[str]) -> bytes:
    """``relations.json``."""
    return json.dumps(list(relations), ensure_ascii=False).encode("utf-8")
