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

BM25 is not saved: its statistics are rebuilt from the node texts on first use, measured at
0.5 s for the 9,557 nodes of the HotpotQA-100 graph, and only PCR's hybrid mode reads
them (``benchmarks/bench_reopen.py`` prints that time); storing them would tie the file
format to the tokeniser.

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

from kgpath.embeddings import Embedder, as_embedder, embedder_record, same_embedder
from kgpath.errors import ConfigError, EmbeddingError, PersistenceError
from kgpath.graph import KnowledgeGraph
from kgpath.graph.persistence import load_with_extra, save
from kgpath.index.identity import bundled_embedder, embedder_key, trust_record
from kgpath.index.passage_vectors import passage_cache, seed_passage_cache
from kgpath.search.vector import CompactVectorIndex

if TYPE_CHECKING:
    from kgpath.index.graph_index import GraphIndex

__all__ = ["INDEX_KIND", "load_index", "save_index"]

INDEX_KIND = "kgpath.GraphIndex"


# ---------------------------------------------------------------------- save
def save_index(index: GraphIndex, directory: str | os.PathLike[str]) -> None:
    """Write ``index`` (graph + every vector its model made for it) to ``directory``."""
    record = index_record(index)
    files: dict[str, bytes | np.ndarray] = {}
    meta: dict[str, Any] = {
        "kind": INDEX_KIND, "embedder": record, "vectors": index.vectors,
        "bm25_k1": index.bm25_k1, "bm25_b": index.bm25_b,
        "compact_chunk": index.compact_chunk, "node_vectors": "none", "node_ids": [],
    }
    _node_files(index, meta, files)
    _passage_files(index, files)
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
    live = {"relations": {e.relation for e in g.edges if e.relation},
            "node_names": {n.name or n.id for n in g.nodes}}
    names: dict[str, list[str]] = {}
    rows: list[np.ndarray] = []
    for name, vecs in sorted(sets.items()):
        kept = [t for t in vecs if name not in live or t in live[name]]
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
               embedder: Any = None) -> GraphIndex:
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
        return
    index._load_compact(rows, extra)
