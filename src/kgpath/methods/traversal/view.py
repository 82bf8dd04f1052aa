"""Array view of a chunk graph: what every traversal reads, extracted once.

The chunk graph (article section "Knowledge Graph Architecture", built by
:mod:`kgpath.ingest.chunk_graph`) stores chunks, their sentence children and the
``similar_intra``/``similar_inter`` edges of step 2 as Python objects; the walks only touch
the arrays of :class:`ChunkGraphView`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kgpath.errors import GraphError
from kgpath.graph import KnowledgeGraph
from kgpath.ingest.chunk_graph import (
    NODE_CHUNK,
    NODE_SENTENCE,
    REL_HAS_SENTENCE,
    REL_SIMILAR_INTER,
    REL_SIMILAR_INTRA,
)

if TYPE_CHECKING:  # pragma: no cover
    from kgpath.methods.traversal.mentions import MentionLayer

__all__ = ["ChunkGraphView", "as_view", "doc_of"]


class ChunkGraphView:
    """Array view of a chunk graph built by :mod:`kgpath.ingest.chunk_graph`.

    Extracts, once, the chunk and sentence embeddings, chunk -> sentence membership
    (CSR ``chunk_sent_ptr``/``chunk_sent``), document ids, and the undirected chunk
    adjacency (CSR ``adj_ptr``/``adj``) from the ``similar_intra``/``similar_inter``
    edges. Traversals never touch Python node objects.
    """

    def __init__(self, graph: KnowledgeGraph) -> None:
        self.graph = graph
        chunk_nodes: list[int] = []
        sent_nodes: list[int] = []
        for i, n in enumerate(graph.nodes):
            if n.type == NODE_CHUNK:
                chunk_nodes.append(i)
            elif n.type == NODE_SENTENCE:
                sent_nodes.append(i)
        if not chunk_nodes:
            raise GraphError("graph has no 'chunk' nodes; build it with ChunkGraphBuilder")
        if not sent_nodes:
            raise GraphError("chunk graph has no 'sentence' nodes (sentence_nodes=False)")
        self.chunk_nodes = np.asarray(chunk_nodes, dtype=np.int64)
        self.sent_nodes = np.asarray(sent_nodes, dtype=np.int64)
        emb = graph.vectors.matrix
        self.chunk_emb = np.ascontiguousarray(emb[self.chunk_nodes])
        self.sent_emb = np.ascontiguousarray(emb[self.sent_nodes])
        cpos = {int(g): p for p, g in enumerate(chunk_nodes)}
        spos = {int(g): p for p, g in enumerate(sent_nodes)}
        self.chunk_ids = [graph.node_at(i).id for i in chunk_nodes]
        self.sent_ids = [graph.node_at(i).id for i in sent_nodes]
        self.sent_text = [graph.node_at(i).text for i in sent_nodes]
        self.chunk_doc = [doc_of(graph, i) for i in chunk_nodes]
        self.sent_doc = [doc_of(graph, i) for i in sent_nodes]
        members: list[list[int]] = [[] for _ in chunk_nodes]
        pairs: list[tuple[int, int]] = []
        for e in graph.edges:
            if e.relation == REL_HAS_SENTENCE:
                c, s = cpos.get(graph.index_of(e.source)), spos.get(graph.index_of(e.target))
                if c is not None and s is not None:
                    members[c].append(s)
            elif e.relation in (REL_SIMILAR_INTRA, REL_SIMILAR_INTER):
                a, b = cpos.get(graph.index_of(e.source)), cpos.get(graph.index_of(e.target))
                if a is not None and b is not None and a != b:
                    pairs.append((a, b))
        for c, m in enumerate(members):
            if not m:
                raise GraphError(f"chunk {self.chunk_ids[c]!r} has no sentence children")
            m.sort()
        self.chunk_sent_ptr = np.zeros(len(members) + 1, dtype=np.int64)
        np.cumsum([len(m) for m in members], out=self.chunk_sent_ptr[1:])
        self.chunk_sent = np.asarray([s for m in members for s in m], dtype=np.int64)
        m_chunks = len(chunk_nodes)
        if pairs:
            p = np.asarray(pairs, dtype=np.int64)
            both = np.unique(np.concatenate([p, p[:, ::-1]]), axis=0)
        else:
            both = np.zeros((0, 2), dtype=np.int64)
        counts = np.bincount(both[:, 0], minlength=m_chunks)
        self.adj_ptr = np.zeros(m_chunks + 1, dtype=np.int64)
        np.cumsum(counts, out=self.adj_ptr[1:])
        self.adj = both[:, 1].copy()
        self._chunk_pos = {cid: i for i, cid in enumerate(self.chunk_ids)}
        self._pca: tuple[int, np.ndarray, np.ndarray] | None = None
        self._mentions: dict[int, MentionLayer] = {}

    def mention_layer(self, min_title_chars: int = 3) -> MentionLayer:
        """Document-level mention arrays (:class:`MentionLayer`), built on first use."""
        from kgpath.methods.traversal.mentions import MentionLayer  # mentions imports view

        if min_title_chars not in self._mentions:
            self._mentions[min_title_chars] = MentionLayer(self, min_title_chars=min_title_chars)
        return self._mentions[min_title_chars]

    @property
    def num_chunks(self) -> int:
        """Number of chunks."""
        return int(self.chunk_nodes.size)

    def sentences_of(self, chunk: int) -> np.ndarray:
        """Sentence positions of a chunk, in document order."""
        return self.chunk_sent[self.chunk_sent_ptr[chunk] : self.chunk_sent_ptr[chunk + 1]]

    def neighbours(self, chunk: int) -> np.ndarray:
        """Chunk positions adjacent to ``chunk`` (undirected similarity edges)."""
        return self.adj[self.adj_ptr[chunk] : self.adj_ptr[chunk + 1]]

    def chunk_position(self, chunk_id: str) -> int:
        """Position of a chunk id (raises :class:`GraphError` if unknown)."""
        try:
            return self._chunk_pos[chunk_id]
        except KeyError:
            raise GraphError(f"unknown chunk id {chunk_id!r}") from None

    def pca(self, components: int = 3) -> tuple[np.ndarray, np.ndarray]:
        """``(mean, basis)`` of a PCA of the chunk embeddings (Alg. 5, step 1).

        The basis holds the top ``components`` eigenvectors of the ``d x d`` covariance
        (columns, by decreasing eigenvalue, sign fixed so the largest-magnitude entry is
        positive); memory ``O(d^2)`` whatever the number of chunks.
        """
        if self._pca is None or self._pca[0] != components:
            x = self.chunk_emb.astype(np.float64)
            mean = x.mean(axis=0)
            xc = x - mean
            cov = xc.T @ xc / max(1, x.shape[0])
            vals, vecs = np.linalg.eigh(cov)
            order = np.argsort(-vals, kind="stable")[: min(components, vecs.shape[1])]
            basis = vecs[:, order]
            flip = np.sign(basis[np.argmax(np.abs(basis), axis=0), np.arange(basis.shape[1])])
            basis = basis * np.where(flip == 0, 1.0, flip)
            self._pca = (components, mean, basis)
        return self._pca[1], self._pca[2]


def doc_of(graph: KnowledgeGraph, index: int) -> str:
    """Document id of node ``index``: its ``doc_id`` metadata, else first provenance, else id."""
    n = graph.node_at(index)
    doc = n.metadata.get("doc_id") if n.metadata else None
    if doc is None and n.provenance:
        doc = n.provenance[0]
    return str(doc) if doc is not None else n.id


def as_view(graph: KnowledgeGraph | ChunkGraphView) -> ChunkGraphView:
    """``graph`` itself if it is a view, else a new :class:`ChunkGraphView` of it."""
    return graph if isinstance(graph, ChunkGraphView) else ChunkGraphView(graph)
