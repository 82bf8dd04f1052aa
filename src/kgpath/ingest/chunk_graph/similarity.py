"""Step 2 of the article: similarity edges between chunks, computed blockwise.

Article section "Knowledge Graph Architecture", step 2 ("Similarity Matrix"): cosine
similarity between chunk embeddings; for each chunk only the ``top_k_intra = 10`` most
similar chunks of the *same* document and the ``top_x_inter`` most similar chunks of
*other* documents are kept as edges. The full ``n x n`` matrix is never held: rows are
processed in blocks of ``B = block_elements // n`` rows, so peak extra memory is
``O(block_elements + n*(k+x))`` instead of ``O(n^2)``.
"""

from __future__ import annotations

import numpy as np

from kgpath.errors import GraphError

__all__ = ["similarity_edges"]

_Edges = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def similarity_edges(
    embeddings: np.ndarray,
    groups: np.ndarray,
    *,
    top_k_intra: int = 10,
    top_x_inter: int = 5,
    block_elements: int = 1 << 22,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-row top lists of cosine similarity within and across groups, blockwise.

    Parameters
    ----------
    embeddings
        ``(n, d)`` unit rows (chunk embeddings).
    groups
        ``(n,)`` int group (document) of every row; rows of one group must be contiguous.
    top_k_intra, top_x_inter
        List lengths inside the row's group and outside it (article step 2).
    block_elements
        Scores materialised at once; ``B = max(1, block_elements // n)`` rows per block.

    Returns
    -------
    (source, target, similarity, intra)
        Edge arrays (int64, int64, float32, bool), sources ascending, each source's intra
        edges then inter edges in descending similarity (ties by ascending target).

    Notes
    -----
    Cost O(n^2 d) time, O(B n + n (k + x)) memory. Within a block the intra list of a row
    is a slice of its group's contiguous column range; the inter list is an
    ``argpartition`` over the block after masking that range.
    """
    emb = np.ascontiguousarray(np.asarray(embeddings, dtype=np.float32))
    grp = np.asarray(groups, dtype=np.int64)
    n = emb.shape[0]
    if emb.ndim != 2 or grp.shape != (n,):
        raise GraphError(f"embeddings {emb.shape} and groups {grp.shape} do not match")
    if n == 0:
        return _no_edges()
    rows_per_block = max(1, min(n, block_elements // max(n, 1)))
    parts = _blockwise(emb, _group_bounds(grp), rows_per_block, top_k_intra, top_x_inter)
    if not parts:
        return _no_edges()
    return (
        np.concatenate([np.full(d.size, i, np.int64) for i, d, _, _ in parts]),
        np.concatenate([d for _, d, _, _ in parts]),
        np.concatenate([s for _, _, s, _ in parts]),
        np.concatenate([np.full(d.size, intra, bool) for _, d, _, intra in parts]),
    )


def _blockwise(
    emb: np.ndarray,
    bounds: tuple[np.ndarray, np.ndarray],
    rows_per_block: int,
    top_k_intra: int,
    top_x_inter: int,
) -> list[tuple[int, np.ndarray, np.ndarray, bool]]:
    """Every row's lists as ``(source, targets, similarities, intra)``, rows ascending.

    Scores are formed ``rows_per_block`` rows at a time (``(B, n)``, the only dense array).
    """
    row_start, row_end = bounds
    n = emb.shape[0]
    parts: list[tuple[int, np.ndarray, np.ndarray, bool]] = []
    for r0 in range(0, n, rows_per_block):
        r1 = min(n, r0 + rows_per_block)
        block = emb[r0:r1] @ emb.T
        for i in range(r0, r1):
            lo, hi = int(row_start[i]), int(row_end[i])
            for dst, sim, intra in _row_edges(block[i - r0], i, lo, hi, top_k_intra, top_x_inter):
                parts.append((i, dst, sim, intra))
        del block
    return parts


def _no_edges() -> _Edges:
    e = np.zeros(0, np.int64)
    return e, e.copy(), np.zeros(0, np.float32), np.zeros(0, bool)


def _group_bounds(grp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the half-open column range ``[start, end)`` of its group.

    Raises
    ------
    GraphError
        If the rows of one group are not contiguous.
    """
    change = np.flatnonzero(np.diff(grp)) + 1
    if change.size + 1 != np.unique(grp).size:
        raise GraphError("rows of one group (document) must be contiguous")
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [grp.size]])
    gid = np.repeat(np.arange(starts.size), ends - starts)
    return starts[gid], ends[gid]


def _row_edges(
    row: np.ndarray, i: int, lo: int, hi: int, top_k_intra: int, top_x_inter: int
) -> list[tuple[np.ndarray, np.ndarray, bool]]:
    """Row ``i``'s intra list then inter list as ``(targets, similarities, intra)``.

    ``row`` (the scores of row ``i`` against every column) is scratch: the inter list
    overwrites the row's own group ``[lo, hi)``, so the intra list is taken first.
    """
    out: list[tuple[np.ndarray, np.ndarray, bool]] = []
    if top_k_intra > 0 and hi - lo > 1:
        out.append((*_top_intra(row, i, lo, hi, top_k_intra), True))
    if top_x_inter > 0 and row.size - (hi - lo) > 0:
        out.append((*_top_inter(row, lo, hi, top_x_inter), False))
    return out


def _top_intra(
    row: np.ndarray, i: int, lo: int, hi: int, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` columns of ``[lo, hi)`` (``i`` excluded) most similar to row ``i``.

    Descending similarity, ties by ascending column: a slice of the group's contiguous
    column range.
    """
    cols = np.arange(lo, hi)
    cols = cols[cols != i]
    vals = row[cols]
    kk = min(k, cols.size)
    order = np.lexsort((cols, -vals))[:kk]
    return cols[order].astype(np.int64), vals[order].astype(np.float32)


def _top_inter(row: np.ndarray, lo: int, hi: int, x: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``x`` columns outside ``[lo, hi)`` most similar to the row (ties: lower column).

    An ``argpartition`` finds the ``x``-th best score; every column at least as good is
    then sorted, so ties at the cut are broken by column, not by partition order.
    """
    n = row.size
    row[lo:hi] = -np.inf  # mask the row's own document (the block is scratch)
    xx = min(x, n - (hi - lo))
    part = np.argpartition(-row, xx - 1)[:xx] if xx < n else np.arange(n)
    kth = row[part].min()
    tied = np.flatnonzero(row >= kth)
    cols = tied[np.lexsort((tied, -row[tied]))[:xx]]
    return cols.astype(np.int64), row[cols].astype(np.float32)
