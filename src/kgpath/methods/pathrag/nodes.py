"""Section 4.1, second half: the retrieved node set ``V_q`` (keywords take turns)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kgpath.graph import Node

__all__ = ["RetrievedNode", "retrieve_nodes"]


@dataclass(frozen=True)
class RetrievedNode:
    """A node of ``V_q`` with the keyword that retrieved it and their cosine similarity."""

    node: Node
    index: int
    keyword: str
    similarity: float

    @property
    def id(self) -> str:
        """Node id."""
        return self.node.id


def retrieve_nodes(
    keyword_vectors: np.ndarray, node_vectors: np.ndarray, n: int
) -> list[tuple[int, int, float]]:
    """Section 4.1: iterate over the keywords, collecting similar nodes until ``n`` are found.

    Each keyword ranks all nodes by cosine similarity (rows are unit vectors). Keywords
    take turns, each contributing its best node not yet collected, until ``n`` distinct
    nodes (or all nodes) are collected. Returns ``(node index, keyword position,
    similarity)`` in collection order. Ties rank the lower node index first.
    """
    kv = np.atleast_2d(np.asarray(keyword_vectors, dtype=np.float32))
    nv = np.asarray(node_vectors, dtype=np.float32)
    total = nv.shape[0]
    if kv.shape[0] == 0 or total == 0:
        return []
    n = min(int(n), total)
    sims = kv @ nv.T  # (|K_q|, |V|)
    depth = min(n, total)
    if depth < total:
        part = np.argpartition(-sims, depth - 1, axis=1)[:, :depth]
    else:
        part = np.broadcast_to(np.arange(total), sims.shape)
    psims = np.take_along_axis(sims, part, axis=1)
    ranked = np.take_along_axis(part, np.lexsort((part, -psims), axis=-1), axis=1)
    seen: set[int] = set()
    out: list[tuple[int, int, float]] = []
    for r in range(depth):
        for k in range(kv.shape[0]):
            node = int(ranked[k, r])
            if node not in seen:
                seen.add(node)
                out.append((node, k, float(sims[k, node])))
                if len(out) == n:
                    return out
    return out
