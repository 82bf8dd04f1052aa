"""Graph propagation: personalised PageRank over passages and entities (kgpath extension).

The idea of HippoRAG 2 [1]_ on kgpath's document graphs: one undirected graph whose nodes
are the passages and the entities, seeded by the question, ranked by the stationary mass of
a random walk that restarts at the seeds.

Graph (:func:`propagation_graph`)
    * passage–entity "contains" edges, one per (passage, entity it cites), weight 1, or
      ``lead_weight`` when the entity is the passage's lead entity (the one it names first,
      :meth:`~kgpath.methods.augmented.fusion.PassageEntityIndex.lead`: what an encyclopedic
      passage is about);
    * entity–entity relation edges, one per graph edge (parallel edges add up), weight
      ``relation_weight``, direction ignored.

Seeds (the restart distribution ``r``, :func:`passage_seeds`, :func:`entity_seeds`)
    * passages: ``r_p ∝ exp(β · (s(p) − max s) / σ(s))``, the base scores ``s`` (dense
      cosine by default) as a softmax of their z-scores; the passage seeds sum to 1;
    * entities: the entities the question names (entity linking), each ``∝ 1 / |P(e)|``
      (the passages citing it), together ``entity_seed_weight``.

Propagation (:func:`personalized_pagerank`, Eq. 1)
    ``x = (1 − d) r + d W x``, ``W`` the column-stochastic transition of the weighted
    graph (``W[i, j] = w_ij / Σ_k w_kj``), ``d`` the damping; a node without edges returns
    its mass to ``r``. Power iteration to an L1 change below ``tol``: ``O(iterations · nnz)``
    per question, each step one ``numpy.bincount`` over the edge arrays.

Passages are ranked by ``x`` restricted to the passages.

Where kgpath differs from HippoRAG 2
------------------------------------
* No LLM "recognition memory" filter, no embedded triples: HippoRAG 2 seeds entities from the
  top-5 query-to-triple matches (triple embeddings), filtered by an LLM; offline, kgpath seeds
  the entities the question names (key-matching entity linking), weighted like HippoRAG 2's
  by ``1 / |P(e)|``.
* No synonym edges from entity-name embeddings (the offline graph merges names by key).
* Passage seeds: HippoRAG 2 uses min-max normalised dense scores times 0.05 beside entity
  seeds of total weight ~1 (the entity seeds, from a 7B embedder plus an LLM filter, carry
  the ranking). With key-linked entities the passage seeds must carry it, so they are a
  softmax of z-scored dense scores (affine-invariant: any base retriever's scores work) with
  total weight 1, and the entity seeds add ``entity_seed_weight``.
* The lead-entity edge weight is a kgpath addition (a passage is mostly about its subject).

References
----------
.. [1] B. J. Gutiérrez, Y. Shu, W. Qi, S. Zhou, Y. Su. "From RAG to Memory: Non-Parametric
   Continual Learning for Large Language Models" (HippoRAG 2), ICML 2025.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass

import numpy as np

from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.methods.augmented.fusion import PassageEntityIndex

__all__ = [
    "PropagationGraph",
    "cached_propagation",
    "entity_seeds",
    "propagate",
    "passage_seeds",
    "personalized_pagerank",
    "propagation_graph",
]


@dataclass(frozen=True, eq=False)
class PropagationGraph:
    """The passage + entity graph as a column-stochastic transition in COO form.

    Node ``i < n_passages`` is passage ``i`` (in the index's passage order); node
    ``n_passages + e`` is entity ``e`` (graph node index). ``rows``/``cols``/``probs``:
    ``W[rows[k], cols[k]] = probs[k]``; ``dangling``: nodes without edges.
    """

    n_passages: int
    n_nodes: int
    rows: np.ndarray
    cols: np.ndarray
    probs: np.ndarray
    dangling: np.ndarray
    version: int = -1


def transition(n: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray,
               n_passages: int = 0, version: int = -1) -> PropagationGraph:
    """The column-stochastic transition of an undirected weighted edge list on ``n`` nodes.

    Each edge ``(src[k], dst[k], weight[k])`` is used both ways; parallel edges add up.

    Examples
    --------
    A path 0 - 1 - 2: node 1 sends half its mass to each end.

    >>> g = transition(3, np.array([0, 1]), np.array([1, 2]), np.ones(2))
    >>> sorted(zip(g.rows.tolist(), g.cols.tolist(), g.probs.tolist()))
    [(0, 1, 0.5), (1, 0, 1.0), (1, 2, 1.0), (2, 1, 0.5)]
    """
    rows = np.concatenate([src, dst]).astype(np.int64)
    cols = np.concatenate([dst, src]).astype(np.int64)
    w = np.concatenate([weight, weight]).astype(np.float64)
    strength = np.bincount(cols, weights=w, minlength=n)
    order = np.argsort(rows, kind="stable")
    rows, cols, w = rows[order], cols[order], w[order]
    probs = w / strength[cols] if w.size else w
    return PropagationGraph(n_passages, n, rows, cols, probs, strength == 0, version)


def propagation_graph(index: PassageEntityIndex, *, lead_weight: float = 1.0,
                      relation_weight: float = 1.0) -> PropagationGraph:
    """The undirected passage + entity graph of ``index`` (module docstring).

    ``relation_weight=0`` leaves out the entity–entity edges.

    Examples
    --------
    >>> from kgpath.graph import KnowledgeGraph
    >>> g = KnowledgeGraph.from_triples([("A", "r", "B")], {"p": "A r B"},
    ...                                 provenance=[["p"]])
    >>> pg = propagation_graph(PassageEntityIndex(g, ["p"]))
    >>> pg.n_passages, pg.n_nodes, int(pg.rows.size)
    (1, 3, 6)
    """
    n_p, graph = len(index.passage_ids), index.graph
    src: list[int] = []
    dst: list[int] = []
    wts: list[float] = []
    for p in range(n_p):
        lead = index.lead(p)
        for e in index.entities_of(p):
            src.append(p)
            dst.append(n_p + e)
            wts.append(lead_weight if e == lead else 1.0)
    if relation_weight > 0:
        for edge in graph.edges:
            s, t = graph.index_of(edge.source), graph.index_of(edge.target)
            if s != t:
                src.append(n_p + s)
                dst.append(n_p + t)
                wts.append(relation_weight)
    return transition(n_p + graph.num_nodes, np.asarray(src, np.int64),
                      np.asarray(dst, np.int64), np.asarray(wts, np.float64), n_p,
                      index.version)


def personalized_pagerank(graph: PropagationGraph, reset: np.ndarray, damping: float, *,
                          tol: float = 1e-8, max_iter: int = 200) -> np.ndarray:
    """Eq. 1: ``x = (1 − d) r + d W x`` by power iteration (``r`` normalised to sum 1).

    Raises
    ------
    ConfigError
        If ``reset`` has the wrong length, a negative or non-finite entry, or sums to 0,
        or ``damping`` is not in ``[0, 1)``.

    Examples
    --------
    The star 0 - 1, 1 - 2, 1 - 3 restarting at 0 with ``d = 0.5`` (by hand: ``x1 = 0.6 x0``,
    ``x0 = 0.5 + x1 / 6``): ``x = (5/9, 1/3, 1/18, 1/18)``.

    >>> g = transition(4, np.array([0, 1, 1]), np.array([1, 2, 3]), np.ones(3))
    >>> x = personalized_pagerank(g, np.array([1.0, 0, 0, 0]), 0.5)
    >>> np.round(x * 18, 6).tolist()
    [10.0, 6.0, 1.0, 1.0]
    """
    r = np.asarray(reset, np.float64)
    if r.shape != (graph.n_nodes,) or not np.all(np.isfinite(r)) or np.any(r < 0):
        raise ConfigError(f"reset must be {graph.n_nodes} finite non-negative numbers, "
                          f"got shape {r.shape}")
    total = float(r.sum())
    if total <= 0:
        raise ConfigError("reset must have positive mass, got all zeros")
    if isinstance(damping, bool) or not 0 <= damping < 1:
        raise ConfigError(f"damping must be in [0, 1), got {damping!r}")
    r = r / total
    x = r.copy()
    for _ in range(max_iter):
        y = np.bincount(graph.rows, weights=graph.probs * x[graph.cols],
                        minlength=graph.n_nodes)
        y += x[graph.dangling].sum() * r  # a node without edges restarts
        new = (1 - damping) * r + damping * y
        done = float(np.abs(new - x).sum()) < tol
        x = new
        if done:
            break
    return x


def passage_seeds(scores: np.ndarray, sharpness: float) -> np.ndarray:
    """``r_p ∝ exp(β (s(p) − max s) / σ(s))`` over the finite scores, summing to 1.

    Non-finite scores (passages a custom base did not return) get 0; equal scores get
    equal seeds.

    Examples
    --------
    Scores 1 and 0 (σ = 0.5, z = 0 and −2), β = 1: ``(1, e^-2) / (1 + e^-2)``.

    >>> np.round(passage_seeds(np.array([1.0, 0.0, -np.inf]), 1.0), 4).tolist()
    [0.8808, 0.1192, 0.0]
    """
    s = np.asarray(scores, np.float64)
    out = np.zeros(s.size)
    ok = np.isfinite(s)
    if not ok.any():
        return out
    f = s[ok]
    sd = float(f.std())
    z = (f - f.max()) / sd if sd > 0 else np.zeros(f.size)
    e = np.exp(sharpness * z)
    out[ok] = e / e.sum()
    return out


def entity_seeds(index: PassageEntityIndex, entities: Iterable[int] | Mapping[int, float],
                 weight: float) -> dict[int, float]:
    """Seeds of the question's entities: ``∝ score(e) / |P(e)|``, together ``weight``.

    ``entities``: node indices (score 1 each) or ``{node index: match score}`` (HippoRAG 2
    divides a fact's match score by the passage count of each of its entities). Entities
    no passage cites, or with a score <= 0, are dropped (they carry no mass to a passage).

    Examples
    --------
    >>> from kgpath.graph import KnowledgeGraph
    >>> g = KnowledgeGraph.from_triples([("A", "r", "B")], {"p": "A r B", "q": "B"},
    ...                                 provenance=[["p"]])
    >>> _ = g.add_node("B", provenance=("p", "q"))
    >>> seeds = entity_seeds(PassageEntityIndex(g, ["p", "q"]), [0, 1], 0.3)  # |P| = 1, 2
    >>> {e: round(w, 6) for e, w in seeds.items()}
    {0: 0.2, 1: 0.1}
    """
    scored = dict(entities) if isinstance(entities, Mapping) else dict.fromkeys(entities, 1.0)
    inv = {e: float(scored[e]) / index.df(e) for e in sorted(scored)
           if index.df(e) > 0 and scored[e] > 0}
    total = sum(inv.values())
    return {e: weight * v / total for e, v in inv.items()} if total > 0 and weight > 0 else {}


def propagate(index: PassageEntityIndex, graph: PropagationGraph, base: np.ndarray,
              entities: Iterable[int] | Mapping[int, float], *, damping: float,
              sharpness: float, entity_weight: float) -> tuple[np.ndarray, np.ndarray]:
    """PPR mass of every passage and the passage seeds, from base scores and entities.

    ``base``: one score per passage of ``index`` (``-inf``: not a seed); ``entities``: as
    :func:`entity_seeds`. All zeros when nothing seeds the walk.

    Examples
    --------
    >>> from kgpath.graph import KnowledgeGraph
    >>> g = KnowledgeGraph()
    >>> for p in ("p0", "p1", "p2"):
    ...     _ = g.add_passage(p, f"X in {p}.")
    >>> _ = g.add_node("X", provenance=("p0", "p1", "p2"))
    >>> idx = PassageEntityIndex(g, ["p0", "p1", "p2"])
    >>> x, seed = propagate(idx, propagation_graph(idx), np.array([1.0, -np.inf, -np.inf]),
    ...                     [], damping=0.5, sharpness=1.0, entity_weight=0.0)
    >>> np.round(x * 18, 6).tolist(), seed.tolist()
    ([10.0, 1.0, 1.0], [1.0, 0.0, 0.0])
    """
    n_p = graph.n_passages
    reset = np.zeros(graph.n_nodes)
    reset[:n_p] = passage_seeds(base, sharpness)
    for e, w in entity_seeds(index, entities, entity_weight).items():
        reset[n_p + e] += w
    if reset.sum() <= 0:
        return np.zeros(n_p), reset[:n_p]
    return personalized_pagerank(graph, reset, damping)[:n_p], reset[:n_p]


def cached_propagation(
    cache: MutableMapping[str, object], graph: KnowledgeGraph, passage_ids: Sequence[str], *,
    lead_weight: float, relation_weight: float,
) -> tuple[PassageEntityIndex, PropagationGraph]:
    """The entity index and propagation graph of ``graph``, kept in ``cache``.

    ``cache`` is any dict living as long as the graph version and passage order it serves
    (e.g. an index's shared passage vectors' ``derived`` dict); the entry is rebuilt when
    the graph version, the passage ids or the weights change.
    """
    key = f"propagation:{lead_weight!r}:{relation_weight!r}"
    got = cache.get(key)
    ids = tuple(passage_ids)
    if isinstance(got, tuple) and got[0] == (graph.version, ids):
        return got[1], got[2]
    index = PassageEntityIndex(graph, ids)
    pg = propagation_graph(index, lead_weight=lead_weight, relation_weight=relation_weight)
    cache[key] = ((graph.version, ids), index, pg)
    return index, pg
