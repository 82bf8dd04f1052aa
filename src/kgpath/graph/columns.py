"""Compact (column) storage of a large :class:`~kgpath.graph.KnowledgeGraph` (issue 14).

A graph built with ``KnowledgeGraph.from_arrays(..., compact=True)`` keeps no Python object
per node or edge. Its nodes and edges live in arrays:

* node ids (and texts, when given) in a :class:`StringColumn`: one UTF-8 byte blob plus
  ``int64`` offsets (a few bytes per string instead of a ~50-byte ``str`` object);
* the id -> index map in a :class:`HashIndex`: the 64-bit ``hash()`` of every id, sorted,
  with the row of each (12 bytes a node instead of a dict entry, a ``str`` and an ``int``);
  a hit is confirmed by comparing the stored string, so hash collisions are harmless;
* edge endpoints as ``int32`` arrays, relations as ``int32`` codes into an interned table
  (no array at all when every relation is ``""``), weights implicit (all 1.0).

:class:`NodeColumns` and :class:`EdgeColumns` are read-only ``Sequence`` views: indexing
materialises a :class:`~kgpath.graph.model.Node` / :class:`~kgpath.graph.model.Edge` on
access, equal to the one the object mode stores for the same input, so everything that
reads ``graph.nodes``, ``graph.node(id)``, ``graph.edge_at(i)`` works unchanged. The CSR
adjacency is built straight from the endpoint arrays (:meth:`EdgeColumns.csr`), in the same
layout as :func:`kgpath.graph.csr.build_csr`. Mutating a compact graph (``add_node``,
``add_edge``) first converts it to the object mode (:meth:`KnowledgeGraph._thaw`), so the
compact mode changes memory, never behaviour. This is a kgpath extension, not from a paper.

Measured (``benchmarks/bench_compact.py``, 10^6 nodes / 5·10^6 edges, fresh processes): RSS
after building the graph and its CSR 266 MB compact vs 1,917 MB with Python objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeVar, overload

import numpy as np

from kgpath.errors import GraphError
from kgpath.graph.model import Edge, Node, check_id, check_text

__all__ = [
    "EdgeColumns", "HashIndex", "IdMap", "NodeColumns", "StringColumn", "attach_columns",
    "fill_columns",
]

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_BLOCK = 65536  # strings encoded per block while building a column
_T = TypeVar("_T")


class _Rows(Sequence[_T]):
    """A read-only sequence whose rows are made on access by :meth:`_at`."""

    __slots__ = ()

    def _at(self, j: int) -> _T:
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> _T: ...
    @overload
    def __getitem__(self, i: slice) -> list[_T]: ...
    def __getitem__(self, i: int | slice) -> _T | list[_T]:
        n = len(self)
        if isinstance(i, slice):
            return [self._at(j) for j in range(*i.indices(n))]
        j = int(i) + n if int(i) < 0 else int(i)
        if not 0 <= j < n:
            raise IndexError(f"row {i} out of range for {n} rows")
        return self._at(j)

    def __iter__(self) -> Iterator[_T]:
        return (self._at(j) for j in range(len(self)))


class StringColumn(_Rows[str]):
    """``n`` strings stored as one UTF-8 blob (``uint8``) and ``n + 1`` ``int64`` offsets."""

    __slots__ = ("_blob", "_off")

    def __init__(self, blob: np.ndarray, offsets: np.ndarray) -> None:
        self._blob = blob
        self._off = offsets

    @classmethod
    def build(cls, strings: Iterable[str], check: Callable[[Any, int], str] | None = None,
              hashes: list[np.ndarray] | None = None) -> StringColumn:
        """Encode ``strings`` block by block; ``check(value, k)`` validates each first.

        With ``hashes`` (a list) the ``hash()`` of each string is appended to it, one
        ``int64`` array per block, so a :class:`HashIndex` needs no second pass.
        """
        parts: list[bytes] = []
        lengths: list[np.ndarray] = []
        block: list[str] = []
        k = 0
        for s in strings:
            block.append(check(s, k) if check is not None else s)
            k += 1
            if len(block) == _BLOCK:
                _encode_block(block, parts, lengths, hashes)
                block = []
        _encode_block(block, parts, lengths, hashes)
        offsets = np.zeros(k + 1, dtype=np.int64)
        np.cumsum(np.concatenate(lengths), out=offsets[1:])
        return cls(np.frombuffer(b"".join(parts), dtype=np.uint8), offsets)

    def __len__(self) -> int:
        return int(self._off.shape[0] - 1)

    def _at(self, j: int) -> str:
        return self._blob[self._off[j]:self._off[j + 1]].tobytes().decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        for _, block in self.blocks():
            yield from block

    def blocks(self) -> Iterator[tuple[int, list[str]]]:
        """``(first row, strings)`` for blocks of up to 65,536 rows, decoded a block at once.

        A block of ASCII text (as many characters as bytes) is sliced out of one decoded
        ``str``; any other block is decoded string by string.
        """
        off = self._off
        for a in range(0, len(self), _BLOCK):
            b = min(a + _BLOCK, len(self))
            lo, hi = int(off[a]), int(off[b])
            text = self._blob[lo:hi].tobytes().decode("utf-8")
            if len(text) == hi - lo:
                cut = (off[a:b + 1] - lo).tolist()
                yield a, [text[i:j] for i, j in zip(cut[:-1], cut[1:])]
            else:
                yield a, [self._at(j) for j in range(a, b)]

    @property
    def blob(self) -> np.ndarray:
        """The UTF-8 bytes of every string, concatenated (``uint8``)."""
        return self._blob

    @property
    def offsets(self) -> np.ndarray:
        """``n + 1`` ``int64`` offsets: string ``j`` is ``blob[offsets[j]:offsets[j + 1]]``."""
        return self._off

    @property
    def nbytes(self) -> int:
        """Bytes of the blob and the offsets."""
        return int(self._blob.nbytes + self._off.nbytes)


def _encode_block(block: list[str], parts: list[bytes], lengths: list[np.ndarray],
                  hashes: list[np.ndarray] | None) -> None:
    enc = [s.encode("utf-8") for s in block]
    parts.append(b"".join(enc))
    lengths.append(np.fromiter(map(len, enc), dtype=np.int64, count=len(enc)))
    if hashes is not None:
        hashes.append(np.fromiter(map(hash, block), dtype=np.int64, count=len(block)))


class HashIndex:
    """Rows of a :class:`StringColumn` by key: sorted 64-bit hashes + rows (12 bytes a row).

    ``key(s)`` maps a stored string to its lookup key (identity for ids, ``norm_name``
    for names); a lookup hashes the query key, bisects, and confirms every candidate by
    comparing keys, so it is exact. Hashes are Python's ``hash()``: per process, never
    persisted.
    """

    __slots__ = ("_col", "_h", "_key", "_rows")

    def __init__(self, col: StringColumn, hashes: np.ndarray | None = None,
                 key: Callable[[str], str] | None = None) -> None:
        self._col, self._key = col, key
        if hashes is None:
            kf = key or str
            hashes = np.fromiter((hash(kf(s)) for s in col), dtype=np.int64, count=len(col))
        order = np.argsort(hashes, kind="stable")
        self._h = hashes[order]
        self._rows = order.astype(np.int32)

    def rows(self, k: str) -> list[int]:
        """Every row whose key equals ``k``, ascending."""
        h = hash(k)
        lo = int(np.searchsorted(self._h, h, side="left"))
        hi = int(np.searchsorted(self._h, h, side="right"))
        kf = self._key
        return [int(r) for r in self._rows[lo:hi]
                if (kf(self._col[int(r)]) if kf else self._col[int(r)]) == k]

    def get(self, k: str, default: Any = None) -> Any:
        """Rows of ``k`` as a list, or ``default`` when there is none (dict-like)."""
        hit = self.rows(k)
        return hit if hit else default

    def first_duplicate(self) -> str | None:
        """A key held by two rows, or ``None`` (checks only equal-hash neighbours)."""
        for p in np.flatnonzero(self._h[1:] == self._h[:-1]):
            a, b = self._col[int(self._rows[p])], self._col[int(self._rows[p + 1])]
            if (self._key(a) == self._key(b)) if self._key else a == b:
                return a
        return None

    @property
    def nbytes(self) -> int:
        """Bytes of the hash and row arrays."""
        return int(self._h.nbytes + self._rows.nbytes)


class IdMap(Mapping[str, int]):
    """Node id -> index over a :class:`HashIndex` of unique ids (the compact ``_node_index``)."""

    __slots__ = ("_ids", "_index")

    def __init__(self, ids: StringColumn, index: HashIndex) -> None:
        self._ids, self._index = ids, index

    def __getitem__(self, key: str) -> int:
        if not isinstance(key, str):
            raise KeyError(key)
        hit = self._index.rows(key)
        if not hit:
            raise KeyError(key)
        return hit[0]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and bool(self._index.rows(key))

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


class NodeColumns(_Rows[Node]):
    """Read-only view of the nodes: ``Node(id, name=id, text, None, {}, ())`` per row."""

    __slots__ = ("ids", "texts")

    def __init__(self, ids: StringColumn, texts: StringColumn | None) -> None:
        self.ids, self.texts = ids, texts

    def __len__(self) -> int:
        return len(self.ids)

    def _at(self, j: int) -> Node:
        nid = self.ids[j]
        return Node(nid, nid, self.texts[j] if self.texts is not None else "", None, _EMPTY)

    @property
    def nbytes(self) -> int:
        """Bytes of the id and text columns."""
        return self.ids.nbytes + (self.texts.nbytes if self.texts is not None else 0)


class EdgeColumns(_Rows[Edge]):
    """Read-only view of the edges: endpoints ``int32``, relations as interned codes."""

    __slots__ = ("dst", "ids", "rel", "relations", "src")

    def __init__(self, ids: StringColumn, src: np.ndarray, dst: np.ndarray,
                 rel: np.ndarray | None, relations: Sequence[str]) -> None:
        self.ids, self.src, self.dst = ids, src, dst
        self.rel, self.relations = rel, tuple(relations)

    def __len__(self) -> int:
        return int(self.src.shape[0])

    def _at(self, j: int) -> Edge:
        r = self.relations[int(self.rel[j])] if self.rel is not None else ""
        return Edge(self.ids[int(self.src[j])], self.ids[int(self.dst[j])], r, "", None, 1.0,
                    (), _EMPTY)

    def csr(self, n: int) -> dict[str, np.ndarray]:
        """CSR arrays as :func:`kgpath.graph.csr.build_csr`, from the endpoint arrays."""
        m = len(self)
        eid = np.arange(m, dtype=np.int32)
        out: dict[str, np.ndarray] = {}
        for name, a, b in (("out", self.src, self.dst), ("in", self.dst, self.src)):
            order = np.argsort(a, kind="stable")
            indptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.bincount(a, minlength=n), out=indptr[1:])
            out[f"{name}_indptr"] = indptr
            out[f"{name}_indices"] = b[order]
            out[f"{name}_edges"] = eid[order]
            del order
        out["weights"] = np.ones(m, dtype=np.float32)
        return out

    @property
    def nbytes(self) -> int:
        """Bytes of the endpoint and relation arrays (the id column is the nodes')."""
        return int(self.src.nbytes + self.dst.nbytes
                   + (self.rel.nbytes if self.rel is not None else 0))


def fill_columns(g: Any, node_ids: Iterable[str], src: np.ndarray, dst: np.ndarray, *,
                 relations: Sequence[str] | None, texts: Sequence[str] | None) -> None:
    """Fill the empty graph ``g`` in the compact mode (``from_arrays(compact=True)``).

    Same validation and duplicate-edge merging as the object path of
    :func:`kgpath.graph.builders.from_arrays`: the first ``(source, target, relation)``
    occurrence is kept, edges keep their first-appearance order. ``src``/``dst`` are
    validated integer arrays; ``relations``/``texts`` have the right lengths.
    """
    hashes: list[np.ndarray] = []
    ids = StringColumn.build(node_ids, lambda s, k: check_id(s, f"node_ids[{k}]"), hashes)
    index = HashIndex(ids, np.concatenate(hashes))
    del hashes
    dup = index.first_duplicate()
    if dup is not None:
        raise GraphError(f"node_ids contain duplicates (e.g. {dup!r})")
    n = len(ids)
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        raise GraphError(f"edge endpoint out of range [0, {n})")
    txt = None
    if texts is not None:  # validated like the object mode; no column when all are ""
        txt = StringColumn.build(texts, lambda t, k: check_text(t, f"texts[{k}]"))
        txt = txt if txt._blob.size else None
    rel, table = _intern(relations)
    keep = _first_occurrences(src, dst, rel, n)
    attach_columns(g, ids, index, txt, src[keep].astype(np.int32), dst[keep].astype(np.int32),
                   None if rel is None else rel[keep], table)


def attach_columns(g: Any, ids: StringColumn, index: HashIndex, texts: StringColumn | None,
                   src: np.ndarray, dst: np.ndarray, rel: np.ndarray | None,
                   relations: Sequence[str]) -> None:
    """Make the empty graph ``g`` a compact graph over validated columns (no copies)."""
    g._nodes = NodeColumns(ids, texts)
    g._node_index = IdMap(ids, index)
    g._edges = EdgeColumns(ids, src, dst, rel, relations)


def _intern(relations: Sequence[str] | None) -> tuple[np.ndarray | None, list[str]]:
    """Relation codes (``int32``) and their table; ``None`` when every relation is ``""``."""
    if relations is None:
        return None, [""]
    table: dict[str, int] = {}
    codes = np.fromiter((table.setdefault(check_text(r, f"relations[{k}]"), len(table))
                         for k, r in enumerate(relations)), dtype=np.int32, count=len(relations))
    if not table or (len(table) == 1 and "" in table):  # no edges, or every relation ""
        return None, [""]
    return codes, list(table)


def _first_occurrences(src: np.ndarray, dst: np.ndarray, rel: np.ndarray | None,
                       n: int) -> np.ndarray:
    """Ascending indices of the first edge of every distinct ``(src, dst, rel)``."""
    if src.size == 0:
        return np.zeros(0, dtype=np.int64)
    key = src.astype(np.int64) * n + dst
    order = np.lexsort((key,)) if rel is None else np.lexsort((rel, key))
    ks = key[order]
    start = np.ones(order.size, dtype=bool)
    start[1:] = ks[1:] != ks[:-1]
    if rel is not None:
        rs = rel[order]
        start[1:] |= rs[1:] != rs[:-1]
    return np.sort(order[start])
