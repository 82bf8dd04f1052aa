"""The whole of PathRAG over a graph database: :class:`CypherPathRAG`.

Same configuration, pipeline and :class:`~kgpath.methods.pathrag.result.PathRAGResult` as
:class:`~kgpath.methods.pathrag.retriever.PathRAGRetriever`; on a database written by
:func:`~kgpath.backends.cypher.load_graph` from a ``GraphIndex`` the paths (node ids,
order, reliabilities), text units, evidence and prompt equal the in-memory result on that
index. It is the in-memory retriever with its data access replaced (a subclass): every
ranking step is the in-memory function, run on what the store returns.

**Section 4.1, node retrieval** scores every node (the ``min_similarity_z`` floor needs the
mean and spread of a keyword's cosines to *all* nodes). With a vector file (``vectors=``,
:mod:`~kgpath.backends.cypher.vectors`) and ``node_match="text"``, the file's rows are
streamed chunk by chunk (:meth:`~kgpath.backends.cypher.vectors.VectorFile.score_rows`, one
pass for all keyword rows) and only the ``|K_q| x |V|`` float32 similarities are held (4 MB
per keyword at 10^6 nodes); otherwise the stored vectors are read page by page in node order
(``node_match="text"``: ``schema.embedding_property``, the index's node vectors; ``"name"``:
:data:`NAME_VECTOR_PROPERTY`, written by :func:`store_pathrag_vectors`; there is no name
file) and stacked. Either way :func:`~kgpath.methods.pathrag.retriever.node_hits_from` ranks
the similarities, as in memory; every cosine is summed row by row (``np.einsum``, on both
sides, :func:`~kgpath.methods.pathrag.nodes.node_similarities`), so it is bit-equal wherever
the row sits (a BLAS product is not: it sums a row differently depending on the rows beside
it). Only the records of the retrieved nodes are fetched (their file rows checked against
the store's order: a stale file is a :class:`~kgpath.errors.BackendError`).
**High-level keywords** (an LLM's; the offline keywords have none and read no edge
vector): with an edge vector file (``VectorFiles.edges``: every edge's
:func:`~kgpath.methods.pathrag.prompt.relation_text` vector in edge order, written by
``store_pathrag_vectors(..., vector_dir=)`` and kept through document updates by
``DatabaseIndex(..., edge_vectors=pathrag_edge_vectors)``) it is streamed as the node file
(one pass, ``|E|`` float32 similarities held) and ranked by
:func:`~kgpath.methods.pathrag.nodes.rank_relations`, as in memory; only the
``num_relations`` candidates are read from the store (by end ids and rank) with their
ends' degrees, each checked against its file row (rank, ends, relation-text digest) and
the row count against the store's edge count: a stale file is a
:class:`~kgpath.errors.BackendError` (:mod:`~kgpath.methods.pathrag.dbfiles`). Without
one, a paged scan of the stored vectors (:data:`EDGE_VECTOR_PROPERTY`, in edge order).
Measured (scratch run, own FalkorDB, ``bench_graphdb`` scale graphs with 10x the edges
as nodes, 64-d ``ScaleEmbedder``, default config, scripted LLM keywords, 2 shared cores),
p50/p95 of a whole question, file vs scan: 10^5 edges 381/539 ms vs 5.7/6.3 s (relation
step 17/19 ms with the file); 10^6 edges 297/516 ms vs 124/129 s (2 questions; relation
step 85/99 ms; the scan grows faster than ``|E|``); 10^7 edges, file only, 964/1,142 ms
(relation step 731/1,098 ms: the file, 2.6 GB at 10^7 x 64, is read whole per question).
Either way the endpoint degrees that order the kept relations are a pushed-down
count for the candidate edges only, and every cosine is summed row by row (as for
nodes, so ties break by edge order wherever the row sits). Rows without a stored vector
are embedded from their text (cached by text, bounded), which equals the stored vector
for a deterministic embedder.

**Section 4.2** is :func:`~kgpath.methods.pathrag.cypher.pathrag_pool` (the neighbourhood
the flow reaches, edge types excluded in the store). **Section 4.3 and the text units** run
the in-memory code (``PathRAGRetriever._finish``) on the *part* of the graph they read,
fetched by id and rebuilt in store order (node and edge indices keep the graph's order, so
every tie breaks as in memory): the retrieved nodes, the nodes of every candidate path with
every edge between consecutive ones (Eq. 5 text), the relations' edges and ends, and the
passages they cite; the retrieved nodes' other neighbours enter with id, order and
provenance only, joined by one plain edge each (all the authors' relation counts read).
``unit_order`` cosines: with a passage file, the question against every row streamed (the
seed rule's ``seed_passages`` best rows, ties by passage order, join the part; the finish
then reads the cosines of the part's passages only, which ranks as the whole map does);
otherwise a paged scan of the stored passage vectors, the whole matrix times the question
as in memory. The seed rule's node vectors are the part's rows of the node file.

**Not exact, or not pushed down**: the trace adds ``backend``, ``fetched_part_nodes``,
``pool_queries`` and ``pool_fetched_nodes`` (the scans' round trips are not counted);
``exclude_edge_types`` needs a Cypher backend
(:class:`~kgpath.methods.pathrag.cypher.TypedPushDown`); vectors embedded here for rows
without a stored one equal the in-memory ones only for an embedder whose vectors do not
depend on the batch.

What stays in process per question: the keyword vectors; with the files, ``|K_q| x |V|``,
``|E|`` and ``|P|`` float32 similarities and one 8 MB chunk; without, one ``|V| x d`` (and,
with high-level keywords, ``|E| x d``, and for ``unit_order`` ``|P| x d``) float32 matrix while
it is ranked (``cache_vectors=True`` keeps them between questions); and the fetched part.
The result's ``graph`` is that part (neighbour-only nodes bare, see above);
its ``nodes`` carry the store's node order (the in-memory node index) while ``pool`` (like
``result.graph``) uses the part's indices, so ``result.candidates()`` works.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kgpath.backends.base import GraphBackend
from kgpath.backends.cypher import CypherBackend, CypherSchema
from kgpath.backends.cypher.loading import decode_vector
from kgpath.backends.cypher.queries import fetch_nodes, fetch_passages
from kgpath.backends.cypher.schema import edge_from_row, node_from_row, passage_from_row
from kgpath.backends.cypher.vectors import VectorFile, VectorFiles, check_file_rows
from kgpath.errors import BackendError, CapabilityError, ConfigError, NodeNotFoundError
from kgpath.graph import Edge, KnowledgeGraph
from kgpath.index.graph_index import check_query
from kgpath.llm import LLM
from kgpath.methods.pathrag.config import PathRAGConfig
from kgpath.methods.pathrag.cypher import HEAVY_DEGREE, DatabasePathPool, pathrag_pool
from kgpath.methods.pathrag.dbfiles import file_relations, scan_relations, start_passage_scores
from kgpath.methods.pathrag.dbstore import (
    EDGE_VECTOR_PROPERTY,
    NAME_VECTOR_PROPERTY,
    TextVectors,
    edge_page_query,
    edges_between,
    light_rows,
    name_of,
    neighbour_pairs,
    node_page_query,
    pages,
    passage_page_query,
    relation_text_of,
    store_pathrag_vectors,
)
from kgpath.methods.pathrag.keywords import KeywordExtraction, KeywordPrompt
from kgpath.methods.pathrag.nodes import RetrievedNode, RetrievedRelation
from kgpath.methods.pathrag.paths import CandidatePool, PathCandidate
from kgpath.methods.pathrag.prompt import QAPrompt
from kgpath.methods.pathrag.result import PathRAGResult
from kgpath.methods.pathrag.retriever import (
    PathRAGRetriever,
    node_hits,
    node_hits_from,
    passage_cosines,
)
from kgpath.methods.pathrag.sources import passage_citations, seed_candidates
from kgpath.prompts.pathrag import PATHRAG_KEYWORD_PROMPT, PATHRAG_QA_PROMPT
from kgpath.search.vector import top_k

__all__ = ["EDGE_VECTOR_PROPERTY", "NAME_VECTOR_PROPERTY", "CypherPathRAG",
           "store_pathrag_vectors"]

class CypherPathRAG(PathRAGRetriever):
    """PathRAG inside a Cypher database (module docstring: what is pushed down, what is not).

    Parameters
    ----------
    store
        A driver (anything :func:`~kgpath.backends.cypher.as_cypher_driver` accepts) or a
        :class:`~kgpath.backends.cypher.CypherBackend`.
    embedder
        The model of the stored vectors (embeds the keywords and the question).
    schema
        Where fields live (for a driver); needs ``order_property`` and
        ``edge_order_property`` (the graph's node and edge order, written by ``load_graph``).
    llm, config, keyword_prompt, qa_prompt
        As :class:`PathRAGRetriever`.
    batch_size
        Ids per ``UNWIND`` round trip of the neighbourhood queries.
    max_cached_embeddings
        Bound on the texts embedded for rows the store holds no vector for.
    cache_vectors
        Keep the node, edge and passage matrices after their first scan (no per-question
        scan; results equal the in-memory ones only while the store is unchanged: call
        :meth:`refresh` after a change). Default ``False``: every question reads the store.
    vectors
        A :class:`~kgpath.backends.cypher.vectors.VectorFiles` (or its directory) of this
        database; default: the backend's ``vectors`` (``CypherBackend(vectors=...)``). With
        it, section 4.1 (``node_match="text"``), the seed rule and ``unit_order`` read the
        node and passage vectors from the files, and the high-level keywords the edge
        file when it holds one (module docstring), instead of the store.
    heavy_degree
        Nodes of the edge-flow ball with more neighbours are not expanded; the edges
        between two of them are looked up pair by pair
        (:meth:`~kgpath.methods.pathrag.cypher.LocalGraph.expand_within`). Cost only: the
        paths are the same for every value.

    Raises
    ------
    ConfigError
        For a schema without node or edge order, or a config that is not a
        :class:`PathRAGConfig`.

    Examples
    --------
    >>> import os, tempfile
    >>> from kgpath import GraphIndex, HashingEmbedder, KnowledgeGraph
    >>> from kgpath.backends.cypher import EmbeddedCypherDriver, load_graph
    >>> g = KnowledgeGraph.from_triples([("a", "to", "b"), ("b", "to", "c")])
    >>> index = GraphIndex(g, HashingEmbedder())
    >>> drv = EmbeddedCypherDriver.open(os.path.join(tempfile.mkdtemp(), "db"))
    >>> db = CypherPathRAG(drv, embedder=index.embedder, schema=load_graph(drv, index))
    >>> [p.ids for p in db.retrieve_from_nodes("a to c?", ["a", "c"]).paths]
    [('a', 'b', 'c')]
    >>> drv.close()
    """

    backend: CypherBackend

    def __init__(
        self,
        store: Any,
        *,
        embedder: Any = None,
        schema: CypherSchema | None = None,
        llm: LLM | None = None,
        config: PathRAGConfig | None = None,
        keyword_prompt: KeywordPrompt = PATHRAG_KEYWORD_PROMPT,
        qa_prompt: QAPrompt = PATHRAG_QA_PROMPT,
        batch_size: int = 5000,
        max_cached_embeddings: int = 200_000,
        cache_vectors: bool = False,
        vectors: VectorFiles | str | os.PathLike[str] | None = None,
        heavy_degree: int = HEAVY_DEGREE,
    ) -> None:
        if vectors is not None and not isinstance(vectors, VectorFiles):
            vectors = VectorFiles(vectors)
        if not isinstance(store, GraphBackend):
            store = CypherBackend(store, embedder=embedder, schema=schema, vectors=vectors)
        if not isinstance(store, CypherBackend):
            raise CapabilityError(
                f"CypherPathRAG needs a Cypher backend, got {type(store).__name__}",
                capability="CypherBackend")
        s = store.schema
        if s.order_property is None or s.edge_order_property is None:
            raise ConfigError("CypherPathRAG needs the graph's node and edge order in the "
                              "store (schema.order_property and edge_order_property, as "
                              "load_graph writes them)")
        super().__init__(KnowledgeGraph(), embedder=store.embedder, llm=llm, config=config,
                         keyword_prompt=keyword_prompt, qa_prompt=qa_prompt)
        self.index = None  # type: ignore[assignment]  # the graph lives in the store
        self.backend = store
        self.batch_size = batch_size
        self.heavy_degree = heavy_degree
        self._texts = TextVectors(store.embedder, max_cached_embeddings)
        self.cache_vectors = cache_vectors
        self._snap: dict[str, Any] = {}
        self._absent: set[str] = set()  # vector properties the store has no column for
        self.files: VectorFiles | None = vectors if vectors is not None else store.vectors
        if self.files is not None and s.passage_label is not None and \
                self.files.passages is not None and s.passage_order_property is None:
            raise ConfigError("vectors= needs schema.passage_order_property: it keys the "
                              "passage file's rows")
        self._orders: dict[int, tuple[list[int], dict[str, int]]] = {}  # part -> orders
        self._counted: dict[str, int] = {}  # edge file -> verified cheap edge count

    @property
    def graph(self) -> KnowledgeGraph:
        """Not held: the graph lives in the database (``result.graph`` is the fetched part).

        Raises
        ------
        CapabilityError
            Always.
        """
        raise CapabilityError("CypherPathRAG holds no graph: it lives in the database "
                              "(each result's .graph is the part the query fetched)",
                              capability="InProcessGraph")

    @property
    def embedder(self) -> Any:
        """The model of the stored vectors."""
        return self.backend.embedder

    def __repr__(self) -> str:
        return f"CypherPathRAG({self.backend!r}, num_nodes={self.config.num_nodes})"

    # ------------------------------------------------------------------ 4.1
    def _num_nodes(self) -> int:
        return self.backend.node_count()

    def _node_file(self, cfg: PathRAGConfig) -> VectorFile | None:
        """The node vector file section 4.1 reads (``node_match="text"`` only), or ``None``."""
        if self.files is None or cfg.node_match != "text":
            return None
        return self.files.nodes

    def _passage_file(self) -> VectorFile | None:
        if self.files is None or self.backend.schema.passage_label is None:
            return None
        return self.files.passages

    def _nodes_for(
        self, query: str, kws: KeywordExtraction, kv: np.ndarray, cfg: PathRAGConfig
    ) -> list[RetrievedNode]:
        """Section 4.1 over every node vector: the file's, else the store's (module docstring)."""
        vf = self._node_file(cfg)
        if vf is not None:
            sims = vf.score_rows(kv)
            hits = node_hits_from(query, kws, cfg, sims)
            del sims
            pos = [i for i, _, _ in hits]
            ids = vf.ids(pos)
            rows = fetch_nodes(self.backend.driver, self.backend.schema, ids, embedding=False)
            check_file_rows(vf, pos, ids, {i: r.get("ord") for i, r in rows.items()},
                            self.backend.node_count())
            return [RetrievedNode(node_from_row(rows[nid]), i, word, sim)
                    for (i, word, sim), nid in zip(hits, ids, strict=True)]
        ids, order, mat = self._node_matrix_db(cfg)
        hits = node_hits(query, kws, kv, cfg, mat)
        rows = fetch_nodes(self.backend.driver, self.backend.schema,
                           [ids[i] for i, _, _ in hits], embedding=False)
        return [RetrievedNode(node_from_row(rows[ids[i]]), order[i], word, sim)
                for i, word, sim in hits]

    def _node_matrix_db(self, cfg: PathRAGConfig) -> tuple[list[str], list[int], np.ndarray]:
        kind = "names" if cfg.node_match == "name" else "nodes"
        return self._snapshot(kind, lambda: self._scan_nodes(kind))  # type: ignore[no-any-return]

    def _scan_nodes(self, kind: str) -> tuple[list[str], list[int], np.ndarray]:
        s, drv = self.backend.schema, self.backend.driver
        prop = NAME_VECTOR_PROPERTY if kind == "names" else s.embedding_property
        ids: list[str] = []
        order: list[int] = []
        vecs: list[np.ndarray | None] = []
        for r in self._rows(prop, lambda p: node_page_query(s, p)):
            ids.append(str(r["id"]))
            order.append(int(r["page_key"]))
            vecs.append(decode_vector(r.get("vec")))

        def texts(rows: list[int]) -> list[str]:  # only rows without a stored vector
            got = fetch_nodes(drv, s, [ids[i] for i in rows], embedding=False)
            nodes = [node_from_row(got[ids[i]]) for i in rows]
            return [(n.name or n.id) if kind == "names" else n.search_text for n in nodes]
        return ids, order, self._texts.fill(kind, vecs, texts)

    def _rows(self, prop: str | None,
              query: Callable[[str | None], Callable[[bool], str]]) -> list[dict[str, Any]]:
        """A paged scan reading vector property ``prop``, or none where the store lacks it.

        A store with fixed tables (Kùzu, Ladybug) refuses a query naming a property it has
        no column for; the scan then runs without it (the texts are embedded) and the
        property is remembered as absent.
        """
        size = self.backend.page_size
        if prop is None or prop in self._absent:
            return list(pages(self.backend, query(None), size))
        try:
            return list(pages(self.backend, query(prop), size))
        except BackendError:
            if prop in (NAME_VECTOR_PROPERTY, EDGE_VECTOR_PROPERTY):
                self._absent.add(prop)
                return list(pages(self.backend, query(None), size))
            raise

    def _snapshot(self, kind: str, scan: Callable[[], Any]) -> Any:
        """``scan()``, or with ``cache_vectors`` its first answer (until :meth:`refresh`)."""
        if not self.cache_vectors:
            return scan()
        got = self._snap.get(kind)
        if got is None:
            got = self._snap[kind] = scan()
        return got

    def refresh(self) -> None:
        """Forget the vectors kept by ``cache_vectors`` (call after the store changed)."""
        self._snap.clear()

    def _relations_for(
        self, hv: np.ndarray | None, cfg: PathRAGConfig
    ) -> list[RetrievedRelation]:
        """The high-level keywords' relations: the edge file streamed, else a paged scan."""
        if hv is None or cfg.num_relations == 0:
            return []
        ef = self.files.edges if self.files is not None else None
        if ef is not None:
            return file_relations(self.backend, ef, hv, cfg, self.batch_size, self._counted)
        edges, mat = self._snapshot("edges", self._edge_matrix_db)
        return scan_relations(self.backend, edges, mat, hv, cfg)

    def _edge_matrix_db(self) -> tuple[list[tuple[Edge, int, tuple[str, str]]], np.ndarray]:
        s, drv = self.backend.schema, self.backend.driver
        edges: list[tuple[Edge, int, tuple[str, str]]] = []
        vecs: list[np.ndarray | None] = []
        texts: list[str] = []
        for r in self._rows(EDGE_VECTOR_PROPERTY,
                            lambda p: edge_page_query(s, drv.dialect, p)):
            edge = edge_from_row(r["source"], r["target"], r)
            names = (name_of(r["sname"], r["source"]), name_of(r["tname"], r["target"]))
            edges.append((edge, int(r["page_key"]), names))
            vecs.append(decode_vector(r.get("vec")))
            texts.append(relation_text_of(edge, names))
        return edges, self._texts.fill("edges", vecs, lambda rows: [texts[i] for i in rows])

    # ------------------------------------------------------------------ 4.2-4.3
    def retrieve_from_nodes(
        self, query: str, node_ids: Sequence[str], **overrides: Any
    ) -> PathRAGResult:
        """Sections 4.2-4.3 from a given node set (unknown ids: :class:`NodeNotFoundError`)."""
        q = check_query(query)
        cfg = self.resolve_config(**overrides)
        ids = list(dict.fromkeys(node_ids))
        rows = fetch_nodes(self.backend.driver, self.backend.schema, ids, embedding=False)
        for i in ids:
            if i not in rows:
                raise NodeNotFoundError(f"node {i!r} is not in the database", key=i)
        nodes = [RetrievedNode(node_from_row(rows[i]), int(rows[i]["ord"]), "(given)",
                               float("nan")) for i in ids]
        return self._finish(q, KeywordExtraction((), "given"), nodes, cfg, {})

    async def _aafter_embedding(
        self, query: str, kws: KeywordExtraction, kv: np.ndarray, rows: tuple[int, int],
        cfg: PathRAGConfig, t0: float,
    ) -> PathRAGResult:
        """The blocking store queries in a worker thread (LLM and embedder were awaited)."""
        ms = (time.perf_counter() - t0) * 1e3
        return await asyncio.to_thread(self._after_embedding, query, kws, kv, rows, cfg, ms)

    def _finish(  # type: ignore[override]
        self,
        query: str,
        kws: KeywordExtraction,
        nodes: list[RetrievedNode],
        cfg: PathRAGConfig,
        timings: dict[str, float],
        relations: list[RetrievedRelation] | None = None,
        covers: bool = False,
        query_vector: np.ndarray | None = None,
        node_queries: np.ndarray | None = None,
    ) -> PathRAGResult:
        """Section 4.2 in the store, then the in-memory finish on the fetched part.

        The question's passage similarities are computed once here: their top
        ``seed_passages`` (:func:`~kgpath.methods.pathrag.sources.seed_text_units`) and every
        node citing them join the fetched part, so the finish seeds as in memory.
        """
        t0 = time.perf_counter()
        relations = relations or []
        pvf = self._passage_file() if cfg.unit_order != "relation_count" else None
        if pvf is not None:  # the file's scan overlaps the pool's round trips
            if query_vector is None:
                query_vector = self.embedder.embed_queries([query])[0]
            pending = start_passage_scores(self.backend, pvf, query_vector)
        db = (pathrag_pool(self.backend, [n.id for n in nodes], cfg,
                           batch_size=self.batch_size, heavy_degree=self.heavy_degree)
              if len(nodes) >= 2 else None)
        if pvf is None:
            sims = self._passage_similarity(query, cfg, query_vector)
            part, orders = self._part(nodes, relations, db, _seed_ids(sims, cfg))
        else:  # the file's scores; the finish reads those of the part's passages only
            scores = pending.result()
            part, orders = self._part(nodes, relations, db,
                                      _file_seed_ids(pvf, scores, cfg), pvf)
            sims = {pid: float(scores[o]) for pid, o in orders[1].items()}
            del scores
        local = [RetrievedNode(n.node, part.index_of(n.id), n.keyword, n.similarity)
                 for n in nodes]
        pool = None if db is None else CandidatePool(
            [PathCandidate(tuple(part.index_of(i) for i in ids), c.resources, c.reliability)
             for c, ids in zip(db.pool, db.ids, strict=True)], db.stats)
        timings["fetch_ms"] = (time.perf_counter() - t0) * 1e3
        self._orders[id(part)] = orders
        try:
            res = super()._finish(query, kws, local, cfg, timings, relations, covers,
                                  query_vector, node_queries, graph=part, pool=pool,
                                  passage_sims=sims)
        finally:
            del self._orders[id(part)]
        trace = {**res.trace, "backend": self.backend.name, "fetched_part_nodes": part.num_nodes}
        if db is not None:
            trace.update(pool_queries=db.queries, pool_fetched_nodes=db.fetched_nodes)
        return dataclasses.replace(res, nodes=tuple(nodes), trace=trace)

    def _part(self, nodes: Sequence[RetrievedNode], relations: Sequence[RetrievedRelation],
              db: DatabasePathPool | None, seeds: Sequence[str] = (),
              pvf: VectorFile | None = None,
              ) -> tuple[KnowledgeGraph, tuple[list[int], dict[str, int]]]:
        """The part of the graph the finish reads, in store order (module docstring).

        Full records: the retrieved nodes, every candidate path's nodes with every edge
        between consecutive ones (Eq. 5 text), the relations' edges and ends. The retrieved
        nodes' other neighbours enter with id, order and provenance only, joined to them by
        one plain edge each: all the authors' relation counts read (``get_node_edges``).
        Passages: those the full records cite, and the ``seeds`` (seeded passages), whose
        citing nodes enter with id, order and provenance only (all the seed rule reads).
        Also returns the store orders of the part's nodes (in part order) and passages (a
        ``pvf`` passage file checks them against its rows).
        """
        drv, s, batch = self.backend.driver, self.backend.schema, self.batch_size
        vq = [n.id for n in nodes]
        paths = db.ids if db is not None else ()
        pairs = sorted({p for ids in paths for a, b in zip(ids, ids[1:])
                        for p in ((a, b), (b, a))})
        edges: dict[int, Edge] = dict(edges_between(drv, s, pairs, batch))
        for r in relations:
            edges[r.index] = r.edge
        full = dict.fromkeys(vq)
        for ids in paths:
            full.update(dict.fromkeys(ids))
        for e in edges.values():
            full.update(dict.fromkeys((e.source, e.target)))
        linked = {frozenset((e.source, e.target)) for e in edges.values()}
        near = dict.fromkeys(ends for ends in map(frozenset, neighbour_pairs(drv, s, vq, batch))
                             if ends not in linked)
        seeded = self.backend.passage_records(list(seeds)) if seeds else {}
        light = ({x for ends in near for x in ends}
                 | {x for rec in seeded.values() for x in rec.entities}) - full.keys()
        rows = [*fetch_nodes(drv, s, list(full), embedding=False, batch_size=batch).values(),
                *light_rows(drv, s, sorted(light), batch)]
        rows.sort(key=lambda r: int(r["ord"]))
        g = KnowledgeGraph()
        for row in rows:
            n = node_from_row(row)
            g.add_node(n.id, n.name, n.text, type=n.type, metadata=n.metadata,
                       provenance=n.provenance)
        for _, e in sorted(edges.items()):
            g.add_edge(e.source, e.target, e.relation, e.text, type=e.type, weight=e.weight,
                       provenance=e.provenance, metadata=e.metadata)
        for ends in near:
            a, b = sorted(ends) if len(ends) == 2 else (next(iter(ends)),) * 2
            g.add_edge(a, b)
        cited = dict.fromkeys(p for i in full for p in g.node(i).provenance)
        cited.update(dict.fromkeys(p for e in edges.values() for p in e.provenance))
        cited.update(dict.fromkeys(seeded))
        porders = self._part_passages(g, list(cited), seeds, pvf)
        return g, ([int(r["ord"]) for r in rows], porders)

    def _part_passages(self, g: KnowledgeGraph, cited: list[str], seeds: Sequence[str],
                       pvf: VectorFile | None) -> dict[str, int]:
        """Add the ``cited`` passages to the part in store order; their store orders.

        With a passage file ``pvf``, each passage's file row must name it (and the seeds
        exist), else :class:`BackendError` (a stale file).
        """
        prows = fetch_passages(self.backend.driver, self.backend.schema, cited, full=True)
        prows.sort(key=lambda r: (r.get("ord") is None, r.get("ord") or 0))
        for prow in prows:
            psg = passage_from_row(prow)
            g.add_passage(psg.id, psg.text, psg.metadata)
        porders = {str(r["id"]): int(r["ord"]) for r in prows if r.get("ord") is not None}
        if pvf is not None:
            rows_at = [o for o in porders.values() if 0 <= o < pvf.count]
            if len(rows_at) < len(porders) or set(seeds) - porders.keys():
                raise BackendError(f"the vector file {str(pvf.path)!r} is stale: passages "
                                   "are missing or past its rows; rewrite it")
            check_file_rows(pvf, rows_at, pvf.ids(rows_at), porders)
        return porders

    def _seed_sources(
        self, cfg: PathRAGConfig, graph: KnowledgeGraph, with_vectors: bool
    ) -> tuple[np.ndarray | None, dict[str, list[int]]]:
        """The seed rule's inputs over the fetched part ``graph`` (its node indices)."""
        vecs = None
        vf = self._node_file(cfg)
        if with_vectors and vf is not None:  # the part's rows of the node file
            vecs = vf.vectors(self._orders[id(graph)][0])
        elif with_vectors:
            ids, _, mat = self._node_matrix_db(cfg)
            place = {nid: i for i, nid in enumerate(ids)}
            vecs = mat[[place[n.id] for n in graph.nodes]]
        return vecs, passage_citations(graph)

    def _passage_similarity(
        self, query: str, cfg: PathRAGConfig, qv: np.ndarray | None = None
    ) -> dict[str, float] | None:
        """Cosine of the query to every stored passage (one matrix, as in memory)."""
        if cfg.unit_order == "relation_count" or self.backend.schema.passage_label is None:
            return None
        ids, mat = self._snapshot("passages", self._scan_passages)
        if not ids:
            return None
        if qv is None:
            qv = self.embedder.embed_queries([query])[0]
        return dict(zip(ids, passage_cosines(mat, qv).tolist(), strict=True))

    def _scan_passages(self) -> tuple[list[str], np.ndarray]:
        ids, vecs = [], []
        for r in pages(self.backend, passage_page_query(self.backend.schema),
                        self.backend.page_size, passage=True):
            ids.append(str(r["id"]))
            vecs.append(decode_vector(r.get("vec")))
        if any(v is None for v in vecs):
            raise ConfigError("unit_order needs the passage vectors in the store: load the "
                              "graph from a GraphIndex (load_graph(driver, index))")
        return ids, np.asarray(vecs, dtype=np.float32)


def _file_seed_ids(vf: VectorFile, scores: np.ndarray, cfg: PathRAGConfig) -> list[str]:
    """:func:`_seed_ids` from the passage file's scores (ties by row, i.e. passage order)."""
    if cfg.unit_order != "question" or not cfg.seed_passages or not scores.size:
        return []
    return vf.ids(top_k(scores, min(cfg.seed_passages, scores.size)).tolist())


def _seed_ids(sims: dict[str, float] | None, cfg: PathRAGConfig) -> list[str]:
    """The passages :func:`~kgpath.methods.pathrag.sources.seed_text_units` may seed.

    Its candidates: the ``seed_passages`` highest cosines, ties in passage order.
    """
    if sims is None or cfg.unit_order != "question" or not cfg.seed_passages:
        return []
    return seed_candidates(sims, cfg.seed_passages)
