"""C2RAG anchor matching (Eq. 2-4) and relation alignment (Eq. 5).

:func:`token_coverage` (Eq. 3) maps the constant end of a single-placeholder constraint to
the top-``E`` nodes (:func:`match_anchors`); :func:`candidate_pool` (Eq. 4) collects their
one-hop neighbourhood in both directions; :func:`relation_alignment` (Eq. 5) scores each
candidate's KG relation against the constraint's relation variants ``R_i``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.methods.c2rag.plan import tokens

__all__ = [
    "Anchor",
    "Candidate",
    "candidate_pool",
    "match_anchors",
    "rank_anchors",
    "relation_alignment",
    "token_coverage",
]


def token_coverage(surface: str, name: str) -> float:
    """Eq. 3: ``S_tok = |Tok(surface) ∩ Tok(name)| / |Tok(surface)|`` (0 for no tokens).

    >>> token_coverage("Tower of London", "London")
    0.3333333333333333
    """
    s = set(tokens(surface))
    if not s:
        return 0.0
    return len(s & set(tokens(name))) / len(s)


@dataclass(frozen=True)
class Anchor:
    """An anchor node of a constraint: matched by name (Eq. 3) or bound by a placeholder."""

    node_id: str
    name: str
    coverage: float | None
    """``S_tok`` of Eq. 3 (``None`` when the anchor comes from a binding)."""
    via: str
    """``"name"`` or ``"binding ?var"``."""


def match_anchors(
    surface: str,
    graph: KnowledgeGraph,
    top_e: int = 3,
    *,
    token_index: Mapping[str, Sequence[int]] | None = None,
) -> list[Anchor]:
    """Eq. 3: the top-``E`` nodes by token coverage of ``surface`` (coverage > 0 only).

    Ties (the paper does not break them) go to the name with the larger Jaccard overlap,
    so an exact name beats a longer one, then to the lower node index.

    ``token_index`` (token -> node indices) avoids a scan of every node name.
    """
    s = set(tokens(surface))
    if not s:
        return []
    counts: dict[int, int] = {}
    if token_index is not None:
        for t in s:
            for i in token_index.get(t, ()):
                counts[i] = counts.get(i, 0) + 1
    else:
        for i, n in enumerate(graph.nodes):
            k = len(s & set(tokens(n.name)))
            if k:
                counts[i] = k
    return rank_anchors(
        surface, ((i, graph.node_at(i).id, graph.node_at(i).name) for i in counts), top_e
    )


def rank_anchors(
    surface: str, nodes: Iterable[tuple[Any, str, str]], top_e: int = 3
) -> list[Anchor]:
    """Eq. 3 over ``(order, id, name)`` triples: the top-``E`` by token coverage (> 0).

    The ranking of :func:`match_anchors` (coverage, then Jaccard overlap, then ``order``,
    the node's position in the graph) over any set of nodes holding every node that shares
    a token with ``surface``: a node sharing none has coverage 0 and is never kept, so the
    result equals :func:`match_anchors` on the whole graph (what a store fetches,
    :mod:`kgpath.methods.c2rag.cypher`).
    """
    s = set(tokens(surface))
    if not s:
        return []
    ranked = []
    for order, nid, name in nodes:
        name_toks = set(tokens(name))
        k = len(s & name_toks)
        if k:
            ranked.append((-k / len(s), -k / len(s | name_toks), order, nid, name))
    ranked.sort(key=lambda r: r[:3])
    return [Anchor(nid, name, -neg_cov, "name") for neg_cov, _, _, nid, name in ranked[:top_e]]


@dataclass(frozen=True)
class Candidate:
    """A candidate triple ``c = (e_s, r_kg, e_o)`` of a constraint with its scores."""

    edge_index: int
    source: str
    relation: str
    target: str
    text: str
    """``Lin(c)``: ``"<source name> <relation> <target name>"``."""
    anchor: str
    """Id of the anchor end of the triple."""
    entity: str
    """Id of the other end: the entity this candidate induces for the placeholder (Eq. 13)."""
    provenance: tuple[str, ...] = ()
    s_rel: float | None = None
    """Eq. 5 relation alignment score."""
    z: float | None = None
    """Eq. 6 reranker score."""
    p: float | None = None
    """Eq. 7 normalised probability (``C_top`` only)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return dataclasses.asdict(self) | {"provenance": list(self.provenance)}


def candidate_pool(
    graph: KnowledgeGraph, anchors: Sequence[str], *, relation_text: bool = True
) -> list[Candidate]:
    """Eq. 4: every triple with an anchor at either end, each edge once.

    An edge joining two anchors is kept once, from the side of the earlier (better) anchor.
    """
    csr = graph.csr()
    seen: set[int] = set()
    out: list[Candidate] = []
    for aid in anchors:
        a = graph.index_of(aid)
        for d in ("out", "in"):
            ip = csr[f"{d}_indptr"]
            for e in csr[f"{d}_edges"][ip[a] : ip[a + 1]]:
                ei = int(e)
                if ei in seen:
                    continue
                seen.add(ei)
                edge = graph.edge_at(ei)
                other = edge.target if d == "out" else edge.source
                rel = edge.relation or (edge.text if relation_text else "")
                src, tgt = graph.node(edge.source).name, graph.node(edge.target).name
                out.append(
                    Candidate(
                        edge_index=ei,
                        source=edge.source,
                        relation=rel,
                        target=edge.target,
                        text=f"{src} {rel} {tgt}",
                        anchor=aid,
                        entity=other,
                        provenance=tuple(edge.provenance),
                    )
                )
    return out


def relation_alignment(relation_vecs: np.ndarray, variant_vecs: np.ndarray) -> np.ndarray:
    """Eq. 5: ``S_rel(r_kg, R_i) = max_{r' in R_i} cos(v_{r_kg}, v_{r'})`` for every row.

    Both inputs are unit-row matrices (kgpath embedders return unit rows).
    """
    r = np.asarray(relation_vecs, dtype=np.float32)
    v = np.asarray(variant_vecs, dtype=np.float32)
    if r.shape[0] == 0:
        return np.zeros(0, dtype=np.float32)
    if v.shape[0] == 0:
        raise ConfigError("relation alignment needs at least one relation variant")
    return (r @ v.T).max(axis=1)

