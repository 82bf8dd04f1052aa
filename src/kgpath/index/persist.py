"""Saving and reopening a :class:`~kgpath.index.GraphIndex` without embedding anything.

A saved index is a saved graph (:mod:`kgpath.graph.persistence`: the same directory, manifest,
checksums, atomic swap and crash recovery, never pickled) with format version 4 and the files
of :data:`~kgpath.graph.saved_files.INDEX_FILES` beside the graph's:

``index.json``
    The embedder's record (name, dimension, probe text, probe fingerprint:
    :func:`kgpath.embeddings.embedder_record`), the vector kind, BM25's ``k1``/``b``, and
    where the node vectors are (``"graph"``: the graph's own ``embeddings.npy``; ``"own"``:
    ``index_node_vectors.npy``, when the graph's vectors belong to another model;
    ``"compact"``: ``compact_codes.npy`` + ``compact_scale.npy`` (+ ``compact_exact.npy``
    for ``"int8+float16"``)), with the ids of the nodes those rows describe.
``passage_ids.json`` + ``passage_vectors.npy``
    Every passage vector the model made for the graph's current passages (float32).
``vector_texts.json`` + ``text_vectors.npy``
    The named text sets methods derive from the graph
    (:func:`kgpath.index.passage_vectors.text_vectors`): C2RAG's relation vectors (Eq. 5),
    PathRAG's node-name and edge-text vectors; rows in the order the JSON lists them.
``ledger.json``
    The document ledger of an index built by ``from_documents`` (documents, passages,
    extraction records: :func:`kgpath.ingest.ledger.ledger_to_json`); ``index.json`` then
    also names the extractor and the node-vector mode (:mod:`kgpath.index.saved_ledger`).

BM25 is not saved: its statistics are rebuilt from the node texts on first use, measured at
0.14-0.32 s for the 9,557 nodes of the HotpotQA-100 graph (``benchmarks/bench_reopen.py``
prints it), and only the non-default ``mode="hybrid"``/``"bm25"`` of PCR and schema
retrieval read them; no method's first query with its defaults waits for it, and storing
them would tie the file format to the tokeniser.

:func:`load_index` embeds nothing. With ``embedder=None`` it rebuilds the bundled model the
index was saved with (:func:`kgpath.index.identity.bundled_embedder`, trusted by name and
dimension); any other model must be passed and is checked against the saved probe (one
text embedded); a model that makes other vectors is refused with
:class:`~kgpath.errors.EmbeddingError`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kgpath.embeddings import (
    Embedder,
    _same_cheap,
    as_embedder,
    embedder_record,
    normalize_rows,
    same_embedder,
)
from kgpath.errors import ConfigError, EmbeddingError, PersistenceError
from kgpath.graph import KnowledgeGraph
from kgpath.graph.persistence import load_with_extra, save
from kgpath.index.graph_vectors import passage_mean_vectors
from kgpath.index.identity import bundled_embedder, embedder_key, trust_record
from kgpath.index.passage_vectors import passage_cache, seed_passage_cache
from kgpath.index.saved_ledger import ledger_files, restore_ledger
from kgpath.search.vector import CompactVectorIndex

if TYPE_CHECKING:
    from kgpath.index.graph_index import GraphIndex

__all__ = ["INDEX_KIND", "DurableIndex", "load_index", "save_index"]

INDEX_KIND = "kgpath.GraphIndex"


class DurableIndex:
    """Save, reopen, refresh and re-point a :class:`~kgpath.index.GraphIndex` (a mixin it has).

    Every vector is kept per id with the text it embedded (node id + search text, passage id
    + text, named text sets by text), so a changed graph costs only its changed texts.
    """

    graph: KnowledgeGraph
    embedder: Embedder
    vectors: str
    _vec: Any
    _own: np.ndarray | None
    _own_texts: list[str]
    _row_ids: list[str]
    _chash: np.ndarray
    _bm25: Any
    _built_version: int
    _means_version: int = -1
    _cited: set[str] | None = None

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Save the graph and every vector this index's model made for it (no pickle).

        Node vectors (float32 or the compact kind), passage vectors and the named text
        sets (C2RAG's relations, PathRAG's node names and edge texts) go with the
        graph into ``directory``, under the model's record (name, dimension, probe
        fingerprint), in the graph's atomic, checksummed, versioned format (see
        :mod:`kgpath.index.persist`), and so does the document ledger of an index built
        by ``from_documents`` (``ledger.json``; the extractor only by name, class and, for
        spaCy, settings). Only what is computed is written: call :meth:`refresh` first to
        embed what the graph gained since.
        """
        save_index(self, directory)  # type: ignore[arg-type]

    @classmethod
    def load(cls, directory: str | os.PathLike[str], embedder: Any = None,
             extractor: Any = None) -> GraphIndex:
        """Reopen an index written by :meth:`save`, embedding nothing.

        ``embedder=None`` rebuilds the bundled model it was saved with (``LocalEmbedder``,
        ``HashingEmbedder``); another model must be passed and is checked against the saved
        probe (one text embedded): a model that makes other vectors raises
        :class:`~kgpath.errors.EmbeddingError`.

        An index built by ``from_documents`` comes back with its document ledger and
        node-vector mode, so it updates by document exactly like the one saved. The
        extractor is not saved: ``extractor=`` gives it (its name must be the saved one,
        else :class:`~kgpath.errors.ConfigError`); without it the bundled spaCy extractor
        is rebuilt from its saved settings, and any other one is a stand-in that merges
        under the saved name but raises :class:`~kgpath.errors.ConfigError` when a new
        passage must be read (pass ``extractor=`` here or to that update; see
        :mod:`kgpath.index.saved_ledger`).
        """
        return load_index(cls, directory, embedder, extractor)  # type: ignore[arg-type]

    def refresh(self) -> dict[str, int]:
        """Bring every vector up to date with the graph; embed only what is missing.

        After passages or nodes were added, edited or removed (``graph.version`` bumped),
        embeds the new or edited nodes and passages (passages once any passage vector was
        computed) and drops the vectors of removed passages; nodes citing passages get
        the passage mean a rebuild would give them. Returns ``{"nodes_embedded",
        "passages_embedded", "passages"}`` (``passages``: how many have a vector). Searches
        do the same lazily; the document lifecycle calls this so that an update costs only
        its own texts.
        """
        g = self.graph
        cache = passage_cache(g, self.embedder)
        with cache.lock:  # passage vectors are kept up to date once something computed them
            used = bool(cache.stored())
            todo = len(cache.missing(g)) if used else 0
        pv = self.passage_vectors() if used else None  # type: ignore[attr-defined]
        nodes = 0
        if len(g):
            self._refresh_means()
            nodes = self._pending_nodes()
            self._ensure()  # type: ignore[attr-defined]
        return {"nodes_embedded": nodes, "passages_embedded": todo,
                "passages": 0 if pv is None else len(pv.ids)}

    def use_graph(self, graph: KnowledgeGraph) -> dict[str, int]:
        """Point this index at ``graph`` (e.g. rebuilt after a delete), keeping every vector.

        Node vectors move by node id, passage vectors by passage id (each only while its
        text is unchanged), the named text sets as they are; then :meth:`refresh` embeds
        what is new. Returns :meth:`refresh`'s counts.
        """
        if not isinstance(graph, KnowledgeGraph):
            raise ConfigError(f"graph must be a KnowledgeGraph, got {type(graph).__name__}")
        old, emb = self.graph, self.embedder
        if graph is not old:
            _carry_graph_vectors(old, graph)
            cache = passage_cache(old, emb)
            with cache.lock:
                stored, sets = cache.stored(), {k: dict(v) for k, v in cache.sets.items()}
            rec = cache.record()
            if rec is not None:
                ps = graph.passages
                seed_passage_cache(graph, emb, rec, {
                    pid: (t, v) for pid, (t, v) in stored.items()
                    if pid in ps and ps[pid].text == t}, sets)
            self.graph = graph
            self._bm25, self._built_version, self._means_version = None, -1, -1
        return self.refresh()

    def _means_due(self) -> bool:
        """Whether the graph's passage-mean node vectors may be stale (this model's, float32)."""
        g = self.graph
        owner = g.vectors.owner
        return (getattr(self, "_means_version", -1) != g.version and self.vectors == "float32"
                and self._own is None and bool(owner)
                and owner.get("node_vectors") == "passage_mean"  # type: ignore[union-attr]
                and bool(_same_cheap(self.embedder, owner)))  # type: ignore[arg-type]

    def _refresh_means(self) -> None:
        """Recompute passage-mean node vectors for the current provenance.

        :func:`~kgpath.index.graph_vectors.embed_graph`'s default: new nodes and nodes that
        gained or lost a passage get the mean a rebuild would give them, embedding nothing.
        """
        if not self._means_due():
            return
        g = self.graph
        owner = g.vectors.owner
        assert owner is not None
        pv = self.passage_vectors()  # type: ignore[attr-defined]
        if pv is None:
            return
        mat, orphans = passage_mean_vectors(g, pv.ids, pv.matrix)
        unset = np.zeros(len(g), dtype=bool)
        unset[g.vectors.missing()] = True  # also grows the graph's rows to every node
        cited = np.ones(len(g), dtype=bool)
        cited[orphans] = False
        emb = g._emb
        differ = unset if emb is None else unset | (emb != mat).any(axis=1)
        rows = {g.node_at(int(i)).id: mat[i] for i in np.flatnonzero(differ & cited)}
        # nodes that cited passages and cite none now: their own text, as a rebuild
        was = self._cited if self._cited is not None else set()
        lost = [g.node_at(i) for i in orphans if g.node_at(i).id in was]
        if lost:
            vecs = self.embedder.embed_passages([n.search_text for n in lost])
            rows.update(zip((n.id for n in lost), normalize_rows(vecs)))
        if rows:
            g.vectors.set(rows, owner=owner)
        self._cited = {n.id for i, n in enumerate(g.nodes) if cited[i]}
        self._means_version = g.version

    def _note_cited(self) -> None:
        """Remember which nodes hold passage means now (their vectors are current)."""
        g = self.graph
        owner = g.vectors.owner
        if owner and owner.get("node_vectors") == "passage_mean":
            ps = g.passages
            self._cited = {n.id for n in g.nodes if any(p in ps for p in n.provenance)}

    def _realign(self) -> None:
        """Move the index's own or compact rows to their nodes' current rows, by id.

        Rows follow node indices; when nodes were removed or reordered (the graph was
        changed or replaced) each kept node takes its old row, so it is not embedded again.
        """
        ids = [n.id for n in self.graph.nodes]
        old = self._row_ids
        if not old or old == ids[:len(old)]:
            return
        pos = {i: r for r, i in enumerate(old)}
        src = np.fromiter((pos.get(i, -1) for i in ids), dtype=np.int64, count=len(ids))
        keep = np.flatnonzero(src >= 0)
        if self._own is not None and self._own.size:
            own = np.zeros((len(ids), self._own.shape[1]), np.float32)
            own[keep] = self._own[src[keep]]
            texts = self._own_texts
            self._own = own
            self._own_texts = [texts[j] if 0 <= j < len(texts) else "" for j in src.tolist()]
        if isinstance(self._vec, CompactVectorIndex):
            self._vec, self._chash = _moved_store(self._vec, self._chash, src, keep, len(ids))
        self._row_ids = ids

    def _pending_nodes(self) -> int:
        """How many nodes the next build embeds (new or edited ones)."""
        if not self._stale():  # type: ignore[attr-defined]
            return 0
        self._realign()
        g = self.graph
        if self.vectors != "float32":
            ch = self._chash
            return sum(1 for i, nd in enumerate(g.nodes)
                       if i >= ch.size or int(ch[i]) != hash(nd.search_text))
        if self._own is not None:
            return len(self._plan(False)[0])  # type: ignore[attr-defined]
        return len(g.vectors.missing())

    def _load_compact(self, rows: np.ndarray, arrays: dict[str, Any]) -> None:
        """Put saved compact rows (``compact_*.npy``) at node ``rows``."""
        codes, scale, exact = (arrays.get(f"compact_{n}.npy") for n in ("codes", "scale", "exact"))
        store = CompactVectorIndex(kind=self.vectors, n=len(self.graph),
                                   dim=0 if codes is None else codes.shape[1])
        ok = (codes is not None and len(codes) == len(rows) and codes.dtype == store.codes.dtype
              and (scale is None) == (store.scale is None)
              and (exact is None) == (self.vectors != "int8+float16")
              and all(a is None or len(a) == len(rows) for a in (scale, exact)))
        if not ok:
            raise PersistenceError(f"saved compact vectors do not match the {self.vectors!r} "
                                   f"store of {len(rows)} rows")
        store.codes[rows] = codes
        if scale is not None and store.scale is not None:
            store.scale[rows] = scale
        if exact is not None and store.exact is not None:
            store.exact.put(rows, exact.astype(np.float32))
        self._vec = store
        self._chash = np.zeros(len(self.graph), dtype=np.int64)
        nodes = self.graph.nodes
        for i in rows:
            self._chash[int(i)] = hash(nodes[int(i)].search_text)
        self._row_ids = [n.id for n in nodes]


def _carry_graph_vectors(old: KnowledgeGraph, new: KnowledgeGraph) -> None:
    """Give ``new``'s nodes without a vector ``old``'s vector of the same id and text."""
    emb, mask = old._emb, old._emb_mask  # the graph's rows (NodeVectors keeps no copy)
    if emb is None or mask is None or new.vectors.dim not in (None, emb.shape[1]):
        return
    missing = set(new.vectors.missing())
    rows = {}
    for i in missing:
        node = new.node_at(i)
        if node.id in old:
            j = old.index_of(node.id)
            if j < len(mask) and mask[j] and old.node_at(j).search_text == node.search_text:
                rows[node.id] = emb[j]
    if rows:
        owner = old.vectors.owner
        if new.vectors.dim is not None and new.vectors.owner != owner:
            return  # new holds another model's vectors: never mix
        new.vectors.set(rows, owner=owner)


def _moved_store(store: CompactVectorIndex, chash: np.ndarray, src: np.ndarray,
                 keep: np.ndarray, n: int) -> tuple[CompactVectorIndex, np.ndarray]:
    """A compact store whose row ``i`` is ``store``'s row ``src[i]`` (``-1``: empty)."""
    moved = CompactVectorIndex(kind=store.kind, n=n, dim=store.dim,
                               rescore_top=store.rescore_top)
    moved.codes[keep] = store.codes[src[keep]]
    if store.scale is not None and moved.scale is not None:
        moved.scale[keep] = store.scale[src[keep]]
    if store.exact is not None and moved.exact is not None and keep.size:
        moved.exact.put(keep, store.exact.read(src[keep]))
    out = np.zeros(n, np.int64)
    out[keep] = chash[src[keep]]
    return moved, out


# ---------------------------------------------------------------------- save
def save_index(index: GraphIndex, directory: str | os.PathLike[str]) -> None:
    """Write ``index`` (graph + every vector its model made for it) to ``directory``."""
    index._refresh_means()  # the saved node vectors are those a rebuild would give
    record = index_record(index)
    files: dict[str, bytes | np.ndarray] = {}
    meta: dict[str, Any] = {
        "kind": INDEX_KIND, "embedder": record, "vectors": index.vectors,
        "bm25_k1": index.bm25_k1, "bm25_b": index.bm25_b,
        "compact_chunk": index.compact_chunk, "node_vectors": "none", "node_ids": [],
    }
    _node_files(index, meta, files)
    _passage_files(index, files)
    ledger_files(index, meta, files)
    files["index.json"] = _dumps(meta)
    save(index.graph, directory, extra=files)


def index_record(index: GraphIndex) -> dict[str, Any]:
    """The record of ``index.embedder``'s model, embedding one probe only if none is known."""
    emb, g = index.embedder, index.graph
    cache = passage_cache(g, emb)
    rec = cache.record()
    if rec is not None:
        return rec
    owner = g.vectors.owner
    if owner is not None and index._shared() is True and "probe" in owner:
        return owner
    probe = next((p.text for p in g.passages.values()), None) or next(
        (n.search_text for n in g.nodes), "kgpath probe")
    rec = embedder_record(emb, probe, emb.embed_passages([probe])[0])
    trust_record(emb, rec)
    return rec


def _node_files(index: GraphIndex, meta: dict[str, Any], files: dict[str, Any]) -> None:
    """The node vectors: the graph's (nothing to add), the index's own, or the compact store."""
    g = index.graph
    if index.vectors != "float32":
        store = index._vec
        if not isinstance(store, CompactVectorIndex) or index._built_version < 0:
            return
        nodes = g.nodes
        rows = [i for i in range(min(len(store), len(nodes)))
                if int(index._chash[i]) == hash(nodes[i].search_text)]
        meta.update(node_vectors="compact", node_ids=[nodes[i].id for i in rows])
        files["compact_codes.npy"] = np.ascontiguousarray(store.codes[rows])
        if store.scale is not None:
            files["compact_scale.npy"] = np.ascontiguousarray(store.scale[rows])
        if store.exact is not None:
            files["compact_exact.npy"] = store.exact.read(np.asarray(rows, np.int64)
                                                          ).astype(np.float16)
        return
    if index._own is not None and index._own.size:
        own, texts = index._own, index._own_texts
        rows = [i for i, n in enumerate(g.nodes)
                if i < len(texts) and i < len(own) and texts[i] == n.search_text]
        meta.update(node_vectors="own", node_ids=[g.node_at(i).id for i in rows])
        files["index_node_vectors.npy"] = np.ascontiguousarray(own[rows], dtype=np.float32)
    elif g.vectors.dim is not None and index._own is None:
        meta["node_vectors"] = "graph"


def _passage_files(index: GraphIndex, files: dict[str, Any]) -> None:
    """Passage vectors of the current passage texts, and the named text sets.

    C2RAG's relations and PathRAG's node names are kept only for what the graph still has.
    """
    g = index.graph
    cache = passage_cache(g, index.embedder)
    with cache.lock:
        stored = cache.stored()
        sets = {name: dict(vecs) for name, vecs in cache.sets.items()}
    live = [(pid, v) for pid, (text, v) in stored.items()
            if (p := g.passages.get(pid)) is not None and p.text == text]
    if live:
        files["passage_ids.json"] = _dumps([pid for pid, _ in live])
        files["passage_vectors.npy"] = np.stack([v for _, v in live]).astype(np.float32)
    current = {"relations": {e.relation for e in g.edges if e.relation},
               "node_names": {n.name or n.id for n in g.nodes}}
    names: dict[str, list[str]] = {}
    rows: list[np.ndarray] = []
    for name, vecs in sorted(sets.items()):
        kept = [t for t in vecs if name not in current or t in current[name]]
        if kept:
            names[name] = kept
            rows += [vecs[t] for t in kept]
    if rows:
        files["vector_texts.json"] = _dumps(names)
        files["text_vectors.npy"] = np.stack(rows).astype(np.float32)


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


# ---------------------------------------------------------------------- load
def load_index(cls: type[GraphIndex], directory: str | os.PathLike[str],
               embedder: Any = None, extractor: Any = None) -> GraphIndex:
    """Reopen an index written by :func:`save_index` (see the module docstring).

    Raises
    ------
    PersistenceError
        If the directory is no saved index (a graph alone: use ``KnowledgeGraph.load``) or
        is corrupt.
    ConfigError
        If the index was saved with a model that is not bundled and no ``embedder`` is given.
    EmbeddingError
        If ``embedder`` makes other vectors than the saved ones.
    """
    d = Path(directory)
    graph, extra = load_with_extra(d)
    meta = _meta(d, extra)
    record = meta["embedder"]
    emb = _embedder(d, record, embedder)
    owner = graph.vectors.owner
    if meta["node_vectors"] == "graph" and owner is not None:
        trust_record(emb, owner)  # the saver checked that its model made them
    index = cls(graph, emb, bm25_k1=meta["bm25_k1"], bm25_b=meta["bm25_b"],
                vectors=meta["vectors"], compact_chunk=meta["compact_chunk"])
    _seed_passages(d, graph, emb, record, extra)
    _seed_nodes(d, index, meta, extra)
    restore_ledger(d, index, meta, extra, extractor)
    index._means_version = graph.version  # save_index wrote them up to date
    return index


def _meta(d: Path, extra: dict[str, Any]) -> dict[str, Any]:
    raw = extra.get("index.json")
    if raw is None:
        raise PersistenceError(
            f"{d} is a saved graph, not a saved index (no index.json); open it with "
            "KnowledgeGraph.load and build GraphIndex(graph, embedder)"
        )
    meta = _json(d, "index.json", raw)
    rec = meta.get("embedder") if isinstance(meta, dict) else None
    ok = (isinstance(meta, dict) and meta.get("kind") == INDEX_KIND and isinstance(rec, dict)
          and isinstance(rec.get("name"), str) and isinstance(rec.get("dim"), int)
          and isinstance(rec.get("probe"), str) and isinstance(rec.get("fingerprint"), str)
          and meta.get("node_vectors") in ("none", "graph", "own", "compact")
          and isinstance(meta.get("node_ids"), list)
          and all(isinstance(meta.get(k), (int, float)) and not isinstance(meta.get(k), bool)
                  for k in ("bm25_k1", "bm25_b", "compact_chunk")))
    if not ok:
        raise PersistenceError(f"{d / 'index.json'} is corrupt: not a {INDEX_KIND} record")
    return meta  # type: ignore[no-any-return]


def _json(d: Path, name: str, raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise PersistenceError(f"{d / name} is corrupt: {exc}"[:300]) from exc


def _embedder(d: Path, record: dict[str, Any], embedder: Any) -> Embedder:
    """The given embedder checked against ``record``, or the bundled one it names."""
    if embedder is None:
        emb = bundled_embedder(record)
        if emb is None:
            raise ConfigError(
                f"{d} was saved with the embedder {record['name']!r} (dim {record['dim']}), "
                "which kgpath cannot rebuild by itself; pass embedder= an instance of it"
            )
        trust_record(emb, record)
        return emb
    emb = as_embedder(embedder)
    if not same_embedder(emb, record):
        raise EmbeddingError(
            f"{d} holds vectors of {embedder_key(record)!r}; {emb!r} makes other vectors "
            "(name, dimension or probe fingerprint differ). Pass that model, or re-embed "
            "with GraphIndex(KnowledgeGraph.load(path), embedder)"
        )
    return emb


def _strings(d: Path, extra: dict[str, Any], name: str) -> Any:
    return _json(d, name, extra[name]) if name in extra else None


def _seed_passages(d: Path, graph: KnowledgeGraph, emb: Embedder, record: dict[str, Any],
                   extra: dict[str, Any]) -> None:
    dim = record["dim"]
    ids = _strings(d, extra, "passage_ids.json") or []
    pmat = extra.get("passage_vectors.npy", np.zeros((0, dim), np.float32))
    sets = _strings(d, extra, "vector_texts.json") or {}
    tmat = extra.get("text_vectors.npy", np.zeros((0, dim), np.float32))
    ok = (isinstance(ids, list) and all(isinstance(i, str) for i in ids)
          and pmat.shape == (len(ids), dim) and isinstance(sets, dict)
          and all(isinstance(v, list) and all(isinstance(t, str) for t in v)
                  for v in sets.values())
          and tmat.shape == (sum(len(v) for v in sets.values()), dim))
    if not ok:
        raise PersistenceError(f"{d} is corrupt: the saved vectors do not match their texts")
    ps = graph.passages
    vecs = {pid: (ps[pid].text, v) for pid, v in zip(ids, pmat) if pid in ps}
    named: dict[str, dict[str, np.ndarray]] = {}
    at = 0
    for name, texts in sets.items():
        named[str(name)] = dict(zip(texts, tmat[at:at + len(texts)]))
        at += len(texts)
    seed_passage_cache(graph, emb, record, vecs, named)


def _seed_nodes(d: Path, index: GraphIndex, meta: dict[str, Any],
                extra: dict[str, Any]) -> None:
    """Put the saved node rows back into the index (own float32 rows or the compact store)."""
    kind, ids = meta["node_vectors"], meta["node_ids"]
    if kind not in ("own", "compact"):
        return
    g = index.graph
    try:
        rows = np.asarray([g.index_of(i) for i in ids], dtype=np.int64)
    except Exception as exc:  # noqa: BLE001 - a node id the graph lacks: corrupt
        raise PersistenceError(f"{d / 'index.json'} is corrupt: {exc}"[:300]) from exc
    if kind == "own":
        mat = extra.get("index_node_vectors.npy")
        if mat is None or len(mat) != len(rows):
            raise PersistenceError(f"{d} is corrupt: index_node_vectors.npy does not match")
        index._put_own(list(rows), [g.node_at(int(i)).search_text for i in rows], mat)
        index._row_ids = [n.id for n in g.nodes]
        return
    index._load_compact(rows, extra)
