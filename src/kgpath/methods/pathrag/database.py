"""The whole of PathRAG over a graph database: :class:`CypherPathRAG`.

Same configuration, pipeline and :class:`~kgpath.methods.pathrag.result.PathRAGResult` as
:class:`~kgpath.methods.pathrag.retriever.PathRAGRetriever`; on a database written by
:func:`~kgpath.backends.cypher.load_graph` from a ``GraphIndex`` the paths (node ids,
order, reliabilities), text units, evidence and prompt equal the in-memory result on that
index. It is the in-memory retriever with its data access replaced (a subclass): every
ranking step is the in-memory function, run on what the store returns.

**Section 4.1, node retrieval** scores every node (the ``min_similarity_z`` floor needs the
mean and spread of a keyword's cosines to *all* nodes): the stored vectors are read page by
page in node order (``node_match="text"``: ``schema.embedding_property``, the index's node
vectors; ``"name"``: :data:`NAME_VECTOR_PROPERTY`, written by
:func:`store_pathrag_vectors`) and stacked, and
:func:`~kgpath.methods.pathrag.retriever.node_hits` ranks them. The matrix is the one the
in-memory index holds, so the float32 cosines are bit-equal (a page-wise product is not:
BLAS sums a row differently depending on the rows beside it). Only the records of the
retrieved nodes are fetched. **High-level keywords**: the same over the edges' stored
:func:`~kgpath.methods.pathrag.prompt.relation_text` vectors (:data:`EDGE_VECTOR_PROPERTY`,
in edge order); the endpoint degrees that order the kept relations are a pushed-down count
for those edges only. Rows without a stored vector are embedded from their text (cached by
text, bounded), which equals the stored vector for a deterministic embedder.

**Section 4.2** is :func:`~kgpath.methods.pathrag.cypher.pathrag_pool` (the neighbourhood
the flow reaches, edge types excluded in the store). **Section 4.3 and the text units** run
the in-memory code (``PathRAGRetriever._finish``) on the *part* of the graph they read,
fetched by id and rebuilt in store order (node and edge indices keep the graph's order, so
every tie breaks as in memory): the retrieved nodes, the nodes of every candidate path with
every edge between consecutive ones (Eq. 5 text), the relations' edges and ends, and the
passages they cite; the retrieved nodes' other neighbours enter with id, order and
provenance only, joined by one plain edge each (all the authors' relation counts read).
``unit_order`` cosines are a paged scan of the stored passage vectors, the whole matrix
times the question as in memory.

**Not exact, or not pushed down**: the trace adds ``backend``, ``fetched_part_nodes``,
``pool_queries`` and ``pool_fetched_nodes`` (the scans' round trips are not counted);
``exclude_edge_types`` needs a Cypher backend
(:class:`~kgpath.methods.pathrag.cypher.TypedPushDown`); vectors embedded here for rows
without a stored one equal the in-memory ones only for an embedder whose vectors do not
depend on the batch.

What stays in process per question: the keyword vectors, one ``|V| x d`` (and, with
high-level keywords, ``|E| x d``, and for ``unit_order`` ``|P| x d``) float32 matrix while
it is ranked (``cache_vectors=True`` keeps them between questions), and the fetched part.
The result's ``graph`` is that part (neighbour-only nodes bare, see above);
its ``nodes`` carry the store's node order (the in-memory node index) while ``pool`` (like
``result.graph``) uses the part's indices, so ``result.candidates()`` works.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from kgpath.backends.base import GraphBackend
from kgpath.backends.cypher import CypherBackend, CypherSchema
from kgpath.backends.cypher.loading import decode_vector, encode_vector
from kgpath.backends.cypher.queries import fetch_nodes, fetch_passages
from kgpath.backends.cypher.schema import edge_from_row, node_from_row, passage_from_row
from kgpath.errors import BackendError, CapabilityError, ConfigError, NodeNotFoundError
from kgpath.graph import Edge, KnowledgeGraph
from kgpath.index.graph_index import GraphIndex, check_query
from kgpath.index.passage_vectors import text_vectors
from kgpath.llm import LLM
from kgpath.methods.pathrag.config import PathRAGConfig
from kgpath.methods.pathrag.cypher import DatabasePathPool, pathrag_pool
from kgpath.methods.pathrag.keywords import KeywordExtraction, KeywordPrompt
from kgpath.methods.pathrag.nodes import RetrievedNode, RetrievedRelation
from kgpath.methods.pathrag.paths import CandidatePool, PathCandidate
from kgpath.methods.pathrag.prompt import QAPrompt, relation_text
from kgpath.methods.pathrag.result import PathRAGResult
from kgpath.methods.pathrag.retriever import PathRAGRetriever, node_hits, relation_hits
from kgpath.prompts.pathrag import PATHRAG_KEYWORD_PROMPT, PATHRAG_QA_PROMPT

__all__ = ["EDGE_VECTOR_PROPERTY", "NAME_VECTOR_PROPERTY", "CypherPathRAG",
           "store_pathrag_vectors"]

NAME_VECTOR_PROPERTY = "name_embedding"
"""Node property holding the vector of the node's name (``node_match="name"``)."""
EDGE_VECTOR_PROPERTY = "text_embedding"
"""Edge property holding the vector of its :func:`relation_text` (high-level keywords)."""


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
    ) -> None:
        if not isinstance(store, GraphBackend):
            store = CypherBackend(store, embedder=embedder, schema=schema)
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
        self._texts = _TextVectors(store.embedder, max_cached_embeddings)
        self.cache_vectors = cache_vectors
        self._snap: dict[str, Any] = {}
        self._absent: set[str] = set()  # vector properties the store has no column for

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

    def _nodes_for(
        self, query: str, kws: KeywordExtraction, kv: np.ndarray, cfg: PathRAGConfig
    ) -> list[RetrievedNode]:
        """Section 4.1 over every stored node vector (module docstring)."""
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
        for r in self._rows(prop, lambda p: _node_page_query(s, p)):
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
            return list(_pages(self.backend, query(None), size))
        try:
            return list(_pages(self.backend, query(prop), size))
        except BackendError:
            if prop in (NAME_VECTOR_PROPERTY, EDGE_VECTOR_PROPERTY):
                self._absent.add(prop)
                return list(_pages(self.backend, query(None), size))
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
        """The high-level keywords' relations over every stored edge vector."""
        if hv is None or cfg.num_relations == 0:
            return []
        edges, mat = self._snapshot("edges", self._edge_matrix_db)
        if not edges:
            return []
        degree = _EndpointDegrees(self.backend, edges, mat @ np.asarray(hv, np.float32),
                                  cfg.num_relations)
        out = []
        for row, sim in relation_hits(hv, cfg, mat, degree):
            edge, rank, names = edges[row]
            out.append(RetrievedRelation(edge, rank, sim, _relation_text(edge, names)))
        return out

    def _edge_matrix_db(self) -> tuple[list[tuple[Edge, int, tuple[str, str]]], np.ndarray]:
        s, drv = self.backend.schema, self.backend.driver
        edges: list[tuple[Edge, int, tuple[str, str]]] = []
        vecs: list[np.ndarray | None] = []
        texts: list[str] = []
        for r in self._rows(EDGE_VECTOR_PROPERTY,
                            lambda p: _edge_page_query(s, drv.dialect, p)):
            edge = edge_from_row(r["source"], r["target"], r)
            names = (_name(r["sname"], r["source"]), _name(r["tname"], r["target"]))
            edges.append((edge, int(r["page_key"]), names))
            vecs.append(decode_vector(r.get("vec")))
            texts.append(_relation_text(edge, names))
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
    ) -> PathRAGResult:
        """Section 4.2 in the store, then the in-memory finish on the fetched part."""
        t0 = time.perf_counter()
        relations = relations or []
        db = (pathrag_pool(self.backend, [n.id for n in nodes], cfg,
                           batch_size=self.batch_size) if len(nodes) >= 2 else None)
        part = self._part(nodes, relations, db)
        local = [RetrievedNode(n.node, part.index_of(n.id), n.keyword, n.similarity)
                 for n in nodes]
        pool = None if db is None else CandidatePool(
            [PathCandidate(tuple(part.index_of(i) for i in ids), c.resources, c.reliability)
             for c, ids in zip(db.pool, db.ids, strict=True)], db.stats)
        timings["fetch_ms"] = (time.perf_counter() - t0) * 1e3
        res = super()._finish(query, kws, local, cfg, timings, relations, covers, query_vector,
                              graph=part, pool=pool)
        trace = {**res.trace, "backend": self.backend.name, "fetched_part_nodes": part.num_nodes}
        if db is not None:
            trace.update(pool_queries=db.queries, pool_fetched_nodes=db.fetched_nodes)
        return dataclasses.replace(res, nodes=tuple(nodes), trace=trace)

    def _part(self, nodes: Sequence[RetrievedNode], relations: Sequence[RetrievedRelation],
              db: DatabasePathPool | None) -> KnowledgeGraph:
        """The part of the graph the finish reads, in store order (module docstring).

        Full records: the retrieved nodes, every candidate path's nodes with every edge
        between consecutive ones (Eq. 5 text), the relations' edges and ends. The retrieved
        nodes' other neighbours enter with id, order and provenance only, joined to them by
        one plain edge each: all the authors' relation counts read (``get_node_edges``).
        Passages: those the full records cite.
        """
        drv, s, batch = self.backend.driver, self.backend.schema, self.batch_size
        vq = [n.id for n in nodes]
        paths = db.ids if db is not None else ()
        pairs = sorted({p for ids in paths for a, b in zip(ids, ids[1:])
                        for p in ((a, b), (b, a))})
        edges: dict[int, Edge] = dict(_edges_between(drv, s, pairs, batch))
        for r in relations:
            edges[r.index] = r.edge
        full = dict.fromkeys(vq)
        for ids in paths:
            full.update(dict.fromkeys(ids))
        for e in edges.values():
            full.update(dict.fromkeys((e.source, e.target)))
        linked = {frozenset((e.source, e.target)) for e in edges.values()}
        near = dict.fromkeys(ends for ends in map(frozenset, _neighbour_pairs(drv, s, vq, batch))
                             if ends not in linked)
        light = {x for ends in near for x in ends} - full.keys()
        rows = [*fetch_nodes(drv, s, list(full), embedding=False, batch_size=batch).values(),
                *_light_rows(drv, s, sorted(light), batch)]
        g = KnowledgeGraph()
        for row in sorted(rows, key=lambda r: int(r["ord"])):
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
        prows = fetch_passages(drv, s, list(cited), full=True)
        for prow in sorted(prows, key=lambda r: (r.get("ord") is None, r.get("ord") or 0)):
            psg = passage_from_row(prow)
            g.add_passage(psg.id, psg.text, psg.metadata)
        return g

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
        return dict(zip(ids, (mat @ np.asarray(qv, dtype=np.float32)).tolist(), strict=True))

    def _scan_passages(self) -> tuple[list[str], np.ndarray]:
        ids, vecs = [], []
        for r in _pages(self.backend, _passage_page_query(self.backend.schema),
                        self.backend.page_size, passage=True):
            ids.append(str(r["id"]))
            vecs.append(decode_vector(r.get("vec")))
        if any(v is None for v in vecs):
            raise ConfigError("unit_order needs the passage vectors in the store: load the "
                              "graph from a GraphIndex (load_graph(driver, index))")
        return ids, np.asarray(vecs, dtype=np.float32)


# ---------------------------------------------------------------------- store queries
def store_pathrag_vectors(
    driver: Any, index: GraphIndex, *, schema: CypherSchema | None = None,
    relations: bool = True, batch_size: int = 2000,
) -> None:
    """Write the name and relation-text vectors PathRAG reads into a loaded database.

    The vectors are the in-memory retriever's own (``text_vectors`` of ``index``'s graph and
    embedder, shared sets ``"node_names"`` and ``"edge_texts"``): each node gets
    :data:`NAME_VECTOR_PROPERTY`, each edge :data:`EDGE_VECTOR_PROPERTY`. Needs a store that
    accepts new properties (FalkorDB, Neo4j); without them :class:`CypherPathRAG` embeds
    the texts itself. ``relations=False`` skips the edges (only high-level keywords, from
    an LLM, read them).
    """
    from kgpath.backends.cypher import as_cypher_driver

    drv = as_cypher_driver(driver)
    s = schema or CypherSchema()
    g = index.graph
    names = text_vectors(g, index.embedder, "node_names", [n.name or n.id for n in g.nodes])
    rows = [{"id": n.id, "v": encode_vector(names[i])} for i, n in enumerate(g.nodes)]
    q = (f"UNWIND $rows AS row MATCH (n:{s.n}) WHERE {drv.dialect.id_match(s, 'n', 'row.id')} "
         f"SET {s.prop('n', NAME_VECTOR_PROPERTY)} = row.v")
    for start in range(0, len(rows), batch_size):
        drv.run(q, {"rows": rows[start:start + batch_size]})
    if not g.num_edges or not relations:
        return
    texts = text_vectors(g, index.embedder, "edge_texts", [relation_text(g, e) for e in g.edges])
    erows = [{"s": e.source, "t": e.target, "rank": j, "v": encode_vector(texts[j])}
             for j, e in enumerate(g.edges)]
    q = (f"UNWIND $rows AS row MATCH (a:{s.n})-[r:{s.rels}]->(b:{s.n}) "
         f"WHERE {drv.dialect.id_match(s, 'a', 'row.s')} AND "
         f"{drv.dialect.id_match(s, 'b', 'row.t')} AND "
         f"{s.prop('r', s.edge_order_property)} = row.rank "
         f"SET {s.prop('r', EDGE_VECTOR_PROPERTY)} = row.v")
    for start in range(0, len(erows), batch_size):
        drv.run(q, {"rows": erows[start:start + batch_size]})


def _node_page_query(s: CypherSchema, prop: str | None) -> Callable[[bool], str]:
    key = s.prop("n", s.order_property)
    vec = s.prop("n", prop) if prop else "NULL"

    def query(first: bool) -> str:
        where = "" if first else f"WHERE {key} > $after "
        return (f"MATCH (n:{s.n}) {where}RETURN {s.prop('n', s.id_property)} AS id, "
                f"{vec} AS vec, {key} AS page_key ORDER BY {key} LIMIT $limit")
    return query


def _edge_page_query(s: CypherSchema, dialect: Any, prop: str | None) -> Callable[[bool], str]:
    key = s.prop("r", s.edge_order_property)
    vec = s.prop("r", prop) if prop else "NULL"
    name = (lambda v: s.prop(v, s.name_property)) if s.name_property else (lambda v: "NULL")

    def query(first: bool) -> str:
        where = "" if first else f"WHERE {key} > $after "
        return (f"MATCH (a:{s.n})-[r:{s.rels}]->(b:{s.n}) {where}"
                f"RETURN {s.prop('a', s.id_property)} AS source, "
                f"{s.prop('b', s.id_property)} AS target, {name('a')} AS sname, "
                f"{name('b')} AS tname, {s.edge_return('r', dialect)}, "
                f"{vec} AS vec, {key} AS page_key "
                f"ORDER BY {key} LIMIT $limit")
    return query


def _passage_page_query(s: CypherSchema) -> Callable[[bool], str]:
    from kgpath.backends.cypher.identifiers import quote_identifier

    key = s.prop("p", s.passage_order_property or s.passage_id_property)
    emb = s.prop("p", s.passage_embedding_property) if s.passage_embedding_property else "NULL"

    def query(first: bool) -> str:
        where = "" if first else f"WHERE {key} > $after "
        return (f"MATCH (p:{quote_identifier(s.passage_label)}) {where}"
                f"RETURN {s.prop('p', s.passage_id_property)} AS id, {emb} AS vec, "
                f"{key} AS page_key ORDER BY {key} LIMIT $limit")
    return query


def _pages(backend: CypherBackend, query: Callable[[bool], str], size: int, *,
           passage: bool = False) -> Iterator[dict[str, Any]]:
    """Every row of a keyset-paged scan (``page_key`` ascending)."""
    label = backend.schema.passage_label
    if passage and (label is None or not backend.driver.dialect.has_label(backend.driver,
                                                                          label)):
        return
    after: Any = None
    while True:
        params: dict[str, Any] = {"limit": size}
        if after is not None:
            params["after"] = after
        rows = backend.driver.run(query(after is None), params)
        yield from rows
        if len(rows) < size:
            return
        after = rows[-1]["page_key"]


def _edges_between(drv: Any, s: CypherSchema, pairs: Sequence[tuple[str, str]],
                   batch_size: int) -> list[tuple[int, Edge]]:
    """``(rank, edge)`` of every edge ``a -> b`` for the ``(a, b)`` pairs."""
    if not pairs:
        return []
    q = (f"UNWIND $rows AS row MATCH (a:{s.n})-[r:{s.rels}]->(b:{s.n}) "
         f"WHERE {drv.dialect.id_match(s, 'a', 'row.s')} AND "
         f"{drv.dialect.id_match(s, 'b', 'row.t')} "
         f"RETURN row.s AS source, row.t AS target, {s.edge_return('r', drv.dialect)}")
    rows = [{"s": a, "t": b} for a, b in pairs]
    out = []
    for start in range(0, len(rows), batch_size):
        for r in drv.run(q, {"rows": rows[start:start + batch_size]}):
            out.append((int(r["rank"]), edge_from_row(r["source"], r["target"], r)))
    return out


def _neighbour_pairs(drv: Any, s: CypherSchema, ids: Sequence[str],
                     batch_size: int) -> list[tuple[str, str]]:
    """``(node, neighbour)`` once per distinct neighbour either way (pushed down)."""
    q = (f"UNWIND $ids AS x MATCH (n:{s.n})-[:{s.rels}]-(m:{s.n}) "
         f"WHERE {drv.dialect.id_match(s, 'n', 'x')} "
         f"RETURN DISTINCT {s.prop('n', s.id_property)} AS a, {s.prop('m', s.id_property)} AS b")
    return [(r["a"], r["b"]) for start in range(0, len(ids), batch_size)
            for r in drv.run(q, {"ids": list(ids[start:start + batch_size])})]


def _light_rows(drv: Any, s: CypherSchema, ids: Sequence[str],
                batch_size: int) -> list[dict[str, Any]]:
    """Node rows with id, order and provenance only (name: the id, no text)."""
    prov = s.prop("n", s.provenance_property) if s.provenance_property else "NULL"
    q = (f"UNWIND $ids AS x MATCH (n:{s.n}) WHERE {drv.dialect.id_match(s, 'n', 'x')} "
         f"RETURN {s.prop('n', s.id_property)} AS id, {s.prop('n', s.order_property)} AS ord, "
         f"{prov} AS provenance")
    return [r for start in range(0, len(ids), batch_size)
            for r in drv.run(q, {"ids": list(ids[start:start + batch_size])})]


class _EndpointDegrees:
    """``degree[row]``: the edge's endpoint degrees added (in + out edges, every type).

    What ``_edge_degree`` gives in memory, read from the store only for the edges the
    relation ranking asks about; the first miss fetches the ``n`` most similar edges' ends
    at once (the ones :func:`retrieve_relations` keeps), later misses one edge each.
    """

    def __init__(self, backend: CypherBackend, edges: Sequence[tuple[Edge, int, Any]],
                 sims: np.ndarray, n: int) -> None:
        self.backend, self.edges = backend, edges
        self.first = np.lexsort((np.arange(sims.size), -sims))[:n].tolist()
        self.deg: dict[str, int] = {}

    def __getitem__(self, row: int) -> int:
        e = self.edges[int(row)][0]
        if e.source not in self.deg or e.target not in self.deg:
            rows = [int(row), *self.first]
            self.first = []
            ends = {x for r in rows for x in (self.edges[r][0].source, self.edges[r][0].target)}
            self.deg.update(_node_degrees(self.backend, sorted(ends - self.deg.keys())))
        return self.deg[e.source] + self.deg[e.target]


def _node_degrees(backend: CypherBackend, ids: Sequence[str]) -> dict[str, int]:
    """Edges at each node, out plus in (a self-loop counts twice), pushed down."""
    s, drv = backend.schema, backend.driver
    q = (f"UNWIND $ids AS x MATCH (n:{s.n}) WHERE {drv.dialect.id_match(s, 'n', 'x')} "
         f"OPTIONAL MATCH (n)-[r:{s.rels}]->(:{s.n}) WITH n, count(r) AS o "
         f"OPTIONAL MATCH (n)<-[r2:{s.rels}]-(:{s.n}) "
         f"RETURN {s.prop('n', s.id_property)} AS id, o AS o, count(r2) AS i")
    return {r["id"]: int(r["o"]) + int(r["i"]) for r in drv.run(q, {"ids": list(ids)})}


class _TextVectors:
    """Vectors of rows the store holds none for, embedded from their text (cached, bounded)."""

    def __init__(self, embedder: Any, limit: int) -> None:
        self.embedder, self.limit = embedder, limit
        self.cache: dict[tuple[str, str], np.ndarray] = {}

    def fill(self, kind: str, vecs: list[np.ndarray | None],
             texts_of: Callable[[list[int]], list[str]]) -> np.ndarray:
        """``vecs`` with the missing rows embedded (``embed_passages``), stacked float32.

        ``texts_of(rows)`` gives the texts of the rows without a vector (read only for them).
        """
        missing = [i for i, v in enumerate(vecs) if v is None]
        texts = dict(zip(missing, texts_of(missing), strict=True)) if missing else {}
        todo = [i for i in missing if (kind, texts[i]) not in self.cache]
        new = self.embedder.embed_passages([texts[i] for i in todo]) if todo else []
        for i, v in zip(todo, np.asarray(new, dtype=np.float32), strict=True):
            vecs[i] = v
            if len(self.cache) < self.limit:
                self.cache[(kind, texts[i])] = v
        rows = [v if v is not None else self.cache[(kind, texts[i])] for i, v in enumerate(vecs)]
        if not rows:
            return np.zeros((0, 0), np.float32)
        return np.ascontiguousarray(np.vstack(rows).astype(np.float32, copy=False))


def _name(name: Any, node_id: str) -> str:
    """A node's name as :func:`node_from_row` reads it (its id when it has none)."""
    return str(name) if name is not None else node_id


def _relation_text(edge: Edge, names: tuple[str, str]) -> str:
    """:func:`relation_text` of ``edge`` given its ends' names."""
    g = KnowledgeGraph()
    g.add_node(edge.source, names[0])
    if edge.target != edge.source:
        g.add_node(edge.target, names[1])
    return relation_text(g, edge)
