"""C2RAG's I/O protocol: pipeline steps are generators that yield requests.

Each step that needs the embedder, the reranker or the LLM yields a :class:`Req`; the
synchronous driver (:func:`drive`) and the asynchronous one (:func:`adrive`) serve it, so
the algorithm is written once for :meth:`retrieve` and :meth:`aretrieve`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from kgpath._singleflight import SingleFlight
from kgpath.errors import BackendError
from kgpath.index.passage_vectors import (
    apassage_vectors,
    aquery_vectors,
    passage_vectors,
    query_vectors,
)

__all__ = ["COLD_OPS", "Req", "adrive", "aserve_cold", "drive", "embed_relations", "score",
           "serve_cold"]


@dataclass(frozen=True)
class Req:
    """An I/O request yielded by the pipeline generator (sync and async drivers serve it)."""

    op: Literal["embed_queries", "embed_passages", "score", "complete", "passage_vectors",
                "query_vectors", "store"]
    args: tuple[Any, ...]
    """``"store"``: ``(function, args)``, a blocking store query (the async driver runs it
    in a worker thread; :mod:`kgpath.methods.c2rag.access`)."""


def score(query: str, texts: Sequence[str]) -> Generator[Req, Any, np.ndarray]:
    """The Eq. 6 / Eq. 12 reranker call: one finite score per text (float64)."""
    if not texts:
        return np.zeros(0, dtype=np.float64)
    out = yield Req("score", (query, list(texts)))
    arr = np.asarray(out, dtype=np.float64).reshape(-1)
    if arr.size != len(texts):
        raise BackendError(f"reranker returned {arr.size} scores for {len(texts)} texts")
    if not np.isfinite(arr).all():
        raise BackendError(f"reranker returned non-finite scores: {arr.tolist()}")
    return arr


def embed_relations(
    cache: MutableMapping[str, np.ndarray], texts: Sequence[str]
) -> Generator[Req, Any, None]:
    """Embed the relation strings not yet in ``cache`` (Eq. 5's ``v_r``), in one request."""
    missing = list(dict.fromkeys(t for t in texts if t not in cache))
    if missing:
        vecs = yield Req("embed_queries", (missing,))
        vecs = np.asarray(vecs, dtype=np.float32)
        if vecs.shape[0] != len(missing):
            raise BackendError(
                f"embedder returned {vecs.shape[0]} vectors for {len(missing)} relations"
            )
        for t, v in zip(missing, vecs, strict=True):
            cache[t] = v


COLD_OPS = frozenset({"passage_vectors", "query_vectors", "embed_queries"})
"""Requests served once for concurrent calls (:mod:`kgpath._singleflight`): what a graph's
retrievers share (its passage vectors, a named query-text set such as Eq. 5's relation
vectors; :mod:`kgpath.index.passage_vectors`), and query texts being embedded right now."""

_QUERIES = SingleFlight()  # (embedder id, text): identical texts in flight embedded once


def serve_cold(req: Req, embedder: Any) -> Any:
    """Serve a :data:`COLD_OPS` request (``embed_queries`` with ``embedder``)."""
    if req.op == "passage_vectors":
        return passage_vectors(*req.args)
    if req.op == "query_vectors":
        return query_vectors(*req.args)
    texts = list(req.args[0])
    if not texts:
        return embedder.embed_queries(texts)
    got = _QUERIES.do_many([(id(embedder), t) for t in texts],
                           lambda ks: list(embedder.embed_queries([t for _, t in ks])))
    return np.stack([got[(id(embedder), t)] for t in texts])


async def aserve_cold(req: Req, embedder: Any) -> Any:
    """Async :func:`serve_cold`."""
    if req.op == "passage_vectors":
        return await apassage_vectors(*req.args)
    if req.op == "query_vectors":
        return await aquery_vectors(*req.args)
    texts = list(req.args[0])
    if not texts:
        return await embedder.aembed_queries(texts)

    async def embed(ks: list[tuple[int, str]]) -> list[np.ndarray]:
        return list(await embedder.aembed_queries([t for _, t in ks]))
    got = await _QUERIES.ado_many([(id(embedder), t) for t in texts], embed)
    return np.stack([got[(id(embedder), t)] for t in texts])


def drive(gen: Generator[Req, Any, Any], serve: Callable[[Req], Any]) -> Any:
    """Run ``gen`` to completion, serving each request with ``serve``.

    A failing request is thrown back into the generator, which may handle it (the planner
    does, to fall back) or let it propagate.
    """
    result: Any = None
    error: BaseException | None = None
    while True:
        try:
            req = gen.send(result) if error is None else gen.throw(error)
        except StopIteration as stop:
            return stop.value
        try:
            result, error = serve(req), None
        except Exception as exc:  # noqa: BLE001 - handed back to the pipeline
            result, error = None, exc


async def adrive(
    gen: Generator[Req, Any, Any], aserve: Callable[[Req], Awaitable[Any]]
) -> Any:
    """Async :func:`drive`: each request is awaited."""
    result: Any = None
    error: BaseException | None = None
    while True:
        try:
            req = gen.send(result) if error is None else gen.throw(error)
        except StopIteration as stop:
            return stop.value
        try:
            result, error = await aserve(req), None
        except Exception as exc:  # noqa: BLE001 - handed back to the pipeline
            result, error = None, exc
