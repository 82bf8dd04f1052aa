"""The node vectors a graph stores: one ``(n, d)`` float32 matrix, a row mask, an owner record.

:attr:`KnowledgeGraph.vectors <kgpath.graph.KnowledgeGraph.vectors>` is a
:class:`NodeVectors` view over the graph's own arrays (the graph keeps the storage; the
view holds no copy, so taking it is free and it never outlives a change). The graph only
keeps the vectors: who computes them is the index's business (:mod:`kgpath.index`), and
which embedder made them is recorded as an opaque ``owner`` mapping (see
:func:`kgpath.embeddings.embedder_record`) that :meth:`KnowledgeGraph.save` writes into the
manifest and :meth:`KnowledgeGraph.load` restores.

Rows: row ``i`` belongs to node index ``i``. A node added after the vectors were set has no
row yet (the arrays grow, zero and unmasked, on the next read); a node whose
:attr:`~kgpath.graph.Node.search_text` changes loses its vector (it described the old
text).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kgpath.errors import EmbeddingError

if TYPE_CHECKING:
    from kgpath.graph.knowledge_graph import KnowledgeGraph
    from kgpath.graph.model import Node

__all__ = ["NodeVectors"]


class NodeVectors:
    """The stored node vectors of one graph (a view: ``graph.vectors``).

    Examples
    --------
    >>> from kgpath.graph import KnowledgeGraph
    >>> g = KnowledgeGraph.from_triples([("a", "r", "b")])
    >>> g.vectors.dim is None, g.vectors.missing()
    (True, [0, 1])
    >>> g.vectors.set({"a": [1.0, 0.0]})
    >>> g.vectors.dim, g.vectors.missing()
    (2, [1])
    """

    __slots__ = ("_g",)

    def __init__(self, graph: KnowledgeGraph) -> None:
        self._g = graph

    def __repr__(self) -> str:
        return f"NodeVectors(dim={self.dim}, missing={len(self.missing())}, of {self._g!r})"

    @property
    def dim(self) -> int | None:
        """Dimension of the stored vectors, ``None`` when there are none."""
        emb = self._g._emb
        return None if emb is None else int(emb.shape[1])

    @property
    def owner(self) -> dict[str, Any] | None:
        """Which embedder made the stored vectors: ``{"name", "dim", "fingerprint"}``.

        ``None`` when the vectors were supplied by the caller (:meth:`set` without
        ``owner``) or there are none; then an index trusts them as they are (only the
        dimension is checked). Saved in the manifest and restored by
        :meth:`KnowledgeGraph.load <kgpath.graph.KnowledgeGraph.load>`. See
        :func:`kgpath.embeddings.embedder_record`.
        """
        rec = self._g._emb_owner
        return None if rec is None else dict(rec)

    @property
    def matrix(self) -> np.ndarray:
        """The ``(n, d)`` float32 matrix (not a copy); raises if any node lacks a vector.

        Raises
        ------
        EmbeddingError
            Naming up to five nodes without a vector.
        """
        missing = self.missing()
        if missing:
            ids = [self._g._nodes[i].id for i in missing[:5]]
            raise EmbeddingError(
                f"{len(missing)} node(s) have no embedding (e.g. {ids}); "
                "embed them with GraphIndex or graph.vectors.set()"
            )
        emb = self._g._emb
        assert emb is not None  # no missing row: the matrix exists
        return emb

    def missing(self) -> list[int]:
        """Indices of nodes without a vector (every node when none is stored)."""
        g = self._g
        if g._emb is None or g._emb_mask is None:
            return list(range(len(g._nodes)))
        self._grow()
        assert g._emb_mask is not None
        return np.flatnonzero(~g._emb_mask).tolist()

    def set(
        self,
        vectors: Mapping[str, Sequence[float] | np.ndarray] | np.ndarray,
        *,
        owner: Mapping[str, Any] | None = None,
    ) -> None:
        """Store node vectors, either a full ``(n, d)`` matrix or ``{node id: vector}``.

        ``owner`` records the embedder that made them (see :attr:`owner`); a full matrix
        takes that owner, and vectors of another owner added to existing ones make the
        owner unknown (``None``). Bumps the graph's version.

        Raises
        ------
        EmbeddingError
            On a shape or dimension mismatch or NaN/inf values (naming the node).
        NodeNotFoundError
            For an unknown node id in the mapping.
        """
        g = self._g
        had = g._emb_mask is not None and bool(g._emb_mask.any())
        new_owner = dict(owner) if owner is not None else None
        if isinstance(vectors, np.ndarray):
            self._set_matrix(vectors)
        else:
            self._set_rows(vectors)
        if not had or isinstance(vectors, np.ndarray):
            g._emb_owner = new_owner
        elif new_owner != g._emb_owner:
            g._emb_owner = None

    def _set_matrix(self, vectors: np.ndarray) -> None:
        g = self._g
        n = len(g._nodes)
        mat = np.asarray(vectors, dtype=np.float32)
        if mat.ndim != 2 or mat.shape[0] != n:
            raise EmbeddingError(f"embedding matrix must have shape ({n}, d), got {mat.shape}")
        _check_finite(mat, g._nodes)
        if g._emb is not None and mat.shape[1] != g._emb.shape[1]:
            raise EmbeddingError(
                f"embedding dimension {mat.shape[1]} does not match the graph's "
                f"{g._emb.shape[1]}"
            )
        g._emb = np.ascontiguousarray(mat)
        g._emb_mask = np.ones(n, dtype=bool)
        g._version += 1

    def _set_rows(self, vectors: Mapping[str, Sequence[float] | np.ndarray]) -> None:
        g = self._g
        n = len(g._nodes)
        for node_id, vec in vectors.items():
            i = g.index_of(node_id)
            v = np.asarray(vec, dtype=np.float32).reshape(-1)
            _check_finite(v[None, :], [g._nodes[i]])
            if g._emb is None:
                g._emb = np.zeros((n, v.size), dtype=np.float32)
                g._emb_mask = np.zeros(n, dtype=bool)
            elif v.size != g._emb.shape[1]:
                raise EmbeddingError(
                    f"embedding for node {node_id!r} has dimension {v.size}, "
                    f"expected {g._emb.shape[1]}"
                )
            self._grow()
            assert g._emb_mask is not None
            g._emb[i] = v
            g._emb_mask[i] = True
        g._version += 1

    def _grow(self) -> None:
        """Give nodes added since the vectors were set a zero, unmasked row."""
        g = self._g
        if g._emb is None or g._emb_mask is None:
            return
        n = len(g._nodes)
        if g._emb.shape[0] < n:
            extra = n - g._emb.shape[0]
            g._emb = np.vstack([g._emb, np.zeros((extra, g._emb.shape[1]), np.float32)])
            g._emb_mask = np.concatenate([g._emb_mask, np.zeros(extra, dtype=bool)])

    def _forget(self, idx: int) -> None:
        """Drop node ``idx``'s vector (its text changed)."""
        mask = self._g._emb_mask
        if mask is not None and idx < mask.shape[0]:
            mask[idx] = False


def _check_finite(mat: np.ndarray, nodes: Sequence[Node]) -> None:
    bad = ~np.isfinite(mat).all(axis=1)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        name = nodes[first].id if first < len(nodes) else first
        raise EmbeddingError(f"embedding for node {name!r} contains NaN or inf")
