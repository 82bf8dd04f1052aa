"""The chunk-graph builder: the article's three construction steps end to end.

Article section "Knowledge Graph Architecture": documents are chunked (step 1,
:mod:`kgpath.ingest.chunking`), themed (step 3, :mod:`.themes`), laid out as ``document``/``chunk``/
``sentence``/``theme`` nodes with structural edges, embedded in one batched call, linked
by similarity edges (step 2, :mod:`.similarity`) and, as a kgpath extension, by the
mention layer (:mod:`.mentions`). Every document is also stored as a passage of the graph
(id = document id, text = its sentences joined with spaces), so other methods and the
evidence contract resolve passage text.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgpath._config import from_mapping
from kgpath.embed_cache import CachedEmbedder
from kgpath.embeddings import Embedder, default_embedder
from kgpath.errors import ConfigError, EmbeddingError, GraphError, PersistenceError, short
from kgpath.graph import KnowledgeGraph
from kgpath.ingest.chunk_graph.config import (
    NODE_CHUNK,
    NODE_DOCUMENT,
    NODE_SENTENCE,
    NODE_THEME,
    REL_HAS_CHUNK,
    REL_HAS_SENTENCE,
    REL_HAS_THEME,
    REL_SIMILAR_INTER,
    REL_SIMILAR_INTRA,
    REL_THEME_OF,
    ChunkGraphConfig,
)
from kgpath.ingest.chunk_graph.embedding import SentencePlan
from kgpath.ingest.chunk_graph.late import LatePlan, late_vectors
from kgpath.ingest.chunk_graph.mentions import add_mention_edges
from kgpath.ingest.chunk_graph.similarity import similarity_edges
from kgpath.ingest.chunk_graph.themes import KeywordThemes, LLMThemes, ThemeExtractor
from kgpath.ingest.chunking import sliding_windows
from kgpath.ingest.documents import SourceDocument, coerce_documents
from kgpath.llm import LLM

__all__ = [
    "ChunkGraphBuilder",
    "ChunkGraphStats",
    "abuild_chunk_graph",
    "build_chunk_graph",
    "load_chunk_graph",
    "save_chunk_graph",
]

log = logging.getLogger("kgpath.ingest.chunk_graph")  # the name it had as one module


@dataclass
class ChunkGraphStats:
    """What a build produced and how long each stage took (seconds)."""

    documents: int = 0
    skipped_documents: list[str] = field(default_factory=list)
    sentences: int = 0
    chunks: int = 0
    themes: int = 0
    similarity_edges: int = 0
    mention_edges: int = 0
    edges: int = 0
    texts_embedded: int = 0
    cache_hits: int = 0
    embedding: str = ""
    theme_source: Counter[str] = field(default_factory=Counter)
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """Plain-dict view for printing/JSON."""
        return {
            "documents": self.documents,
            "skipped_documents": list(self.skipped_documents),
            "sentences": self.sentences,
            "chunks": self.chunks,
            "themes": self.themes,
            "similarity_edges": self.similarity_edges,
            "mention_edges": self.mention_edges,
            "edges": self.edges,
            "texts_embedded": self.texts_embedded,
            "cache_hits": self.cache_hits,
            "embedding": self.embedding,
            "theme_source": dict(self.theme_source),
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
        }

@dataclass
class _Plan:
    """Everything but embeddings and themes: nodes and structural edges to add."""

    docs: list[SourceDocument]
    chunk_ranges: list[list[tuple[int, int]]]
    chunk_doc: np.ndarray


class ChunkGraphBuilder:
    """Build the semantic chunk graph of the article from raw documents.

    Parameters
    ----------
    embedder
        Any :class:`~kgpath.embeddings.Embedder` (default: the bundled offline model).
        Texts are embedded in one batched, de-duplicated call (progress bar from
        :class:`~kgpath.embeddings.BaseEmbedder`).
    config
        :class:`ChunkGraphConfig`.
    llm
        When given, themes come from the LLM (:class:`LLMThemes`); otherwise from
        :class:`KeywordThemes`. ``themes=`` overrides both with any :class:`ThemeExtractor`.
    cache_dir
        Optional folder for a :class:`CachedEmbedder` cache of passage embeddings.

    Examples
    --------
    >>> from kgpath import HashingEmbedder
    >>> g = ChunkGraphBuilder(HashingEmbedder()).build(
    ...     {"Cats": "Cats purr. Cats hunt mice. Mice fear cats. Cats sleep a lot."})
    >>> sorted({n.type for n in g.nodes})
    ['chunk', 'document', 'sentence', 'theme']
    """

    def __init__(
        self,
        embedder: Embedder | None = None,
        *,
        config: ChunkGraphConfig | None = None,
        llm: LLM | None = None,
        themes: ThemeExtractor | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        cache_key: str | None = None,
    ) -> None:
        if isinstance(config, Mapping):  # a plain {"field": value}, as chunking= takes
            config = from_mapping(ChunkGraphConfig, config, label="chunk graph config")
        if config is not None and not isinstance(config, ChunkGraphConfig):
            raise ConfigError(f"config must be a ChunkGraphConfig or a dict of its fields, "
                              f"got {short(config)}")
        self.config = config or ChunkGraphConfig()
        base = embedder if embedder is not None else default_embedder()
        self._base = base
        self.embedder: Embedder = (
            CachedEmbedder(base, cache_dir, cache_key=cache_key) if cache_dir is not None else base
        )
        if themes is not None:
            self.themes = themes
        elif llm is not None:
            self.themes = LLMThemes(
                llm, max_chars=self.config.llm_max_chars, concurrency=self.config.llm_concurrency
            )
        else:
            self.themes = KeywordThemes()
        self.stats = ChunkGraphStats()

    # ------------------------------------------------------------------ stages
    def _plan(self, documents: Any) -> _Plan:
        cfg = self.config
        docs_all = coerce_documents(documents, id_prefix="doc-")
        docs = [d for d in docs_all if d.sentences]
        self.stats = ChunkGraphStats(documents=len(docs))
        self.stats.skipped_documents = [d.id for d in docs_all if not d.sentences]
        for d in self.stats.skipped_documents:
            log.warning("chunk graph: document %r has no sentences; skipped", d)
        if not docs:
            raise GraphError("no document with at least one sentence to build a graph from")
        ranges = [sliding_windows(len(d.sentences), cfg.window, cfg.stride) for d in docs]
        chunk_doc = np.repeat(np.arange(len(docs)), [len(r) for r in ranges])
        return _Plan(docs, ranges, chunk_doc)

    def _graph(self, plan: _Plan, themes: list[tuple[list[str], str]]) -> KnowledgeGraph:
        """Nodes and structural/theme edges, in a fixed order (documents, chunks, ...)."""
        cfg = self.config
        g = KnowledgeGraph()
        for d in plan.docs:
            g.add_passage(d.id, d.text, {"title": d.title, **dict(d.metadata)})
        for d, (th, src) in zip(plan.docs, themes, strict=True):
            g.add_node(
                f"doc:{d.id}", name=d.title, text=d.text, type=NODE_DOCUMENT,
                metadata={"doc_id": d.id, "themes": th, "theme_source": src,
                          "num_sentences": len(d.sentences)},
                provenance=(d.id,),
            )
            self.stats.theme_source[src] += 1
        for d, ranges, (th, _) in zip(plan.docs, plan.chunk_ranges, themes, strict=True):
            for ci, (s, e) in enumerate(ranges):
                g.add_node(
                    f"chunk:{d.id}:{ci}", name=d.title, text=" ".join(d.sentences[s:e]),
                    type=NODE_CHUNK,
                    metadata={"doc_id": d.id, "position": ci, "start": s, "end": e,
                              "themes": th},
                    provenance=(d.id,),
                )
        if cfg.sentence_nodes:
            for d, (th, _) in zip(plan.docs, themes, strict=True):
                for si, sent in enumerate(d.sentences):
                    g.add_node(
                        f"sent:{d.id}:{si}", name=d.title, text=sent, type=NODE_SENTENCE,
                        metadata={"doc_id": d.id, "position": si, "themes": th},
                        provenance=(d.id,),
                    )
        if cfg.theme_nodes:
            theme_docs: dict[str, list[str]] = {}
            for d, (th, _) in zip(plan.docs, themes, strict=True):
                for t in th:
                    theme_docs.setdefault(t, []).append(d.id)
            for t, ds in theme_docs.items():
                g.add_node(f"theme:{t}", name=t, text=t, type=NODE_THEME,
                           metadata={"documents": ds}, provenance=ds)
            self.stats.themes = len(theme_docs)
        for d, ranges, (th, _) in zip(plan.docs, plan.chunk_ranges, themes, strict=True):
            for ci, (s, e) in enumerate(ranges):
                g.add_edge(f"doc:{d.id}", f"chunk:{d.id}:{ci}", REL_HAS_CHUNK,
                           type="structure", provenance=(d.id,))
                if cfg.sentence_nodes:
                    for si in range(s, e):
                        g.add_edge(f"chunk:{d.id}:{ci}", f"sent:{d.id}:{si}",
                                   REL_HAS_SENTENCE, type="structure", provenance=(d.id,))
            if cfg.theme_nodes:
                for t in th:
                    g.add_edge(f"doc:{d.id}", f"theme:{t}", REL_HAS_THEME, type="theme",
                               provenance=(d.id,))
                    g.add_edge(f"theme:{t}", f"doc:{d.id}", REL_THEME_OF, type="theme",
                               provenance=(d.id,))
        self.stats.sentences = sum(len(d.sentences) for d in plan.docs)
        self.stats.chunks = int(plan.chunk_doc.size)
        return g

    def _late(self, plan: _Plan) -> dict[str, np.ndarray] | None:
        """``embedding="late"``: document, window and sentence vectors from one pass each."""
        if self.config.embedding != "late":
            return None
        lp = LatePlan(plan.docs, plan.chunk_ranges, sentence_nodes=self.config.sentence_nodes)
        return late_vectors(self._base, lp, head_in_spans=self.config.title_prefix)

    def _embedding_job(
        self, g: KnowledgeGraph, plan: _Plan, late: dict[str, np.ndarray] | None
    ) -> tuple[list[str], Callable[[np.ndarray], np.ndarray]]:
        """The distinct texts to embed and how to turn their vectors into node vectors."""
        mode = self.config.embedding
        self.stats.embedding = "nodes" if mode == "late" and late is None else mode
        if late is not None:
            return self._late_job(g, late)
        if self.stats.embedding == "nodes":
            texts, rows = self._node_texts(g)
            return texts, lambda vecs: vecs[np.asarray(rows, dtype=np.int64)]
        own = self._own_vector_types()
        extra = [n.search_text for n in g.nodes if n.type in own]
        sp = SentencePlan(plan.docs, extra, title_prefix=self.config.title_prefix)
        return sp.texts, lambda vecs: self._derived_vectors(g, plan, sp, vecs)

    @staticmethod
    def _late_job(
        g: KnowledgeGraph, late: dict[str, np.ndarray]
    ) -> tuple[list[str], Callable[[np.ndarray], np.ndarray]]:
        """Themes (and any node late chunking did not cover) embedded as texts."""
        rest = {n.search_text: None for n in g.nodes if n.id not in late}
        texts = list(rest)
        row = {t: i for i, t in enumerate(texts)}

        def assemble(vecs: np.ndarray) -> np.ndarray:
            return np.stack([late[n.id] if n.id in late else vecs[row[n.search_text]]
                             for n in g.nodes]).astype(np.float32)

        return texts, assemble

    def _node_texts(self, g: KnowledgeGraph) -> tuple[list[str], list[int]]:
        """``embedding="nodes"``: every node's own text (deduplicated), row per node."""
        cfg = self.config
        texts: dict[str, int] = {}
        rows: list[int] = []
        for n in g.nodes:
            t = n.search_text if (cfg.title_prefix or n.type in (NODE_DOCUMENT, NODE_THEME)) \
                else (n.text or n.name)
            rows.append(texts.setdefault(t, len(texts)))
        return list(texts), rows

    def _own_vector_types(self) -> tuple[str, ...]:
        """Node types embedded from their own text besides sentences (derived modes)."""
        if self.config.embedding == "derived_windows":
            return (NODE_THEME, NODE_DOCUMENT)
        return (NODE_THEME,)

    def _derived_vectors(
        self, g: KnowledgeGraph, plan: _Plan, sp: SentencePlan, vecs: np.ndarray
    ) -> np.ndarray:
        """Node vectors of ``embedding="sentences"`` or ``"derived_windows"``.

        Windows (and, with ``"sentences"``, documents) are normalised sums of their
        sentences' vectors; sentences, themes (and, with ``"derived_windows"``, documents)
        keep their own.
        """
        own = self._own_vector_types()
        sums = sp.sums(vecs)
        out = np.zeros((len(g), vecs.shape[1]), dtype=np.float32)
        nodes: list[int] = []
        spans: list[tuple[int, int]] = []
        for d, start, ranges in zip(plan.docs, sp.doc_start[:-1].tolist(), plan.chunk_ranges,
                                    strict=True):
            if NODE_DOCUMENT not in own:
                nodes.append(g.index_of(f"doc:{d.id}"))
                spans.append((start, start + len(d.sentences)))
            for ci, (s, e) in enumerate(ranges):
                nodes.append(g.index_of(f"chunk:{d.id}:{ci}"))
                spans.append((start + s, start + e))
            if self.config.sentence_nodes:
                for si in range(len(d.sentences)):
                    nodes.append(g.index_of(f"sent:{d.id}:{si}"))
                    spans.append((start + si, start + si + 1))
        out[np.asarray(nodes, dtype=np.int64)] = sp.span_vectors(sums, np.asarray(spans))
        for i, n in enumerate(g.nodes):
            if n.type in own:
                out[i] = vecs[sp.extra_rows[n.search_text]]
        return out

    def _similarity(self, g: KnowledgeGraph, plan: _Plan) -> None:
        cfg = self.config
        t0 = time.perf_counter()
        chunk_idx = np.array([i for i, n in enumerate(g.nodes) if n.type == NODE_CHUNK])
        emb = g.vectors.matrix[chunk_idx]
        src, dst, sim, intra = similarity_edges(
            emb, plan.chunk_doc, top_k_intra=cfg.top_k_intra, top_x_inter=cfg.top_x_inter,
            block_elements=cfg.block_elements,
        )
        ids = [g.node_at(int(i)).id for i in chunk_idx]
        docs = [plan.docs[int(k)].id for k in plan.chunk_doc]
        edges = zip(src.tolist(), dst.tolist(), sim.tolist(), intra.tolist(), strict=True)
        for s, t, v, same in edges:
            g.add_edge(
                ids[s], ids[t], REL_SIMILAR_INTRA if same else REL_SIMILAR_INTER,
                type="similarity", weight=max(float(v), 0.0),
                provenance=tuple(dict.fromkeys((docs[s], docs[t]))),
                metadata={"similarity": round(float(v), 6)},
            )
        self.stats.similarity_edges = int(src.size)
        self.stats.edges = g.num_edges
        self.stats.seconds["similarity_edges"] = time.perf_counter() - t0

    def _mentions(self, g: KnowledgeGraph) -> None:
        if not self.config.mention_edges:
            return
        ms = add_mention_edges(g, min_title_chars=self.config.min_title_chars)
        self.stats.mention_edges = ms.edges
        self.stats.edges = g.num_edges
        self.stats.seconds["mention_edges"] = ms.seconds

    def _count_cache(self) -> None:
        if isinstance(self.embedder, CachedEmbedder):
            self.stats.cache_hits = self.embedder.hits

    # ------------------------------------------------------------------ public
    def build(self, documents: Any) -> KnowledgeGraph:
        """Build the graph (sync).

        ``documents`` may be a mapping ``{title: text or [sentences]}`` (the title is the
        document id), or an iterable of ``(title, text or [sentences])`` pairs, raw strings
        (ids ``doc-0``, ``doc-1``, ... and no title), mappings with ``text``, LangChain or
        LlamaIndex documents or :class:`~kgpath.ingest.documents.SourceDocument`
        (:func:`~kgpath.ingest.documents.coerce_documents`). Pre-split sentences are kept as
        given; text is split with :func:`~kgpath.ingest.chunking.split_sentences`.
        """
        t_all = time.perf_counter()
        t0 = time.perf_counter()
        plan = self._plan(documents)
        self.stats.seconds["chunking"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        themes = self.themes.extract(plan.docs, self.config.num_themes)
        self.stats.seconds["themes"] = time.perf_counter() - t0
        g = self._graph(plan, themes)
        t0 = time.perf_counter()
        late = self._late(plan)
        texts, assemble = self._embedding_job(g, plan, late)
        vecs = self.embedder.embed_passages(texts)
        self._set_embeddings(g, vecs, assemble, len(texts), len(plan.docs) if late else 0)
        self.stats.seconds["embedding"] = time.perf_counter() - t0
        self._similarity(g, plan)
        self._mentions(g)
        self._count_cache()
        self.stats.seconds["total"] = time.perf_counter() - t_all
        return g

    async def abuild(self, documents: Any) -> KnowledgeGraph:
        """Async :meth:`build`: LLM theme calls run concurrently, embeddings are awaited."""
        t_all = time.perf_counter()
        plan = self._plan(documents)
        t0 = time.perf_counter()
        themes = await self.themes.aextract(plan.docs, self.config.num_themes)
        self.stats.seconds["themes"] = time.perf_counter() - t0
        g = self._graph(plan, themes)
        t0 = time.perf_counter()
        late = await asyncio.to_thread(self._late, plan)
        texts, assemble = self._embedding_job(g, plan, late)
        vecs = await self.embedder.aembed_passages(texts)
        self._set_embeddings(g, vecs, assemble, len(texts), len(plan.docs) if late else 0)
        self.stats.seconds["embedding"] = time.perf_counter() - t0
        await asyncio.to_thread(self._similarity, g, plan)
        await asyncio.to_thread(self._mentions, g)
        self._count_cache()
        self.stats.seconds["total"] = time.perf_counter() - t_all
        return g

    def _set_embeddings(
        self, g: KnowledgeGraph, vecs: np.ndarray,
        assemble: Callable[[np.ndarray], np.ndarray], n_texts: int, documents_read: int,
    ) -> None:
        """Check the embedder's rows and set node vectors; ``documents_read`` = late passes."""
        vecs = np.asarray(vecs, dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape[0] != n_texts:
            raise EmbeddingError(f"embedder returned shape {vecs.shape} for {n_texts} texts")
        g.vectors.set(assemble(vecs))
        self.stats.texts_embedded = n_texts + documents_read


def build_chunk_graph(
    documents: Any,
    *,
    embedder: Embedder | None = None,
    config: ChunkGraphConfig | None = None,
    llm: LLM | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> KnowledgeGraph:
    """Shortcut for ``ChunkGraphBuilder(...).build(documents)``."""
    return ChunkGraphBuilder(embedder, config=config, llm=llm, cache_dir=cache_dir).build(
        documents
    )


async def abuild_chunk_graph(
    documents: Any,
    *,
    embedder: Embedder | None = None,
    config: ChunkGraphConfig | None = None,
    llm: LLM | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> KnowledgeGraph:
    """Async :func:`build_chunk_graph`."""
    builder = ChunkGraphBuilder(embedder, config=config, llm=llm, cache_dir=cache_dir)
    return await builder.abuild(documents)


def chunk_graph_from_documents(
    documents: Any,
    *,
    embedder: Embedder | None = None,
    llm: LLM | None = None,
    graph_config: ChunkGraphConfig | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> tuple[KnowledgeGraph, Embedder]:
    """The semantic chunk graph over documents, and the embedder it was built with.

    What the adapters' ``from_documents`` call. Documents are read by
    :func:`kgpath.ingest.documents.coerce_documents` (ids ``doc-<content hash>`` when a document has
    none; a LangChain document's ``id``, a LlamaIndex node's ``node_id``; the title is
    ``metadata["title"]``); ``llm`` (if given) extracts themes; ``embedder`` defaults to
    :func:`kgpath.embeddings.default_embedder`.
    """
    emb = embedder or default_embedder()
    graph = ChunkGraphBuilder(emb, config=graph_config, llm=llm, cache_dir=cache_dir).build(
        documents
    )
    return graph, emb


def save_chunk_graph(graph: KnowledgeGraph, directory: str | os.PathLike[str]) -> None:
    """Persist a chunk graph (JSON + ``.npy``, atomic; see :meth:`KnowledgeGraph.save`)."""
    _check_chunk_graph(graph, str(directory))
    graph.save(directory)


def load_chunk_graph(directory: str | os.PathLike[str]) -> KnowledgeGraph:
    """Load a graph saved by :func:`save_chunk_graph` and check it is a chunk graph."""
    g = KnowledgeGraph.load(directory)
    _check_chunk_graph(g, str(directory))
    if g.vectors.missing():
        raise PersistenceError(f"{directory}: chunk graph saved without embeddings")
    return g


def _check_chunk_graph(graph: KnowledgeGraph, where: str) -> None:
    if not any(n.type == NODE_CHUNK for n in graph.nodes):
        raise GraphError(f"{where}: graph has no '{NODE_CHUNK}' nodes; not a chunk graph")
