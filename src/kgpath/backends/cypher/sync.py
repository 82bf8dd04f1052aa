"""Keep a Cypher database equal to an in-memory graph: only the differences cross the wire.

:class:`CypherSync` writes a graph once (:func:`~kgpath.backends.cypher.load_graph`) and
remembers a digest of every node, edge and passage row it wrote: the rows
:func:`~kgpath.backends.cypher.loading.node_rows`, ``edge_rows`` and ``passage_rows`` make,
node, edge and passage order (``idx``, ``rank``), citing entities and vectors included.
:meth:`CypherSync.push` makes the rows of the graph as it is now, compares their digests
and sends parameterised ``UNWIND`` batches for what differs, in this order:

1. edges that are gone (matched by source id, target id and relation: a graph holds one
   edge per such triple), then nodes (``DETACH DELETE``) and passages that are gone;
2. nodes that are new (created with their id and lookup key only when absent), then every
   property of the new and changed nodes (``SET``);
3. the same for edges, then for passages.

Every statement is idempotent (creation only when absent, ``SET`` of whole rows, deletion
of what matches), so a push interrupted by a lost connection is simply pushed again: the
digests are replaced only after the last statement succeeded. After a push the database
holds exactly what ``load_graph`` writes for the graph, order properties included, which
is what makes a database updated by documents equal one loaded from a rebuild
(``tests/test_falkordb_delete.py``).

:class:`DatabaseIndex` binds a :class:`~kgpath.index.GraphIndex` to a database: its
``add_documents``, ``upsert_documents`` and ``delete_documents`` (and async forms) update
the index (provenance-counted, equal to a rebuild: :mod:`kgpath.index.documents`) and push
the difference. Retrievers over the database (``CypherPCR``, ``pathrag_pool``) see the
update on their next query. If a push fails (a :class:`~kgpath.errors.BackendError`), the
index keeps the update and :meth:`DatabaseIndex.push` sends it again. Cost: a push walks
every row of the graph in the process (content digests are cached per node, edge and
passage object, so only the objects an update re-created are serialised again; positions
and vectors are compared for every row) and sends only the changed rows. Order values
are positions (as ``load_graph`` writes them), so an update that removes or inserts
something early shifts every later node, edge and passage: those get their order
property rewritten alone (one small ``SET`` per row; 44,000 edge ranks take about 5 s on
FalkorDB). ``benchmarks/bench_graphdb_updates.py`` measures pushes against a full reload.

Vector files (``vector_dir=``, :mod:`~kgpath.backends.cypher.vectors`): file row ``i`` is
the node (passage) of order ``i``, so a push that moves, adds, removes or re-embeds a node
(passage) writes the whole node (passage) file again, as a new generation: written and
fsynced before the first statement (a failure there sends nothing), published by an atomic
header rename after the last statement succeeded, discarded when a statement fails (the
previous files stay valid; the retried push writes them). Readers holding the old
generation keep reading it; ``CypherBackend(..., vectors=vector_dir)`` opens the new one on
its next access. Measured (``bench_graphdb_updates.py``, 400 nodes, 64-d): 0.03 s of a
0.14-0.28 s push at 2,000 documents, 0.06-0.09 s of a 1.3-4.3 s push at 20,000.

The name token index (:mod:`~kgpath.backends.cypher.names`, which ``CypherC2RAG`` reads
from the same directory) is kept the same way: a push that adds, removes, moves or renames
a node stages a new generation of the whole index before its statements, publishes it
with the vector files after them and discards it when a statement fails; :meth:`~CypherSync.load`
and :meth:`~CypherSync.attach` write it, and a push writes it when the directory holds
none. ``CypherC2RAG`` opens the current one per question (``NameTokenFiles``); a question
between a push's statements and its publication is refused (``BackendError``) when the
database and the index disagree on a node it returns, and may miss a node renamed in that
window. Cost: the whole index is written again: 0.2 s for 10^5 and 2.2 s for 10^6
one-token names, 4.9 s for 10^6 three-token names (2 busy cores); 0.006-0.010 s of a push
in ``bench_graphdb_updates.py`` (400 nodes, 2,000 documents; 0.006-0.007 s without).

The edge vector file (PathRAG's relation-text vectors, ``edges``; row ``i`` = the edge of
rank ``i``) is kept the same way given ``edge_vectors=``
(:func:`~kgpath.methods.pathrag.dbstore.pathrag_edge_vectors`): rewritten whole when an
edge moves, changes, comes or goes or a node is renamed (ranks shift on every delete).
Without it such a push unpublishes an edge file found in the directory, so
``CypherPathRAG`` falls back to scanning the stored vectors rather than read a stale file
(a file made stale by other means is refused: ``BackendError``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from kgpath._files import user_path
from kgpath.backends.cypher.drivers import CypherDriver, as_cypher_driver
from kgpath.backends.cypher.loading import (
    citing_nodes,
    edge_content,
    encode_vector,
    load_graph,
    node_content,
    passage_content,
    passage_matrix,
)
from kgpath.backends.cypher.names import NameTokens, NameTokenWriter, stage_name_tokens
from kgpath.backends.cypher.schema import CypherSchema
from kgpath.backends.cypher.sync_diff import file_changed, moved
from kgpath.backends.cypher.sync_writer import SyncWriter
from kgpath.backends.cypher.vectors import (
    VectorFileWriter,
    remove_vector_file,
    stage_vector_file,
)
from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_index import GraphIndex
from kgpath.ingest import IngestReport

__all__ = ["CypherSync", "DatabaseIndex", "SyncReport"]

logger = logging.getLogger(__name__)

EdgeKey = tuple[str, str, str]
EdgeVectors = Callable[[GraphIndex], tuple[Sequence[str], np.ndarray]]
"""The edge vector file's rows of an index: ids and vectors in edge order."""
_Staged = VectorFileWriter | NameTokenWriter | None
"""A staged generation of a vector file or of the name token index (``None``: remove)."""


@dataclass
class SyncReport:
    """What one :meth:`CypherSync.push` wrote (rows) and how many statements it sent."""

    nodes_created: int = 0
    nodes_updated: int = 0
    nodes_deleted: int = 0
    edges_created: int = 0
    edges_updated: int = 0
    edges_deleted: int = 0
    passages_created: int = 0
    passages_updated: int = 0
    passages_deleted: int = 0
    statements: int = 0

    @property
    def changed(self) -> bool:
        """Whether anything was written."""
        return any(getattr(self, f.name) for f in fields(self) if f.name != "statements")


@dataclass
class _Snapshot:
    """Rows of a graph by key, with their digests (rows without embeddings)."""

    nodes: dict[str, tuple[dict[str, Any], Any]]
    edges: dict[EdgeKey, tuple[dict[str, Any], Any]]
    passages: dict[str, tuple[dict[str, Any], Any]]
    vectors: Any
    passage_vectors: dict[str, Any] | None
    cache: dict[int, tuple[Any, dict[str, Any], bytes]]
    file_vectors: Any = None  # node vectors for the vector files (also without embeddings)
    file_passage_vectors: dict[str, Any] | None = None
    source: Any = None  # the graph or GraphIndex pushed (the edge file's rows come from it)

    def digests(self) -> tuple[dict[str, Any], dict[EdgeKey, Any], dict[str, Any]]:
        return ({k: d for k, (_, d) in self.nodes.items()},
                {k: d for k, (_, d) in self.edges.items()},
                {k: d for k, (_, d) in self.passages.items()})


def _digest(row: dict[str, Any]) -> bytes:
    return hashlib.blake2b(json.dumps(row, sort_keys=True, default=str).encode(),
                           digest_size=16).digest()


def _placed(content: bytes, *parts: Any) -> tuple[Any, ...]:
    """What identifies a row's value: content digest, position, vector bytes (node: name)."""
    return (content, *parts)


def _graph_of(graph: KnowledgeGraph | GraphIndex) -> KnowledgeGraph:
    if isinstance(graph, GraphIndex):
        if len(graph.graph) and graph.graph.vectors.missing():  # embed what has no vector
            graph.build()
        return graph.graph
    if isinstance(graph, KnowledgeGraph):
        return graph
    raise ConfigError(f"expected a KnowledgeGraph or a GraphIndex, got {type(graph).__name__}")


class CypherSync:
    """Writes a graph into a Cypher database, then only what changed (module docstring).

    Parameters
    ----------
    driver
        Anything :func:`~kgpath.backends.cypher.as_cypher_driver` accepts.
    schema
        Where fields live; node order, edge order and relation properties are required
        (they identify and order rows). Default: what ``load_graph`` writes.
    embeddings
        Store node embeddings (when the graph has one for every node), as ``load_graph``.
    batch_size
        Rows per ``UNWIND`` statement.
    vector_dir
        Keep the node and passage vector files there
        (:mod:`~kgpath.backends.cypher.vectors`, for ``CypherBackend(..., vectors=...)``)
        equal to the database: :meth:`load` and :meth:`attach` write them, every
        :meth:`push` that moves, adds, removes or re-embeds a node (passage) writes a new
        generation of the node (passage) file before its statements and publishes it after
        they all succeeded (a failed push leaves the previous files). Needs a vector for
        every node (a ``GraphIndex``); the passage file is kept while every passage has one.
        The name token index there is kept the same way (rewritten when node ids, orders
        or names change, written when missing).
    edge_vectors
        With ``vector_dir``, keep the edge vector file (``edges``) too: ``edge_vectors(index)``
        gives its rows (ids, vectors) in edge order (PathRAG's relation texts:
        :func:`~kgpath.methods.pathrag.dbstore.pathrag_edge_vectors`); it is rewritten
        whole when an edge moves, changes, comes or goes, or a node is renamed. Without
        it, such a push removes an edge file found there (module docstring).

    Examples
    --------
    >>> from kgpath import KnowledgeGraph
    >>> from kgpath.backends.cypher import EmbeddedCypherDriver
    >>> import tempfile, os
    >>> drv = EmbeddedCypherDriver.open(os.path.join(tempfile.mkdtemp(), "db"))
    >>> g = KnowledgeGraph.from_triples([("a", "to", "b"), ("b", "to", "c")])
    >>> sync = CypherSync(drv)
    >>> schema = sync.load(g)
    >>> g.add_edge("a", "c", relation="to")
    2
    >>> sync.push(g).edges_created
    1
    >>> drv.close()
    """

    def __init__(self, driver: Any, *, schema: CypherSchema | None = None,
                 embeddings: bool = True, batch_size: int = 5000,
                 vector_dir: str | os.PathLike[str] | None = None,
                 edge_vectors: EdgeVectors | None = None) -> None:
        self.driver: CypherDriver = as_cypher_driver(driver)
        s = self.schema = schema or CypherSchema()
        for name in ("order_property", "edge_order_property", "relation_property"):
            if getattr(s, name) is None:
                raise ConfigError(f"CypherSync needs schema.{name} (it identifies and orders "
                                  f"rows), got None")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be an int >= 1, got {batch_size!r}")
        self.embeddings = embeddings
        self.batch_size = batch_size
        self.vector_dir = None if vector_dir is None else user_path(vector_dir, "vector_dir")
        self.edge_vectors = edge_vectors
        self._dims: dict[str, int] = {}  # dimension of the files last written
        self._written: tuple[dict[str, Any], dict[EdgeKey, Any], dict[str, Any]] | None = None
        self._cache: dict[int, tuple[Any, dict[str, Any], bytes]] = {}
        self._lock = threading.Lock()

    def load(self, graph: KnowledgeGraph | GraphIndex, *, replace: bool = False) -> CypherSchema:
        """Write the whole graph (:func:`load_graph`) and remember what was written."""
        with self._lock:
            now = self._rows(graph)
            schema = load_graph(self.driver, graph, schema=self.schema,
                                embeddings=self.embeddings, replace=replace,
                                batch_size=self.batch_size)
            self._publish(self._stage(now, None))
            self._remember(now)
            return schema

    def attach(self, graph: KnowledgeGraph | GraphIndex) -> None:
        """Declare that the database already holds ``graph`` as ``load_graph`` wrote it.

        Nothing is written to the database (the vector files are, given ``vector_dir``); the
        next :meth:`push` sends what differs from ``graph``.
        """
        with self._lock:
            now = self._rows(graph)
            self._publish(self._stage(now, None))
            self._remember(now)

    def push(self, graph: KnowledgeGraph | GraphIndex) -> SyncReport:
        """Write the differences between the graph now and what was last written.

        Raises
        ------
        ConfigError
            Before :meth:`load` or :meth:`attach`, or for a graph holding two edges with
            the same source, target and relation.
        """
        with self._lock:
            if self._written is None:
                raise ConfigError("CypherSync.push before load() or attach(): the database's "
                                  "contents are unknown")
            now = self._rows(graph)
            report = SyncReport()
            staged = self._stage(now, self._written)
            try:
                self._write(now, report)
            except BaseException:
                for w in staged.values():
                    if w is not None:
                        w.discard()
                raise
            self._publish(staged)
            self._remember(now)
        if report.changed:
            logger.info("pushed to %s: %s", self.driver.dialect.name, report)
        return report

    def _remember(self, now: _Snapshot) -> None:
        """What the database now holds (after a complete load or push)."""
        self._written = now.digests()
        self._cache = now.cache

    # -- rows and digests
    def _rows(self, source: KnowledgeGraph | GraphIndex) -> _Snapshot:
        """Every row of the graph with its digest; content digests are cached per object.

        Nodes, edges and passages are immutable, and an update re-creates only those it
        changes, so a push re-digests only those (plus positions and vectors).
        """
        g = _graph_of(source)
        use_emb = (self.embeddings and self.schema.embedding_property is not None
                   and len(g) > 0 and not g.vectors.missing())
        if self.vector_dir is not None and len(g) and g.vectors.missing():
            raise ConfigError("vector_dir needs a vector for every node: push a GraphIndex "
                              f"({len(g.vectors.missing())} nodes have none)")
        mat = g.vectors.matrix if use_emb or (self.vector_dir is not None and len(g)) else None
        old, cache = self._cache, {}

        def content(obj: Any, make: Any) -> tuple[dict[str, Any], bytes]:
            hit = old.get(id(obj))
            if hit is None or hit[0] is not obj:
                row = make(obj)
                hit = (obj, row, _digest(row))
            cache[id(obj)] = hit
            return hit[1], hit[2]

        nodes: dict[str, tuple[dict[str, Any], Any]] = {}
        for i, n in enumerate(g.nodes):
            row, d = content(n, node_content)
            vec = b"" if mat is None else mat[i].astype("<f4").tobytes()
            nodes[n.id] = ({**row, "ord": i, "embedding": None}, _placed(d, i, vec, n.name))
        edges: dict[EdgeKey, tuple[dict[str, Any], Any]] = {}
        for j, e in enumerate(g.edges):
            key = (e.source, e.target, e.relation)
            if key in edges:
                raise ConfigError(f"the graph holds two edges {key!r}; CypherSync identifies an "
                                  "edge by source, target and relation")
            row, d = content(e, edge_content)
            edges[key] = ({**row, "rank": j}, _placed(d, j))
        passages: dict[str, tuple[dict[str, Any], Any]] = {}
        pvec = None
        db_pvec = self.embeddings and self.schema.passage_embedding_property
        if self.schema.passage_label is not None:
            pvec = (passage_matrix(source) if db_pvec or self.vector_dir is not None
                    else None)
            citing = citing_nodes(g)
            for i, p in enumerate(g.passages.values()):
                row, d = content(p, passage_content)
                ents = json.dumps(citing.get(p.id, []))
                v = None if pvec is None else pvec.get(p.id)
                vec = b"" if v is None else np.asarray(v, "<f4").tobytes()
                passages[p.id] = ({**row, "ord": i, "entities": ents, "embedding": None},
                                  _placed(d, i, ents, vec))
        return _Snapshot(nodes, edges, passages, mat if use_emb else None,
                         pvec if db_pvec else None, cache, mat, pvec, source)

    # -- vector files and the name token index
    def _stage(self, now: _Snapshot, old: tuple[dict[str, Any], Any, dict[str, Any]] | None
               ) -> dict[str, _Staged]:
        """Stage new generations of the files whose rows differ from ``old`` (all: ``None``).

        They are written and fsynced, unpublished; ``None`` marks a file to remove. The
        name token index when node ids, positions or names changed, or it is missing.
        """
        if self.vector_dir is None:
            return {}
        staged: dict[str, _Staged] = {}
        try:
            ids = list(now.nodes)
            if (old is None or not NameTokens.exists(self.vector_dir)
                    or file_changed(old[0], now.nodes, (1, 3))):
                staged["names"] = stage_name_tokens(
                    self.vector_dir, ids, [now.nodes[k][0]["name"] for k in ids])
            if old is None or file_changed(old[0], now.nodes, (1, 2)):
                mat = now.file_vectors
                dim = mat.shape[1] if mat is not None else self._dims.get("nodes")
                if dim is not None:
                    staged["nodes"] = stage_vector_file(
                        self.vector_dir, "nodes", ids,
                        mat if mat is not None else np.zeros((0, dim), np.float32))
            if old is None or file_changed(old[1], now.edges, (0, 1)) or file_changed(
                    old[0], now.nodes, (3, 3)):  # relation texts read the ends' names
                self._stage_edges(now, staged)
            pv = now.file_passage_vectors
            if old is None or file_changed(old[2], now.passages, (1, 3)):
                pids = list(now.passages)
                if pv is not None and all(p in pv for p in pids) and pids:
                    staged["passages"] = stage_vector_file(
                        self.vector_dir, "passages", pids,
                        np.asarray([pv[p] for p in pids], dtype=np.float32))
                elif not pids and "passages" in self._dims:
                    staged["passages"] = stage_vector_file(
                        self.vector_dir, "passages", [],
                        np.zeros((0, self._dims["passages"]), np.float32))
                else:  # some passage without a vector: no passage file
                    staged["passages"] = None
        except BaseException:
            for w in staged.values():
                if w is not None:
                    w.discard()
            raise
        return staged

    def _stage_edges(self, now: _Snapshot, staged: dict[str, _Staged]) -> None:
        """The edge file's new generation (``edge_vectors``); else remove one found there."""
        assert self.vector_dir is not None
        ids, mat = ([], None) if self.edge_vectors is None or not isinstance(
            now.source, GraphIndex) else self.edge_vectors(now.source)
        if len(ids) and mat is not None:
            staged["edges"] = stage_vector_file(self.vector_dir, "edges", ids, mat)
        elif (self.vector_dir / "edges.json").exists():
            staged["edges"] = None  # no rows for it (no edges, or no edge_vectors): unpublish

    def _publish(self, staged: dict[str, _Staged]) -> None:
        """Publish the staged generations (after the database holds what they describe)."""
        assert self.vector_dir is not None or not staged
        for name, w in staged.items():
            if w is None:
                remove_vector_file(self.vector_dir, name)  # type: ignore[arg-type]
                self._dims.pop(name, None)
            else:
                w.publish()
                if isinstance(w, VectorFileWriter):
                    self._dims[name] = w.dim

    def _write(self, now: _Snapshot, report: SyncReport) -> None:
        assert self._written is not None
        old_n, old_e, old_p = self._written
        gone_e = [k for k in old_e if k not in now.edges]
        gone_n = [k for k in old_n if k not in now.nodes]
        gone_p = [k for k in old_p if k not in now.passages]
        new_n = [k for k in now.nodes if k not in old_n]
        set_n = [k for k, (_, d) in now.nodes.items() if old_n.get(k) != d]
        new_e = [k for k in now.edges if k not in old_e]
        set_e = [k for k, (_, d) in now.edges.items() if old_e.get(k) != d]
        new_p = [k for k in now.passages if k not in old_p]
        set_p = [k for k, (_, d) in now.passages.items() if old_p.get(k) != d]
        d, s = self.driver.dialect, self.schema
        d.check_ids(s, new_n, "node")
        d.check_ids(s, new_p, "passage")
        w = SyncWriter(self.driver, s, self.batch_size, report)
        w.delete_edges(gone_e)
        w.delete(gone_n, passage=False)
        w.delete(gone_p, passage=True)
        w.create_missing(new_n, passage=False)
        moved_n, set_n2 = moved(set_n, old_n, now.nodes)
        w.set_order([{"id": k, "ord": now.nodes[k][0]["ord"]} for k in moved_n], passage=False)
        w.set_nodes([self._node_row(now, k) for k in set_n2])
        w.create_missing_edges([now.edges[k][0] for k in new_e])
        moved_e, set_e2 = moved(set_e, old_e, now.edges)
        w.set_ranks([now.edges[k][0] for k in moved_e])
        w.set_edges([now.edges[k][0] for k in set_e2])
        w.create_missing(new_p, passage=True)
        moved_p, set_p2 = moved(set_p, old_p, now.passages)
        w.set_order([{"id": k, "ord": now.passages[k][0]["ord"]} for k in moved_p],
                    passage=True)
        w.set_passages([self._passage_row(now, k) for k in set_p2])
        report.nodes_created, report.nodes_deleted = len(new_n), len(gone_n)
        report.nodes_updated = len(set_n) - len(new_n)
        report.edges_created, report.edges_deleted = len(new_e), len(gone_e)
        report.edges_updated = len(set_e) - len(new_e)
        report.passages_created, report.passages_deleted = len(new_p), len(gone_p)
        report.passages_updated = len(set_p) - len(new_p)

    @staticmethod
    def _node_row(now: _Snapshot, node_id: str) -> dict[str, Any]:
        row = now.nodes[node_id][0]
        if now.vectors is None:
            return row
        return {**row, "embedding": encode_vector(now.vectors[row["ord"]])}

    @staticmethod
    def _passage_row(now: _Snapshot, passage_id: str) -> dict[str, Any]:
        row = now.passages[passage_id][0]
        vec = None if now.passage_vectors is None else now.passage_vectors.get(passage_id)
        return row if vec is None else {**row, "embedding": encode_vector(vec)}


class DatabaseIndex:
    """A :class:`~kgpath.index.GraphIndex` whose graph also lives in a Cypher database.

    Document updates go to the index (equal to a rebuild, :mod:`kgpath.index.documents`)
    and their difference to the database (:class:`CypherSync`), under one lock. Retrieve
    from the database with the database's methods (``CypherPCR(index.driver,
    schema=index.schema, embedder=index.embedder)``, with ``vectors=vector_dir`` when
    given one; ``pathrag_pool``), or from :attr:`index` in memory.

    Parameters
    ----------
    index
        The index (built by ``GraphIndex.from_documents`` for exact updates).
    driver, schema, embeddings, batch_size, vector_dir, edge_vectors
        As :class:`CypherSync` (``vector_dir``: node and passage vector files and the name
        token index kept equal to the database through every update, for
        ``CypherPCR(..., vectors=vector_dir)`` and ``CypherC2RAG(..., vectors=vector_dir)``).
    replace
        Empty the target labels before the first load (else a non-empty target raises).
    load
        ``False``: the database already holds the index's graph (:meth:`CypherSync.attach`).

    Notes
    -----
    Update through this object (or call :meth:`push` after updating :attr:`index`
    directly). A :class:`~kgpath.backends.cypher.CypherBackend` caches embeddings it
    computed for nodes without a stored one; with ``embeddings=False`` make a new backend
    after an update.
    """

    def __init__(self, index: GraphIndex, driver: Any, *, schema: CypherSchema | None = None,
                 embeddings: bool = True, batch_size: int = 5000, replace: bool = False,
                 load: bool = True, vector_dir: str | os.PathLike[str] | None = None,
                 edge_vectors: EdgeVectors | None = None) -> None:
        if not isinstance(index, GraphIndex):
            raise ConfigError(f"DatabaseIndex needs a GraphIndex, got {type(index).__name__}")
        self.index = index
        self.sync = CypherSync(driver, schema=schema, embeddings=embeddings,
                               batch_size=batch_size, vector_dir=vector_dir,
                               edge_vectors=edge_vectors)
        self._lock = threading.Lock()
        self.last_push: SyncReport | None = None
        if load:
            self.schema = self.sync.load(index, replace=replace)
        else:
            self.schema = self.sync.schema
            self.sync.attach(index)

    @property
    def driver(self) -> CypherDriver:
        """The database driver."""
        return self.sync.driver

    @property
    def vector_dir(self) -> Path | None:
        """Where the vector files are kept (``None``: none)."""
        return self.sync.vector_dir

    @property
    def embedder(self) -> Any:
        """The index's embedder (what the database's node vectors were made with)."""
        return self.index.embedder

    def push(self) -> SyncReport:
        """Write what differs between :attr:`index` and the database."""
        self.last_push = self.sync.push(self.index)
        return self.last_push

    def _after(self, method: str, *args: Any, **kwargs: Any) -> IngestReport:
        with self._lock:
            report: IngestReport = getattr(self.index, method)(*args, **kwargs)
            self.push()
            return report

    def add_documents(self, documents: Iterable[Any], **kwargs: Any) -> IngestReport:
        """:meth:`GraphIndex.add_documents`, then :meth:`push`."""
        return self._after("add_documents", documents, **kwargs)

    def upsert_documents(self, documents: Iterable[Any], **kwargs: Any) -> IngestReport:
        """:meth:`GraphIndex.upsert_documents`, then :meth:`push`."""
        return self._after("upsert_documents", documents, **kwargs)

    def delete_documents(self, ids: Iterable[str], *, missing_ok: bool = False) -> IngestReport:
        """:meth:`GraphIndex.delete_documents`, then :meth:`push`."""
        return self._after("delete_documents", ids, missing_ok=missing_ok)

    async def aadd_documents(self, documents: Iterable[Any], **kwargs: Any) -> IngestReport:
        """Async :meth:`add_documents` (the push runs in a worker thread)."""
        return await asyncio.to_thread(self.add_documents, documents, **kwargs)

    async def aupsert_documents(self, documents: Iterable[Any], **kwargs: Any) -> IngestReport:
        """Async :meth:`upsert_documents`."""
        return await asyncio.to_thread(self.upsert_documents, documents, **kwargs)

    async def adelete_documents(self, ids: Iterable[str], *,
                                missing_ok: bool = False) -> IngestReport:
        """Async :meth:`delete_documents`."""
        return await asyncio.to_thread(self.delete_documents, ids, missing_ok=missing_ok)

    def __repr__(self) -> str:
        return f"DatabaseIndex({self.driver!r}, node_label={self.schema.node_label!r})"
