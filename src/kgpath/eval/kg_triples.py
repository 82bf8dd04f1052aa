"""A supplied triple file as the document graph of ``kgpath eval kg --triples``.

So a graph extracted elsewhere (an LLM's OpenIE, HippoRAG's ``openie_results``) is evaluated
exactly like the offline spaCy graph: same passages, same passage vectors, same methods.

Format (JSON Lines, UTF-8): one object per passage that has triples,

.. code-block:: json

    {"title": "Marie Curie", "triples": [["Marie Curie", "born in", "Warsaw"], ...]}

``title`` is a corpus title (the passage ``"<title>. <sentences>"``, id = title);
``triples`` are ``[head, relation, tail]`` strings. Entities are nodes named by their
string (exact, as given), each triple an edge whose provenance is the passage; both ends
cite it. Passages without a line are in the graph with no entities. HippoRAG's key
``extracted_triples`` is accepted for ``triples``. Blank lines are skipped.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from kgpath.embeddings import Embedder
from kgpath.errors import ParseError
from kgpath.eval.hotpotqa import HotpotQADataset
from kgpath.eval.kg_build import BuiltGraph, _load
from kgpath.graph import KnowledgeGraph
from kgpath.index.graph_vectors import embed_graph, save_passage_vectors

__all__ = ["read_triples", "triples_graph"]


def read_triples(path: str | Path,
                 titles: set[str]) -> list[tuple[str, tuple[str, str, str]]]:
    """``(title, (head, relation, tail))`` per triple of the file, in file order.

    Raises
    ------
    ParseError
        On a line that is not a JSON object with a known ``title`` and a list of
        three-string triples (the message names the line number).
    """
    out: list[tuple[str, tuple[str, str, str]]] = []
    for no, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ParseError(f"{path}:{no}: not JSON ({exc.msg})") from None
        title = obj.get("title") if isinstance(obj, dict) else None
        if title not in titles:
            raise ParseError(f"{path}:{no}: title {title!r} is not a corpus title")
        triples = obj.get("triples", obj.get("extracted_triples", []))
        if not isinstance(triples, list):
            raise ParseError(f"{path}:{no}: triples must be a list, got {triples!r:.80}")
        for t in triples:
            if (not isinstance(t, list) or len(t) != 3
                    or not all(isinstance(x, str) for x in t)):
                raise ParseError(f"{path}:{no}: a triple must be 3 strings, got {t!r:.80}")
            if t[0].strip() and t[2].strip():
                out.append((title, (t[0].strip(), t[1].strip(), t[2].strip())))
    return out


def triples_graph(data: HotpotQADataset, embedder: Embedder, path: str | Path, *,
                  cache_dir: str | Path | None = None) -> BuiltGraph:
    """The graph of the triple file ``path`` over ``data``'s corpus, embedded and cached.

    The cache key hashes the file, the corpus and the embedder (like
    :func:`kgpath.eval.kg_build.hotpotqa_graph`).
    """
    h = hashlib.sha256(Path(path).read_bytes())
    for title, sents in data.corpus.items():
        h.update(title.encode())
        h.update("\x1f".join(sents).encode())
    h.update(repr(getattr(embedder, "embedder", embedder)).encode())
    d = Path(cache_dir) / f"triples-{h.hexdigest()[:16]}" if cache_dir else None
    if d is not None and (built := _load(d)) is not None:
        return built
    t0 = time.perf_counter()
    rows = read_triples(path, set(data.corpus))
    graph = KnowledgeGraph.from_triples(
        [t for _, t in rows], [(t, data.passage_text(t)) for t in data.corpus],
        provenance=[[title] for title, _ in rows])
    t_build = time.perf_counter() - t0
    vec = embed_graph(graph, embedder)
    stats: dict[str, Any] = {
        "extract_s": t_build, "embed_passages_s": vec.seconds["passages"],
        "node_vectors_s": vec.seconds["nodes"], "seconds": vec.seconds,
        "nodes": graph.num_nodes, "edges": graph.num_edges, "passages": len(graph.passages),
        "embedder": repr(embedder), "extractor": f"triples:{Path(path).name}",
    }
    if d is not None:
        graph.save(d / "graph")
        save_passage_vectors(vec, d)
        (d / "stats.json").write_text(json.dumps(stats, indent=1), encoding="utf-8")
    return BuiltGraph(graph, vec, d, stats)
