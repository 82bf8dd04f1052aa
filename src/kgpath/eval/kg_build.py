"""The offline document graph of a HotpotQA-format corpus, built once and cached on disk.

:func:`hotpotqa_graph` builds ``kgpath.ingest.graph_from_documents`` over the corpus (one
document per title, text ``"<title>. <sentences>"`` as the retrieval baselines read it),
embeds the passages once and gives the nodes their passage-mean vectors
(:func:`kgpath.index.graph_vectors.embed_graph`). Graph, passage vectors and timings are saved
under ``cache_dir/<key>`` where the key hashes the corpus, the embedder and the extractor,
so a re-run loads in seconds. ``node_text_vectors`` embeds the node texts as well (cached
too) to measure the alternative.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kgpath.embeddings import Embedder, normalize_rows
from kgpath.eval.hotpotqa import HotpotQADataset
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_vectors import (
    GraphVectors,
    embed_graph,
    load_passage_vectors,
    save_passage_vectors,
)
from kgpath.ingest import graph_from_documents

__all__ = ["BuiltGraph", "doc_of_passage", "hotpotqa_graph", "node_text_vectors"]

logger = logging.getLogger(__name__)
_FORMAT = 3  # the cache layout; the extractor's own code is hashed into the key (_extractor_code)


@dataclass
class BuiltGraph:
    """A document graph, its vectors and how it was made (``stats``: seconds, counts)."""

    graph: KnowledgeGraph
    vectors: GraphVectors
    cache: Path | None
    stats: dict[str, Any] = field(default_factory=dict)


def doc_of_passage(graph: KnowledgeGraph, passage_id: str) -> str:
    """The source document (title) of a passage: its ``doc_id`` metadata, else its id."""
    p = graph.passages.get(passage_id)
    return str(p.metadata.get("doc_id", passage_id)) if p is not None else passage_id


def _key(data: HotpotQADataset, embedder: Embedder, extractor: str) -> str:
    h = hashlib.sha256()
    for title, sents in data.corpus.items():
        h.update(title.encode())
        h.update("\x1f".join(sents).encode())
    inner = getattr(embedder, "embedder", embedder)  # a cache wrapper keeps the key
    h.update(repr(inner).encode())
    h.update(f"{extractor}|{_FORMAT}".encode())
    h.update(_extractor_code())
    return h.hexdigest()[:16]


def _extractor_code() -> bytes:
    """The source of the modules that decide the offline graph, and the spaCy version.

    Part of the cache key, so a change to chunking, extraction or merging rebuilds the
    cached graph instead of loading one an older extractor made.
    """
    from importlib import metadata

    from kgpath.ingest import (
        assemble,
        chunking,
        dependency_relations,
        documents,
        extraction,
        extractor,
        spacy_extractor,
    )

    h = hashlib.sha256()
    for mod in (documents, chunking, extractor, extraction, dependency_relations,
                spacy_extractor, assemble):
        h.update(Path(str(mod.__file__)).read_bytes())
    try:
        h.update(metadata.version("spacy").encode())
    except metadata.PackageNotFoundError:
        pass
    return h.digest()


def _load(d: Path) -> BuiltGraph | None:
    if not (d / "stats.json").exists():
        return None
    graph = KnowledgeGraph.load(d / "graph")
    pvec = load_passage_vectors(graph, d)
    stats = json.loads((d / "stats.json").read_text(encoding="utf-8"))
    vec = GraphVectors(tuple(graph.passages), pvec, graph.vectors.matrix, stats.get("seconds", {}))
    return BuiltGraph(graph, vec, d, stats)


def hotpotqa_graph(
    data: HotpotQADataset, embedder: Embedder, *, cache_dir: str | Path | None = None,
    extractor: Any = None,
) -> BuiltGraph:
    """Load the cached graph of ``data``'s corpus or build (and cache) it.

    ``stats`` records ``extract_s`` (chunking + spaCy + merging), ``embed_passages_s``,
    ``node_vectors_s`` and the node, edge and passage counts.
    """
    name = getattr(extractor, "name", "spacy") if extractor is not None else "spacy"
    d = Path(cache_dir) / _key(data, embedder, name) if cache_dir else None
    if d is not None:
        built = _load(d)
        if built is not None:
            logger.info("loaded cached document graph from %s", d)
            return built
    docs = [(t, data.passage_text(t)) for t in data.corpus]
    t0 = time.perf_counter()
    graph = graph_from_documents(docs, extractor=extractor)
    t_extract = time.perf_counter() - t0
    vec = embed_graph(graph, embedder)
    stats = {
        "extract_s": t_extract, "embed_passages_s": vec.seconds["passages"],
        "node_vectors_s": vec.seconds["nodes"], "seconds": vec.seconds,
        "nodes": graph.num_nodes, "edges": graph.num_edges, "passages": len(graph.passages),
        "embedder": repr(embedder), "extractor": name,
    }
    if d is not None:
        graph.save(d / "graph")
        save_passage_vectors(vec, d)
        (d / "stats.json").write_text(json.dumps(stats, indent=1), encoding="utf-8")
    return BuiltGraph(graph, vec, d, stats)


def node_text_vectors(built: BuiltGraph, embedder: Embedder) -> tuple[np.ndarray, float]:
    """Vectors of every node's search text and the seconds they took.

    Cached beside the graph; the seconds are those of the first computation.
    """
    if built.cache is not None and (built.cache / "node_text_vectors.npy").exists():
        mat = np.load(built.cache / "node_text_vectors.npy")
        return mat, float(built.stats.get("node_text_s", float("nan")))
    t0 = time.perf_counter()
    texts = [n.search_text for n in built.graph.nodes]
    mat = normalize_rows(np.asarray(embedder.embed_passages(texts), np.float32))
    secs = time.perf_counter() - t0
    if built.cache is not None:
        np.save(built.cache / "node_text_vectors.npy", mat)
        built.stats["node_text_s"] = secs
        (built.cache / "stats.json").write_text(json.dumps(built.stats, indent=1),
                                                encoding="utf-8")
    return mat, secs
